"""``rths aff-rigs cubic-spring`` and ``rths aff-rigs beams``: the two physical experiments of Bartl 2019 (ch. 6) on
their digital twins, with the harmonic AFF as the thesis ran it (docs/bartl_rigs.md).  Each command writes JSON,
a Markdown table and plots into ``--out`` and prints the table."""
from __future__ import annotations

import math
import time
from pathlib import Path

from rths_ros.params import ParameterError

__all__ = ["add_parsers", "cmd_cubic_spring", "cmd_beams", "parse_cases"]


def _out(a, name: str) -> Path:
    if a.out:
        return Path(a.out)
    from rths_ros.launch_support import default_out
    return default_out(name)


def _check(key: str, v: float, lo: float, hi: float, unit: str = "") -> float:
    if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
        raise ParameterError(f"{key}: {v!r} outside [{lo:g}, {hi:g}]{(' ' + unit) if unit else ''}")
    return float(v)


def parse_cases(text: str, key: str = "--cases") -> tuple[tuple[float, float], ...]:
    """``"10:10,20:40"`` -> ((10.0, 10.0), (20.0, 40.0)): frequency [Hz] : amplitude [N] pairs."""
    cases = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        parts = item.split(":")
        try:
            if len(parts) != 2:
                raise ValueError
            f, a = float(parts[0]), float(parts[1])
        except ValueError:
            raise ParameterError(f"{key}: {item!r} is not FREQUENCY_HZ:AMPLITUDE_N") from None
        _check(f"{key} frequency", f, 0.5, 100.0, "Hz")
        _check(f"{key} amplitude", a, 0.1, 200.0, "N")
        cases.append((f, a))
    if not cases:
        raise ParameterError(f"{key}: {text!r} lists no case")
    return tuple(cases)


def _ints(text: str, key: str, lo: int, hi: int) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ParameterError(f"{key}: {text!r} is not a comma-separated list of integers") from None
    if not vals or not all(lo <= v <= hi for v in vals):
        raise ParameterError(f"{key}: {text!r}; each value in [{lo}, {hi}]")
    return vals


