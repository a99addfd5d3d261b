"""Recorded bags decode with an independent MCAP reader, from the schemas they embed.

The decoding runs in a separate interpreter (``python -I``) that refuses to import rths_ros, rosbags, rclpy,
the rosidl tooling and the generated ROS 2 message packages: all it has is the `mcap` and `mcap-ros2-support`
packages and the bag file.  Its result (header, channels, schemas, every message decoded to plain data) is
compared with what the package's own reader (`rths_ros.bag.read_bag`, built on rosbags) returns for the same
bag: message counts per topic, log times and every field of every message.
"""
from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from rosbags.interfaces import Nodetype

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual
from rths_ros.bag import SCENARIO_TOPIC, BagWriter, read_bag, read_scenario_yaml, typestore
from rths_ros.runtime.topics import TOPICS

ROOT = Path(__file__).resolve().parents[2]
SHORT = "loop.duration_s=0.5"
SEPARATOR = "=" * 80

# Run as `python -I -c DECODER BAG.mcap OUT.json`.  Writes what it read as JSON; a message that does not decode
# is listed under "errors" (topic, index, exception) rather than stopping the reading.
DECODER = r'''
import importlib.abc
import json
import sys
from types import SimpleNamespace

REFUSED = {"rths_ros", "rosbags", "rclpy", "rosidl_runtime_py", "rosidl_parser", "rosidl_adapter",
           "rosidl_generator_py", "std_msgs", "builtin_interfaces", "geometry_msgs", "diagnostic_msgs"}


class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in REFUSED:
            raise ModuleNotFoundError(f"{name} is not available to the independent reader", name=name)
        return None


def refused_loaded():
    return sorted(m for m in sys.modules if m.partition(".")[0] in REFUSED)


assert not refused_loaded(), refused_loaded()
sys.meta_path.insert(0, Refuse())
try:
    import rths_ros  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("rths_ros is importable in the independent reader")

from mcap.reader import NonSeekingReader, SeekingReader
from mcap_ros2.decoder import DecoderFactory


def plain(v):
    if isinstance(v, SimpleNamespace):        # a decoded message: its fields are its __slots__
        return {k: plain(getattr(v, k)) for k in type(v).__slots__}
    if isinstance(v, (bytes, bytearray)):
        return list(v)
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


bag, out = sys.argv[1:3]
result = {"channels": [], "statistics": {}, "streamed": {}, "messages": {}, "errors": []}
with open(bag, "rb") as f:
    reader = SeekingReader(f, validate_crcs=True)
    result["profile"] = reader.get_header().profile
    summary = reader.get_summary()
    factory = DecoderFactory()
    decoders = {}
    for cid, ch in sorted(summary.channels.items()):
        schema = summary.schemas.get(ch.schema_id)
        result["channels"].append({
            "topic": ch.topic, "message_encoding": ch.message_encoding,
            "schema_name": schema.name if schema else None, "schema_encoding": schema.encoding if schema else None,
            "schema_text": schema.data.decode() if schema else None})
        try:
            decoders[cid] = factory.decoder_for(ch.message_encoding, schema)
        except Exception as e:
            decoders[cid] = None
            result["errors"].append({"topic": ch.topic, "index": None, "error": f"no decoder: {e!r}"})
        result["messages"][ch.topic] = []
    result["statistics"] = {summary.channels[c].topic: n
                            for c, n in summary.statistics.channel_message_counts.items()}
    for _schema, ch, m in reader.iter_messages(log_time_order=False):
        decoded = result["messages"][ch.topic]
        if decoders[ch.id] is None:
            continue
        try:
            decoded.append([m.log_time, plain(decoders[ch.id](m.data))])
        except Exception as e:
            result["errors"].append({"topic": ch.topic, "index": len(decoded), "error": repr(e)})
            decoded.append(None)
# the same file read record by record from the start, as a streaming consumer does
with open(bag, "rb") as f:
    for _schema, ch, _m in NonSeekingReader(f, validate_crcs=True).iter_messages():
        result["streamed"][ch.topic] = result["streamed"].get(ch.topic, 0) + 1
result["refused_loaded"] = refused_loaded()
with open(out, "w") as f:
    json.dump(result, f)
'''


def independent_read(mcap_path: Path, work: Path) -> dict:
    """What the independent reader decodes from mcap_path (see DECODER)."""
    out = work / "independent.json"
    p = subprocess.run([sys.executable, "-I", "-c", DECODER, str(mcap_path), str(out)], capture_output=True,
                       text=True, timeout=300, cwd=str(work), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(out.read_text())
    assert r["refused_loaded"] == [], r["refused_loaded"]
    return r


def plain(v):
    """A rosbags message as the JSON-able data the independent reader writes (fields only, no constants)."""
    if hasattr(v, "__msgtype__"):
        _consts, fields = typestore().fielddefs[v.__msgtype__]
        return {name: plain(getattr(v, name)) for name, _desc in fields}
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
              "int64", "uint64", "string", "wstring"}


