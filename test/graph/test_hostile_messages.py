"""A corrupt loop message from within the run (faults.corrupt_*: the producing node itself sends it) is stopped by
the loop's message validation (rths_ros.runtime.guard) at the node that reads it: NaN, huge values, a wrong array
length or a step index beyond the run abort the run with the topic, the field and the step named, and the plant
never steps with it (it ramps to the safe pose from where it was); a stale or duplicate message is dropped and
counted, and the run is the run without it, bit for bit.  Node graph, separate processes, lockstep."""
from __future__ import annotations

import json

import numpy as np
import pytest
from graph_equivalence import assert_graph_matches_virtual
from test_safety import _assert_safe, _events

from rths_ros.app import scenario as scn
from rths_ros.bag import read_bag
from rths_ros.runner import run_scenario

AT = 500
BASE = ["loop.duration_s=1.0"]


def _run(tmp_path, name: str, topic: str, kind: str):
    ov = BASE + [f"faults.corrupt_topic={topic}", f"faults.corrupt_kind={kind}", f"faults.corrupt_at_step={AT}"]
    s = scn.load("contact_1d", ov)
    out = tmp_path / name
    return s, ov, out, run_scenario(s, out, progress=False)


def _timing(out, node: str) -> dict:
    return json.loads((out / "timing" / f"{node}.json").read_text())


ABORTS = [
    # topic, kind, the node that stops it, its reason, the plant's last step before the ramp
    ("/rths/interface_command", "nan", "stewart_platform",
     f"non-finite position[0] = nan at step {AT} on /rths/interface_command", AT - 1),
    ("/rths/interface_command", "length", "stewart_platform",
     f"position has 2 entries where 1 are expected at step {AT} on /rths/interface_command", AT - 1),
    ("/rths/interface_force", "huge", "numerical_substructure",
     f"force[0] = 1e+300 beyond the plausible magnitude 1e+09 at step {AT} on /rths/interface_force", AT),
    ("/rths/leg_command", "huge", "sim_plant",
     f"length[0] = 1e+300 beyond the plausible magnitude 1e+09 at step {AT} on /rths/leg_command", AT - 1),
    ("/rths/leg_state", "step", "stewart_platform",
     "step index 4611686018427387904 beyond the last one of the run", AT),
]


@pytest.mark.parametrize("topic,kind,node,reason,plant_step", ABORTS, ids=[f"{a[1]}-{a[0].split('/')[-1]}"
                                                                        for a in ABORTS])
def test_a_corrupt_message_aborts_at_its_reader_and_never_reaches_the_plant(tmp_path, topic, kind, node, reason,
                                                                             plant_step):
    s, _, out, r = _run(tmp_path, kind, topic, kind)
    assert r.code != 0
    assert f"{node}: {reason}" in r.message, r.message
    t = _timing(out, node)
    assert t["invalid_messages"] == 1 and t["abort_reason"].startswith(f"{node}: {reason}"), t["abort_reason"]
    assert list(t["guard"]["invalid"]) == [topic]
    aborts = [e for e in _events(out) if e["type"] == "ABORT"]
    assert aborts[0]["source"] == node, aborts
    info = _assert_safe(s, out, plant_step)                 # SAFE after the ramp from where the plant was
    plant = _timing(out, "sim_plant")
    assert plant["steps"] <= plant_step + 1, plant["steps"]  # steps 0..plant_step: never one with the message
    states = read_bag(out / "bag", ["/rths/leg_state"])["/rths/leg_state"]
    lengths = np.array([np.asarray(m.length) for _, m in states])
    g = s.platform.geometry
    assert np.all(np.isfinite(lengths)) and lengths.max() <= g.leg_length_max_m and lengths.min() >= g.leg_length_min_m
    assert int(states[-1][1].step) == info["abort_step"] + info["ramp_steps"] + info["hold_steps"]


DROPS = [("/rths/leg_state", "stale", "stewart_platform"), ("/rths/interface_command", "duplicate", "stewart_platform")]


@pytest.mark.parametrize("topic,kind,node", DROPS, ids=[f"{d[1]}-{d[0].split('/')[-1]}" for d in DROPS])
def test_a_stale_or_duplicate_message_is_dropped_and_counted_and_changes_nothing(tmp_path, topic, kind, node):
    s, ov, out, r = _run(tmp_path, kind, topic, kind)
    assert r.code == 0, r.message
    t = _timing(out, node)
    assert t["guard"]["stale"] == {topic: 1} and t["late_messages"] == 1, t
    assert t["invalid_messages"] == 0 and t["foreign_messages"] == 0
    assert_graph_matches_virtual(out / "bag", "contact_1d", overrides=ov)      # the run without the extra message
