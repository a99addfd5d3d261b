"""Nothing foreign reaches the platform: a node on the run's ROS domain that is not one of the run's producers
publishes on every loop topic.  The publisher check drops its samples; with ``safety.mark_filter`` those without
the run's mark (header.frame_id, rths_ros.runtime.guard.run_mark) are dropped by the readers' DDS content filter
before any Python runs, and only samples that copy the mark meet the publisher check, which drops and counts them (``foreign_messages`` in OUT/timing/<node>.json, per topic under
``guard``).  Either way every reader reports each foreign publisher once on /rths/events (a REJECTED event,
"rejected ..."; the filtered ones found in the ROS graph), and the recorder keeps them out of the bag.  The foreign
samples carry NaN: one that got through would abort the run.  An impostor under a producer's name before START
stops the run before it starts.  The emergency stop stays open to anyone.

Where rclpy hands no publisher with a sample (rclpy 7 of Jazzy: ``SAMPLE_PUBLISHER`` false, docs/ros2.md "Jazzy
and Kilted") a foreign publisher of a loop topic cannot be told apart from the run's producer: the same tests check
that it then keeps the run from starting, or aborts it to the safe pose, naming the publisher."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest
import rclpy
from graph_equivalence import assert_graph_matches_virtual
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String
from test_safety import _assert_safe, _events, _start

from rths_ros.app import scenario as scn
from rths_ros.bag import read_bag
from rths_ros.launch_support import check_node_set, content_filter_available
from rths_ros.msg import (
    AdaptiveFilter,
    InterfaceCommand,
    InterfaceForce,
    InterfaceState,
    LegCommand,
    LegState,
    PassivityState,
    RawWrench,
)
from rths_ros.msg import TestEvent as Event
from rths_ros.nodes.smoke_listener import SmokeListener
from rths_ros.params import ParameterError
from rths_ros.runner import DomainLease, run_scenario
from rths_ros.runtime.guard import GUARD_EVENT, SAMPLE_PUBLISHER, run_mark
from rths_ros.runtime.qos import control_qos, events_qos
from rths_ros.runtime.topics import TOPICS

LOOP_TOPICS = [t.name for t in TOPICS if t.kind == "control"]
TYPES = {"/rths/leg_command": LegCommand, "/rths/leg_state": LegState, "/rths/raw_wrench": RawWrench,
         "/rths/interface_force": InterfaceForce, "/rths/interface_command": InterfaceCommand,
         "/rths/interface_state": InterfaceState, "/rths/passivity": PassivityState,
         "/rths/aff_coefficients": AdaptiveFilter}
NAN = float("nan")
#: the reason a node gives where samples come without their publisher (rths_ros.runtime.guard.LoopGuard._report)
UNATTRIBUTABLE = "cannot be told from those of the run's producer"


def _hostile(topic: str, k: int, frame_id: str = "intruder"):
    """A loop message that would abort the run (NaN) if a node took it; ``frame_id``: "intruder" (without the
    run's mark: the content filter drops it), or the run's mark (a copy of the run's messages)."""
    m = TYPES[topic]()
    m.header.frame_id = frame_id
    m.step = k
    if topic in ("/rths/leg_command", "/rths/leg_state"):
        m.length = [NAN] * 6
    elif topic == "/rths/raw_wrench":
        m.wrench.force.z = NAN
    elif topic == "/rths/interface_force":
        m.force, m.measured = [NAN], [NAN]
    elif topic in ("/rths/interface_command", "/rths/interface_state"):
        m.position, m.velocity = [NAN], [NAN]
    elif topic == "/rths/passivity":
        m.damping_force = NAN
    else:
        m.n_legs, m.n_coefficients, m.coefficients = 6, 1, [NAN] * 6
    return m


def _context(domain: int):
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    return ctx


def _spin_until(ex, cond, timeout_s: float) -> bool:
    t_end = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < t_end:
        ex.spin_once(timeout_sec=0.02)
    return cond()


def _start_event() -> Event:
    e = Event()
    e.type, e.source = Event.START, "supervisor"
    return e


# ------------------------------------------------------------------------------------------------
# one node in process, both executors


@pytest.mark.parametrize("executor", ["events", "single_threaded"])
def test_a_node_takes_a_loop_topic_only_from_the_runs_producer(executor):
    """smoke_listener reads /rths/interface_command from smoke_talker.  An intruder that copies the run's mark
    publishes the same steps first, with NaN: its samples pass the content filter and are dropped by the publisher
    check before the validation (no abort), counted and reported once; the talker's all arrive.  Both of rclpy's
    executors hand the publisher gid over (the EventsExecutor of rclpy 9 as one tuple)."""
    lease = DomainLease()
    ctx = _context(lease.domain_id)
    s = scn.load("smoke", [f"realtime.executor={executor}"])
    node = SmokeListener(s, None, context=ctx)
    talker = rclpy.create_node("smoke_talker", context=ctx)
    intruder = rclpy.create_node("intruder", context=ctx)
    watcher = rclpy.create_node("watcher", context=ctx)
    events: list = []
    watcher.create_subscription(Event, "/rths/events", events.append, events_qos())
    own = talker.create_publisher(InterfaceCommand, "/rths/interface_command", node.cq.profile)
    bad = intruder.create_publisher(InterfaceCommand, "/rths/interface_command", node.cq.profile)
    if executor == "events":
        from rclpy.experimental import EventsExecutor
        ex = EventsExecutor(context=ctx)
    else:
        ex = SingleThreadedExecutor(context=ctx)
    for n in (node, talker, intruder, watcher):
        ex.add_node(n)
    try:
        assert _spin_until(ex, lambda: own.get_subscription_count() >= 1 and bad.get_subscription_count() >= 1
                           and (node.guard.ready() or node.abort_reason), 20)   # what the node waits for: READY
        if not SAMPLE_PUBLISHER:        # the intruder is in the graph before READY: the run does not start
            assert "/rths/interface_command has a publisher that is not the run's: /intruder" in node.abort_reason
            assert f"{UNATTRIBUTABLE} (smoke_talker)" in node.abort_reason and node.abort_reason.endswith(
                "does not start"), node.abort_reason
            bad.publish(_hostile("/rths/interface_command", 1, run_mark(s)))
            _spin_until(ex, lambda: node.timing.foreign_messages >= 1, 5)
            assert node.timing.steps == 0 and node.timing.invalid_messages == 0
            return
        node._on_event(_start_event())               # START: the run's producers are taken from the graph
        for k in range(1, 21):
            bad.publish(_hostile("/rths/interface_command", k, run_mark(s)))
            m = InterfaceCommand()
            m.header.frame_id = run_mark(s)
            m.step, m.position, m.velocity = k, [1e-3 * k], [0.0]
            own.publish(m)
        assert _spin_until(ex, lambda: node.timing.steps == 20 and node.timing.foreign_messages == 20, 20), \
            (node.timing.steps, node.timing.foreign_messages)
        assert node.abort_reason == "" and node.timing.invalid_messages == 0 and node.timing.late_messages == 0
        g = node.timing_summary()["guard"]
        assert g["foreign"] == {"/rths/interface_command": 20}
        assert [p["publisher"] for p in g["foreign_publishers"]] == ["/intruder"]
        assert list(g["producers"]["/rths/interface_command"]) == ["smoke_talker"]
        reported = lambda: [e for e in events if e.type == GUARD_EVENT and e.source == "smoke_listener"]
        assert _spin_until(ex, lambda: reported(), 10)
        assert len(reported()) == 1                    # once per foreign publisher, not per sample
        assert "rejected /rths/interface_command from /intruder" in reported()[0].reason, reported()[0].reason
    finally:
        ex.shutdown()
        for n in (node, talker, intruder, watcher):
            n.destroy_node()
        rclpy.shutdown(context=ctx)
        lease.close()


# ------------------------------------------------------------------------------------------------
# the whole graph


class Intruder:
    """A foreign node on the run's domain (created before the run starts) that publishes NaN on every loop topic,
    every 2 ms, from a thread, until stopped."""

    def __init__(self, domain: int, s, name: str = "intruder", topics=LOOP_TOPICS, frame_id: str = "intruder"):
        self.frame_id = frame_id
        self.ctx = _context(domain)
        self.node = rclpy.create_node(name, context=self.ctx)
        qos = control_qos(s.loop.qos, s.loop.dt_s).profile
        self.pubs = {t: self.node.create_publisher(TYPES[t], t, qos) for t in topics}
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        k = 0
        while not self._stop.is_set():
            k += 1
            for topic, pub in self.pubs.items():
                if pub.get_subscription_count():
                    pub.publish(_hostile(topic, k, self.frame_id))
                    self.sent += 1
            time.sleep(0.002)

    def wait_visible(self, domain: int, timeout_s: float = 20.0) -> None:
        """Wait until another participant of the domain sees this node's publishers in the ROS graph: "started
        before the run" means discovered by then (on a loaded machine DDS discovery takes seconds)."""
        ctx = _context(domain)
        probe = rclpy.create_node("impostor_probe", context=ctx)
        try:
            t_end = time.monotonic() + timeout_s
            name = self.node.get_name()
            while time.monotonic() < t_end:
                if all(any(i.node_name == name for i in probe.get_publishers_info_by_topic(t)) for t in self.pubs):
                    return
                time.sleep(0.05)
            raise AssertionError(f"the node {name} was not discovered within {timeout_s} s")
        finally:
            probe.destroy_node()
            rclpy.shutdown(context=ctx)

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(5)
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


def _timing(out, node: str) -> dict:
    return json.loads((out / "timing" / f"{node}.json").read_text())


READS = {"sim_plant": ["/rths/leg_command"], "ft_sensor": ["/rths/raw_wrench"],
         "numerical_substructure": ["/rths/interface_force"],
         "stewart_platform": ["/rths/interface_command", "/rths/leg_state"]}
RECORDED = ["/rths/leg_state", "/rths/raw_wrench", "/rths/interface_force", "/rths/interface_command",
            "/rths/interface_state", "/rths/leg_command"]


@pytest.mark.parametrize("composed,mark_filter,in_process",
                         [(False, False, "auto"), (False, True, "auto"), (True, False, "never"), (True, False, "auto")],
                         ids=["processes", "processes-mark-filter", "composed-recorder-process",
                              "composed-recorder-in-process"])
def test_foreign_messages_on_every_loop_topic_are_rejected_counted_and_kept_out_of_the_bag(tmp_path, composed,
                                                                                           mark_filter, in_process):
    """The 1-D contact test (lockstep) while a foreign node floods every loop topic with NaN: the run completes,
    reproduces the virtual run bit for bit, every reader reported the intruder on each topic it reads, nothing
    invalid got through, and the bag holds none of its samples.  The publisher check dropped and counted them; with
    safety.mark_filter none reached any node's Python (the content filter dropped them: none counted).  Composed:
    the loop goes over the local bus, which no DDS sample reaches; the recorder of its own process, the one reader
    over DDS there, rejects them.  Composed with the recorder in process (a lockstep run's default): the run has no
    DDS reader of a loop topic, so the intruder (which publishes to matched readers only) sent nothing the run
    could see, and the run equals the virtual run."""
    # 6 s of loop (15 s for the composed run whose recorder is the one DDS reader: its loop runs twice as fast):
    # DDS discovery between the intruder and every reader takes up to a few seconds, also on an idle machine (the
    # intruder's participant has Fast DDS's default announcement period of 3 s), and a reader the intruder never
    # matched would have nothing to reject; with 6 s, half of such composed runs on an idle machine ended first
    ov = [f"loop.duration_s={15.0 if composed and in_process == 'never' else 6.0}",
          f"safety.mark_filter={str(mark_filter).lower()}", f"recording.in_process={in_process}"]
    s = scn.load("contact_1d", ov)
    if mark_filter and not content_filter_available():
        with pytest.raises(ParameterError, match="safety.mark_filter: true needs subscriptions with a DDS content"):
            check_node_set(s)           # what rths run and ros2 launch check before anything starts
        return
    lease = DomainLease()
    intruder = Intruder(lease.domain_id, s)
    try:
        r = run_scenario(s, tmp_path / "run", composed=composed, progress=False, lease=lease)
    finally:
        intruder.close()
    out = tmp_path / "run"
    if not SAMPLE_PUBLISHER and not (composed and in_process != "never"):
        # a reader over DDS cannot tell the intruder's samples: the run does not start, or stops at once.  Its
        # samples can still reach a node in the moments before its writer is counted, or after the run's producer
        # has gone (docs/safety.md, "On ROS 2 Jazzy"): there the validation refuses its NaN, so the first fault,
        # and every node's reason, either names the intruder or is that refusal; nothing invalid reached a model
        assert r.code != 0, r.message
        rec = json.loads((out / "events.json").read_text())
        assert rec["status"] == "aborted", rec["status"]

        def explained(reason: str) -> bool:
            return (UNATTRIBUTABLE in reason and "has a publisher that is not the run's: /intruder" in reason) \
                or "non-finite" in reason
        assert explained(rec["first_fault"]["reason"]), rec["first_fault"]
        for node in ["recorder"] + ([] if composed else list(READS)):
            if (out / "timing" / f"{node}.json").exists():
                t = _timing(out, node)
                assert not t["abort_reason"] or explained(t["abort_reason"]), (node, t["abort_reason"])
        return
    assert r.code == 0, r.message
    if composed and in_process != "never":
        assert intruder.sent == 0                 # no reader of the run on any loop topic: nothing matched it
        assert not (out / "logs" / "recorder.log").exists()
        for node in list(READS) + ["recorder"]:
            t = _timing(out, node)
            assert t["foreign_messages"] == 0 and t["invalid_messages"] == 0 and t["abort_reason"] == "", node
        assert_graph_matches_virtual(out / "bag", "contact_1d", overrides=ov)
        return
    assert intruder.sent > 1000
    readers = {"recorder": RECORDED} if composed else dict(READS, recorder=RECORDED)
    for node, topics in readers.items():
        t = _timing(out, node)
        assert t["invalid_messages"] == 0 and t["abort_reason"] == "", (node, t["abort_reason"])
        if mark_filter:
            assert t["foreign_messages"] == 0 and not t["guard"]["foreign"], (node, t["guard"]["foreign"])
        else:
            assert set(t["guard"]["foreign"]) == set(topics), (node, t["guard"]["foreign"])
            assert t["foreign_messages"] == sum(t["guard"]["foreign"].values()) > 0
        pubs = t["guard"]["foreign_publishers"]
        assert {p["publisher"] for p in pubs} == {"/intruder"}, (node, pubs)
        assert {p["topic"] for p in pubs} == set(topics), (node, pubs)
    if composed:                                  # the loop's readers never saw a DDS sample
        for node in READS:
            assert _timing(out, node)["foreign_messages"] == 0
    # each reader's report is an event: in events.json (the supervisor's log) or, when DDS discovery of the
    # intruder's name came late and the supervisor had ended already, in the bag (the recorder records the events)
    bag_events = [{"type": "REJECTED" if m.type == Event.REJECTED else str(m.type), "source": m.source,
                   "reason": m.reason} for _, m in read_bag(out / "bag", ["/rths/events"])["/rths/events"]]
    reports = [e for e in _events(out) + bag_events if e["type"] == "REJECTED" and "rejected" in e["reason"]]
    assert {e["source"] for e in reports} == set(readers)
    assert all("/intruder" in e["reason"] for e in reports)
    bag = read_bag(out / "bag", RECORDED)
    for topic in RECORDED:
        msgs = [m for _, m in bag[topic]]
        assert msgs and all(m.header.frame_id == run_mark(s) for m in msgs), topic      # only the run's own
        steps = [int(m.step) for m in msgs]
        assert steps == sorted(set(steps)), topic
    assert_graph_matches_virtual(out / "bag", "contact_1d", overrides=ov)


def test_a_run_in_its_own_dds_partition_never_receives_a_foreign_flood(tmp_path):
    """safety.partition: the run's loop topics in a DDS partition of their own.  The intruder floods every loop
    topic (a bystander reader in its own partition, the default one, makes it publish), yet no reader of the run is
    ever matched with it: not one foreign sample reaches a node (none counted), the publisher check still reports
    the intruder on every topic each node reads (from the ROS graph), and the run equals the virtual run.  Each
    node process wrote the profile file it ran with."""
    ov = ["loop.duration_s=6.0", "safety.partition=rths_test"]
    s = scn.load("contact_1d", ov)
    lease = DomainLease()
    intruder = Intruder(lease.domain_id, s)
    bystanders = [intruder.node.create_subscription(TYPES[t], t, lambda m: None, 10) for t in intruder.pubs]
    try:
        r = run_scenario(s, tmp_path / "run", progress=False, lease=lease)
        matched = {t: p.get_subscription_count() for t, p in intruder.pubs.items()}
    finally:
        intruder.close()
    out = tmp_path / "run"
    assert len(bystanders) == len(LOOP_TOPICS) and intruder.sent > 1000
    assert set(matched.values()) == {1}, matched          # its own bystander only: no reader of the run
    for node in list(READS) + ["recorder"]:
        text = (out / "dds" / f"{node}.xml").read_text()
        assert text.count("<value>rths_test</value>") == 2 * len([t for t in TOPICS if t.producers]), node
    if not SAMPLE_PUBLISHER:
        # Jazzy: a foreign publisher in the graph is fatal (its samples could not be told from the run's), even
        # though none could reach the run here
        assert r.code != 0 and "/intruder" in json.loads((out / "events.json").read_text())["first_fault"]["reason"]
        return
    assert r.code == 0, r.message
    readers = dict(READS, recorder=RECORDED)
    for node, topics in readers.items():
        t = _timing(out, node)
        assert t["invalid_messages"] == 0 and t["abort_reason"] == "", (node, t["abort_reason"])
        assert t["foreign_messages"] == 0 and not t["guard"]["foreign"], (node, t["guard"]["foreign"])
        pubs = t["guard"]["foreign_publishers"]
        assert {p["publisher"] for p in pubs} == {"/intruder"}, (node, pubs)
        assert {p["topic"] for p in pubs} == set(topics), (node, pubs)
    assert_graph_matches_virtual(out / "bag", "contact_1d", overrides=ov)


def _run_with_an_impostor(tmp_path, overrides: list[str], composed: bool):
    """contact_1d with a node named stewart_platform publishing leg commands, discovered before the run starts:
    (scenario, run directory, run result, the impostor)."""
    s = scn.load("contact_1d", overrides)
    lease = DomainLease()
    impostor = Intruder(lease.domain_id, s, name="stewart_platform", topics=["/rths/leg_command"])
    try:
        impostor.wait_visible(lease.domain_id)
        r = run_scenario(s, tmp_path / "run", composed=composed, progress=False, lease=lease)
    finally:
        impostor.close()
    return s, tmp_path / "run", r, impostor


@pytest.mark.parametrize("composed", [False, True], ids=["processes", "composed-recorder-process"])
def test_an_impostor_under_a_producers_name_before_the_run_stops_it_before_start_naming_both(tmp_path, composed):
    """A node named stewart_platform, in the run's namespace, started before the run and publishing leg commands:
    two publishers claim to be the run's stewart_platform, and the readers of /rths/leg_command (the plant, the
    recorder; composed: the recorder of its own process, the one reader over DDS) cannot tell which is the run's.
    The run never starts: no START, nothing commanded, aborted with a first fault that names both gids (a reader's,
    or the supervisor's, whose view of the graph shows the impostor beside the participant of stewart_platform's
    READY).  Where DDS discovery brought the impostor to every one of them only after START (it happens: discovery
    has no end a participant could wait for), START's participants decide: the impostor is rejected and reported
    as one, none of its samples is taken, and the run completes."""
    s, out, r, _ = _run_with_an_impostor(tmp_path, ["loop.duration_s=1.0", "recording.in_process=never"], composed)
    rec = json.loads((out / "events.json").read_text())
    plant = _timing(out, "composed" if composed and (out / "timing" / "composed.json").exists() else "sim_plant")
    assert plant["invalid_messages"] == 0, plant["abort_reason"]      # no NaN of the impostor reached a callback
    if any(e["type"] == "START" for e in rec["events"]):
        assert r.code == 0 and rec["status"] == "completed", r.message
        start = next(e for e in rec["events"] if e["type"] == "START")
        assert set(json.loads(start["reason"])["participants"]) == set(s.run_nodes) - {"supervisor"}
        bag_events = [{"type": "REJECTED" if m.type == Event.REJECTED else str(m.type), "reason": m.reason}
                      for _, m in read_bag(out / "bag", ["/rths/events"])["/rths/events"]]
        reports = [e for e in _events(out) + bag_events if e["type"] == "REJECTED"]
        assert reports and all("an impostor" in e["reason"] and "/stewart_platform" in e["reason"]
                               for e in reports), reports
        assert_graph_matches_virtual(out / "bag", "contact_1d", overrides=["loop.duration_s=1.0"])
        return
    assert r.code != 0, r.message
    assert rec["status"] == "aborted", rec["status"]
    reason = rec["first_fault"]["reason"]
    assert "2 publishers of /rths/leg_command claim to be the run's stewart_platform" in reason, reason
    assert reason.count("gid ") == 2 and "does not start" in reason, reason
    assert rec["first_fault"]["node"] in ({"recorder", "supervisor"} if composed
                                          else {"sim_plant", "recorder", "supervisor"})
    assert plant.get("steps", 0) == 0, plant


def test_an_impostor_before_a_composed_run_with_its_recorder_in_process_reaches_nothing(tmp_path):
    """The same impostor before a lockstep composed run whose recorder takes the loop from the local bus: the run
    has no DDS reader of /rths/leg_command, so nothing of it can mistake the impostor for its own platform.
    Where the supervisor's view of the graph shows the impostor before START, it refuses to start, naming both
    publishers (a node under a run node's name is a fault to report whatever it reaches); else the run completes,
    equal to the virtual run, and its bag holds only the run's own leg commands."""
    ov = ["loop.duration_s=1.0"]
    s, out, r, impostor = _run_with_an_impostor(tmp_path, ov, composed=True)
    assert impostor.sent == 0
    rec = json.loads((out / "events.json").read_text())
    if r.code != 0:
        assert not any(e["type"] == "START" for e in rec["events"]), r.message
        reason = rec["first_fault"]["reason"]
        assert rec["first_fault"]["node"] == "supervisor" and "does not start" in reason, reason
        assert "(another participant)" in reason and "(the participant of its READY)" in reason, reason
        return
    msgs = [m for _, m in read_bag(out / "bag", ["/rths/leg_command"])["/rths/leg_command"]]
    assert len(msgs) == s.steps and all(m.header.frame_id == run_mark(s) for m in msgs)
    assert_graph_matches_virtual(out / "bag", "contact_1d", overrides=ov)


def test_a_node_that_takes_a_producers_name_after_start_is_foreign_and_a_foreign_estop_still_aborts(tmp_path):
    """A node named ft_sensor appears on the domain after START and publishes /rths/interface_force (NaN) with the
    run's mark (as a copy of the run's messages would): the run's ft_sensor owns the name already, so the numerical
    part and the recorder reject, count and report it, and the loop runs on.  Then a foreign operator node publishes on /rths/estop: the emergency stop is open to anyone by design, the
    run aborts with its reason and the platform goes to the safe pose.  (The classic executor this time.)"""
    s, out, result, t, domain = _start(tmp_path, "impostor", ["loop.duration_s=600",
                                                              "realtime.executor=single_threaded"])
    impostor = Intruder(domain, s, name="ft_sensor", topics=["/rths/interface_force"], frame_id=run_mark(s))
    ctx = _context(domain)
    node = rclpy.create_node("operator", context=ctx)
    events: list = []
    node.create_subscription(Event, "/rths/events", events.append, events_qos())
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    try:
        if not SAMPLE_PUBLISHER:        # its samples cannot be told from ft_sensor's: the run is aborted, naming it
            t.join(90)                  # (within a second or two: it may end before this operator hears an event)
            r = result["r"]
            assert r.code != 0 and UNATTRIBUTABLE in r.message, r.message
            fault = json.loads((out / "events.json").read_text())["first_fault"]
            assert "/rths/interface_force has a publisher that is not the run's: /ft_sensor" in fault["reason"]
            assert _timing(out, "numerical_substructure")["invalid_messages"] == 0
            _assert_safe(s, out)
            return
        rejected = lambda: {e.source for e in events if e.type == GUARD_EVENT and "/rths/interface_force" in e.reason}
        assert _spin_until(ex, lambda: {"numerical_substructure", "recorder"} <= rejected(), 30), rejected()
        report = next(e for e in events if e.type == GUARD_EVENT and e.source == "numerical_substructure")
        assert "rejected /rths/interface_force from /ft_sensor" in report.reason, report.reason
        # the impostor has done its part; it stops before the run ends, so no thread of this process is in a DDS
        # call while the run's participants leave (one CI run hung in the join below with the impostor publishing)
        impostor.close()
        pub = node.create_publisher(String, "/rths/estop", events_qos())
        assert _spin_until(ex, lambda: pub.get_subscription_count() >= 1, 20)
        pub.publish(String(data="foreign operator"))
        t.join(60)
    finally:
        impostor.close()
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    r = result["r"]
    assert r.code != 0 and "emergency stop: foreign operator" in r.message, r.message
    num = _timing(out, "numerical_substructure")
    assert num["foreign_messages"] > 0 and num["invalid_messages"] == 0
    assert [p["publisher"] for p in num["guard"]["foreign_publishers"]] == ["/ft_sensor"]
    assert "non-finite" not in num["abort_reason"]
    _assert_safe(s, out)
