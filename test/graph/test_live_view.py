"""The live view (node live_view, docs/live.md) against a real Foxglove WebSocket client.

Each test starts `rths run ... --live` as a user does (a free port: live.port=0, the URL from OUT/live.json) and
talks to the server with the `websockets` package, speaking the Foxglove WebSocket protocol as the Foxglove app
does: the server's info and channel advertisements, subscriptions, binary message data, client channels and
client messages.  What is checked:

* the channels: every loop topic the run has, the events, the timing and the safety state, each ROS 2 channel with
  its message definition (decoded here from the advertised schema alone), and messages arrive during the run at no
  more than live.max_rate_hz;
* a client channel on another topic than the e-stop's is refused, and the run completes untouched;
* the operator e-stop ends a run: ABORT from live_view naming the operator e-stop, the platform on its safe pose,
  SAFE in the bag, `rths run` exits as it does for any abort;
* the live view is off the fast path: a lockstep run completes at its normal pace with the live view's process
  stopped.
"""
from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import read_events
from rths_ros.bag import read_bag
from rths_ros.core.platform.safety import safe_pose_lengths
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.msg import TestEvent as EventMsg
from rths_ros.runner import node_pids, wait_until_running
from rths_ros.runtime.node import EVENT_NAMES

websockets_sync = pytest.importorskip("websockets.sync.client", reason="the test client needs the websockets package "
                                      "(requirements/test.txt)")
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[2]
#: the subprotocol the server of foxglove-sdk 0.30 speaks (the Foxglove WebSocket protocol, v1 messages)
SUBPROTOCOL = "foxglove.sdk.v1"
LOOP_TOPICS = ["/rths/interface_command", "/rths/interface_force", "/rths/interface_state", "/rths/leg_state",
               "/rths/leg_command", "/rths/passivity"]


class FoxgloveClient:
    """A small client of the Foxglove WebSocket protocol: what the Foxglove app does when it opens a connection,
    subscribes to channels and publishes on a client channel."""

    def __init__(self, url: str, timeout_s: float = 20.0):
        # (the connection's own context manager; closed by close())
        self.ws = websockets_sync.connect(url, subprotocols=[SUBPROTOCOL], open_timeout=timeout_s,
                                          max_size=None).__enter__()
        self.server_info: dict | None = None
        self.channels: dict[int, dict] = {}          # channel id -> the advertised channel
        self.subscribed: dict[int, str] = {}         # subscription id -> topic
        self.messages: dict[str, list[tuple[float, bytes]]] = {}
        self.stamps: dict[str, list[int]] = {}       # the server's log time of each message [ns]
        self.status: list[dict] = []
        self.closed = False

    def by_topic(self) -> dict[str, dict]:
        return {c["topic"]: c for c in self.channels.values()}

    def pump(self, seconds: float) -> None:
        """Take every frame that comes within ``seconds``."""
        t_end = time.monotonic() + seconds
        while not self.closed and time.monotonic() < t_end:
            try:
                frame = self.ws.recv(timeout=max(0.0, t_end - time.monotonic()))
            except TimeoutError:
                return
            except ConnectionClosed:
                self.closed = True
                return
            self._take(frame)

    def pump_until(self, done, timeout_s: float) -> bool:
        t_end = time.monotonic() + timeout_s
        while not done() and not self.closed and time.monotonic() < t_end:
            self.pump(0.05)
        return done()

    def _take(self, frame) -> None:
        if isinstance(frame, bytes):
            assert frame[0] == 0x01, f"unexpected binary opcode {frame[0]}"
            sub_id, stamp_ns = struct.unpack_from("<IQ", frame, 1)
            topic = self.subscribed[sub_id]
            self.messages.setdefault(topic, []).append((time.monotonic(), frame[13:]))
            self.stamps.setdefault(topic, []).append(stamp_ns)
            return
        m = json.loads(frame)
        if m["op"] == "serverInfo":
            self.server_info = m
        elif m["op"] == "advertise":
            self.channels.update({c["id"]: c for c in m["channels"]})
        elif m["op"] == "unadvertise":
            for cid in m["channelIds"]:
                self.channels.pop(cid, None)
        elif m["op"] == "status":
            self.status.append(m)

    def subscribe(self, topics) -> None:
        subs = []
        for topic in topics:
            cid = self.by_topic()[topic]["id"]
            sub_id = len(self.subscribed) + 1
            self.subscribed[sub_id] = topic
            subs.append({"id": sub_id, "channelId": cid})
        self.ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))

    def advertise(self, channel_id: int, topic: str, encoding: str = "json",
                  schema_name: str = "std_msgs/msg/String") -> None:
        self.ws.send(json.dumps({"op": "advertise", "channels": [
            {"id": channel_id, "topic": topic, "encoding": encoding, "schemaName": schema_name}]}))

    def publish(self, channel_id: int, payload: bytes) -> None:
        self.ws.send(b"\x01" + struct.pack("<I", channel_id) + payload)

    def close(self) -> None:
        self.ws.close()


