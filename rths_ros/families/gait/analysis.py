"""Gait analysis of a recorded prosthetic-foot RTHS run (``rths analyze --gait RUN_DIR [RUN_DIR ...]``; also run
automatically after ``rths run`` of a gait scenario).

From the bag: the 3-DoF interface command, achieved state and load of every step (plate frame, see
:mod:`rths_ros.core.models.gait.rths`), the leg channels and the raw wrench.  The model quantities that are not on the
wire (CoM, trunk angle, contact flags, foot points, model GRFs and hip torques) are recovered by re-running the
VPP model with the recorded loads (:func:`rths_ros.core.models.gait.rths.replay_model`); the replayed interface command is
compared with the recorded one (``replay_command_max_dev`` must be 0: the same kernel with the same float64 inputs).

Quantities (:func:`rths_ros.families.gait.metrics.gait_metrics` on a :class:`~rths_ros.families.gait.metrics.GaitRecord`):

* CoM, trunk, left-leg GRF and both hip torques from the replayed model;
* right-leg GRF = the MEASURED plate force ``(F_x, F_y)`` (the ground reaction on the foot), CoP = ``M_O / F_y``
  relative to the plate reference point (the right foot point in stance);
* right-leg GRF through the VPP (``grf_x_vpp``, ``grf_y_vpp``): the model's ground reaction of the prosthetic leg,
  the measured axial load redirected into the VPP by the hip torque (eqs. 16.2/16.4, the measured F_perp
  cancelled as in 16.5/16.6).  The thesis's GRF_x,R "directly related to the forces in y direction by eq. (16.4)"
  (ch. 17) is this force; the twin's plate force slides at the friction limit (docs/gait.md);
* contact flags = the model's stance flags.

The report lists them beside the thesis's RTHS values or statements (ch. 17: CoM about 0.04 m, compared with the
peak-to-peak value; right stance about 85 %; GRF peaks about 110 % BW; stride about 0.6 s; no number for the hip
torque, only its sign pattern; the GRF_x bound of 25 % BW, compared with the GRF through the VPP), beside a pure
simulation of the same amputee model with a linear foot spring of the simulated foot's secant stiffness at body
weight (:func:`pure_reference`) and beside the basic VPP model's
periodic gait with the same parameters (:func:`vpp_reference`, the thesis's "VPP simulation"), and explains the
differences in short notes built from the run's numbers (:func:`difference_notes`), with the same pure model in
the thesis's own configuration (Table A.7 initial conditions, CoP shift on both legs: :func:`thesis_reference`).
"""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import yaml

from rths_ros.analysis import figures
from rths_ros.analysis.status import apply_status, status_lines
from rths_ros.analysis.vector_record import vector_record_from_bag
from rths_ros.app import scenario as scn
from rths_ros.bag import read_scenario_yaml
from rths_ros.core.models.gait.rths import cop_of, replay_model
from rths_ros.families.gait.metrics import (
    GaitRecord,
    animate_stick_figure,
    gait_metrics,
    plot_gait,
    plot_reproducibility,
)

EVENT_DONE = 8

#: Insam 2022 ch. 17 (RTHS with the 1C40 foot) and ch. 15 (human walking) values quoted in the report.  The thesis
#: calls 0.04 m the "amplitude" of the CoM height without defining it; it is compared with the peak-to-peak value.
THESIS = {"com_peak_to_peak_m": 0.04, "stance_fraction_R": 0.85, "grf_y_first_peak_bw": 1.10,
          "grf_y_second_peak_bw": 1.10, "stride_duration_s": 0.6}

