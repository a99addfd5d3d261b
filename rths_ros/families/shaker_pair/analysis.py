"""Analysis of a recorded run of the two-shaker family (numerical.model = coupled_beams; ``rths analyze RUN_DIR``,
also run after ``rths run``): the synchronisation measures of Bartl 2019 §6.1 instead of the contact test's metrics.

The record is the vector-interface record of the bag (:func:`rths_ros.analysis.vector_record.vector_record_from_bag`,
width 2: the two actuator points).  It is put into the layout of the in-process rig study
(:func:`rths_ros.core.models.bartl.beams.simulate_beams`, sample k at t_k): ``y_VIR[k]`` = the interface command of
step k, ``y_EXP[k]`` = the actuator-point displacements measured after the demand of step k-1 was held for one
sample (the interface state of step k-1), ``u[k]`` = the shakers' force demands of step k, ``[z_B, alpha_B]`` of the
virtual beam = T^-1 y_VIR.  On that layout the measures are those of the rig study
(:func:`rths_ros.analysis.bartl_rigs.beam_measures`) over the last ``BEAM_EVAL_S`` seconds (at most half of the
time after the switch-on): per actuator point the amplitude ratio and phase of y_EXP against y_VIR at the
excitation frequency, the synchronisation error ||G|| / ||Y_VIR||, the NMSE (eq. 6.4), and the virtual beam's
interface motion against the coupled reference at the excitation frequency (``ref_ratio_z``, ``ref_ratio_alpha``;
for a square wave against its fundamental, 4/pi of its amplitude), and ``rel_rms`` = rms|g| / rms|y_VIR| (the
rig study's measure of the square wave).

Verdict: ``stable`` is False when the run aborted or the synchronisation error exceeds 1 (the gap is larger than
the motion); ``synchronised`` is True when it is at most ``SYNC_TOL`` = 0.1.  A lockstep run with one trial and no
abort is repeated in process by ``simulate_beams`` with the same settings; ``core_check`` says whether the signals
are identical.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from rths_ros.analysis import figures
from rths_ros.analysis.bartl_rigs import BEAM_EVAL_S, beam_measures
from rths_ros.analysis.rig_run import add_core_check, core_check_lines, last_trial, report_head, write_outputs
from rths_ros.app import scenario as scn
from rths_ros.core.models.bartl.beams_rths import VirtualBeam, rig_of

__all__ = ["SYNC_TOL", "study_layout", "shaker_pair_metrics", "analyze_shaker_pair", "analyze_shaker_pair_bag"]

#: synchronisation error up to which a run counts as synchronised
SYNC_TOL = 0.1


def study_layout(tr: dict, s: scn.Scenario) -> dict:
    """One trial of the graph (or virtual-run) record in the layout of ``simulate_beams`` (module doc)."""
    p = s.numerical.coupled_beams
    dt = s.loop.dt_s
    n = tr["k"].size
    y_vir = np.asarray(tr["q_cmd"], dtype=float)
    y_exp = np.zeros((n, 2))
    lam = np.zeros((n, 2))
    y_exp[1:] = tr["q_ach"][:-1]
    lam[1:] = tr["measured"][:-1]
    rig = rig_of(p, dt)
    excitation = VirtualBeam(p, dt).excitation
    return {"t": np.arange(n) * dt, "y_vir": y_vir, "y_exp": y_exp, "g": y_exp - y_vir,
            "u": np.asarray(tr["b_cmd"][:, :2], dtype=float), "lam_exp": lam,
            "zb_vir": y_vir @ np.linalg.inv(rig.T).T, "f_ext": np.array([excitation(k * dt) if k else 0.0
                                                                          for k in range(n)]),
            # the reference is compared at f0: a square wave's fundamental has 4/pi of its amplitude
            "f0_hz": p.excitation_frequency_hz, "square": p.square,
            "amp_n": p.excitation_amplitude_n * (4.0 / math.pi if p.square else 1.0),
            "t_on_s": p.aff.t_id_s, "dt_s": dt}


def _num(x):
    return None if x is None or not math.isfinite(float(x)) else float(x)


def shaker_pair_metrics(tr: dict, s: scn.Scenario, aborted: bool = False, abort_reason: str = "") -> tuple[dict, dict]:
    """(metrics, study-layout record) of one trial."""
    r = study_layout(tr, s)
    p = s.numerical.coupled_beams
    t = r["t"]
    span = float(t[-1]) if t.size else 0.0
    t_eval = min(BEAM_EVAL_S, 0.5 * max(span - p.aff.t_id_s, 0.0))
    m: dict = {"scenario": s.name, "model": s.numerical.model, "excitation_n": p.excitation_amplitude_n,
               "excitation_hz": p.excitation_frequency_hz, "square": p.square,
               "aff_frequencies_hz": list(p.aff.frequencies_hz), "aff_law": p.aff.law,
               "simultaneous_identification": p.aff.simultaneous, "identification_s": p.aff.t_id_s,
               "steps": int(t.size - 1), "duration_s": span, "eval_window_s": t_eval,
               "aborted": bool(aborted), "abort_reason": abort_reason,
               "peak_force_demand_n": float(np.max(np.abs(r["u"]))) if t.size else 0.0}
    if t.size < 3 or t_eval * p.excitation_frequency_hz < 2.0 or p.excitation_amplitude_n == 0.0:
        m["stable"] = not aborted
        m["synchronised"] = None
        m["stability_reason"] = "no synchronisation measures: fewer than 2 excitation periods after the switch-on"
        return m, r
    c = beam_measures(r, rig_of(p, s.loop.dt_s), t_eval_s=t_eval)
    m.update({key: _num(c[key]) for key in ("sync_error", "nmse", "rel_rms", "ref_ratio_z", "ref_ratio_alpha")})
    m.update({key: [_num(x) for x in c[key]] for key in ("ratio", "phase_deg", "y_amp_um")})
    reasons = []
    if aborted:
        reasons.append(f"aborted: {abort_reason}")
    if c["sync_error"] > 1.0:
        reasons.append(f"synchronisation error {c['sync_error']:.3g} > 1")
    m["stable"] = not reasons
    m["synchronised"] = bool(not aborted and c["sync_error"] <= SYNC_TOL)
    m["stability_reason"] = "; ".join(reasons) if reasons else (
        f"bounded: ||G||/||Y_VIR|| = {c['sync_error']:.3g} <= 1 over the last {t_eval:g} s (amplitude ratios "
        f"{c['ratio'][0]:.3f} / {c['ratio'][1]:.3f}, phases {c['phase_deg'][0]:+.1f} / {c['phase_deg'][1]:+.1f} deg)")
    return m, r


def _core_check(s: scn.Scenario, r: dict) -> dict | None:
    """The in-process rig study's loop with the same settings, against the graph's signals."""
    from rths_ros.core.models.bartl.beams import simulate_beams
    p = s.numerical.coupled_beams
    n = r["t"].size
    if n < 3:
        return None
    dt = s.loop.dt_s
    core = simulate_beams(p.aff, p.excitation_frequency_hz, p.excitation_amplitude_n, n * dt, square=p.square,
                          rig=rig_of(p, dt), divergence_limit_m=math.inf)
    dev = {key: float(np.max(np.abs(core[key][:n] - r[key][:n]))) for key in ("y_vir", "y_exp", "u")}
    h = core["aff"].h_est
    return {"max_abs_signal_difference": dev, "identical": all(v == 0.0 for v in dev.values()),
            "h_est_final": [[[float(z.real), float(z.imag)] for z in row] for row in h[0]]}


def plot_shaker_pair(r: dict, t_eval: float, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = r["t"]
    if t.size < 2:
        return []
    fig, ax = plt.subplots(4, 1, figsize=(9, 10), sharex=True)
    for i, a in enumerate(ax[:2]):
        a.plot(t, 1e6 * r["y_vir"][:, i], lw=0.7, label="y_VIR (virtual beam)")
        a.plot(t, 1e6 * r["y_exp"][:, i], lw=0.7, label="y_EXP (measured)")
        a.set_ylabel(f"actuator point {i + 1} [µm]")
        a.axvline(r["t_on_s"], color="k", lw=0.5, ls=":")
        a.legend(loc="upper left", fontsize=8)
    ax[2].plot(t, 1e6 * r["g"][:, 0], lw=0.7, label="point 1")
    ax[2].plot(t, 1e6 * r["g"][:, 1], lw=0.7, label="point 2")
    ax[2].set_ylabel("gap y_EXP - y_VIR [µm]")
    ax[2].legend(loc="upper left", fontsize=8)
    ax[3].plot(t, r["u"][:, 0], lw=0.7, label="shaker 1")
    ax[3].plot(t, r["u"][:, 1], lw=0.7, label="shaker 2")
    ax[3].set_ylabel("force demand u [N]")
    ax[3].set_xlabel("t [s] (excitation on at the dotted line)")
    ax[3].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    paths = [out / "coupled_beams_signals.png"]
    fig.savefig(paths[0], dpi=110)
    plt.close(fig)
    last = t >= t[-1] - t_eval
    fig, axs = plt.subplots(1, 2, figsize=(9, 4.5))
    for i, a in enumerate(axs):
        yv, ye = 1e6 * r["y_vir"][last, i], 1e6 * r["y_exp"][last, i]
        a.plot(yv, ye, lw=0.8)
        lim = max(np.max(np.abs(yv)), np.max(np.abs(ye)), 1e-9)
        a.plot([-lim, lim], [-lim, lim], "k--", lw=0.6)
        a.set_xlabel("y_VIR [µm]")
        a.set_ylabel("y_EXP [µm]")
        a.set_title(f"actuator point {i + 1}, last {t_eval:g} s")
    fig.tight_layout()
    paths.append(out / "coupled_beams_sync.png")
    fig.savefig(paths[1], dpi=110)
    plt.close(fig)
    return paths


def _report(m: dict, s: scn.Scenario) -> list[str]:
    def pair(key, fmt):
        v = m.get(key)
        return "n/a" if v is None else " / ".join("n/a" if x is None else fmt.format(x) for x in v)

    def one(key, fmt="{:.4g}"):
        v = m.get(key)
        return "n/a" if v is None else fmt.format(v)
    wave = "square wave" if m["square"] else "cosine"
    lines = report_head("Bartl's (2019) coupled beams on two shakers", s, m,
                        f"Harmonic AFF ({m['aff_law']}, simultaneous identification {m['simultaneous_identification']}"
                        f", basis {m['aff_frequencies_hz']} Hz; identification {m['identification_s']:g} s), "
                        f"excitation {m['excitation_n']:g} N {wave} at {m['excitation_hz']:g} Hz, {m['steps']} steps "
                        f"({m['duration_s']:.3f} s).")
    if m.get("sync_error") is not None:
        lines += [f"Over the last {m['eval_window_s']:g} s (actuator points 1 / 2):", "", "| measure | value |",
                  "|---|---|",
                  f"| synchronisation error ‖G‖/‖Y_VIR‖ | {one('sync_error')} "
                  f"({'synchronised' if m['synchronised'] else 'not synchronised'}: tolerance {SYNC_TOL:g}) |",
                  f"| y_EXP / y_VIR amplitude | {pair('ratio', '{:.4f}')} |",
                  f"| phase of y_EXP against y_VIR | {pair('phase_deg', '{:+.2f}')} ° |",
                  f"| y_VIR amplitude | {pair('y_amp_um', '{:.3f}')} µm |",
                  f"| NMSE (eq. 6.4) | {one('nmse', '{:.3g}')} |",
                  f"| z_B / alpha_B amplitude of the virtual beam / coupled reference | {one('ref_ratio_z', '{:.3f}')} "
                  f"/ {one('ref_ratio_alpha', '{:.3f}')} |",
                  f"| peak shaker force demand | {one('peak_force_demand_n', '{:.3g}')} N |", ""]
    d = (m.get("core_check") or {}).get("max_abs_signal_difference", {})
    return lines + core_check_lines(m, "simulate_beams", f"y_VIR {d.get('y_vir', math.nan):.3g} m, y_EXP "
                                    f"{d.get('y_exp', math.nan):.3g} m, u {d.get('u', math.nan):.3g} N")


def analyze_shaker_pair(rec: dict, s: scn.Scenario, out: Path) -> dict:
    """metrics.json, report.md and the plots of the last trial of a two-shaker record (graph or virtual run)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tr, n_trials, aborted, reason = last_trial(rec, s)
    m, r = shaker_pair_metrics(tr, s, aborted, reason)
    add_core_check(m, s, n_trials, aborted, lambda: _core_check(s, r))
    plots = plot_shaker_pair(r, m.get("eval_window_s", 0.0) or float(r["t"][-1]), out) if figures.enabled() else []
    summary = []
    if m.get("sync_error") is not None:
        summary.append(f"{'synchronised' if m['synchronised'] else 'NOT synchronised'} (tolerance {SYNC_TOL:g}): "
                       f"sync error {m['sync_error']:.3g}, y_EXP/y_VIR = {m['ratio'][0]:.4f} / {m['ratio'][1]:.4f}, "
                       f"phase {m['phase_deg'][0]:+.2f} / {m['phase_deg'][1]:+.2f} deg, z_B/reference "
                       f"{m['ref_ratio_z']:.3f}")
    return write_outputs(rec, m, out, lambda mm: _report(mm, s), plots, summary, "simulate_beams")


def analyze_shaker_pair_bag(bag: Path, out: Path) -> dict:
    from rths_ros.analysis.vector_record import vector_record_from_bag
    rec, s, _ = vector_record_from_bag(Path(bag), "shaker_pair")
    return analyze_shaker_pair(rec, s, out)
