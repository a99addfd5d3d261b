"""`rths bench floor` (rths_ros/bench/floor.py): the machine's interruptions of a SCHED_FIFO busy loop per CPU and a
minimal chain through processes over pipes.  Structure and consistency only: the numbers themselves are the
machine's (docs/performance.md), never asserted here."""
from __future__ import annotations

import json
import os

import pytest

from rths_ros.bench.floor import chain, interruptions


def test_the_chain_carries_every_step_through_every_hop_and_counts_the_late_ones():
    r = chain(500.0, 0.4, hops=3, priority=10)
    assert r["steps"] == 200 and r["wrong_steps"] == 0           # each step came back as itself, in order
    rt = r["round_trip_ms"]
    assert 0 < rt["p50"] <= rt["p99"] <= rt["p99.9"] <= rt["max"]
    assert 0 <= r["late"] <= r["steps"] and r["late_ratio"] == r["late"] / r["steps"]
    assert (r["late"] > 0) == (rt["max"] > 2.0)                   # late: a round trip beyond the 2-ms period
    assert r["wake_ms"]["max"] <= rt["max"]                       # the round trip starts at the wake-up


def test_a_chain_needs_a_relay():
    with pytest.raises(ValueError, match="hops: 1 is below 2"):
        chain(1000.0, 0.1, hops=1)


def test_the_interruptions_of_a_cpu_cover_the_time_asked_in_bursts():
    cpu = max(os.sched_getaffinity(0))
    r = interruptions(cpu, 0.7, gap_us=50.0)
    assert r["cpu"] == cpu and 0.7 <= r["seconds"] < 0.75        # two bursts: 0.5 s and 0.2 s, the sleep not counted
    assert r["gaps"] >= r["gaps_over_0_5_ms"] >= r["gaps_over_1_ms"] >= 0
    assert len(r["largest_ms"]) == min(r["gaps"], 5) and all(g > 0.05 for g in r["largest_ms"])
    assert r["largest_ms"] == sorted(r["largest_ms"], reverse=True)
    assert 0 < r["loop_ns"] < 10_000


def test_rths_bench_floor_writes_both_tables(rths_cli, tmp_path):
    p = rths_cli("bench", "floor", "--duration", "0.3", "--loop-rate", "500", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    d = json.loads((tmp_path / "bench.json").read_text())["floor"]
    assert [r["cpu"] for r in d["interruptions"]] == sorted(os.sched_getaffinity(0))
    assert [r["priority"] for r in d["chain"]] == [80, 0] and all(r["steps"] == 150 for r in d["chain"])
    md = (tmp_path / "bench.md").read_text()
    assert "| 4 | 500 | SCHED_FIFO 80 | 150 |" in md and "| 4 | 500 | normal | 150 |" in md


@pytest.mark.parametrize("args, message", [(["--duration", "0"], "--duration: 0 is outside [0.1, 600]"),
                                           (["--loop-rate", "-5"], "--loop-rate: -5 is outside [1, 10000]")])
def test_rths_bench_floor_refuses_a_duration_or_rate_out_of_range(rths_local, tmp_path, args, message):
    p = rths_local("bench", "floor", *args, "--out", str(tmp_path))
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not (tmp_path / "bench.json").exists()
