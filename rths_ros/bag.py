"""rosbag2 (MCAP) writing and reading with the `rosbags` library, including the package's own messages.

Writing takes the serialized CDR bytes straight from the DDS subscription (no conversion), so
the recorder costs little per message.  Reading turns a bag back into per-topic lists of
(timestamp, message) for the analysis.

Crash safety: :meth:`BagWriter.flush` closes the pending MCAP chunk and hands it to the operating
system (the recorder does it every ``FLUSH_S``); a recorder killed without closing its bag leaves
an MCAP file without summary and no metadata.yaml.  A bag can also be damaged later (a copy cut short,
a full disk, a file overwritten): :func:`bag_damage` tells a readable bag from one that is not (metadata.yaml
missing, an MCAP file of zero bytes, without the MCAP header or without the end magic of a closed file), and
:func:`recover` reads such a file record by record up to the last complete chunk and writes a complete bag
from it, metadata.yaml present or not.
"""
from __future__ import annotations

import shutil
import struct
import zlib
from collections import defaultdict
from functools import lru_cache
from io import BytesIO
from itertools import chain
from pathlib import Path

from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from rths_ros.resources import package_root

SCENARIO_TOPIC = "/rths/scenario"
SCENARIO_KEY = "rths.scenario"


def msg_dir() -> Path:
    here = package_root() / "msg"
    if here.is_dir():
        return here
    try:  # installed in a ROS 2 workspace
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory("rths_ros")) / "msg"
    except Exception:  # pragma: no cover
        return here


@lru_cache(maxsize=1)
def typestore():
    """A rosbags type store with the ROS 2 Kilted standard types and rths_ros/msg/*."""
    ts = get_typestore(Stores.ROS2_KILTED)
    types = {}
    for f in sorted(msg_dir().glob("*.msg")):
        types.update(get_types_from_msg(f.read_text(), f"rths_ros/msg/{f.stem}"))
    ts.register(types)
    return ts


