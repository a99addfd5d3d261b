"""Gait analysis of a recorded prosthetic-foot RTHS run (``rths analyze --gait RUN_DIR [RUN_DIR ...]``; also run
automatically after ``rths run`` of a gait scenario).

From the bag: the 3-DoF interface command, achieved state and load of every step (plate frame, see
:mod:`rths_ros.core.gait_rths`), the leg channels and the raw wrench.  The model quantities that are not on the
wire (CoM, trunk angle, contact flags, foot points, model GRFs and hip torques) are recovered by re-running the
VPP model with the recorded loads (:func:`rths_ros.core.gait_rths.replay_model`); the replayed interface command is
compared with the recorded one (``replay_command_max_dev`` must be 0: the same kernel with the same float64 inputs).

Quantities (:func:`rths_ros.analysis.gait.gait_metrics` on a :class:`~rths_ros.analysis.gait.GaitRecord`):

* CoM, trunk, left-leg GRF and both hip torques from the replayed model;
* right-leg GRF = the MEASURED plate force ``(F_x, F_y)`` (the ground reaction on the foot, what the thesis
  plots), CoP = ``M_O / F_y`` relative to the plate reference point (the right foot point in stance);
* contact flags = the model's stance flags.

The report lists them beside the thesis's RTHS values (ch. 17: CoM about 0.04 m, right stance about 85 %, GRF
peaks about 110 % BW, stride about 0.6 s) and beside a pure VPP simulation of the same model with a linear foot
spring of the simulated foot's secant stiffness at body weight (:func:`pure_reference`).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import yaml

from ..bag import read_bag, read_scenario_yaml
from ..core import scenario as scn
from ..core.gait_rths import cop_of, replay_model
from ..core.vrths import empty_gait_record
from .gait import GaitRecord, animate_stick_figure, gait_metrics, plot_gait, plot_reproducibility

EVENT_ABORT = 7
EVENT_DONE = 8

#: seed 000 ch. 17 (RTHS with the 1C40 foot) and ch. 15 (human walking) values quoted in the report
THESIS = {"com_peak_to_peak_m": 0.04, "stance_fraction_R": 0.85, "grf_y_first_peak_bw": 1.10,
          "grf_y_second_peak_bw": 1.10, "stride_duration_s": 0.6}

REPORT_ROWS = (
    ("com_peak_to_peak_m", "CoM height, peak to peak [m]", "com_peak_to_peak_m"),
    ("com_amplitude_m", "CoM amplitude (half peak to peak) [m]", None),
    ("stride_duration_s", "stride (R touch-down to R touch-down) [s]", "stride_duration_s"),
    ("stance_fraction_R", "right (prosthetic) stance fraction", "stance_fraction_R"),
    ("stance_fraction_L", "left stance fraction", None),
    ("double_support_fraction", "double support fraction", None),
    ("grf_y_first_peak_bw", "GRF_y,R first peak [BW]", "grf_y_first_peak_bw"),
    ("grf_y_second_peak_bw", "GRF_y,R second peak [BW]", "grf_y_second_peak_bw"),
    ("grf_y_basin_bw", "GRF_y,R basin between the peaks [BW]", None),
    ("grf_x_max_abs_bw", "max |GRF_x,R| [BW]", None),
    ("hip_torque_min_norm", "hip torque R min [BW l0]", None),
    ("hip_torque_max_norm", "hip torque R max [BW l0]", None),
    ("cop_start_m", "CoP at R touch-down rel. foot point [m]", None),
    ("cop_end_m", "CoP at R take-off rel. foot point [m]", None),
    ("cop_travel_m", "CoP travel over the R stance [m]", None),
    ("xd_mean_m_per_s", "mean forward speed [m/s]", None),
)


def _f(x) -> float:
    return float(x)


def gait_record_from_bag(bag: Path) -> tuple[dict, scn.Scenario]:
    """(record, scenario) of a gait run; the record has the layout of :func:`rths_ros.core.vrths.empty_gait_record`
    (rows = steps 0..N that the numerical part received a load for)."""
    text = read_scenario_yaml(bag)
    if text is None:
        raise ValueError(f"{bag}: no /rths/scenario message; was it recorded by rths_ros?")
    s = scn.from_data(yaml.safe_load(text))
    if s.numerical.model != "vpp":
        raise ValueError(f"{bag}: scenario {s.name!r} is not a gait run (numerical.model = {s.numerical.model!r})")
    topics = read_bag(bag)
    events = [m for _, m in topics.get("/rths/events", [])]
    aborts = [e for e in events if e.type == EVENT_ABORT]
    forces = {int(m.step): m for _, m in topics.get("/rths/interface_force", [])}
    n = (max(forces) + 1) if forces else 0
    n = min(n, s.steps + 1)
    rec = empty_gait_record(n)
    rec["t"] = rec["k"] * s.loop.dt_s
    seen = np.zeros(n, dtype=bool)
    for k, m in forces.items():
        if k < n:
            rec["force"][k] = m.force
            rec["measured"][k] = m.measured
            rec["contact"][k] = m.contact
            seen[k] = True
    for name, key, vkey in (("/rths/interface_command", "q_cmd", "qd_cmd"),
                            ("/rths/interface_state", "q_ach", "qd_ach")):
        for _, m in topics.get(name, []):
            k = int(m.step)
            if k < n:
                rec[key][k] = m.position
                rec[vkey][k] = m.velocity
    for _, m in topics.get("/rths/leg_command", []):
        k = int(m.step)
        if k < n:
            rec["b_cmd"][k], rec["ff_velocity"][k] = m.length, m.feedforward_velocity
    for _, m in topics.get("/rths/leg_state", []):
        k = int(m.step)
        if k < n:
            rec["b_meas"][k], rec["bdot_meas"][k], rec["current"][k] = m.length, m.velocity, m.current
    if n:      # no command is sent for the first step: the platform is at the start pose
        from ..core.fastpath import gait_start_lengths
        rec["b_cmd"][0] = gait_start_lengths(s)
    for _, m in topics.get("/rths/raw_wrench", []):
        k = int(m.step)
        if k < n:
            f, t = m.wrench.force, m.wrench.torque
            rec["wrench"][k] = [f.x, f.y, f.z, t.x, t.y, t.z]
    rec["cop_x"] = cop_of(rec["measured"], s.platform.gait.interface.cop_min_force_n) if n else rec["cop_x"]
    rec["missing_force_samples"] = int((~seen).sum())
    rec["aborted"] = bool(aborts)
    rec["abort_reason"] = aborts[0].reason if aborts else ""
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
        hip_torque={"L": r["hip_torque_L"], "R": r["hip_torque_R"]},
        cop_x={"R": np.where(contact_r, cop + r["foot_x_R"], np.nan)},
        foot_x={"L": r["foot_x_L"], "R": r["foot_x_R"]},
        contact={"L": r["contact_L"], "R": contact_r})
    r["replay_command_max_dev"] = float(np.max(np.abs(r["q"] - rec["q_cmd"]))) if n else 0.0
    return g, r


def secant_foot_stiffness(s: scn.Scenario) -> float:
    """Secant stiffness [N/m] of the scenario's simulated foot at foot flat (alpha = 90 deg) under one body weight."""
    from ..core.prosthetic_foot import ProstheticFoot
    foot = ProstheticFoot(s.sim_plant.foot)
    bw = s.numerical.vpp.m_vpp_kg * s.numerical.vpp.g_m_per_s2
    d = np.linspace(1e-4, 0.1, 1000)
    f = foot.loading_curve(math.pi / 2, d)
    i = int(np.searchsorted(f, bw))
    i = min(max(i, 1), d.size - 1)
    return float(bw / d[i])


