"""`ros2 launch rths_ros rths.launch.py scenario:=contact_1d mode:=realtime composed:=true`: a short
wall-clock run with every node but the recorder in one process.  Realtime runs are not reproducible,
so this family is checked for a clean run, its events and its bag, not against `rths run`."""
import json
import unittest

import launch_checks as lc
import pytest

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds  # noqa: F401  (collected by launch_testing)


@pytest.mark.launch_test
def generate_test_description():
    return lc.scenario_launch("contact_1d", overrides=("loop.duration_s=1.0",), mode="realtime", composed="true")


@launch_testing.post_shutdown_test()
class TestRealtimeComposedRun(unittest.TestCase):
    def test_one_composed_process_and_loop_statistics(self, proc_info, run):
        names = lc.launched_names(proc_info)
        assert [n for n in names if n != "python"] == ["composed", "recorder", "rths_analysis"], names
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["loop"]["mode"] == "realtime"
        assert m["n_steps"] == 1001