class BagWriter:
    """Thin wrapper: one connection per topic, raw CDR in, MCAP out."""

    def __init__(self, path: Path, storage: str = "mcap"):
        self.path = Path(path)
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        self._w = Writer(self.path, version=9, storage_plugin=plugin)
        self._w.open()
        self._conns: dict[str, object] = {}
        self.count = 0
        self._fast = self._fast_mcap_write() if storage == "mcap" else None

    def has_topic(self, topic: str) -> bool:
        return topic in self._conns

    def add_topic(self, topic: str, msgtype: str) -> None:
        if topic not in self._conns:
            self._conns[topic] = self._w.add_connection(topic, msgtype, typestore=typestore())

    def write_raw(self, topic: str, t_ns: int, data: bytes) -> None:
        conn = self._conns[topic]
        if self._fast is not None:
            self._fast(conn.id, int(t_ns), data)
        else:
            self._w.write(conn, int(t_ns), data)
        self.count += 1

    def raw_writer(self, topic: str):
        """``write(t_ns, data)`` bound to ``topic`` (added before): :meth:`write_raw` without its per-message lookups,
        for a recorder that writes every loop message in the loop's thread."""
        conn = self._conns[topic]
        fast, cid = self._fast, conn.id
        if fast is None:
            return lambda t_ns, data: self.write_raw(topic, t_ns, data)

        def write(t_ns: int, data: bytes) -> None:
            fast(cid, t_ns, data)
            self.count += 1
        return write

    def _fast_mcap_write(self):
        """The per-message work of rosbags' MCAP writer (``Writer.write`` + ``McapWriter.write``, rosbags
        0.10/0.11, pinned) in one function with one header pack: the same bytes and the same bookkeeping for about
        a third of its cost (an in-process recorder writes every loop message of a step in the loop's thread).
        None where the storage is not that writer (sqlite3, message compression, another rosbags): the public
        ``write`` then.  test/test_bag.py checks that both give byte-identical bags."""
        w = self._w
        st = getattr(w, "storage", None)
        from rosbags.rosbag2 import storage_mcap
        from rosbags.rosbag2.writer import CompressionMode
        chunk = getattr(st, "chunk", None)
        if (type(st) is not storage_mcap.McapWriter or chunk is None
                or not all(hasattr(chunk, a) for a in ("bio", "msgs", "message_start_time", "message_end_time"))
                or not all(hasattr(st, a) for a in ("channel_stats", "message_start_time", "message_end_time",
                                                    "close_chunk"))
                or not all(hasattr(w, a) for a in ("counts", "min_timestamp", "max_timestamp"))
                or getattr(w, "compression_mode", CompressionMode.MESSAGE) == CompressionMode.MESSAGE):
            return None
        if not hasattr(storage_mcap, "PendingChunk") or not all(hasattr(st, a) for a in ("compressor", "compression",
                                                                                         "chunks", "bio")):
            return None
        header = struct.Struct("<BQHIQQ")       # op 0x05, record length, channel, sequence 0, log time, publish time
        pack = header.pack
        counts = w.counts
        stats = st.channel_stats

        def write(cid: int, t: int, data: bytes) -> None:
            ch = st.chunk                          # (close_chunk replaces it)
            if t < st.message_start_time:
                st.message_start_time = t
            if t > st.message_end_time:
                st.message_end_time = t
            stats[cid] += 1
            if t < ch.message_start_time:
                ch.message_start_time = t
            if t > ch.message_end_time:
                ch.message_end_time = t
            bio = ch.bio
            ch.msgs[cid].append((t, bio.tell()))
            bio.write(pack(0x05, 22 + len(data), cid, 0, t, t))
            bio.write(data)
            if bio.tell() > 2**20:
                _close_chunk(st)
            counts[cid] += 1
            if t < w.min_timestamp:
                w.min_timestamp = t
            if t > w.max_timestamp:
                w.max_timestamp = t
        return write

    def write_msg(self, topic: str, msgtype: str, t_ns: int, msg) -> None:
        self.add_topic(topic, msgtype)
        self.write_raw(topic, t_ns, typestore().serialize_cdr(msg, msgtype))

    def set_custom_data(self, key: str, value: str) -> None:
        self._w.set_custom_data(key, value)

    def flush(self) -> None:
        """Close the pending chunk (if it holds anything) and write it through to the file."""
        st = getattr(self._w, "storage", None)
        chunk = getattr(st, "chunk", None)
        if chunk is None:          # sqlite3: every write is already in the database file
            return
        if chunk.bio.tell():
            if self._fast is not None:
                _close_chunk(st)
            else:
                st.close_chunk()
        st.bio.flush()

    def close(self) -> None:
        self._w.close()


def _close_chunk(st) -> None:
    """rosbags' ``McapWriter.close_chunk`` (0.10/0.11, pinned) with the chunk's message indexes packed in one call per
    channel instead of two writes per message, and an uncompressed chunk written from its buffer without a copy: the
    same bytes (test/test_bag_writer.py) for 0.9 instead of 2.5 ms per chunk of 6000 messages (3.4 ms timed in a
    composed run, whose recorder closes one in the loop's thread every 1079 steps)."""
    from rosbags.rosbag2.storage_mcap import PendingChunk
    ch, out = st.chunk, st.bio
    size = ch.bio.tell()
    comp = st.compression.encode()
    # (uncompressed, the chunk's buffer goes to the file as it is, without a copy)
    compressed = ch.bio.getbuffer() if not comp else st.compressor(ch.bio.getvalue())
    head = struct.pack("<QQQII", ch.message_start_time, ch.message_end_time, size, 0, len(comp)) + comp
    chunk_start = out.tell()
    out.write(struct.pack("<BQ", 0x06, len(head) + 8 + len(compressed)) + head + struct.pack("<Q", len(compressed)))
    out.write(compressed)
    n_compressed = len(compressed)
    del compressed                             # (releases the buffer's export before the chunk is replaced)
    chunk_end = out.tell()
    offsets = []
    for cid, msgs in ch.msgs.items():
        offsets.append((cid, out.tell()))
        n = len(msgs)
        out.write(struct.pack(f"<BQHI{2 * n}Q", 0x07, 6 + 16 * n, cid, 16 * n, *chain.from_iterable(msgs)))
    rec = BytesIO()
    rec.write(struct.pack("<QQQQI", ch.message_start_time, ch.message_end_time, chunk_start, chunk_end - chunk_start,
                          10 * len(offsets)))
    rec.write(b"".join(struct.pack("<HQ", cid, off) for cid, off in offsets))
    rec.write(struct.pack("<Q", out.tell() - chunk_end))
    rec.write(struct.pack("<I", len(comp)) + comp)
    rec.write(struct.pack("<QQ", n_compressed, size))
    st.chunks.append(rec)
    st.chunk = PendingChunk(2**63 - 1, 0, BytesIO(), defaultdict(list))


