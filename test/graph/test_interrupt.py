"""An operator's Ctrl-C: the run ends as "interrupted", with the platform ramped to its safe pose first.

``rths run`` gets SIGINT; the nodes get exactly one SIGINT from it, the plant sends ABORT "interrupted by
SIGINT", the plant ramps to the safe pose and reports SAFE (in events.json and in the bag), every node ends by
itself, the run exits 130, and the analysis says "interrupted" (``rths analyze`` exits 3 unless --partial).
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import read_events
from rths_ros.bag import read_bag
from rths_ros.core.platform.safety import safe_pose_lengths
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.msg import TestEvent as EventMsg
from rths_ros.runner import wait_until_running

ROOT = Path(__file__).resolve().parents[2]


def _wait_for_steps(out: Path, steps: int, timeout_s: float) -> bool:
    import time
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            nodes = json.loads((out / "progress.json").read_text()).get("nodes", {})
        except (OSError, ValueError):
            nodes = {}
        if nodes and max(nodes.values()) >= steps:
            return True
        time.sleep(0.05)
    return False


def _interrupted_run(tmp_path: Path, sig: int) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d", "--out", str(out),
                          "--set", "loop.duration_s=600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    try:
        assert wait_until_running(out, 120.0), "the run never started"
        # interrupt mid-run: once the loop has stepped well past the start (the speed of the machine varies)
        assert _wait_for_steps(out, 1000, 120.0), "the run made no progress"
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    return subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr), out


def test_ctrl_c_ramps_the_platform_to_the_safe_pose_and_the_run_is_reported_interrupted(tmp_path, rths_local):
    p, out = _interrupted_run(tmp_path, signal.SIGINT)
    assert p.returncode == 130, (p.stdout, p.stderr)
    assert "interrupted by SIGINT; the platform was ramped to its safe pose (SAFE from sim_plant" in p.stderr, p.stderr
    rec = read_events(out)
    assert rec["status"] == "interrupted"
    assert rec["first_fault"]["node"] == "sim_plant"          # the plant sends the ABORT, at its exact step
    assert rec["first_fault"]["reason"].startswith("interrupted by SIGINT")
    kinds = [(e["type"], e["source"]) for e in rec["events"]]
    assert kinds.index(("SAFE", "sim_plant")) > kinds.index(("ABORT", "sim_plant"))
    # every node ended by itself (the abort's exit code 3), none was killed
    assert set(rec["exit_codes"].values()) <= {3}, rec["exit_codes"]
    # the bag shows it: the SAFE event and the plant's last leg lengths on the safe pose
    topics = read_bag(out / "bag")
    assert any(m.type == EventMsg.SAFE for _, m in topics["/rths/events"])
    s = scn.load("contact_1d", ["loop.duration_s=600"])
    safe = safe_pose_lengths(StewartKinematics(s.platform.geometry), s.safety.safe_retract_m)
    last = np.array(topics["/rths/leg_state"][-1][1].length)
    assert np.max(np.abs(last - safe)) < 1e-3, (last, safe)
    # the analysis run after it says what happened and never calls the run stable
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "interrupted" and m["complete"] is False
    assert 500 < m["steps_recorded"] < m["steps_expected"] == s.loop.trials * (s.steps + 1)
    assert m["stable"] is not True
    assert "INTERRUPTED" in (out / "report.md").read_text()
    # rths analyze (called in this process): non-zero for the partial run unless --partial
    a = rths_local("analyze", str(out), "--out", str(tmp_path / "a"))
    assert a.returncode == 3, (a.stdout, a.stderr)
    assert "run status: INTERRUPTED" in a.stdout and "--partial" in a.stderr
    b = rths_local("analyze", str(out), "--out", str(tmp_path / "b"), "--partial")
    assert b.returncode == 0, b.stderr
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["status"] == "interrupted"


def test_sigterm_to_the_runner_stops_the_run_the_same_way(tmp_path):
    p, out = _interrupted_run(tmp_path, signal.SIGTERM)
    assert p.returncode == 143, (p.stdout, p.stderr)
    rec = read_events(out)
    assert rec["status"] == "interrupted"
    assert any(e["type"] == "SAFE" and e["source"] == "sim_plant" for e in rec["events"])
