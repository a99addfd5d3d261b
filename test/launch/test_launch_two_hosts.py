"""One run over two computers, as a lab starts it: `ros2 launch rths_ros rths.launch.py side:=rig` on the rig's
computer and `side:=numerical` on the numerical one, the same scenario and ROS domain, the other host as the only
static peer.  Here the two computers are two network namespaces joined by an emulated link (0.2 +- 0.1 ms, UDP
only; rths_ros.runtime.two_hosts): the lockstep run completes on both sides and its bag equals a one-host run's."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from launch_checks import SKIP_REASON

from rths_ros.runtime.two_hosts import Link, TwoHosts, available

if SKIP_REASON:
    pytest.skip(SKIP_REASON, allow_module_level=True)
OK, WHY = available()
if not OK:
    pytest.skip(f"two hosts on one machine: {WHY}", allow_module_level=True)

from rths_ros.launch_support import RIG_HOST_NODES
from rths_ros.runner import DomainLease
from rths_ros.stress import compare, loop_arrays

OVERRIDES = "loop.duration_s=1.0"


def test_a_run_launched_on_two_hosts_equals_the_one_host_run(tmp_path):
    from conftest import rths
    solo = tmp_path / "solo"
    p = rths("run", "--no-analyze", "contact_1d", "--set", OVERRIDES, "--out", str(solo), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    lease = DomainLease()
    procs = {}
    try:
        with TwoHosts(Link(delay_ms=0.2, jitter_ms=0.1), RIG_HOST_NODES, tmp_path / "link.json") as hosts:
            for side in ("rig", "numerical"):
                env = {k: v for k, v in hosts.env(side).items() if k != "RTHS_NETNS"}
                env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id), **env)
                cmd = ["ip", "netns", "exec", hosts.names[side], str(Path(sys.prefix) / "bin" / "ros2"), "launch",
                       "rths_ros", "rths.launch.py", "scenario:=contact_1d", f"overrides:={OVERRIDES}",
                       f"side:={side}", f"out:={tmp_path / side}"]
                procs[side] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                               stdin=subprocess.DEVNULL, start_new_session=True)
            texts = {}
            for side, proc in procs.items():
                try:
                    out, _ = proc.communicate(timeout=240)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    out, _ = proc.communicate()
                texts[side] = out.decode(errors="replace")
    finally:
        lease.close()
    for side, proc in procs.items():
        assert proc.returncode == 0, (side, texts[side][-4000:])
    rig, num = texts["rig"], texts["numerical"]
    assert "3 nodes on the rig host" in rig and "on the numerical host" in num, (rig[:600], num[:600])
    assert "run finished" in rig and "nothing recorded" in rig
    assert "metrics.json, report.md and plots written" in num
    assert not (tmp_path / "rig" / "bag").exists()
    diff = compare(loop_arrays(solo / "bag"), loop_arrays(tmp_path / "numerical" / "bag"))
    assert diff == {}, diff
    stats = json.loads((tmp_path / "link.json").read_text())
    assert all(d["forwarded"] > 1000 for d in stats["directions"]), stats
