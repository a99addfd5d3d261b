"""The order of the DDS teardown across a run (rths_ros.runtime.teardown.release_dds): a node drops its readers
first, then keeps its writers until the run's other nodes have dropped their readers of its topics (at most a
bound), so that no participant of the run removes a remote writer while one of its own readers is matched with
it (the Fast DDS deadlock of docs/reliability.md, "The cause of the hang").  Readers of nodes outside the run do
not hold it."""
from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace

import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String

from rths_ros.runtime.domain import DomainLease
from rths_ros.runtime.teardown import release_dds, run_peer_readers

TOPIC = "/rths/teardown_order"


class _Run:
    """A writer node "plant" of a run (plant, sensor), a reader node of the given name, and a probe, each in a
    context of its own (as in separate processes)."""

    def __init__(self, reader_name: str):
        self.lease = DomainLease()
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        self.contexts = []
        self.writer = rclpy.create_node("plant", context=self._context())
        self.writer.scenario = SimpleNamespace(run_nodes=("plant", "sensor"))
        self.writer.create_publisher(String, TOPIC, 10)
        self.writer.create_subscription(String, "/rths/other", lambda m: None, 10)
        self.executor = SingleThreadedExecutor(context=self.contexts[0])
        self.executor.add_node(self.writer)
        self.reader = rclpy.create_node(reader_name, context=self._context())
        self.sub = self.reader.create_subscription(String, TOPIC, lambda m: None, 10)
        self.probe = rclpy.create_node("probe", context=self._context())

    def _context(self):
        ctx = rclpy.Context()
        rclpy.init(context=ctx, domain_id=self.lease.domain_id)
        self.contexts.append(ctx)
        return ctx

    def seen(self, what: str, name: str) -> bool:
        infos = (self.probe.get_publishers_info_by_topic(TOPIC) if what == "publisher"
                 else self.probe.get_subscriptions_info_by_topic(TOPIC))
        return any(i.node_name == name for i in infos)

    def wait_seen(self) -> None:
        t_end = time.monotonic() + 20
        while time.monotonic() < t_end and not (self.seen("publisher", "plant") and
                                                self.seen("subscription", self.reader.get_name()) and
                                                run_peer_readers([self.writer]) in ([], ["sensor " + TOPIC])):
            time.sleep(0.02)
        assert self.seen("publisher", "plant") and self.seen("subscription", self.reader.get_name())

    def close(self) -> None:
        for node in (self.reader, self.probe):
            node.destroy_node()
        for ctx in self.contexts:
            rclpy.shutdown(context=ctx)
        self.lease.close()


def _release_in_thread(run: _Run, bound_s: float) -> threading.Thread:
    t = threading.Thread(target=release_dds, args=([run.writer], run.executor, bound_s), daemon=True)
    t.start()
    return t


def _first_time(cond, timeout_s: float) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if cond():
            return time.monotonic()
        time.sleep(0.005)
    return None


def test_a_node_keeps_its_writers_until_the_runs_reader_is_gone_and_drops_its_own_readers_first():
    run = _Run("sensor")
    try:
        run.wait_seen()
        t = _release_in_thread(run, bound_s=10.0)
        # its own reader goes at once, its writer stays while the run's sensor still reads the topic
        assert _first_time(lambda: not list(run.writer.subscriptions), 5.0) is not None
        time.sleep(0.5)
        assert run.seen("publisher", "plant") and t.is_alive()
        assert run_peer_readers([run.writer]) == ["sensor " + TOPIC]
        run.reader.destroy_subscription(run.sub)
        t_sub_gone = _first_time(lambda: not run.seen("subscription", "sensor"), 10.0)
        t_pub_gone = _first_time(lambda: not run.seen("publisher", "plant"), 10.0)
        assert t_sub_gone is not None and t_pub_gone is not None and t_pub_gone >= t_sub_gone
        t.join(10)
        assert not t.is_alive()
    finally:
        run.close()


def test_a_run_reader_that_never_goes_holds_the_writers_only_for_the_bound():
    run = _Run("sensor")
    try:
        run.wait_seen()
        t = _release_in_thread(run, bound_s=0.5)
        t.join(10)
        assert not t.is_alive()
        assert _first_time(lambda: not run.seen("publisher", "plant"), 10.0) is not None
    finally:
        run.close()


def test_a_reader_outside_the_run_does_not_hold_the_writers():
    """A viewer or a recorder of the lab's own, named as no node of the run, reading the topic."""
    run = _Run("lab_viewer")
    try:
        run.wait_seen()
        assert run_peer_readers([run.writer]) == []
        t = _release_in_thread(run, bound_s=30.0)
        t.join(10)          # well before the bound: nothing of the run was waited for
        assert not t.is_alive()
    finally:
        run.close()
