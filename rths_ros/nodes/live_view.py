"""live_view: the run live in Foxglove, and the operator's e-stop from it (docs/live.md).

Started when the scenario enables ``live`` (``rths run --live``, launch argument ``live:=true``).  The node runs a
Foxglove WebSocket server (the ``foxglove-sdk`` package, subprotocol foxglove.sdk.v1) at
ws://``live.host``:``live.port`` from the moment it is built, so a client can connect before the run starts, and a
second one for foxglove.websocket.v1 clients at ``live.v1_port`` (:mod:`rths_ros.nodes.live_v1`: Lichtblick,
PlotJuggler) with the same channels, samples and client rules.  Its channels:

* the loop topics of :data:`LIVE_TOPICS` that the run has (a topic whose producer the run does not start is not
  advertised), as ROS 2 messages: schema encoding ``ros2msg`` (the same message definitions the bag embeds,
  :func:`rths_ros.bag.typestore`), message encoding ``cdr`` with the bytes exactly as they came over DDS (raw
  subscriptions: this node never deserialises a loop message).  The samples of every n-th step go to the clients,
  n = ceil(1 / (loop.dt_s * live.max_rate_hz)) (:meth:`~rths_ros.app.live.LiveParams.stride`): at most
  max_rate_hz per second of loop time and topic, and the same steps on every topic, so the command and the
  achieved state of a step arrive together; the other samples are skipped and counted;
* ``/rths/events`` (TestEvent) and ``/rths/timing`` (LoopTiming), every message;
* :data:`~rths_ros.app.live.SAFETY_STATE_TOPIC` (JSON): the run's state (waiting, running, completed, aborting,
  safe), the step, the first abort's source and reason and whether the platform reported SAFE; sent on every
  event and every 0.5 s, so a client that connects late sees it at once.

Off the fast path: every reader of this node is best effort with a queue of :data:`LIVE_DEPTH` samples, so no
writer ever waits for its acknowledgements (the lockstep flow control, ``RthsNode.sync_readers``, waits only for
reliable readers), and a slow or stopped live view loses samples instead of delaying the loop.  The node creates
these readers only after every other node of the run announced READY, so the readiness check (each writer matched
by the consumers the run has, :func:`rths_ros.runtime.topics.expected_consumers`) never counts them; it announces
READY itself once its readers see their producers, and the supervisor's START waits for that.

E-stop: the server offers the client-publish capability (unless ``live.client_e_stop`` is false) and accepts one
client channel, :data:`~rths_ros.app.live.E_STOP_TOPIC`.  Any message on it makes this node send ABORT with the
reason "operator e-stop (Foxglove client N): <text>"; the plant then ramps the platform to its safe pose and reports
SAFE as after any abort.  A client channel on any other topic is refused: nothing is done with its messages, the
node logs it, tells the clients (a status message) and reports it once as a REJECTED event.  The server's callbacks
run on its own threads; they only queue what came in, and the node acts on it from its executor.

End: the final timing report goes out at STOP or ABORT at once (the recorder waits for it); the server keeps
streaming :data:`LINGER_S` after STOP, after an abort until the plant's SAFE (at most the safe-pose ramp bound +
3 s), so the clients see the end; then the node ends (exit 0 after STOP, 3 after an abort) and the server stops.
"""
from __future__ import annotations

import json
import queue
import time

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message

from rths_ros import msg as rths_msg
from rths_ros.app.live import E_STOP_TOPIC, LIVE_NODE, SAFETY_STATE_TOPIC
from rths_ros.bag import typestore
from rths_ros.msg import TestEvent
from rths_ros.params import ParameterError
from rths_ros.runtime.guard import GUARD_EVENT
from rths_ros.runtime.node import RthsNode, node_main
from rths_ros.runtime.topics import BY_NAME, PLANT_PRODUCERS

#: the loop topics the live view streams (each one only if the run starts its producer)
LIVE_TOPICS = ("/rths/interface_command", "/rths/interface_force", "/rths/interface_state", "/rths/leg_state",
               "/rths/leg_command", "/rths/passivity")
EVENTS_TOPIC = "/rths/events"
TIMING_TOPIC = "/rths/timing"
#: history depth of the live view's best-effort readers
LIVE_DEPTH = 5
#: after STOP (or SAFE after an abort) the server streams this much longer, so the clients see the end
LINGER_S = 0.5
SAFETY_PERIOD_S = 0.5
#: how often the executor takes what the server's threads queued (an e-stop acts within this)
SERVE_PERIOD_S = 0.02
#: refused client channels reported as events (every one is logged)
MAX_REFUSED_EVENTS = 10

