"""recorder: writes every loop, learner, event and timing topic of the run to a rosbag2 (MCAP); with a ros2_control
rig also the controller's command topic (what left the plant).

The scenario YAML (fully resolved) goes into the bag twice: as the first message of
/rths/scenario (std_msgs/String) and as the bag's custom metadata ``rths.scenario``.
Messages are taken as serialized CDR bytes and written unchanged.  In a composed process (lockstep by default,
``recording.in_process``) the recorder takes the loop topics from the local bus instead, each message serialized
once as it is handed over, and writes the same bag: no DDS copy per hop.  The bag is closed on STOP
(after the publishers' final acknowledgements) and on ABORT or a signal, so it is readable in
every case.
"""
from __future__ import annotations

import contextlib
import time

from rths_ros import msg as rths_msg
from rths_ros.app import scenario as scn
from rths_ros.bag import SCENARIO_KEY, SCENARIO_TOPIC, BagWriter, cdr_serializer, string_msg
from rths_ros.cdr import step_of
from rths_ros.msg import TestEvent
from rths_ros.runtime.node import RthsNode, node_main
from rths_ros.runtime.qos import diagnostics_qos, events_qos, record_qos
from rths_ros.runtime.topics import PLANT_PRODUCERS, TOPICS


def _msg_class(type_name: str):
    pkg, _, name = type_name.split("/")
    if pkg == "rths_ros":
        return getattr(rths_msg, name)
    module = __import__(f"{pkg}.msg", fromlist=[name])
    return getattr(module, name)