#: report rows: metric key, label, thesis cell (a key of THESIS, formatted like the metric, or a text)
REPORT_ROWS = (
    ("com_peak_to_peak_m", "CoM height, peak to peak (max - min of y over the run) [m]",
     "≈ 0.04 (ch. 17's \"amplitude\"; compared with this row)"),
    ("com_amplitude_m", "CoM amplitude = half the peak to peak [m]", "not given separately; human ≈ 0.025 (ch. 15)"),
    ("stride_duration_s", "stride (R touch-down to R touch-down) [s]", "stride_duration_s"),
    ("stance_fraction_R", "right (prosthetic) stance fraction", "stance_fraction_R"),
    ("stance_fraction_L", "left stance fraction", "–"),
    ("double_support_fraction", "double support fraction", "human ≈ 20 % (ch. 15)"),
    ("grf_y_first_peak_bw", "GRF_y,R first peak [BW]", "≈ 110 % BW, the lower peak"),
    ("grf_y_second_peak_bw", "GRF_y,R second peak [BW]", "≈ 110 % BW, the higher peak"),
    ("grf_y_basin_bw", "GRF_y,R basin between the peaks [BW]", "≈ 0"),
    ("grf_x_max_abs_bw", "max \\|GRF_x,R\\|, measured plate force [BW]",
     "not this force (see the next row; the twin's sole slides at mu GRF_y)"),
    ("grf_vpp_x_max_abs_bw", "max \\|GRF_x,R\\| through the VPP (the model's GRF, eqs. 16.2/16.4) [BW]",
     "\"as expected\"; human up to 25 % BW; \"related to the forces in y by eq. (16.4)\""),
    ("hip_torque_min_norm", "hip torque tau_h,R min [BW l0]",
     "no number given (fig. 17.2b: magnitude and shape as in humans, fig. 15.4b)"),
    ("hip_torque_max_norm", "hip torque tau_h,R max [BW l0]", "no number given (as above)"),
    ("hip_torque_first_half_mean_norm", "hip torque tau_h,R, mean over the first half of the R stance [BW l0]",
     "no number; extension (> 0)"),
    ("hip_torque_second_half_mean_norm", "hip torque tau_h,R, mean over the second half of the R stance [BW l0]",
     "no number; flexion (< 0)"),
    ("hip_torque_vpp_min_norm", "VPP share tau_VPP,R = tau_h,R + F_perp l_R (16.3), min [BW l0]", "not shown"),
    ("hip_torque_vpp_max_norm", "VPP share tau_VPP,R (16.3), max [BW l0]", "not shown"),
    ("cop_start_m", "CoP at R touch-down rel. foot point [m]", "heel (< 0)"),
    ("cop_end_m", "CoP at R take-off rel. foot point [m]", "toe (> 0)"),
    ("cop_travel_m", "CoP travel over the R stance [m]", "heel -> toe"),
    ("xd_mean_m_per_s", "mean forward speed [m/s]", "–"),
    ("xd_trend_m_per_s2", "forward-speed trend (least-squares slope) [m/s^2]", "< 0 (x' decreases)"),
    ("trunk_change_rad", "trunk angle change, end - start [rad]", "< 0 (rotates backwards)"),
)


def _f(x) -> float:
    return float(x)


def gait_record_from_bag(bag: Path) -> tuple[dict, scn.Scenario]:
    """(record, scenario) of a gait run; the record has the layout of :func:`rths_ros.families.gait.family.empty_gait_record`
    (rows = steps 0..N that the numerical part received a load for)."""
    rec, s, _ = vector_record_from_bag(bag, "gait")
    n = rec["k"].size
    rec["cop_x"] = cop_of(rec["measured"], s.platform.gait.interface.cop_min_force_n) if n else np.full(n, np.nan)
    return rec, s


