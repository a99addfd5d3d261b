"""A node's loop thread logs without rclpy's caller lookup, and a foreign publisher with an incompatible QoS is
counted and said once, by the node itself (rths_ros.runtime.loop_log): rclpy's default callback logged it with
that lookup, whose first call of a process took 36 ms and stalled a realtime loop for 40-55 steps."""
from __future__ import annotations

import inspect
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from rths_ros.runtime import loop_log
from rths_ros.runtime.domain import DomainLease


class Quiet(loop_log.QuietQosEvents, Node):
    pass


@pytest.fixture
def contexts():
    lease = DomainLease()
    made = []

    def make():
        ctx = rclpy.Context()
        rclpy.init(context=ctx, domain_id=lease.domain_id)
        made.append(ctx)
        return ctx
    yield make
    for ctx in made:
        rclpy.shutdown(context=ctx)
    lease.close()


def test_an_incompatible_publisher_is_counted_and_said_once_without_rclpys_default_warning(contexts, capfd):
    ctx_a, ctx_b = contexts(), contexts()
    node = Quiet("quiet_reader", context=ctx_a)
    wants = QoSProfile(depth=4, reliability=ReliabilityPolicy.RELIABLE)
    node.create_subscription(String, "/loop_log_t", lambda m: None, wants)
    other = Node("foreign_writer", context=ctx_b)
    pubs = [other.create_publisher(String, "/loop_log_t",
                                   QoSProfile(depth=4, reliability=ReliabilityPolicy.BEST_EFFORT))
            for _ in range(2)]
    ex = SingleThreadedExecutor(context=ctx_a)
    ex.add_node(node)
    t_end = time.monotonic() + 20.0
    while time.monotonic() < t_end and node.qos_incompatible.get("/loop_log_t", 0) < 2:
        ex.spin_once(timeout_sec=0.05)
    assert node.qos_incompatible == {"/loop_log_t": 2}, node.qos_incompatible     # both writers counted
    err = capfd.readouterr().err
    said = [line for line in err.splitlines() if "offers a QoS this node's reader cannot match" in line]
    assert len(said) == 1 and "quiet_reader: a publisher of /loop_log_t" in said[0], err
    assert "RELIABILITY" in said[0], said[0]
    assert "offering incompatible QoS" not in err            # rclpy's own callback never ran
    ex.shutdown()
    for p in pubs:
        other.destroy_publisher(p)


def test_log_needs_no_caller_lookup(contexts, capfd, monkeypatch):
    node = Quiet("quiet_logger", context=contexts())

    def no_lookup(*a, **k):
        raise AssertionError("caller lookup")
    monkeypatch.setattr(inspect, "getframeinfo", no_lookup)
    loop_log.log(node, rclpy.logging.LoggingSeverity.WARN, "from the loop")
    loop_log.log(node, rclpy.logging.LoggingSeverity.DEBUG, "not enabled: dropped")
    err = capfd.readouterr().err
    assert "from the loop" in err and "not enabled" not in err
    with pytest.raises(AssertionError, match="caller lookup"):
        node.get_logger().warning("rclpy's own logger looks its caller up")


def test_a_node_maps_the_loaded_modules_when_it_is_built(contexts):
    inspect.modulesbyfile.clear()
    inspect._filesbymodname.clear()
    Quiet("quiet_warm", context=contexts())
    assert inspect.getabsfile(loop_log) in inspect.modulesbyfile