def _has_sequence(ts, typename: str) -> bool:
    """The message holds a variable-length sequence (of any type), here or in a nested message."""
    from rosbags.interfaces import Nodetype
    for _, (kind, rest) in ts.fielddefs[typename][1]:
        if kind == Nodetype.SEQUENCE:
            return True
        if kind == Nodetype.ARRAY:
            kind, rest = rest[0]
        if kind == Nodetype.NAME and _has_sequence(ts, rest):
            return True
    return False


def cdr_serializer(typename: str):
    """``msg -> bytes``: an rclpy message serialized as its DDS publisher puts it on the wire (what a recorder's
    subscription receives), for a recorder that takes messages in process.  rclpy's ``serialize_message`` sizes
    the buffer of a message with an empty sequence too large (an InterfaceForce without forces: 64 bytes where
    the wire has 56; an AdaptiveFilter without gains: 204 for 200), with zeros after the message, which rosbags
    refuses to read; for a type with a sequence the bytes are cut to the exact CDR size (rosbags' own size
    function, about 0.6 µs).  A type without one needs no check (test/test_bag_writer.py).  The six loop messages
    recorded every step have an encoder of their own (:func:`rths_ros.cdr.encoder`), which writes exact sizes."""
    from rths_ros.cdr import encoder
    fast = encoder(typename)
    if fast is not None:
        return fast
    from rclpy.serialization import serialize_message
    ts = typestore()
    if not _has_sequence(ts, typename):
        return serialize_message
    size = ts.get_msgdef(typename).getsize_cdr

    def exact(msg) -> bytes:
        data = serialize_message(msg)
        n = 4 + size(0, msg, ts)
        return data if len(data) == n else data[:n]
    return exact


def string_msg(text: str):
    cls = typestore().types["std_msgs/msg/String"]
    return cls(data=text)


def read_bag(path: Path, topics: list[str] | None = None) -> dict[str, list]:
    """{topic: [(timestamp_ns, msg), ...]} in recording order."""
    ts = typestore()
    out: dict[str, list] = {}
    with Reader(Path(path)) as reader:
        conns = [c for c in reader.connections if topics is None or c.topic in topics]
        for conn, t_ns, raw in reader.messages(connections=conns):
            out.setdefault(conn.topic, []).append((t_ns, ts.deserialize_cdr(raw, conn.msgtype)))
    return out


def read_scenario_yaml(path: Path) -> str | None:
    """The scenario YAML recorded on /rths/scenario (the first message of the bag: reading stops there)."""
    with Reader(Path(path)) as reader:
        conns = [c for c in reader.connections if c.topic == SCENARIO_TOPIC]
        for conn, _t_ns, raw in reader.messages(connections=conns):
            return typestore().deserialize_cdr(raw, conn.msgtype).data
    return None


# ---------------------------------------------------------------------------------------------
# recovery of a bag whose writer was killed

_MAGIC = b"\x89MCAP0\r\n"


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from("<I", buf, pos)
    return buf[pos + 4:pos + 4 + n].decode("utf-8"), pos + 4 + n


def _records(buf: bytes, pos: int, end: int):
    """(opcode, body) of each complete record in buf[pos:end]; stops at a truncated one."""
    while pos + 9 <= end:
        op = buf[pos]
        (n,) = struct.unpack_from("<Q", buf, pos + 1)
        if pos + 9 + n > end:
            return
        yield op, buf[pos + 9:pos + 9 + n]
        pos += 9 + n


