"""``rths bench fe``: per-step cost of the large virtual parts, in the spirit of Bartl 2019 §2.4.5 (Table 2.3, Fig. 2.9).

The model is the free-free aluminium plate of :func:`rths_ros.core.models.fe.matrices.aluminium_plate` (8067 DoFs,
three normal forces in, the three deflections there out), ``dt = 0.5 ms``, stepped by

* the FIR/IIR virtual part (``N_L = 11`` = 6 rigid-body + 5 elastic modes by IIR, ``M = 58`` FIR taps, Hann window,
  force impulse at the first step),
* implicit Newmark (``beta = 0.25``, ``gamma = 0.5``) on the full model,
* HHT-alpha (``alpha = 0.3``, ``beta = 0.4225``, ``gamma = 0.8``) on the full model,
* and, not in the thesis's table, the FIR/IIR corrector alone (eq. 2.73: the work between receiving ``lam[n]``
  and sending ``y[n+1]``; the predictor runs untimed afterwards) and Newmark on a modal truncation of the plate
  (the lowest 60 free modes), to show what a reduced model buys.

Each run starts from rest and steps the same ramped three-channel multi-sine force (40, 90 and 150 Hz); the runs
alternate between the methods.  Reported per method: mean per-step time over the runs with its 95 % confidence
interval (Student t over the run means, as the thesis's 100 runs), the per-step median, 99th percentile and
maximum, the share of steps over the 0.5 ms budget, and the output's relative RMS deviation from full Newmark.
Settings: ``--set runs=R steps=S nx=NX ny=NY taps=M n_slow=NL window=hann|cosine|rect method=...
modal=N``; ``--quick`` = 10 runs of 100 steps.  Numbers are measurements of this machine at this moment; nothing
asserts them.
"""
from __future__ import annotations

import gc
import math
import os
import time
from pathlib import Path

import numpy as np
from scipy import stats

from rths_ros.core.models.fe.filters import IMPULSE_METHODS, WINDOWS, split_filter
from rths_ros.core.models.fe.integrators import hht, newmark
from rths_ros.core.models.fe.matrices import PlateParams, aluminium_plate
from rths_ros.core.models.fe.reduction import modal_truncation

__all__ = ["DEFAULTS", "bench_fe", "markdown_fe", "cmd_fe", "parse_settings"]

DEFAULTS = {"runs": 100, "steps": 200, "nx": 36, "ny": 36, "taps": 58, "n_slow": 11, "window": "hann",
            "method": "force_first", "modal": 60, "dt": 5e-4}
QUICK = {"runs": 10, "steps": 100}


def parse_settings(overrides, quick: bool = False) -> dict:
    """``KEY=VALUE`` strings over :data:`DEFAULTS` (``--quick`` first shortens runs and steps)."""
    s = dict(DEFAULTS)
    if quick:
        s.update(QUICK)
    for o in overrides:
        key, sep, val = o.partition("=")
        key = key.strip()
        if not sep or key not in DEFAULTS:
            raise ValueError(f"unknown setting {o!r}; known: {', '.join(DEFAULTS)}")
        s[key] = type(DEFAULTS[key])(val)
    if s["window"] not in WINDOWS or s["method"] not in IMPULSE_METHODS:
        raise ValueError(f"window in {WINDOWS}, method in {IMPULSE_METHODS}")
    if s["runs"] < 2 or s["steps"] < 2:
        raise ValueError("runs and steps must be at least 2")
    return s


def _input(steps: int, dt: float) -> np.ndarray:
    t = np.arange(1, steps + 1) * dt
    ramp = np.minimum(t / 0.02, 1.0)[:, None]
    return ramp * np.stack([np.sin(2 * math.pi * 40 * t), 0.5 * np.sin(2 * math.pi * 90 * t + 1.0),
                            0.3 * np.sin(2 * math.pi * 150 * t + 2.0)], axis=1)


def _timed(fn, steps, ys=None, after=None):
    """Run ``steps`` calls of the stepper's step; per-step times in microseconds (``after(u)``: untimed)."""
    t = np.empty(len(steps))
    pc = time.perf_counter_ns
    for k, uk in enumerate(steps):
        t0 = pc()
        y = fn(uk)
        t[k] = pc() - t0
        if after is not None:
            after(uk)
        if ys is not None:
            ys[k] = y
    return t * 1e-3


class _CorrectorOnly:
    """The FIR/IIR part with only its corrector timed (the output latency); the predictor runs untimed after."""

    def __init__(self, sf):
        self.sf = sf

    def reset(self):
        self.sf.reset()

    def step(self, u):
        return self.sf.fir.correct(u) + self.sf.iir.correct(u)

    def after(self, u):
        self.sf.fir.predict(u)
        self.sf.iir.predict()


