"""Two rigs in one ROS domain: a lab's launch file (two_rigs.launch.py) includes rths.launch.py twice, under
PushRosNamespace('rig_a') and ('rig_b'), with different run directories, started with `ros2 launch` as a user
does.  Each rig's topics, events and supervisor resolve under its namespace, so:

* both complete (rig A as separate processes, its loop over DDS; rig B composed), each with the physics metrics
  of a solo `rths run` of the same scenario, bit for bit, and a bag that holds every step of every loop topic
  (completed, no gap);
* each run's events are its own (as many as a solo run's: one READY per node, one START, one STOP);
* a rig that aborts does not touch the other: the other still completes with the solo metrics, its last line is
  its own "run finished", and the launch exits non-zero naming the failed rig (composed processes this time).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from launch_checks import SKIP_REASON, physics, ros2_launch

if SKIP_REASON:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from rths_ros.app.run_status import read_events

LAUNCH_FILE = Path(__file__).with_name("two_rigs.launch.py")
OVERRIDES = "loop.duration_s=1.0"


def _launch(args: list[str], timeout_s: float = 300.0) -> tuple[int, str]:
    code, text, _ = ros2_launch([str(LAUNCH_FILE), *args], timeout_s)
    return code, text


@pytest.fixture(scope="module")
def solo(tmp_path_factory):
    """metrics.json and events of a solo `rths run` of the same scenario."""
    from conftest import rths
    out = tmp_path_factory.mktemp("solo") / "run"
    p = rths("run", "--no-plots", "contact_1d", "--set", OVERRIDES, "--out", str(out), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads((out / "metrics.json").read_text()), read_events(out)["events"]


def _assert_like_solo(out: Path, solo) -> None:
    metrics, events = solo
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "completed" and m["step_gaps_total"] == 0, m["run_status"]
    mine, ref = physics(m), physics(metrics)
    diff = [k for k in ref if mine.get(k) != ref[k]]
    assert not diff, {k: (mine.get(k), ref[k]) for k in diff}
    ev = read_events(out)["events"]
    types = [e["type"] for e in ev]
    assert types.count("START") == 1 and types.count("STOP") == 1, types
    assert sorted(e["source"] for e in ev if e["type"] == "READY") == \
        sorted(e["source"] for e in events if e["type"] == "READY")
    assert len(ev) == len(events), (len(ev), len(events))


def test_two_namespaced_rigs_in_one_domain_both_complete_like_solo_runs(tmp_path, solo):
    a, b = tmp_path / "a", tmp_path / "b"
    code, text = _launch([f"out_a:={a}", f"out_b:={b}", "composed_b:=true", f"overrides_a:={OVERRIDES}",
                          f"overrides_b:={OVERRIDES}"])
    assert code == 0, text[-4000:]
    for out in (a, b):
        _assert_like_solo(out, solo)
    assert "rejected" not in text, [ln for ln in text.splitlines() if "rejected" in ln][:5]
    assert "which this run does not start" not in text        # no READY of the other rig reached a supervisor
    for ns, out in (("/rig_a", a), ("/rig_b", b)):
        assert f"[INFO] [rths {ns}]: run finished" in text and str(out) in text


def test_one_rig_aborting_leaves_the_other_complete_with_its_own_last_line(tmp_path, solo):
    a, b = tmp_path / "a", tmp_path / "b"
    t0 = time.monotonic()
    code, text = _launch([f"out_a:={a}", f"out_b:={b}", "composed_a:=true", "composed_b:=true",
                          f"overrides_a:={OVERRIDES} safety.interface_limit_m=0.0001", f"overrides_b:={OVERRIDES}"])
    print(f"two composed rigs, one aborting: exit {code} after {time.monotonic() - t0:.1f} s")
    assert code != 0, text[-4000:]
    assert read_events(a)["status"] == "aborted"
    _assert_like_solo(b, solo)
    b_lines = [ln for ln in text.splitlines() if "[rths /rig_b]" in ln or "rths /rig_b:" in ln]
    assert b_lines and "run finished" in b_lines[-1], b_lines[-3:]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert "rths /rig_a: FAILED: run aborted" in lines[-1] and "rig_b" not in lines[-1], lines[-1]
