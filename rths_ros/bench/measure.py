"""The measurements behind the ``rths bench`` summary rows; each returns a plain dict (see :mod:`.summary`).

* :func:`measure_run_command`: ``rths run SCENARIO`` as a subprocess, its wall time and breakdown
  (:mod:`.run_timing`).
* :func:`measure_vrths`: the in-process virtual run, one warm-up then the best of ``repeats``.
* :func:`face_sweep_file` and :func:`measure_face`: an in-process (``runner: vrths``) FACE sweep of
  contact_1d over N values of the position gain, run as ``rths face`` with a process pool or a Dask cluster.
* :func:`dt_overrides` and :func:`measure_realtime`: the realtime separate-process loop at several rates.
* :func:`read_test_record`: the wall time of the last ``make test`` (``build/test_wall.json``).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.bench.run_timing import node_startup, run_points, segments

#: the fast path's messages per step: plant -> ft_sensor -> numerical_substructure -> stewart_platform -> plant
HOPS_PER_STEP = 4
#: the largest deadline-miss ratio of a rate that "holds"
MISS_RATIO_MAX = 0.001
REPO_ROOT = Path(__file__).resolve().parents[2]


def rths_command() -> list[str]:
    """The ``rths`` entry point of this interpreter's environment (or ``python -m rths_ros.cli``)."""
    exe = Path(sys.executable).parent / "rths"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "rths_ros.cli"]


def run_logged(cmd: list[str], log_path: Path, log=print, every_s: float = 10.0) -> tuple[int, float, float]:
    """Run ``cmd`` with its output into ``log_path``; every ``every_s`` seconds pass its latest output line to
    ``log`` (progress of a long command).  Returns (exit code, epoch at launch, epoch at exit)."""
    import os
    import threading
    latest = {"line": ""}

    def pump(stream, fh) -> None:
        for raw in iter(stream.readline, b""):
            fh.write(raw)
            text = raw.decode(errors="replace").replace("\r", "\n").strip().splitlines()
            if text:
                latest["line"] = text[-1].strip()

    with open(log_path, "wb") as fh:
        launch = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=dict(os.environ, PYTHONUNBUFFERED="1"))
        reader = threading.Thread(target=pump, args=(p.stdout, fh), daemon=True)
        reader.start()
        shown = ""
        while True:
            try:
                p.wait(timeout=every_s)
                break
            except subprocess.TimeoutExpired:
                if latest["line"] and latest["line"] != shown:
                    shown = latest["line"]
                    log(f"      ... {shown[:150]}")
        exit_ = time.time()
        reader.join(timeout=10.0)
        p.stdout.close()
    return p.returncode, launch, exit_


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def measure_run_command(scenario: str, out: Path, overrides: list[str] = (), composed: bool = False,
                        progress=print) -> dict:
    """Run ``rths run SCENARIO --out OUT/SCENARIO`` as a subprocess; wall time from the bench's launch of the
    command to its exit, and the breakdown of :func:`rths_ros.bench.run_timing.segments`."""
    run_dir = Path(out) / Path(scenario).stem
    args = ["run", scenario, "--out", str(run_dir), "--overwrite"] + [a for o in overrides for a in ("--set", o)]
    args += ["--composed"] if composed else []
    s = scn.load(scenario, list(overrides))
    Path(out).mkdir(parents=True, exist_ok=True)
    log = Path(out) / "run.log"
    code, launch, exit_ = run_logged(rths_command() + args, log, progress)
    points, sources = run_points(run_dir)
    res = {"command": "rths " + " ".join(args), "exit_code": code, "log": str(log), "run_dir": str(run_dir),
           "steps": s.steps * s.loop.trials, "sim_s": s.steps * s.loop.trials * s.loop.dt_s,
           "points": points, "sources": sources, "segments": segments(points, launch, exit_),
           "node_startup": node_startup(run_dir)}
    if code != 0:
        res["error"] = _last_line(log)
    return res


