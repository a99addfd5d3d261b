"""Loop timing statistics (ROS-free).

Each node records, per handled step, the wall-clock period between steps and the step latency
measured from the step's origin stamp (the moment the plant took the measurement that started
the chain).  Samples go into preallocated ring buffers, so recording a step allocates nothing.
"""
from __future__ import annotations

import math
import time

import numpy as np

#: the latency quantiles of a report
QUANTILES = (50.0, 99.0, 99.9)
# numpy loads its quantile code on the first call (6 ms measured): at import, not in a running loop's first report
np.percentile(np.zeros(2), QUANTILES)


class TimingStats:
    """Periods, latencies, overruns and message-loss counters of one node."""

    def __init__(self, capacity: int = 1 << 16):
        self._cap = int(capacity)
        self._period = np.zeros(self._cap)
        self._latency = np.zeros(self._cap)
        self._n_period = 0
        self._n_latency = 0
        self._rep_period = self._rep_latency = 0      # where the last periodic report ended (summary(recent=True))
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
    def _window(self, buf: np.ndarray, n: int, since: int = 0) -> np.ndarray:
        """The samples ``since .. n-1`` still in the ring (all of them: the whole buffer's first ``n``)."""
        if since <= 0 or n - since >= self._cap:
            return buf[: min(n, self._cap)]
        a, b = since % self._cap, n % self._cap
        return buf[a:b] if a <= b else np.concatenate((buf[a:], buf[:b]))

    def summary(self, recent: bool = False) -> dict:
        """The statistics of the whole run; ``recent``: the periods and latencies since the last ``recent`` summary
        only (the periodic report during a run: its cost stays that of one second of samples, 0.05 ms at 1 kHz,
        where the whole run's, up to 65 536, took up to 0.3 ms of the interpreter's lock from a realtime loop);
        the counters are always the totals."""
        since_p, since_l = (self._rep_period, self._rep_latency) if recent else (0, 0)
        per = self._window(self._period, self._n_period, since_p)
        lat = self._window(self._latency, self._n_latency, since_l)
        if recent:
            self._rep_period, self._rep_latency = self._n_period, self._n_latency
        p50, p99, p999 = (float(x) for x in np.percentile(lat, QUANTILES)) if lat.size else (float("nan"),) * 3
        return {
            "steps": int(self.steps),
            "period_mean_s": float(per.mean()) if per.size else float("nan"),
            "period_max_s": float(per.max()) if per.size else float("nan"),
            "period_jitter_s": float(per.std()) if per.size else float("nan"),
            "latency_p50_s": p50,
            "latency_p99_s": p99,
            "latency_p999_s": p999,
            "latency_max_s": float(lat.max()) if lat.size else float("nan"),
            "overruns": int(self.overruns),
            "deadline_misses": int(self.deadline_misses),
            "lost_messages": int(self.lost_messages),
            "late_messages": int(self.late_messages),
            "foreign_messages": int(self.foreign_messages),
            "invalid_messages": int(self.invalid_messages),
            "compute_mean_s": (self.compute_ns_total * 1e-9 / self.steps) if self.steps else float("nan"),
        }
