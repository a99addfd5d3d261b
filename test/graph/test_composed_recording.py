"""A lockstep composed run records in its own process (recording.in_process: the recorder takes the loop topics
from the local bus): the bag holds what a run through separate processes records (topics, types, one message per
step, the same values), and no recorder process was started.  Realtime composed runs keep the recorder in its own
process (test/launch/test_launch_realtime_composed.py)."""
from __future__ import annotations

import numpy as np
from shared_runs import shared_run

from rths_ros.bag import read_bag
from rths_ros.runtime.topics import TOPICS

LOOP = [t.name for t in TOPICS if t.kind == "control"]


def _topics(bag) -> dict[str, str]:
    from rosbags.rosbag2 import Reader
    with Reader(bag) as r:
        return {c.topic: c.msgtype for c in r.connections}


def test_composed_lockstep_run_writes_the_bag_of_a_processes_run_in_process():
    comp = shared_run("contact_1d", composed=True, args=("--no-plots",))
    proc = shared_run("contact_1d")
    logs = sorted(p.stem for p in (comp.out / "logs").glob("*.log"))
    assert "recorder" not in logs and any("composed" in name for name in logs), logs
    assert _topics(comp.out / "bag") == _topics(proc.out / "bag")
    a, b = read_bag(comp.out / "bag", LOOP), read_bag(proc.out / "bag", LOOP)
    assert set(a) == set(b) and len(a) >= 6
    n = 4001
    for topic in a:
        assert {m.header.frame_id for _, m in a[topic]} == {m.header.frame_id for _, m in b[topic]}, topic  # the mark
        steps = [int(m.step) for _, m in a[topic]]
        assert steps == list(range(steps[0], steps[0] + len(steps))) and len(steps) in (n, n - 1), topic
        assert steps == [int(m.step) for _, m in b[topic]], topic
    for topic, field in (("/rths/interface_force", "force"), ("/rths/interface_command", "position"),
                         ("/rths/leg_command", "length"), ("/rths/leg_state", "length")):
        x = np.array([np.asarray(getattr(m, field)) for _, m in a[topic]])
        y = np.array([np.asarray(getattr(m, field)) for _, m in b[topic]])
        assert np.array_equal(x, y), topic
    assert "completed (4001 of 4001 steps recorded)" in comp.stdout


def test_in_process_bytes_have_the_wire_length_and_content_of_every_loop_type():
    """Each control topic's message (sequences filled and empty) as the in-process recorder serializes it and as a
    DDS subscription receives it: the same length, and rosbags reads the same message from both."""
    import time

    import rclpy
    from test_bag_writer import _loop_messages

    from rths_ros import msg as M
    from rths_ros.bag import cdr_serializer, typestore
    from rths_ros.runtime.domain import DomainLease
    ts = typestore()
    cases = _loop_messages()
    lease = DomainLease()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=lease.domain_id)
    try:
        node = rclpy.create_node("wire_probe", context=ctx)
        got: dict[int, bytes] = {}
        pubs = []
        for i, (typ, _, _m) in enumerate(cases):
            cls = getattr(M, typ.split("/")[-1])
            node.create_subscription(cls, f"/probe_{i}", lambda d, i=i: got.setdefault(i, d), 10, raw=True)
            pubs.append(node.create_publisher(cls, f"/probe_{i}", 10))
        t_end = time.monotonic() + 20.0
        while time.monotonic() < t_end and not all(p.get_subscription_count() for p in pubs):
            time.sleep(0.05)
        for p, (_, _, m) in zip(pubs, cases):
            p.publish(m)
        ex = rclpy.executors.SingleThreadedExecutor(context=ctx)
        ex.add_node(node)
        while time.monotonic() < t_end and len(got) < len(cases):
            ex.spin_once(timeout_sec=0.05)
        assert len(got) == len(cases)
        for i, (typ, filled, m) in enumerate(cases):
            ours = cdr_serializer(typ)(m)
            assert len(ours) == len(got[i]), (typ, filled, len(ours), len(got[i]))
            a, b = ts.deserialize_cdr(ours, typ), ts.deserialize_cdr(got[i], typ)
            assert ts.serialize_cdr(a, typ) == ts.serialize_cdr(b, typ), (typ, filled)
        ex.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
        lease.close()


# a composed process's recorder: loop messages written on another thread (as the plant's safe ramp publishes after an
# abort) while the executor's callbacks flush the bag and write the events; every message in a bag that opens
_RACE = r"""
import sys, threading
from pathlib import Path
import rclpy
from rths_ros.app import scenario as scn
from rths_ros.msg import LegState, TestEvent
from rths_ros.nodes.recorder import Recorder
from rths_ros.runtime.local_bus import LocalBus
from rths_ros.runtime.node import RthsNode

out = Path(sys.argv[1])
rclpy.init()
RthsNode.local_bus = LocalBus(lockstep=True, recorder_local=True)
rec = Recorder(scn.load("contact_1d"), out)
msg = LegState()
msg.header.frame_id = "rths:contact_1d"
N = 20000

def ramp():                      # the plant's ramp thread: loop messages through the bus
    for k in range(N):
        msg.step = k
        msg.length[:] = k
        RthsNode.local_bus.deliver("/rths/leg_state", msg)

t = threading.Thread(target=ramp)
t.start()
events = rec._writer_for("/rths/events")       # a DDS subscription's writer: runs on the executor's thread
ev = TestEvent()
from rclpy.serialization import serialize_message
data = serialize_message(ev)
flushes = 0
while t.is_alive():
    rec._flush()
    events(data)
    flushes += 1
t.join()
rec.finalize()
print("flushes", flushes)
"""


def test_a_composed_recorder_writing_from_two_threads_leaves_a_whole_bag(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "run"
    out.mkdir()
    p = subprocess.run([sys.executable, "-c", _RACE, str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert int(p.stdout.split()[-1]) >= 2, p.stdout        # the flushes interleaved with the writes
    legs = read_bag(out / "bag", ["/rths/leg_state"])["/rths/leg_state"]
    assert [int(m.step) for _, m in legs] == list(range(20000))
    assert all(float(m.length[0]) == int(m.step) for _, m in legs)
