"""STOP and the loop's data travel on different topics, so STOP can overtake the last step's inputs.  A learner
that answers every step (aff_learner) must still publish the last step before it ends (in process, over DDS).  The
same for SAFE after an abort: the recorder keeps the bag open until the plant's leg state of SAFE's step is in."""
from __future__ import annotations

import os
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor

from rths_ros.app import scenario as scn
from rths_ros.msg import LegCommand, LegState
from rths_ros.msg import TestEvent as Event
from rths_ros.nodes.aff_learner import AffLearnerNode
from rths_ros.nodes.recorder import Recorder
from rths_ros.runner import DomainLease


def _event(kind: int, step: int = 0) -> Event:
    e = Event()
    e.type, e.source, e.step = kind, "supervisor", step
    return e


def test_aff_learner_publishes_the_last_step_when_stop_overtakes_its_inputs():
    lease = DomainLease()
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=lease.domain_id)
    s = scn.load("contact_1d", ["aff.enabled=true", "loop.duration_s=0.01"])
    node = AffLearnerNode(s, None, context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    published = []
    real_publish = node.pub.publish
    node.pub.publish = lambda m: (published.append(int(m.step)), real_publish(m))
    try:
        n = s.steps
        home = np.array(node.home)

        def feed(k):
            c, st = LegCommand(), LegState()
            c.step = st.step = k
            c.length = list(home + 1e-4 * np.sin(k))
            st.length = list(home + 0.9e-4 * np.sin(k))
            node.on_leg_command(c)
            node.on_leg_state(st)

        node._on_event(_event(Event.START))
        for k in range(n):                       # every step but the last
            feed(k)
        assert published == list(range(n))
        node._on_event(_event(Event.STOP, n))    # STOP for the last step n arrives first
        ex.spin_once(timeout_sec=0.1)
        assert not node.done                     # it waits for step n's inputs
        feed(n)
        assert published == list(range(n + 1)) and node.done and node.exit_code == 0
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        lease.close()


def test_the_recorder_keeps_the_bag_open_after_safe_until_the_ramps_last_leg_state_is_in(tmp_path):
    """SAFE (on /rths/events) overtakes the ramp's last leg states (on /rths/leg_state, another writer): the
    recorder, every other node's final report in, does not end after its short quiet time while the leg state of
    SAFE's step is missing; it ends once that is in (a clean-clone run's bag once ended 7 mm short of the safe
    pose)."""
    from rclpy.serialization import serialize_message
    lease = DomainLease()
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=lease.domain_id)
    s = scn.load("contact_1d")
    node = Recorder(s, tmp_path / "run", context=ctx)
    try:
        legs = node._writer_for("/rths/leg_state")

        def leg(k):
            st = LegState()
            st.header.frame_id = "rths:contact_1d"
            st.step = k
            legs(serialize_message(st))

        node._on_event(_event(Event.START))
        for k in range(0, 1500, 100):
            leg(k)
        abort = _event(Event.ABORT, 1500)
        node._on_event(abort)
        node._all_reported = lambda: True         # every other node's final timing report is in
        leg(1600)
        safe = _event(Event.SAFE, 2000)
        safe.source = "sim_plant"
        node._on_event(safe)
        t_end = time.monotonic() + 1.0            # far beyond the quiet time of 0.1 s
        while time.monotonic() < t_end:
            node._check_quiet()
            time.sleep(0.05)
        assert not node.done, "the recorder ended without the ramp's last leg state"
        leg(2000)
        time.sleep(node.QUIET_REPORTED_S + 0.05)
        node._check_quiet()
        assert node.done and node.exit_code == 3
    finally:
        node.finalize()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        lease.close()
