"""``rths bench``: measurements of the loop and of the per-step compute of every core object.

    rths bench core  [SCENARIO]          per-step cost of each core object (median, p99 in microseconds)
    rths bench loop  [SCENARIO] [--duration S] [--configs a,b,...]   the loop over ROS 2 per configuration
    rths bench safety [SCENARIO]         reaction to faults: watchdog trip and ramp to the safe pose
    rths bench launch [SCENARIO|all]     `ros2 launch rths_ros rths.launch.py` of each scenario: exit code,
                                         wall time, metrics.json written

Results are written as JSON and a Markdown table (with machine facts: cores, kernel, Python, rmw).
Numbers are measurements of this machine at this moment; nothing asserts them.
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from rths_ros.app import factory
from rths_ros.app import scenario as scn


def machine_facts() -> dict:
    return {"cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "machine": platform.machine(), "rmw": os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"),
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}


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


def bench_core_gait(s: scn.Scenario, n: int = 4000) -> dict:
    """Per-step cost of the gait test's core objects (numerical.model = vpp), each replaying the recorded
    inputs of one virtual trial in the order of the node graph (rths_ros.core.models.gait.rths)."""
    from rths_ros.app.vrths import run_virtual
    from rths_ros.core.models.gait import vpp, vpp_kernels, vpp_params
    rec = run_virtual(scn.replace(s, loop=scn.replace(s.loop, trials=1)))
    m = rec["force"].shape[0] - 1
    if m < 2:
        raise RuntimeError(f"{s.name}: the virtual trial ended after {m} steps; nothing to replay "
                           f"({rec.get('abort_reason', '')})")
    vp = s.numerical.vpp
    out = {}
    num = factory.build_numerical(s)
    forces = rec["force"]
    out[f"numerical_substructure: VPP sync step ({vp.n_sub} RK4 sub-steps of {1e3 * vp.dt_sub_s:.1f} ms, "
        "events, plate-frame command)"] = _time_replay(
        lambda k: num.step(forces[k]), m, n, num.reset)
    P = vpp_params.param_vector(vp, amputee=True, foot="external")
    work = vpp._Work()
    box = {}

    def kernel_reset():
        box["st"] = vpp.initial_state(vp, amputee=True, ic=num.inner._ic)

    def kernel(k):
        st = box["st"]
        work.w[0], work.w[1], work.w[2] = forces[k, 0], forces[k, 1], forces[k, 2]
        vpp_kernels._sync_kernel(st.s, st.c, st.fp, P, work.w, vp.dt_sub_s, vp.n_sub, work.wk, work.cmd)
    out[f"numerical_substructure: vpp.sync_step kernel alone ({vp.n_sub} sub-steps)"] = _time_replay(
        kernel, m, n, kernel_reset)
    plat = factory.build_gait_platform(s)
    q, qd = rec["q_cmd"], rec["qd_cmd"]
    out["stewart_platform: GaitPlatform.command (IK with toe-out, speed policy, limits)"] = _time_replay(
        lambda k: plat.command(q[k + 1], qd[k + 1]), m, n, plat.reset)
    out["stewart_platform: GaitPlatform.achieved (FK)"] = _time_replay(
        lambda k: plat.achieved(rec["b_meas"][k], rec["bdot_meas"][k]), m, n, plat.gi.reset)
    gf = factory.build_force_path(s)
    out["ft_sensor: GaitForceProcessor.process (FK, sagittal load, CoP)"] = _time_replay(
        lambda k: gf.process(rec["wrench"][k], rec["b_meas"][k]), m, n, gf.reset)
    plant = factory.build_plant(s)
    seed = factory.plant_seed(s, 0)
    out["sim_plant: SimPlant.step (6 legs, prosthetic foot on the plate, sensor)"] = _time_replay(
        lambda k: plant.step(rec["b_cmd"][k + 1], rec["ff_velocity"][k + 1]), m, n, lambda: plant.reset(seed))
    return out


def bench_core(s: scn.Scenario, n: int = 4000) -> dict:
    """Per-step cost of each core object on a recorded trajectory of the scenario (virtual run)."""
    from rths_ros.app.vrths import run_virtual
    if s.numerical.family == "gait":
        return bench_core_gait(s, n)
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


def bench_loop(name: str, overrides: list[str], duration_s: float, configs: list[str], out_dir: Path,
               log=print) -> dict:
    """Run the scenario in each configuration and collect the loop statistics from its bag."""
    from rths_ros.analysis.run_analysis import record_from_bag
    from rths_ros.runner import run_scenario
    table = {
        "lockstep-processes": ("lockstep", False, []),
        "lockstep-composed": ("lockstep", True, []),
        "realtime-processes": ("realtime", False, []),
        "realtime-composed": ("realtime", True, []),
        "realtime-composed-rt": ("realtime", True, ["realtime.priority=80", "realtime.mlockall=true"]),
        "realtime-composed-dds": ("realtime", True, ["realtime.local_bus=false"]),
        "lockstep-composed-dds": ("lockstep", True, ["realtime.local_bus=false"]),
        "realtime-composed-reliable": ("realtime", True, ["loop.qos_profile=realtime_reliable"]),
        "realtime-processes-single-threaded": ("realtime", False, ["realtime.executor=single_threaded"]),
        "lockstep-processes-single-threaded": ("lockstep", False, ["realtime.executor=single_threaded"]),
    }
    res = {}
    for c in configs:
        if c not in table:
            raise scn.ParameterError(f"--configs: {c!r} is not allowed; expected some of {', '.join(table)}")
        mode, composed, extra = table[c]
        s = scn.load(name, list(overrides) + extra + [f"loop.duration_s={duration_s}"], mode)
        d = out_dir / c
        t0 = time.monotonic()
        r = run_scenario(s, d, composed=composed, progress=False)
        wall = time.monotonic() - t0
        if r.code != 0:
            res[c] = {"error": r.message.splitlines()[0]}
            log(f"  {c}: FAILED {res[c]['error']}")
            continue
        _, _, loop = record_from_bag(d / "bag")
        per_node = loop.pop("nodes", {})
        loop["lost_messages"] = int(sum(n["lost_messages"] for n in per_node.values()))
        loop["qos_deadline_misses"] = int(sum(n["deadline_misses"] for n in per_node.values()))
        beat = json.loads((d / "timing" / "sim_plant.json").read_text())
        loop["step_latency_p999_s"] = beat.get("latency_p999_s")
        loop["cpu_s"] = {p.stem: json.loads(p.read_text()).get("process_cpu_s") for p in (d / "timing").glob("*.json")}
        loop["steps_per_s"] = s.steps / (beat["period_mean_s"] * s.steps) if beat.get("period_mean_s") else None
        per = loop.get("period_mean_s") or float("nan")
        loop["realtime_factor"] = (s.loop.dt_s / per) if mode == "lockstep" and per > 0 else 1.0
        loop["wall_s"] = wall
        res[c] = loop
        log(f"  {c}: miss ratio {loop['deadline_miss_ratio']:.4f}, latency p50 "
            f"{1e3 * loop['step_latency_p50_s']:.3f} ms, p99 {1e3 * loop['step_latency_p99_s']:.3f} ms, "
            f"x real time {loop['realtime_factor']:.2f}")
    return res


def markdown_core(core: dict) -> str:
    lines = ["| core object (node) | median [µs] | p99 [µs] | share of 1 ms (median) |", "|---|---|---|---|"]
    for k, v in core.items():
        share = f"{100 * v['budget_fraction_median']:.2f} %" if "note" not in v else f"– ({v['note']})"
        lines.append(f"| {k} | {v['median_us']:.1f} | {v['p99_us']:.1f} | {share} |")
    return "\n".join(lines)


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


def _safety_case(name: str, overrides: list[str], out: Path, kill: str | None) -> dict:
    """One faulted run; returns what the nodes recorded of the abort and the safe pose."""
    import signal
    import threading

    from rths_ros.runner import DomainLease, run_scenario
    s = scn.load(name, overrides)
    res: dict = {}
    lease = DomainLease()
    t = threading.Thread(target=lambda: res.update(r=run_scenario(s, out, progress=False, lease=lease)),
                         daemon=True)
    t.start()
    t_kill = None
    if kill:
        from rths_ros.runner import wait_until_running
        wait_until_running(out, 120.0)
        time.sleep(1.5)
        from rths_ros.runner import node_pids
        for pid in node_pids(str(out), kill)[:1]:
            os.kill(pid, signal.SIGKILL)
            t_kill = time.monotonic()
    t.join(600)
    r = res.get("r")
    row = {"dt_s": s.loop.dt_s, "case": " ".join(overrides) + (f"; SIGKILL {kill}" if kill else ""), "mode": s.loop.mode,
           "exit_code": None if r is None else r.code,
           "reason": "" if r is None else r.message.splitlines()[0][:160],
           "end_after_kill_s": None if t_kill is None else time.monotonic() - t_kill}
    for f in sorted((out / "timing").glob("*.json")):
        data = json.loads(f.read_text())
        if data.get("watchdog_trip") and "watchdog" not in row:
            row["watchdog"] = dict(data["watchdog_trip"], node=data["node"])
        if data.get("safe_pose"):
            row["safe_pose"] = data["safe_pose"]
    return row


def bench_safety(name: str, out_dir: Path) -> list[dict]:
    """Reaction to faults, measured on this machine: a killed numerical node (lockstep and realtime,
    the watchdogs) and a sensor saturation at a known step (the limit check)."""
    cases = [
        (["loop.duration_s=600"], "numerical_substructure"),
        (["loop.duration_s=600", "loop.mode=realtime"], "numerical_substructure"),
        (["faults.saturate_wrench_at_step=1500"], None),
        (["faults.saturate_wrench_at_step=1500", "loop.mode=realtime"], None),
    ]
    rows = []
    for i, (ov, kill) in enumerate(cases):
        print(f"  [{i + 1}/{len(cases)}] {' '.join(ov)}{'; kill ' + kill if kill else ''}", flush=True)
        rows.append(_safety_case(name, ov, out_dir / f"safety_{i}", kill))
    return rows


def markdown_safety(rows: list[dict]) -> str:
    lines = ["| case | mode | watchdog: topic, silent [ms] (steps) | abort step | ramp to safe pose: steps (ms) "
             "| hold steps | run ended after the kill [s] |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        w = r.get("watchdog")
        wd = (f"{w['topic']} at {w['node']}, {w['silent_s'] * 1e3:.0f} ({w['silent_s'] / r['dt_s']:.0f})"
              if w else "–")
        sp = r.get("safe_pose") or {}
        ramp = f"{sp['ramp_steps']} ({sp['ramp_s'] * 1e3:.0f})" if sp else "–"
        end = f"{r['end_after_kill_s']:.2f}" if r.get("end_after_kill_s") is not None else "–"
        lines.append(f"| {r['case']} | {r['mode']} | {wd} | {sp.get('abort_step', '–')} | {ramp} | "
                     f"{sp.get('hold_steps', '–')} | {end} |")
    return "\n".join(lines)


def ros2_command() -> str | None:
    """The `ros2` command of this environment (the venv's, else one on PATH), or None."""
    import shutil
    import sys
    here = Path(sys.prefix) / "bin" / "ros2"
    return str(here) if here.exists() else shutil.which("ros2")


def bench_launch(names: list[str], out_dir: Path, log=print) -> list[dict]:
    """Run each scenario with ``ros2 launch rths_ros rths.launch.py scenario:=X out:=OUT/X`` (its own ROS
    domain each), one after the other; exit code, wall time and whether metrics.json was written."""
    import subprocess

    from rths_ros.runner import DomainLease
    ros2 = ros2_command()
    if ros2 is None:
        raise scn.ParameterError("rths bench launch: no `ros2` command (source a ROS 2 distribution, or let "
                                 "scripts/setup_env.sh install the launch tooling)")
    rows = []
    for i, name in enumerate(names, 1):
        out = out_dir / name
        lease = DomainLease()
        env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id),
                   ROS_AUTOMATIC_DISCOVERY_RANGE=os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"))
        log(f"  [{i}/{len(names)}] ros2 launch rths_ros rths.launch.py scenario:={name} out:={out}")
        t0 = time.monotonic()
        with open(out_dir / f"{name}.launch.log", "wb") as fh:
            p = subprocess.run([ros2, "launch", "rths_ros", "rths.launch.py", f"scenario:={name}", f"out:={out}"],
                               stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        wall = time.monotonic() - t0
        lease.close()
        s = scn.load(name)
        row = {"scenario": name, "exit_code": p.returncode, "wall_s": wall, "steps": s.steps * s.loop.trials,
               "metrics": (out / "metrics.json").is_file(), "log": str(out_dir / f"{name}.launch.log")}
        rows.append(row)
        log(f"      exit {p.returncode}, {wall:.1f} s, metrics.json {'written' if row['metrics'] else 'MISSING'}")
    return rows


def markdown_launch(rows: list[dict]) -> str:
    lines = ["| scenario | steps | exit code | wall [s] | metrics.json |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['scenario']} | {r['steps']} | {r['exit_code']} | {r['wall_s']:.1f} | "
                     f"{'yes' if r['metrics'] else 'no'} |")
    return "\n".join(lines)


def write(out_dir: Path, data: dict, md: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(json.dumps(data, indent=2, default=float))
    (out_dir / "bench.md").write_text(md + "\n")
