"""``rths damper-rig qualify`` and ``rths damper-rig test``: the virtual substructured damper rig of du Bois et al. 2010
(ISMA 2010), run in process (docs/dubois_rig.md).

* ``qualify`` - stepped-sine FRF surfaces of the transfer system (no damper, standard and large orifice), the four
  process models fitted to the standard damper and their open-loop verification; ``qualification.json`` and plots.
* ``test`` - the above plus the substructured stepped-sine tests of §4.5 (no cancellation, prediction alone, G1, G2,
  G1D, G2D), the forward-predictor study and the table "paper | this package | status"; ``dubois.json``, plots and
  ``table.txt``.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path

from rths_ros.params import ParameterError


def _out(a, name: str) -> Path:
    return Path(a.out) if a.out else Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


def _floats(text: str, flag: str, lo: float, hi: float, unit: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ParameterError(f"{flag}: {text!r} is not a comma-separated list of numbers") from None
    if not vals or not all(math.isfinite(v) and lo < v <= hi for v in vals):
        raise ParameterError(f"{flag}: {text!r} is not allowed; expected values in ({lo:g}, {hi:g}] {unit}")
    return vals


def _hz(v) -> str:
    return "never" if v is None else f"{v:g} Hz"


def _check(flag: str, value: float, lo: float, hi: float, unit: str) -> float:
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ParameterError(f"{flag}: {value!r} is out of range; expected a number in [{lo:g}, {hi:g}] {unit}")
    return value


def study_params(a):
    """The study parameters from the command line (ranges checked, errors name the flag)."""
    from rths_ros.families.damper_rig.study import StudyParams, quick_params
    p = quick_params() if getattr(a, "quick", False) else StudyParams()
    nyq = 0.5 / p.rig.dt_s
    ch = {}
    if getattr(a, "freqs", None):
        ch["qual_frequencies_hz"] = _floats(a.freqs, "--freqs", 0.0, nyq * 0.8, "Hz (below 0.8 x Nyquist)")
    if getattr(a, "amplitudes", None):
        amps = _floats(a.amplitudes, "--amplitudes", 0.0, 0.02, "m")
        ch["survey_amplitudes_m"] = ch["fit_amplitudes_m"] = amps
    if getattr(a, "settle", None) is not None:
        ch["settle_s"] = _check("--settle", a.settle, 1.0, 60.0, "s")
    if getattr(a, "record", None) is not None:
        ch["record_min_s"] = _check("--record", a.record, 0.2, 60.0, "s")
    if getattr(a, "trip_threshold", None) is not None:
        ch["trip_threshold_w2"] = _check("--trip-threshold", a.trip_threshold, 0.0, 1e12, "W^2 (0 = off)")
    if getattr(a, "seed", None) is not None:
        ch["seed"] = int(_check("--seed", a.seed, 0, 2 ** 31 - 1, ""))
    return replace(p, **ch)


def cmd_qualify(a) -> int:
    from rths_ros.families.damper_rig.study import qualification, write_qualification
    p = study_params(a)
    out = _out(a, "dubois-qualify")
    t0 = time.monotonic()
    print(f"rths damper-rig qualify: {len(p.qual_frequencies_hz)} frequencies x {len(p.survey_amplitudes_m)} amplitudes, "
          "3 rig configurations, 4 process models", flush=True)
    qual = qualification(p, lambda m: print(f"  {m}  ({time.monotonic() - t0:5.1f} s)", flush=True))
    files = write_qualification(qual, out, plots=not a.no_plots)
    std = qual["surfaces"]["standard"]
    f = std.frequencies_hz.mean(axis=0)
    print("transfer system with the standard damper (gain / phase [deg]):")
    print(f"{'f [Hz]':>8} " + " ".join(f"{'A=' + format(v * 1e3, 'g') + ' mm':>16}" for v in std.amplitudes))
    for j in range(f.size):
        print(f"{f[j]:8.2f} " + " ".join(f"{std.gain[i, j]:7.3f} {std.phase_deg[i, j]:8.1f}"
                                           for i in range(std.amplitudes.size)))
    print("process models (fitted to the standard damper):")
    for k, v in qual["fits"].items():
        m, lim = v.model, qual["fit_limits"][k]
        shape = f"tau_p {m.tau_p_s * 1e3:.2f} ms" if m.order == 1 else f"zeta {m.zeta:.3f}, w0 {m.omega0_rad_s:.1f} rad/s"
        print(f"  {k:<4} static gain {m.static_gain:.4f}, {shape}, delay {m.effective_delay_s * 1e3:.2f} ms; "
              f"10 deg phase error from {_hz(lim['phase_hz'])}, 10 % gain error from {_hz(lim['gain_hz'])}; "
              f"verification mean |H - 1| {qual['verification_error'][k]['to_100hz']:.3f}")
    print(f"-> {out} ({len(files)} files) in {time.monotonic() - t0:.1f} s")
    return 0


def cmd_test(a) -> int:
    from rths_ros.families.damper_rig.study import format_table, run_study
    p = study_params(a)
    out = _out(a, "dubois-test")
    n = sum(len(fs) for _, fs in p.bands)
    t0 = time.monotonic()
    print(f"rths damper-rig test: {n} test frequencies in {len(p.bands)} bands x {len(p.modes)} modes "
          f"({p.settle_s:g} s settling each); progress:", flush=True)
    r = run_study(p, out, lambda m: print(f"  {m}  ({time.monotonic() - t0:5.1f} s)", flush=True),
                  plots=not a.no_plots)
    table = format_table(r["checks"])
    (out / "table.txt").write_text(table + "\n")
    print(table)
    print(f"-> {out} ({len(r['files']) + 1} files) in {time.monotonic() - t0:.1f} s")
    return 0


def add_parsers(sub, scenario_args=None) -> None:
    """``rths damper-rig {qualify,test}`` on the ``rths`` parser's ``sub``."""
    d = sub.add_parser("damper-rig", help="du Bois et al. 2010 substructured damper rig (virtual, in process): qualification and "
                       "the §4.5 substructuring tests; docs/dubois_rig.md")
    dsub = d.add_subparsers(dest="dubois_cmd", required=True, metavar="{qualify,test}")

    def common(q):
        q.add_argument("--out", help="output directory (default runs/dubois-<command>-TIME)")
        q.add_argument("--quick", action="store_true", help="reduced grids and settling (a smoke run)")
        q.add_argument("--freqs", help="qualification frequencies in Hz, comma-separated (default 1 ... 100 Hz)")
        q.add_argument("--amplitudes", help="qualification demand amplitudes in m, comma-separated, each in "
                       "(0, 0.02] (default 0.0005,0.001,0.002,0.004)")
        q.add_argument("--seed", type=int, default=None, help="seed of the measurement noise (default 1)")
        q.add_argument("--no-plots", action="store_true", help="JSON and printed table only")
    q = dsub.add_parser("qualify", help="stepped-sine FRF surfaces, process-model fits and open-loop verification")
    common(q)
    q.set_defaults(func=cmd_qualify)
    t = dsub.add_parser("test", help="qualification + substructured tests of §4.5 + predictor study + the "
                        "paper-vs-package table")
    common(t)
    t.add_argument("--settle", type=float, default=None, help="settling time of each test point in s, [1, 60] "
                   "(default 4)")
    t.add_argument("--record", type=float, default=None, help="minimum recorded time per point in s, [0.2, 60] "
                   "(default 1; whole periods)")
    t.add_argument("--trip-threshold", type=float, default=None, help="power-discrepancy trip threshold in W^2, "
                   "0 = off (default off: an absolute threshold that catches the breakdown also stops resonant points)")
    t.set_defaults(func=cmd_test)
