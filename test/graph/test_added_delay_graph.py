"""The commander's added delay through the ROS graph (the nodes composed in one process): a lockstep run with ``platform.commander.added_delay_steps``
> 0 reproduces the in-process virtual run (the delay acts inside the stewart_platform node, on the same object),
and the leg commands on /rths/leg_command are those of n steps earlier."""
from __future__ import annotations

import numpy as np
from graph_equivalence import assert_graph_matches_virtual, run_scenario

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual

N = 4
SETS = ["loop.duration_s=2.0", "sim_plant.cascade.preset=PPI2", f"platform.commander.added_delay_steps={N}"]


def test_the_graph_with_an_added_delay_reproduces_the_virtual_run(tmp_path):
    out = tmp_path / "run"
    run_scenario("contact_1d", out, *SETS, composed=True)
    rec, s, v = assert_graph_matches_virtual(out / "bag", "contact_1d", overrides=SETS)
    assert s.platform.commander.added_delay_steps == N
    # the commands that left the node are the undelayed run's of N steps earlier
    plain = run_virtual(scn.load("contact_1d", SETS[:-1] + [f"sim_plant.command_delay_steps={N}"]))
    assert np.allclose(rec["b_cmd"][N + 1:], plain["b_cmd"][1:-N], rtol=0, atol=1e-12)
    assert np.allclose(rec["b_cmd"][1:N + 1], rec["b_cmd"][0], rtol=0, atol=0)
    assert np.max(np.abs(rec["z_ach"] - run_virtual(scn.load("contact_1d", SETS[:-1]))["z_ach"])) > 1e-5
