"""`ros2 launch rths_ros rths.launch.py scenario:=cubic_spring_pbc` (Bartl's (2019) cubic-spring rig: a linear motor
instead of the Stewart platform) under launch_testing: every node ready, START and STOP, every process exits 0,
one message per step on every loop topic, and the metrics of `rths run` bit for bit."""
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
    return lc.scenario_launch("cubic_spring_pbc", ("loop.duration_s=2.0",))


@launch_testing.post_shutdown_test()
class TestCubicSpringRun(unittest.TestCase):
    def test_whole_trial_recorded_and_bounded(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["steps_recorded"] == run.resolved().steps + 1 == 2001
        assert m["stable"] is True and m["aborted"] is False and m["core_check"]["identical"] is True
