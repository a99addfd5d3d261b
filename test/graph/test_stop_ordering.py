"""STOP and the loop's data travel on different topics, so STOP can overtake the last step's inputs.  A learner
that answers every step (aff_learner) must still publish the last step before it ends (in process, over DDS)."""
from __future__ import annotations

import os

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor

from rths_ros.app import scenario as scn
from rths_ros.msg import LegCommand, LegState
from rths_ros.msg import TestEvent as Event
from rths_ros.nodes.aff_learner import AffLearnerNode
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
