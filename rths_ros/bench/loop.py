"""``rths bench loop``: the loop over ROS 2 in each configuration (processes or composed, lockstep or
realtime, executor, QoS, local bus), its statistics read back from the run's bag."""
from __future__ import annotations

import json
import time
from pathlib import Path

from rths_ros.app import scenario as scn

#: loop configurations: name -> (loop.mode, composed, extra overrides)
LOOP_CONFIGS = {
    "lockstep-processes": ("lockstep", False, []),
    "lockstep-composed": ("lockstep", True, []),
    "realtime-processes": ("realtime", False, []),
    # the real-time practice for separate processes: SCHED_FIFO for the processes that step the loop (the recorder
    # and supervisor at normal scheduling), pages locked, no busy-wait tail (a FIFO process busy-waiting holds one
    # of the 2 cores that five others wait for)
    "realtime-processes-rt": ("realtime", False, ["realtime.priority=80", "realtime.mlockall=true",
                                                  "realtime.busy_wait_s=0"]),
    "realtime-composed": ("realtime", True, []),
    "realtime-composed-rt": ("realtime", True, ["realtime.priority=80", "realtime.mlockall=true"]),
    "realtime-composed-dds": ("realtime", True, ["realtime.local_bus=false"]),
    "lockstep-composed-dds": ("lockstep", True, ["realtime.local_bus=false"]),
    "realtime-composed-reliable": ("realtime", True, ["loop.qos_profile=realtime_reliable"]),
    "realtime-processes-single-threaded": ("realtime", False, ["realtime.executor=single_threaded"]),
    "lockstep-processes-single-threaded": ("lockstep", False, ["realtime.executor=single_threaded"]),
}


def bench_loop(name: str, overrides: list[str], duration_s: float, configs: list[str], out_dir: Path,
               log=print) -> dict:
    """Run the scenario in each configuration and collect the loop statistics from its bag."""
    from rths_ros.analysis.run_analysis import record_from_bag
    from rths_ros.launch_support import refuse_recorded_run
    from rths_ros.runner import run_scenario
    res = {}
    for c in configs:
        if c not in LOOP_CONFIGS:
            raise scn.ParameterError(f"--configs: {c!r} is not allowed; expected some of {', '.join(LOOP_CONFIGS)}")
        mode, composed, extra = LOOP_CONFIGS[c]
        s = scn.load(name, list(overrides) + extra + [f"loop.duration_s={duration_s}"], mode)
        d = out_dir / c
        refuse_recorded_run(d, "--out", overwrite=True)     # a bench's own folder: an earlier bench's run goes
        t0 = time.monotonic()
        r = run_scenario(s, d, composed=composed, progress=False)
        wall = time.monotonic() - t0
        if r.code != 0:
            res[c] = {"error": r.message.splitlines()[0]}
            log(f"  {c}: FAILED {res[c]['error']}")
            continue
        beat = _beat_timing(d / "timing")
        if (d / "bag").is_dir():
            _, _, loop = record_from_bag(d / "bag")
            per_node = loop.pop("nodes", {})
        else:       # recording.enabled=false: no bag; the statistics each node wrote at its end
            loop, per_node = _loop_from_timing(beat), _node_timings(d / "timing")
        loop["lost_messages"] = int(sum(n["lost_messages"] for n in per_node.values()))
        loop["qos_deadline_misses"] = int(sum(n["deadline_misses"] for n in per_node.values()))
        loop["step_latency_p999_s"] = beat.get("latency_p999_s")
        loop["cpu_s"] = {p.stem: json.loads(p.read_text()).get("process_cpu_s") for p in (d / "timing").glob("*.json")}
        loop["steps_per_s"] = s.steps / (beat["period_mean_s"] * s.steps) if beat.get("period_mean_s") else None
        per = loop.get("period_mean_s") or float("nan")
        loop["realtime_factor"] = (s.loop.dt_s / per) if mode == "lockstep" and per > 0 else 1.0
        loop["wall_s"] = wall
        loop["dt_s"], loop["duration_s"] = s.loop.dt_s, s.loop.duration_s
        res[c] = loop
        log(f"  {c}: miss ratio {loop['deadline_miss_ratio']:.4f}, latency p50 "
            f"{1e3 * loop['step_latency_p50_s']:.3f} ms, p99 {1e3 * loop['step_latency_p99_s']:.3f} ms, "
            f"x real time {loop['realtime_factor']:.2f}")
    return res


def _node_timings(timing_dir: Path) -> dict:
    """Each node's end-of-run statistics (``OUT/timing/<node>.json``; run.json is the runner's)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(timing_dir.glob("*.json")) if p.stem != "run"}


def _beat_timing(timing_dir: Path) -> dict:
    """The statistics of the node that set the beat (the plant of the run)."""
    from rths_ros.runtime.topics import PLANT_PRODUCERS
    for plant in PLANT_PRODUCERS:
        p = timing_dir / f"{plant}.json"
        if p.is_file():
            return json.loads(p.read_text())
    raise FileNotFoundError(f"no plant's timing ({', '.join(PLANT_PRODUCERS)}) in {timing_dir}")


def _loop_from_timing(beat: dict) -> dict:
    """The loop statistics of a run without a bag, from the beat node's own counts (the same quantities the bag's
    /rths/timing carries)."""
    steps = max(int(beat.get("steps") or 0), 1)
    return {"deadline_miss_ratio": beat.get("deadline_misses", 0) / steps,
            "step_latency_p50_s": beat["latency_p50_s"], "step_latency_p99_s": beat["latency_p99_s"],
            "step_latency_max_s": beat["latency_max_s"], "period_jitter_s": beat["period_jitter_s"],
            "period_mean_s": beat["period_mean_s"], "source": "timing/*.json (recording off: no bag)"}


def markdown_loop(loop: dict) -> str:
    lines = ["| configuration | deadline-miss ratio | latency p50 [ms] | p99 [ms] | p99.9 [ms] | max [ms] | "
             "period jitter [ms] | × real time | lost msgs | QoS deadline misses | CPU [s] per process |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k, v in loop.items():
        if "error" in v:
            lines.append(f"| {k} | failed: {v['error']} | | | | | | | | | |")
            continue
        cpu = ", ".join(f"{n}: {c:.1f}" for n, c in sorted((v.get("cpu_s") or {}).items()) if c is not None)
        p999 = v.get("step_latency_p999_s")
        lines.append(f"| {k} | {v['deadline_miss_ratio']:.4f} | {1e3 * v['step_latency_p50_s']:.3f} | "
                     f"{1e3 * v['step_latency_p99_s']:.3f} | {1e3 * p999 if p999 else float('nan'):.3f} | "
                     f"{1e3 * v['step_latency_max_s']:.3f} | {1e3 * v['period_jitter_s']:.3f} | "
                     f"{v['realtime_factor']:.2f} | {v.get('lost_messages', '')} | "
                     f"{v.get('qos_deadline_misses', '')} | {cpu} |")
    return "\n".join(lines)