class Recorder(RthsNode):
    role = "recorder"
    observer = True         # off the loop's path: realtime.observer_priority (runtime/rt.py fifo_priority)
    fast_path = False
    QUIET_S = 0.5
    QUIET_REPORTED_S = 0.1
    #: after SAFE, wait at most this long for the plant's leg state of SAFE's step (the ramp's last samples come on
    #: other writers than SAFE and may come after it)
    SAFE_TAIL_S = 5.0
    FLUSH_S = 0.25

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        if out_dir is None:
            raise ValueError("recorder needs --out DIR")
        self.bag = BagWriter(self.out_dir / "bag", scenario.recording.storage)
        text = scn.dump(scenario)
        self.bag.set_custom_data(SCENARIO_KEY, text)
        self.bag.write_msg(SCENARIO_TOPIC, "std_msgs/msg/String", time.time_ns(), string_msg(text))
        self._last_rx = time.monotonic()
        self._stopping_since: float | None = None
        # after an abort the plant ramps to its safe pose: record until it reports SAFE
        self._safe_from = set(PLANT_PRODUCERS) & set(scenario.run_nodes)
        self._safe_seen = False
        self._safe_step: int | None = None      # SAFE's step: the plant's last leg state of the ramp has it
        self._leg_step = -1                     # the newest step of /rths/leg_state in the bag
        from rths_ros.core.platform.safety import safe_wait_s
        self._safe_timeout_s = safe_wait_s(scenario.safety, scenario.loop.mode)
        running = set(scenario.run_nodes)
        rq = record_qos(scenario.loop.qos)
        bus = self.local_bus if (self.local_bus is not None and self.local_bus.recorder_local) else None
        # in a composed process the loop topics reach the bag on the publishing thread (after an abort the plant's
        # safe ramp publishes from a thread of its own), the other topics, the flushes and the close on the
        # executor's: every write to the bag under the bus's lock (a flush amid a ramp's write once left a chunk
        # whose size did not match its header: a bag no reader opens)
        self._bag_lock = bus.lock if bus is not None else contextlib.nullcontext()
        for t in TOPICS:
            if t.producers and not (set(t.producers) & running):
                continue
            qos = {"event": events_qos(), "diagnostics": diagnostics_qos()}.get(t.kind, rq)
            self.bag.add_topic(t.name, t.type)
            if bus is not None and t.kind in ("control", "learner"):
                # the loop topics of this process (every one is published on the local bus: control_publisher)
                bus.subscribe(t.name, self._writer_for(t.name, cdr_serializer(t.type)))
                continue
            # a topic with producers: only the run's own publishers (rths_ros.runtime.guard), nothing foreign in the bag
            sub = (self.guard.subscription if t.producers else self.create_subscription)(
                _msg_class(t.type), t.name, self._writer_for(t.name), qos, raw=True)
            if t.kind == "control":
                self._expect_sub.append((sub, t.name))
        self._record_rig_topics(scenario)
        self._records_legs = self.bag.has_topic("/rths/leg_state")
        self._closed = False
        # the end: once every other node's final timing report is in (each node sends it after STOP, after its
        # last loop message), a short quiet time suffices; else QUIET_S of silence
        self._timing_seen: list[tuple[str, int]] = []
        self._reporters = set(scenario.run_nodes) - {self.role, "supervisor"}   # (the supervisor sends none)
        self._end_stamp_ns: int | None = None
        self.create_timer(0.05, self._check_quiet)
        # crash safety: hand the data to the file every FLUSH_S (a killed recorder loses at most that)
        self.create_timer(self.FLUSH_S, self._flush)

    def _record_rig_topics(self, scenario) -> None:
        """A ros2_control rig: also the commands that went to its controller, as they were on the wire (the bag
        then shows what left the plant).  (Not the rig's joint states and wrench: /rths/leg_state and the force
        carry them per step, and two more 1 kHz streams cost the recorder samples of the loop topics.)"""
        if scenario.plant != "ros2_control":
            return
        from rths_ros.runtime.standard_interfaces import driver_qos, standard_qos
        p = scenario.ros2_control
        rig = ((p.command_topic, "std_msgs/msg/Float64MultiArray"),)
        known = {t.name for t in TOPICS}
        for name, type_name in rig:
            if not name or name in known:
                continue
            known.add(name)
            self.bag.add_topic(name, type_name)
            # our own plant's commands: reliable (every one in the bag); the rig's drivers: best effort matches both
            qos = standard_qos(100) if name == p.command_topic else driver_qos(100)
            self.create_subscription(_msg_class(type_name), name, self._writer_for(name), qos, raw=True)

    def _flush(self) -> None:
        with self._bag_lock:
            if not self._closed:
                self.bag.flush()

    def _writer_for(self, topic: str, serialize=None):
        """The subscriber that writes ``topic`` into the bag: a DDS subscription's serialized bytes as they came,
        or (``serialize``: a local-bus subscriber) each message serialized as a DDS reader would receive it."""
        write = self.bag.raw_writer(topic)
        final_timing = self._final_timing if topic == "/rths/timing" else None
        legs = topic == "/rths/leg_state"
        clock, monotonic = time.time_ns, time.monotonic

        def cb(data) -> None:
            if serialize is not None:       # (a local-bus subscriber: the bus holds its lock)
                data = serialize(data)
                write(clock(), data)
            else:
                with self._bag_lock:
                    write(clock(), data)
            self._last_rx = monotonic()
            if final_timing is not None:
                final_timing(data)
            elif legs:
                self._leg_step = max(self._leg_step, step_of(data) or 0)
        return cb

    def _final_timing(self, data: bytes) -> None:
        """Note the nodes whose last timing report (sent when they saw STOP or ABORT) is in the bag."""
        from rclpy.serialization import deserialize_message
        m = deserialize_message(data, rths_msg.LoopTiming)
        self._timing_seen.append((m.node, m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec))

    def _all_reported(self) -> bool:
        """Every other node of the run sent its timing report after the end of the run was announced."""
        if self._end_stamp_ns is None:
            return False
        done = {node for node, stamp in self._timing_seen if stamp >= self._end_stamp_ns}
        return self._reporters <= done

    def on_stop(self) -> None:
        self._stopping_since = time.monotonic()

    def on_abort(self, msg) -> None:
        self._stopping_since = time.monotonic()
        self.exit_code = 3

    def _check_quiet(self) -> None:
        if self._stopping_since is None or self.done:
            return
        now = time.monotonic()
        if (self.exit_code == 3 and self.started and self._safe_from and not self._safe_seen
                and now - self._stopping_since < self._safe_timeout_s):
            return      # the ramp to the safe pose is still to come or under way (none before START)
        if (self._safe_step is not None and self._leg_step < self._safe_step and self._records_legs
                and now - self._safe_at < self.SAFE_TAIL_S):
            return      # SAFE is in, the ramp's last leg states are still on the way
        quiet = self.QUIET_S if not self._all_reported() else self.QUIET_REPORTED_S
        if now - self._last_rx > quiet or now - self._stopping_since > 10.0 + self._safe_timeout_s:
            self.finish(self.exit_code)

    def on_event(self, msg) -> None:
        if msg.type in (TestEvent.STOP, TestEvent.ABORT) and self._end_stamp_ns is None:
            self._end_stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if msg.type == TestEvent.SAFE:
            self._safe_seen = True
            self._safe_step, self._safe_at = int(msg.step), time.monotonic()
            self._last_rx = self._safe_at

    def finalize(self) -> None:
        with self._bag_lock:
            if not self._closed:
                self._closed = True
                self.bag.close()
        super().finalize()


def main(argv=None) -> int:
    return node_main([Recorder], argv)


if __name__ == "__main__":
    raise SystemExit(main())
