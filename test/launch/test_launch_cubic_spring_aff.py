"""`ros2 launch rths_ros rths.launch.py scenario:=cubic_spring_aff_supervised` (the cubic-spring rig with the
harmonic AFF under the power-flow supervisor: the aff_learner adapts with the interface gap) under
launch_testing: every node ready, START and STOP, every process exits 0, one message per step on every loop
topic, and the metrics of `rths run` bit for bit."""
import json
import unittest

import launch_checks as lc
import pytest

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds, SameMetricsAsRthsRun  # noqa: F401  (collected by launch_testing)


@pytest.mark.launch_test
def generate_test_description():
    # a shortened trial: the launch's wiring shows in it as well as in the whole one (the scenario's own numbers
    # at full length are checked through `rths run` in test/graph)
    return lc.scenario_launch("cubic_spring_aff_supervised", ("loop.duration_s=3.0",))


@launch_testing.post_shutdown_test()
class TestCubicSpringAffRun(unittest.TestCase):
    def test_supervised_aff_synchronises(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["steps_recorded"] == run.resolved().steps + 1 == 3001
        assert m["stable"] is True and m["core_check"]["identical"] is True and m["t_stab_s"] < 0.5
