"""rosbag2 (MCAP) writing and reading with the `rosbags` library, including the package's own messages.

Writing takes the serialized CDR bytes straight from the DDS subscription (no conversion), so
the recorder costs little per message.  Reading turns a bag back into per-topic lists of
(timestamp, message) for the analysis.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from .core.scenario import package_root

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
    msgs = read_bag(path, [SCENARIO_TOPIC]).get(SCENARIO_TOPIC)
    return msgs[0][1].data if msgs else None
