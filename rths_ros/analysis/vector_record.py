"""The record of a run with a multi-DoF interface from its bag: the gait test's (width 3,
rths_ros.families.gait.analysis) and the two shakers' (width 2, rths_ros.families.shaker_pair.analysis).

The layout is :func:`rths_ros.app.vrths.empty_vector_record`: rows = the steps 0..N the numerical part received a
load for, the interface command, state and load per step, the leg and wrench channels, the run status."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from rths_ros.analysis.status import no_loop_data, status_of_bag
from rths_ros.app import scenario as scn
from rths_ros.app.factory import interface_widths, start_lengths
from rths_ros.app.run_status import fault_reason
from rths_ros.app.vrths import empty_vector_record
from rths_ros.bag import read_bag, read_scenario_yaml
from rths_ros.families.registry import require_family

__all__ = ["vector_record_from_bag"]


def vector_record_from_bag(bag: Path, family: str) -> tuple[dict, scn.Scenario, dict]:
    """(record, scenario, topics) of a run of ``family`` (ValueError for a run of another family)."""
    text = read_scenario_yaml(bag)
    if text is None:
        raise ValueError(f"{bag}: no /rths/scenario message; was it recorded by rths_ros?")
    s = scn.from_data(yaml.safe_load(text))
    require_family(s.numerical.model, family, f"{bag}: scenario {s.name!r}")
    topics = read_bag(bag)
    forces = {int(m.step): m for _, m in topics.get("/rths/interface_force", [])}
    if not forces:
        raise no_loop_data(bag, topics, s, "no /rths/interface_force message")
    n = min(max(forces) + 1, s.steps + 1)
    rec = empty_vector_record(n, interface_widths(s)["command"])
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
    if n:      # no command is sent for the first step: the actuators are at the start pose
        rec["b_cmd"][0] = start_lengths(s)
    for _, m in topics.get("/rths/raw_wrench", []):
        k = int(m.step)
        if k < n:
            f, t = m.wrench.force, m.wrench.torque
            rec["wrench"][k] = [f.x, f.y, f.z, t.x, t.y, t.z]
    rec["missing_force_samples"] = int((~seen).sum())
    st = status_of_bag(bag, topics, s, n, {"force": rec["missing_force_samples"]})
    rec["run_status"] = st
    rec["aborted"] = st.status in ("aborted", "interrupted")
    rec["abort_reason"] = fault_reason(st.first_fault)
    return rec, s, topics