def gait_view(rec: dict, s: scn.Scenario) -> tuple[GaitRecord, dict]:
    """GaitRecord of a run record (vRTHS or bag) and the replayed model arrays."""
    r = replay_model(s.numerical.vpp, s.numerical.gait, rec["force"], s.loop.dt_s)
    n = rec["force"].shape[0]
    meas = rec["measured"]
    cop = cop_of(meas, s.platform.gait.interface.cop_min_force_n)
    contact_r = r["contact_R"]
    g = GaitRecord(
        t=r["t"], com_x=r["com_x"], com_y=r["com_y"], trunk_angle=r["trunk_angle"], com_xd=r["com_xd"],
        grf_x={"L": r["grf_x_L"], "R": meas[:, 0]}, grf_y={"L": r["grf_y_L"], "R": meas[:, 1]},
        grf_x_vpp={"R": r["grf_x_R"]}, grf_y_vpp={"R": r["grf_y_R"]},
        hip_torque={"L": r["hip_torque_L"], "R": r["hip_torque_R"]}, hip_torque_vpp={"R": r["hip_torque_vpp_R"]},
        cop_x={"R": np.where(contact_r, cop + r["foot_x_R"], np.nan)},
        foot_x={"L": r["foot_x_L"], "R": r["foot_x_R"]},
        contact={"L": r["contact_L"], "R": contact_r})
    r["replay_command_max_dev"] = float(np.max(np.abs(r["q"] - rec["q_cmd"]))) if n else 0.0
    return g, r


def secant_foot_stiffness(s: scn.Scenario) -> float:
    """Secant stiffness [N/m] of the scenario's simulated foot at foot flat (alpha = 90 deg) under one body weight."""
    from rths_ros.core.models.gait.vpp_ic import scenario_foot_stiffness
    return scenario_foot_stiffness(s)


def _simulated_metrics(p, amputee: bool, ic: dict, t_max_s: float) -> dict:
    """Gait metrics (the report's keys) of a monolithic VPP simulation from the start state of a trial."""
    from rths_ros.core.models.gait import vpp
    sim = vpp.simulate(p, n_steps=6, t_max_s=t_max_s, amputee=amputee, foot="spring", ic=ic, decimate=5)
    # a pure model has no plate: its GRF is the one through the VPP (both report rows show it)
    g = GaitRecord(t=sim["t"], com_x=sim["x"], com_y=sim["y"], trunk_angle=sim["phi"], com_xd=sim["vx"],
                   grf_x={"L": sim["grf_x_l"], "R": sim["grf_x_r"]}, grf_y={"L": sim["grf_y_l"], "R": sim["grf_y_r"]},
                   grf_x_vpp={"R": sim["grf_x_r"]}, grf_y_vpp={"R": sim["grf_y_r"]},
                   hip_torque={"L": sim["tau_l"], "R": sim["tau_r"]},
                   contact={"L": sim["contact_l"] > 0.5, "R": sim["contact_r"] > 0.5})
    m_all = gait_metrics(g, p.m_vpp_kg, p.l0_l_m, p.g_m_per_s2, leg="R")
    out = {k: m_all.get(k) for k, _, _ in REPORT_ROWS if k in m_all}
    out["fallen"] = bool(sim["fallen"])
    return out


def pure_reference(s: scn.Scenario, t_max_s: float | None = None) -> dict:
    """The same VPP amputee model in a monolithic simulation with a linear foot spring (the foot's secant
    stiffness at body weight), same initial conditions: its gait metrics (the actuator-free reference) over the
    run's duration (default), the window of the run's own metrics.  (A longer window would take a walker that
    falls, e.g. with the CoP shift, into its collapse: the "longest stance" would be the fall.)"""
    from rths_ros.core.models.gait.vpp_ic import scenario_ic, scenario_model
    p = scenario_model(s)
    out = _simulated_metrics(p, True, scenario_ic(s), t_max_s or s.loop.duration_s)
    out["foot_spring_n_per_m"] = p.k_f_n_per_m
    return out


def thesis_reference(s: scn.Scenario) -> dict:
    """:func:`pure_reference` of the scenario in the thesis's configuration (Table A.7 initial conditions, CoP shift
    of eq. 16.10 on both legs; :func:`rths_ros.core.models.gait.vpp_ic.thesis_configuration`) over the run's
    duration: the gait the thesis's walker model has without platform and foot (it slows down and its trunk
    rotates backwards, ch. 17)."""
    from rths_ros.core.models.gait.vpp_ic import thesis_configuration
    return pure_reference(thesis_configuration(s))


