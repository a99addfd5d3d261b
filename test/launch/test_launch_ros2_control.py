"""`ros2 launch rths_ros rths.launch.py mode:=realtime plant:=ros2_control composed:=true live:=true`: the rig
under ros2_control (here its emulator: forward_command_controller, joint_state_broadcaster and a WrenchStamped
sensor driver) instead of the twin, swapped in by the one argument, with the live view beside the run.  A realtime
run: checked for a clean, complete and stable run, not against `rths run`."""
import json
import unittest

import launch_checks as lc
import pytest

launch_testing = lc.require_launch_testing()      # skips this module without the launch tooling
from launch_checks import CompletedRun, RunEnds  # noqa: F401  (collected by launch_testing)

# (watchdogs of 0.5 s: the composed process of a busy 2-core machine stalls up to ~0.12 s at times, which the
# default 0.1 s watchdog rightly calls a fault; the claim here is the swap of the plant through the launch)
OVERRIDES = ("loop.duration_s=1.5", "ros2_control.emulate=true", "ros2_control.state_timeout_s=0.5",
             "standard_interfaces.wrench_input_topic=/ft_sensor/wrench", "live.port=0", "live.v1_port=0", "safety.watchdog_steps=500")


@pytest.mark.launch_test
def generate_test_description():
    return lc.scenario_launch("contact_1d", overrides=OVERRIDES, mode="realtime", plant="ros2_control",
                              composed="true", live="true")


@launch_testing.post_shutdown_test()
class TestRos2ControlRun(unittest.TestCase):
    def test_the_rig_nodes_ran_instead_of_the_twin_and_the_loop_was_stable(self, proc_info, run):
        names = set(lc.launched_names(proc_info))
        # the emulated rig and the live view in processes of their own, the rest of the graph composed
        assert {"composed", "recorder", "ros2_control_emulator", "live_view"} <= names, names
        assert "sim_plant" not in names, names
        s = run.resolved()
        assert s.plant == "ros2_control" and "ros2_control_plant" in s.run_nodes
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["stable"] is True and m["n_steps"] == s.steps + 1, (m["stable"], m["n_steps"])
        emu = json.loads((run.out / "timing" / "ros2_control_emulator.json").read_text())
        assert emu["refused_commands"] == 0 and emu["commands"] > s.steps // 2, emu
        assert (run.out / "live.json").exists()
