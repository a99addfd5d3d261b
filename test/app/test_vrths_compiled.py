"""The virtual run's compiled building trial gives the same record as stepping the objects one by one."""
from __future__ import annotations

import pytest
from records import assert_same_record

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import VirtualRun

SHORT = ["loop.duration_s=6.0"]


_same = assert_same_record


@pytest.mark.parametrize("overrides", [
    [],
    ["tracking_controller.kind=passthrough"],
    ["tracking_controller.reference.quantise=false", "numerical.building.force_delay_samples=0"],
    ["numerical.building.integrator=average_acceleration", "numerical.building.specimen_force=restoring",
     "numerical.building.case=3"],
    ["loop.trials=2", "loop.duration_s=2.0", "numerical.building.noise_enabled=false"],
    ["loop.duration_s=1.0", "numerical.building.force_capacity_n=10"],                  # the capacity abort
    ["loop.duration_s=6.0", "numerical.building.abort_on_stroke_velocity=true",
     "numerical.building.velocity_m_per_s=1e-3"],                                         # the velocity abort
])
def test_compiled_building_trial_equals_the_objects(overrides):
    s = scn.load("benchmark_building", SHORT + overrides)
    compiled = VirtualRun(s).run()
    stepped = VirtualRun(s, compiled=False).run()
    _same(compiled, stepped)
    if any("force_capacity_n" in o for o in overrides):
        assert compiled["aborted"] and "capacity" in compiled["abort_reason"]
