"""`rths bench floor`: what this machine allows a real-time loop, measured without ROS.

Two measurements, each in child processes (SCHED_FIFO never stays on the ``rths`` process):

- **Interruptions per CPU.** A process pinned to one CPU at SCHED_FIFO 99 reads the monotonic clock in a tight loop
  and records every gap longer than ``gap_us``.  Nothing in user space can preempt it, so a gap is the kernel
  (interrupts, softirqs) or the hypervisor taking the CPU.  It runs in bursts of 0.5 s with 0.1 s of sleep between
  them, so the kernel's real-time throttling (``/proc/sys/kernel/sched_rt_runtime_us``, 95 % of each second by
  default) never cuts in and the CPU's other tasks keep running.
- **A minimal chain through processes.** A periodic process (the "plant") sends the step number through ``hops - 1``
  relay processes over pipes and back, the loop's shape (plant → sensor → numerical → platform → plant) without DDS,
  executors or messages; a round trip that ends after the period is late, as in the loop's deadline-miss ratio.  It
  runs at SCHED_FIFO ``priority`` and at normal scheduling.

The chain is a lower bound for any loop through separate processes on this machine: if it misses deadlines at a
rate, no middleware can do better; if it does not, the loop's misses come from what the middleware adds.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

#: the child of one interruption measurement: argv = cpu, seconds, gap threshold [ns], priority
_GAPS = r"""
import json, os, sys, time
cpu, seconds, gap_ns, prio = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.sched_setaffinity(0, {cpu})
if prio:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
clock = time.monotonic_ns
gaps, loops, busy = [], 0, 0
left = int(seconds * 1e9)
while left > 0:
    burst = min(left, 500_000_000)
    t0 = last = clock()
    end = t0 + burst
    while last < end:
        now = clock()
        if now - last > gap_ns:
            gaps.append(now - last)
        last = now
        loops += 1
    busy += last - t0
    left -= burst
    if left > 0:
        time.sleep(0.1)
print(json.dumps({"cpu": cpu, "busy_ns": busy, "loops": loops, "gaps_ns": gaps}))
"""

#: the child of one chain measurement: argv = period [ns], steps, hops, priority
_CHAIN = r"""
import json, os, struct, sys, time
period, steps, hops, prio = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
STOP = struct.pack("q", -1)
pipes = [os.pipe() for _ in range(hops)]
if prio:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))   # the relays inherit it
relays = []
for i in range(1, hops):
    pid = os.fork()
    if pid == 0:
        r, w = pipes[i - 1][0], pipes[i][1]
        while True:
            b = os.read(r, 8)
            os.write(w, b)
            if b == STOP:
                os._exit(0)
    relays.append(pid)
out, back = pipes[0][1], pipes[hops - 1][0]
clock = time.monotonic_ns
round_trip, wake, wrong = [], [], 0
t0 = clock() + 100_000_000
for k in range(steps):
    due = t0 + k * period
    now = clock()
    if due > now:
        time.sleep((due - now) / 1e9)
    woke = clock()
    os.write(out, struct.pack("q", k))
    if struct.unpack("q", os.read(back, 8))[0] != k:
        wrong += 1
    round_trip.append(clock() - due)
    wake.append(woke - due)
os.write(out, STOP)
os.read(back, 8)
for pid in relays:
    os.waitpid(pid, 0)