SAFETY_SCHEMA = {
    "title": "rths_ros/SafetyState", "type": "object",
    "properties": {
        "state": {"type": "string", "description": "waiting | running | completed | aborting (the platform ramps to "
                                                   "its safe pose) | safe | aborted (a run without a plant)"},
        "step": {"type": "integer", "description": "newest step index seen on the loop topics"},
        "trial": {"type": "integer"},
        "steps_total": {"type": "integer", "description": "steps of the run (trials x (steps + 1))"},
        "abort_source": {"type": "string", "description": "node that sent the first ABORT"},
        "abort_reason": {"type": "string"},
        "safe": {"type": "boolean", "description": "the plant reported SAFE: the platform holds its safe pose"},
        "e_stop_topic": {"type": "string", "description": "the client topic of the operator e-stop ('' if off)"},
        "refused_client_channels": {"type": "integer"},
    },
}


def live_qos() -> QoSProfile:
    """Best effort, the newest LIVE_DEPTH samples: a writer never waits for this reader."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=LIVE_DEPTH, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def step_of(data: bytes) -> int:
    """The step index of a serialised loop message (CDR: encapsulation header, std_msgs/Header, then uint64 step)
    without deserialising it."""
    order = "little" if data[1] == 1 else "big"
    n = int.from_bytes(data[12:16], order)        # length of header.frame_id (after the 8 bytes of the stamp)
    off = 12 + n
    off += (-off) % 8                             # uint64 aligned to 8 in the CDR body
    return int.from_bytes(data[4 + off:12 + off], order)


def _foxglove():
    try:
        import foxglove
        import foxglove.websocket
    except ImportError as exc:
        raise ParameterError(f"live.enabled: the live view needs the foxglove-sdk package ({exc}); install "
                             "requirements/runtime.txt (pip install foxglove-sdk==0.30.3)") from None
    return foxglove


def e_stop_text(encoding: str, schema_name: str, data: bytes) -> str:
    """The operator's text in an e-stop message, if it has one: JSON ``{"data": ...}`` or ``{"reason": ...}``, or a
    CDR std_msgs/String.  Any other payload is an e-stop all the same, without a text."""
    try:
        if encoding == "json":
            value = json.loads(data.decode("utf-8"))
            if isinstance(value, dict):
                value = value.get("data", value.get("reason", ""))
            return value.strip()[:200] if isinstance(value, str) else ""
        if encoding == "cdr" and schema_name in ("std_msgs/msg/String", "std_msgs/String"):
            from std_msgs.msg import String
            return deserialize_message(bytes(data), String).data.strip()[:200]
    except Exception:     # a payload that does not decode: still an e-stop
        pass
    return ""


class ClientGate:
    """The server's listener (the ``foxglove.websocket.ServerListener`` protocol), called on the server's threads:
    it only notes the client channels and queues what the node must act on."""

    def __init__(self, requests: queue.SimpleQueue, accept_e_stop: bool):
        self.requests = requests
        self.accept_e_stop = accept_e_stop
        self.accepted: dict[tuple[int, int], tuple[str, str]] = {}    # (client, channel) -> (encoding, schema)
        self.refused: dict[tuple[int, int], str] = {}                 # (client, channel) -> topic

    def on_subscribe(self, client, channel) -> None:
        return None

    def on_unsubscribe(self, client, channel) -> None:
        return None

    def on_client_advertise(self, client, channel) -> None:
        key = (client.id, channel.id)
        if self.accept_e_stop and channel.topic == E_STOP_TOPIC:
            self.accepted[key] = (channel.encoding, channel.schema_name)
        else:
            self.refused[key] = channel.topic
            self.requests.put(("refused", client.id, channel.topic, "advertise"))

    def on_client_unadvertise(self, client, client_channel_id: int) -> None:
        self.accepted.pop((client.id, client_channel_id), None)
        self.refused.pop((client.id, client_channel_id), None)

    def on_message_data(self, client, client_channel_id: int, data: bytes) -> None:
        key = (client.id, client_channel_id)
        if key in self.accepted:
            encoding, schema_name = self.accepted[key]
            self.requests.put(("e_stop", client.id, e_stop_text(encoding, schema_name, data), ""))
        elif key in self.refused:
            self.requests.put(("refused", client.id, self.refused[key], "message"))

    #: the run's tunable parameters for the viewers (rths_ros.nodes.live_params.ViewerParameters), or None
    params = None

    def on_get_parameters(self, client, param_names, request_id=None) -> list:
        return _sdk_parameters(self.params.get_sync(list(param_names))) if self.params is not None else []

    def on_set_parameters(self, client, parameters, request_id=None) -> list:
        if self.params is None:
            return []
        return _sdk_parameters(self.params.set_sync([{"name": p.name, "value": p.get_value()} for p in parameters]))


def _sdk_parameters(values: list[dict]) -> list:
    fg = _foxglove()
    return [fg.Parameter(v["name"], value=float(v["value"]), type=fg.ParameterType.Float64) for v in values]


class LiveView(RthsNode):
    role = LIVE_NODE
    observer = True         # off the loop's path: realtime.observer_priority (runtime/rt.py fifo_priority)
    fast_path = False

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        lp = scenario.live
        self.stride = lp.stride(scenario.loop.dt_s)
        running = set(scenario.run_nodes)
        self.topics = [t for t in LIVE_TOPICS if set(BY_NAME[t].producers) & running]
        self._others = running - {self.role, "supervisor"}
        self._ready_from: set[str] = set()
        self._subs: list = []
        self.sent = {t: 0 for t in (*self.topics, EVENTS_TOPIC, TIMING_TOPIC, SAFETY_STATE_TOPIC)}
        self.skipped = {t: 0 for t in self.topics}
        self.e_stops: list[dict] = []
        self.refused: dict[tuple[int, str], dict] = {}
        self.state = {"state": "waiting", "step": 0, "trial": 0,
                      "steps_total": scenario.loop.trials * (scenario.steps + 1), "abort_source": "",
                      "abort_reason": "", "safe": False, "e_stop_topic": E_STOP_TOPIC if lp.client_e_stop else "",
                      "refused_client_channels": 0}
        self._safe_from = set(PLANT_PRODUCERS) & running
        from rths_ros.core.platform.safety import safe_wait_s
        self._safe_timeout_s = safe_wait_s(scenario.safety, scenario.loop.mode)
        self._end_at: float | None = None
        self._end_code = 0
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self.gate = ClientGate(self._requests, lp.client_e_stop)
        self._start_server()
        self.create_timer(SERVE_PERIOD_S, self._serve)
        self.create_timer(SAFETY_PERIOD_S, self._send_state)

    # -- the server ---------------------------------------------------------------------------
    def _start_server(self) -> None:
        fg = _foxglove()
        lp = self.scenario.live
        self.fg_context = fg.Context()
        ros2 = {}
        for topic in (*self.topics, EVENTS_TOPIC, TIMING_TOPIC):
            type_name = BY_NAME[topic].type
            text, _ = typestore().generate_msgdef(type_name)
            ros2[topic] = fg.Channel(topic, schema=fg.Schema(name=type_name, encoding="ros2msg", data=text.encode()),
                                     message_encoding="cdr", context=self.fg_context)
        self.channels = ros2
        self.state_channel = fg.Channel(SAFETY_STATE_TOPIC, schema=SAFETY_SCHEMA, context=self.fg_context)
        self.v1 = None
        self.v1_ids: dict[str, int] = {}
        caps = [fg.websocket.Capability.ClientPublish] if lp.client_e_stop else []
        from rths_ros.nodes.live_params import ViewerParameters
        params = ViewerParameters(self, self.scenario.run_nodes, self._status)
        if params.roles:            # the tunable parameters of the run's nodes, for both servers' viewers
            self.gate.params = params
            caps.append(fg.websocket.Capability.Parameters)
        try:
            self.server = fg.start_server(name=f"rths_ros {self.scenario.name}", host=lp.host.strip(), port=lp.port,
                                          capabilities=caps, server_listener=self.gate,
                                          supported_encodings=["json", "cdr"] if lp.client_e_stop else None,
                                          context=self.fg_context)
        except Exception as exc:
            raise ParameterError(f"live.port: cannot serve on {lp.host}:{lp.port} ({exc}); choose another live.port "
                                 "(0: any free port) or live.host") from None
        host = lp.host.strip()
        at = f"ws://{'[' + host + ']' if ':' in host else host}"
        self.url = f"{at}:{self.server.port}"
        self.url_v1 = ""
        if lp.v1_port >= 0:         # the same channels for foxglove.websocket.v1 clients (rths_ros.nodes.live_v1)
            from rths_ros.nodes.live_v1 import V1Server
            self.v1 = V1Server(f"rths_ros {self.scenario.name}", host, lp.v1_port, self.gate, lp.client_e_stop,
                               self.gate.params)
            for topic in (*self.topics, EVENTS_TOPIC, TIMING_TOPIC):
                type_name = BY_NAME[topic].type
                self.v1_ids[topic] = self.v1.add_channel(topic, "cdr", type_name,
                                                         typestore().generate_msgdef(type_name)[0], "ros2msg")
            self.v1_ids[SAFETY_STATE_TOPIC] = self.v1.add_channel(SAFETY_STATE_TOPIC, "json", SAFETY_SCHEMA["title"],
                                                                  json.dumps(SAFETY_SCHEMA), "jsonschema")
            self.url_v1 = f"{at}:{self.v1.port}"
        self.get_logger().info(f"live view: {self.url} (Foxglove: open connection, Foxglove WebSocket); streaming "
                               f"{', '.join(self.topics)} (one sample every {self.stride} steps: at most "
                               f"{lp.max_rate_hz:g} Hz of loop time each), the events and "
                               f"{SAFETY_STATE_TOPIC}; operator e-stop on {self.state['e_stop_topic'] or '(off)'}"
                               + (f"; foxglove.websocket.v1 clients (Lichtblick, PlotJuggler): {self.url_v1}"
                                  if self.url_v1 else ""))
        if self.out_dir is not None:
            info = {"url": self.url, "host": host, "port": self.server.port, "url_v1": self.url_v1,
                    "port_v1": self.v1.port if self.v1 else None, "topics": list(self.channels),
                    "safety_state_topic": SAFETY_STATE_TOPIC, "max_rate_hz": lp.max_rate_hz,
                    "stride_steps": self.stride,
                    "e_stop_topic": self.state["e_stop_topic"]}
            tmp = self.out_dir / ".live.json.tmp"
            tmp.write_text(json.dumps(info, indent=1))
            tmp.replace(self.out_dir / "live.json")

    # -- readers --------------------------------------------------------------------------------
    def _subscribe(self) -> None:
        """The best-effort readers of the loop topics and of /rths/timing (module doc: only now, so that no other
        node's readiness check counts them)."""
        if self._subs:
            return
        qos = live_qos()
        for topic in self.topics:
            msg_type = getattr(rths_msg, BY_NAME[topic].type.rsplit("/", 1)[1])
            self._subs.append(self.guard.subscription(msg_type, topic, self._loop_cb(topic), qos, raw=True))
        timing = self._sender(TIMING_TOPIC)

        def on_timing(data: bytes) -> None:
            timing(data)
            self.sent[TIMING_TOPIC] += 1
        self.create_subscription(rths_msg.LoopTiming, TIMING_TOPIC, on_timing, qos, raw=True)

    def _sender(self, topic: str):
        """The function that sends one sample of ``topic`` to the clients of both servers."""
        channel = self.channels[topic] if topic in self.channels else self.state_channel
        v1, v1_id = self.v1, self.v1_ids.get(topic)

        def send(data) -> None:
            t = time.time_ns()
            channel.log(data, log_time=t)
            if v1 is not None:
                v1.log(v1_id, data, t)
        return send

    def _loop_cb(self, topic: str):
        send = self._sender(topic)
        stride = self.stride
        sent, skipped, state = self.sent, self.skipped, self.state

        def cb(data: bytes) -> None:
            k = step_of(data)
            if k > state["step"]:
                state["step"] = k
            if k % stride:
                skipped[topic] += 1
                return
            send(data)
            sent[topic] += 1
        return cb

    def connected(self) -> bool:
        """READY once every other node is ready and every reader of this node sees its producer."""
        return bool(self._subs) and all(sub.get_publisher_count() >= 1 for sub in self._subs)

    def progress_step(self) -> int:
        return int(self.state["step"])

    # -- events -----------------------------------------------------------------------------------
    def on_event(self, msg) -> None:
        self._sender(EVENTS_TOPIC)(serialize_message(msg))
        self.sent[EVENTS_TOPIC] += 1
        st = self.state
        kind = msg.type
        if kind == TestEvent.READY:
            self._ready_from.add(msg.source)
            if self._others <= self._ready_from:
                self._subscribe()
        elif kind in (TestEvent.START, TestEvent.TRIAL_BEGIN) and st["state"] == "waiting":
            st["state"] = "running"
            self._subscribe()      # a live view started by hand after the others were ready
        elif kind == TestEvent.STOP and st["state"] == "running":
            st["state"] = "completed"
        elif kind == TestEvent.ABORT and not st["abort_source"]:
            st["state"] = "aborting" if self._safe_from else "aborted"
            st["abort_source"], st["abort_reason"] = msg.source, msg.reason
        elif kind == TestEvent.SAFE:
            st["state"], st["safe"] = "safe", True
            if self._end_at is not None and self._end_code == 3:
                self._end_at = min(self._end_at, time.monotonic() + LINGER_S)
        if kind in (TestEvent.TRIAL_BEGIN, TestEvent.TRIAL_END, TestEvent.DONE):
            st["trial"] = int(msg.trial)
        self._send_state()

    def _send_state(self) -> None:
        self._sender(SAFETY_STATE_TOPIC)(self.state)
        self.sent[SAFETY_STATE_TOPIC] += 1

    def on_stop(self) -> None:
        self.publish_timing(final=True)       # the recorder closes the bag once every node's final report is in
        self._end_code = 0
        self._end_at = time.monotonic() + LINGER_S

    def on_abort(self, msg) -> None:
        self.publish_timing(final=True)
        self._end_code = 3
        waits_for_safe = self.started and self._safe_from and not self.state["safe"]
        wait = self._safe_timeout_s if waits_for_safe else LINGER_S
        self._end_at = time.monotonic() + wait

    # -- what the clients sent ---------------------------------------------------------------------
    def _serve(self) -> None:
        if self._end_at is not None and time.monotonic() >= self._end_at and not self.done:
            self.finish(self._end_code)
        while True:
            try:
                kind, client, detail, how = self._requests.get_nowait()
            except queue.Empty:
                return
            if kind == "e_stop":
                self._e_stop(client, detail)
            else:
                self._refuse(client, detail, how)

    def _e_stop(self, client: int, text: str) -> None:
        reason = f"operator e-stop (Foxglove client {client})" + (f": {text}" if text else "")
        if self.abort_reason or self.stop_step is not None or self.done:
            if len(self.e_stops) < MAX_REFUSED_EVENTS:     # a client that keeps pressing is told a few times
                why = f"the run is ending already ({self.abort_reason or 'STOP'})"
                self.get_logger().warning(f"{reason}: ignored, {why}")
                self.e_stops.append({"client": client, "text": text, "acted": False, "why": why})
                self._status(f"e-stop: {why}")
            return
        step = self.progress_step()
        self.e_stops.append({"client": client, "text": text, "acted": True, "step": step})
        self.abort_reason = reason
        self.get_logger().error(f"{reason}: ABORT at step {step}")
        self.emit(TestEvent.ABORT, step, reason)
        self._status(f"e-stop: ABORT sent at step {step}; the platform ramps to its safe pose")

    def _status(self, text: str) -> None:
        """A warning to the clients of both servers."""
        self.server.publish_status(text, _foxglove().StatusLevel.Warning)
        if self.v1 is not None:
            self.v1.status(text)

    def _refuse(self, client: int, topic: str, how: str) -> None:
        """A client channel on another topic than the e-stop's: nothing is done with it (module doc)."""
        seen = self.refused.get((client, topic))
        if seen is not None:
            seen[how] = seen.get(how, 0) + 1
            return
        self.refused[(client, topic)] = {"client": client, "topic": topic, how: 1}
        accepted = f"only {E_STOP_TOPIC} is accepted" if self.scenario.live.client_e_stop else "no topic is accepted"
        reason = (f"{self.role}: refused the {how} of Foxglove client {client} on {topic!r}: {accepted} from "
                  "clients (live.client_e_stop); nothing was done with it, the run goes on")
        self.get_logger().warning(reason)
        self.state["refused_client_channels"] = len(self.refused)
        self._status(reason)
        if len(self.refused) <= MAX_REFUSED_EVENTS:
            self.emit(GUARD_EVENT, self.progress_step(), reason)

    # -- the end ----------------------------------------------------------------------------------
    def timing_summary(self) -> dict:
        s = super().timing_summary()
        s["live"] = {"url": getattr(self, "url", ""), "url_v1": getattr(self, "url_v1", ""), "max_rate_hz": self.scenario.live.max_rate_hz,
                     "stride_steps": self.stride,
                     "sent": dict(self.sent), "skipped": dict(self.skipped), "e_stops": self.e_stops,
                     "refused": list(self.refused.values())}
        return s

    def finalize(self) -> None:
        server = getattr(self, "server", None)
        if server is not None:
            server.stop()
        if getattr(self, "v1", None) is not None:
            self.v1.stop()
        super().finalize()


def main(argv=None) -> int:
    return node_main([LiveView], argv)


if __name__ == "__main__":
    raise SystemExit(main())
