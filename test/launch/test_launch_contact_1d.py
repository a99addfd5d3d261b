"""`ros2 launch rths_ros rths.launch.py scenario:=contact_1d` (the 4 s, 4000-step contact test of the
default scenario) under launch_testing: every node ready, START and STOP, every process exits 0, one
message per step on every loop topic, the artefacts and the physics metrics of `rths run`."""
import json

import pytest

from launch_checks import SKIP_REASON

if SKIP_REASON:
    pytest.skip(SKIP_REASON, allow_module_level=True)

import unittest  # noqa: E402

import launch_testing  # noqa: E402

import launch_checks as lc  # noqa: E402
from launch_checks import CompletedRun, RunEnds, SameMetricsAsRthsRun  # noqa: E402,F401


@pytest.mark.launch_test
def generate_test_description():
    return lc.scenario_launch("contact_1d")


@launch_testing.post_shutdown_test()
class TestContactRun(unittest.TestCase):
    def test_whole_trial_recorded_and_stable(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["n_steps"] == run.resolved().steps + 1 == 4001
        assert m["stable"] is True and m["aborted"] is False
        assert m["n_contact_events"] == 1
