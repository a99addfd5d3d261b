"""The live view with a client library the project did not write, for each subprotocol: @foxglove/ws-protocol (the
reference client of the Foxglove WebSocket protocol, which Lichtblick and PlotJuggler's Foxglove plugin follow)
over the `ws` package, run by Node.js (test/node/live_client.js, pinned in test/node/package.json).

For foxglove.sdk.v1 (live.port) and foxglove.websocket.v1 (live.v1_port) alike: the client connects before START,
subscribes to every channel, gets one message of each (decoded here: CDR from the advertised ros2msg schema, the
safety state as JSON), publishes on a topic the server must refuse (nothing happens but a REJECTED event and a
status), then on the e-stop topic: the run aborts on it and the platform reaches its safe pose (SAFE)."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from rths_ros.app.run_status import read_events

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
ROOT = NODE_DIR.parents[1]


@pytest.fixture(scope="module")
def client_library():
    """Node.js with the pinned client library (npm ci on first use, from the npm registry)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are needed for the reference Foxglove client (apt-get install nodejs npm)")
    if not (NODE_DIR / "node_modules" / "@foxglove" / "ws-protocol").exists():
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, f"npm ci in {NODE_DIR} failed:\n{r.stdout}\n{r.stderr}"
    return node


def _decode(channel: dict, data: bytes):
    if channel["encoding"] == "json":
        return json.loads(data)
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore
    assert channel["encoding"] == "cdr" and channel["schemaEncoding"] == "ros2msg", channel
    ts = get_typestore(Stores.ROS2_KILTED)
    ts.register(get_types_from_msg(channel["schema"], channel["schemaName"]))
    return ts.deserialize_cdr(data, channel["schemaName"])


