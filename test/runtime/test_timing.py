"""TimingStats (rths_ros/runtime/timing.py): the whole run's statistics for the final report, the last window's for
the periodic one, and the counters always totals."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.runtime.timing import TimingStats


def _fill(ts: TimingStats, latencies, t0_ns: int, period_ns: int) -> int:
    for i, lat in enumerate(latencies):
        ts.tick(t0_ns + i * period_ns)
        ts.latency(lat)
    return t0_ns + len(latencies) * period_ns


def test_a_periodic_report_covers_the_samples_since_the_previous_one_and_the_final_the_whole_run():
    ts = TimingStats(capacity=64)
    first = np.linspace(1e-3, 2e-3, 40)
    t = _fill(ts, first, 0, 1_000_000)
    r1 = ts.summary(recent=True)
    assert r1["latency_p50_s"] == pytest.approx(np.percentile(first, 50))
    assert r1["latency_max_s"] == pytest.approx(2e-3)
    second = np.full(20, 5e-4)
    _fill(ts, second, t, 2_000_000)
    ts.late_messages = 3
    r2 = ts.summary(recent=True)
    assert r2["latency_p50_s"] == pytest.approx(5e-4) and r2["latency_max_s"] == pytest.approx(5e-4)
    # the window's periods: the first of them spans the gap from the last step of the first window
    assert r2["period_mean_s"] == pytest.approx((1e-3 + 19 * 2e-3) / 20)
    assert r2["steps"] == 60 and r2["late_messages"] == 3          # counters: totals
    whole = ts.summary()
    both = np.concatenate((first, second))
    assert whole["latency_p50_s"] == pytest.approx(np.percentile(both, 50))
    assert whole["latency_p999_s"] == pytest.approx(np.percentile(both, 99.9))
    assert whole["latency_max_s"] == pytest.approx(2e-3)
    r3 = ts.summary(recent=True)                                    # nothing new since: no samples, no numbers
    assert np.isnan(r3["latency_p50_s"]) and np.isnan(r3["period_mean_s"]) and r3["steps"] == 60


def test_a_window_that_wraps_around_the_ring_buffer():
    ts = TimingStats(capacity=16)
    t = _fill(ts, np.full(10, 1e-3), 0, 1_000_000)
    ts.summary(recent=True)
    tail = np.arange(1, 13) * 1e-4                                  # samples 10..21: wraps at 16
    _fill(ts, tail, t, 1_000_000)
    r = ts.summary(recent=True)
    assert r["latency_max_s"] == pytest.approx(tail.max())
    assert r["latency_p50_s"] == pytest.approx(np.percentile(tail, 50))
    _fill(ts, np.full(40, 7e-4), t + 12 * 1_000_000, 1_000_000)     # more than the ring holds: its last 16
    r = ts.summary(recent=True)
    assert r["latency_p50_s"] == pytest.approx(7e-4) and r["latency_max_s"] == pytest.approx(7e-4)
