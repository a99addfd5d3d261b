"""A node killed mid-run under `ros2 launch`: the launch ends by itself with a non-zero exit code, its
last message names the killed node, the platform went to its safe pose, and the bag is readable.  A node that fails
before the run started: the launch stops the others at once and names the failed one.

Started exactly as a user starts a run (the `ros2` command, the installed rths.launch.py), so the exit
code is the one a shell or a CI script sees."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from launch_checks import SKIP_REASON, ros2_launch

if SKIP_REASON:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from rths_ros.app.run_status import read_events
from rths_ros.bag import read_bag
from rths_ros.runner import DomainLease, wait_until_running
from rths_ros.runtime.processes import node_pids

ROS2 = Path(sys.prefix) / "bin" / "ros2"


def _launch(out: Path, log: Path, domain: int) -> subprocess.Popen:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    cmd = [str(ROS2), "launch", "rths_ros", "rths.launch.py", "scenario:=contact_1d", f"out:={out}",
           "overrides:=loop.duration_s=60"]
    return subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True)


def _launch_and(out: Path, log: Path, act) -> int:
    """Launch the run, do ``act(launch process)`` one second into the loop, wait for the launch to end; its code."""
    lease = DomainLease()
    proc = _launch(out, log, lease.domain_id)
    try:
        assert wait_until_running(out, timeout_s=90.0), log.read_text(errors="replace")[-3000:]
        time.sleep(1.0)                                    # mid-run: the loop is stepping
        act(proc)
        return proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        lease.close()


@pytest.mark.parametrize("victim", ["numerical_substructure", "recorder"])
def test_killed_node_ends_the_launch_non_zero_naming_it(tmp_path, victim):
    out, log = tmp_path / "run", tmp_path / "launch.log"

    def kill_victim(_proc):
        pids = node_pids(str(out), victim)
        assert len(pids) == 1, (victim, pids)
        os.kill(pids[0], signal.SIGKILL)
    code = _launch_and(out, log, kill_victim)
    text = log.read_text(errors="replace")
    assert code != 0, text[-3000:]
    last = [ln for ln in text.splitlines() if "rths: FAILED" in ln]
    assert last, text[-3000:]
    assert f"node {victim} killed by SIGKILL" in last[-1], last[-1]
    assert not node_pids(str(out)), "node processes left behind"
    # the platform ramped to its safe pose before the nodes ended
    events = read_events(out)["events"]
    types = [e["type"] for e in events]
    assert "ABORT" in types and "SAFE" in types, types
    # the bag is readable (recovered from its complete chunks when the recorder was the one killed)
    bag = read_bag(out / "bag", ["/rths/interface_command", "/rths/events"])
    steps = [m.step for _, m in bag["/rths/interface_command"]]
    assert len(steps) > 100 and steps == sorted(steps)
    assert (out / "metrics.json").is_file()               # what was recorded up to the fault is analysed


def test_ctrl_c_of_the_launch_ramps_the_platform_to_the_safe_pose_before_the_nodes_end(tmp_path):
    """A Ctrl-C in the terminal (SIGINT to the launch's whole process group): every node gets one SIGINT, the run
    aborts as interrupted, the plant ramps to its safe pose and reports SAFE (events.json and the bag), and every
    node ends by itself, before the launch would escalate to SIGTERM."""
    out, log = tmp_path / "run", tmp_path / "launch.log"
    _launch_and(out, log, lambda proc: os.killpg(proc.pid, signal.SIGINT))
    text = log.read_text(errors="replace")
    rec = read_events(out)
    assert rec["status"] == "interrupted", (rec["status"], text[-3000:])
    assert rec["first_fault"]["reason"].startswith("interrupted by SIGINT")
    kinds = [(e["type"], e["source"]) for e in rec["events"]]
    assert ("SAFE", "sim_plant") in kinds and kinds.index(("SAFE", "sim_plant")) > kinds.index(("ABORT", "sim_plant"))
    bag = read_bag(out / "bag", ["/rths/events"])
    assert any(m.source == "sim_plant" and "safe pose reached" in m.reason for _, m in bag["/rths/events"])
    assert "escalating to 'SIGTERM'" not in text, text[-3000:]
    assert "the platform was ramped to its safe pose" in text, text[-3000:]
    assert not node_pids(str(out)), "node processes left behind"


def test_a_node_that_fails_while_it_is_built_ends_the_launch_at_once_naming_it(tmp_path):
    """No ABORT tells the others of a failure before START: the launch gives them the orderly stop of a Ctrl-C at
    once (they end by that SIGINT, not by the SIGTERM that ends a drain time's wait), and its last line names the
    failed node."""
    out = tmp_path / "run"
    code, text, wall = ros2_launch(["rths_ros", "rths.launch.py", "scenario:=contact_1d", f"out:={out}",
                                    "overrides:=loop.duration_s=1 faults.start_failure_node=ft_sensor"])
    lines = [ln for ln in text.splitlines() if ln.strip()]
    print(f"exit {code} after {wall:.1f} s; last line: {lines[-1]}")
    assert code != 0, text[-3000:]
    assert "ft_sensor failed before the run started; stopping" in text, text[-3000:]
    assert "run aborted: ft_sensor: process exited with code 1" in lines[-1], lines[-1]
    rec = read_events(out)
    assert rec["first_fault"]["node"] == "ft_sensor" and rec["exit_codes"]["ft_sensor"] == 1, rec
    others = {n: c for n, c in rec["exit_codes"].items() if n != "ft_sensor"}
    assert len(others) == 5 and all(c in (130, -2) for c in others.values()), rec["exit_codes"]
    assert "rths_analysis" not in text
    assert not node_pids(str(out)), "node processes left behind"
