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
    seen = [(e["type"], e.get("source"), e.get("step")) for e in rec["events"] if e["type"] != "READY"]
    assert "SAFE" in types and types.count("ABORT") == 1, (seen, p.stderr[-3000:])
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "aborted" and m["complete"] is False


@pytest.mark.parametrize("victim", ["sim_plant", "recorder"])
def test_a_node_that_fails_while_it_is_built_stops_the_others_at_once_and_is_named(tmp_path, rths_cli, victim):
    """A node process that fails before the run started (injected: an error while its node is built) sends no
    ABORT, and the plant's process watch covers only the run: the runner gives every other node the orderly stop of
    a Ctrl-C at once (they end by that SIGINT, not by the SIGTERM that ends a drain time's wait), and names the
    failed node, not one it stopped."""
    out = tmp_path / victim
    p = rths_cli("run", "--no-plots", "contact_1d", "--out", str(out), "--set", "loop.duration_s=1.0", "--set",
                 f"faults.start_failure_node={victim}", timeout=300)
    text = p.stdout + p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert p.returncode != 0
    assert f"rths run: node {victim} ended with code 1 before the run started; stopping the others" in text, text
    assert last.startswith(f"rths run: FAILED: run aborted: {victim}: process exited with code 1"), last
    rec = read_events(out)
    assert rec["first_fault"]["node"] == victim, rec["first_fault"]
    assert "START" not in [e["type"] for e in rec["events"]]
    others = {n: c for n, c in rec["exit_codes"].items() if n != victim}
    assert rec["exit_codes"][victim] == 1 and len(others) == 5, rec["exit_codes"]
    # 130 = a node's own orderly stop on SIGINT; -2 = the SIGINT came before the node had its handler
    assert all(c in (130, -2) for c in others.values()), rec["exit_codes"]


def test_a_crash_right_after_start_is_a_crash_during_the_run(tmp_path, rths_cli):
    """A node that dies two steps after START is not a start failure: the plant's process watch aborts the run and
    the plant ramps to its safe pose (the runner stops no node itself).  The supervisor's progress file says
    "running" from START on, not only at its next 0.5-s write (with those writes alone this test failed in 2 of 4
    runs: the crash was taken for a start failure)."""
    out = tmp_path / "early"
    p = rths_cli("run", "--no-plots", "contact_1d", "--out", str(out), "--set", "loop.duration_s=1.0", "--set",
                 "faults.crash_node=stewart_platform", "--set", "faults.crash_at_step=2", timeout=300)
    assert p.returncode != 0
    assert "before the run started" not in p.stdout + p.stderr, p.stdout + p.stderr
    rec = read_events(out)
    types = [e["type"] for e in rec["events"]]
    seen = [(e["type"], e.get("source"), e.get("step")) for e in rec["events"] if e["type"] != "READY"]
    assert "START" in types and "SAFE" in types and types.count("ABORT") == 1, (seen, p.stderr[-3000:])
    assert rec["first_fault"]["node"] == "stewart_platform", rec["first_fault"]


def test_a_run_into_a_folder_with_a_bag_is_refused_before_any_node_starts(tmp_path):
    from rths_ros.app import scenario as scn
    from rths_ros.runner import RunError, run_scenario
    out = tmp_path / "run"
    (out / "bag").mkdir(parents=True)
    with pytest.raises(RunError, match=r"already holds a recorded run \(bag/\)"):
        run_scenario(scn.load("contact_1d"), out, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["bag"]       # nothing written, no node started
