"""A lab's rig brought up safely, through the node graph: the pre-flight before START on a ros2_control rig (here
its emulator with wiring faults), start failures that end on the cause, and a node that crashes mid-run.

Each case runs `rths run` as a user does; the last line of its output must be the first cause, the run must not be
reported as completed, and nothing outside the stroke may have left the plant (the bag records what went to the
rig's controller).  How long each case takes is printed (measured, not asserted: the machine is shared)."""
import json
import time

import pytest

from rths_ros.app.run_status import read_events
from rths_ros.bag import read_bag

RC = ["ros2_control.emulate=true", "standard_interfaces.wrench_input_topic=/ft_sensor/wrench", "loop.duration_s=1.0"]
COMMANDS = "/forward_position_controller/commands"


def _run(rths_cli, out, sets, *extra):
    t0 = time.monotonic()
    p = rths_cli("run", "--no-plots", "contact_1d", "--mode", "realtime", "--plant", "ros2_control", "--out", str(out), *extra,
                 *[a for x in RC + sets for a in ("--set", x)], timeout=300)
    wall = time.monotonic() - t0
    lines = [ln for ln in (p.stdout + p.stderr).strip().splitlines() if ln.strip()]
    print(f"{out.name}: exit {p.returncode} after {wall:.1f} s; last line: {lines[-1] if lines else ''}")
    return p, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""


def _one_abort_before_start(out):
    rec = read_events(out)
    types = [e["type"] for e in rec["events"]]
    assert rec["status"] == "aborted", rec["status"]
    assert types.count("ABORT") == 1 and "START" not in types, types
    return [e for e in rec["events"] if e["type"] == "ABORT"][0]


def test_a_rig_that_reports_the_stroke_is_stopped_before_start_and_never_commanded(tmp_path, rths_cli):
    """The rig publishes the actuator stroke (0.09 m) instead of the leg length (0.70 m): the plant's pre-flight
    names the offset, the run aborts before START, nothing is sent to the controller, exit non-zero."""
    out = tmp_path / "stroke"
    p, last = _run(rths_cli, out, ["ros2_control.emulator_position_offset_m=0.6113"])
    assert p.returncode != 0
    assert last.startswith("rths run: FAILED: run aborted: ros2_control_plant: pre-flight"), last
    assert "outside the stroke" in last and "a length offset" in last and "0.6113 m less" in last, last
    abort = _one_abort_before_start(out)
    assert abort["source"] == "ros2_control_plant"
    # nothing left the plant: no command on the controller's topic in the bag, none received by the rig
    assert not read_bag(out / "bag", [COMMANDS]).get(COMMANDS), "a command was sent to the rig"
    emu = json.loads((out / "timing" / "ros2_control_emulator.json").read_text())
    assert emu["commands"] == 0, emu
    plant = json.loads((out / "timing" / "ros2_control_plant.json").read_text())
    assert plant["preflight"][0]["ok"] is False and plant["commands_not_sent"] == 0, plant["preflight"]


@pytest.mark.parametrize("composed", [False, True], ids=["processes", "composed"])
def test_a_wrong_joint_name_ends_the_run_on_the_plants_own_message(tmp_path, rths_cli, composed):
    out = tmp_path / ("names-composed" if composed else "names")
    p, last = _run(rths_cli, out, ["ros2_control.emulator_joint_names=[leg_1,leg_2,leg_3,leg_4,leg_5,hexa_leg_g]"],
                   *(["--composed"] if composed else []))
    assert p.returncode != 0
    assert last.startswith("rths run: FAILED: run aborted: ros2_control_plant: pre-flight"), last
    assert "lacks leg_6 (has hexa_leg_g" in last and "ros2_control.joint_names" in last, last
    _one_abort_before_start(out)


@pytest.mark.parametrize("composed", [False, True], ids=["processes", "composed"])
def test_a_node_that_crashes_mid_run_aborts_it_and_the_platform_goes_safe(tmp_path, rths_cli, composed):
    """An uncaught error in the platform node's callback (injected): the node's own ABORT names it and the error,
    the plant ramps to the safe pose (also when it shares the crashed node's process), the run is aborted."""
    out = tmp_path / ("crash-composed" if composed else "crash")
    p = rths_cli("run", "--no-plots", "contact_1d", "--out", str(out), "--set", "loop.duration_s=1.0", "--set",
                 "faults.crash_node=stewart_platform", "--set", "faults.crash_at_step=300",
                 *(["--composed"] if composed else []), timeout=300)
    last = p.stderr.strip().splitlines()[-1]
    assert p.returncode != 0
    assert last.startswith("rths run: FAILED: run aborted: stewart_platform: uncaught RuntimeError: injected crash"), \
        last
    rec = read_events(out)
    assert rec["status"] == "aborted" and rec["first_fault"]["node"] == "stewart_platform", rec["first_fault"]
    types = [e["type"] for e in rec["events"]]
    assert "SAFE" in types and types.count("ABORT") == 1, types
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "aborted" and m["complete"] is False
