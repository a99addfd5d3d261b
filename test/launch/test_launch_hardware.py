"""`ros2 launch rths_ros rths.launch.py scenario:=contact_1d plant:=hardware`: the hardware driver nodes
(platform link and force/torque sensor protocol) against their emulators; the swap is the one argument,
and in lockstep the run gives the metrics of `rths run --plant hardware`."""
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
    return lc.scenario_launch("contact_1d", ("loop.duration_s=1.5",), plant="hardware")


@launch_testing.post_shutdown_test()
class TestHardwareRun(unittest.TestCase):
    def test_the_hardware_plant_ran_instead_of_the_twin(self, proc_info, run):
        names = set(lc.launched_names(proc_info))
        assert "hardware_plant" in names and "sim_plant" not in names, names
        assert run.resolved().plant == "hardware"
        m = json.loads((run.out / "metrics.json").read_text())
        assert m["stable"] is True and m["n_steps"] == 1501
