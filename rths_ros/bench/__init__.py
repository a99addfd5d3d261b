"""``rths bench``: measurements of what users wait for, of the loop and of the per-step compute of every core object.

    rths bench [summary] [--quick] [--only GROUPS]   every target in one run: `rths run` wall-time breakdown,
                                         lockstep composed, in-process virtual runs, FACE sweep (process pool
                                         and Dask), realtime rate scan, the last `make test` record
    rths bench core  [SCENARIO]          per-step cost of each core object (median, p99 in microseconds)
    rths bench loop  [SCENARIO] [--duration S] [--configs a,b,...]   the loop over ROS 2 per configuration
    rths bench safety [SCENARIO]         reaction to faults: watchdog trip and ramp to the safe pose
    rths bench launch [SCENARIO|all]     `ros2 launch rths_ros rths.launch.py` of each scenario: exit code,
                                         wall time, metrics.json written

Results are written as JSON and a Markdown table (with machine facts: cores, kernel, Python, rmw).
Numbers are measurements of this machine at this moment; nothing asserts them.
"""
from __future__ import annotations

from rths_ros.bench.core import (
    _time_calls,
    _time_replay,
    bench_core,
    bench_core_without_numba,
    machine_facts,
    markdown_core,
    markdown_core_compare,
    write,
)
from rths_ros.bench.launch import bench_launch, markdown_launch, ros2_command
from rths_ros.bench.loop import LOOP_CONFIGS, bench_loop, markdown_loop
from rths_ros.bench.safety import bench_flood, bench_safety, markdown_flood, markdown_safety
from rths_ros.bench.summary import SummaryOptions, cmd_summary, run_summary

__all__ = ["LOOP_CONFIGS", "SummaryOptions", "_time_calls", "_time_replay", "bench_core",
           "bench_core_without_numba", "bench_launch", "bench_loop", "bench_safety", "bench_flood", "markdown_flood", "cmd_summary", "machine_facts",
           "markdown_core", "markdown_core_compare", "markdown_launch", "markdown_loop", "markdown_safety",
           "ros2_command", "run_summary", "write"]
