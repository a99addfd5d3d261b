"""From a recorded bag to metrics.json, report.md and plots (``rths analyze``; also run after ``rths run``).

Everything is computed from the bag: the loop topics give the record (arrays indexed by the step
index k carried by every loop message, never the receive time), the scenario stored in the bag
gives the parameters, and the reference solution z^r is recomputed from them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from rths_ros.analysis import figures
from rths_ros.analysis.status import apply_status, no_loop_data, status_lines, status_of_bag
from rths_ros.app import scenario as scn
from rths_ros.app.run_status import fault_reason
from rths_ros.app.vrths import empty_record, hold_last_index
from rths_ros.bag import read_bag, read_scenario_yaml
from rths_ros.families import registry


def _xyz(v) -> list[float]:
    return [v.x, v.y, v.z]


def record_from_bag(bag: Path) -> tuple[dict, scn.Scenario, dict]:
    """(record, scenario, loop) from a bag.  Rows are the steps 0..N of the run."""
    text = read_scenario_yaml(bag)
    if text is None:
        raise ValueError(f"{bag}: no /rths/scenario message; was it recorded by rths_ros?")
    scenario = scn.from_data(yaml.safe_load(text))
    topics = read_bag(bag)
    # the record ends at the last step the numerical part received a force for (never beyond the scenario's
    # last step: the plant's ramp to the safe pose after an abort keeps counting steps)
    last = scenario.steps * scenario.loop.trials + scenario.loop.trials - 1
    forces = [int(m.step) for _, m in topics.get("/rths/interface_force", [])]
    if not forces:
        raise no_loop_data(bag, topics, scenario, "no /rths/interface_force message")
    n = min(last, max(forces))
    rec = empty_record(n + 1)
    rec["t"] = rec["k"] * scenario.loop.dt_s
    seen = {key: np.zeros(n + 1, dtype=bool) for key in ("cmd", "state", "force", "legs", "wrench")}
    home = None
    for _, m in topics.get("/rths/interface_command", []):
        k = int(m.step)
        if k <= n:
            rec["z_cmd"][k], rec["zdot_cmd"][k] = m.position[0], m.velocity[0]
            seen["cmd"][k] = True
    for _, m in topics.get("/rths/interface_state", []):
        k = int(m.step)
        if k <= n:
            rec["z_ach"][k], rec["zdot_ach"][k] = m.position[0], m.velocity[0]
            seen["state"][k] = True
    for _, m in topics.get("/rths/interface_force", []):
        k = int(m.step)
        if k <= n:
            rec["f_int"][k], rec["f_meas"][k], rec["contact"][k] = m.force[0], m.measured[0], m.contact
            seen["force"][k] = True
    for _, m in topics.get("/rths/leg_command", []):
        k = int(m.step)
        if k <= n:
            rec["b_cmd"][k], rec["ff_velocity"][k] = m.length, m.feedforward_velocity
    for _, m in topics.get("/rths/leg_state", []):
        k = int(m.step)
        if k <= n:
            rec["b_meas"][k], rec["bdot_meas"][k], rec["current"][k] = m.length, m.velocity, m.current
            seen["legs"][k] = True
            if k == 0:
                home = np.array(m.length)
    trial_len = scenario.steps + 1
    rec["trial"] = rec["k"] // trial_len
    rec["t"] = (rec["k"] % trial_len) * scenario.loop.dt_s
    if home is not None:
        rec["b_cmd"][::trial_len] = home  # every trial starts at home; no command is sent for its first step
    for _, m in topics.get("/rths/raw_wrench", []):
        k = int(m.step)
        if k <= n:
            rec["wrench"][k] = _xyz(m.wrench.force) + _xyz(m.wrench.torque)
            seen["wrench"][k] = True
    for _, m in topics.get("/rths/passivity", []):
        k = int(m.step)
        if k <= n:
            rec["f_d"][k] = m.damping_force
    # the adaptive filter's changing gains (harmonic LMS: mu_LMS, nu_LMS after the step's adaptation); NaN where a
    # step has none
    gains = [(int(m.step), list(m.gains)) for _, m in topics.get("/rths/aff_coefficients", [])
             if len(getattr(m, "gains", ())) == 2]
    if gains:
        rec["aff_mu"] = np.full(n + 1, np.nan)
        rec["aff_nu"] = np.full(n + 1, np.nan)
        for k, (mu, nu) in gains:
            if k <= n:
                rec["aff_mu"][k], rec["aff_nu"][k] = mu, nu
    rec["f_int"] = rec["f_int"] + rec["f_d"]   # F'_m + F_d: the force the numerical part was fed (with force
    #                                            blending, numerical.force_blend, it was fed gamma f_p + (1 - gamma) f_n)
    # samples missing inside the record: from a channel's first sample on (a channel that starts a step later by
    # design, like the smoke listener's force, has no gap before its first sample)
    missing = {key: int((~v[int(np.argmax(v)):]).sum()) if v.any() else int(v.size) for key, v in seen.items()}
    # A step whose sample never reached the bag (best-effort QoS in realtime mode, or a step the
    # node skipped) holds the previous sample, as the receiving node did on the rig.
    fill = {"cmd": ("z_cmd", "zdot_cmd"), "state": ("z_ach", "zdot_ach"),
            "force": ("f_int", "f_meas", "contact"), "legs": ("b_meas", "bdot_meas", "current"),
            "wrench": ("wrench",)}
    for key, fields in fill.items():
        mask = seen[key]
        if mask.all() or not mask.any():
            continue
        idx = np.arange(mask.size)
        for lo in range(0, mask.size, trial_len):      # never carry a sample across a trial boundary
            m = mask[lo:lo + trial_len]
            if not m.any():
                continue
            idx[lo:lo + trial_len] = lo + hold_last_index(m)
        for f in fields:
            rec[f] = rec[f][idx]
    rec["missing_samples"] = missing
    # measured channels only (the commanded legs and the wrench may legitimately be absent, e.g. smoke runs)
    # (a channel the run's graph has no producer for, e.g. the interface state of a smoke run, is not a gap)
    gaps = {k: missing[k] for k in ("cmd", "state", "force") if seen[k].any()}
    rec["run_status"] = st = status_of_bag(bag, topics, scenario, n + 1, gaps)
    # an abort (a fault) fails the stability verdict as before; an interrupted or incomplete run is judged on its
    # recorded steps and then called "not judged" unless they show instability (analysis.status.apply_status)
    rec["aborted"] = st.status == "aborted"
    rec["abort_reason"] = fault_reason(st.first_fault)
    loop = loop_stats(topics, scenario, n)
    return rec, scenario, loop


def loop_stats(topics: dict, scenario: scn.Scenario, n: int) -> dict:
    """Loop statistics from the last LoopTiming of each node (the beat node, the run's plant, gives the end-to-end
    latency).  Realtime: a step a loop node served with a stale input (the plant without the step's leg command,
    the ft_sensor without a new sample of its sensor driver, the numerical substructure with a message of a past
    step) is a deadline miss of that node; ``deadline_miss_ratio`` is the worst node's share of the run's steps,
    ``deadline_miss_node`` names it (each node's count is under ``nodes``).  Lockstep has no deadlines: 0."""
    last = {}
    for _, m in topics.get("/rths/timing", []):
        last[m.node] = m
    # the beat-setting plant of the run: the twin, the hardware driver or the ros2_control plant
    beat = last.get(scn.PLANT_NODE_OF.get(scenario.plant, "sim_plant"))
    ratios = ({name: int(m.late_messages) / n for name, m in last.items() if int(m.steps) > 0}
              if n and scenario.loop.mode == "realtime" else {})
    worst = max(sorted(ratios), key=ratios.get) if ratios else ""
    out = {
        "mode": scenario.loop.mode,
        "steps": int(n),
        "deadline_miss_ratio": ratios[worst] if worst else 0.0,
        "deadline_miss_node": worst,
        "step_latency_p50_s": float(beat.latency_p50_s) if beat is not None else float("nan"),
        "step_latency_p99_s": float(beat.latency_p99_s) if beat is not None else float("nan"),
        "step_latency_max_s": float(beat.latency_max_s) if beat is not None else float("nan"),
        "period_mean_s": float(beat.period_mean_s) if beat is not None else float("nan"),
        "period_jitter_s": float(beat.period_jitter_s) if beat is not None else float("nan"),
        "nodes": {name: {"steps": int(m.steps), "deadline_misses": int(m.deadline_misses),
                         "lost_messages": int(m.lost_messages), "late_messages": int(m.late_messages),
                         "overruns": int(m.overruns), "latency_p99_s": float(m.latency_p99_s)}
                  for name, m in sorted(last.items())},
    }
    return out


def reference_for(scenario: scn.Scenario, n_rows: int) -> np.ndarray | None:
    """The model's reference solution z^r over ``n_rows`` samples (rths_ros.core.models.entry), or None when the
    model has none (then the reference error is not reported)."""
    ref = registry.model(scenario.numerical.model).reference
    return None if ref is None else ref(scenario.numerical, n_rows, scenario.loop.dt_s)["z"]


def _g(v) -> str:
    """A metric for a summary line; None (e.g. no reference solution for the model) says so."""
    return "n/a" if v is None else f"{v:.4g}"


TRIAL_KEYS = ("e_track_rel", "e_ref_rel", "edot_track_rel", "max_abs_tracking_error_m", "E_error_J", "Ec_error_J",
              "E_diss_J", "peak_damping_force_n", "stable", "dominant_error_freq_hz", "touchdown_s", "liftoff_s")


def analyze_record(rec: dict, scenario: scn.Scenario, loop: dict, out: Path) -> dict:
    """Metrics of every trial; metrics.json holds the last trial's (plus a per-trial table), the plots
    show the last trial (and, with several trials, the per-trial progress)."""
    from rths_ros.analysis.metrics import compute_metrics
    from rths_ros.analysis.report import write_metrics_json, write_report
    from rths_ros.app.vrths import trial_slice
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    trial_len = scenario.steps + 1
    n_trials = int(np.ceil(rec["k"].size / trial_len))
    z_ref = reference_for(scenario, trial_len)
    per_trial = []
    metrics = None
    for j in range(n_trials):
        tr = trial_slice(rec, j, trial_len)
        m = compute_metrics(tr, None if z_ref is None else z_ref[: tr["k"].size], scenario.loop.dt_s, loop=loop)
        per_trial.append({"trial": j, **{key: m.get(key) for key in TRIAL_KEYS}})
        metrics, last = m, tr
    if n_trials > 1:
        metrics["trials"] = per_trial
    metrics["n_trials"] = n_trials
    st = rec.get("run_status")
    if st is not None:
        apply_status(metrics, st)
    plots = []
    if figures.enabled():
        from rths_ros.analysis.plots import plot_run, plot_trials
        plots = plot_run(last, None if z_ref is None else z_ref[: last["k"].size], metrics, out)
        if n_trials > 1:
            plots += plot_trials(rec, per_trial, trial_len, scenario.loop.dt_s, out)
    write_metrics_json(metrics, out / "metrics.json")
    report = write_report(metrics, scn.to_dict(scenario), plots, out)
    lines = (status_lines(st) if st is not None else []) + [
        f"metrics: {out / 'metrics.json'}",
        f"report : {report}",
        figures.plots_line(plots),
    ]
    if n_trials > 1:
        lines += [f"  trial {t['trial']:>3}: e_track_rel={t['e_track_rel']:.4g}  e_ref_rel={_g(t['e_ref_rel'])}  "
                  f"max|e|={1e3 * t['max_abs_tracking_error_m']:.3f} mm  stable={t['stable']}" for t in per_trial]
    lines.append(f"{'last trial: ' if n_trials > 1 else ''}stable={metrics['stable']}  "
                 f"e_track_rel={metrics['e_track_rel']:.4g}  e_ref_rel={_g(metrics['e_ref_rel'])}  "
                 f"max|e|={1e3 * metrics['max_abs_tracking_error_m']:.3f} mm")
    return {"metrics": metrics, "lines": lines}


def bag_family(bag: Path) -> str:
    """The model family of the run in ``bag`` (from its /rths/scenario); the default model's when the bag has
    none or names a model no installed package registers (the 1-D record reader then says what is missing)."""
    text = read_scenario_yaml(Path(bag))
    data = (yaml.safe_load(text) or {}) if text is not None else {}
    model = (data.get("numerical") or {}).get("model") or scn.Scenario().numerical.model
    models = registry.models()
    return models[model].family if model in models else models[scn.Scenario().numerical.model].family


def analyze_bag(bag: Path, out: Path) -> dict:
    return registry.family(bag_family(Path(bag))).analyze_bag(Path(bag), Path(out))
