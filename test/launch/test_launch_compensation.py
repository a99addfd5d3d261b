"""`ros2 launch rths_ros rths.launch.py scenario:=contact_1d_prediction`: a compensation method (polynomial
forward prediction of the commanded motion) through the launch, checked like every family and against
`rths run`."""
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
    return lc.scenario_launch("contact_1d_prediction", ("loop.duration_s=1.0",))


@launch_testing.post_shutdown_test()
class TestPredictionRun(unittest.TestCase):
    def test_prediction_is_on_and_the_run_completed(self, run):
        s = run.resolved()
        assert s.platform.commander.coupling.prediction.enabled
        assert s.platform.commander.coupling.prediction.horizon_s == 0.05
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["n_steps"] == s.steps + 1 and m["aborted"] is False

