"""`ros2 launch rths_ros rths.launch.py scenario:=coupled_beams_aff` (Bartl's (2019) coupled beams: a two-DoF interface
on two shakers instead of the Stewart platform, 0.2 ms loop), shortened to 1 s: every node ready, START and STOP,
every process exits 0, one message per step on every loop topic, and the metrics of `rths run` bit for bit."""
import json
import unittest

import launch_checks as lc
import pytest

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds, SameMetricsAsRthsRun  # noqa: F401  (collected by launch_testing)


@pytest.mark.launch_test
def generate_test_description():
    return lc.scenario_launch("coupled_beams_aff", ("loop.duration_s=1.0", "numerical.coupled_beams.aff.t_id_s=0.5"))


@launch_testing.post_shutdown_test()
class TestCoupledBeamsRun(unittest.TestCase):
    def test_whole_trial_recorded_and_repeated_in_process(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["steps"] == run.resolved().steps == 5000
        assert m["status"] == "completed" and m["aborted"] is False and m["core_check"]["identical"] is True
        assert m["peak_force_demand_n"] > 0.1
