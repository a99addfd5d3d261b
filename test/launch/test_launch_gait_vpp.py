"""`ros2 launch rths_ros rths.launch.py scenario:=gait_vpp`: the VPP amputee model on the simulated
prosthetic foot through the launch (one stride), checked like every family and against `rths run`."""
import json
import unittest

import launch_checks as lc
import pytest

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds, SameMetricsAsRthsRun  # noqa: F401  (collected by launch_testing)


@pytest.mark.launch_test
def generate_test_description():
    return lc.scenario_launch("gait_vpp", timeout_s=180.0)


@launch_testing.post_shutdown_test()
class TestGaitRun(unittest.TestCase):
    def test_gait_metrics_and_plots(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["aborted"] is False
        assert 0.5 < m["stride_duration_s"] < 0.8, m["stride_duration_s"]
        assert m["fallen_at_step"] == -1 and m["steps"] == run.resolved().steps + 1
        assert (run.out / "gait_grf.png").is_file() and (run.out / "gait_com.png").is_file()
