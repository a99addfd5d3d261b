"""The supervisor's side of the publisher identity (docs/safety.md, "A shared network"), in process over DDS: it
records the participant each READY came from, refuses the start when two participants announce READY under one
node's name, refuses it when a loop publisher under a producer's name belongs to another participant than that
producer's READY (naming both gids), and otherwise sends START with the participants, which the nodes bind to."""
from __future__ import annotations

import json
import os
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor

from rths_ros.app import scenario as scn
from rths_ros.msg import LegCommand
from rths_ros.msg import TestEvent as Event
from rths_ros.nodes.supervisor import Supervisor
from rths_ros.runner import DomainLease
from rths_ros.runtime.guard import events_callback, start_participants
from rths_ros.runtime.publisher_check import PARTICIPANT_BYTES


def _ready(source: str) -> Event:
    e = Event()
    e.type, e.source = Event.READY, source
    return e


def _info(participant: bytes) -> dict:
    return {"publisher_gid": {"implementation_identifier": "rmw_fastrtps_cpp", "data": participant + bytes(4)}}


class _Domain:
    """A leased ROS domain with contexts made on demand, all shut down at the end."""

    def __init__(self):
        self.lease = DomainLease()
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        self.contexts, self.nodes = [], []

    def context(self):
        ctx = rclpy.Context()
        rclpy.init(context=ctx, domain_id=self.lease.domain_id)
        self.contexts.append(ctx)
        return ctx

    def close(self):
        for node in self.nodes:
            node.destroy_node()
        for ctx in self.contexts:
            rclpy.shutdown(context=ctx)
        self.lease.close()


def _supervisor(domain: _Domain):
    s = scn.load("contact_1d", ["loop.duration_s=0.5"])
    ctx = domain.context()
    sup = Supervisor(s, None, context=ctx)
    domain.nodes.append(sup)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(sup)
    sent: list = []
    sup.create_subscription(Event, "/rths/events", sent.append, 10)
    feed = events_callback(sup, sup._on_event)
    return s, sup, ex, sent, feed


def _spin(ex, seconds: float, until=lambda: False) -> None:
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end and not until():
        ex.spin_once(timeout_sec=0.02)


def test_two_participants_announcing_ready_under_one_name_keep_the_run_from_starting():
    domain = _Domain()
    try:
        s, sup, ex, sent, feed = _supervisor(domain)
        a, b = bytes(range(12)), bytes(range(1, 13))
        feed(_ready("stewart_platform"), _info(a))
        feed(_ready("stewart_platform"), _info(a))           # the same participant again: nothing to say
        assert sup.abort_reason == "" and sup.ready_from == {"stewart_platform": a.hex()}
        feed(_ready("stewart_platform"), _info(b))
        assert "two participants announced READY as the run's stewart_platform" in sup.abort_reason
        assert a.hex() in sup.abort_reason and b.hex() in sup.abort_reason and "does not start" in sup.abort_reason
        for node in sorted(set(s.run_nodes) - {"supervisor", "stewart_platform"}):
            feed(_ready(node), _info(bytes([7] * 12)))
        _spin(ex, 1.0)
        assert not any(e.type == Event.START for e in sent) and sup.exit_code == 3
    finally:
        ex.shutdown()
        domain.close()


def _participant_of_own_publisher(node, topic: str) -> bytes:
    """The node's own participant: its only publisher of a topic nobody else has yet (local endpoints are in the
    graph at once)."""
    infos = node.get_publishers_info_by_topic(topic)
    assert len(infos) == 1, infos
    return bytes(infos[0].endpoint_gid)[:PARTICIPANT_BYTES]


def test_an_impostor_the_supervisor_sees_at_the_last_ready_keeps_the_run_from_starting_naming_both():
    domain = _Domain()
    try:
        s, sup, ex, sent, feed = _supervisor(domain)
        real = rclpy.create_node("stewart_platform", context=domain.context())
        domain.nodes.append(real)
        real.create_publisher(LegCommand, "/rths/leg_command", 10)
        home = _participant_of_own_publisher(real, "/rths/leg_command")
        impostor = rclpy.create_node("stewart_platform", context=domain.context())
        domain.nodes.append(impostor)
        impostor.create_publisher(LegCommand, "/rths/leg_command", 10)
        named = lambda: [i for i in sup.get_publishers_info_by_topic("/rths/leg_command")
                         if i.node_name == "stewart_platform"]
        _spin(ex, 20.0, lambda: len(named()) == 2)       # the endpoints and their node's name are discovered
        gids = {bytes(i.endpoint_gid)[:16] for i in named()}
        assert len(gids) == 2
        other = next(g for g in gids if g[:PARTICIPANT_BYTES] != home)
        own = next(g for g in gids if g[:PARTICIPANT_BYTES] == home)
        for node in sorted(set(s.run_nodes) - {"supervisor"}):
            feed(_ready(node), _info(home if node == "stewart_platform" else bytes([7] * 12)))
        reason = sup.abort_reason
        assert "2 publishers of /rths/leg_command claim to be the run's stewart_platform" in reason, reason
        assert f"gid {own.hex()} (the participant of its READY)" in reason, reason
        assert f"gid {other.hex()} (another participant)" in reason and "does not start" in reason, reason
        _spin(ex, 1.0)
        assert not any(e.type == Event.START for e in sent)
    finally:
        ex.shutdown()
        domain.close()