def pure_reference(s: scn.Scenario, t_max_s: float | None = None) -> dict:
    """The same VPP amputee model in a monolithic simulation with a linear foot spring (the foot's secant
    stiffness at body weight), same initial conditions: its gait metrics (the actuator-free reference)."""
    import dataclasses
    from ..core import vpp
    from ..core.vpp import THESIS_IC_A7
    k_f = secant_foot_stiffness(s)
    p = dataclasses.replace(s.numerical.vpp, k_f_n_per_m=k_f)
    ic = dict(THESIS_IC_A7) if s.numerical.gait.initial_conditions == "thesis_a7" else None
    sim = vpp.simulate(p, n_steps=6, t_max_s=t_max_s or max(2.0, s.loop.duration_s), amputee=True, foot="spring",
                       ic=ic, decimate=5)
    g = GaitRecord(t=sim["t"], com_x=sim["x"], com_y=sim["y"], trunk_angle=sim["phi"], com_xd=sim["vx"],
                   grf_x={"L": sim["grf_x_l"], "R": sim["grf_x_r"]}, grf_y={"L": sim["grf_y_l"], "R": sim["grf_y_r"]},
                   hip_torque={"L": sim["tau_l"], "R": sim["tau_r"]},
                   contact={"L": sim["contact_l"] > 0.5, "R": sim["contact_r"] > 0.5})
    # the same window as an RTHS trial: from the start to the end of the trial
    m_all = gait_metrics(g, p.m_vpp_kg, p.l0_l_m, p.g_m_per_s2, leg="R")
    out = {k: m_all.get(k) for k, _, _ in REPORT_ROWS if k in m_all}
    out["foot_spring_n_per_m"] = k_f
    out["fallen"] = bool(sim["fallen"])
    return out


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
    if loop is not None:
        m["loop"] = loop
    m = _clean(m)
    plots = plot_gait(g, out, vp.m_vpp_kg, vp.l0_l_m, vp.g_m_per_s2, prefix="gait")
    gif = animate_stick_figure(g, out / "gait_stick.gif", r_h_m=vp.r_h_m, r_vpp_m=vp.r_vpp_m)
    (out / "gait_metrics.json").write_text(json.dumps(m, indent=2))
    (out / "metrics.json").write_text(json.dumps(m, indent=2))
    report = write_gait_report(m, s, plots, gif, out)
    lines = [f"metrics: {out / 'metrics.json'}", f"report : {report}",
             f"plots  : {', '.join(p.name for p in plots)}, {gif.name}"]
    lines.append(_summary_line(m))
    return {"metrics": m, "lines": lines, "record": g}


