"""The bag writer's MCAP fast path (rths_ros.bag.BagWriter._fast_mcap_write) against rosbags' own writer: the same
messages with the same timestamps give byte-identical files, across chunk boundaries, with timestamps out of order,
and the bag reads back message for message."""
from __future__ import annotations

import random

from rths_ros.bag import BagWriter, read_bag, string_msg, typestore


def _messages(n: int, seed: int = 3):
    """(topic, type, t_ns, CDR bytes) in the order a recorder sees them: mostly rising stamps, a few late."""
    rng = random.Random(seed)
    ts = typestore()
    topics = (("/a", "std_msgs/msg/String"), ("/b", "std_msgs/msg/String"), ("/c", "std_msgs/msg/String"))
    t = 1_700_000_000_000_000_000
    out = []
    for i in range(n):
        topic, typ = topics[i % 3]
        t += rng.randint(0, 50_000)
        stamp = t - rng.randint(0, 10_000_000) if rng.random() < 0.05 else t     # out of order now and then
        text = "x" * rng.randint(0, 600) + str(i)
        out.append((topic, typ, stamp, ts.serialize_cdr(string_msg(text), typ)))
    return out


def _write(path, msgs, fast: bool) -> BagWriter:
    w = BagWriter(path)
    assert (w._fast is not None) is True          # rosbags as pinned: the fast path is taken
    if not fast:
        w._fast = None
    for topic, typ, _, _ in msgs[:3]:
        w.add_topic(topic, typ)
    w.set_custom_data("k", "v")
    for topic, _, t, data in msgs:
        w.write_raw(topic, t, data)
    w.close()
    return w


def test_fast_path_writes_the_same_bytes_as_rosbags(tmp_path):
    msgs = _messages(6000)          # about 2 MB of records: more than one chunk of 1 MiB
    # (same bag name in both: the file's rosbag2 metadata record names the .mcap file)
    a = _write(tmp_path / "public" / "bag", msgs, fast=False)
    b = _write(tmp_path / "fast" / "bag", msgs, fast=True)
    assert a.count == b.count == len(msgs)
    pub = (tmp_path / "public" / "bag" / "bag.mcap").read_bytes()
    fast = (tmp_path / "fast" / "bag" / "bag.mcap").read_bytes()
    assert len(pub) > 2 * 2**20
    assert fast == pub
    assert (tmp_path / "public" / "bag" / "metadata.yaml").read_text() == \
        (tmp_path / "fast" / "bag" / "metadata.yaml").read_text()
    back = read_bag(tmp_path / "fast" / "bag")
    assert sum(len(v) for v in back.values()) == len(msgs)
    ts = typestore()
    for topic in ("/a", "/b", "/c"):           # (the reader orders by timestamp)
        want = sorted((t, ts.deserialize_cdr(d, "std_msgs/msg/String").data) for tp, _, t, d in msgs if tp == topic)
        assert sorted((t, m.data) for t, m in back[topic]) == want


def test_sqlite_storage_takes_the_public_path(tmp_path):
    w = BagWriter(tmp_path / "bag", "sqlite3")
    assert w._fast is None
    w.add_topic("/a", "std_msgs/msg/String")
    w.write_raw("/a", 5, typestore().serialize_cdr(string_msg("hi"), "std_msgs/msg/String"))
    w.close()
    assert [m.data for _, m in read_bag(tmp_path / "bag")["/a"]] == ["hi"]
