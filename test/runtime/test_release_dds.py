"""A node process gives its DDS participant back at the end (rths_ros.runtime.teardown.release_dds): the participant's
shared-memory segment is unmapped and unlinked, also for a lifecycle node, whose state machine rclpy's own
destroy_node leaves holding the node (every run left the plant's segment in /dev/shm before)."""
import json
import os
import subprocess
import sys

import pytest

from rths_ros.runtime.domain import DomainLease

SCRIPT = r"""
import json, re, sys, time
import rclpy
from rclpy.lifecycle import LifecycleNodeMixin
from rclpy.node import Node
from std_msgs.msg import String
from rths_ros.runtime.executors import make_executor
from rths_ros.runtime.teardown import release_dds

def segments():
    return sorted(set(re.findall(r"fast(?:dds|rtps)_[0-9a-f]{16}", open("/proc/self/maps").read())))

class Plantish(LifecycleNodeMixin, Node):
    def __init__(self):
        Node.__init__(self, "plantish")
        LifecycleNodeMixin.__init__(self, enable_communication_interface=True)

rclpy.init()
node = Plantish()
ex = make_executor("events")
ex.add_node(node)
got = []
node.create_subscription(String, "/t", got.append, 10)
pub = node.create_publisher(String, "/t", 10)
t0 = time.monotonic()
while time.monotonic() - t0 < 1.0 and len(got) < 20:
    pub.publish(String(data="x"))
    ex.spin_once(timeout_sec=0.01)
own = segments()
if sys.argv[1] == "release_dds":
    release_dds([node], ex)
else:                       # what the teardown did before
    ex.shutdown(timeout_sec=1.0)
    node.destroy_node()
left = segments()
rclpy.shutdown()
print(json.dumps({"got": len(got), "own": own, "left": left}))
"""


def _run(way: str) -> dict:
    lease = DomainLease()
    try:
        env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        r = subprocess.run([sys.executable, "-c", SCRIPT, way], capture_output=True, text=True, env=env, timeout=60)
    finally:
        lease.close()
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_release_dds_gives_a_lifecycle_nodes_participant_back():
    d = _run("release_dds")
    assert d["got"] > 0 and len(d["own"]) == 1, d        # the node talked over its own shared-memory segment
    assert d["left"] == [], d
    assert not os.path.exists(f"/dev/shm/{d['own'][0]}")


def test_rclpys_destroy_node_alone_keeps_a_lifecycle_nodes_participant():
    """The cause, shown: with destroy_node alone the segment stays mapped (the participant lives on)."""
    d = _run("destroy_node")
    if d["left"] != d["own"]:
        pytest.fail(f"rclpy's destroy_node now releases a lifecycle node's participant: {d}; release_dds's state "
                    "machine step may be dropped")