def bench_fe(settings: dict | None = None, log=print) -> dict:
    s = dict(DEFAULTS if settings is None else settings)
    dt, budget_us = s["dt"], s["dt"] * 1e6
    setup = {}
    t0 = time.perf_counter()
    model = aluminium_plate(PlateParams(nx=s["nx"], ny=s["ny"]))
    setup["assemble_s"] = time.perf_counter() - t0
    log(f"plate: {model.n_dof} DoFs, interface points {model.info['io_points_m']}")
    t0 = time.perf_counter()
    nm = newmark(model, dt)
    setup["newmark_factorise_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    hh = hht(model, dt, alpha=0.3)
    setup["hht_factorise_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    sf = split_filter(model, dt, n_slow=s["n_slow"], n_taps=s["taps"], kind=s["window"], method=s["method"])
    setup["fir_iir_build_s"] = time.perf_counter() - t0
    steppers = {"FIR/IIR": sf, "Newmark": nm, "HHT-alpha": hh,
                "FIR/IIR, corrector only (output latency)": _CorrectorOnly(sf)}
    if s["modal"] > 0:
        t0 = time.perf_counter()
        red = modal_truncation(model, s["modal"])
        steppers[f"Newmark, modal truncation ({s['modal']} modes)"] = newmark(red, dt)
        setup["modal_truncation_s"] = time.perf_counter() - t0
    u = _input(s["steps"], dt)
    times = {k: [] for k in steppers}
    outputs = {}
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for r in range(s["runs"]):
            for name, st in steppers.items():
                st.reset()
                ys = np.zeros((s["steps"], model.n_int)) if r == 0 else None
                times[name].append(_timed(st.step, u, ys, getattr(st, "after", None)))
                if ys is not None:
                    outputs[name] = ys
    finally:
        if gc_was:
            gc.enable()
    ref = outputs["Newmark"]
    rows = []
    for name in steppers:
        t = np.array(times[name])                    # (runs, steps) microseconds
        run_means = t.mean(axis=1)
        mean = float(run_means.mean())
        half = float(stats.t.ppf(0.975, len(run_means) - 1) * run_means.std(ddof=1) / math.sqrt(len(run_means)))
        y = outputs[name]
        if name.startswith("FIR/IIR"):               # step(u[n]) returns y[n+1]
            err = y[:-1] - ref[1:]
            scale = ref[1:]
        else:
            err, scale = y - ref, ref
        rel = float(np.sqrt((err ** 2).mean() / max((scale ** 2).mean(), 1e-300)))
        flat = t.ravel()
        rows.append({"method": name, "mean_us": mean, "ci95_lo_us": mean - half, "ci95_hi_us": mean + half,
                     "median_us": float(np.median(flat)), "p99_us": float(np.percentile(flat, 99)),
                     "max_us": float(flat.max()), "over_budget_pct": float(100.0 * np.mean(flat > budget_us)),
                     "fits_budget": bool(np.percentile(flat, 99) < budget_us),
                     "rel_rms_vs_newmark": rel})
    info = sf.info
    return {"settings": s, "n_dof": model.n_dof, "budget_us": budget_us, "setup_s": setup, "rows": rows,
            "slow_modes_hz": [float(w / (2 * math.pi)) for w in info["omega"]],
            "slow_modes_zeta": [float(d / w) if w > 0 else None for d, w in zip(info["delta"], info["omega"])],
            "fir_tail_ratio": info["tail_ratio"], "interface_points_m": model.info["io_points_m"],
            "hht": {"alpha": hh.alpha, "beta": hh.beta, "gamma": hh.gamma}}


def markdown_fe(d: dict) -> str:
    s = d["settings"]
    lines = [f"FE virtual parts: plate with {d['n_dof']} DoFs, 3 in / 3 out, dt = {s['dt'] * 1e3:g} ms "
             f"(budget {d['budget_us']:.0f} us), {s['runs']} runs x {s['steps']} steps; FIR/IIR: N_L = {s['n_slow']}, "
             f"M = {s['taps']}, {s['window']} window, {s['method']} impulse",
             "",
             "| method | mean per step (us) | 95 % CI of the mean (us) | median (us) | p99 (us) | max (us) | steps over "
             "budget | fits 0.5 ms (p99) | rel. RMS vs Newmark |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        lines.append(f"| {r['method']} | {r['mean_us']:.1f} | {r['ci95_lo_us']:.1f} - {r['ci95_hi_us']:.1f} | "
                     f"{r['median_us']:.1f} | {r['p99_us']:.1f} | {r['max_us']:.0f} | {r['over_budget_pct']:.1f} % | "
                     f"{'yes' if r['fits_budget'] else 'no'} | {r['rel_rms_vs_newmark']:.2e} |")
    setup = ", ".join(f"{k} {v:.2f}" for k, v in d["setup_s"].items())
    lines += ["", f"Set-up (s): {setup}",
              f"Slow modes (Hz): {', '.join(f'{f:.1f}' for f in d['slow_modes_hz'])}; FIR tail |H[M]|/max|H| = "
              f"{d['fir_tail_ratio']:.3f}"]
    return "\n".join(lines)


def cmd_fe(a) -> int:
    """``rths bench fe`` from the parsed arguments of the bench parser (``--set``, ``--quick``, ``--out``)."""
    from rths_ros.bench.core import machine_facts, write
    from rths_ros.launch_support import default_out
    settings = parse_settings(a.set, a.quick)
    out = Path(a.out) if a.out else default_out("bench-fe")
    facts = machine_facts()
    try:
        facts["loadavg"] = list(os.getloadavg())
    except OSError:
        pass
    print(f"rths bench fe on {facts['cores']} cores, Python {facts['python']}, load average {facts.get('loadavg')}")
    d = bench_fe(settings, log=lambda m: print(m, flush=True))
    md = markdown_fe(d)
    print(md)
    write(out, {"machine": facts, "fe": d}, f"Machine: {facts}\n\n{md}")
    print(f"-> {out / 'bench.json'}, {out / 'bench.md'}")
    return 0