def schema_gaps(name: str, text: str) -> list[str]:
    """Types a ros2msg schema uses without defining them (an empty list for a complete schema)."""
    blocks = text.split("\n" + SEPARATOR + "\n")
    pkg, _, short = name.split("/")
    defined = {f"{pkg}/{short}"}
    bodies = [(pkg, blocks[0])]
    for block in blocks[1:]:
        head, _, body = block.partition("\n")
        assert head.startswith("MSG: "), f"{name}: dependency section without a `MSG: pkg/Name` line: {head!r}"
        dep = head[5:].strip()
        defined.add(dep)
        bodies.append((dep.split("/")[0], body))
    gaps = []
    for owner, body in bodies:
        for line in body.splitlines():
            line = line.split("#")[0].strip()
            if not line:
                continue
            typ, _, rest = line.partition(" ")
            if "=" in rest:                          # a constant
                continue
            typ = re.sub(r"\[.*\]$", "", typ)
            typ = re.sub(r"<=\d+$", "", typ)
            if typ in PRIMITIVES:
                continue
            ref = typ if "/" in typ else ("std_msgs/Header" if typ == "Header" else f"{owner}/{typ}")
            if ref not in defined:
                gaps.append(ref)
    return gaps


def assert_same_messages(ours: dict[str, list], theirs: dict[str, list]) -> None:
    """Every topic, every message: the same log time and the same field values (NaN included)."""
    assert set(ours) == set(theirs)
    for topic, msgs in ours.items():
        other = theirs[topic]
        assert len(other) == len(msgs), topic
        for i, ((t_ns, msg), got) in enumerate(zip(msgs, other)):
            want = json.dumps([t_ns, plain(msg)], sort_keys=True)
            have = json.dumps(got, sort_keys=True)
            assert have == want, f"{topic} message {i}:\n independent {have}\n package     {want}"


# ---------------------------------------------------------------------------------------------------------------
# a recorded run


