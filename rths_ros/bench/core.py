"""``rths bench core``: per-step cost of every core object on a recorded trajectory of the scenario, with
and without numba's JIT; the machine facts and the writer of bench.json / bench.md shared by every bench."""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.families import registry
from rths_ros.families.base import resolve


def ros_facts() -> str:
    """The ROS 2 the numbers were measured on: rclpy's version (its wheel's, or the sourced distribution's name)
    and the Fast DDS generation, e.g. 'rclpy 9.1.2, Fast DDS 3'."""
    from importlib import metadata

    from rths_ros.launch_support import fastdds_generation
    try:
        rclpy = "rclpy " + metadata.version("ros-rclpy")
    except metadata.PackageNotFoundError:
        rclpy = f"ROS 2 {os.environ.get('ROS_DISTRO', 'unknown')}"
    return f"{rclpy}, Fast DDS {fastdds_generation()}"


def machine_facts() -> dict:
    return {"cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "machine": platform.machine(), "rmw": os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"),
            "ros": ros_facts(), "date": time.strftime("%Y-%m-%d %H:%M:%S")}


#: the reference workload of :func:`machine_speed`: this many additions in a Python loop
SPEED_LOOP_N = 1_000_000
#: a change of the reference workload's time between the start and the end of a bench beyond this fraction is
#: pointed out with the results (rows measured at different times are then not comparable)
SPEED_DRIFT = 0.15


def reference_loop_s(n: int = SPEED_LOOP_N, repeats: int = 3) -> float:
    """Seconds of a fixed pure-Python workload (``n`` additions in a loop), the best of ``repeats``: how fast this
    machine runs Python code right now.  On a shared or virtual machine it moves by tens of percent between minutes,
    and every row of the bench with it."""
    best = float("inf")
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        acc = 0
        for i in range(n):
            acc += i
        best = min(best, time.perf_counter() - t0)
    return best


def speed_note(speed: dict | None) -> str:
    """The sentence on the machine's speed during a bench (``speed``: ``start_s`` and ``end_s`` of
    :func:`reference_loop_s`), or '' without a measurement."""
    if not speed or not speed.get("start_s"):
        return ""
    a, b = speed["start_s"], speed.get("end_s")
    text = (f"Machine speed: a fixed Python workload ({SPEED_LOOP_N:,} additions in a loop, best of 3) took "
            f"{1e3 * a:.0f} ms at the start of the bench")
    if not b:
        return text + "."
    text += f" and {1e3 * b:.0f} ms at its end"
    change = b / a - 1.0
    if abs(change) > SPEED_DRIFT:
        text += (f": the machine ran {abs(change) * 100:.0f} % {'slower' if change > 0 else 'faster'} at the end, so "
                 "rows measured early and late in this bench are not comparable with each other")
    return text + "."


def _time_calls(fn, n: int) -> dict:
    t = np.empty(n)
    pc = time.perf_counter_ns
    for i in range(n):
        t0 = pc()
        fn(i)
        t[i] = pc() - t0
    t *= 1e-3
    return {"median_us": float(np.median(t)), "p99_us": float(np.percentile(t, 99)), "max_us": float(t.max()),
            "budget_fraction_median": float(np.median(t) / 1000.0)}


def _time_replay(fn, m: int, n: int, reset=None) -> dict:
    """Like :func:`_time_calls` for objects with state that replay a recorded trial of ``m`` steps: the trial is
    replayed as often as needed for ``n`` timed calls; ``reset`` (untimed) runs before each pass."""
    t = np.empty(n)
    pc = time.perf_counter_ns
    i = 0
    while i < n:
        if reset is not None:
            reset()
        for k in range(min(m, n - i)):
            t0 = pc()
            fn(k)
            t[i] = pc() - t0
            i += 1
    t *= 1e-3
    return {"median_us": float(np.median(t)), "p99_us": float(np.percentile(t, 99)), "max_us": float(t.max()),
            "budget_fraction_median": float(np.median(t) / 1000.0), "n": int(n)}