def _all_ready(s, ex, sent, feed) -> dict[str, str]:
    """READY from every node of the run, each from a participant of its own; spin until START (or 5 s).  Returns
    node -> the participant (hex) it announced READY from."""
    participants = {}
    for i, node in enumerate(sorted(set(s.run_nodes) - {"supervisor"})):
        participants[node] = bytes([i + 1] * 12).hex()
        feed(_ready(node), _info(bytes([i + 1] * 12)))
    _spin(ex, 5.0, lambda: any(e.type == Event.START for e in sent))
    return participants


def test_without_an_impostor_start_carries_the_participants_of_every_ready():
    domain = _Domain()
    try:
        s, sup, ex, sent, feed = _supervisor(domain)
        expected = _all_ready(s, ex, sent, feed)
        start = next(e for e in sent if e.type == Event.START)
        assert start_participants(start.reason) == expected
        assert json.loads(start.reason) == {"participants": expected}
        assert sup.abort_reason == ""
    finally:
        ex.shutdown()
        domain.close()


def test_a_ready_from_another_participant_after_start_is_rejected_and_reported_once_and_the_run_goes_on():
    domain = _Domain()
    try:
        s, sup, ex, sent, feed = _supervisor(domain)
        _all_ready(s, ex, sent, feed)
        assert any(e.type == Event.START for e in sent)
        other = bytes([99] * 12)
        feed(_ready("sim_plant"), _info(other))
        feed(_ready("sim_plant"), _info(other))
        _spin(ex, 2.0, lambda: any(e.type == Event.REJECTED for e in sent))
        rejected = [e for e in sent if e.type == Event.REJECTED]
        assert len(rejected) == 1, [e.reason for e in rejected]
        reason = rejected[0].reason
        assert reason.startswith("supervisor: rejected READY from participant " + other.hex()), reason
        assert "two participants announced READY as the run's sim_plant" in reason and "the run goes on" in reason
        assert sup.abort_reason == "" and not any(e.type == Event.ABORT for e in sent)
    finally:
        ex.shutdown()
        domain.close()


def test_a_start_that_times_out_names_the_nodes_the_supervisor_never_saw_and_a_node_says_what_it_waits_for(tmp_path):
    """Only an ft_sensor process and a recorder (a node of the supervisor's own process) are there: the start
    times out, and the reason tells the missing nodes the supervisor never saw from those it saw.  The ft_sensor
    says in its log, half-way to its own timeout, which topics it waits for, and ends with the supervisor's abort."""
    import subprocess
    import sys

    from rths_ros.runner import run_env
    domain = _Domain()
    node = None
    try:
        log = tmp_path / "ft_sensor.log"
        with open(log, "w") as fh:
            node = subprocess.Popen([sys.executable, "-m", "rths_ros.nodes.ft_sensor", "--scenario", "contact_1d",
                                     "--set", "loop.start_timeout_s=2"], stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=run_env(domain.lease.domain_id))
        ctx = domain.context()
        present = rclpy.create_node("recorder", context=ctx)
        domain.nodes.append(present)
        probe = SingleThreadedExecutor(context=ctx)
        probe.add_node(present)
        _spin(probe, 60.0, lambda: "ft_sensor" in present.get_node_names())
        assert "ft_sensor" in present.get_node_names(), log.read_text()[-2000:]
        probe.shutdown()
        s = scn.load("contact_1d", ["loop.duration_s=0.5", "loop.start_timeout_s=2"])
        sup = Supervisor(s, None, context=ctx)
        domain.nodes.append(sup)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(sup)
        _spin(ex, 10.0, lambda: sup.exit_code == 3)
        reason = sup.abort_reason
        assert reason.startswith("nodes not ready after 2 s: "), reason
        missing = reason.split(": ", 1)[1].split(" (")[0].split(", ")
        assert {"recorder", "sim_plant", "ft_sensor"} <= set(missing), reason
        unseen = reason.split(" (", 1)[1].split(" not in the supervisor's view")[0].split(", ")
        assert "sim_plant" in unseen and "recorder" not in unseen and "ft_sensor" not in unseen, reason
        assert "DDS discovery" in reason, reason
        _spin(ex, 3.0, lambda: node.poll() is not None)
        assert node.wait(timeout=30) == 3, log.read_text()[-2000:]     # it heard the abort
        text = log.read_text()
        waited = [line for line in text.splitlines() if "not ready after" in line and "waiting for:" in line]
        assert waited and "/rths/" in waited[0] and "readers" in waited[0], text[-2000:]
        ex.shutdown()
    finally:
        if node is not None and node.poll() is None:
            node.kill()
            node.wait()
        domain.close()
