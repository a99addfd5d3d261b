"""The base class of every rths_ros node, and the process entry point shared by all of them.

What every node gets from :class:`RthsNode`:

* the validated scenario (one YAML, see :mod:`rths_ros.app.scenario`) and its parameters declared as
  read-only ROS parameters with description, unit and range (``ros2 param describe`` shows them);
* control publishers/subscriptions with the scenario's QoS profile (config/qos.yaml), deadline and
  message-lost events counted into the node's :class:`~rths_ros.runtime.timing.TimingStats`;
* the start handshake: a node announces READY once every publisher it owns is matched by every
  consumer that the scenario runs, and every subscription by its producer; the supervisor then sends
  START.  STOP ends the run, ABORT ends it with a reason;
* lockstep flow control: every ``ack_every_steps`` steps a publisher waits for its readers' acks;
* timing diagnostics (/rths/timing, /diagnostics) about once a second; the final report at STOP/ABORT waits for its
  readers' acknowledgements; a JSON summary in OUT/timing/<node>.json at the end, with the start-up marks;
* the run's names relative to the node's namespace (:mod:`~rths_ros.runtime.names`); an orderly stop on
  SIGINT/SIGTERM (:mod:`~rths_ros.runtime.orderly_stop`); ``RTHS_PROFILE_DIR`` (:mod:`~rths_ros.runtime.profiling`);
  the loop topics in the run's DDS partition (``safety.partition``, :mod:`~rths_ros.runtime.dds_partition`);
* a bounded exit (:mod:`~rths_ros.runtime.teardown`): no DDS teardown once its files are written
  (``realtime.dds_teardown``); a hung teardown dumps every thread's stack and exits at 10 s."""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
from pathlib import Path

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.duration import Duration
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import interrupt_reason
from rths_ros.core.platform.safety import safe_ramp_bound_s
from rths_ros.msg import LoopTiming, TestEvent
from rths_ros.params import ParameterError
from rths_ros.runtime import fault_injection, guard, hop_log, startup
from rths_ros.runtime.crash import CallbackCrash, abort_on_crash, fail_if_injected, node_of, stacks_on_sigusr1
from rths_ros.runtime.dds_partition import apply_partition
from rths_ros.runtime.executors import make_executor
from rths_ros.runtime.loop_log import QuietQosEvents
from rths_ros.runtime.names import RunNames
from rths_ros.runtime.orderly_stop import OrderlyStop
from rths_ros.runtime.profiling import profiled
from rths_ros.runtime.qos import control_qos, diagnostics_qos, events_qos
from rths_ros.runtime.ros_parameters import scenario_parameters
from rths_ros.runtime.rt import applied_settings, apply_realtime, batch_observer, enter_batch, fifo_priority
from rths_ros.runtime.teardown import teardown
from rths_ros.runtime.timing import TimingStats
from rths_ros.runtime.topics import BY_NAME, expected_consumers
from rths_ros.runtime.tuning import TunableParameters, attach_tuning, tunables_of
from rths_ros.runtime.two_hosts import enter_netns_from_env

EVENT_NAMES = {TestEvent.READY: "READY", TestEvent.START: "START", TestEvent.TRIAL_BEGIN: "TRIAL_BEGIN",
               TestEvent.TRIAL_END: "TRIAL_END", TestEvent.PAUSE: "PAUSE", TestEvent.RESUME: "RESUME",
               TestEvent.STOP: "STOP", TestEvent.ABORT: "ABORT", TestEvent.DONE: "DONE",
               TestEvent.SAFE: "SAFE", TestEvent.REJECTED: "REJECTED", TestEvent.TUNED: "TUNED"}


def event_dict(msg) -> dict:
    """A TestEvent as events.json holds it (the supervisor's log, the analysis of a bag)."""
    return {"type": EVENT_NAMES.get(msg.type, str(msg.type)), "source": msg.source, "step": int(msg.step),
            "trial": int(msg.trial), "reason": msg.reason}


def stamp_ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def set_stamp(stamp, ns: int) -> None:
    stamp.sec, stamp.nanosec = divmod(int(ns), 1_000_000_000)


