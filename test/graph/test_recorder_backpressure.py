"""Lockstep flow control: a recorder that stalls (a slow disk, a starved process) costs wall time, never data.

The composed building benchmark produces samples faster than anything else here (4096 Hz, six loop topics).
Its recorder runs in a process of its own (``recording.in_process=never``: a composed lockstep run otherwise records
in the composed process, and freezing that would freeze the loop with it) and reads the loop over DDS.
The recorder is frozen (SIGSTOP) for 3 s in mid-run (5 s of the benchmark, 20480 steps: several seconds of wall time
on a 2-core machine): without flow control the writers' KEEP_ALL histories
fill up and a publish fails; with it (config/qos.yaml, lockstep ``ack_every_steps``) the fast path waits and
the bag holds every step exactly once."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.bag import read_bag
from rths_ros.runner import node_pids, wait_until_running

ROOT = Path(__file__).resolve().parents[2]


def test_a_frozen_recorder_loses_nothing(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "rths_ros.cli", "run", "benchmark_building", "--composed",
                             "--out", str(out), "--set", "loop.duration_s=5", "--set", "recording.in_process=never",
                             "--no-analyze"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(ROOT),
                            stdin=subprocess.DEVNULL)
    try:
        assert wait_until_running(out), "the run never started"
        time.sleep(0.5)
        pids = node_pids(str(out), "recorder")
        assert len(pids) == 1 and pids != node_pids(str(out), "stewart_platform"), "no recorder process of its own"
        os.kill(pids[0], signal.SIGSTOP)
        time.sleep(3.0)
        os.kill(pids[0], signal.SIGCONT)
        text, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, text
    cmds = read_bag(out / "bag", ["/rths/leg_command"])["/rths/leg_command"]
    ks = [int(m.step) for _, m in cmds]
    n = scn.load("benchmark_building", ["loop.duration_s=5"]).steps
    assert ks == list(range(1, n + 1)), (len(ks), ks[:3], ks[-3:])