def scan_mcap(path: Path) -> tuple[dict[int, tuple[str, str]], list[tuple[int, int, bytes]], int]:
    """Read an MCAP file (possibly cut off or damaged) record by record.

    Returns ({channel id: (topic, message type)}, [(channel id, log time ns, data), ...] in file order,
    number of complete chunks).  Reading stops at the first record that is cut off, malformed or fails its
    chunk's CRC; a file without the MCAP header gives nothing.  Only uncompressed chunks are read (the recorder
    writes those)."""
    buf = Path(path).read_bytes()
    schemas: dict[int, str] = {}
    channels: dict[int, tuple[str, str]] = {}
    messages: list[tuple[int, int, bytes]] = []
    n_chunks = 0
    if not buf.startswith(_MAGIC):
        return channels, messages, n_chunks

    def handle(op: int, body: bytes, into: list) -> None:
        if op == 0x03:                                   # schema: id, name, encoding, data
            (sid,) = struct.unpack_from("<H", body, 0)
            name, _ = _string(body, 2)
            schemas[sid] = name
        elif op == 0x04:                                 # channel: id, schema id, topic, ...
            cid, sid = struct.unpack_from("<HH", body, 0)
            topic, _ = _string(body, 4)
            channels[cid] = (topic, schemas.get(sid, ""))
        elif op == 0x05:                                 # message: channel, sequence, log time, publish time
            cid, _seq, t_log, _t_pub = struct.unpack_from("<HIQQ", body, 0)
            if cid not in channels:
                raise ValueError(f"message on unknown channel {cid}")
            into.append((cid, t_log, bytes(body[22:])))

    try:
        for op, body in _records(buf, len(_MAGIC), len(buf)):
            if op == 0x06:                               # chunk: times, size, crc, compression, records
                (crc,) = struct.unpack_from("<I", body, 24)
                compression, pos = _string(body, 28)
                (n,) = struct.unpack_from("<Q", body, pos)
                if compression:
                    raise ValueError(f"compressed chunks ({compression}) are not read by the recovery")
                inner = body[pos + 8:pos + 8 + n]
                if len(inner) != n or (crc and zlib.crc32(inner) != crc):
                    break                                # a damaged chunk: nothing after it is trusted
                chunk: list = []
                for iop, ibody in _records(inner, 0, len(inner)):
                    handle(iop, ibody, chunk)
                messages.extend(chunk)                   # a chunk counts whole or not at all
                n_chunks += 1
            elif op in (0x03, 0x04, 0x05):
                handle(op, body, messages)
            elif op in (0x02, 0x0F):                     # footer or data end: the data section is over
                break
            elif op == 0x00 or op > 0x0F:                # not an MCAP record: garbage from here on
                break
    except (struct.error, UnicodeDecodeError, ValueError):
        pass                                             # a malformed record: keep what came before it
    return channels, messages, n_chunks


def mcap_damage(path: Path) -> str | None:
    """None for an MCAP file that starts with the MCAP header and ends with the end magic of a closed file; else
    what is wrong with it."""
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        return "zero bytes"
    with open(path, "rb") as f:
        head = f.read(len(_MAGIC))
        if head != _MAGIC:
            return "no MCAP header (not an MCAP file)"
        if size < 2 * len(_MAGIC) + 9:
            return "cut off after its header"
        f.seek(-len(_MAGIC), 2)
        tail = f.read(len(_MAGIC))
    return None if tail == _MAGIC else "cut off (no end magic: not closed, or cut short)"


def bag_damage(bag_dir: Path) -> str | None:
    """Why the MCAP bag in ``bag_dir`` cannot be read as it is (None: it can, or it is no MCAP bag)."""
    bag_dir = Path(bag_dir)
    files = sorted(bag_dir.glob("*.mcap")) if bag_dir.is_dir() else []
    if not files:
        return None
    if not (bag_dir / "metadata.yaml").exists():
        return "no metadata.yaml (its writer did not close it)"
    for f in files:
        why = mcap_damage(f)
        if why:
            return f"{f.name}: {why}"
    return None


