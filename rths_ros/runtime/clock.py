"""The two clock modes of a run behind one interface.

``lockstep``: simulated time.  The beat-setting node (the plant or the hardware driver) advances
step k only when the command for step k has arrived; ``wait_next`` returns at once and the run is as
fast as the CPU allows.  Deterministic.

``realtime``: wall clock.  ``wait_next`` sleeps until the absolute deadline t0 + k*dt (no drift:
deadlines never accumulate the lateness of earlier steps), finishing with a short busy-wait so the
wake-up jitter of the OS sleep does not land on the step.  A step that starts after its own deadline
plus one period counts as an overrun.
"""
from __future__ import annotations

import time


class LoopClock:
    mode = "base"

    def __init__(self, dt_s: float):
        if not dt_s > 0:
            raise ValueError(f"dt_s: {dt_s!r} must be > 0")
        self.dt_s = float(dt_s)
        self.dt_ns = int(round(dt_s * 1e9))
        self.k = 0
        self.overruns = 0

    def start(self) -> None:
        self.k = 0

    def wait_next(self) -> int:
        """Block until step k+1 may start; return the new step index."""
        raise NotImplementedError

    def sim_time_s(self, k: int | None = None) -> float:
        return (self.k if k is None else k) * self.dt_s

    @property
    def blocking(self) -> bool:
        return False


class LockstepClock(LoopClock):
    mode = "lockstep"

    def wait_next(self) -> int:
        self.k += 1
        return self.k


class RealtimeClock(LoopClock):
    mode = "realtime"

    def __init__(self, dt_s: float, busy_wait_s: float = 2e-4):
        super().__init__(dt_s)
        self.busy_wait_ns = int(busy_wait_s * 1e9)
        self.t0_ns = 0

    def start(self) -> None:
        super().start()
        self.t0_ns = time.monotonic_ns()

    def deadline_ns(self, k: int) -> int:
        return self.t0_ns + k * self.dt_ns

    def wait_next(self) -> int:
        self.k += 1
        target = self.deadline_ns(self.k)
        now = time.monotonic_ns()
        if now > target + self.dt_ns:
            self.overruns += 1
        remaining = target - now - self.busy_wait_ns
        if remaining > 0:
            time.sleep(remaining * 1e-9)
        while time.monotonic_ns() < target:
            pass
        return self.k

    @property
    def blocking(self) -> bool:
        return True


def make_clock(mode: str, dt_s: float, busy_wait_s: float = 2e-4) -> LoopClock:
    if mode == "lockstep":
        return LockstepClock(dt_s)
    if mode == "realtime":
        return RealtimeClock(dt_s, busy_wait_s)
    raise ValueError(f"mode: {mode!r} is not allowed; expected one of 'lockstep', 'realtime'")