class RthsNode(QuietQosEvents, TunableParameters, RunNames, Node):
    """Base node: scenario, QoS, handshake, flow control, timing, events."""

    role = "node"
    #: set by the composed process: in-process delivery of the control topics (see local_bus.py)
    local_bus = None
    #: control topics whose callback, on the local bus, closes the loop (queued in lockstep)
    beat_inputs: tuple[str, ...] = ()
    #: the node that owns the run's step counter (the plant): on SIGINT / SIGTERM it sends the ABORT, with the
    #: exact step (request_stop)
    sets_steps = False
    #: the node steps the loop's fast path (model, platform, force, plant, learners): its process warms the fast
    #: path's kernels before READY (runtime.startup.warm_fast_path); the recorder, supervisor and viewers do not
    fast_path = True

    def __init__(self, scenario: scn.Scenario, out_dir: Path | None = None, context=None):
        super().__init__(self.role, context=context)
        self.scenario = scenario
        self.out_dir = Path(out_dir) if out_dir else None
        self.dt = scenario.loop.dt_s
        self.mode = scenario.loop.mode
        self.cq = control_qos(scenario.loop.qos, self.dt)
        self.timing = TimingStats()
        self.guard = guard.LoopGuard(self)   # the publisher check and the message validation of the loop topics
        self.hops = hop_log.for_node(scenario)     # recording.hop_log (rths_ros.runtime.hop_log)
        self.done = False
        self.exit_code = 0
        self.abort_reason = ""
        #: the last step of the run, from STOP (its data may still be on the way on other topics)
        self.stop_step: int | None = None
        self.started = False
        self.ready_sent = False
        #: steps per trial (global step index = trial * trial_len + local step)
        self.trial_len = scenario.steps + 1
        self.current_trial = -1
        self._control_pubs: list = []
        self._expect_pub: list = []   # (publisher, topic, n consumers)
        self._expect_sub: list = []   # (subscription, topic)
        self._last_ack_step = 0
        self._t_start = time.monotonic()
        self._say_waiting_at = self._t_start + scenario.loop.start_timeout_s / 2   # (_check_ready)
        self._declare_scenario_parameters()
        #: subscriptions of /rths/events this node's events publisher has ever matched (its own included): a node
        #: that starts late, gets an ABORT from the transient-local history and ends at once still counts
        self.events_readers_total = 0
        self._events_pub = self.create_publisher(
            TestEvent, "/rths/events", events_qos(),
            event_callbacks=PublisherEventCallbacks(matched=self._on_events_matched))
        self.create_subscription(TestEvent, "/rths/events", guard.events_callback(self, self._on_event), events_qos())
        self._timing_pub = self.create_publisher(LoopTiming, "/rths/timing", diagnostics_qos())
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", diagnostics_qos())
        self._timing_msg = LoopTiming()
        # (a lambda: rclpy hands a timer callback that takes an argument the timer's info)
        self.create_timer(1.0, lambda: self.publish_timing())
        self._ready_timer = self.create_timer(0.05, self._check_ready)
        # watchdog on every control topic this node reads (see _watched / _check_watchdog)
        sp = scenario.safety
        self._watch: dict[str, list] = {}
        self._watch_limit_ns = int((sp.watchdog_steps * self.dt if self.mode == "realtime" else sp.watchdog_s) * 1e9)
        self.watchdog_trip: dict | None = None
        self._watch_last_check = 0
        self.watchdog_stalls = 0      # checks skipped because this process itself had stalled
        self.create_timer(min(0.1, max(self._watch_limit_ns * 1e-9 / 5.0, 0.002)), self._check_watchdog)

    # -- parameters ------------------------------------------------------------------------
    def _on_events_matched(self, info) -> None:
        self.events_readers_total = max(self.events_readers_total, int(info.total_count))

    def _declare_scenario_parameters(self) -> None:
        """Expose the scenario as ROS parameters (introspection with ros2 param): read-only, but for this node's
        live-tunable ones (rths_ros.runtime.tuning)."""
        for key, value, desc in scenario_parameters(self.scenario, tunables_of(self.role)):
            try:
                self.declare_parameter(key, value, desc)
            except Exception:  # a value type ROS parameters cannot carry: skip, it stays in the YAML
                pass
        self.tuning = attach_tuning(self)

    # -- topics ----------------------------------------------------------------------------
    def control_publisher(self, msg_type, topic: str):
        dds = self.create_publisher(msg_type, topic, self.cq.profile)
        self._control_pubs.append(dds)
        pub = self.guard.publisher(topic, dds)        # writes the run's mark (rths_ros.runtime.guard)
        if self.local_bus is not None:
            self.local_bus.attach(self)
            # only a recorder of its own process still reads over DDS; every other consumer is on the local bus
            n = int("recorder" in self.scenario.run_nodes and topic in BY_NAME and not self.local_bus.recorder_local)
            self._expect_pub.append((pub, topic, n))
            from rths_ros.runtime.local_bus import LocalPublisher
            return self.hops.publisher(topic, fault_injection.corrupting(
                self.scenario, topic, LocalPublisher(pub, self.local_bus, topic)))
        n = expected_consumers(topic, self.scenario) if topic in BY_NAME else 0
        self._expect_pub.append((pub, topic, n))
        return self.hops.publisher(topic, fault_injection.corrupting(self.scenario, topic, pub))

    def control_subscription(self, msg_type, topic: str, callback, expect_producer: bool = True):
        """Subscription with the run's control QoS.

        Deadline misses and lost messages are counted.  With the single-threaded executor the DDS
        QoS events do it (deadline = the profile's deadline, message-lost events).  rclpy's events
        executor can hang on QoS event handlers, so with it the same two counts are kept on the
        Python side: an arrival gap longer than the deadline is a deadline miss, a gap in the step
        index is a lost message.  The loop guard comes first (rths_ros.runtime.guard).
        """
        if self.local_bus is not None:   # in-process delivery: no foreign publisher can reach it
            self.local_bus.subscribe(topic, self.guard.validated(topic, self._monitored(callback, topic)),
                                     deferred=topic in self.beat_inputs)
            return None
        kw = {}
        if self.scenario.realtime.executor == "single_threaded":
            kw["event_callbacks"] = SubscriptionEventCallbacks(deadline=self._on_deadline, message_lost=self._on_lost)
            callback = self._watched(topic, callback)
        else:
            callback = self._monitored(callback, topic)
        sub = self.guard.subscription(msg_type, topic, self.guard.validated(topic, callback), self.cq.reader_profile,
                                      **kw)
        if expect_producer:
            self._expect_sub.append((sub, topic))
        return sub

    def _monitored(self, callback, topic: str):
        """Deadline misses and lost messages counted, and each arrival recorded for the watchdog (_watched)."""
        entry, timing, arrived = self._watch.setdefault(topic, [0, -1, False]), self.timing, self.hops.arrival(topic)
        deadline_ns, last_ns, last_step = int(self.cq.deadline_s * 1e9), 0, -1

        def cb(msg):
            nonlocal last_ns, last_step
            now, k = time.monotonic_ns(), msg.step
            if arrived is not None:
                arrived(k, now)
            if deadline_ns and last_ns and now - last_ns > deadline_ns and not self.done:
                timing.deadline_misses += 1
            if last_step >= 0 and k > last_step + 1:
                timing.lost_messages += int(k - last_step - 1)
            last_ns = entry[0] = now
            last_step = entry[1] = k
            entry[2] = True
            callback(msg)
        return cb

    # -- watchdog ---------------------------------------------------------------------------
    def _watched(self, topic: str, callback):
        """Record each arrival (wall time, step) of ``topic`` for the watchdog.  A topic is armed by its
        first message of a trial and disarmed by DONE / TRIAL_END / STOP / ABORT (pauses between trials)."""
        entry = self._watch.setdefault(topic, [0, -1, False])

        def cb(msg):
            entry[0], entry[1], entry[2] = time.monotonic_ns(), msg.step, True
            callback(msg)
        return cb

    def _disarm_watchdog(self) -> None:
        for entry in self._watch.values():
            entry[2] = False

    def _check_watchdog(self) -> None:
        """Realtime: a topic silent for safety.watchdog_steps steps; lockstep: for safety.watchdog_s of wall
        time (the loop made no progress).  Either aborts the run naming the topic."""
        now = time.monotonic_ns()
        last_check, self._watch_last_check = self._watch_last_check, now
        if not self.started or self.done or self.abort_reason or self.watchdog_trip is not None:
            return
        if last_check and now - last_check > self._watch_limit_ns // 2:
            # this process itself did not run for a while (scheduling, a collection): the silence says
            # nothing about the producers; restart every window
            self.watchdog_stalls += 1
            for entry in self._watch.values():
                entry[0] = now
            return
        for topic, (last_ns, last_step, armed) in self._watch.items():
            silent = now - last_ns
            if armed and silent > self._watch_limit_ns:
                silent_s = silent * 1e-9
                limit = (f"safety.watchdog_steps = {self.scenario.safety.watchdog_steps}" if self.mode == "realtime"
                         else f"safety.watchdog_s = {self.scenario.safety.watchdog_s:g} s")
                since = f"after step {last_step}" if last_step >= 0 else "since the trial began (none received)"
                reason = (f"watchdog: no {topic} for {silent_s * 1e3:.0f} ms ({silent_s / self.dt:.0f} steps) "
                          f"{since} ({limit})")
                self.watchdog_trip = {"topic": topic, "last_step": int(last_step), "silent_s": silent_s,
                                      "limit_s": self._watch_limit_ns * 1e-9}
                self.abort_reason = reason
                self.get_logger().error(reason)
                self.emit(TestEvent.ABORT, max(int(last_step), 0), reason)
                return

    def _on_deadline(self, info) -> None:
        if self.started and not self.done:
            self.timing.deadline_misses += 1

    def _on_lost(self, info) -> None:
        self.timing.lost_messages += int(getattr(info, "total_count_change", 1) or 1)

    def connected(self) -> bool:
        return not self.unconnected()

    def unconnected(self) -> list[str]:
        out = [f"{t} (publisher: {p.get_subscription_count()}/{n} readers)" for p, t, n in self._expect_pub
               if p.get_subscription_count() < n]
        out += [f"{t} (subscription: no publisher)" for s, t in self._expect_sub if s.get_publisher_count() < 1]
        return out

    def sync_readers(self, step: int, force: bool = False, timeout_s: float | None = None) -> None:
        """Lockstep flow control: wait until every reader acknowledged our samples.

        A reader that does not acknowledge within ``timeout_s`` (default: safety.watchdog_s) is
        reported and not waited for any longer: a dead reader must not block this node (the watchdogs
        of the other nodes end the run)."""
        n = self.cq.ack_every_steps
        if n <= 0 and not force:
            return
        if force or step - self._last_ack_step >= n:
            self._last_ack_step = step
            wait = self.scenario.safety.watchdog_s if timeout_s is None else timeout_s
            for pub in self._control_pubs:
                if not pub.wait_for_all_acked(Duration(seconds=wait)):
                    self.get_logger().warning(f"readers of {pub.topic_name} did not acknowledge within {wait:g} s")

    # -- events ----------------------------------------------------------------------------
    def emit(self, kind: int, step: int = 0, reason: str = "", trial: int = 0) -> None:
        msg = TestEvent()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.type = kind
        msg.step = int(step)
        msg.trial = int(trial)
        msg.source = self.role
        msg.reason = reason
        self._events_pub.publish(msg)
        if kind == TestEvent.ABORT:   # the node may end right after: make sure every node heard it
            self._events_pub.wait_for_all_acked(Duration(seconds=1.0))

    def serving(self) -> bool:
        """False while a managed (lifecycle) node is not active; such a node announces READY only once active."""
        return True

    def _check_ready(self) -> None:
        if self.ready_sent:
            return
        if self.serving() and self.connected() and self.guard.ready():   # ready: the run's publishers are known
            self.ready_sent = True
            self._ready_timer.cancel()
            startup.mark("ready")
            self.emit(TestEvent.READY)
        elif time.monotonic() > self._say_waiting_at:      # once, half-way to the supervisor's start timeout
            self._say_waiting_at = float("inf")
            waiting = self.unconnected() if self.serving() else ["its activation (a managed node)"]
            self.get_logger().warning(f"not ready after {time.monotonic() - self._t_start:.0f} s; waiting for: " + (
                "; ".join(waiting) or "the publisher check of the loop topics (the live view: every other READY)"))

    def _arm_watchdog(self) -> None:
        """Lockstep: a trial has begun, so every control topic this node reads must deliver within
        safety.watchdog_s, including the first message (a first message that never comes would
        otherwise stall the loop without tripping anything)."""
        now = time.monotonic_ns()
        for entry in self._watch.values():
            entry[0] = now
            entry[2] = True

    def _on_event(self, msg: TestEvent) -> None:
        if msg.type in (TestEvent.DONE, TestEvent.TRIAL_END, TestEvent.STOP, TestEvent.ABORT):
            self._disarm_watchdog()
        elif (msg.type in (TestEvent.START, TestEvent.TRIAL_BEGIN) and self.mode == "lockstep"
              and not self.done and not self.abort_reason):
            self._arm_watchdog()
        if msg.type == TestEvent.START and not self.started:
            startup.mark("start")
            self.started = True
            self.guard.snapshot(freeze=True, start=msg)
            self.on_start()
            enter_batch()        # a lockstep run's observers from here on (rt.batch_observer)
        elif msg.type == TestEvent.STOP and not self.done:
            startup.mark("stop")
            self.stop_step = int(msg.step)
            self.on_stop()
        elif msg.type == TestEvent.ABORT and not self.done:
            if not self.abort_reason or msg.source == self.role:
                self.abort_reason = msg.reason or f"abort by {msg.source}"
            self.on_abort(msg)
        self.on_event(msg)

    # hooks ------------------------------------------------------------------------------
    def on_start(self) -> None:
        """START received: the run begins."""

    def on_event(self, msg) -> None:
        """Any event (after the built-in handling)."""

    def on_stop(self) -> None:
        self.publish_timing(final=True)
        self.sync_readers(0, force=True)
        self.finish(0)

    def on_abort(self, msg) -> None:
        self.publish_timing(final=True)
        self.sync_readers(0, force=True, timeout_s=1.0)
        self.finish(3)

    def request_stop(self, signame: str, code: int, first: bool) -> None:
        """The process got SIGINT / SIGTERM (see :class:`OrderlyStop`).  Before START there is nothing to ramp: the
        node ends.  During the run the node that sets the steps (the plant) sends ABORT "interrupted by SIG..." at
        once (``first``), at its exact step; any other node sends it only if no ABORT or STOP has arrived a moment
        later (e.g. the plant's process is gone).
        The ABORT then ends the run as any abort does: the plant ramps to its safe pose and reports SAFE."""
        if self.done:
            return
        if not self.started:
            self.abort_reason = self.abort_reason or f"stopped by signal {signame} before the run started"
            self.finish(code)
            return
        if self.abort_reason or self.stop_step is not None:
            return          # the run is ending already
        if first and not self.sets_steps:
            return
        self.abort_reason = interrupt_reason(signame)
        self.get_logger().warning(self.abort_reason)
        self.emit(TestEvent.ABORT, self.progress_step(), self.abort_reason)

    def progress_step(self) -> int:
        """The step this node has reached (for the step of an event it sends); 0 if it does not know."""
        return int(self.timing.summary().get("steps", 0)) if hasattr(self.timing, "summary") else 0

    def trial_of(self, step: int) -> int:
        return int(step) // self.trial_len

    def local_step(self, step: int) -> int:
        return int(step) % self.trial_len

    def enter_trial(self, step: int) -> bool:
        """Call with the step of every loop message: resets the node (``reset_for_trial``) when the
        message is the first of a new trial.  Returns False for a message of an earlier trial (stale)."""
        trial = int(step) // self.trial_len
        if trial == self.current_trial:
            return True
        if trial < self.current_trial:
            self.timing.late_messages += 1
            return False
        self.current_trial = trial
        self.reset_for_trial(trial)
        return True

    def reset_for_trial(self, trial: int) -> None:
        """Hook: back to the initial state for trial ``trial`` (0-based)."""

    def finish(self, code: int = 0) -> None:
        self.exit_code = code
        self.done = True

    # -- diagnostics -----------------------------------------------------------------------
    def publish_timing(self, final: bool = False) -> None:
        """LoopTiming, /diagnostics: the last second's periods, latencies (``final``: the run's; ≤ 1 s for acks)."""
        s = self.timing.summary(recent=not final)
        m = self._timing_msg
        m.header.stamp = self.get_clock().now().to_msg()
        m.node = self.role
        m.steps = s["steps"]
        for key in ("period_mean_s", "period_max_s", "period_jitter_s", "latency_p50_s", "latency_p99_s",
                    "latency_max_s"):
            setattr(m, key, float(s[key]))
        m.overruns = s["overruns"]
        m.deadline_misses = s["deadline_misses"]
        m.lost_messages = s["lost_messages"]
        m.late_messages = s["late_messages"]
        self._timing_pub.publish(m)
        arr = DiagnosticArray()
        arr.header.stamp = m.header.stamp
        st = DiagnosticStatus()
        st.name = f"rths/{self.role}"
        st.hardware_id = "rths_ros"
        bad = s["overruns"] + s["deadline_misses"] + s["lost_messages"]
        st.level = DiagnosticStatus.OK if bad == 0 else DiagnosticStatus.WARN
        st.message = "ok" if bad == 0 else f"{bad} timing faults"
        st.values = [KeyValue(key=k, value=f"{v:.6g}" if isinstance(v, float) else str(v)) for k, v in s.items()]
        arr.status = [st]
        self._diag_pub.publish(arr)
        if final and not self._timing_pub.wait_for_all_acked(Duration(seconds=1.0)):
            self.get_logger().warning("/rths/timing: the final report was not acknowledged within 1 s")

    def timing_summary(self) -> dict:
        s = self.timing.summary()
        s["node"], s["mode"], s["realtime_setup"] = self.role, self.mode, list(applied_settings())   # (rt.py)
        s["wall_s"] = time.monotonic() - self._t_start
        s["process_cpu_s"] = time.process_time()   # the whole process (all nodes of a composed process)
        s["exit_code"] = self.exit_code
        s["abort_reason"] = self.abort_reason
        s["watchdog_stalls"] = self.watchdog_stalls
        s["startup"] = startup.marks()
        s.update(self.guard.summary())
        if self.watchdog_trip is not None:
            s["watchdog_trip"] = self.watchdog_trip
        return s

    def finalize(self) -> None:
        """Called once after spinning ended (normal end, abort, signal): persist what we have."""
        if self.out_dir is not None:
            d = self.out_dir / "timing"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{self.role}.json").write_text(json.dumps(self.timing_summary(), indent=2, default=str))
            self.hops.save(d, self.role)


