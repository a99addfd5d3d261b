"""The live view's scenario section, its node set and process, its launch argument and its Foxglove layouts
(without running a graph; test/graph/test_live_view.py runs it)."""
from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from rths_ros.app import scenario as scn
from rths_ros.app.live import E_STOP_TOPIC, SAFETY_STATE_TOPIC, LiveParams
from rths_ros.launch_support import (
    LAUNCH_ARGUMENTS,
    check_live_port,
    live_note,
    load_for_launch,
    process_groups,
)
from rths_ros.params import ParameterError

ROOT = Path(__file__).resolve().parents[2]


def test_the_live_view_is_off_by_default_and_enabled_by_its_section():
    s = scn.load("contact_1d")
    assert s.live == LiveParams() and not s.live.enabled and "live_view" not in s.run_nodes
    assert (s.live.host, s.live.port, s.live.v1_port, s.live.max_rate_hz, s.live.client_e_stop) == (
        "127.0.0.1", 8765, 8766, 50.0, True)
    on = scn.load("contact_1d", ["live.enabled=true"])
    nodes = list(on.run_nodes)
    assert "live_view" in nodes and nodes.index("live_view") < nodes.index("sim_plant")   # the beat starts last
    assert set(nodes) - {"live_view"} == set(s.run_nodes)


@pytest.mark.parametrize("key, value, message", [
    ("port", "70000", "live.port: 70000 is out of range; expected integer in [0, 65535]"),
    ("port", "-1", "live.port: -1 is out of range; expected integer in [0, 65535]"),
    ("port", "8765.5", "live.port: 8765.5 is not allowed; expected integer in [0, 65535]"),
    ("port", "web", "live.port: 'web' is not allowed; expected integer in [0, 65535]"),
    ("max_rate_hz", "0", "live.max_rate_hz: 0.0 is out of range; expected number in [1, 1000] Hz"),
    ("max_rate_hz", "5000", "live.max_rate_hz: 5000.0 is out of range; expected number in [1, 1000] Hz"),
    ("max_rate_hz", ".nan", "live.max_rate_hz: nan is not finite; expected number in [1, 1000] Hz"),
    ("enabled", "maybe", "live.enabled: 'maybe' is not allowed; expected boolean"),
    ("client_e_stop", "1", "live.client_e_stop: 1 is not allowed; expected boolean"),
    ("host", "rig-pc", "live.host: 'rig-pc' is not allowed; expected an IPv4 or IPv6 address or 'localhost'"),
    ("host", "300.1.2.3", "live.host: '300.1.2.3' is not allowed; expected an IPv4 or IPv6 address"),
    ("prot", "8765", "live.prot: unknown key; allowed keys of 'live' are client_e_stop, enabled, host, max_rate_hz, "
                     "port, v1_port"),
    ("v1_port", "-2", "live.v1_port: -2 is out of range; expected integer in [-1, 65535]"),
    ("v1_port", "8765", "live.v1_port: 8765 is live.port too; expected another port (0: any free one, -1: no "
                        "foxglove.websocket.v1 server)"),
])
def test_bad_live_values_are_refused_naming_key_value_and_range(key, value, message):
    with pytest.raises(ParameterError) as exc:
        scn.load("contact_1d", [f"live.{key}={value}"])
    assert message in str(exc.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "localhost", "::1", "192.168.10.2"])
def test_addresses_and_localhost_are_accepted(host):
    assert scn.load("contact_1d", [f"live.host={host}"]).live.host == host


@pytest.mark.parametrize("dt, rate, stride", [(1e-3, 50.0, 20), (1e-3, 40.0, 25), (1e-3, 1000.0, 1),
                                              (1e-3, 1.0, 1000), (1e-3, 30.0, 34), (0.000244140625, 50.0, 82)])
def test_the_stride_keeps_the_rate_of_loop_time_at_or_below_max_rate_hz(dt, rate, stride):
    n = LiveParams(max_rate_hz=rate).stride(dt)
    assert n == stride and 1.0 / (n * dt) <= rate + 1e-9


def test_every_live_key_has_unit_range_and_description():
    rows = {r["key"]: r for r in scn.parameter_table() if r["key"].startswith("live.")}
    assert set(rows) == {"live.enabled", "live.host", "live.port", "live.v1_port", "live.max_rate_hz",
                         "live.client_e_stop"}
    assert all(r["doc"] for r in rows.values())
    assert rows["live.port"]["allowed"] == "integer in [0, 65535]"
    assert rows["live.max_rate_hz"]["unit"] == "Hz" and rows["live.max_rate_hz"]["allowed"] == "number in [1, 1000] Hz"


