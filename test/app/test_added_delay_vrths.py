"""The commander's added delay in the virtual run (``platform.commander.added_delay_steps``): off, the loop is the
one of the compiled kernel bit for bit; on, it is a pure delay of the command path, the same on the twin as the
plant's own command delay (``sim_plant.command_delay_steps``), sample for sample."""
import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import VirtualRun, run_virtual
from rths_ros.params import ParameterError

SHORT = ["loop.duration_s=2.0"]          # the contact starts at about 1.3 s
CHANNELS = ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas", "b_meas", "wrench")


def test_without_added_delay_the_stepped_objects_give_the_compiled_kernels_record_bit_for_bit():
    """The kernel (rths_ros.core.models.contact1d.trial) knows nothing of the delay; the objects with
    added_delay_steps = 0 must give its record exactly."""
    s = scn.load("contact_1d", SHORT + ["platform.commander.added_delay_steps=0"])
    kernel = run_virtual(s)
    objects = VirtualRun(s, compiled=False).run()
    for key in CHANNELS + ("b_cmd", "ff_velocity", "contact"):
        assert np.array_equal(kernel[key], objects[key]), key


@pytest.mark.parametrize("n, extra", [(2, []), (5, ["platform.commander.vff=true", "sim_plant.cascade.preset=PPI2"])])
def test_the_added_delay_is_the_plants_command_delay_moved_into_the_platform(n, extra):
    late_cmd = run_virtual(scn.load("contact_1d", SHORT + extra + [f"platform.commander.added_delay_steps={n}"]))
    late_plant = run_virtual(scn.load("contact_1d", SHORT + extra + [f"sim_plant.command_delay_steps={n}"]))
    plain = run_virtual(scn.load("contact_1d", SHORT + extra))
    assert not late_cmd["aborted"] and not late_plant["aborted"]
    for key in CHANNELS:
        assert np.array_equal(late_cmd[key], late_plant[key]), key
    # the commands that left the platform: those of n steps earlier (row 0 is the start pose, rows 1..n hold it)
    assert np.array_equal(late_cmd["b_cmd"][n + 1:], late_plant["b_cmd"][1:-n])
    assert np.array_equal(late_cmd["b_cmd"][1:n + 1], np.repeat(late_cmd["b_cmd"][:1], n, axis=0))
    # and the delay changes the loop (the test can fail)
    assert np.max(np.abs(late_cmd["z_ach"] - plain["z_ach"])) > 1e-5


@pytest.mark.parametrize("name", ["gait_vpp", "benchmark_building", "cubic_spring_pbc"])
def test_an_added_delay_where_no_leg_commander_runs_is_refused(name):
    with pytest.raises(ParameterError) as e:
        scn.load(name, ["platform.commander.added_delay_steps=2"])
    assert "platform.commander.added_delay_steps: 2 is not allowed" in str(e.value)
