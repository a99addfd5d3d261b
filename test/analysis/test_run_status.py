"""Run status: a run that did not complete is never reported as a complete, stable test.

The status comes from the run's events and the steps actually recorded (rths_ros.app.run_status); the analysis
computes its measures over the recorded steps only (rths_ros.analysis.status) and refuses a bag without loop
data.  The bags here are written by hand, message by message, so each case is exactly the one named.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rths_ros.analysis.run_analysis import analyze_bag, record_from_bag
from rths_ros.analysis.status import NoLoopData
from rths_ros.app import scenario as scn
from rths_ros.app.run_status import event_status, read_events, run_status, write_events
from rths_ros.app.vrths import run_virtual
from rths_ros.bag import SCENARIO_KEY, SCENARIO_TOPIC, BagWriter, string_msg
from rths_ros.msg import InterfaceCommand, InterfaceForce, InterfaceState
from rths_ros.msg import TestEvent as EventMsg


def _ev(kind, source="sim_plant", step=0, trial=0, reason=""):
    return {"type": kind, "source": source, "step": step, "trial": trial, "reason": reason}


def test_status_from_events_and_the_recorded_extent():
    done = [_ev("START", "supervisor"), _ev("DONE", step=1000), _ev("STOP", "supervisor", 1000)]
    assert run_status(done, 1, 1001, 1001).status == "completed"
    # the events say completed, but the record ends early or has gaps: incomplete
    assert run_status(done, 1, 1001, 900).status == "incomplete"
    assert run_status(done, 1, 1001, 1001, {"force": 3}).status == "incomplete"
    # realtime (best-effort): a few lost samples are counted, the run is still complete
    st = run_status(done, 1, 1001, 1001, {"force": 3}, lockstep=False)
    assert st.status == "completed" and st.missing_total == 3
    # no DONE of the last trial: incomplete even when the rows are there
    assert run_status([_ev("DONE", step=1000, trial=0)], 2, 2002, 2002).status == "incomplete"
    ab = [_ev("ABORT", "ft_sensor", 1500, reason="ft_sensor: non-finite wrench[0] = nan at step 1500"),
          _ev("ABORT", "sim_plant", 1501, reason="sim_plant: later"), _ev("SAFE", step=2000)]
    st = run_status(ab, 1, 4001, 1500)
    assert st.status == "aborted"
    assert st.first_fault == {"node": "ft_sensor", "step": 1500, "reason": "non-finite wrench[0] = nan at step 1500"}
    assert "ABORTED (1500 of 4001 steps recorded); first fault: ft_sensor at step 1500" in st.summary()
    intr = [_ev("ABORT", "supervisor", 700, reason="interrupted by SIGINT (operator stop)")]
    assert event_status(intr, 1) == "interrupted"
    # what the runner recorded (a node that died without an ABORT) overrides a silent event log
    st = run_status([], 1, 1001, 400, recorded_status="aborted",
                    first_fault={"node": "recorder", "step": -1, "reason": "process killed by SIGKILL"})
    assert st.status == "aborted" and st.first_fault["node"] == "recorder"


def test_events_file_round_trip_and_the_older_list_layout(tmp_path):
    write_events(tmp_path, {"status": "aborted", "first_fault": None, "events": [_ev("ABORT", reason="x")]})
    rec = read_events(tmp_path)
    assert rec["status"] == "aborted" and rec["events"][0]["reason"] == "x"
    (tmp_path / "events.json").write_text(json.dumps([_ev("ABORT", "stewart_platform", 5, reason="y")]))
    assert read_events(tmp_path)["first_fault"] == {"node": "stewart_platform", "step": 5, "reason": "y"}
    assert read_events(tmp_path / "nowhere") == {"status": None, "first_fault": None, "events": []}


def _write_bag(path: Path, s: scn.Scenario, rec: dict | None, last_step: int, events: list[tuple]) -> None:
    """A bag as the recorder writes it: the scenario, the loop topics for steps 0..last_step, the events."""
    from rclpy.serialization import serialize_message
    w = BagWriter(path, "mcap")
    for topic, typ in (("/rths/interface_command", "rths_ros/msg/InterfaceCommand"),
                       ("/rths/interface_state", "rths_ros/msg/InterfaceState"),
                       ("/rths/interface_force", "rths_ros/msg/InterfaceForce"), ("/rths/events", "rths_ros/msg/TestEvent")):
        w.add_topic(topic, typ)
    text = scn.dump(s)
    w.set_custom_data(SCENARIO_KEY, text)
    w.write_msg(SCENARIO_TOPIC, "std_msgs/msg/String", 1, string_msg(text))
    t = 10
    for k in range(last_step + 1 if rec is not None else 0):
        c, st, f = InterfaceCommand(), InterfaceState(), InterfaceForce()
        c.step = st.step = f.step = k
        c.position, c.velocity = [float(rec["z_cmd"][k])], [float(rec["zdot_cmd"][k])]
        st.position, st.velocity = [float(rec["z_ach"][k])], [float(rec["zdot_ach"][k])]
        f.force, f.measured, f.contact = [float(rec["f_int"][k])], [float(rec["f_meas"][k])], bool(rec["contact"][k])
        for topic, m in (("/rths/interface_command", c), ("/rths/interface_state", st),
                         ("/rths/interface_force", f)):
            w.write_raw(topic, t, serialize_message(m))
            t += 1
    for kind, source, step, reason in events:
        e = EventMsg()
        e.type, e.source, e.step, e.reason = kind, source, step, reason
        w.write_raw("/rths/events", t, serialize_message(e))
        t += 1
    w.close()


@pytest.fixture(scope="module")
def short_run():
    s = scn.load("contact_1d", ["loop.duration_s=1.0"])
    return s, run_virtual(s)


def test_a_cut_off_record_is_analysed_over_its_recorded_steps_only(tmp_path, short_run):
    """A bag that ends at step 299 of 1000 without DONE (the recorder was killed): 300 rows, not 1001 rows of held
    samples; status incomplete; never "stable: true"."""
    s, rec = short_run
    _write_bag(tmp_path / "bag", s, rec, 299, [])
    r, _, _ = record_from_bag(tmp_path / "bag")
    assert r["k"].size == 300
    assert r["run_status"].status == "incomplete" and r["run_status"].steps_expected == s.steps + 1
    res = analyze_bag(tmp_path / "bag", tmp_path / "out")
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["status"] == "incomplete" and m["steps_recorded"] == 300 and m["n_steps"] == 300
    assert m["stable"] is None and m["stability_reason"].startswith("not judged: the run is incomplete")
    assert res["lines"][0].startswith("run status: INCOMPLETE (300 of 1001 steps recorded)")
    assert "INCOMPLETE" in (tmp_path / "out" / "report.md").read_text()


def test_a_complete_record_is_completed(tmp_path, short_run):
    s, rec = short_run
    _write_bag(tmp_path / "bag", s, rec, s.steps, [(EventMsg.DONE, "sim_plant", s.steps, ""),
                                                   (EventMsg.STOP, "supervisor", s.steps, "")])
    res = analyze_bag(tmp_path / "bag", tmp_path / "out")
    m = res["metrics"]
    assert m["status"] == "completed" and m["steps_recorded"] == s.steps + 1 and m["missing_samples_total"] == 0
    assert m["stable"] is True


def test_an_aborted_record_names_the_first_fault(tmp_path, short_run, rths_cli):
    s, rec = short_run
    _write_bag(tmp_path / "bag", s, rec, 499, [(EventMsg.ABORT, "stewart_platform", 500,
                                                "stewart_platform: leg 3 beyond its stroke at step 500"),
                                               (EventMsg.SAFE, "sim_plant", 800, "safe pose reached")])
    p = rths_cli("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "out"))
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "run status: ABORTED (500 of 1001 steps recorded); first fault: stewart_platform at step 500: leg 3" \
        in p.stdout
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["status"] == "aborted" and m["stable"] is False
    assert m["first_fault"] == {"node": "stewart_platform", "step": 500, "reason": "leg 3 beyond its stroke at step 500"}
    assert "first fault: stewart_platform at step 500" in (tmp_path / "out" / "report.md").read_text()
    assert rths_cli("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "out2"), "--partial").returncode == 0


def test_a_bag_without_loop_data_is_an_error_not_a_metrics_file(tmp_path, short_run, rths_cli):
    s, _ = short_run
    _write_bag(tmp_path / "bag", s, None, -1, [(EventMsg.ABORT, "sim_plant", 0, "sim_plant: plant died")])
    with pytest.raises(NoLoopData, match="no loop data"):
        analyze_bag(tmp_path / "bag", tmp_path / "out")
    p = rths_cli("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "out"))
    assert p.returncode == 1
    assert "no loop data" in p.stderr and "first fault: sim_plant at step 0: plant died" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "metrics.json").exists()
