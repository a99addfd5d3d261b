"""The beat-setting node of a run (the plant, a hardware driver, the smoke talker).

It owns the run's step counter.  In ``lockstep`` mode it advances step k -> k+1 when the input
for step k+1 has arrived (simulated time, deterministic).  In ``realtime`` mode a dedicated thread
advances it on absolute wall-clock deadlines and uses the latest input; an input that is not the
one for the current step counts as late (the previous one is held).

Trials: a run has ``loop.trials`` trials of N = duration/dt steps each.  Step indices are global
and each trial occupies L = N + 1 consecutive indices (``trial_of(step)``), so every node can
tell from a message's step alone which trial it belongs to and reset itself at a trial boundary,
independent of the order in which events and data arrive.  After the last step of a trial the beat
node reports DONE (step, trial) and waits; the supervisor answers TRIAL_BEGIN for the next trial
(once the learners are ready) or STOP.

Abort: a beat node that drives hardware (the plant) stops following the loop and ramps to its safe
pose (:meth:`make_safe_ramp`, :class:`rths_ros.core.platform.safety.SafePoseRamp`), publishing its output every
step as before (the step index keeps counting), then reports SAFE and ends.
"""
from __future__ import annotations

import threading
import time

from rclpy.duration import Duration

from rths_ros.core.platform.safety import leg_command_out_of_range, non_finite, preflight_problem
from rths_ros.msg import TestEvent
from rths_ros.runtime.clock import make_clock
from rths_ros.runtime.node import RthsNode
from rths_ros.runtime.processes import ProcessWatch

#: node processes whose end does not abort a run (a viewer)
UNWATCHED_NODES = frozenset({"live_view"})


def wrench_first(scenario, local_bus: bool) -> bool:
    """Whether a plant publishes a step's raw wrench before its leg state: over separate processes, when the
    ft_sensor does not pair the wrench with the leg state of the same step (the family's ``force_reads_legs``; a
    sensor driver's WrenchStamped makes the leg state the ft_sensor's step clock).  The wrench is the next hop on
    the loop's path; the leg state goes to the platform, which needs it only two hops later, so publishing it first
    put its ~30 µs in every step (docs/performance.md).  On a composed process's local bus (``local_bus``) every
    hand-over is a call, and the order stays as it was: leg state first."""
    if local_bus or scenario.standard_interfaces.wrench_input_topic:
        return False
    from rths_ros.app.factory import parts
    return not parts(scenario).force_reads_legs