def test_launch_argument_and_composed_process():
    assert "live" in LAUNCH_ARGUMENTS and LAUNCH_ARGUMENTS["live"][0] == "false"
    s = load_for_launch("contact_1d", overrides=["loop.duration_s=1.0"], live=True)
    assert s.live.enabled and "live_view" in s.run_nodes
    assert "live_view" not in load_for_launch("contact_1d").run_nodes
    groups = dict(process_groups(s.run_nodes, composed=True))
    assert groups["live_view"] == ["live_view"] and groups["recorder"] == ["recorder"]   # off the fast path's process
    assert "live_view" not in groups["composed"] and "sim_plant" in groups["composed"]
    assert "ws://127.0.0.1:8765" in live_note(s, "/tmp/x") and E_STOP_TOPIC in live_note(s, "/tmp/x")
    assert live_note(load_for_launch("contact_1d"), "/tmp/x") is None
    assert "live.json" in live_note(scn.load("contact_1d", ["live.enabled=true", "live.port=0"]), "/tmp/x")


def test_a_taken_port_is_refused_before_anything_starts(rths_cli, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        s = scn.load("contact_1d", ["live.enabled=true", f"live.port={port}"])
        with pytest.raises(ParameterError, match=f"live.port: {port} cannot be used on 127.0.0.1"):
            check_live_port(s)
        p = rths_cli("run", "contact_1d", "--live", "--set", f"live.port={port}", "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and f"live.port: {port} cannot be used" in p.stderr, p.stderr
    assert not (tmp_path / "r").exists()
    check_live_port(s)           # free again


def test_run_with_a_bad_live_value_exits_2_naming_it(rths_cli, tmp_path):
    p = rths_cli("run", "contact_1d", "--live", "--set", "live.port=70000", "--out", str(tmp_path / "r"))
    assert p.returncode == 2
    assert "live.port: 70000 is out of range; expected integer in [0, 65535]" in p.stderr
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------------------------
# the layouts in config/foxglove/
PATH = re.compile(r"^(/[\w/]+)\.(\w+)(?:\[(\d+)\])?$")


def _fields(type_name: str) -> dict[str, tuple]:
    from rths_ros.bag import typestore
    _consts, fields = typestore().fielddefs[type_name]
    return dict(fields)


def _script_outputs(layout: dict) -> dict[str, set[str]]:
    """User script output topic -> the fields of its Output type."""
    out = {}
    for script in layout["userNodes"].values():
        src = script["sourceCode"]
        topic = re.search(r'export const output = "([^"]+)"', src).group(1)
        body = re.search(r"type Output = \{([^}]*)\}", src).group(1)
        out[topic] = {f.split(":")[0].strip() for f in body.split(";") if f.strip()}
        for t in re.search(r"export const inputs = \[([^\]]*)\]", src).group(1).split(","):
            out.setdefault("inputs", set()).add(t.strip().strip('"'))
    return out


def _panel_ids(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    return _panel_ids(node["first"]) + _panel_ids(node["second"])


@pytest.mark.parametrize("name", ["rths_live.json", "rths_bag.json"])
def test_layouts_show_only_what_the_live_view_streams_or_the_bag_records(name):
    from rths_ros.nodes.live_view import EVENTS_TOPIC, LIVE_TOPICS, SAFETY_SCHEMA, TIMING_TOPIC
    from rths_ros.runtime.topics import BY_NAME, TOPICS
    layout = json.loads((ROOT / "config" / "foxglove" / name).read_text())
    placed = _panel_ids(layout["layout"])
    assert sorted(placed) == sorted(layout["configById"]), "every panel placed once, none missing"
    live = name == "rths_live.json"
    topics = set(LIVE_TOPICS) | {EVENTS_TOPIC, TIMING_TOPIC, SAFETY_STATE_TOPIC} if live else {t.name for t in TOPICS}
    scripts = _script_outputs(layout)
    assert scripts.pop("inputs") <= topics
    paths = []
    for pid, cfg in layout["configById"].items():
        paths += [p["value"] for p in cfg.get("paths", [])]
        if "topicPath" in cfg:
            assert cfg["topicPath"] in topics, (pid, cfg["topicPath"])
    assert paths
    for path in paths:
        m = PATH.match(path)
        assert m, path
        topic, field, index = m.group(1), m.group(2), m.group(3)
        if topic in scripts:
            assert field in scripts[topic], path
        elif topic == SAFETY_STATE_TOPIC:
            assert live and field in SAFETY_SCHEMA["properties"], path
        else:
            assert topic in topics, path
            fields = _fields(BY_NAME[topic].type)
            assert field in fields, path
            kind = fields[field]
            if index is not None:
                assert kind[0] in (3, 4), path            # an array (3) or a sequence (4)
                if kind[0] == 3:
                    assert int(index) < kind[1][1], path
    publish = [cfg for pid, cfg in layout["configById"].items() if pid.startswith("Publish!")]
    if live:
        assert [(p["topicName"], p["datatype"]) for p in publish] == [(E_STOP_TOPIC, "std_msgs/msg/String")]
        assert json.loads(publish[0]["value"])["data"]
    else:
        assert publish == []          # a bag has nothing to stop
    for needed in ("/rths/interface_command", "/rths/interface_state", "/rths/interface_force", "/rths/leg_state",
                   "/rths/passivity", "/rths/events"):
        assert any(p.startswith(needed + ".") for p in paths), needed
