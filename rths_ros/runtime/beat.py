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
"""
from __future__ import annotations

import threading
import time

from .clock import make_clock
from .node import RthsNode

from rths_ros.msg import TestEvent  # noqa: E402


class BeatNode(RthsNode):
    """Subclasses implement :meth:`emit_output`, :meth:`advance` and :meth:`reset_trial`."""

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.n_steps = scenario.steps
        self.k = 0
        self.trial = 0
        self.trial_start = 0
        self.clock = make_clock(self.mode, self.dt, scenario.realtime.busy_wait_s)
        self._latest = None
        self._thread: threading.Thread | None = None
        self._running_trial = False
        self._begin = threading.Event()

    # -- to implement ------------------------------------------------------------------------
    def emit_output(self, k: int, origin_ns: int) -> None:
        """Publish the output (measurement) of step k, stamped with origin_ns (wall clock)."""
        raise NotImplementedError

    def advance(self, k_next: int, inp) -> None:
        """Advance the model from step k_next-1 to k_next using input ``inp`` (may be None)."""
        raise NotImplementedError

    def reset_trial(self, trial: int) -> None:
        """Put the model back to its initial state for trial ``trial`` (0-based)."""

    def input_step(self, inp) -> int:
        return int(inp.step)

    def on_arrival(self, inp) -> None:
        """Hook: an input arrived (both modes), e.g. to measure the step latency at arrival."""

    # -- machinery ---------------------------------------------------------------------------
    def on_start(self) -> None:
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
            while not self.done and self.k < self.last_step_of_trial:
                self.clock.wait_next()
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
            if not self.done:
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
        super().finalize()