def bench_core(s: scn.Scenario, n: int = 4000) -> dict:
    """Per-step cost of each core object on a recorded trajectory of the scenario (virtual run)."""
    from rths_ros.app.vrths import run_virtual
    fam = registry.family(s)
    if fam.bench is not None:                 # the family's own objects (e.g. the gait test's)
        return resolve(fam.bench)(s, n)
    rec = run_virtual(scn.replace(s, loop=scn.replace(s.loop, trials=1)))
    m = min(n, rec["k"].size - 1)
    numerical = factory.build_numerical(s)
    imap, commander = factory.build_platform(s)
    plant = factory.build_plant(s)
    force = factory.build_force_processor(s)
    npc = factory.build_passivity(scn.replace(s, passivity=scn.replace(s.passivity, enabled=True)))
    aff = factory.build_aff(scn.replace(s, aff=scn.replace(s.aff, enabled=True)))
    q = np.zeros(1)
    qd = np.zeros(1)
    out = {}
    numerical.reset()
    out["numerical_substructure: NumericalMSD.step (DOP853)"] = _time_calls(
        lambda i: numerical.step(rec["f_int"][i:i + 1]), m)

    def cmd(i):
        q[0], qd[0] = rec["z_cmd"][i + 1], rec["zdot_cmd"][i + 1]
        commander.command(q, qd)
    out["stewart_platform: PlatformCommander.command (IK, VFF, limits)"] = _time_calls(cmd, m)
    out["stewart_platform: InterfaceMap.achieved (FK, warm start)"] = _time_calls(
        lambda i: imap.achieved(rec["b_meas"][i], rec["bdot_meas"][i]), m)
    plant.reset(0)
    out["sim_plant: SimPlant.step (6 legs at 10 kHz, specimen, sensor)"] = _time_calls(
        lambda i: plant.step(rec["b_cmd"][i + 1], rec["ff_velocity"][i + 1]), m)
    force.reset()
    out["ft_sensor: ForceProcessor.process"] = _time_calls(lambda i: force.process(rec["wrench"][i]), m)
    out["passivity_controller: PassivityController.update"] = _time_calls(
        lambda i: npc.update(rec["f_int"][i], rec["zdot_cmd"][i], rec["zdot_ach"][i], rec["f_int"][i],
                             rec["zdot_cmd"][i + 1]), m)
    aff.reset()
    out[f"aff_learner: FxlmsAff.adapt (6 x {s.aff.n_taps} taps)"] = _time_calls(
        lambda i: aff.adapt(rec["b_cmd"][i], rec["b_meas"][i]), m)
    out[f"stewart_platform: FxlmsAff.feedforward (6 x {s.aff.n_taps} taps)"] = _time_calls(
        lambda i: aff.feedforward(rec["b_cmd"][i + 1]), m)
    from rths_ros.app.ilc_series import IlcSeries
    ilc = IlcSeries(scn.replace(s, ilc=scn.replace(s.ilc, enabled=True)))
    e = np.random.default_rng(0).normal(0, 1e-4, (6, s.steps))
    trial = _time_calls(lambda i: ilc.ilc.update(e), 20)
    trial["note"] = "once per trial, in the pause (not on the fast path)"
    out["ilc_learner: PdIlc.update (whole trial)"] = trial
    return out


def bench_core_without_numba(scenario_name: str, overrides: list[str]) -> dict:
    """The same per-step costs with numba's JIT disabled (the kernels run as plain Python/numpy)."""
    import subprocess
    import sys
    code = ("import json,sys; from rths_ros import bench; from rths_ros.app import scenario as scn; "
            "print(json.dumps(bench.bench_core(scn.load(sys.argv[1], sys.argv[2:]), n=400)))")
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    p = subprocess.run([sys.executable, "-c", code, scenario_name, *overrides], capture_output=True, text=True,
                       env=env, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed")
    return json.loads(p.stdout.strip().splitlines()[-1])


def markdown_core_compare(jit: dict, nojit: dict) -> str:
    lines = ["| core object (node) | numba [µs] | plain Python/numpy [µs] | speed-up |", "|---|---|---|---|"]
    for k, v in jit.items():
        w = nojit.get(k)
        if w:
            lines.append(f"| {k} | {v['median_us']:.1f} | {w['median_us']:.1f} | {w['median_us'] / v['median_us']:.0f}× |")
    return "\n".join(lines)



def markdown_core(core: dict) -> str:
    lines = ["| core object (node) | median [µs] | p99 [µs] | share of 1 ms (median) |", "|---|---|---|---|"]
    for k, v in core.items():
        share = f"{100 * v['budget_fraction_median']:.2f} %" if "note" not in v else f"– ({v['note']})"
        lines.append(f"| {k} | {v['median_us']:.1f} | {v['p99_us']:.1f} | {share} |")
    return "\n".join(lines)



def write(out_dir: Path, data: dict, md: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(json.dumps(data, indent=2, default=float))
    (out_dir / "bench.md").write_text(md + "\n")
