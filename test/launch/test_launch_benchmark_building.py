"""`ros2 launch rths_ros rths.launch.py scenario:=benchmark_building`: the vRTHS building benchmark (the
three-storey frame with its MR damper specimen) through the launch, checked like every family and against
`rths run`."""
import json
import unittest

import launch_checks as lc
import pytest

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds, SameMetricsAsRthsRun  # noqa: F401  (collected by launch_testing)


@pytest.mark.launch_test
def generate_test_description():
    # the launch's wiring and analysis, compared with `rths run` of the same scenario: 2.5 s of the record
    # (10 240 steps) show it as well as the whole 10 s; the benchmark's own numbers are checked on the full
    # record in test/graph/test_benchmark_graph.py and test/core/models/building
    return lc.scenario_launch("benchmark_building", ("loop.duration_s=2.5",), timeout_s=240.0)


@launch_testing.post_shutdown_test()
class TestBuildingRun(unittest.TestCase):
    def test_benchmark_criteria_written(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["aborted"] is False
        crit = m["criteria"] if "criteria" in m else m
        assert all(f"J{i}" in json.dumps(crit) for i in range(1, 10)), sorted(m)