@pytest.mark.parametrize("subprotocol,url_key", [("foxglove.sdk.v1", "url"), ("foxglove.websocket.v1", "url_v1")])
def test_a_third_party_client_subscribes_decodes_is_refused_and_stops_the_run(tmp_path, client_library, subprotocol,
                                                                                url_key):
    import sys
    out = tmp_path / "run"
    run = subprocess.Popen([sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d", "--out", str(out),
                            "--live", "--mode", "realtime", "--composed", "--set", "live.port=0",
                            "--set", "live.v1_port=0", "--set", "loop.duration_s=60", "--no-analyze"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                           stdin=subprocess.DEVNULL)
    try:
        t_end = time.monotonic() + 120.0
        live = None
        while live is None and time.monotonic() < t_end:
            try:
                live = json.loads((out / "live.json").read_text())
            except (OSError, ValueError):
                assert run.poll() is None, run.communicate()
                time.sleep(0.05)
        assert live is not None, "the live view never wrote OUT/live.json"
        client = subprocess.run([client_library, str(NODE_DIR / "live_client.js"), live[url_key], subprotocol, "40",
                                 "/rths/estop", "/rths/leg_command"],
                                capture_output=True, text=True, timeout=120, cwd=str(NODE_DIR))
        code, stdout, stderr = None, "", ""
        stdout, stderr = run.communicate(timeout=180)
        code = run.returncode
    finally:
        if run.poll() is None:
            run.kill()
    lines = [json.loads(x) for x in client.stdout.splitlines() if x.startswith("{")]
    print(client.stderr[-2000:])
    kinds = [x["event"] for x in lines]
    assert kinds[0] == "open" and lines[0]["protocol"] == subprotocol, lines[:3]
    assert "error" not in kinds, [x for x in lines if x["event"] == "error"]
    info = next(x for x in lines if x["event"] == "serverInfo")
    assert "clientPublish" in info["capabilities"], info
    # every channel advertised, one message of each decoded
    channels = {x["topic"]: x for x in lines if x["event"] == "advertise"}
    assert set(channels) == {*live["topics"], live["safety_state_topic"]}, sorted(channels)
    got = {x["topic"]: base64.b64decode(x["data"]) for x in lines if x["event"] == "message"}
    assert set(got) == set(channels), (sorted(got), sorted(channels))
    # each decoded from the schema the server advertised, alone
    decoded = {}
    for topic, data in got.items():
        decoded[topic] = value = _decode(channels[topic], data)
        if topic.startswith("/rths/interface") or topic.startswith("/rths/leg"):
            assert value.header.frame_id == "rths:contact_1d" and int(value.step) >= 0, (topic, value)
    assert decoded[live["safety_state_topic"]]["state"] in ("waiting", "running")
    assert kinds.count("published") == 2
    # the run: aborted by this client's e-stop, the platform on its safe pose; the refused topic did nothing else
    assert code == 1, (code, stdout[-2000:], stderr[-3000:])
    rec = read_events(out)
    assert rec["first_fault"]["node"] == "live_view", rec["first_fault"]
    assert f"operator via {subprotocol}" in rec["first_fault"]["reason"], rec["first_fault"]
    events = rec["events"]
    assert any(e["type"] == "SAFE" and e["source"] == "sim_plant" for e in events), [e["type"] for e in events]
    refused = [e for e in events if e["type"] == "REJECTED" and e["source"] == "live_view"]
    assert len(refused) == 1 and "'/rths/leg_command'" in refused[0]["reason"], refused
    statuses = [x["message"] for x in lines if x["event"] == "status"]
    assert any("refused the advertise" in m for m in statuses), statuses


@pytest.mark.parametrize("subprotocol,url_key", [("foxglove.sdk.v1", "url"), ("foxglove.websocket.v1", "url_v1")])
def test_a_viewer_reads_and_tunes_the_runs_gains(tmp_path, client_library, subprotocol, url_key):
    """Each server's "parameters" capability with the reference client: every tunable parameter of the run is
    listed with its value, a change of the passivity controller's alpha bound is taken (a TUNED event with its
    step), and a read-only parameter is refused with the node's own message, which names the tunable ones."""
    import sys

    from rths_ros.runner import wait_until_running
    out = tmp_path / "run"
    run = subprocess.Popen([sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d", "--out", str(out),
                            "--live", "--mode", "realtime", "--composed", "--set", "live.port=0",
                            "--set", "live.v1_port=0", "--set", "loop.duration_s=5", "--set", "passivity.enabled=true",
                            "--no-analyze"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                           stdin=subprocess.DEVNULL)
    alpha, dt = "/passivity_controller.passivity.alpha_max_kg_per_s", "/passivity_controller.loop.dt_s"
    try:
        assert wait_until_running(out, 120.0), run.poll()
        live = json.loads((out / "live.json").read_text())
        client = subprocess.run([client_library, str(NODE_DIR / "live_params.js"), live[url_key], subprotocol, "30", alpha,
                                 "5000", dt], capture_output=True, text=True, timeout=60, cwd=str(NODE_DIR))
        stdout, stderr = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, (stdout[-2000:], stderr[-3000:])
    lines = [json.loads(x) for x in client.stdout.splitlines() if x.startswith("{")]
    print(client.stderr[-2000:], "\n".join(map(str, lines)))
    assert "error" not in [x["event"] for x in lines] and lines[0]["protocol"] == subprotocol, lines[:2]
    info = next(x for x in lines if x["event"] == "serverInfo")
    assert "parameters" in info["capabilities"], info
    answers = {x["id"]: {p["name"]: p["value"] for p in x["parameters"]} for x in lines
               if x["event"] == "parameterValues"}
    from rths_ros.app import scenario as scn
    p = scn.load("contact_1d", ["passivity.enabled=true"]).passivity
    assert answers["all"] == {"/passivity_controller.passivity.g_p_kg_per_s": p.g_p_kg_per_s,
                              alpha: p.alpha_max_kg_per_s}, answers
    assert answers["set"] == {alpha: 5000.0} and answers["readonly"] == {dt: 0.001}, answers
    refused = [x["message"] for x in lines if x["event"] == "status" and "refused loop.dt_s" in x["message"]]
    assert len(refused) == 1 and "read-only during a run" in refused[0] and "passivity.g_p_kg_per_s" in refused[0]
    tuned = [e for e in read_events(out)["events"] if e["type"] == "TUNED"]
    assert tuned and tuned[0]["source"] == "passivity_controller", tuned
    assert f"tuned passivity.alpha_max_kg_per_s: {p.alpha_max_kg_per_s:.6g} -> 5000 requested" in tuned[0]["reason"]
