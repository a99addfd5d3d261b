"""The bag writer's MCAP fast path (rths_ros.bag.BagWriter._fast_mcap_write) against rosbags' own writer: the same
messages with the same timestamps give byte-identical files, across chunk boundaries, with timestamps out of order,
and the bag reads back message for message."""
from __future__ import annotations

import random

import pytest

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


def _write(path, msgs, fast: bool, flush_every: int = 0) -> BagWriter:
    w = BagWriter(path)
    assert (w._fast is not None) is True          # rosbags as pinned: the fast path is taken
    if not fast:
        w._fast = None
    for topic, typ, _, _ in msgs[:3]:
        w.add_topic(topic, typ)
    w.set_custom_data("k", "v")
    for i, (topic, _, t, data) in enumerate(msgs):
        w.write_raw(topic, t, data)
        if flush_every and i % flush_every == flush_every - 1:
            w.flush()                            # (the recorder's flush: the chunk closed by the same path)
    w.close()
    return w


@pytest.mark.parametrize("flush_every", [0, 997])
def test_fast_path_writes_the_same_bytes_as_rosbags(tmp_path, flush_every):
    """Chunks closed when they pass 1 MiB and (``flush_every``) by the recorder's flushes: the fast path closes them
    with its own packing of the message indexes (rths_ros.bag._close_chunk), rosbags with its own."""
    msgs = _messages(6000)          # about 2 MB of records: more than one chunk of 1 MiB
    # (same bag name in both: the file's rosbag2 metadata record names the .mcap file)
    a = _write(tmp_path / "public" / "bag", msgs, fast=False, flush_every=flush_every)
    b = _write(tmp_path / "fast" / "bag", msgs, fast=True, flush_every=flush_every)
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


def _loop_messages():
    """Every control topic's message, once with its sequences filled and once with them empty (the last field of an
    InterfaceState or an AdaptiveFilter is a sequence)."""
    import numpy as np

    from rths_ros import msg as M
    from rths_ros.runtime.topics import TOPICS
    out = []
    for t in TOPICS:
        if t.kind != "control":
            continue
        cls = getattr(M, t.type.split("/")[-1])
        seqs = [name for name, typ in cls.get_fields_and_field_types().items() if typ.startswith("sequence<double")]
        for filled in (True, False):
            m = cls()
            m.step = 17
            m.header.frame_id = "run-mark"
            for name in seqs:
                setattr(m, name, np.arange(3.0) + 0.5 if filled else [])
            out.append((t.type, filled, m))
    return out


def test_in_process_serialization_reads_back_with_every_loop_type_and_empty_sequences():
    from rths_ros.bag import cdr_serializer
    ts = typestore()
    cases = _loop_messages()
    assert {typ for typ, _, _ in cases} >= {"rths_ros/msg/InterfaceState", "rths_ros/msg/AdaptiveFilter",
                                            "rths_ros/msg/LegCommand"}
    for typ, filled, m in cases:
        data = cdr_serializer(typ)(m)
        assert len(data) == 4 + ts.get_msgdef(typ).getsize_cdr(0, m, ts), (typ, filled)
        back = ts.deserialize_cdr(data, typ)
        assert int(back.step) == 17 and back.header.frame_id == "run-mark", typ
        for name, t in type(m).get_fields_and_field_types().items():
            if t.startswith("sequence<double"):
                assert list(getattr(back, name)) == list(getattr(m, name)), (typ, name)


def test_a_writer_bound_to_a_topic_writes_what_write_raw_writes(tmp_path):
    msgs = _messages(900)
    a = BagWriter(tmp_path / "a" / "bag")
    b = BagWriter(tmp_path / "b" / "bag")
    for w in (a, b):
        for topic, typ, _, _ in msgs[:3]:
            w.add_topic(topic, typ)
    bound = {topic: b.raw_writer(topic) for topic, _, _, _ in msgs[:3]}
    for topic, _, t, data in msgs:
        a.write_raw(topic, t, data)
        bound[topic](t, data)
    a.close()
    b.close()
    assert a.count == b.count == len(msgs)
    assert (tmp_path / "a" / "bag" / "bag.mcap").read_bytes() == (tmp_path / "b" / "bag" / "bag.mcap").read_bytes()