# ---------------------------------------------------------------------------------------------
def node_arg_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="rths_ros node; normally started by `rths run` or ros2 launch")
    p.add_argument("--scenario", required=True, help="scenario name or YAML path")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario value")
    p.add_argument("--mode", choices=("lockstep", "realtime"), help="override loop.mode")
    p.add_argument("--plant", choices=tuple(scn.PLANT_NODE_OF), help="override plant")
    p.add_argument("--out", default=None, help="run directory (timing summaries, logs, bag)")
    return p


def load_scenario_from_args(args) -> scn.Scenario:
    return scn.load(args.scenario, args.set, args.mode, getattr(args, "plant", None))


#: a spin of the executor that has not returned after this long is a hang, never work: the process
#: prints every thread's stack to its log and exits 1, so the runner names the node instead of waiting
SPIN_HANG_S = 60.0


def spin_nodes(nodes: list[RthsNode], executor, deadline_s: float, stop: OrderlyStop | None = None,
               stop_bound_s: float = 30.0) -> None:
    import faulthandler

    t_end = time.monotonic() + deadline_s
    ctx = nodes[0].context
    armed_at = -1.0
    crashed = None
    try:
        while ctx.ok() and not all(n.done for n in nodes):
            now = time.monotonic()
            if now - armed_at > 1.0:      # re-arming restarts faulthandler's thread: once a second, not per spin
                faulthandler.dump_traceback_later(SPIN_HANG_S, exit=True)
                armed_at = now
            if stop is not None:
                stop.service(nodes, stop_bound_s)
            try:
                executor.spin_once(timeout_sec=0.05)
            except Exception as exc:     # a bug in a callback: abort the run naming it, keep spinning so that
                if crashed is None:      # the plant (in this process too, when composed) ramps to its safe pose
                    crashed = exc
                    traceback.print_exc()
                    abort_on_crash(nodes, node_of(exc, nodes), exc)
            bus = RthsNode.local_bus
            if bus is not None and bus.crashed is not None and crashed is None:
                crashed = bus.crashed       # a composed node's callback raised inside another node's publish
                traceback.print_exception(crashed)
                abort_on_crash(nodes, node_of(crashed, nodes), crashed)
            if now > t_end:
                for n in nodes:
                    if not n.done:
                        n.abort_reason = f"run did not end within loop.timeout_s = {deadline_s:g} s"
                        n.finish(4)
    finally:
        faulthandler.cancel_dump_traceback_later()
    if crashed is not None:
        raise CallbackCrash(crashed)