def median_run_command(scenario: str, out: Path, overrides: list[str] = (), repeats: int = 3,
                       progress=print) -> dict:
    """:func:`measure_run_command` ``repeats`` times; the run whose loop speed is the median (a single run of
    separate processes on a shared machine varies by about 10 %), with every run's speed in ``loop_x_runs`` (in the
    order they ran).  The first run that fails is returned as it is."""
    runs = []
    for i in range(max(1, int(repeats))):
        m = measure_run_command(scenario, Path(out) / f"run_{i + 1}" if repeats > 1 else out, overrides,
                                progress=progress)
        if m.get("exit_code") != 0:
            return m
        loop_s = m["segments"].get("loop_s")
        runs.append((m["sim_s"] / loop_s if loop_s else float("nan"), m))
    ranked = sorted(runs, key=lambda r: (r[0] != r[0], r[0]))       # (a run without its loop time last)
    best = dict(ranked[(len(ranked) - 1) // 2][1])
    best["loop_x_runs"] = [x for x, _ in runs]
    return best


def measure_vrths(name: str, repeats: int = 3, overrides: list[str] = ()) -> dict:
    """``VirtualRun(s).run()`` (construction included): one warm-up, then the best of ``repeats``."""
    from rths_ros.app.vrths import VirtualRun
    s = scn.load(name, list(overrides))
    steps = s.steps * s.loop.trials
    pc = time.perf_counter
    t0 = pc()
    VirtualRun(s).run()
    warm = pc() - t0
    walls, builds = [], []
    aborted = ""
    for _ in range(max(1, repeats)):
        t0 = pc()
        vr = VirtualRun(s)
        t1 = pc()
        rec = vr.run()
        walls.append(pc() - t0)
        builds.append(t1 - t0)
        if rec.get("aborted"):
            aborted = str(rec.get("abort_reason") or "aborted")
    best = min(walls)
    sim = steps * s.loop.dt_s
    return {"scenario": name, "steps": steps, "dt_s": s.loop.dt_s, "sim_s": sim, "warmup_s": warm, "walls_s": walls,
            "best_s": best, "build_s": min(builds), "us_per_step": 1e6 * best / steps, "x_real_time": sim / best,
            "repeats": len(walls), "aborted": aborted}


def face_sweep_file(out: Path, points: int, scenario: str = "contact_1d") -> Path:
    """A FACE sweep of ``points`` in-process runs of the scenario: the contact rig of
    config/sweeps/contact_1d_kpp.yaml (d_NUM = 50 kg/s, VFF, K_Pp spread evenly over 30..80 1/s) with many
    more points; e the relative tracking error and q the FFT peak magnitude in contact (both cheap, so the
    sweep's time is that of its runs; the matrix-pencil frequency of contact_1d_kpp.yaml costs an SVD of
    a large matrix per point in the analysis)."""
    import numpy as np
    import yaml
    if points < 4:
        raise scn.ParameterError(f"FACE points: {points!r} is not allowed; expected at least 4")
    values = [round(float(v), 6) for v in np.linspace(30.0, 80.0, points)]
    data = {"name": f"bench_{scenario}_kpp_{points}",
            "description": f"rths bench: {points} in-process runs of {scenario}, K_Pp 30..80 1/s",
            "runner": "vrths", "scenario": scenario,
            "overrides": {"numerical.contact_1d.d_num_kg_per_s": 50.0, "platform.commander.vff": True,
                          "sim_plant.cascade.preset": "custom", "sim_plant.cascade.k_pv_a_s_per_m": 0.2,
                          "sim_plant.cascade.k_iv_a_per_m": 5.0},
            "vary": {"parameter": "sim_plant.cascade.k_pp_per_s", "values": values},
            "e": {"measure": "e_track_rel", "window_s": [1.3, 2.7]},
            "q": {"measure": "peak_amplitude", "window_s": [1.3, 2.7], "f_min_hz": 4.0},
            "fit": {"degree": 2, "db": True}, "reference": {"source": "runner"}}
    Path(out).mkdir(parents=True, exist_ok=True)
    path = Path(out) / f"sweep_{points}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def face_args(sweep: Path, out: Path, config: str) -> list[str]:
    """``face SWEEP --out OUT --workers N`` for config ``workers=N``, ``--cluster local:N`` for ``local:N``."""
    if config.startswith("workers="):
        return ["face", str(sweep), "--out", str(out), "--workers", config.split("=", 1)[1]]
    return ["face", str(sweep), "--out", str(out), "--cluster", config]


def measure_face(sweep: Path, out: Path, configs: list[str], log=print) -> dict:
    """Run the sweep with ``rths face`` once per config (``workers=N`` or ``local:N``); wall time of the whole
    command (points, analysis, outputs) and points per second."""
    import yaml
    n = len(yaml.safe_load(Path(sweep).read_text())["vary"]["values"])
    res = {}
    for c in configs:
        d = Path(out) / c.replace(":", "_").replace("=", "_")
        args = face_args(sweep, d, c)
        log(f"    rths {' '.join(args)}")
        d.mkdir(parents=True, exist_ok=True)
        code, t0, t1 = run_logged(rths_command() + args, d.parent / f"{d.name}.log", log)
        wall = t1 - t0
        res[c] = _face_result(c, n, args, d, code, wall, log)
    return res


def _face_result(config: str, n: int, args: list[str], d: Path, code: int, wall: float, log) -> dict:
    from rths_ros.bench.dask_cluster import points_phase_s
    log_path = d.parent / f"{d.name}.log"
    r = {"config": config, "points": n, "wall_s": wall, "points_per_s": n / wall, "exit_code": code,
         "command": "rths " + " ".join(args), "log": str(log_path),
         "points_s": points_phase_s(log_path.read_text(errors="replace")) if log_path.is_file() else None}
    if code != 0 or not (d / "face.json").is_file():
        r["error"] = _last_line(log_path) or f"exit code {code}"
    log(f"      {wall:.1f} s (points {r['points_s'] or float('nan'):.1f} s), {n / wall:.1f} points/s"
        + (f", FAILED: {r['error']}" if "error" in r else ""))
    return r


def measure_face_cluster(sweep: Path, out: Path, workers: tuple[int, ...] = (1, 2), log=print) -> dict:
    """The sweep on a Dask cluster started from the command line (:class:`~rths_ros.bench.dask_cluster.
    CommandLineCluster`): ``cluster:1`` on one ``dask worker``, then ``cluster:2`` after a second one joined.  Before
    each, a warm-up sweep of 8 points (the new worker imports the package and loads the compiled kernels once, as
    a lab's long-running worker has done before its first sweep)."""
    import yaml

    from rths_ros.bench.dask_cluster import CommandLineCluster
    n = len(yaml.safe_load(Path(sweep).read_text())["vary"]["values"])
    warm = face_sweep_file(Path(out) / "warm-up", 8)
    res = {}
    with CommandLineCluster(Path(out) / "dask-logs") as cluster:
        for w in workers:
            while cluster.workers < w:
                cluster.add_worker()
            c = f"cluster:{w}"
            wd = Path(out) / f"warm_{w}"
            log(f"    {c}: dask scheduler + {w} dask worker(s) at {cluster.address}; warm-up sweep of 8 points")
            run_logged(rths_command() + face_args(warm, wd, cluster.address), Path(out) / f"warm_{w}.log", log)
            d = Path(out) / f"cluster_{w}"
            args = face_args(sweep, d, cluster.address)
            log(f"    rths {' '.join(args)}")
            d.mkdir(parents=True, exist_ok=True)
            code, t0, t1 = run_logged(rths_command() + args, d.parent / f"{d.name}.log", log)
            res[c] = _face_result(c, n, args, d, code, t1 - t0, log)
            res[c]["address"] = cluster.address
    return res


def dt_overrides(name: str, dt_s: float, overrides: list[str] = ()) -> list[str]:
    """The overrides that run the scenario with step ``dt_s``: ``loop.dt_s`` and every other key that the
    scenario requires to equal it (found by validating: the error names the key); ParameterError if the
    scenario refuses the value for another reason."""
    extra = [f"loop.dt_s={dt_s!r}"]
    for _ in range(20):
        try:
            scn.load(name, list(overrides) + extra)
            return extra
        except scn.ParameterError as exc:
            msg = str(exc)
            key = msg.split(":", 1)[0].strip()
            if "differs from loop.dt_s" not in msg or any(e.startswith(key + "=") for e in extra):
                raise
            extra.append(f"{key}={dt_s!r}")
    raise scn.ParameterError(f"loop.dt_s: {dt_s!r}: too many dependent keys")


def measure_realtime(name: str, rates_hz: list[float], duration_s: float, out: Path, overrides: list[str] = (),
                     log=print, stop_at_first: bool = True, config: str = "realtime-processes") -> dict:
    """``config`` (:data:`rths_ros.bench.loop.LOOP_CONFIGS`; default the separate processes with the scenario's own
    settings; ``rths bench`` also measures ``realtime-processes-rt``, the best configuration for separate processes)
    at each rate, highest first; with ``stop_at_first`` the scan ends at the first rate whose deadline-miss ratio is
    <= :data:`MISS_RATIO_MAX`."""
    from rths_ros.bench.loop import bench_loop
    rows = []
    keys: list[str] = []
    for hz in sorted(rates_hz, reverse=True):
        dt = 1.0 / hz
        try:
            dto = dt_overrides(name, dt, overrides)
        except scn.ParameterError as exc:
            rows.append({"hz": hz, "dt_s": dt, "error": f"scenario refuses dt = {dt:g} s: {exc}"})
            continue
        keys = [o.split("=", 1)[0] for o in dto]
        log(f"    {hz:g} Hz (dt {1e3 * dt:g} ms), {duration_s:g} s")
        r = bench_loop(name, list(overrides) + dto + ["recording.hop_log=true"], duration_s, [config],
                       Path(out) / f"{hz:g}hz", log=lambda m: log("    " + m))[config]
        if "error" in r:
            rows.append({"hz": hz, "dt_s": dt, "error": r["error"]})
            continue
        p50 = r.get("step_latency_p50_s")
        rows.append({"hz": hz, "dt_s": dt, "miss_ratio": r["deadline_miss_ratio"], "steps": r.get("steps"),
                     "latency_p50_s": p50, "latency_p99_s": r.get("step_latency_p99_s"),
                     "latency_p999_s": r.get("step_latency_p999_s"), "latency_max_s": r.get("step_latency_max_s"),
                     "hop_p50_s": (p50 / HOPS_PER_STEP) if p50 == p50 and p50 is not None else None,
                     "lost_messages": r.get("lost_messages"), "passed": r["deadline_miss_ratio"] <= MISS_RATIO_MAX})
        if len(rows) == 1:               # the highest rate: where its step's time goes (rths bench hops)
            from rths_ros.bench.hops import analyse_run
            try:
                rows[-1]["hops"] = analyse_run(Path(out) / f"{hz:g}hz" / config, f"{name}, {config}, {hz:g} Hz",
                                               log=lambda m: None)
                rows[-1]["hops_png"] = str(Path(out) / f"{hz:g}hz" / config / "hops.png")
            except Exception as exc:         # the row stands without it
                rows[-1]["hops_error"] = f"{type(exc).__name__}: {exc}"
        if stop_at_first and rows[-1]["passed"]:
            break
    passed = [r["hz"] for r in rows if r.get("passed")]
    return {"scenario": name, "duration_s": duration_s, "rates": rows, "dt_keys": keys, "config": config,
            "best_hz": max(passed) if passed else None, "scanned_hz": [r["hz"] for r in rows],
            "miss_ratio_max": MISS_RATIO_MAX, "hops_per_step": HOPS_PER_STEP}


def default_test_record() -> Path | None:
    """``build/test_wall.json`` of the source tree (written by ``make test``), or None outside one."""
    return REPO_ROOT / "build" / "test_wall.json" if (REPO_ROOT / "Makefile").is_file() else None


def quick_test_record(test_record: Path | None) -> Path | None:
    """``test_quick_wall.json`` (written by ``make test-quick``) beside the ``make test`` record."""
    return Path(test_record).with_name("test_quick_wall.json") if test_record is not None else None


def read_test_record(path: Path | None) -> dict | None:
    """The last ``make test`` record (wall_s, exit_code, date, commit, ...), or None when there is none."""
    if path is None:
        return None
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("wall_s"), (int, float)):
        return None
    return data


def git_describe() -> str | None:
    try:
        p = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (p.stdout.strip() or None) if p.returncode == 0 else None