def vpp_reference(s: scn.Scenario, t_max_s: float | None = None) -> dict:
    """The basic VPP model with the scenario's parameters (spring legs k_L = k_R, no stump, no foot) walking from
    its own optimised initial conditions (``numerical.vpp.y0_m``, ``xd0_m_per_s``, ``phid0_rad_per_s``; a periodic
    gait): the "simulation of the VPP model with these parameters" the thesis compares its RTHS stride with
    (ch. 17).  The amputee model's initial conditions carry extra energy for the stump damper and would make the
    lossless basic model speed up and fall.  The CoP shift is off in this simulation whatever the scenario says: the
    thesis's "pure simulation of the VPP model used for the parameter optimization" has none (§17.3)."""
    p = dataclasses.replace(s.numerical.vpp, cop_shift=False)
    return _simulated_metrics(p, False, None, t_max_s or max(2.0, s.loop.duration_s))


def _clean(v):
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (np.floating, float)):
        return None if not math.isfinite(float(v)) else float(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def analyze_gait_record(rec: dict, s: scn.Scenario, out: Path, loop: dict | None = None) -> dict:
    """Gait metrics, plots, stick-figure GIF and report of one run record; writes gait_metrics.json,
    metrics.json (the same), report.md, gait_*.png and gait_stick.gif into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    vp = s.numerical.vpp
    g, r = gait_view(rec, s)
    m = gait_metrics(g, vp.m_vpp_kg, vp.l0_l_m, vp.g_m_per_s2, leg="R")
    m["replay_command_max_dev"] = r["replay_command_max_dev"]
    m["fallen_at_step"] = int(r["fallen_at_step"])
    m["aborted"] = bool(rec.get("aborted", False))
    m["abort_reason"] = rec.get("abort_reason", "")
    m["steps"] = int(rec["force"].shape[0])
    e = rec["q_cmd"] - rec["q_ach"]
    st = g.contact["R"]
    m["tracking_rms_stance"] = {"x_m": float(np.sqrt(np.mean(e[st, 0] ** 2))) if st.any() else None,
                                "y_m": float(np.sqrt(np.mean(e[st, 1] ** 2))) if st.any() else None,
                                "alpha_rad": float(np.sqrt(np.mean(e[st, 2] ** 2))) if st.any() else None}
    m["f_perp_max_abs_n"] = float(np.max(np.abs(rec["force"][:, 1]))) if m["steps"] else 0.0
    m["thesis"] = THESIS
    m["pure_vpp"] = pure_reference(s)
    m["vpp_sim"] = vpp_reference(s)
    m["pure_vpp_thesis"] = thesis_reference(s)
    if loop is not None:
        m["loop"] = loop
    if rec.get("run_status") is not None:
        apply_status(m, rec["run_status"])
    m = _clean(m)
    plots, gif = [], None
    if figures.enabled():
        plots = plot_gait(g, out, vp.m_vpp_kg, vp.l0_l_m, vp.g_m_per_s2, prefix="gait")
        gif = animate_stick_figure(g, out / "gait_stick.gif", r_h_m=vp.r_h_m, r_vpp_m=vp.r_vpp_m)
    (out / "gait_metrics.json").write_text(json.dumps(m, indent=2))
    (out / "metrics.json").write_text(json.dumps(m, indent=2))
    report = write_gait_report(m, s, plots, gif, out)
    lines = (status_lines(rec["run_status"]) if rec.get("run_status") is not None else []) + [
        f"metrics: {out / 'metrics.json'}", f"report : {report}", figures.plots_line(plots, gif)]
    lines.append(_summary_line(m))
    return {"metrics": m, "lines": lines, "record": g}


def _fmt(v, key: str) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, str):
        return v
    if "fraction" in key:
        return f"{100 * v:.1f} %"
    if key.endswith("_bw"):
        return f"{100 * v:.0f} % BW"
    return f"{v:.4g}"


def _thesis_cell(key: str, cell: str) -> str:
    return _fmt(THESIS[cell], key) if cell in THESIS else cell


def _summary_line(m: dict) -> str:
    return (f"stride={_fmt(m.get('stride_duration_s'), 's')} s  stance_R={_fmt(m.get('stance_fraction_R'), 'fraction')}"
            f"  CoM p2p={_fmt(m.get('com_peak_to_peak_m'), 'm')} m  GRF_y,R peaks="
            f"{_fmt(m.get('grf_y_first_peak_bw'), '_bw')}/{_fmt(m.get('grf_y_second_peak_bw'), '_bw')}"
            f"  aborted={m.get('aborted')}")


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.1f} %"


def _bw(v) -> str:
    return "–" if v is None else f"{100 * v:.0f} % BW"


def _num(v, fmt: str = ".3f") -> str:
    return "–" if v is None else format(v, fmt)


def difference_notes(m: dict, s: scn.Scenario) -> list[str]:
    """Short explanations of the differences between this run, the pure VPP reference and the thesis's ch. 17
    values, built from the run's own numbers (one Markdown bullet each)."""
    pure = m.get("pure_vpp", {}) or {}
    vp = s.numerical.vpp
    bw = vp.m_vpp_kg * vp.g_m_per_s2
    notes = []
    maxima = m.get("com_maxima") or []
    mx = ", ".join(f"{c['x_m']:.2f}" for c in maxima)
    notes.append(
        f"**CoM.** The thesis reports \"an amplitude of the CoM height of ≈ 0.04 m\" without defining it; this "
        f"report compares the peak-to-peak value (max - min of the CoM height over the run, "
        f"{_num(m.get('com_peak_to_peak_m'))} m; pure model {_num(pure.get('com_peak_to_peak_m'))} m) with it. Half of "
        f"it, {_num(m.get('com_amplitude_m'))} m, is the amplitude of a sinusoid, the measure of the human ≈ 2.5 cm "
        f"(ch. 15). Mid-stance maxima at x = {mx or '–'} m (thesis: 0, ≈ 0.3, ≈ 0.6 m).")
    basic = m.get("vpp_sim", {}) or {}
    sf, psf, bsf = m.get("stance_fraction_R"), pure.get("stance_fraction_R"), basic.get("stance_fraction_R")
    ratio = vp.k_l_n_per_m * vp.l0_l_m / bw
    act = "ideal actuator" if s.sim_plant.ideal_actuator else \
        f"legs capped at {1e3 * s.platform.geometry.leg_velocity_max_m_per_s:.0f} mm/s"
    trk = (m.get("tracking_rms_stance") or {}).get("x_m")
    lag = f", x tracking RMS in the right stance {1e3 * trk:.0f} mm" if trk is not None else ""
    diff = f"{100 * (sf - bsf):+.1f} points" if sf is not None and bsf is not None else "–"
    other = ("This run has the ideal actuator; with the capped real actuator (scenario gait_vpp) the lag moves the "
             "stance fraction away from the VPP simulation." if s.sim_plant.ideal_actuator else
             "An ideal actuator (scenario gait_vpp_ideal) moves it towards the VPP simulation.")
    notes.append(
        f"**Stance fraction.** Right stance {_pct(sf)} of a {_num(m.get('stride_duration_s'))} s stride here "
        f"({act}{lag}); the VPP simulation (basic model, periodic gait) stands {_pct(bsf)} of a "
        f"{_num(basic.get('stride_duration_s'))} s stride, the amputee model with a linear foot and no actuator "
        f"{_pct(psf)}; the thesis's ≈ 85 % is attributed to the platform's lag (fig. 17.5). Most of the long stance "
        f"is in the model itself: light, soft legs (k l0 / (m g) = {ratio:.0f}) give a double support of "
        f"{_pct(m.get('double_support_fraction'))} of the cycle (human ≈ 20 %). Against the VPP simulation the "
        f"loop changes the stance fraction by {diff}. {other}")
    th = m.get("pure_vpp_thesis", {}) or {}
    cop = "on" if vp.cop_shift else "off"
    thesis_cfg = vp.cop_shift and s.numerical.gait.initial_conditions == "thesis_a7"
    p1, p2 = m.get("grf_y_first_peak_bw"), m.get("grf_y_second_peak_bw")
    order = ("the second is higher, as in the thesis" if p1 is not None and p2 is not None and p2 > p1
             else "the first is higher (as usual in humans; the thesis's second peak was higher)")
    notes.append(
        f"**GRF_y peaks.** {_bw(p1)} / {_bw(p2)} against ≈ 110 % BW; {order} (through the VPP: "
        f"{_bw(m.get('grf_vpp_y_first_peak_bw'))} / {_bw(m.get('grf_vpp_y_second_peak_bw'))}). The order follows "
        f"the CoP shift of eq. 16.10 ({cop} here): with it the walker brakes longer and has to lift its CoM over the "
        f"forefoot late in the stance (§17.3), and the second peak is the higher one"
        + ("" if thesis_cfg else f" (pure model in the thesis's configuration: {_bw(th.get('grf_y_first_peak_bw'))} / "
           f"{_bw(th.get('grf_y_second_peak_bw'))})") + ". The simulated "
        f"foot hardens with load (secant {pure.get('foot_spring_n_per_m', float('nan')):.0f} N/m at 1 BW; the pure "
        f"model with that linear spring peaks at {_bw(pure.get('grf_y_first_peak_bw'))} / "
        f"{_bw(pure.get('grf_y_second_peak_bw'))}); the thesis's steep, impact-like rise to its second peak came from "
        f"its real, stiff 1C40 forefoot and the lagging platform (§17.3).")
    notes.append(
        f"**GRF_y basin.** {_bw(m.get('grf_y_basin_bw'))} (pure model {_bw(pure.get('grf_y_basin_bw'))}) against "
        f"≈ 0 in the thesis. In right single support GRF_y = m (g + y''): the basin is 1 + y''/g at mid stance. "
        f"These soft legs (k l0 / (m g) = {ratio:.0f}) keep y'' above about -0.65 g: every run of the twin that "
        f"completes the stride has a basin of 36-52 % BW (initial conditions, CoP shift, stump, foot, friction, "
        f"leg-speed cap; docs/gait.md). A basin near zero is a CoM in near free fall at mid stance with the foot "
        f"almost unloaded, which the twin does not reach.")
    fp = m.get("f_perp_max_abs_n")
    mu = s.sim_plant.foot.friction_coefficient
    notes.append(
        f"**GRF_x.** max |GRF_x,R| through the VPP {_bw(m.get('grf_vpp_x_max_abs_bw'))} (pure model "
        f"{_bw(pure.get('grf_x_max_abs_bw'))}; human up to 25 % BW): the model's GRF, which eq. 16.4 relates to "
        f"GRF_y as the thesis says of its GRF_x. The measured plate force reaches "
        f"{_bw(m.get('grf_x_max_abs_bw'))}: the "
        f"twin's rigid keel is compressed along the shank axis and rolled about the model's point foot, its sole "
        f"slides on the plate, and |F_x| sits at mu F_y (mu = {_num(mu, '.2f')}) for most of the stance (max |F_perp| "
        f"{_num(fp, '.0f')} N = {_bw(fp / bw if fp is not None else None)}). It scales with mu and hardly with the "
        f"platform lag (docs/gait.md). F_perp does not enter the trunk dynamics (eqs. 16.3/16.4).")
    h1, h2 = m.get("hip_torque_first_half_mean_norm"), m.get("hip_torque_second_half_mean_norm")
    if h1 is not None and h2 is not None:
        nch = m.get("hip_torque_sign_changes")
        pattern = ("matches it" if h1 > 0.0 > h2 else
                   f"differs from it: tau_h,R changes sign {nch} times within the right stance, which here includes "
                   f"double support at both ends ({_pct(m.get('double_support_fraction'))} of the cycle)")
    else:
        pattern = "cannot be checked (no complete right stance)"
    notes.append(
        f"**Hip torque.** The thesis gives no number for tau_h,R: fig. 17.2b (normalised by BW l0) shows extension "
        f"in the first half of the stance and flexion in the second, and the text says magnitude and shape match "
        f"human data (fig. 15.4b). Here tau_h,R spans {_num(m.get('hip_torque_min_norm'))} .. "
        f"{_num(m.get('hip_torque_max_norm'))} BW l0 (pure model {_num(pure.get('hip_torque_min_norm'))} .. "
        f"{_num(pure.get('hip_torque_max_norm'))}), mean {_num(h1, '+.4f')} over the first half and "
        f"{_num(h2, '+.4f')} over the second (positive = extension); the sign pattern {pattern}. The VPP "
        f"controller's share tau_VPP,R = tau_h,R + F_perp l_R (eq. 16.3) spans {_num(m.get('hip_torque_vpp_min_norm'))}"
        f" .. {_num(m.get('hip_torque_vpp_max_norm'))} BW l0: it carries the measured perpendicular force, which the "
        f"point-foot model does not have (ideally F_perp = 0).")
    tr, dphi = m.get("xd_trend_m_per_s2"), m.get("trunk_change_rad")
    if thesis_cfg:
        same = tr is not None and dphi is not None and tr < 0.0 and dphi < 0.0
        cause = ("This run is in the thesis's configuration (Table A.7 initial conditions, CoP shift on both legs), "
                 + ("and its walker does the same" if same else "yet its walker does not do both"))
    else:
        cause = (f"The cause is the CoP shift of eq. 16.10 on both feet, {cop} here, which prolongs the braking "
                 f"(§17.3): the same model with a linear foot and no platform, in the thesis's configuration (Table "
                 f"A.7 initial conditions, CoP shift), gives {_num(th.get('xd_trend_m_per_s2'), '+.3f')} m/s^2 and "
                 f"{_num(th.get('trunk_change_rad'), '+.3f')} rad over this run's duration; the scenario gait_vpp_thesis "
                 f"(or `--set numerical.vpp.cop_shift=true --set numerical.gait.initial_conditions=thesis_a7`) runs "
                 f"it in the loop. "
                 f"This scenario starts from initial conditions optimised on its model without the CoP shift, which "
                 f"carry energy for the stump damper; with the CoP shift the best initial conditions CMA-ES found walk "
                 f"7 steps (docs/gait.md)")
    notes.append(
        f"**Speed and trunk.** x' trend {_num(tr, '+.3f')} m/s^2 and trunk change "
        f"{_num(dphi, '+.3f')} rad; the thesis's walker slowed down and rotated backwards. "
        f"{cause}.")
    return notes


def write_gait_report(m: dict, s: scn.Scenario, plots, gif: Path | None, out: Path) -> Path:
    pure = m.get("pure_vpp", {})
    basic = m.get("vpp_sim", {}) or {}
    lines = [f"# Gait run: {s.name}", "", s.description, "",
             (f"**Run: {m['run_status']}.** " if m.get("run_status") else "")
             + f"Steps: {m['steps']}; stride source: {m.get('stride_source')}; aborted: {m['aborted']}"
             + (f" ({m['abort_reason']})" if m["abort_reason"] else ""), "",
             "| quantity | this run | pure amputee VPP (linear foot, no actuator) | VPP simulation (basic model, periodic) | "
             "thesis (ch. 17 RTHS) |", "|---|---|---|---|---|"]
    for key, label, cell in REPORT_ROWS:
        lines.append(f"| {label} | {_fmt(m.get(key), key)} | {_fmt(pure.get(key), key)} | "
                     f"{_fmt(basic.get(key), key)} | {_thesis_cell(key, cell)} |")
    lines += ["", "Hip torques are counter-clockwise on the trunk (positive = extending the stance hip), normalised by "
              "body weight times rest leg length.", "", "## Differences from the thesis", ""]
    lines += [f"- {n}" for n in difference_notes(m, s)]
    lines += ["", f"Pure VPP reference: foot spring {pure.get('foot_spring_n_per_m', float('nan')):.0f} N/m "
              f"(secant of the simulated foot at 1 BW), fallen: {pure.get('fallen')}.",
              f"Replay of the model from the recorded loads: max deviation of the interface command "
              f"{m['replay_command_max_dev']:.3g}.",
              f"Tracking RMS in the right stance: x {m['tracking_rms_stance']['x_m']} m, y "
              f"{m['tracking_rms_stance']['y_m']} m, alpha {m['tracking_rms_stance']['alpha_rad']} rad; "
              f"max |F_perp| {m['f_perp_max_abs_n']:.1f} N.", ""]
    for p in plots:
        lines.append(f"![{p.stem}]({p.name})")
    if gif is not None:
        lines.append(f"![stick figure]({gif.name})")
    lines += figures.not_drawn_lines(plots)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def analyze_gait_bag(bag: Path, out: Path) -> dict:
    rec, s = gait_record_from_bag(Path(bag))
    return analyze_gait_record(rec, s, out)


def analyze_gait_runs(targets, out: Path) -> dict:
    """Several runs (e.g. three trials with different loop.seed): each one's analysis in its own directory and a
    reproducibility overlay (fig. 17.4) with mean +- standard deviation in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records, labels, lines, table = [], [], [], []
    for tgt in targets:
        tgt = Path(tgt)
        bag = tgt / "bag" if (tgt / "bag").is_dir() else tgt
        run_out = bag.parent if bag.name == "bag" else out / bag.name
        res = analyze_gait_bag(bag, run_out)
        records.append(res["record"])
        rec_s = read_scenario_yaml(bag)
        seed = yaml.safe_load(rec_s).get("loop", {}).get("seed", "?") if rec_s else "?"
        labels.append(f"{bag.parent.name if bag.name == 'bag' else bag.name} (seed {seed})")
        lines.append(f"{labels[-1]}: {_summary_line(res['metrics'])}")
        table.append((labels[-1], res["metrics"]))
    qs = ("com_y", "grf_y_R", "hip_torque_R", "trunk_angle")
    png, st = plot_reproducibility(records, out / "gait_reproducibility.png", quantities=qs, labels=labels)
    rep = {q: {"max_std": st[q]["max_std"], "rms_std": st[q]["rms_std"]} for q in qs}
    (out / "reproducibility.json").write_text(json.dumps({"runs": labels, "spread": rep}, indent=2))
    md = ["# Gait reproducibility", "", "| run | stride [s] | stance R | CoM p2p [m] | GRF_y,R peak 1 | peak 2 |",
          "|---|---|---|---|---|---|"]
    for lab, m in table:
        md.append(f"| {lab} | {_fmt(m.get('stride_duration_s'), 's')} | {_fmt(m.get('stance_fraction_R'), 'fraction')}"
                  f" | {_fmt(m.get('com_peak_to_peak_m'), 'm')} | {_fmt(m.get('grf_y_first_peak_bw'), '_bw')} | "
                  f"{_fmt(m.get('grf_y_second_peak_bw'), '_bw')} |")
    md += ["", "Spread across the runs (population standard deviation, max / RMS over time):", "",
           "| quantity | max std | RMS std |", "|---|---|---|"]
    md += [f"| {q} | {rep[q]['max_std']:.4g} | {rep[q]['rms_std']:.4g} |" for q in qs]
    md += ["", f"![reproducibility]({png.name})"]
    (out / "reproducibility.md").write_text("\n".join(md) + "\n")
    lines.append(f"reproducibility: {png} (" + ", ".join(f"{q} max std {rep[q]['max_std']:.3g}" for q in qs) + ")")
    return {"lines": lines, "spread": rep}