@pytest.fixture(scope="module")
def run_bag(tmp_path_factory):
    """A short default contact_1d run through the node graph; its bag, read by both readers."""
    work = tmp_path_factory.mktemp("interop")
    out = work / "run"
    p = subprocess.run([sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d", "--set", SHORT, "--out", str(out),
                        "--no-analyze"], capture_output=True, text=True, timeout=600, cwd=str(ROOT),
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    (mcap_path,) = sorted((out / "bag").glob("*.mcap"))
    return {"bag": out / "bag", "ours": read_bag(out / "bag"), "theirs": independent_read(mcap_path, work)}


def test_every_channel_embeds_a_complete_ros2msg_schema(run_bag):
    r = run_bag["theirs"]
    assert r["profile"] == "ros2"
    channels = {c["topic"]: c for c in r["channels"]}
    assert len(channels) == len(r["channels"])
    assert set(channels) == set(run_bag["ours"])
    assert set(channels) >= {SCENARIO_TOPIC, "/rths/leg_state", "/rths/raw_wrench", "/rths/interface_force",
                             "/rths/interface_command", "/rths/interface_state", "/rths/leg_command",
                             "/rths/events", "/rths/timing"}
    types = {t.name: t.type for t in TOPICS} | {SCENARIO_TOPIC: "std_msgs/msg/String"}
    for topic, c in channels.items():
        assert c["message_encoding"] == "cdr", topic
        assert c["schema_encoding"] == "ros2msg", topic
        if topic in types:
            assert c["schema_name"] == types[topic], topic
        assert c["schema_text"].strip(), topic
        assert schema_gaps(c["schema_name"], c["schema_text"]) == [], (topic, c["schema_text"])
    # the dependencies are in the schemas themselves, e.g. the header and the wrench of RawWrench
    raw = channels["/rths/raw_wrench"]["schema_text"]
    for dep in ("std_msgs/Header", "builtin_interfaces/Time", "geometry_msgs/Wrench", "geometry_msgs/Vector3"):
        assert f"{SEPARATOR}\nMSG: {dep}\n" in raw, dep


def test_every_message_decodes_and_the_counts_match_the_package_reader(run_bag):
    r, ours = run_bag["theirs"], run_bag["ours"]
    assert r["errors"] == []
    counts = {t: len(m) for t, m in ours.items()}
    assert {t: len(m) for t, m in r["messages"].items()} == counts
    assert r["statistics"] == counts          # the summary's statistics record
    assert r["streamed"] == counts            # the file read record by record from its start
    steps = scn.load("contact_1d", [SHORT]).steps
    for topic in ("/rths/leg_state", "/rths/raw_wrench", "/rths/interface_force", "/rths/interface_command",
                  "/rths/interface_state"):
        assert counts[topic] == steps + 1, topic
    assert counts["/rths/leg_command"] == steps
    assert counts[SCENARIO_TOPIC] == 1


def test_decoded_fields_equal_the_package_reader(run_bag):
    r, ours = run_bag["theirs"], run_bag["ours"]
    assert_same_messages(ours, r["messages"])
    theirs = {t: [m for _, m in msgs] for t, msgs in r["messages"].items()}
    s = scn.load("contact_1d", [SHORT])
    # spot checks, read from the independent decoding alone
    assert [m["step"] for m in theirs["/rths/interface_command"]] == list(range(s.steps + 1))
    assert [m["step"] for m in theirs["/rths/interface_force"]] == list(range(s.steps + 1))
    forces = np.array([m["force"] for m in theirs["/rths/interface_force"]])
    assert forces.shape == (s.steps + 1, 1)
    assert np.array_equal(forces, np.array([np.asarray(m.force) for _, m in ours["/rths/interface_force"]]))
    # and they are the values of the same scenario run in-process (test/graph/test_contact1d_graph.py)
    v = run_virtual(s)
    positions = np.array([m["position"][0] for m in theirs["/rths/interface_command"]])
    for got, want in ((forces[:, 0], v["f_int"]), (positions, v["z_cmd"])):
        assert np.max(np.abs(got - want)) <= 1e-9 * max(np.max(np.abs(want)), 1e-12)
    assert all(len(m["length"]) == 6 for m in theirs["/rths/leg_command"])
    kinds = [m["type"] for m in theirs["/rths/events"]]
    assert kinds == [int(m.type) for _, m in ours["/rths/events"]]
    assert {1, 8, 6} <= set(kinds)            # START, DONE, STOP
    assert {m["node"] for m in theirs["/rths/timing"]} >= {"sim_plant", "numerical_substructure"}
    (scenario,) = theirs[SCENARIO_TOPIC]
    assert scenario["data"] == read_scenario_yaml(run_bag["bag"])
    recorded = scn.from_data(yaml.safe_load(scenario["data"]))
    assert recorded.description.endswith(f"[--set {SHORT}]")     # the command line notes its overrides there
    assert dataclasses.replace(recorded, description=s.description) == s


# ---------------------------------------------------------------------------------------------------------------
# every type the recorder can write, not only those of a contact_1d run


def _value(ts, desc, seed: int):
    kind, detail = desc
    if kind == Nodetype.BASE:
        typ = detail[0]
        if typ in ("string", "wstring"):
            return f"text {seed}"
        if typ == "bool":
            return seed % 2 == 1
        if typ.startswith("float"):
            return seed + 0.125
        return seed % 100
    if kind == Nodetype.NAME:
        return _message(ts, detail, seed)
    sub, length = detail
    items = [_value(ts, sub, seed + i) for i in range(length if kind == Nodetype.ARRAY else 3)]
    if sub[0] == Nodetype.BASE and sub[1][0] not in ("string", "wstring"):
        return np.array(items, dtype={"byte": "uint8", "char": "uint8"}.get(sub[1][0], sub[1][0]))
    return items


def _message(ts, msgtype: str, seed: int):
    _consts, fields = ts.fielddefs[msgtype]
    return ts.types[msgtype](**{name: _value(ts, desc, seed + 7 * i) for i, (name, desc) in enumerate(fields)})


def test_every_recordable_type_decodes_independently(tmp_path):
    ts = typestore()
    types = sorted({t.type for t in TOPICS} | {"std_msgs/msg/String"})
    w = BagWriter(tmp_path / "bag", "mcap")
    for i, msgtype in enumerate(types):
        for j in range(2):
            w.write_msg(f"/interop/{msgtype.split('/')[-1]}", msgtype, 1_000 + 10 * i + j, _message(ts, msgtype, 3 * j))
    w.close()
    (mcap_path,) = sorted((tmp_path / "bag").glob("*.mcap"))
    r = independent_read(mcap_path, tmp_path)
    assert r["errors"] == []
    assert sorted(c["schema_name"] for c in r["channels"]) == types
    for c in r["channels"]:
        assert c["schema_encoding"] == "ros2msg" and c["message_encoding"] == "cdr", c["topic"]
        assert schema_gaps(c["schema_name"], c["schema_text"]) == [], (c["topic"], c["schema_text"])
    ours = read_bag(tmp_path / "bag")
    assert {t: len(m) for t, m in ours.items()} == r["statistics"] == r["streamed"] == {
        f"/interop/{t.split('/')[-1]}": 2 for t in types}
    assert_same_messages(ours, r["messages"])