def _fmt(v, key: str) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return str(v)
    if "fraction" in key:
        return f"{100 * v:.1f} %"
    if key.endswith("_bw"):
        return f"{100 * v:.0f} % BW"
    return f"{v:.4g}"


def _summary_line(m: dict) -> str:
    return (f"stride={_fmt(m.get('stride_duration_s'), 's')} s  stance_R={_fmt(m.get('stance_fraction_R'), 'fraction')}"
            f"  CoM p2p={_fmt(m.get('com_peak_to_peak_m'), 'm')} m  GRF_y,R peaks="
            f"{_fmt(m.get('grf_y_first_peak_bw'), '_bw')}/{_fmt(m.get('grf_y_second_peak_bw'), '_bw')}"
            f"  aborted={m.get('aborted')}")


def write_gait_report(m: dict, s: scn.Scenario, plots, gif: Path, out: Path) -> Path:
    pure = m.get("pure_vpp", {})
    lines = [f"# Gait run: {s.name}", "", s.description, "",
             f"Steps: {m['steps']}; stride source: {m.get('stride_source')}; aborted: {m['aborted']}"
             + (f" ({m['abort_reason']})" if m["abort_reason"] else ""), "",
             "| quantity | this run | pure VPP (linear foot, no actuator) | thesis (ch. 17 RTHS) |", "|---|---|---|---|"]
    for key, label, tkey in REPORT_ROWS:
        th = THESIS.get(tkey) if tkey else None
        lines.append(f"| {label} | {_fmt(m.get(key), key)} | {_fmt(pure.get(key), key)} | {_fmt(th, key)} |")
    lines += ["", f"Pure VPP reference: foot spring {pure.get('foot_spring_n_per_m', float('nan')):.0f} N/m "
              f"(secant of the simulated foot at 1 BW), fallen: {pure.get('fallen')}.",
              f"Replay of the model from the recorded loads: max deviation of the interface command "
              f"{m['replay_command_max_dev']:.3g}.",
              f"Tracking RMS in the right stance: x {m['tracking_rms_stance']['x_m']} m, y "
              f"{m['tracking_rms_stance']['y_m']} m, alpha {m['tracking_rms_stance']['alpha_rad']} rad; "
              f"max |F_perp| {m['f_perp_max_abs_n']:.1f} N.", ""]
    for p in plots:
        lines.append(f"![{p.stem}]({p.name})")
    lines.append(f"![stick figure]({gif.name})")
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
