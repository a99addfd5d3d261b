"""`ros2 launch rths_ros rths.launch.py scenario:=<path of the example lab package's YAML>`: a family that a lab
registers from its own package (the voice-coil rig of examples/rths_lab_example) runs under launch_testing like
a shipped one: every node ready, START and STOP, every process exits 0, one message per step on every loop topic,
its own metrics, and the metrics of `rths run` bit for bit."""
import json
import unittest

import launch_checks as lc
import pytest
import rths_lab_example

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds, SameMetricsAsRthsRun  # noqa: F401  (collected by launch_testing)

SCENARIO = str(rths_lab_example.SCENARIOS / "lab_voice_coil.yaml")


@pytest.mark.launch_test
def generate_test_description():
    return lc.scenario_launch(SCENARIO)


@launch_testing.post_shutdown_test()
class TestLabVoiceCoilRun(unittest.TestCase):
    def test_the_lab_family_ran_with_its_own_metrics(self, run):
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["steps_recorded"] == run.resolved().steps + 1 == 2001
        assert m["model"] == "voice_coil_msd" and m["stable"] is True and m["e_track_rel"] < 0.05
        assert (run.out / "voice_coil.png").exists()