print(json.dumps({"round_trip_ns": round_trip, "wake_ns": wake, "wrong": wrong}))
"""


def _child(code: str, args: list, timeout_s: float) -> dict:
    p = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                       timeout=timeout_s)
    if p.returncode != 0:
        raise RuntimeError(f"the measurement's process failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)


def interruptions(cpu: int, seconds: float, gap_us: float = 50.0, priority: int = 99) -> dict:
    """Gaps longer than ``gap_us`` in a SCHED_FIFO ``priority`` busy loop pinned to ``cpu``."""
    r = _child(_GAPS, [cpu, seconds, int(gap_us * 1000), priority], timeout_s=seconds * 1.5 + 60)
    gaps_ms = sorted(g / 1e6 for g in r["gaps_ns"])
    busy_s = r["busy_ns"] / 1e9
    return {"cpu": cpu, "priority": priority, "seconds": busy_s, "gap_threshold_us": gap_us,
            "loop_ns": r["busy_ns"] / max(r["loops"], 1), "gaps": len(gaps_ms),
            "gaps_over_0_5_ms": sum(g > 0.5 for g in gaps_ms), "gaps_over_1_ms": sum(g > 1.0 for g in gaps_ms),
            "largest_ms": [round(g, 3) for g in gaps_ms[-5:]][::-1],
            "lost_ms_per_s": sum(gaps_ms) / busy_s if busy_s else 0.0}


def chain(rate_hz: float, seconds: float, hops: int = 4, priority: int = 80) -> dict:
    """The round trip of ``hops`` process hops over pipes at ``rate_hz``, from each period's due time."""
    import numpy as np
    if hops < 2:
        raise ValueError(f"hops: {hops} is below 2 (a plant and at least one relay)")
    period_ns = int(round(1e9 / rate_hz))
    steps = int(round(seconds * rate_hz))
    r = _child(_CHAIN, [period_ns, steps, hops, priority], timeout_s=seconds * 2 + 60)
    rt = np.asarray(r["round_trip_ns"], dtype=float) / 1e6
    wake = np.asarray(r["wake_ns"], dtype=float) / 1e6
    late = int(np.sum(rt > period_ns / 1e6))
    q = lambda a, p: round(float(np.quantile(a, p)), 3)
    return {"rate_hz": rate_hz, "hops": hops, "priority": priority, "steps": len(rt), "wrong_steps": r["wrong"],
            "late": late, "late_ratio": late / len(rt) if len(rt) else 0.0,
            "round_trip_ms": {"p50": q(rt, 0.5), "p99": q(rt, 0.99), "p99.9": q(rt, 0.999),
                              "max": round(float(rt.max()), 3)},
            "wake_ms": {"p50": q(wake, 0.5), "p99.9": q(wake, 0.999), "max": round(float(wake.max()), 3)}}


def bench_floor(seconds: float = 20.0, rate_hz: float = 1000.0, hops: int = 4, priority: int = 80) -> dict:
    """Both measurements: the interruptions of every CPU this process may use, one after the other, then the chain
    at ``priority`` and at normal scheduling."""
    import os
    cpus = sorted(os.sched_getaffinity(0))
    out: dict = {"interruptions": [], "chain": []}
    for cpu in cpus:
        print(f"  interruptions of CPU {cpu}: {seconds:g} s at SCHED_FIFO 99 ...", flush=True)
        out["interruptions"].append(interruptions(cpu, seconds))
    for prio in (priority, 0):
        label = f"SCHED_FIFO {prio}" if prio else "normal scheduling"
        print(f"  a {hops}-hop chain through processes at {rate_hz:g} Hz, {label}: {seconds:g} s ...", flush=True)
        t0 = time.monotonic()
        out["chain"].append(chain(rate_hz, seconds, hops, prio))
        out["chain"][-1]["wall_s"] = round(time.monotonic() - t0, 2)
    return out


def markdown_floor(d: dict) -> str:
    lines = ["Interruptions of a SCHED_FIFO 99 busy loop pinned to each CPU (the kernel's or the hypervisor's):", "",
             "| CPU | seconds | gaps > 50 µs | > 0.5 ms | > 1 ms | largest [ms] | lost [ms/s] |",
             "|---|---|---|---|---|---|---|"]
    for r in d["interruptions"]:
        lines.append(f"| {r['cpu']} | {r['seconds']:.1f} | {r['gaps']} | {r['gaps_over_0_5_ms']} | "
                     f"{r['gaps_over_1_ms']} | {', '.join(f'{g:.2f}' for g in r['largest_ms'])} | "
                     f"{r['lost_ms_per_s']:.3f} |")
    lines += ["", "A minimal chain through processes (pipes, no middleware), round trip from each period's due time:",
              "", "| hops | rate [Hz] | scheduling | steps | late | late ratio | p50 [ms] | p99 [ms] | p99.9 [ms] | "
              "max [ms] | wake-up p99.9 / max [ms] |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in d["chain"]:
        rt, wk = r["round_trip_ms"], r["wake_ms"]
        sched = f"SCHED_FIFO {r['priority']}" if r["priority"] else "normal"
        lines.append(f"| {r['hops']} | {r['rate_hz']:g} | {sched} | {r['steps']} | {r['late']} | "
                     f"{100 * r['late_ratio']:.3f} % | {rt['p50']:.3f} | {rt['p99']:.3f} | {rt['p99.9']:.3f} | "
                     f"{rt['max']:.3f} | {wk['p99.9']:.3f} / {wk['max']:.3f} |")
    return "\n".join(lines)