def needs_recovery(bag_dir: Path) -> bool:
    return bag_damage(bag_dir) is not None


RECOVERED_KEY = "rths.recovered"


def recovery_note(bag_dir: Path) -> str:
    """What :func:`recover` wrote into a recovered bag's metadata ("" for a bag that was never recovered)."""
    import yaml
    try:
        meta = yaml.safe_load((Path(bag_dir) / "metadata.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return ""
    info = meta.get("rosbag2_bagfile_information") or {}
    return str((info.get("custom_data") or {}).get(RECOVERED_KEY, ""))


def _set_aside(path: Path) -> Path:
    """Rename ``path`` to ``<name>.partial`` (``.partial.1``, ... if taken) and return the new path."""
    target = path.with_name(path.name + ".partial")
    i = 1
    while target.exists():
        target = path.with_name(f"{path.name}.partial.{i}")
        i += 1
    path.rename(target)
    return target


def recover(bag_dir: Path, scenario_text: str | None = None) -> dict:
    """Make a readable bag of a damaged bag directory (:func:`bag_damage`: its writer was killed, or the file was
    cut short, emptied or overwritten later), metadata.yaml present or not.

    The messages of every complete chunk are written to a new bag in the same place; the damaged file is kept as
    ``<name>.mcap.partial`` (and a metadata.yaml it had as ``metadata.yaml.partial``).  ``scenario_text``: the
    run's scenario (OUT/scenario.yaml) for a bag whose own /rths/scenario message was lost; it is written as that
    message and the recovery note says so.  Returns {"messages", "chunks", "topics", "damage", "bytes", "note"}."""
    bag_dir = Path(bag_dir)
    damage = bag_damage(bag_dir)
    if damage is None:
        raise ValueError(f"{bag_dir}: nothing to recover (a readable bag, or no MCAP file)")
    mcap = sorted(bag_dir.glob("*.mcap"))[0]
    size = mcap.stat().st_size
    channels, messages, n_chunks = scan_mcap(mcap)
    tmp = bag_dir.with_name(bag_dir.name + ".recovering")
    if tmp.exists():
        shutil.rmtree(tmp)
    w = BagWriter(tmp, "mcap")
    for _cid, (topic, msgtype) in sorted(channels.items()):
        w.add_topic(topic, msgtype)
    text = None
    for cid, t_ns, data in messages:
        topic, msgtype = channels[cid]
        if topic == SCENARIO_TOPIC and text is None:
            try:
                text = typestore().deserialize_cdr(data, msgtype).data
            except Exception:                            # a scenario message that does not decode is not kept
                continue
        w.write_raw(topic, t_ns, data)
    from_file = text is None and scenario_text is not None
    if from_file:
        text = scenario_text
        w.write_msg(SCENARIO_TOPIC, "std_msgs/msg/String", messages[0][1] - 1 if messages else 0, string_msg(text))
    if text is not None:
        w.set_custom_data(SCENARIO_KEY, text)
    note = (f"{len(messages)} messages from {n_chunks} complete chunks of a damaged bag ({damage}; "
            f"{size} bytes)" + ("; the scenario from the run's scenario.yaml" if from_file else ""))
    w.set_custom_data(RECOVERED_KEY, note)
    w.close()
    _set_aside(mcap)
    if (bag_dir / "metadata.yaml").exists():
        _set_aside(bag_dir / "metadata.yaml")
    for f in tmp.iterdir():
        target = bag_dir / (f.name.replace(tmp.name, bag_dir.name) if f.suffix == ".mcap" else f.name)
        f.rename(target)
    tmp.rmdir()
    # metadata.yaml names the MCAP file of the temporary directory: point it at the moved file
    meta = bag_dir / "metadata.yaml"
    meta.write_text(meta.read_text().replace(tmp.name, bag_dir.name))
    return {"messages": len(messages), "chunks": n_chunks, "topics": sorted(t for t, _ in channels.values()),
            "damage": damage, "bytes": size, "note": note}
