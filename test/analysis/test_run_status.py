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
from rths_ros.app.run_status import event_status, read_events, run_status, step_gaps, write_events
from rths_ros.app.vrths import run_virtual
from rths_ros.bag import SCENARIO_KEY, SCENARIO_TOPIC, BagWriter, string_msg
from rths_ros.msg import InterfaceCommand, InterfaceForce, InterfaceState, LegCommand, LegState, RawWrench
from rths_ros.msg import TestEvent as EventMsg


def _ev(kind, source="sim_plant", step=0, trial=0, reason=""):
    return {"type": kind, "source": source, "step": step, "trial": trial, "reason": reason}


def test_status_from_events_and_the_recorded_extent():
    done = [_ev("START", "supervisor"), _ev("DONE", step=1000), _ev("STOP", "supervisor", 1000)]
    assert run_status(done, 1, 1001, 1001).status == "completed"
    # the events say completed, but the record ends early or has gaps: incomplete
    assert run_status(done, 1, 1001, 900).status == "incomplete"
    assert run_status(done, 1, 1001, 1001, {"force": 3}).status == "incomplete"
    # realtime (best-effort): samples held inside the record are counted; whether the run is complete is told by
    # the steps each loop topic holds (the gaps), in either mode
    st = run_status(done, 1, 1001, 1001, {"force": 3}, lockstep=False)
    assert st.status == "completed" and st.missing_total == 3
    gap = {"/rths/interface_force": step_gaps([k for k in range(1001) if k not in (5, 6, 7)], 1, 1001)}
    st = run_status(done, 1, 1001, 1001, {"force": 3}, lockstep=False, gaps=gap)
    assert st.status == "incomplete" and st.gap_total == 3
    assert "gaps: /rths/interface_force: 3 steps missing (middle 3: steps 5-7)" in st.summary()
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


def test_step_gaps_counts_the_missing_steps_at_the_start_in_the_middle_and_at_the_end():
    g = step_gaps([*range(13, 500), *range(550, 990)], 1, 1001)
    assert (g["expected"], g["recorded"], g["missing"]) == (1001, 927, 74)
    assert (g["start"], g["middle"], g["end"]) == (13, 50, 11)
    assert g["ranges"] == [[0, 12], [500, 549], [990, 1000]]
    # two trials of 11 steps; the topic carries steps 1..10 of each (a leg command): trial 1's first step (11) is
    # not a gap, and the missing end of trial 0 and start of trial 1 are one range
    g = step_gaps([*range(1, 9), *range(13, 22)], 2, 11, first=1)
    assert g["expected"] == 20 and g["missing"] == 3 and (g["start"], g["middle"], g["end"]) == (0, 3, 0)
    assert g["ranges"] == [[9, 12]]
    # nothing recorded: every step is missing; a record that ends at step 600 (an abort) names the gaps before it
    assert step_gaps([], 1, 100)["start"] == 100
    g = step_gaps([*range(0, 300), *range(310, 600)], 1, 1001, record_end=600)
    assert g["after_record"] == 401 and g["ranges"] == [[300, 309]]
    # steps outside the run (the ramp to the safe pose after an abort keeps counting) are not "recorded" steps
    assert step_gaps(range(0, 1200), 1, 1001)["missing"] == 0


def test_events_file_round_trip_and_the_older_list_layout(tmp_path):
    write_events(tmp_path, {"status": "aborted", "first_fault": None, "events": [_ev("ABORT", reason="x")]})
    rec = read_events(tmp_path)
    assert rec["status"] == "aborted" and rec["events"][0]["reason"] == "x"
    (tmp_path / "events.json").write_text(json.dumps([_ev("ABORT", "stewart_platform", 5, reason="y")]))
    assert read_events(tmp_path)["first_fault"] == {"node": "stewart_platform", "step": 5, "reason": "y"}
    assert read_events(tmp_path / "nowhere") == {"status": None, "first_fault": None, "events": []}


LOOP_TYPES = {"/rths/interface_command": "rths_ros/msg/InterfaceCommand",
              "/rths/interface_state": "rths_ros/msg/InterfaceState",
              "/rths/interface_force": "rths_ros/msg/InterfaceForce", "/rths/leg_command": "rths_ros/msg/LegCommand",
              "/rths/leg_state": "rths_ros/msg/LegState", "/rths/raw_wrench": "rths_ros/msg/RawWrench"}


