"""Real nodes in separate processes over DDS: the smoke scenario, determinism, isolation, teardown."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.bag import read_bag, read_scenario_yaml
from rths_ros.runner import node_pids, run_scenario, wait_until_running

ROOT = Path(__file__).resolve().parents[2]


def _pids_with(marker: str) -> list[int]:
    return node_pids(marker)


def test_smoke_run_exchanges_custom_messages_and_records_them(rths_cli, tmp_path):
    out = tmp_path / "s"
    p = rths_cli("run", "--no-plots", "smoke", "--out", str(out), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    topics = read_bag(out / "bag")
    cmds = topics["/rths/interface_command"]
    forces = topics["/rths/interface_force"]
    s = scn.load("smoke")
    # every step recorded exactly once, in order, by step index
    assert [int(m.step) for _, m in cmds] == list(range(s.steps + 1))
    assert [int(m.step) for _, m in forces] == list(range(1, s.steps + 2))
    # the listener's answer is its spring law applied to the talker's command of the previous step
    k = s.smoke.stiffness_n_per_m
    for (_, c), (_, f) in zip(cmds, forces):
        assert f.force[0] == pytest.approx(-k * c.position[0], rel=0, abs=1e-12)
    assert scn.from_data(__import__("yaml").safe_load(read_scenario_yaml(out / "bag"))) == s
    kinds = [m.type for _, m in topics["/rths/events"]]
    assert 1 in kinds and 8 in kinds and 6 in kinds  # START, DONE, STOP
    timing = {m.node for _, m in topics["/rths/timing"]}
    assert {"smoke_talker", "smoke_listener"} <= timing
    for node in ("smoke_talker", "smoke_listener", "recorder", "supervisor"):
        assert (out / "timing" / f"{node}.json").exists()


def test_lockstep_is_deterministic_and_composed_equals_processes(tmp_path):
    s = scn.load("smoke", ["loop.duration_s=0.3"])
    logs = []
    for i, composed in enumerate((False, False, True)):
        r = run_scenario(s, tmp_path / f"r{i}", composed=composed, progress=False)
        assert r.code == 0, r.message
        logs.append((tmp_path / f"r{i}" / "smoke_talker.csv").read_text())
    assert logs[0] == logs[1]          # two separate-process runs: identical, byte for byte
    assert logs[0] == logs[2]          # all nodes in one process: the same again
    data = np.loadtxt(tmp_path / "r0" / "smoke_talker.csv", delimiter=",")
    assert data.shape == (s.steps + 1, 3)
    assert np.any(data[:, 2] != 0.0)   # the loop really closed: forces came back


def test_two_simultaneous_runs_do_not_hear_each_other(tmp_path):
    a = scn.load("smoke", ["loop.duration_s=0.4", "smoke.amplitude_m=0.01"])
    b = scn.load("smoke", ["loop.duration_s=0.4", "smoke.amplitude_m=0.5"])
    results = {}

    def go(name, s):
        results[name] = run_scenario(s, tmp_path / name, progress=False)

    threads = [threading.Thread(target=go, args=(n, s)) for n, s in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert results["a"].code == 0 and results["b"].code == 0, (results["a"].message, results["b"].message)
    assert results["a"].domain_id != results["b"].domain_id
    for name, s in (("a", a), ("b", b)):
        cmds = read_bag(tmp_path / name / "bag")["/rths/interface_command"]
        assert len(cmds) == s.steps + 1            # nothing from the other run
        peak = max(abs(m.position[0]) for _, m in cmds)
        assert peak <= s.smoke.amplitude_m * 1.01 + 1e-3


def _start_long_smoke(out: Path) -> subprocess.Popen:
    """A 600 s smoke run in the background; returns once its nodes are running."""
    proc = subprocess.Popen([sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "smoke", "--out", str(out),
                             "--set", "loop.duration_s=600", "--no-analyze"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    if wait_until_running(out):
        return proc
    proc.kill()
    raise AssertionError("the run never started")


def test_killed_node_fails_the_run_fast_and_leaves_no_orphans(tmp_path):
    out = tmp_path / "kill"
    proc = _start_long_smoke(out)
    try:
        pids = [p for p in _pids_with(str(out)) if "smoke_listener" in
                (Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace"))]
        assert pids, "no smoke_listener process"
        victim = pids[0]
        t_kill = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=60)
        reaction = time.monotonic() - t_kill
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "smoke_listener" in stderr and "exited with code" in stderr
    assert reaction < 15.0
    time.sleep(0.5)
    assert _pids_with(str(out)) == []
    # the bag written up to the failure is readable
    assert read_bag(out / "bag")


def test_ctrl_c_stops_every_node(tmp_path):
    out = tmp_path / "int"
    proc = _start_long_smoke(out)
    try:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    time.sleep(0.5)
    assert _pids_with(str(out)) == []
    assert read_bag(out / "bag")["/rths/interface_command"]


def test_realtime_smoke_reports_loop_statistics(rths_cli, tmp_path):
    out = tmp_path / "rt"
    # the processes on the loop's path at SCHED_FIFO 5, the recorder and supervisor at normal scheduling
    p = rths_cli("run", "--no-plots", "smoke", "--mode", "realtime", "--out", str(out), "--set", "loop.duration_s=1.0",
                 "--set", "realtime.priority=5", "--set", "realtime.busy_wait_s=0", timeout=300)
    # completed, or incomplete (exit 3) when a step's message never came in time and the record has a gap there
    # (separate processes on a 2-core machine): never aborted
    assert p.returncode in (0, 3), p.stdout + p.stderr
    assert ("INCOMPLETE (" in p.stdout and "gaps: " in p.stdout) == (p.returncode == 3), p.stdout
    import json
    assert json.loads((out / "events.json").read_text())["status"] == "completed"
    t = json.loads((out / "timing" / "smoke_talker.json").read_text())
    assert t["mode"] == "realtime"
    assert t["steps"] >= 900
    assert 0.0005 < t["period_mean_s"] < 0.002       # a 1 kHz beat on the wall clock
    assert t["latency_p50_s"] > 0
    if subprocess.run(["chrt", "-f", "1", "true"], capture_output=True).returncode == 0:   # (SCHED_FIFO granted)
        setups = {n: json.loads((out / "timing" / f"{n}.json").read_text())["realtime_setup"]
                  for n in ("smoke_talker", "smoke_listener", "recorder", "supervisor")}
        assert [n for n, a in setups.items() if "SCHED_FIFO 5" in a] == ["smoke_talker", "smoke_listener"], setups


def test_emergency_stop_topic_aborts_the_run(tmp_path):
    import rclpy
    from std_msgs.msg import String

    from rths_ros.runner import DomainLease
    from rths_ros.runtime.qos import events_qos
    lease = DomainLease()
    domain = lease.domain_id
    s = scn.load("smoke", ["loop.duration_s=600"])
    result = {}
    t = threading.Thread(target=lambda: result.update(r=run_scenario(s, tmp_path / "e", progress=False,
                                                                     lease=lease)))
    t.start()
    assert wait_until_running(tmp_path / "e"), "the run never started"
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("operator", context=ctx)
    try:
        pub = node.create_publisher(String, "/rths/estop", events_qos())
        t_end = time.monotonic() + 20
        while pub.get_subscription_count() < 1 and time.monotonic() < t_end:
            time.sleep(0.05)
        t_stop = time.monotonic()
        pub.publish(String(data="operator pressed the button"))
        t.join(60)
        reaction = time.monotonic() - t_stop
    finally:
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    r = result["r"]
    assert r.code != 0
    assert "emergency stop: operator pressed the button" in r.message
    assert reaction < 15.0
    assert _pids_with(str(tmp_path / "e")) == []
    assert read_bag(tmp_path / "e" / "bag")["/rths/interface_command"]    # the bag is closed and readable
