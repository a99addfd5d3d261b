"""The virtual run's compiled trial of the gait test gives the same record as stepping the objects one by one."""
from __future__ import annotations

import numpy as np
import pytest
from records import assert_same_record

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import VirtualRun
from rths_ros.core.models.gait import trial

_same = assert_same_record


@pytest.mark.parametrize("name,overrides", [
    ("gait_vpp", []),
    ("gait_vpp_ideal", []),
    ("gait_vpp", ["loop.trials=2", "loop.duration_s=0.4"]),
    ("gait_vpp", ["sim_plant.velocity_estimate='true'", "sim_plant.command_delay_steps=2",
                  "sim_plant.moment_noise_std_n_m=0.01", "sim_plant.force_bias=[0.1,0.2,0.3,0.0,0.01,0.0]"]),
    ("gait_vpp", ["platform.gait.interface.enforce_limits=false", "numerical.gait.swing_lift_m=0.0",
                  "platform.gait.interface.payload_mass_kg=0.0"]),
    ("gait_vpp", ["numerical.gait.initial_conditions=thesis_a7", "loop.duration_s=0.6"]),
    ("gait_vpp", ["platform.gait.leg_speed_policy=abort"]),                         # a leg speed aborts
    ("gait_vpp", ["loop.trials=2", "loop.duration_s=0.5", "faults.nan_wrench_at_step=800"]),   # trial 1: NaN
    ("gait_vpp", ["numerical.gait.swing_transition_s=0.0", "platform.commander.vff=false"]),   # joint angle
    ("gait_vpp", ["platform.gait.interface.frame_load_max_n=200"]),                  # the frame load aborts
])
def test_compiled_gait_trial_equals_the_objects(name, overrides):
    s = scn.load(name, overrides)
    compiled = VirtualRun(s).run()
    stepped = VirtualRun(s, compiled=False).run()
    _same(compiled, stepped)
    if any("leg_speed_policy" in o for o in overrides):
        assert compiled["aborted"] and "leg speed limit" in compiled["abort_reason"]
    if any("nan_wrench" in o for o in overrides):
        assert compiled["aborted"] and compiled["abort_reason"].startswith("ft_sensor: non-finite wrench")
    if any("frame_load" in o for o in overrides):
        assert compiled["aborted"] and "reaction frame load" in compiled["abort_reason"]


def test_the_kernel_runs_the_gait_scenarios():
    for name in ("gait_vpp", "gait_vpp_ideal"):
        vr = VirtualRun(scn.load(name, ["loop.duration_s=0.2"]))
        assert trial.supports(vr.numerical, vr.platform, vr.force, vr.plant)
        rec = vr.run()
        assert trial.run_trial_compiled(vr.numerical, vr.platform, vr.force, vr.plant, 1, 200, rec, 0)


def test_the_objects_go_on_from_the_state_the_kernel_leaves():
    """After a compiled trial the objects hold the state stepping them leaves (model, platform, plant)."""
    s = scn.load("gait_vpp", ["loop.duration_s=0.3"])
    a, b = VirtualRun(s), VirtualRun(s, compiled=False)
    a.run()
    b.run()
    na, nb = a.numerical.inner, b.numerical.inner
    assert np.array_equal(na.state.s, nb.state.s) and np.array_equal(na.q, nb.q) and na.t == nb.t
    assert na.state.t == nb.state.t and na.events == nb.events
    assert np.array_equal(a.platform._prev, b.platform._prev)
    assert a.platform.saturated_steps == b.platform.saturated_steps
    assert np.array_equal(a.platform.gi.last_tcp_pose.translation, b.platform.gi.last_tcp_pose.translation)
    assert np.array_equal(a.force.force, b.force.force) and np.array_equal(a.force.measured, b.force.measured)
    assert np.array_equal(a.plant.pose.translation, b.plant.pose.translation)
    assert np.array_equal(a.plant.legs._x, b.plant.legs._x) and a.plant.step_index == b.plant.step_index
    cmd = np.array(a.platform._out.length)
    assert np.array_equal(a.plant.step(cmd).wrench, b.plant.step(cmd).wrench)
