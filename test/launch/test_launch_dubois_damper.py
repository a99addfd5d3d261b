"""`ros2 launch rths_ros rths.launch.py scenario:=dubois_damper` (du Bois et al.'s (2010) damper rig: a servo-hydraulic
actuator with a hydraulic damper instead of the Stewart platform) under launch_testing: every node ready, START and
STOP, every process exits 0, one message per step on every loop topic, and the metrics of `rths run` bit for bit."""
import json
import unittest

import launch_checks as lc
import pytest

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds, SameMetricsAsRthsRun  # noqa: F401  (collected by launch_testing)


@pytest.mark.launch_test
def generate_test_description():
    return lc.scenario_launch("dubois_damper")


@launch_testing.post_shutdown_test()
class TestDamperRigRun(unittest.TestCase):
    def test_whole_run_recorded_and_acceptable(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["steps_recorded"] == run.resolved().steps + 1 == 5001
        assert m["stable"] is True and m["acceptable"] is True and m["core_check"]["identical"] is True
