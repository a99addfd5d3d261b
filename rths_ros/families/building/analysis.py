"""Analysis of a recorded building-benchmark run (numerical.model = building; ``rths analyze RUN_DIR``, also run
automatically after ``rths run benchmark_building``).

From the bag (message mapping: :mod:`rths_ros.core.models.building.rths`):

* ``y`` (N x 3) and ``ydot`` = the numerical substructure's DoFs from /rths/interface_command (``y[:, 0] = y1``);
* ``x_m``, ``x``, ``xdot``, ``f_act`` from /rths/leg_state; ``u`` from /rths/leg_command (step k+1 carries u_k);
* ``f_m`` from /rths/interface_force, the fed-back force before the sensor from /rths/raw_wrench.

Rows are the steps 0..n of one trial that the numerical part received a force for (an aborted run ends at the
step the plant could not complete).  The ground motion ``a_g`` and the reference response ``x_r`` are recomputed
from the scenario stored in the bag.  J1-J9 (:mod:`rths_ros.core.models.building.criteria`) are reported in the
scenario's ``numerical.building.criteria_convention`` and, for comparison, in the other one.

The analysis also runs the in-process core benchmark (:func:`rths_ros.core.models.building.benchmark.run_benchmark`) with the same
parameters, plant, controller and length and reports its J1-J9 and the largest difference (``core_check``): a
lockstep graph run must give the same numbers.  With several trials the last one is analysed (trial j's noise is
``noise_seed + j``; the core comparison is made for trial 0 only).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import yaml

from rths_ros.analysis import figures
from rths_ros.analysis.status import apply_status, no_loop_data, status_lines, status_of_bag
from rths_ros.app import scenario as scn
from rths_ros.app.run_status import fault_reason
from rths_ros.bag import read_bag, read_scenario_yaml
from rths_ros.core.models.building.criteria import CONVENTIONS, CRITERIA, evaluate_record
from rths_ros.core.models.building.rths import (
    benchmark_view,
    core_params,
    empty_building_record,
    limits_of,
    make_controller,
    plant_draw,
)
from rths_ros.families.registry import require_family

CONVENTION_TEXT = {
    "paper": "paper convention: J1 = lag (ms) maximising the Pearson correlation of x_m(t) with y1(t - lag) over "
             "0-0.1 s; J2-J9 with ||s|| = RMS; J4-J6 = RMS errors of floors 1-3, J7-J9 = peak errors of floors 1-3",
    "matlab": "matlab convention: J1 over 0-49 samples rounded to 0.1 ms; J2-J9 with ||s|| = standard deviation; "
              "J4 = RMS floor 1, J5 = peak floor 1, J6-J7 = RMS floors 2-3, J8-J9 = peak floors 2-3",
}
MEANING = {"J1": "tracking delay [ms]", "J2": "RMS tracking error x_m vs y1 [%]", "J3": "peak tracking error [%]"}


def building_record_from_bag(bag: Path) -> tuple[dict, scn.Scenario]:
    """(record, scenario) of a building run: the layout of :func:`rths_ros.core.models.building.rths.empty_building_record`
    over the global steps 0..n (all trials)."""
    text = read_scenario_yaml(bag)
    if text is None:
        raise ValueError(f"{bag}: no /rths/scenario message; was it recorded by rths_ros?")
    s = scn.from_data(yaml.safe_load(text))
    require_family(s.numerical.model, "building", f"{bag}: scenario {s.name!r}")
    topics = read_bag(bag)
    forces = {int(m.step): m for _, m in topics.get("/rths/interface_force", [])}
    if not forces:
        raise no_loop_data(bag, topics, s, "no /rths/interface_force message")
    total = s.loop.trials * (s.steps + 1)
    n = min(max(forces) + 1, total)
    rec = empty_building_record(n)
    seen = np.zeros(n, dtype=bool)
    for k, m in forces.items():
        if k < n:
            rec["f_m"][k] = m.force[0]
            seen[k] = True
    for _, m in topics.get("/rths/interface_command", []):
        k = int(m.step)
        if k < n:
            rec["y"][k] = m.position[:3]
            rec["ydot"][k] = m.velocity[:3]
    for _, m in topics.get("/rths/leg_state", []):
        k = int(m.step)
        if k < n:
            rec["x_m"][k], rec["x"][k], rec["xdot"][k] = m.length[0], m.length[1], m.velocity[0]
            rec["f_act"][k], rec["u_da"][k] = m.current[0], m.current[1]
    for _, m in topics.get("/rths/leg_command", []):
        k = int(m.step) - 1          # LegCommand step k+1 carries u_k
        if 0 <= k < n:
            rec["u"][k] = m.length[0]
    for _, m in topics.get("/rths/raw_wrench", []):
        k = int(m.step)
        if k < n:
            rec["f_true"][k] = m.wrench.force.y
    trial_len = s.steps + 1
    rec["trial"] = rec["k"] // trial_len
    rec["t"] = (rec["k"] % trial_len) * s.loop.dt_s
    rec["missing_force_samples"] = int((~seen).sum())
    st = status_of_bag(bag, topics, s, n, {"force": rec["missing_force_samples"]})
    rec["run_status"] = st
    rec["aborted"] = st.status in ("aborted", "interrupted")
    rec["abort_reason"] = fault_reason(st.first_fault)
    return rec, s


def _num(x):
    return None if isinstance(x, float) and not math.isfinite(x) else x


def core_reference(s: scn.Scenario, rows: int) -> dict | None:
    """J1-J9 of the in-process core run with the scenario's parameters and ``rows`` samples (None: the controller
    could not be built here)."""
    from rths_ros.core.models.building.benchmark import run_benchmark
    p = s.numerical.building
    try:
        ctrl = make_controller(s.tracking_controller, s.loop.dt_s)
    except Exception:        # e.g. a user's controller module importable by the nodes only
        return None
    rec = run_benchmark(params=core_params(p, (rows - 1) * s.loop.dt_s), controller=ctrl,
                        perturbed_seed=None if p.plant_seed < 0 else p.plant_seed, evaluate=False)
    return rec


def analyze_building(rec: dict, s: scn.Scenario, out: Path) -> dict:
    """metrics.json, report.md and a plot of the last trial of a building record (graph or virtual run)."""
    from rths_ros.app.vrths import trial_slice
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    p = s.numerical.building
    trial_len = s.steps + 1
    n_trials = max(1, int(np.ceil(rec["k"].size / trial_len)))
    tr = trial_slice(rec, n_trials - 1, trial_len)
    view = benchmark_view(tr, p, s.loop.dt_s)
    rows = view["t"].size
    conv = p.criteria_convention
    J = {c: evaluate_record(view, convention=c) if rows > 2 else {} for c in CONVENTIONS}
    metrics = {
        "scenario": s.name, "model": "building", "case": p.case, "earthquake": p.earthquake,
        "ground_motion_scale": p.ground_motion_scale, "controller": s.tracking_controller.kind
        + (f" ({s.tracking_controller.class_path})" if s.tracking_controller.kind == "python" else ""),
        "plant_seed": p.plant_seed, "plant": {k: getattr(plant_draw(p), k) for k in ("beta1", "beta2", "a3", "k_e",
                                                                                      "c_e")},
        "steps": int(rows - 1), "duration_s": float((rows - 1) * s.loop.dt_s), "n_trials": n_trials,
        "aborted": bool(rec.get("aborted", False)), "abort_reason": rec.get("abort_reason", ""),
        "missing_force_samples": int(rec.get("missing_force_samples", 0)),
        "convention": conv, "convention_text": CONVENTION_TEXT[conv],
        "J": {c: _num(J[conv].get(c, float("nan"))) for c in CRITERIA},
        "J1_at_window_edge": bool(J[conv].get("J1_at_window_edge", False)),
        "J_by_convention": {c: {k: _num(J[c].get(k, float("nan"))) for k in CRITERIA} for c in CONVENTIONS},
        "limits": limits_of(view, p),
        "peak_y1_m": float(np.max(np.abs(view["y"][:, 0]))) if rows else 0.0,
        "peak_x_r1_m": float(np.max(np.abs(view["x_r"][:, 0]))) if rows else 0.0,
    }
    core = core_reference(s, rows) if (n_trials == 1 and not metrics["aborted"] and rows > 2) else None
    if core is not None:
        from rths_ros.core.models.building.criteria import evaluate_record as ev
        cj = ev(core, convention=conv) if not core["aborted"] else {}
        dev = {key: float(np.max(np.abs(core[key] - view[key]))) for key in ("x_m", "f_m", "y")}
        metrics["core_check"] = {
            "J": {c: _num(cj.get(c, float("nan"))) for c in CRITERIA},
            "max_abs_J_difference": _num(max(abs(cj[c] - J[conv][c]) for c in CRITERIA
                                             if math.isfinite(cj.get(c, float("nan"))))) if cj else None,
            "max_abs_signal_difference": dev,
            "identical": bool(cj) and all(v == 0.0 for v in dev.values()),
        }
    if rec.get("run_status") is not None:
        apply_status(metrics, rec["run_status"])
    plots = plot_building(view, out) if figures.enabled() else []
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, default=float))
    report = write_building_report(metrics, s, plots, out)
    Jc = metrics["J"]
    lines = (status_lines(rec["run_status"]) if rec.get("run_status") is not None else []) + [
             f"metrics: {out / 'metrics.json'}", f"report : {report}",
             figures.plots_line(plots),
             f"J1-J9 ({conv} convention): " + "  ".join(f"{c}={Jc[c]:.4g}" if Jc[c] is not None else f"{c}=nan"
                                                       for c in CRITERIA)]
    if metrics["aborted"]:
        lines.append(f"ABORTED: {metrics['abort_reason']}")
    if "core_check" in metrics:
        lines.append(f"core run_benchmark with the same settings: identical signals = "
                     f"{metrics['core_check']['identical']}, max |dJ| = {metrics['core_check']['max_abs_J_difference']}")
    return {"metrics": metrics, "lines": lines}


def plot_building(view: dict, out: Path) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = view["t"]
    if t.size < 2:
        return []
    fig, ax = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    ax[0].plot(t, 1e3 * view["y"][:, 0], label="y1 (desired)")
    ax[0].plot(t, 1e3 * view["x_m"], label="x_m (measured)", lw=0.8)
    ax[0].set_ylabel("actuator [mm]")
    ax[0].legend(loc="upper right")
    ax[1].plot(t, 1e3 * (view["x_m"] - view["y"][:, 0]), lw=0.8)
    ax[1].set_ylabel("x_m - y1 [mm]")
    for i, lab in enumerate(("floor 1 (x_m)", "floor 2", "floor 3")):
        hyb = view["x_m"] if i == 0 else view["y"][:, i]
        ax[2].plot(t, 1e3 * hyb, lw=0.8, label=f"{lab}")
        ax[2].plot(t, 1e3 * view["x_r"][:, i], "--", lw=0.8, label=f"reference {i + 1}")
    ax[2].set_ylabel("floor displacement [mm]")
    ax[2].set_xlabel("t [s]")
    ax[2].legend(loc="upper right", fontsize=7, ncol=3)
    fig.tight_layout()
    path = out / "benchmark_tracking.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def write_building_report(m: dict, s: scn.Scenario, plots: list[Path], out: Path) -> Path:
    def f(x):
        return "nan" if x is None else f"{x:.4g}"
    lines = [f"# {s.name}: vRTHS building benchmark", "", s.description, "",
             f"Case {m['case']}, {m['earthquake']} x {m['ground_motion_scale']:g}, controller {m['controller']}, "
             f"plant {'nominal' if m['plant_seed'] < 0 else 'perturbed, seed ' + str(m['plant_seed'])}; "
             f"{m['steps']} steps of 1/4096 s ({m['duration_s']:.3f} s).", ""]
    if m.get("run_status"):
        lines += [f"**Run: {m['run_status']}.**", ""]
    if m["aborted"]:
        lines += [f"**ABORTED**: {m['abort_reason']}", ""]
    lines += [f"Criteria ({m['convention_text']}):", "",
              "| run | " + " | ".join(CRITERIA) + " |", "|---" * (len(CRITERIA) + 1) + "|",
              "| graph | " + " | ".join(f(m["J"][c]) for c in CRITERIA) + " |"]
    cc = m.get("core_check")
    if cc is not None:
        lines.append("| core run_benchmark | " + " | ".join(f(cc["J"][c]) for c in CRITERIA) + " |")
    other = [c for c in CONVENTIONS if c != m["convention"]][0]
    lines.append(f"| graph, {other} convention | " + " | ".join(f(m["J_by_convention"][other][c]) for c in CRITERIA)
                 + " |")
    lim = m["limits"]
    lines += ["", f"J1 in ms, J2-J9 in %.{' J1 is at the end of its search window.' if m['J1_at_window_edge'] else ''}",
              "", f"Peak actuator force {lim['max_abs_force_n']:.1f} N (capacity "
              f"{s.numerical.building.force_capacity_n:g} N), peak stroke {1e3 * lim['max_abs_stroke_m']:.3f} mm, "
              f"peak velocity {1e3 * lim['max_abs_velocity_m_per_s']:.1f} mm/s.", ""]
    if cc is not None:
        lines += [f"The in-process core run with the same settings gives identical signals: {cc['identical']} "
                  f"(max |x_m| difference {cc['max_abs_signal_difference']['x_m']:.3g} m, max |J| difference "
                  f"{cc['max_abs_J_difference']}).", ""]
    for p_ in plots:
        lines += [f"![{p_.stem}]({p_.name})", ""]
    lines += figures.not_drawn_lines(plots)
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def analyze_building_bag(bag: Path, out: Path) -> dict:
    rec, s = building_record_from_bag(Path(bag))
    res = analyze_building(rec, s, out)
    if rec["missing_force_samples"]:
        res["lines"].append(f"warning: {rec['missing_force_samples']} force samples missing from the bag")
    return res