def node_main(node_classes: list[type[RthsNode]], argv: list[str] | None = None, prog: str | None = None) -> int:
    """Entry point of a node process (one class) or a composed process (several classes)."""
    startup.mark("imports_done")
    prog = prog or (node_classes[0].role if len(node_classes) == 1 else "rths_composed")
    argv = list(sys.argv[1:] if argv is None else argv)
    i = argv.index("--ros-args") if "--ros-args" in argv else len(argv)   # what ros2 launch appends: for rclpy
    argv, ros_args = argv[:i], argv[i:]
    args = node_arg_parser(prog).parse_args(argv)
    try:
        scenario = load_scenario_from_args(args)
    except ParameterError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    out, rt = (Path(args.out) if args.out else None), scenario.realtime
    applied, warning = apply_realtime(fifo_priority(scenario, node_classes), tuple(rt.cpu_affinity), rt.mlockall,
                                      False, batch_observer(scenario, node_classes))
    enter_netns_from_env()      # a run split over two hosts: this node's host, before its DDS participant
    apply_partition(scenario.safety.partition, ros_args, out, prog)     # and the loop topics' DDS partition
    rclpy.init(args=["--ros-args", *ros_args[1:]] if ros_args else None,
               signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    stop = OrderlyStop()
    nodes: list[RthsNode] = []
    stacks_on_sigusr1()
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    executor = make_executor(scenario.realtime.executor)
    if len(node_classes) > 1 and scenario.realtime.local_bus:
        from rths_ros.runtime.local_bus import LocalBus
        RthsNode.local_bus = LocalBus(scenario.loop.mode == "lockstep", any(c.role == "recorder" for c in node_classes))
    code = 0
    try:
        for cls in node_classes:
            fail_if_injected(scenario.faults, cls.role)
            nodes.append(cls(scenario, out))
        if any(cls.fast_path for cls in node_classes):
            problem = startup.warm_fast_path(scenario)    # (a no-op in a process forked from a warmed runner)
            if problem:
                nodes[0].get_logger().warning(problem)
        startup.mark("built")
        if warning:
            nodes[0].get_logger().warning(warning)
        for n in nodes:
            executor.add_node(n)
        if scenario.realtime.gc_freeze:
            apply_realtime(gc_freeze=True)
        sp = scenario.safety
        with profiled(prog):
            spin_nodes(nodes, executor, scenario.loop.timeout_s, stop,
                       sp.watchdog_s + 5.0 + safe_ramp_bound_s(sp))
        code = max((n.exit_code for n in nodes), default=0)
    except ParameterError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        code = 2
    except (KeyboardInterrupt, ExternalShutdownException):
        code = 130
    except CallbackCrash:
        code = 1                # the run was aborted with the error's text already (spin_nodes)
    except Exception as exc:
        traceback.print_exc()
        code = 1
        abort_on_crash(nodes, prog, exc)
    finally:   # bounded by a watchdog that needs no GIL: rths_ros.runtime.teardown
        code = teardown(prog, nodes, executor, scenario.faults, code, scenario.realtime.dds_teardown)
    return code