def _loop_messages(rec: dict, k: int) -> dict:
    """The six loop messages of step k of an in-process record, as the nodes publish them."""
    c, st, f = InterfaceCommand(), InterfaceState(), InterfaceForce()
    lc, ls, rw = LegCommand(), LegState(), RawWrench()
    c.step = st.step = f.step = lc.step = ls.step = rw.step = k
    c.position, c.velocity = [float(rec["z_cmd"][k])], [float(rec["zdot_cmd"][k])]
    st.position, st.velocity = [float(rec["z_ach"][k])], [float(rec["zdot_ach"][k])]
    f.force, f.measured, f.contact = [float(rec["f_int"][k])], [float(rec["f_meas"][k])], bool(rec["contact"][k])
    lc.length, lc.feedforward_velocity = [float(v) for v in rec["b_cmd"][k]], [float(v) for v in rec["ff_velocity"][k]]
    ls.length, ls.velocity = [float(v) for v in rec["b_meas"][k]], [float(v) for v in rec["bdot_meas"][k]]
    ls.current = [float(v) for v in rec["current"][k]]
    w = [float(v) for v in rec["wrench"][k]]
    rw.wrench.force.x, rw.wrench.force.y, rw.wrench.force.z = w[:3]
    rw.wrench.torque.x, rw.wrench.torque.y, rw.wrench.torque.z = w[3:]
    return {"/rths/interface_command": c, "/rths/interface_state": st, "/rths/interface_force": f,
            "/rths/leg_command": lc, "/rths/leg_state": ls, "/rths/raw_wrench": rw}


def _write_bag(path: Path, s: scn.Scenario, rec: dict | None, last_step: int, events: list[tuple],
               drop: dict | None = None) -> None:
    """A bag as the recorder writes it: the scenario, the six loop topics for steps 0..last_step (no leg command
    for step 0, as on the rig), the events; ``drop``: {topic: steps left out}."""
    from rclpy.serialization import serialize_message
    w = BagWriter(path, "mcap")
    for topic, typ in (*LOOP_TYPES.items(), ("/rths/events", "rths_ros/msg/TestEvent")):
        w.add_topic(topic, typ)
    text = scn.dump(s)
    w.set_custom_data(SCENARIO_KEY, text)
    w.write_msg(SCENARIO_TOPIC, "std_msgs/msg/String", 1, string_msg(text))
    t = 10
    drop = drop or {}
    for k in range(last_step + 1 if rec is not None else 0):
        for topic, m in _loop_messages(rec, k).items():
            if (topic == "/rths/leg_command" and k == 0) or k in drop.get(topic, ()):
                continue
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


