"""`ros2 launch rths_ros rths.launch.py scenario:=contact_1d_fe_beam` (a finite-element virtual part on the contact
test's rig) under launch_testing: every node ready, START and STOP, every process exits 0, one message per step on
every loop topic, the artefacts and the physics metrics of `rths run`."""
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
    return lc.scenario_launch("contact_1d_fe_beam", ("loop.duration_s=1.5",))


@launch_testing.post_shutdown_test()
class TestFeBeamRun(unittest.TestCase):
    def test_whole_trial_recorded_and_stable(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["n_steps"] == run.resolved().steps + 1 == 1501
        assert m["stable"] is True and m["aborted"] is False and m["e_ref_rel"] is None