class BeatNode(RthsNode):
    """Subclasses implement :meth:`emit_output`, :meth:`advance` and :meth:`reset_trial`.

    A plant (simulated or the hardware driver) checks every leg command at its boundary
    (:meth:`leg_command_ok`: finite, inside the stroke ``leg_limits``, velocity feedforward within the leg
    speed) and, with ``watch_processes``, watches the run's node processes that no watchdog covers
    (:class:`~rths_ros.runtime.processes.ProcessWatch`): one that dies during a trial aborts the run."""

    #: plants: abort when a node process no watchdog covers (recorder, supervisor, ILC learner) dies
    watch_processes = False
    sets_steps = True
    #: after a failed pre-flight, the longest the node waits for every node to hear its ABORT
    PREFLIGHT_LINGER_S = 10.0
    PROCESS_WATCH_PERIOD_S = 0.1

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.n_steps = scenario.steps
        self.k = 0
        self.trial = 0
        self.trial_start = 0
        self.clock = make_clock(self.mode, self.dt, scenario.realtime.busy_wait_s)
        self.wrench_first = wrench_first(scenario, self.local_bus is not None)
        self._latest = None
        self._thread: threading.Thread | None = None
        self._running_trial = False
        self._begin = threading.Event()
        self._step_lock = threading.Lock()
        self._aborting = False
        self._ramp_thread: threading.Thread | None = None
        self.safe_info: dict | None = None
        #: (length min, length max, speed max) of the platform's legs, set by a plant; None: not checked
        self.leg_limits: tuple[float, float, float] | None = None
        self.process_watch: ProcessWatch | None = None
        #: the pre-flight checks this plant ran before START (stage, result, the measured lengths)
        self.preflight_log: list[dict] = []
        #: where a plant's leg measurements come from, for the pre-flight's message (e.g. the joint mapping keys)
        self.preflight_hint = ""
        self._preflight_failed = False
        if self.watch_processes:
            self.create_timer(self.PROCESS_WATCH_PERIOD_S, self._check_processes)

    # -- to implement ------------------------------------------------------------------------
    def emit_output(self, k: int, origin_ns: int) -> None:
        """Publish the output (measurement) of step k, stamped with origin_ns (wall clock)."""
        raise NotImplementedError

    def publish_legs_and_wrench(self, state_msg, wrench_msg) -> None:
        """A plant's two loop messages of a step, in the order :func:`wrench_first` chose."""
        if self.wrench_first:
            self.wrench_pub.publish(wrench_msg)
            self.state_pub.publish(state_msg)
        else:
            self.state_pub.publish(state_msg)
            self.wrench_pub.publish(wrench_msg)

    def advance(self, k_next: int, inp) -> None:
        """Advance the model from step k_next-1 to k_next using input ``inp`` (may be None)."""
        raise NotImplementedError

    def reset_trial(self, trial: int) -> None:
        """Put the model back to its initial state for trial ``trial`` (0-based)."""

    def input_step(self, inp) -> int:
        return int(inp.step)

    def on_arrival(self, inp) -> None:
        """Hook: an input arrived (both modes), e.g. to measure the step latency at arrival."""

    def leg_command_is_finite(self, inp) -> bool:
        """A plant's boundary check of a leg command: a NaN or inf aborts the run (False)."""
        bad = non_finite("leg command length", inp.length, inp.step) or non_finite(
            "leg command feedforward velocity", inp.feedforward_velocity, inp.step)
        if bad:
            self.abort_reason = f"{self.role}: {bad}"
            self.emit(TestEvent.ABORT, inp.step, self.abort_reason)
            return False
        return True

    def leg_command_is_in_range(self, inp) -> bool:
        """The stroke and the leg speed (of the velocity feedforward) at the plant boundary: a command
        outside them is not executed and aborts the run (False)."""
        if self.leg_limits is None:
            return True
        lo, hi, vmax = self.leg_limits
        bad = leg_command_out_of_range(inp.length, inp.feedforward_velocity, lo, hi, vmax, int(inp.step))
        if bad:
            self.abort_reason = f"{self.role}: {bad}"
            self.get_logger().error(self.abort_reason)
            self.emit(TestEvent.ABORT, int(inp.step), self.abort_reason)
            return False
        return True

    def leg_command_ok(self, inp) -> bool:
        """Both boundary checks of a received leg command; False: it must not be executed (the run aborts)."""
        return self.leg_command_is_finite(inp) and self.leg_command_is_in_range(inp)

    # -- pre-flight -------------------------------------------------------------------------------
    def preflight(self, stage: str, measured, expected, kinematics=None, confirm: bool = False,
                  before=None) -> bool:
        """The pre-flight of a plant before START (:func:`~rths_ros.core.platform.safety.preflight_problem`):
        the measured legs inside the stroke and belonging to a pose; with ``confirm`` also at the start pose
        ``expected`` within ``safety.preflight_tolerance_m`` (after the ramp there, ``before`` = where it began).
        A failure aborts the run before START (ABORT naming the leg, the values and the likely cause) and ends the
        node; nothing more is commanded.  Returns True when the check passed."""
        lo, hi, _ = self.leg_limits
        tol = self.scenario.safety.preflight_tolerance_m if confirm else None
        problem = preflight_problem(measured, expected, lo, hi, kinematics, tol, before)
        self.preflight_log.append({"stage": stage, "ok": problem is None, "problem": problem or "",
                                   "measured_m": [float(v) for v in measured],
                                   "expected_m": [float(v) for v in expected]})
        if problem is None:
            self.get_logger().info(f"pre-flight {stage}: passed")
            return True
        reason = f"{self.role}: pre-flight {stage}: {problem}" + (f" [{self.preflight_hint}]" if self.preflight_hint
                                                                   else "")
        self.preflight_failed(reason)
        return False

    def preflight_failed(self, reason: str) -> None:
        """Abort before START: one ABORT with ``reason``; the node ends without commanding anything more."""
        if self.abort_reason or self.done:
            return
        self.abort_reason = reason
        self._aborting = True
        self._running_trial = False
        self._preflight_failed = True
        self.get_logger().error(reason)
        self.emit(TestEvent.ABORT, 0, reason)
        # before START the other nodes may not all listen yet: the node stays (at most PREFLIGHT_LINGER_S) until
        # every node of the run has subscribed to the events (transient-local: a late one still gets the ABORT) and
        # acknowledged it, so the run ends on this reason and not on a start timeout.  The subscriptions are counted
        # over the whole wait (events_readers_total): a node that starts late gets the ABORT at once and ends, so
        # the run's nodes are seldom all subscribed at the same moment
        t0 = time.monotonic()

        def linger() -> None:
            heard = (self.events_readers_total >= len(self.scenario.run_nodes)
                     and self._events_pub.wait_for_all_acked(Duration(seconds=0.0)))
            if heard or time.monotonic() - t0 > self.PREFLIGHT_LINGER_S:
                timer.cancel()
                self.publish_timing(final=True)
                self.finish(3)
        timer = self.create_timer(0.05, linger)

    # -- process watch ---------------------------------------------------------------------------
    def _start_process_watch(self) -> None:
        if not self.watch_processes or self.out_dir is None:
            return
        # every node process of the run but the viewer: a loop node that dies before its first message of a trial
        # arms no watchdog (e.g. the platform node dying at START), so the watchdogs alone do not cover it
        self.process_watch = ProcessWatch(str(self.out_dir), UNWATCHED_NODES)
        found = self.process_watch.discover()
        if found:
            self.get_logger().info("process watch: " + ", ".join(f"{'+'.join(n)} (pid {pid})"
                                                                  for pid, n in sorted(found.items())))

    def _check_processes(self) -> None:
        w = self.process_watch
        if w is None or not w.watched or not self.started or self.done or self.abort_reason:
            return
        if not self._running_trial and self.trial >= self.scenario.loop.trials - 1:
            return      # the last trial is over: the other nodes end now, by design
        ended = w.first_ended()
        if ended is None:
            return
        pid, names = ended
        k = int(self.k)
        self.abort_reason = (f"{self.role}: process watch: node process {', '.join(names)} (pid {pid}) ended "
                             f"during the run at step {k}")
        self.get_logger().error(self.abort_reason)
        self.emit(TestEvent.ABORT, k, self.abort_reason)

    def progress_step(self) -> int:
        return int(self.k)

    def make_safe_ramp(self):
        """Hook: a :class:`~rths_ros.core.platform.safety.SafePoseRamp` from the present state, or None (no safe
        pose: the node just ends on ABORT)."""
        return None

    def safe_step(self, length, velocity) -> None:
        """Hook: advance the model one step with a safe-ramp command (leg lengths, velocity feedforward)."""
        raise NotImplementedError

    # -- abort: ramp to the safe pose ------------------------------------------------------------
    def on_abort(self, msg) -> None:
        if self._ramp_thread is not None or self._preflight_failed:
            return      # (a failed pre-flight ends the node itself, once every node heard its ABORT)
        ramp = self.make_safe_ramp() if self.started else None
        if ramp is None:
            super().on_abort(msg)
            return
        with self._step_lock:
            self._aborting = True
            self._running_trial = False
        self._ramp_thread = threading.Thread(target=self._run_ramp, args=(ramp,), name=f"{self.role}-safe",
                                             daemon=True)
        self._ramp_thread.start()

    def _run_ramp(self, ramp) -> None:
        k_abort = self.k
        t0 = time.monotonic()
        next_t = t0
        realtime = self.mode == "realtime"
        for j in range(1, ramp.total_steps + 1):
            if realtime:
                next_t += self.dt
                delay = next_t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            with self._step_lock:
                length, velocity = ramp.command(j)
                self.safe_step(length, velocity)
                self.k += 1
                self.emit_output(self.k, time.time_ns())
        self.safe_info = {"abort_step": int(k_abort), "ramp_steps": ramp.ramp_steps, "hold_steps": ramp.hold_steps,
                          "ramp_s": ramp.duration_s, "wall_s": time.monotonic() - t0,
                          "max_leg_travel_m": float(abs(ramp.delta).max())}
        reason = (f"safe pose reached {ramp.ramp_steps} steps ({ramp.duration_s * 1e3:.0f} ms) after the abort at "
                  f"step {k_abort}, held {ramp.hold_steps} steps")
        self.get_logger().info(reason)
        self.emit(TestEvent.SAFE, self.k, reason)
        self.publish_timing(final=True)
        self.sync_readers(0, force=True, timeout_s=1.0)
        self.finish(3)

    def timing_summary(self) -> dict:
        s = super().timing_summary()
        if self.safe_info is not None:
            s["safe_pose"] = self.safe_info
        s["preflight"] = self.preflight_log
        return s

    # -- machinery ---------------------------------------------------------------------------
    def on_start(self) -> None:
        self._start_process_watch()
        if self.mode == "realtime":
            self._thread = threading.Thread(target=self._realtime_loop, name=f"{self.role}-beat", daemon=True)
            self._thread.start()
        self._begin_trial(0)

    def on_event(self, msg) -> None:
        if (msg.type == TestEvent.TRIAL_BEGIN and msg.source == "supervisor" and int(msg.trial) > self.trial
                and not self._running_trial):
            self._begin_trial(int(msg.trial))

    def _begin_trial(self, trial: int) -> None:
        self.trial = trial
        self.trial_start = trial * self.trial_len
        self.k = self.trial_start
        self.reset_trial(trial)
        self._running_trial = True
        self.emit(TestEvent.TRIAL_BEGIN, self.k, trial=trial)
        if self.mode == "realtime":
            self._begin.set()
        else:
            self.emit_output(self.k, time.time_ns())

    @property
    def last_step_of_trial(self) -> int:
        return self.trial_start + self.n_steps

    def on_input(self, inp) -> None:
        """Subscription callback for the awaited input."""
        self.on_arrival(inp)
        if self.mode == "realtime":
            self._latest = inp
            return
        if not self._running_trial or self.done:
            return
        t0 = time.perf_counter_ns()
        k_in = self.input_step(inp)
        if k_in != self.k + 1:
            self.timing.late_messages += 1
            return
        with self._step_lock:
            if self._aborting:
                return
            self.timing.tick()
            self.advance(k_in, inp)
            self.k = k_in
            self.timing.compute(time.perf_counter_ns() - t0)
            self.emit_output(self.k, time.time_ns())
        self.sync_readers(self.k)
        if self.k >= self.last_step_of_trial:
            self._end_of_trial()

    def _realtime_loop(self) -> None:
        while not self.done:
            if not self._begin.wait(timeout=0.05):
                continue
            self._begin.clear()
            self.clock.start()
            self.clock.k = 0
            self.emit_output(self.k, time.time_ns())
            while not self.done and not self._aborting and self.k < self.last_step_of_trial:
                self.clock.wait_next()
                with self._step_lock:
                    if self._aborting:
                        break
                    k_next = self.k + 1
                    self.timing.tick()
                    t0 = time.perf_counter_ns()
                    inp = self._latest
                    if inp is None or self.input_step(inp) != k_next:
                        self.timing.late_messages += 1
                    self.advance(k_next, inp)
                    self.k = k_next
                    self.emit_output(k_next, time.time_ns())
                    self.timing.compute(time.perf_counter_ns() - t0)
            self.timing.overruns = self.clock.overruns
            if not self.done and not self._aborting:
                self._end_of_trial()

    def _end_of_trial(self) -> None:
        if not self._running_trial:
            return
        self._running_trial = False
        self.on_last_step()
        self.sync_readers(self.k, force=True)
        self.emit(TestEvent.DONE, self.k, trial=self.trial)

    def on_last_step(self) -> None:
        """Hook: called once after the final step of each trial (e.g. write logs)."""

    def finalize(self) -> None:
        self.done = True
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._ramp_thread is not None:
            self._ramp_thread.join(timeout=1.0)
        super().finalize()