def test_an_aborted_record_names_the_first_fault(tmp_path, short_run, rths_local):
    s, rec = short_run
    _write_bag(tmp_path / "bag", s, rec, 499, [(EventMsg.ABORT, "stewart_platform", 500,
                                                "stewart_platform: leg 3 beyond its stroke at step 500"),
                                               (EventMsg.SAFE, "sim_plant", 800, "safe pose reached")])
    p = rths_local("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "out"))
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert "run status: ABORTED (500 of 1001 steps recorded); first fault: stewart_platform at step 500: leg 3" \
        in p.stdout
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["status"] == "aborted" and m["stable"] is False
    assert m["first_fault"] == {"node": "stewart_platform", "step": 500, "reason": "leg 3 beyond its stroke at step 500"}
    assert "first fault: stewart_platform at step 500" in (tmp_path / "out" / "report.md").read_text()
    assert rths_local("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "out2"), "--partial").returncode == 0


def test_a_bag_without_loop_data_is_an_error_not_a_metrics_file(tmp_path, short_run, rths_local):
    s, _ = short_run
    _write_bag(tmp_path / "bag", s, None, -1, [(EventMsg.ABORT, "sim_plant", 0, "sim_plant: plant died")])
    with pytest.raises(NoLoopData, match="no loop data"):
        analyze_bag(tmp_path / "bag", tmp_path / "out")
    p = rths_local("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "out"))
    assert p.returncode == 1
    assert "no loop data" in p.stderr and "first fault: sim_plant at step 0: plant died" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "metrics.json").exists()


GAP_CASES = {
    # the recorder joined late: the first 13 commands are not in the bag (what a second rig in the same domain did)
    "start": ("/rths/interface_command", range(0, 13), "start 13: steps 0-12"),
    # a block lost in the middle of the run
    "middle": ("/rths/leg_state", range(500, 550), "middle 50: steps 500-549"),
    # the last steps of one topic (the record itself runs to the end: the force is there)
    "end": ("/rths/interface_state", range(991, 1001), "end 10: steps 991-1000"),
}


@pytest.mark.parametrize("case", sorted(GAP_CASES))
def test_a_loop_topic_missing_steps_makes_the_run_incomplete_and_is_counted_where(tmp_path, short_run, rths_local,
                                                                                   case):
    """Completed means every loop topic holds every step of every trial: a bag missing the first steps, a middle
    block or the last steps of one topic (the run itself reported DONE) is incomplete, and the gap is counted per
    topic with where it lies, in metrics.json, the report and the status line; rths analyze exits 3 (0 with
    --partial)."""
    s, rec = short_run
    topic, steps, where = GAP_CASES[case]
    _write_bag(tmp_path / "bag", s, rec, s.steps, [(EventMsg.DONE, "sim_plant", s.steps, ""),
                                                   (EventMsg.STOP, "supervisor", s.steps, "")],
               drop={topic: set(steps)})
    p = rths_local("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "out"))
    assert p.returncode == 3, (p.stdout, p.stderr)
    first = p.stdout.splitlines()[0]
    assert first.startswith("run status: INCOMPLETE (1001 of 1001 steps recorded"), first
    assert f"gaps: {topic}: {len(steps)} steps missing ({where})" in first, first
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert m["status"] == "incomplete" and m["stable"] is None
    assert m["step_gaps_total"] == len(steps)
    g = m["step_gaps"][topic]
    assert g["missing"] == len(steps) and g[case] == len(steps)
    assert all(v["missing"] == 0 for t, v in m["step_gaps"].items() if t != topic)
    assert sorted(m["step_gaps"]) == sorted(LOOP_TYPES)
    assert where in (tmp_path / "out" / "report.md").read_text()
    assert rths_local("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "o2"), "--partial").returncode == 0


def test_a_loop_topic_absent_from_the_bag_is_a_gap_of_every_step(tmp_path, short_run):
    """A topic whose producer the scenario runs but of which the bag holds nothing (its recorder subscription never
    matched) misses every step."""
    s, rec = short_run
    _write_bag(tmp_path / "bag", s, rec, s.steps, [(EventMsg.DONE, "sim_plant", s.steps, "")],
               drop={"/rths/raw_wrench": set(range(s.steps + 1))})
    st = record_from_bag(tmp_path / "bag")[0]["run_status"]
    assert st.status == "incomplete" and st.gaps["/rths/raw_wrench"]["missing"] == s.steps + 1


def test_no_plots_writes_the_same_metrics_and_says_the_figures_were_not_drawn(tmp_path, short_run, rths_local):
    """`rths analyze --no-plots`: the same metrics.json, a report that says the figures were not drawn, no figure
    files, and the summary line says so too."""
    s, rec = short_run
    _write_bag(tmp_path / "bag", s, rec, s.steps, [(EventMsg.DONE, "sim_plant", s.steps, ""),
                                                   (EventMsg.STOP, "supervisor", s.steps, "")])
    with_plots = rths_local("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "with"))
    without = rths_local("analyze", str(tmp_path / "bag"), "--out", str(tmp_path / "without"), "--no-plots")
    assert with_plots.returncode == without.returncode == 0, (with_plots.stderr, without.stderr)
    assert (json.loads((tmp_path / "with" / "metrics.json").read_text())
            == json.loads((tmp_path / "without" / "metrics.json").read_text()))
    assert list((tmp_path / "with").glob("*.png")) and not list((tmp_path / "without").glob("*.png"))
    assert "Figures not drawn (--no-plots)." in (tmp_path / "without" / "report.md").read_text()
    assert "plots  : not drawn (--no-plots)" in without.stdout
    assert "plots  : displacement.png" in with_plots.stdout
