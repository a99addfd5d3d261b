"""Loop timing statistics (ROS-free).

Each node records, per handled step, the wall-clock period between steps and the step latency
measured from the step's origin stamp (the moment the plant took the measurement that started
the chain).  Samples go into preallocated ring buffers, so recording a step allocates nothing.
"""
from __future__ import annotations

import math
import time

import numpy as np


class TimingStats:
    """Periods, latencies, overruns and message-loss counters of one node."""

    def __init__(self, capacity: int = 1 << 16):
        self._cap = int(capacity)
        self._period = np.zeros(self._cap)
        self._latency = np.zeros(self._cap)
        self._n_period = 0
        self._n_latency = 0
        self._last_ns: int | None = None
        self.steps = 0
        self.overruns = 0
        self.deadline_misses = 0
        self.lost_messages = 0
        self.late_messages = 0
        self.foreign_messages = 0     # from a publisher that is not the run's producer of the topic (dropped)
        self.invalid_messages = 0     # failed the loop's message validation (NaN, inf, size, length, step): abort
        self.compute_ns_total = 0

    # -- recording (fast path) -------------------------------------------------------------
    def tick(self, now_ns: int | None = None) -> None:
        """Mark the start of a handled step (records the period since the previous one)."""
        now_ns = time.monotonic_ns() if now_ns is None else now_ns
        if self._last_ns is not None:
            self._period[self._n_period % self._cap] = (now_ns - self._last_ns) * 1e-9
            self._n_period += 1
        self._last_ns = now_ns
        self.steps += 1

    def latency(self, seconds: float) -> None:
        if math.isfinite(seconds) and seconds >= 0.0:
            self._latency[self._n_latency % self._cap] = seconds
            self._n_latency += 1

    def compute(self, ns: int) -> None:
        self.compute_ns_total += ns

    # -- reporting -------------------------------------------------------------------------
    def _window(self, buf: np.ndarray, n: int) -> np.ndarray:
        return buf[: min(n, self._cap)]

    def summary(self) -> dict:
        per = self._window(self._period, self._n_period)
        lat = self._window(self._latency, self._n_latency)

        def q(a, p):
            return float(np.percentile(a, p)) if a.size else float("nan")

        return {
            "steps": int(self.steps),
            "period_mean_s": float(per.mean()) if per.size else float("nan"),
            "period_max_s": float(per.max()) if per.size else float("nan"),
            "period_jitter_s": float(per.std()) if per.size else float("nan"),
            "latency_p50_s": q(lat, 50),
            "latency_p99_s": q(lat, 99),
            "latency_p999_s": q(lat, 99.9),
            "latency_max_s": float(lat.max()) if lat.size else float("nan"),
            "overruns": int(self.overruns),
            "deadline_misses": int(self.deadline_misses),
            "lost_messages": int(self.lost_messages),
            "late_messages": int(self.late_messages),
            "foreign_messages": int(self.foreign_messages),
            "invalid_messages": int(self.invalid_messages),
            "compute_mean_s": (self.compute_ns_total * 1e-9 / self.steps) if self.steps else float("nan"),
        }
