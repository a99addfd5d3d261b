"""The local bus's DDS copies publish only while a reader is matched (rths_ros.runtime.local_bus.ReaderGate): with no
reader nothing is written, whether one joined is asked every ``every``-th call, and a reader that joins mid-run gets
the messages from then on.  Exercised on a real rclpy publisher."""
import json
import os
import subprocess
import sys

from rths_ros.runtime.domain import DomainLease

SCRIPT = r"""
import json, time
import rclpy
from geometry_msgs.msg import WrenchStamped
from rths_ros.runtime.executors import make_executor
from rths_ros.runtime.local_bus import ReaderGate
from rths_ros.runtime.standard_interfaces import driver_qos, standard_qos

rclpy.init()
node = rclpy.create_node("gate_probe")
ex = make_executor("events")
ex.add_node(node)
every, READER_RECHECK = 1, 10
pub = node.create_publisher(WrenchStamped, "/gate_probe/wrench", standard_qos(10))
asked, writes = [0], [0]
count = pub.get_subscription_count
def counted():
    asked[0] += 1
    return count()
pub.get_subscription_count = counted
gate = ReaderGate(pub, READER_RECHECK)
msg = WrenchStamped()
k = 0
def steps(n):
    global k
    for _ in range(n):
        if gate():
            msg.wrench.force.z = float(k)
            writes[0] += 1
            pub.publish(msg)
        k += 1
steps(READER_RECHECK * 5)
before = {"asked": asked[0], "writes": writes[0], "matched": gate.matched}
got = []
node.create_subscription(WrenchStamped, "/gate_probe/wrench", got.append, driver_qos(100))
t0 = time.monotonic()
while count() < 1 and time.monotonic() - t0 < 10:
    ex.spin_once(timeout_sec=0.01)
joined = k
steps(READER_RECHECK * 3)
t0 = time.monotonic()
while time.monotonic() - t0 < 1.0:
    ex.spin_once(timeout_sec=0.01)
forces = sorted(int(m.wrench.force.z) for m in got)
print(json.dumps({"before": before, "every": every, "recheck": READER_RECHECK, "joined": joined, "last": k - 1,
                  "writes": writes[0], "forces": forces}))
rclpy.shutdown()
"""


def test_a_gated_publisher_writes_nothing_without_a_reader_and_everything_once_one_joined():
    lease = DomainLease()
    try:
        env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    finally:
        lease.close()
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout.strip().splitlines()[-1])
    every, recheck = d["every"], d["recheck"]
    # 5 * recheck calls without a reader: nothing written, the count asked once per recheck of them
    assert d["before"] == {"asked": 5, "writes": 0, "matched": False}, d["before"]
    # the reader joined at step `joined`: matched at the next recheck at the latest, every publishing step since
    first = (d["joined"] // every + recheck) * every
    expected = list(range(first, d["last"] + 1, every))
    assert d["forces"][0] <= first and d["forces"][-len(expected):] == expected, d["forces"]
    assert d["writes"] == len(d["forces"]), d


STANDARD_SCRIPT = r"""
import json, time
import rclpy
from geometry_msgs.msg import WrenchStamped
from rths_ros.app import scenario as scn
from rths_ros.runtime.executors import make_executor
from rths_ros.runtime.standard_interfaces import READER_CHECK_STEPS, driver_qos, wrench_out

rclpy.init()
node = rclpy.create_node("standard_probe")
ex = make_executor("events")
ex.add_node(node)
s = scn.load("contact_1d", [])
out = wrench_out(node, s)
asked = [0]
count = out.pub.get_subscription_count
def counted():
    asked[0] += 1
    return count()
out.pub.get_subscription_count = counted
stamp = node.get_clock().now().to_msg()
k = 0
def steps(n):
    global k
    for _ in range(n):
        out.publish(k, stamp, [float(k)])
        k += 1
steps(1000)
before = asked[0]
got = []
node.create_subscription(WrenchStamped, s.standard_interfaces.wrench_topic, got.append, driver_qos(200))
t0 = time.monotonic()
while count() < 1 and time.monotonic() - t0 < 10:
    ex.spin_once(timeout_sec=0.01)
joined = k
steps(1000)
t0 = time.monotonic()
while time.monotonic() - t0 < 1.0:
    ex.spin_once(timeout_sec=0.01)
forces = sorted(int(m.wrench.force.z) for m in got)
print(json.dumps({"asked": before, "check": READER_CHECK_STEPS, "every": s.standard_interfaces.every_steps,
                  "joined": joined, "last": k - 1, "forces": forces}))
rclpy.shutdown()
"""


def test_a_standard_publisher_writes_nothing_without_a_reader_and_a_joining_tool_gets_every_message_soon():
    """The interface wrench of the standard interfaces (every 10th step): without a reader it asks for one about every
    READER_CHECK_STEPS steps and writes nothing; a tool that joins gets every 10th step from at most that many steps
    after it joined."""
    lease = DomainLease()
    try:
        env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
        r = subprocess.run([sys.executable, "-c", STANDARD_SCRIPT], capture_output=True, text=True, env=env,
                           timeout=120)
    finally:
        lease.close()
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout.strip().splitlines()[-1])
    every, check = d["every"], d["check"]
    # 1000 steps without a reader: asked once per `check` steps (on every `every`-th step), nothing received later
    assert d["asked"] == 1000 // check, d
    assert d["forces"] and min(d["forces"]) >= d["joined"], d["forces"][:5]
    first = d["joined"] + check + every
    expected = [f for f in range(0, d["last"] + 1, every) if f >= first]
    assert d["forces"][0] <= first and d["forces"][-len(expected):] == expected, d["forces"]
