"""The run's loop topics in a DDS partition of their own (``safety.partition``; docs/safety.md, "A foreign flood").

A DDS writer and reader match only when they share a partition, and the check is made once, at discovery, inside
Fast DDS: a foreign node that writes a loop topic of the run in another partition (every ROS node writes in the
default one) is never matched with the run's readers, so not one of its samples is sent to them, let alone wakes
a node's Python.  Its publisher still shows in the ROS graph, where the publisher check reports it as before.

ROS 2 has no partition QoS; Fast DDS takes one per endpoint from the property ``partitions`` of a DataWriter or
DataReader profile, and rmw_fastrtps loads the profile named like the topic (its fully qualified ROS name, e.g.
``/rig_a/rths/leg_command``) on top of the defaults for every writer and reader it creates.  Before its DDS
participant exists, a node process with ``safety.partition`` set therefore writes a profile file: the profile file
it would have read (config/fastdds.xml, or the one the caller named) plus, for every loop topic under the node's
namespace, a writer and a reader profile that copy the default ones and add the partition; it then names that
file in the environment variable Fast DDS reads.  The file is written into OUT/dds/ (or a temporary folder
without OUT): ``FASTDDS_DEFAULT_PROFILES_FILE=OUT/dds/<process>.xml ros2 topic echo /rths/leg_command`` is how an
outside tool reads the loop of such a run.
"""
from __future__ import annotations

import copy
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

_NS = "http://www.eprosima.com"
#: the Fast DDS property that puts one endpoint in partitions (names separated by ';')
PROPERTY = "partitions"


def _tag(name: str) -> str:
    return f"{{{_NS}}}{name}"


def namespace_of(ros_args: list[str]) -> str:
    """The node namespace a ``--ros-args`` list sets (``-r __ns:=/rig_a`` or ``--remap node:__ns:=...``); '/' if none."""
    ns = "/"
    for i, tok in enumerate(ros_args[:-1]):
        if tok in ("-r", "--remap"):
            key, _, value = ros_args[i + 1].partition(":=")
            if key.rsplit(":", 1)[-1] == "__ns" and value:
                ns = value if value.startswith("/") else "/" + value
    return ns


def loop_topic_names(namespace: str) -> list[str]:
    """The fully qualified names of the run's loop topics (the topics with producers) under ``namespace``."""
    from rths_ros.runtime.topics import TOPICS
    prefix = namespace.rstrip("/")
    return [prefix + t.name for t in TOPICS if t.producers]


def _default(profiles: ET.Element, kind: str) -> ET.Element:
    for el in profiles.findall(_tag(kind)):
        if el.get("is_default_profile") == "true":
            return el
    return ET.Element(_tag(kind))


def _with_partition(endpoint: ET.Element, name: str, partition: str) -> ET.Element:
    el = copy.deepcopy(endpoint)
    el.attrib.pop("is_default_profile", None)
    el.set("profile_name", name)
    policy = el.find(_tag("propertiesPolicy"))
    if policy is None:
        policy = ET.SubElement(el, _tag("propertiesPolicy"))
    props = policy.find(_tag("properties"))
    if props is None:
        props = ET.SubElement(policy, _tag("properties"))
    for p in list(props):
        n = p.find(_tag("name"))
        if n is not None and n.text == PROPERTY:
            props.remove(p)
    prop = ET.SubElement(props, _tag("property"))
    ET.SubElement(prop, _tag("name")).text = PROPERTY
    ET.SubElement(prop, _tag("value")).text = partition
    return el


def profile_text(base_xml: str, topics: list[str], partition: str) -> str:
    """The profile file ``base_xml`` plus a writer and a reader profile per topic: the topic's own profile where the
    file has one, else the default one, with the partition added (set, where it had one)."""
    ET.register_namespace("", _NS)
    root = ET.fromstring(base_xml) if base_xml.strip() else ET.Element(_tag("dds"))
    profiles = root.find(_tag("profiles"))
    if profiles is None:
        profiles = ET.SubElement(root, _tag("profiles"))
    for kind in ("data_writer", "data_reader"):
        default = _default(profiles, kind)
        own = {el.get("profile_name"): el for el in profiles.findall(_tag(kind))}
        for topic in topics:
            base = own.get(topic)
            if base is not None:            # a profile of the topic's own (the caller's file) is kept and extended
                profiles.remove(base)
            profiles.append(_with_partition(default if base is None else base, topic, partition))
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def apply_partition(partition: str, ros_args: list[str], out: Path | None, process: str,
                    env: dict | None = None) -> Path | None:
    """Write this process's profile file with the loop topics in ``partition`` and name it in ``env`` (default:
    os.environ), before the process's DDS participant is created; None (nothing changed) when ``partition`` is
    empty."""
    if not partition:
        return None
    from rths_ros.resources import config_dir
    from rths_ros.runtime.fastdds import FASTDDS_PROFILES, fastdds_generation
    env = os.environ if env is None else env
    var, default_name = FASTDDS_PROFILES[fastdds_generation(env)]
    base = env.get(var) or str(config_dir() / default_name)
    try:
        base_xml = Path(base).read_text()
    except OSError:
        base_xml = ""
    text = profile_text(base_xml, loop_topic_names(namespace_of(ros_args)), partition)
    folder = (out / "dds") if out is not None else Path(tempfile.mkdtemp(prefix="rths-dds-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{process}.xml"
    path.write_text(text)
    env[var] = str(path)
    return path


__all__ = ["apply_partition", "profile_text", "namespace_of", "loop_topic_names", "PROPERTY"]
