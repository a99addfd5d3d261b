"""The virtual run's compiled trial of the 1-D interface gives the same record as stepping the objects one by one."""
from __future__ import annotations

import numpy as np
import pytest
from records import assert_same_record

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import VirtualRun
from rths_ros.core.models.contact1d import trial

SHORT = ["loop.duration_s=1.5"]


_same = assert_same_record


@pytest.mark.parametrize("overrides", [
    [],
    ["loop.trials=2", "platform.commander.vff=true"],
    ["sim_plant.ideal_actuator=true"],
    ["sim_plant.velocity_estimate='true'", "sim_plant.command_delay_steps=2"],
    ["platform.interface.mount=upright", "platform.interface.specimen_offset_m=0.03",
     "sim_plant.specimen.contact_model=cor", "sim_plant.specimen.restitution=0.5"],
    ["ft_sensor.tare=false", "ft_sensor.gating=false", "sim_plant.force_bias=[0.1,0.2,0.3,0.0,0.01,0.0]",
     "sim_plant.moment_noise_std_n_m=0.01", "sim_plant.specimen.contact_model=quasi_static"],
    ["platform.commander.enforce_limits=false", "sim_plant.specimen.contact_model=sticky"],
    ["loop.trials=2", "faults.nan_wrench_at_step=1800"],                    # trial 1 aborts on the NaN wrench
    ["platform.geometry.leg_velocity_max_m_per_s=0.01"],                      # a leg limit aborts the trial
])
def test_compiled_1d_trial_equals_the_objects(overrides):
    s = scn.load("contact_1d", SHORT + overrides)
    compiled = VirtualRun(s).run()
    stepped = VirtualRun(s, compiled=False).run()
    _same(compiled, stepped)
    if any("leg_velocity_max" in o for o in overrides):
        assert compiled["aborted"] and "leg speed limit" in compiled["abort_reason"]
    if any("nan_wrench" in o for o in overrides):
        assert compiled["aborted"] and compiled["abort_reason"].startswith("ft_sensor: non-finite wrench")


def test_the_kernel_runs_the_default_scenario():
    vr = VirtualRun(scn.load("contact_1d", ["loop.duration_s=0.2"]))
    assert trial.supports(vr.numerical, vr.platform, vr.force, vr.plant)
    rec = vr.run()
    assert trial.run_trial_compiled(vr.numerical, vr.platform, vr.force, vr.plant, 1, 200, rec, 0)


@pytest.mark.parametrize("name", ["contact_1d_newmark", "contact_1d_prediction", "contact_1d_tdc"])
def test_uncovered_features_fall_back_to_the_objects(name):
    s = scn.load(name, ["loop.duration_s=0.5"])
    vr = VirtualRun(s)
    if vr.npc is None and vr.aff is None and vr.ilc is None and vr.blend is None:
        assert not trial.supports(vr.numerical, vr.platform, vr.force, vr.plant)
    _same(vr.run(), VirtualRun(s, compiled=False).run())


def test_noise_drawn_in_a_block_equals_the_draws_per_step():
    """The compiled trial draws a trial's sensor noise at once (SimPlant.draw_noise); the objects draw 6 values
    per step: the same numbers in the same order."""
    for seed in (0, 1, 12345, 2**40 + 7):
        a = np.random.Generator(np.random.PCG64(seed))
        b = np.random.Generator(np.random.PCG64(seed))
        block = a.standard_normal((1000, 6))
        buf = np.zeros(6)
        rows = []
        for _ in range(1000):
            b.standard_normal(out=buf)
            rows.append(buf.copy())
        assert np.array_equal(block, np.array(rows))
        assert a.standard_normal() == b.standard_normal()      # and the generator goes on from the same state
