"""The beat-setting node of a run (the plant, a hardware driver, the smoke talker).

It owns the run's step counter.  In ``lockstep`` mode it advances step k -> k+1 when the input
for step k+1 has arrived (simulated time, deterministic).  In ``realtime`` mode a dedicated thread
advances it on absolute wall-clock deadlines and uses the latest input; an input that is not the
one for the current step counts as late (the previous one is held).  After the last step it
reports DONE.
"""
from __future__ import annotations

import threading
import time

from .clock import make_clock
from .node import RthsNode

from rths_ros.msg import TestEvent  # noqa: E402


class BeatNode(RthsNode):
    """Subclasses implement :meth:`emit_output` (publish the output of step k) and :meth:`advance`."""

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.n_steps = scenario.steps
        self.k = 0
        self.clock = make_clock(self.mode, self.dt, scenario.realtime.busy_wait_s)
        self._latest = None
        self._thread: threading.Thread | None = None
        self._finished_steps = False

    # -- to implement ------------------------------------------------------------------------
    def emit_output(self, k: int, origin_ns: int) -> None:
        """Publish the output (measurement) of step k, stamped with origin_ns (wall clock)."""
        raise NotImplementedError

    def advance(self, k_next: int, inp) -> None:
        """Advance the model from step k_next-1 to k_next using input ``inp`` (may be None)."""
        raise NotImplementedError

    def input_step(self, inp) -> int:
        return int(inp.step)

    # -- machinery ---------------------------------------------------------------------------
    def on_start(self) -> None:
        self.k = 0
        self.clock.start()
        if self.mode == "realtime":
            self._thread = threading.Thread(target=self._realtime_loop, name=f"{self.role}-beat", daemon=True)
            self._thread.start()
        else:
            self.emit_output(0, time.time_ns())

    def on_input(self, inp) -> None:
        """Subscription callback for the awaited input."""
        if self.mode == "realtime":
            self._latest = inp
            return
        if self._finished_steps or not self.started:
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
        if self.k >= self.n_steps:
            self._end_of_steps()

    def _realtime_loop(self) -> None:
        self.emit_output(0, time.time_ns())
        while not self.done and self.k < self.n_steps:
            k_next = self.clock.wait_next()
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
            self._end_of_steps()

    def _end_of_steps(self) -> None:
        if self._finished_steps:
            return
        self._finished_steps = True
        self.on_last_step()
        self.sync_readers(self.k, force=True)
        self.emit(TestEvent.DONE, self.k)

    def on_last_step(self) -> None:
        """Hook: called once after the final step (e.g. write logs)."""

    def finalize(self) -> None:
        self.done = True
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        super().finalize()
