"""Analysis of a recorded run of the linear-motor family (numerical.model = cubic_spring; ``rths analyze RUN_DIR``,
also run after ``rths run``): the synchronisation measures of Bartl 2019 §6.2 instead of the contact test's metrics.

The record is the 1-D interface record of the bag (:func:`rths_ros.analysis.run_analysis.record_from_bag`).  It is
put into the layout of the in-process rig study (:func:`rths_ros.core.models.bartl.loop.simulate_cubic`, sample k
at t_k): ``y_VIR[k]`` = the interface command of step k, ``y_EXP[k]`` = the rod position measured after the
demand of step k-1 was held for one sample (the interface state of step k-1), ``lambda_VIR[k]`` = minus the
force measured with it.  On that layout the measures are those of the rig study
(:func:`rths_ros.analysis.bartl_rigs.cubic_measures`): amplitude ratio and phase of y_EXP against y_VIR at the
excitation frequency, the mean gap (offset), the synchronisation error |G|/|Y_VIR|, the share of clipped demands,
the power outflow, over the last ``T_EVAL_S`` seconds of the trial (at most half of it).  ``ref_ratio`` compares
the virtual part's amplitude with that of the coupled reference system (virtual part + ideal spring).

Verdict: ``stable`` is False when the run aborted, the demand was clipped in more than 5 % of the samples, or the
synchronisation error exceeds 1 (the rig study's rule); the reason is stated.  A run with one trial and no abort
is repeated in process by ``simulate_cubic`` with the same settings; ``core_check`` says whether the signals are
identical.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rths_ros.analysis import figures
from rths_ros.analysis.bartl_rigs import T_EVAL_S, cubic_measures
from rths_ros.analysis.rig_run import add_core_check, core_check_lines, last_trial, report_head, write_outputs
from rths_ros.app import scenario as scn
from rths_ros.core.methods.lumped_mass import fit_harmonic
from rths_ros.core.models.bartl.rths import reference_motion, rig_params, strategy_of

__all__ = ["study_layout", "linear_motor_metrics", "analyze_linear_motor"]


def study_layout(tr: dict, s: scn.Scenario) -> dict:
    """One trial of the graph (or virtual-run) record in the layout of ``simulate_cubic`` (module doc)."""
    p = s.numerical.cubic_spring
    dt = s.loop.dt_s
    n = tr["k"].size
    y_vir = np.asarray(tr["z_cmd"], dtype=float)
    y_exp = np.zeros(n)
    lam = np.zeros(n)
    y_exp[1:] = tr["z_ach"][:-1]
    lam[1:] = -np.asarray(tr["f_meas"][:-1], dtype=float)
    g = y_exp - y_vir
    p_in = np.zeros(n)
    p_in[1:] = lam[1:] * np.diff(g) / dt
    return {"t": np.arange(n) * dt, "y_vir": y_vir, "y_exp": y_exp, "g": g, "lam_vir": lam, "p_in": p_in,
            "saturated": np.asarray(tr["current"][:, 1], dtype=float), "f_d": np.asarray(tr["f_d"], dtype=float),
            "motor_force": np.asarray(tr["current"][:, 0], dtype=float), "mu_lms": np.zeros(n), "nu_lms": np.ones(n),
            "f_hz": p.excitation_frequency_hz, "amp_n": p.excitation_amplitude_n, "dt_s": dt,
            "t_on_s": p.excitation_on_s, "strategy": _strategy(s)}


def _strategy(s: scn.Scenario) -> str:
    """pure PBC, pure AFF, PBC + AFF (the rig study's names), or what else the scenario runs."""
    p = s.numerical.cubic_spring
    name = strategy_of(p, s.aff.enabled, s.passivity.enabled)
    if name == "pbc" and not s.passivity.enabled:
        return "displacement control"
    if name == "pbc_aff" and not s.passivity.enabled:
        return "displacement control + AFF"
    if name == "aff" and s.passivity.enabled:
        return "AFF + passivity controller"
    return name


def _num(x):
    return None if x is None or not math.isfinite(float(x)) else float(x)


def linear_motor_metrics(tr: dict, s: scn.Scenario, aborted: bool = False, abort_reason: str = "") -> tuple[dict, dict]:
    """(metrics, study-layout record) of one trial."""
    r = study_layout(tr, s)
    p = s.numerical.cubic_spring
    dt = s.loop.dt_s
    t = r["t"]
    span = float(t[-1]) if t.size else 0.0
    t_eval = min(T_EVAL_S, 0.5 * max(span - p.excitation_on_s, 0.0))
    m: dict = {"scenario": s.name, "model": s.numerical.model, "strategy": r["strategy"],
               "excitation_n": p.excitation_amplitude_n, "excitation_hz": p.excitation_frequency_hz,
               "steps": int(t.size - 1), "duration_s": span, "eval_window_s": t_eval,
               "aborted": bool(aborted), "abort_reason": abort_reason}
    periods = t_eval * p.excitation_frequency_hz
    if t.size < 3 or periods < 2.0 or p.excitation_amplitude_n == 0.0:
        m["stable"] = not aborted
        m["stability_reason"] = "no synchronisation measures: fewer than 2 excitation periods after the switch-on"
        return m, r
    c = cubic_measures(r, t_eval_s=t_eval)
    m.update({key: _num(c[key]) for key in ("ratio", "phase_deg", "offset_mm", "offset_rel", "sync_error",
                                            "y_vir_amp_mm", "sat_fraction", "p_out_max_w", "e_out_j",
                                            "t_stab_s")})
    last = t >= t[-1] - t_eval
    ref = reference_motion(p, t)
    x_ref = abs(fit_harmonic(t[last], ref[last], p.excitation_frequency_hz))
    m["ref_amp_mm"] = x_ref * 1e3
    m["ref_ratio"] = _num(c["y_vir_amp_mm"] / (x_ref * 1e3)) if x_ref > 0 else None
    m["E_diss_J"] = float(np.sum(r["f_d"] * tr["zdot_cmd"]) * dt)
    m["peak_damping_force_n"] = float(np.max(np.abs(r["f_d"])))
    m["peak_motor_force_n"] = float(np.max(np.abs(r["motor_force"])))
    if "aff_mu" in tr:     # the learner's LMS gains as it published them with its coefficients (realtime runs too)
        mu, nu = np.asarray(tr["aff_mu"], dtype=float), np.asarray(tr["aff_nu"], dtype=float)
        on = np.isfinite(nu) & (t >= p.excitation_on_s)
        m["mu_lms_final"] = float(mu[np.isfinite(mu)][-1]) if np.isfinite(mu).any() else None
        m["nu_lms_min"] = float(np.min(nu[on])) if on.any() else None
    reasons = []
    if aborted:
        reasons.append(f"aborted: {abort_reason}")
    if c["sat_fraction"] > 0.05:
        reasons.append(f"demand clipped at the stroke in {100 * c['sat_fraction']:.0f} % of the samples")
    if c["sync_error"] > 1.0:
        reasons.append(f"synchronisation error {c['sync_error']:.3g} > 1")
    m["stable"] = not reasons
    m["stability_reason"] = "; ".join(reasons) if reasons else (
        f"bounded: the demand was never clipped and |G|/|Y_VIR| = {c['sync_error']:.3g} <= 1 over the last "
        f"{t_eval:g} s (amplitude ratio {c['ratio']:.3f}, phase {c['phase_deg']:+.1f} deg)")
    return m, r


def _core_check(s: scn.Scenario, r: dict) -> dict | None:
    """The in-process rig study's loop with the same settings, against the graph's signals (None for a
    configuration the study has no strategy for: pure AFF with the passivity controller)."""
    from rths_ros.core.models.bartl.loop import simulate_cubic
    p = s.numerical.cubic_spring
    n = r["t"].size - 1
    strategy = strategy_of(p, s.aff.enabled, s.passivity.enabled)
    if n < 2 or (strategy == "aff" and s.passivity.enabled):
        return None
    core = simulate_cubic(strategy, p.excitation_frequency_hz, p.excitation_amplitude_n, n * s.loop.dt_s,
                          aff=p.aff, rig=rig_params(p), pbc=s.passivity, peak_filter=p.peak_filter,
                          peak_bw_hz=p.peak_bw_hz, t_on_s=p.excitation_on_s)
    dev = {key: float(np.max(np.abs(core[key][:n] - r[key][:n]))) for key in ("y_vir", "y_exp", "lam_vir")}
    out = {"strategy": strategy, "max_abs_signal_difference": dev, "identical": all(v == 0.0 for v in dev.values())}
    if s.aff.enabled:      # the filter's gains are not on a topic: from the identical repeat
        on = core["t"] >= core["t_on_s"]
        out["mu_lms_final"] = float(core["mu_lms"][-1])
        out["nu_lms_min"] = float(np.min(core["nu_lms"][on])) if on.any() else 1.0
    return out


def plot_linear_motor(r: dict, ref: np.ndarray, t_eval: float, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = r["t"]
    if t.size < 2:
        return []
    fig, ax = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    ax[0].plot(t, 1e3 * r["y_vir"], lw=0.8, label="y_VIR (virtual part, demand)")
    ax[0].plot(t, 1e3 * r["y_exp"], lw=0.8, label="y_EXP (rod, measured)")
    ax[0].plot(t, 1e3 * ref, "--", lw=0.8, label="reference (coupled, ideal)")
    ax[0].set_ylabel("position [mm]")
    ax[0].legend(loc="upper right", fontsize=8)
    ax[1].plot(t, 1e3 * r["g"], lw=0.8)
    ax[1].set_ylabel("gap y_EXP - y_VIR [mm]")
    ax[2].plot(t, r["f_d"], lw=0.8, label="damping force F_d")
    ax[2].plot(t, -r["lam_vir"], lw=0.8, label="measured spring force")
    ax[2].set_ylabel("force [N]")
    ax[2].set_xlabel("t [s]")
    ax[2].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    paths = [out / "cubic_spring_signals.png"]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    last = t >= t[-1] - t_eval
    fig, a = plt.subplots(figsize=(5, 5))
    a.plot(1e3 * r["y_vir"][last], 1e3 * r["y_exp"][last], lw=0.8)
    lim = 1e3 * max(np.max(np.abs(r["y_vir"][last])), np.max(np.abs(r["y_exp"][last])), 1e-9)
    a.plot([-lim, lim], [-lim, lim], "k--", lw=0.6)
    a.set_xlabel("y_VIR [mm]")
    a.set_ylabel("y_EXP [mm]")
    a.set_title(f"synchronisation, last {t_eval:g} s")
    fig.tight_layout()
    paths.append(out / "cubic_spring_sync.png")
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    return paths


def _report(m: dict, s: scn.Scenario) -> list[str]:
    def f(key, fmt="{:.4g}"):
        v = m.get(key)
        return "n/a" if v is None else fmt.format(v)
    lines = report_head("Bartl's (2019) cubic-spring rig on a linear motor", s, m,
                        f"{m['strategy']}, excitation {m['excitation_n']:g} N at {m['excitation_hz']:g} Hz, "
                        f"{m['steps']} steps ({m['duration_s']:.3f} s).")
    if "ratio" in m:
        lines += [f"Over the last {m['eval_window_s']:g} s:", "", "| measure | value |", "|---|---|",
                  f"| y_EXP / y_VIR amplitude | {f('ratio', '{:.4f}')} |",
                  f"| phase of y_EXP against y_VIR | {f('phase_deg', '{:+.1f}')}° |",
                  f"| offset (mean gap) | {f('offset_mm', '{:+.4f}')} mm |",
                  f"| synchronisation error abs(G)/abs(Y_VIR) | {f('sync_error')} |",
                  f"| y_VIR amplitude / reference | {f('ref_ratio', '{:.3f}')} ({f('y_vir_amp_mm', '{:.3f}')} / "
                  f"{f('ref_amp_mm', '{:.3f}')} mm) |",
                  f"| demand clipped | {f('sat_fraction', '{:.1%}')} |",
                  f"| peak power outflow / stabilised after | {f('p_out_max_w', '{:.3g}')} W / "
                  f"{f('t_stab_s', '{:.2f}')} s |",
                  f"| energy dissipated by the passivity controller | {f('E_diss_J', '{:.3g}')} J |",
                  f"| AFF gains: final mu_LMS / lowest nu_LMS after the switch-on | {f('mu_lms_final', '{:.4g}')} / "
                  f"{f('nu_lms_min', '{:.4g}')} |",
                  f"| peak damping force / motor force | {f('peak_damping_force_n', '{:.3g}')} / "
                  f"{f('peak_motor_force_n', '{:.3g}')} N |", ""]
    cc = m.get("core_check") or {}
    dev = cc.get("max_abs_signal_difference", {})
    return lines + core_check_lines(m, f"simulate_cubic, strategy {cc.get('strategy')}",
                                    f"y_VIR {dev.get('y_vir', math.nan):.3g} m")


def analyze_linear_motor(rec: dict, s: scn.Scenario, out: Path) -> dict:
    """metrics.json, report.md and the plots of the last trial of a linear-motor record (graph or virtual run)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tr, n_trials, aborted, reason = last_trial(rec, s)
    m, r = linear_motor_metrics(tr, s, aborted, reason)
    add_core_check(m, s, n_trials, aborted, lambda: _core_check(s, r))
    ref = reference_motion(s.numerical.cubic_spring, r["t"])
    plots = (plot_linear_motor(r, ref, m.get("eval_window_s", 0.0) or float(r["t"][-1]), out) if figures.enabled()
             else [])
    summary = []
    if "ratio" in m:
        summary.append(f"y_EXP/y_VIR = {m['ratio']:.4f}, phase {m['phase_deg']:+.1f} deg, offset "
                       f"{m['offset_mm']:+.4f} mm, sync error {m['sync_error']:.3g}, y_VIR/reference "
                       f"{m['ref_ratio']:.3f}")
    return write_outputs(rec, m, out, lambda mm: _report(mm, s), plots, summary, "simulate_cubic")


def analyze_bag(bag: Path, out: Path) -> dict:
    """The family's bag analysis: the run's record, then :func:`analyze_linear_motor`."""
    from rths_ros.analysis.run_analysis import record_from_bag
    rec, scenario, _ = record_from_bag(Path(bag))
    return analyze_linear_motor(rec, scenario, out)