def _floats(text: str, key: str, lo: float, hi: float, unit: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ParameterError(f"{key}: {text!r} is not a comma-separated list of numbers") from None
    if not vals:
        raise ParameterError(f"{key}: {text!r} lists no value")
    for v in vals:
        _check(key, v, lo, hi, unit)
    return vals


def _progress(t0: float):
    return lambda m: print(f"  [{time.perf_counter() - t0:6.1f} s] {m}", flush=True)


def cmd_cubic_spring(a) -> int:
    from rths_ros.analysis.bartl_rigs import (
        cubic_combined_study,
        cubic_supervisor_study,
        format_combined,
        format_supervisor,
        write_cubic,
    )
    cases = parse_cases(a.cases)
    t_adapt = _check("--t-adapt", a.t_adapt, 2.0, 600.0, "s")
    mu = _check("--mu-lms", a.mu_lms, 1e-6, 1.0)
    out = _out(a, "bartl-cubic-spring")
    t0 = time.perf_counter()
    n = len(cases) * (2 * (a.study in ("supervisor", "all")) + 3 * (a.study in ("combined", "all")))
    print(f"rths aff-rigs cubic-spring: {n} hybrid tests of {1 + t_adapt:g} s (1 kHz loop) ...", flush=True)
    sup_rows, sup_recs, comb_rows, comb_recs = [], {}, [], {}
    if a.study in ("supervisor", "all"):
        sup_rows, sup_recs = cubic_supervisor_study(cases, t_adapt, progress=_progress(t0))
        print("\nPower-flow supervisor (§6.2.1, Table 6.3)\n" + format_supervisor(sup_rows))
    if a.study in ("combined", "all"):
        comb_rows, comb_recs = cubic_combined_study(cases, t_adapt, mu_lms=mu, progress=_progress(t0))
        print("\nPBC, AFF and PBC + AFF (§6.2.2)\n" + format_combined(comb_rows))
    paths = write_cubic(out, sup_rows, sup_recs, comb_rows, comb_recs, cases, plots=not a.no_plots)
    print(f"  -> {', '.join(str(p) for p in paths.values())}")
    return 0


def cmd_beams(a) -> int:
    from rths_ros.analysis.bartl_rigs import (
        beam_learning_study,
        beam_square_study,
        beam_sync_study,
        format_learning,
        format_square,
        format_sync,
        write_beams,
    )
    freqs = _floats(a.frequencies, "--frequencies", 5.0, 1200.0, "Hz")
    harmonics = _ints(a.harmonics, "--harmonics", 1, 15)
    t_id = _check("--t-id", a.t_id, 0.2, 60.0, "s")
    t_adapt = _check("--t-adapt", a.t_adapt, 0.5, 120.0, "s")
    mu_ad = _check("--mu-ad", a.mu_ad, 0.9, 1.0)
    f_sq = _check("--square-hz", a.square_hz, 5.0, 100.0, "Hz")
    t_sq = _check("--square-t-id", a.square_t_id, 0.2, 60.0, "s")
    if f_sq * max(harmonics) > 1200.0:
        raise ParameterError(f"--square-hz: {f_sq:g} Hz x {max(harmonics)} harmonics exceeds 1200 Hz")
    out = _out(a, "bartl-beams")
    t0 = time.perf_counter()
    print(f"rths aff-rigs beams: Craig-Bampton beams, 0.2 ms loop, identification {t_id:g} s + adaptation "
          f"{t_adapt:g} s per run ...", flush=True)
    sync_rows, sync_recs, sq_rows, sq_recs, l_rows, l_recs = [], {}, [], {}, [], {}
    if a.study in ("sync", "all"):
        sync_rows, sync_recs = beam_sync_study(freqs, t_id, t_adapt, progress=_progress(t0))
        print("\nSynchronisation (§6.1.2, QR-RLS simultaneous)\n" + format_sync(sync_rows))
    if a.study in ("learning", "all"):
        l_rows, l_recs = beam_learning_study((60.0, 320.0), t_id, t_adapt, progress=_progress(t0))
        print("\nLearning curves (§6.1.4)\n" + format_learning(l_rows))
    if a.study in ("square", "all"):
        sq_rows, sq_recs = beam_square_study(f_sq, harmonics, t_sq, t_adapt, mu_ad=mu_ad, progress=_progress(t0))
        print("\nSquare wave (§6.1.5)\n" + format_square(sq_rows))
    paths = write_beams(out, sync_rows, sync_recs, sq_rows, sq_recs, plots=not a.no_plots, learn_rows=l_rows,
                        learn_recs=l_recs)
    print(f"  -> {', '.join(str(p) for p in paths.values())}")
    return 0


def add_parsers(sub, scenario_args=None) -> None:
    """``rths aff-rigs {cubic-spring,beams}`` on the ``rths`` parser's ``sub``."""
    b = sub.add_parser("aff-rigs", help="Bartl 2019 ch. 6: the cubic-spring rig and the coupled cantilever beams as "
                       "digital twins with the harmonic AFF (docs/bartl_rigs.md)")
    bs = b.add_subparsers(dest="rig", required=True)
    c = bs.add_parser("cubic-spring", help="§6.2: power-flow supervisor (Table 6.3) and PBC + AFF")
    c.add_argument("--study", choices=("supervisor", "combined", "all"), default="all")
    c.add_argument("--cases", default="10:10,20:40,30:40",
                   help="FREQUENCY_HZ:AMPLITUDE_N pairs (default the thesis's 10:10,20:40,30:40; 0.5-100 Hz, "
                        "0.1-200 N)")
    c.add_argument("--t-adapt", type=float, default=10.0, help="seconds of adaptation after the 1 s identification "
                   "(2-600, default 10)")
    c.add_argument("--mu-lms", type=float, default=0.001, help="LMS gain of the §6.2.2 runs (not printed in the "
                   "seed; 1e-6-1, default 0.001)")
    c.add_argument("--no-plots", action="store_true", help="tables and JSON only")
    c.add_argument("--out", help="output directory (default runs/bartl-cubic-spring-TIME)")
    c.set_defaults(func=cmd_cubic_spring)
    m = bs.add_parser("beams", help="§6.1: RLS AFF synchronisation at 60/320/800 Hz, LMS vs RLS learning at 60/320 "
                      "Hz, and a square wave with 1/5/9 harmonics")
    m.add_argument("--study", choices=("sync", "learning", "square", "all"), default="all")
    m.add_argument("--frequencies", default="60,320,800", help="sine frequencies in Hz (5-1200; default 60,320,800)")
    m.add_argument("--harmonics", default="1,5,9", help="numbers of harmonics in W for the square wave (1-15)")
    m.add_argument("--square-hz", type=float, default=40.0, help="square-wave frequency (5-100 Hz, default 40)")
    m.add_argument("--t-id", type=float, default=5.0, help="identification time of the sine runs (0.2-60 s, "
                   "default the thesis's 5)")
    m.add_argument("--square-t-id", type=float, default=20.0, help="identification time of the square-wave runs "
                   "(0.2-60 s, default the thesis's 20)")
    m.add_argument("--mu-ad", type=float, default=0.999, help="RLS forgetting factor of the square-wave adaptation "
                   "(0.9-1, default the thesis's 0.999)")
    m.add_argument("--t-adapt", type=float, default=5.0, help="adaptation time per run (0.5-120 s, default 5)")
    m.add_argument("--no-plots", action="store_true", help="tables and JSON only")
    m.add_argument("--out", help="output directory (default runs/bartl-beams-TIME)")
    m.set_defaults(func=cmd_beams)
