"""The lockstep watchdog of a node, in process over DDS: it arms when a trial begins, so a control topic
whose first message never comes trips it (the loop would otherwise stall with nothing armed), and it
stays quiet between trials and after the end."""
from __future__ import annotations

import os
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor

from rths_ros.app import scenario as scn
from rths_ros.msg import TestEvent as Event
from rths_ros.nodes.smoke_listener import SmokeListener
from rths_ros.runner import DomainLease

WATCHDOG_S = 0.3


def _event(kind: int, source: str = "supervisor", trial: int = 0) -> Event:
    e = Event()
    e.type, e.source, e.trial = kind, source, trial
    return e


def _spin(executor, node, seconds: float) -> None:
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end and not node.abort_reason:
        executor.spin_once(timeout_sec=0.02)


def _with_listener(check):
    lease = DomainLease()
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=lease.domain_id)
    s = scn.load("smoke", [f"safety.watchdog_s={WATCHDOG_S}"])
    node = SmokeListener(s, None, context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    try:
        check(ex, node)
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        lease.close()


def test_a_first_message_that_never_comes_trips_the_watchdog():
    def check(ex, node):
        _spin(ex, node, 3 * WATCHDOG_S)
        assert node.abort_reason == ""                      # not started: nothing is watched
        node._on_event(_event(Event.START))
        t0 = time.monotonic()
        _spin(ex, node, 20 * WATCHDOG_S)
        waited = time.monotonic() - t0
        assert node.watchdog_trip is not None, "no watchdog trip although the command never came"
        assert node.watchdog_trip["topic"] == "/rths/interface_command"
        assert node.watchdog_trip["last_step"] == -1
        assert "none received" in node.abort_reason and f"safety.watchdog_s = {WATCHDOG_S:g} s" in node.abort_reason
        assert waited >= WATCHDOG_S                          # not before the limit
    _with_listener(check)


def test_no_trip_between_trials_or_after_the_end():
    def check(ex, node):
        node._on_event(_event(Event.START))
        node._on_event(_event(Event.TRIAL_END))          # the pause between trials disarms it
        _spin(ex, node, 5 * WATCHDOG_S)
        assert node.watchdog_trip is None, node.abort_reason
        node._on_event(_event(Event.TRIAL_BEGIN, trial=1))    # the next trial arms it again
        _spin(ex, node, 20 * WATCHDOG_S)
        assert node.watchdog_trip is not None and node.watchdog_trip["topic"] == "/rths/interface_command"
    _with_listener(check)
