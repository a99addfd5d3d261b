"""rosbag2 (MCAP) writing and reading with the `rosbags` library, including the package's own messages.

Writing takes the serialized CDR bytes straight from the DDS subscription (no conversion), so
the recorder costs little per message.  Reading turns a bag back into per-topic lists of
(timestamp, message) for the analysis.

Crash safety: :meth:`BagWriter.flush` closes the pending MCAP chunk and hands it to the operating
system (the recorder does it every ``FLUSH_S``); a recorder killed without closing its bag leaves
an MCAP file without summary and no metadata.yaml.  :func:`recover` reads such a file record by
record up to the last complete chunk and writes a complete bag from it.
"""
from __future__ import annotations

import shutil
import struct
from functools import lru_cache
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

    def add_topic(self, topic: str, msgtype: str) -> None:
        if topic not in self._conns:
            self._conns[topic] = self._w.add_connection(topic, msgtype, typestore=typestore())

    def write_raw(self, topic: str, t_ns: int, data: bytes) -> None:
        self._w.write(self._conns[topic], int(t_ns), data)
        self.count += 1

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
            st.close_chunk()
        st.bio.flush()

    def close(self) -> None:
        self._w.close()


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
    """Read an MCAP file (possibly cut off) record by record.

    Returns ({channel id: (topic, message type)}, [(channel id, log time ns, data), ...] in file order,
    number of complete chunks).  Only uncompressed chunks are read (the recorder writes those)."""
    buf = Path(path).read_bytes()
    if not buf.startswith(_MAGIC):
        raise ValueError(f"{path}: not an MCAP file")
    schemas: dict[int, str] = {}
    channels: dict[int, tuple[str, str]] = {}
    messages: list[tuple[int, int, bytes]] = []
    n_chunks = 0

    def handle(op: int, body: bytes) -> None:
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
            messages.append((cid, t_log, bytes(body[22:])))

    for op, body in _records(buf, len(_MAGIC), len(buf)):
        if op == 0x06:                                   # chunk: times, size, crc, compression, records
            compression, pos = _string(body, 28)
            (n,) = struct.unpack_from("<Q", body, pos)
            if compression:
                raise ValueError(f"{path}: compressed chunks ({compression}) are not supported by the recovery")
            inner = body[pos + 8:pos + 8 + n]
            for iop, ibody in _records(inner, 0, len(inner)):
                handle(iop, ibody)
            n_chunks += 1
        else:
            handle(op, body)
    return channels, messages, n_chunks


def needs_recovery(bag_dir: Path) -> bool:
    bag_dir = Path(bag_dir)
    return bag_dir.is_dir() and not (bag_dir / "metadata.yaml").exists() and any(bag_dir.glob("*.mcap"))


def recover(bag_dir: Path) -> dict:
    """Make a readable bag of a bag directory whose writer was killed (MCAP without metadata.yaml).

    The messages of every complete chunk are written to a new bag in the same place; the cut-off file
    is kept as ``<name>.mcap.partial``.  Returns {"messages": n, "chunks": n, "topics": [...]}."""
    bag_dir = Path(bag_dir)
    if not needs_recovery(bag_dir):
        raise ValueError(f"{bag_dir}: nothing to recover (metadata.yaml present or no MCAP file)")
    (mcap,) = sorted(bag_dir.glob("*.mcap"))[:1]
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
        w.write_raw(topic, t_ns, data)
        if topic == SCENARIO_TOPIC and text is None:
            text = typestore().deserialize_cdr(data, msgtype).data
    if text is not None:
        w.set_custom_data(SCENARIO_KEY, text)
    w.set_custom_data("rths.recovered", f"{len(messages)} messages from {n_chunks} complete chunks")
    w.close()
    mcap.rename(mcap.with_name(mcap.name + ".partial"))
    for f in tmp.iterdir():
        target = bag_dir / (f.name.replace(tmp.name, bag_dir.name) if f.suffix == ".mcap" else f.name)
        f.rename(target)
    tmp.rmdir()
    # metadata.yaml names the MCAP file of the temporary directory: point it at the moved file
    meta = bag_dir / "metadata.yaml"
    meta.write_text(meta.read_text().replace(tmp.name, bag_dir.name))
    return {"messages": len(messages), "chunks": n_chunks, "topics": sorted(t for t, _ in channels.values())}