def decoder(channel: dict):
    """Deserialise a channel's CDR messages from its advertised schema alone (the package's own message types are
    not known to this type store until the schema brings them)."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore
    assert channel["encoding"] == "cdr" and channel["schemaEncoding"] == "ros2msg", channel
    ts = get_typestore(Stores.ROS2_KILTED)
    assert channel["schemaName"] not in ts.types
    ts.register(get_types_from_msg(channel["schema"], channel["schemaName"]))
    return lambda data: ts.deserialize_cdr(data, channel["schemaName"])


def start_run(out: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d", "--out", str(out), "--live",
                             "--set", "live.port=0", "--set", "live.v1_port=0", "--no-analyze", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT), stdin=subprocess.DEVNULL)


def live_url(out: Path, proc: subprocess.Popen, timeout_s: float = 120.0) -> str:
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end:
        try:
            return json.loads((out / "live.json").read_text())["url"]
        except (OSError, ValueError):
            pass
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the live view never wrote OUT/live.json")


def finish(proc: subprocess.Popen, timeout_s: float = 180.0) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, err


# ------------------------------------------------------------------------------------------------
def test_a_client_sees_the_run_live_and_a_foreign_client_channel_is_refused(tmp_path):
    out = tmp_path / "run"
    proc = start_run(out, "--set", "loop.duration_s=6", "--set", "passivity.enabled=true",
                     "--set", "live.max_rate_hz=40")
    client = None
    try:
        client = FoxgloveClient(live_url(out, proc))
        expected = [*LOOP_TOPICS, "/rths/events", "/rths/timing", "/rths/safety_state"]
        assert client.pump_until(lambda: set(expected) <= set(client.by_topic()), 20.0), client.by_topic().keys()
        info = client.server_info
        assert info is not None and "clientPublish" in info["capabilities"], info
        assert "json" in info["supportedEncodings"]
        chans = client.by_topic()
        assert set(chans) == set(expected), sorted(chans)        # nothing else is offered
        for topic in [*LOOP_TOPICS, "/rths/events", "/rths/timing"]:
            c = chans[topic]
            assert (c["encoding"], c["schemaEncoding"]) == ("cdr", "ros2msg"), c
            assert c["schemaName"].startswith("rths_ros/msg/") and "std_msgs/Header header" in c["schema"], c
        assert chans["/rths/safety_state"]["encoding"] == "json"
        client.subscribe(expected)
        # messages arrive while the run goes on
        assert client.pump_until(lambda: len(client.messages.get("/rths/interface_command", [])) >= 5, 120.0), \
            {t: len(m) for t, m in client.messages.items()}
        # a client channel on any other topic: refused, nothing done with it
        client.advertise(11, "/rths/not_the_estop")
        client.advertise(12, "/rths/interface_command", encoding="cdr", schema_name="rths_ros/msg/InterfaceCommand")
        client.publish(11, json.dumps({"data": "stop"}).encode())
        client.publish(12, b"\x00\x01\x00\x00" + bytes(64))
        assert client.pump_until(lambda: sum("refused" in s["message"] for s in client.status) >= 2, 20.0), \
            client.status
        client.pump_until(lambda: client.closed, 180.0)       # the server stops when the run has ended
    finally:
        if client is not None:
            client.close()
        code, stdout, stderr = finish(proc)
    assert code == 0, (stdout, stderr)
    rec = read_events(out)
    assert rec["status"] == "completed" and rec["first_fault"] is None, rec
    assert not any(e["type"] == "ABORT" for e in rec["events"])
    # the live view announced READY last (its readers exist only after every other node was ready), START after it
    ready = [e["source"] for e in rec["events"] if e["type"] == "READY"]
    assert ready[-1] == "live_view" and len(ready) == len(set(ready)), ready
    kinds = [e["type"] for e in rec["events"]]
    assert kinds.index("START") > len(ready) - 1
    refused = [e for e in rec["events"] if e["type"] == "REJECTED" and e["source"] == "live_view"]
    assert {("/rths/not_the_estop" in e["reason"], "/rths/interface_command" in e["reason"]) for e in refused} == \
        {(True, False), (False, True)}, refused
    assert all("nothing was done with it, the run goes on" in e["reason"] for e in refused)
    # the run's own interface command went on unchanged: one message per step, none from the client
    s = scn.load("contact_1d", ["loop.duration_s=6", "passivity.enabled=true"])
    topics = read_bag(out / "bag")
    steps = [m.step for _, m in topics["/rths/interface_command"]]
    assert steps == sorted(set(steps)) and len(steps) == s.steps + 1
    # what the client received: every loop topic decodes from its advertised schema; the steps rise and are those
    # of every 25th step (live.max_rate_hz = 40 Hz of loop time at loop.dt_s = 1 ms), the same on every topic
    steps_of = {}
    for topic in LOOP_TOPICS:
        got = client.messages.get(topic, [])
        assert len(got) >= 5, (topic, len(got))
        decode = decoder(chans[topic])
        ks = [int(decode(data).step) for _, data in got]
        assert ks == sorted(set(ks)) and ks[-1] <= s.steps, (topic, ks[:5], ks[-5:])
        assert all(k % 25 == 0 for k in ks), (topic, ks[:10])
        steps_of[topic] = set(ks)
    both = steps_of["/rths/interface_command"] & steps_of["/rths/interface_state"]
    assert len(both) >= 0.8 * len(steps_of["/rths/interface_state"]), both      # pairs for the tracking error
    cmd = decoder(chans["/rths/interface_command"])(client.messages["/rths/interface_command"][-1][1])
    assert len(cmd.position) == 1 and np.isfinite(cmd.position[0])
    events = [decoder(chans["/rths/events"])(d) for _, d in client.messages["/rths/events"]]
    kinds = [(EVENT_NAMES[e.type], e.source) for e in events]
    assert ("STOP", "supervisor") in kinds and ("DONE", "sim_plant") in kinds, kinds
    states = [json.loads(d)["state"] for _, d in client.messages["/rths/safety_state"]]
    assert "running" in states and states[-1] == "completed", states
    live = json.loads((out / "timing" / "live_view.json").read_text())["live"]
    assert live["e_stops"] == [] and len(live["refused"]) == 2, live
    assert live["sent"]["/rths/interface_command"] >= len(client.messages["/rths/interface_command"])


def test_the_operator_e_stop_aborts_the_run_and_the_platform_goes_to_its_safe_pose(tmp_path):
    out = tmp_path / "run"
    proc = start_run(out, "--mode", "realtime", "--composed", "--set", "loop.duration_s=60")
    client = None
    try:
        client = FoxgloveClient(live_url(out, proc))
        wanted = ["/rths/events", "/rths/safety_state", "/rths/leg_state"]
        assert client.pump_until(lambda: set(wanted) <= set(client.by_topic()), 20.0)
        client.subscribe(wanted)
        assert wait_until_running(out, 120.0), "the run never started"
        assert client.pump_until(lambda: len(client.messages.get("/rths/leg_state", [])) >= 10, 60.0)
        client.advertise(1, "/rths/estop")
        client.pump(0.3)
        t_stop = time.monotonic()
        client.publish(1, json.dumps({"data": "test operator"}).encode())
        safe_state = lambda: any(json.loads(d)["state"] == "safe" for _, d in client.messages["/rths/safety_state"])
        assert client.pump_until(safe_state, 60.0), [json.loads(d) for _, d in client.messages["/rths/safety_state"]]
        reaction_s = time.monotonic() - t_stop
        client.pump_until(lambda: client.closed, 60.0)
    finally:
        if client is not None:
            client.close()
        code, stdout, stderr = finish(proc)
    # the command line reports it as it reports any abort
    assert code == 1, (code, stdout, stderr)
    assert "run aborted: live_view: operator e-stop (Foxglove client " in stderr and ": test operator" in stderr, \
        stderr
    rec = read_events(out)
    assert rec["status"] == "aborted"
    assert rec["first_fault"]["node"] == "live_view"
    assert rec["first_fault"]["reason"].startswith("operator e-stop (Foxglove client ")
    assert set(rec["exit_codes"].values()) == {3}, rec["exit_codes"]        # every node ended by itself
    # the bag: the ABORT from live_view, then SAFE from the plant; the last leg lengths on the safe pose
    topics = read_bag(out / "bag")
    seq = [(EVENT_NAMES[m.type], m.source) for _, m in topics["/rths/events"]]
    print("events in the bag:", seq)
    aborts = [m for _, m in topics["/rths/events"] if m.type == EventMsg.ABORT]
    assert aborts[0].source == "live_view" and "operator e-stop (Foxglove client" in aborts[0].reason, aborts
    assert seq.index(("SAFE", "sim_plant")) > seq.index(("ABORT", "live_view")), seq
    assert seq.index(("START", "supervisor")) < seq.index(("ABORT", "live_view"))
    assert ("STOP", "supervisor") not in seq
    s = scn.load("contact_1d", ["loop.duration_s=60"])
    safe = safe_pose_lengths(StewartKinematics(s.platform.geometry), s.safety.safe_retract_m)
    last = np.array(topics["/rths/leg_state"][-1][1].length)
    assert np.max(np.abs(last - safe)) < 1e-3, (last, safe)
    assert aborts[0].step < s.steps                     # long before the end of the trial
    # the client saw it happen: the ABORT and SAFE events and the state "safe", within seconds
    events = [decoder(client.by_topic()["/rths/events"])(d) for _, d in client.messages["/rths/events"]]
    kinds = [(EVENT_NAMES[e.type], e.source) for e in events]
    assert ("ABORT", "live_view") in kinds and ("SAFE", "sim_plant") in kinds, kinds
    assert reaction_s < 15.0
    # realtime: at most live.max_rate_hz = 50 leg states per second of wall time, every 20th step; the span is
    # that of the server's log times (the arrival times bunch up when the client pumps late)
    got = client.messages["/rths/leg_state"]
    stamps = client.stamps["/rths/leg_state"]
    span = (stamps[-1] - stamps[0]) * 1e-9
    assert len(got) - 1 <= 50.0 * span * 1.2 + 5, (len(got), span)
    ks = [int(decoder(client.by_topic()["/rths/leg_state"])(d).step) for _, d in got]
    assert all(k % 20 == 0 for k in ks), ks[:10]
    assert any("e-stop: ABORT sent" in st["message"] for st in client.status), client.status
    live = json.loads((out / "timing" / "live_view.json").read_text())["live"]
    assert [e["acted"] for e in live["e_stops"]] == [True] and live["e_stops"][0]["text"] == "test operator"


def test_a_stopped_live_view_does_not_slow_a_lockstep_run(tmp_path):
    """Its readers are best effort: the lockstep writers' acknowledgement waits (every 2000 steps) never wait for it.
    With a reliable reader in a stopped process the wait at step 2000 would last safety.watchdog_s (5 s) and each
    loop node would log that its readers did not acknowledge (checked below).  (2500 steps keep the stop shorter than DDS's 20 s participant lease on a loaded machine:
    a process stopped for longer is dropped by the others and found again only slowly after it resumes.)"""
    out = tmp_path / "run"
    proc = start_run(out, "--set", "loop.duration_s=2.5")
    stopped = []
    try:
        live_url(out, proc)
        assert wait_until_running(out, 120.0), "the run never started"
        pids = node_pids(str(out), "live_view")
        assert len(pids) == 1, pids
        os.kill(pids[0], signal.SIGSTOP)
        stopped.append(pids[0])
        t0 = time.monotonic()
        t_end = t0 + 60.0
        while time.monotonic() < t_end and '"stopping"' not in (out / "progress.json").read_text():
            time.sleep(0.05)
        loop_s = time.monotonic() - t0
        assert '"stopping"' in (out / "progress.json").read_text(), "the run did not reach STOP"
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        code, stdout, stderr = finish(proc)
    assert code == 0, (stdout, stderr)
    assert loop_s < 20.0, f"2500 lockstep steps took {loop_s:.1f} s with the live view stopped"
    for name in ("numerical_substructure", "stewart_platform", "ft_sensor", "sim_plant"):
        log = (out / "logs" / f"{name}.log").read_text()
        assert "did not acknowledge" not in log, (name, log[-2000:])
    assert read_events(out)["status"] == "completed"
