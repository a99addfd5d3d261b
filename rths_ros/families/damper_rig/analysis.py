"""Analysis of a recorded run of the damper-rig family (numerical.model = dubois_damper; ``rths analyze RUN_DIR``,
also run after ``rths run``): the measures of du Bois et al. 2010 §4.5 instead of the contact test's metrics.

From the 1-D interface record: ``x2_num`` = the interface command (the numerical ``x2``), ``x2_phys`` = the LVDT
(the interface state), the load cell (the measured force) and the demand (LegCommand ``length[0]``).  Over the last
whole periods of the base excitation (at most 1 s, at most half the trial; the record before is the settling):

* ``H`` = first-harmonic ratio x2_phys / x2_num (|H| and its phase; Fig. 13 of the paper);
* ``rms_over_noise`` = RMS(x2_phys - x2_num) / the LVDT noise standard deviation (Fig. 14; 1 = noise alone);
* ``acceptable`` = ``|H - 1| <= 0.25`` (the tolerance of the rig study, ``rths damper-rig test``).

Verdict: ``stable`` is False when the run aborted (a command or demand beyond the interface limit, a non-finite
value); the reason is stated.  A run with one trial and no abort is repeated in process by
:func:`rths_ros.core.models.dubois.rig.run_substructured` with the same settings; ``core_check`` says whether
the signals are identical (they are while the trip does not fire: docs/dubois_rig.md).

The force the numerical part was fed (the blend ``gamma f_p + (1 - gamma) f_n``) is not on a topic; the record's
``f_int`` is the load cell's force.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rths_ros.analysis import figures
from rths_ros.analysis.rig_run import add_core_check, core_check_lines, last_trial, report_head, write_outputs
from rths_ros.app import scenario as scn
from rths_ros.core.sysid.qualification import fourier_coefficient

__all__ = ["ACCEPT_TOL", "damper_metrics", "analyze_damper_rig"]

#: |H - 1| up to which the tracking counts as acceptable (the rig study's accept_tol)
ACCEPT_TOL = 0.25


def _window(n: int, f_hz: float, dt: float) -> int:
    """Samples of the evaluation window: whole periods within min(1 s, half the record)."""
    if f_hz <= 0.0 or n < 4:
        return 0
    periods = int(math.floor(min(1.0, 0.5 * n * dt) * f_hz + 1e-9))
    return int(round(periods / (f_hz * dt))) if periods >= 1 else 0


def damper_metrics(tr: dict, s: scn.Scenario, aborted: bool = False, abort_reason: str = "") -> dict:
    """The measures of one trial (module doc)."""
    p = s.numerical.dubois_damper
    dt = s.loop.dt_s
    xn = np.asarray(tr["z_cmd"], dtype=float)
    xp = np.asarray(tr["z_ach"], dtype=float)
    n = xn.size
    m: dict = {"scenario": s.name, "model": s.numerical.model, "process_model": p.model.kind,
               "amplitude_mm": p.amplitude_m * 1e3, "frequency_hz": p.frequency_hz, "steps": int(n - 1),
               "duration_s": float((n - 1) * dt), "aborted": bool(aborted), "abort_reason": abort_reason,
               "peak_x2_num_mm": float(np.max(np.abs(xn)) * 1e3) if n else 0.0,
               "peak_damper_force_n": float(np.max(np.abs(tr["wrench"][:, 1]))) if n else 0.0,
               "peak_demand_mm": float(np.max(np.abs(tr["b_cmd"][:, 0])) * 1e3) if n else 0.0}
    w = _window(n, p.frequency_hz, dt)
    m["eval_window_s"] = w * dt
    if w >= 2 and not aborted:
        a, b = xp[-w:], xn[-w:]
        h = fourier_coefficient(a, p.frequency_hz, dt) / fourier_coefficient(b, p.frequency_hz, dt)
        sigma = p.rig.actuator.noise_x_m
        m["H_abs"] = float(abs(h))
        m["H_phase_deg"] = float(np.degrees(np.angle(h)))
        m["H_error"] = float(abs(h - 1.0))
        m["rms_error_mm"] = float(np.sqrt(np.mean((a - b) ** 2)) * 1e3)
        m["rms_over_noise"] = float(np.sqrt(np.mean((a - b) ** 2)) / sigma) if sigma > 0 else None
        m["acceptable"] = bool(abs(h - 1.0) <= ACCEPT_TOL)
    if aborted:
        m["stable"] = False
        m["stability_reason"] = f"aborted: {abort_reason}"
    else:
        m["stable"] = True
        m["stability_reason"] = (f"bounded: no command or demand beyond safety.interface_limit_m = "
                                 f"{s.safety.interface_limit_m:g} m")
    return m


def _core_check(s: scn.Scenario, tr: dict) -> dict:
    from rths_ros.core.models.dubois.rig import run_substructured
    p = s.numerical.dubois_damper
    n = tr["k"].size
    r = run_substructured(p.rig, p.model, p.predictor, p.amplitude_m, p.frequency_hz, n * s.loop.dt_s,
                          switches=p.switches, trip=p.trip, seed=p.noise_seed, limit_m=s.safety.interface_limit_m,
                          ramp_s=p.ramp_s)
    k = min(n, r.x2_num.size)
    dev = {"x2_num": float(np.max(np.abs(r.x2_num[:k] - tr["z_cmd"][:k]))),
           "x2_phys": float(np.max(np.abs(r.x2_phys[:k] - tr["z_ach"][:k]))),
           "f_phys": float(np.max(np.abs(r.f_phys[:k] - tr["f_meas"][:k])))}
    return {"max_abs_signal_difference": dev, "identical": k == n and all(v == 0.0 for v in dev.values()),
            "trip_fired": bool(r.tripped)}


def plot_damper(tr: dict, s: scn.Scenario, w: int, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = np.arange(tr["k"].size) * s.loop.dt_s
    if t.size < 2:
        return []
    fig, ax = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    ax[0].plot(t, 1e3 * tr["z_cmd"], lw=0.8, label="x2 numerical")
    ax[0].plot(t, 1e3 * tr["z_ach"], lw=0.8, label="x2 physical (LVDT)")
    ax[0].plot(t, 1e3 * tr["b_cmd"][:, 0], lw=0.6, alpha=0.7, label="demand r")
    if w:
        ax[0].axvspan(t[-w], t[-1], color="0.9", zorder=0, label="evaluation window")
    ax[0].set_ylabel("displacement [mm]")
    ax[0].legend(loc="upper right", fontsize=8)
    ax[1].plot(t, 1e3 * (tr["z_ach"] - tr["z_cmd"]), lw=0.8)
    ax[1].set_ylabel("physical - numerical [mm]")
    ax[2].plot(t, tr["f_meas"], lw=0.6, label="load cell")
    ax[2].plot(t, tr["wrench"][:, 1], lw=0.8, label="damper force (true)")
    ax[2].set_ylabel("force [N]")
    ax[2].set_xlabel("t [s]")
    ax[2].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path = out / "damper_rig.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def _report(m: dict, s: scn.Scenario) -> list[str]:
    def f(key, fmt="{:.4g}"):
        v = m.get(key)
        return "n/a" if v is None else fmt.format(v)
    lines = report_head("du Bois et al.'s (2010) substructured damper rig", s, m,
                        f"Process model {m['process_model']}, base motion {m['amplitude_mm']:g} mm at "
                        f"{m['frequency_hz']:g} Hz, {m['steps']} steps ({m['duration_s']:.3f} s).")
    if "H_abs" in m:
        lines += [f"Over the last {m['eval_window_s']:g} s:", "", "| measure | value |", "|---|---|",
                  f"| abs(H), x2 physical / numerical | {f('H_abs', '{:.4f}')} |",
                  f"| phase of H | {f('H_phase_deg', '{:+.2f}')}° |",
                  f"| abs(H - 1) | {f('H_error', '{:.4f}')} ({'acceptable' if m['acceptable'] else 'not acceptable'}:"
                  f" tolerance {ACCEPT_TOL}) |",
                  f"| RMS(x2 physical - numerical) | {f('rms_error_mm', '{:.4f}')} mm = {f('rms_over_noise', '{:.1f}')}"
                  " x the LVDT noise |",
                  f"| peak damper force / demand | {f('peak_damper_force_n', '{:.1f}')} N / "
                  f"{f('peak_demand_mm', '{:.3f}')} mm |", ""]
    dev = (m.get("core_check") or {}).get("max_abs_signal_difference", {})
    return lines + core_check_lines(m, "run_substructured", f"x2 numerical {dev.get('x2_num', math.nan):.3g} m")


def analyze_damper_rig(rec: dict, s: scn.Scenario, out: Path) -> dict:
    """metrics.json, report.md and the plot of the last trial of a damper-rig record (graph or virtual run)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tr, n_trials, aborted, reason = last_trial(rec, s)
    m = damper_metrics(tr, s, aborted, reason)
    add_core_check(m, s, n_trials, aborted, lambda: _core_check(s, tr) if tr["k"].size > 2 else None)
    plots = plot_damper(tr, s, int(round(m["eval_window_s"] / s.loop.dt_s)), out) if figures.enabled() else []
    summary = []
    if "H_abs" in m:
        summary.append(f"|H| = {m['H_abs']:.4f}, phase {m['H_phase_deg']:+.2f} deg, |H - 1| = {m['H_error']:.4f} "
                       f"({'acceptable' if m['acceptable'] else 'not acceptable'}), RMS/noise = "
                       f"{m['rms_over_noise']:.1f}")
    return write_outputs(rec, m, out, lambda mm: _report(mm, s), plots, summary, "run_substructured")


def analyze_bag(bag: Path, out: Path) -> dict:
    """The family's bag analysis: the run's record, then :func:`analyze_damper_rig`."""
    from rths_ros.analysis.run_analysis import record_from_bag
    rec, scenario, _ = record_from_bag(Path(bag))
    return analyze_damper_rig(rec, scenario, out)
