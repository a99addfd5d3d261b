"""``rths bench`` (``rths bench summary``): every target of what users wait for, measured in one run.

Groups of rows (``--only`` selects some; the others are listed as not measured):

* ``run``: ``rths run contact_1d`` (separate processes, lockstep) as a subprocess: start-up (command start
  to START), loop (x real time), shutdown (STOP to every node ended), analysis and plots, whole command.
* ``composed``: the lockstep loop with all nodes in one process, the recorder among them (x real time).
* ``vrths``: the in-process virtual run of contact_1d, gait_vpp and benchmark_building (x real time).
* ``face``: a FACE sweep of in-process runs of contact_1d (200 points) with ``--workers 1``, ``--workers 2``,
  on a Dask LocalCluster of 1 and 2 workers, and on a Dask cluster started from the command line (``dask
  scheduler`` and one, then two ``dask worker`` processes; :mod:`rths_ros.bench.dask_cluster`).
* ``realtime``: the realtime separate-process loop scanned over rates (``loop.dt_s``) from the highest:
  the highest rate with <= 0.1 % deadline misses, the step latency and the cost per hop.
* ``tests``: the last ``make test`` record (build/test_wall.json): wall time and result.

SCENARIO and ``--set`` apply to the rows that run the ROS graph (run, composed, realtime).
``--quick`` shortens the workloads (shorter runs, fewer sweep points and rates, best of 1); every shortened
row says so, and a row whose absolute target no longer applies gets no verdict.  Ratios to real time are
simulated seconds / wall seconds.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.bench import measure
from rths_ros.bench.rows import counts, markdown_rows, not_measured, row, text_rows

GROUPS = ("run", "composed", "vrths", "face", "realtime", "tests")
VRTHS_SCENARIOS = ("contact_1d", "gait_vpp", "benchmark_building")
FACE_CONFIGS = ("workers=1", "workers=2", "local:1", "local:2")
FACE_POINTS = 200
RATES_HZ = (1000.0, 500.0, 250.0, 200.0, 100.0)
#: targets: (op, limit)
T_LOOP_X, T_STARTUP_S, T_ANALYSIS_S, T_WHOLE_S = 2.0, 3.0, 2.0, 8.0
T_COMPOSED_X, T_VRTHS_X, T_FACE_S, T_TESTS_S = 8.0, 100.0, 10.0, 600.0
T_QUICK_S = 90.0     # `make test-quick`, the tier a developer runs after every change
#: a FACE sweep on a Dask cluster started from the command line: the points phase of two workers against one
#: (>=), and against the process pool of as many workers (<=: no slower per worker)
T_CLUSTER_SPEEDUP_X, T_CLUSTER_VS_POOL = 1.4, 1.0
CLUSTER_WORKERS = (1, 2)


@dataclass
class SummaryOptions:
    """What the summary runs.  None means the full value (or the ``--quick`` one)."""
    scenario: str = "contact_1d"
    overrides: tuple[str, ...] = ()
    quick: bool = False
    only: tuple[str, ...] = GROUPS
    run_duration_s: float | None = None       # full: the scenario's (4 s); quick: 1 s
    composed_duration_s: float | None = None  # full: the scenario's; quick: 1 s
    vrths_scenarios: tuple[str, ...] = VRTHS_SCENARIOS
    vrths_repeats: int | None = None          # full: 3; quick: 1
    run_repeats: int | None = None            # full: 3 (the run of the median loop speed reported); quick: 1
    composed_repeats: int | None = None       # full: 3 (the run of the median speed reported); quick: 1
    face_points: int | None = None            # full: 200; quick: 8
    face_configs: tuple[str, ...] = FACE_CONFIGS
    face_cluster: bool = True                  # also on a Dask cluster started from the command line
    rates_hz: tuple[float, ...] | None = None  # full: RATES_HZ; quick: 1000, 250
    rt_duration_s: float | None = None        # full: 5 s; quick: 1 s
    test_record: Path | None = field(default_factory=measure.default_test_record)

    def resolved(self) -> SummaryOptions:
        q = self.quick
        for g in self.only:
            if g not in GROUPS:
                raise scn.ParameterError(f"--only: {g!r} is not allowed; expected some of {', '.join(GROUPS)}")
        if self.face_points is not None and self.face_points < 4:
            raise scn.ParameterError(f"--face-points: {self.face_points!r} is not allowed; expected at least 4")
        if any(r <= 0 for r in self.rates_hz or ()):
            raise scn.ParameterError(f"--rates: {list(self.rates_hz)!r} is not allowed; expected rates > 0 Hz")
        nominal = scn.load(self.scenario, list(self.overrides)).loop.duration_s
        return replace(
            self, run_duration_s=self.run_duration_s or (1.0 if q else nominal),
            composed_duration_s=self.composed_duration_s or (1.0 if q else nominal),
            vrths_repeats=self.vrths_repeats or (1 if q else 3), run_repeats=self.run_repeats or (1 if q else 3),
            composed_repeats=self.composed_repeats or (1 if q else 3),
            face_points=self.face_points or (8 if q else FACE_POINTS),
            rates_hz=tuple(self.rates_hz or ((1000.0, 250.0) if q else RATES_HZ)),
            rt_duration_s=self.rt_duration_s or (1.0 if q else 5.0))


def _sets(overrides) -> str:
    return "".join(f" --set {o}" for o in overrides)


def _f(v, scale: float = 1.0, fmt: str = ".2f", unit: str = " s") -> str:
    return "–" if v is None else f"{scale * v:{fmt}}{unit}"


# ---------------------------------------------------------------------------------------------------- rows
def rows_run(m: dict | None, opts: SummaryOptions, reason: str = "") -> list[dict]:
    """The five rows of ``rths run`` from :func:`rths_ros.bench.measure.measure_run_command`."""
    short = opts.quick and opts.run_duration_s is not None
    spec = [("run.startup", "rths run: start-up (command start to START)", "s", "<=", T_STARTUP_S, True),
            ("run.loop", "rths run: loop, processes, lockstep", "x", ">=", T_LOOP_X, True),
            ("run.shutdown", "rths run: shutdown (STOP to every node ended)", "s", None, None, True),
            ("run.analysis", "rths run: analysis and plots", "s", "<=", T_ANALYSIS_S, False),
            ("run.whole", "rths run: whole command", "s", "<=", T_WHOLE_S, False)]
    if m is None or m.get("exit_code") != 0:
        why = reason or (f"rths run exited {m.get('exit_code')}: {m.get('error', '')}" if m else "not selected")
        cmd = m["command"] if m else f"rths run {opts.scenario}{_sets(opts.overrides)}"
        return [not_measured(rid, what, unit, why, op=op, limit=lim, command=cmd) for rid, what, unit, op, lim, _ in spec]
    seg, src, ns = m["segments"], m["sources"], m.get("node_startup") or {}
    loop_x = (m["sim_s"] / seg["loop_s"]) if seg.get("loop_s") else None
    startup = [f"command start to the rths process {_f(seg.get('interpreter_s'))}"] if seg.get("interpreter_s") is not None else []
    if seg.get("cli_to_spawn_s") is not None:
        startup.append(f"CLI to node processes started {_f(seg['cli_to_spawn_s'])}")
    if seg.get("spawn_to_start_s") is not None:
        startup.append(f"node processes started to START {_f(seg['spawn_to_start_s'])}")
    if "import_s" in ns:
        startup.append(f"slowest node imports {_f(ns['import_s'])} ({ns['import_node']})")
    if "build_s" in ns:
        startup.append(f"slowest construction {_f(ns['build_s'])} ({ns['build_node']})")
    if not ns:
        startup.append("no per-node start-up times in timing/NODE.json")
    detail = {
        "run.startup": "; ".join(startup + [f"START from {src.get('start', '–')}"]),
        "run.loop": f"START to STOP {_f(seg.get('loop_s'))} for {m['steps']} steps of "
                    f"{1e3 * m['sim_s'] / m['steps']:g} ms ({_f(seg.get('loop_s'), 1e3 / m['steps'], '.3f', ' ms')} "
                    f"per step)" + (f"; the run of the median of {len(m['loop_x_runs'])}: "
                                    + ", ".join(f"{x:.2f}" for x in m["loop_x_runs"]) + "× (every row of `rths run` "
                                    "is that run's)" if len(m.get("loop_x_runs") or ()) > 1 else ""),
        "run.shutdown": f"nodes ended from {src.get('nodes_ended', '–')}",
        "run.analysis": f"end from {src.get('analysis_done', '–')}; then {_f(seg.get('exit_s'))} to exit",
        "run.whole": f"start-up {_f(seg.get('startup_s'))} + loop {_f(seg.get('loop_s'))} + shutdown "
                     f"{_f(seg.get('shutdown_s'))} + analysis {_f(seg.get('analysis_s'))} + exit {_f(seg.get('exit_s'))}",
    }
    value = {"run.startup": seg.get("startup_s"), "run.loop": loop_x, "run.shutdown": seg.get("shutdown_s"),
             "run.analysis": seg.get("analysis_s"), "run.whole": seg.get("whole_s")}
    out = []
    for rid, what, unit, op, lim, comparable in spec:
        v = value[rid]
        out.append(row(rid, what, v, unit, op=op, limit=lim, command=m["command"], detail=detail[rid],
                       reason=None if v is not None else "the point in time was not found in the run directory",
                       shortened=short, comparable=comparable))
    return out


def median_composed(runs: list[dict]) -> dict:
    """The composed run whose speed is the median of ``runs`` (one run of the loop on a shared machine varies by
    10-20 %), with every run's speed in ``x_runs`` (in the order they ran); the first run that failed as it is."""
    for r in runs:
        if "error" in r or r.get("realtime_factor") is None:
            return r
    ranked = sorted(runs, key=lambda r: r["realtime_factor"])
    best = dict(ranked[(len(ranked) - 1) // 2])
    best["x_runs"] = [r["realtime_factor"] for r in runs]
    return best


def row_composed(r: dict | None, opts: SummaryOptions, reason: str = "") -> dict:
    what = "lockstep composed (--composed), recorder on (in the composed process)"
    cmd = (f"rths bench loop {opts.scenario} --configs lockstep-composed --duration {opts.composed_duration_s:g}"
           f"{_sets(list(opts.overrides) + ['recording.enabled=true'])}")
    if r is None or "error" in r:
        return not_measured("composed", what, "x", reason or (r or {}).get("error", "not selected"), op=">=",
                            limit=T_COMPOSED_X, command=cmd)
    return row("composed", what, r["realtime_factor"], "x", op=">=", limit=T_COMPOSED_X, command=cmd,
               detail=f"{opts.composed_duration_s:g} s simulated; step latency p50 "
                      f"{_f(r.get('step_latency_p50_s'), 1e3, '.3f', ' ms')}, p99 "
                      f"{_f(r.get('step_latency_p99_s'), 1e3, '.3f', ' ms')}; run wall {_f(r.get('wall_s'))}"
                      + (f"; the run of the median of {len(r['x_runs'])}: " + ", ".join(f"{x:.2f}" for x in r["x_runs"])
                         + "×" if len(r.get("x_runs") or ()) > 1 else ""),
               shortened=opts.quick)


def rows_vrths(results: dict, opts: SummaryOptions, reasons: dict | None = None) -> list[dict]:
    out = []
    for name in VRTHS_SCENARIOS if set(opts.vrths_scenarios) <= set(VRTHS_SCENARIOS) else opts.vrths_scenarios:
        m = results.get(name)
        what = f"in-process virtual run: {name}"
        cmd = f"rths vrths {name}"
        if m is None:
            out.append(not_measured(f"vrths.{name}", what, "x", (reasons or {}).get(name, "not selected"),
                                    op=">=", limit=T_VRTHS_X, command=cmd))
            continue
        detail = (f"{m['us_per_step']:.1f} µs/step, {m['steps']} steps of {1e3 * m['dt_s']:g} ms; best of "
                  f"{m['repeats']} after a warm-up ({m['warmup_s']:.2f} s); construction {1e3 * m['build_s']:.0f} ms")
        if m.get("aborted"):
            detail += f"; the run aborted: {m['aborted']}"
        out.append(row(f"vrths.{name}", what, m["x_real_time"], "x", op=">=", limit=T_VRTHS_X, command=cmd,
                       detail=detail, shortened=opts.quick))
    return out


def rows_face(results: dict, opts: SummaryOptions, sweep: str = "SWEEP.yaml", reason: str = "") -> list[dict]:
    out = []
    base = results.get("workers=1")
    short = opts.face_points != FACE_POINTS
    for c in FACE_CONFIGS if set(opts.face_configs) <= set(FACE_CONFIGS) else opts.face_configs:
        r = results.get(c)
        kind = "Dask LocalCluster " + c if c.startswith("local:") else c.replace("=", " ")
        what = f"FACE sweep, {opts.face_points} in-process runs of contact_1d, {kind}"
        op, lim = ("<=", T_FACE_S) if c == "workers=2" else (None, None)
        cmd = "rths " + " ".join(measure.face_args(Path(sweep), Path("OUT"), c))
        if r is None or "error" in r:
            out.append(not_measured(f"face.{c}", what, "s", reason or (r or {}).get("error", "not selected"),
                                    op=op, limit=lim, command=cmd))
            continue
        detail = f"{r['points_per_s']:.1f} points/s"
        if base is not None and "error" not in base and c != "workers=1":
            detail += f"; speed-up over workers=1: {base['wall_s'] / r['wall_s']:.2f}×"
        out.append(row(f"face.{c}", what, r["wall_s"], "s", op=op, limit=lim, command=r["command"], detail=detail,
                       shortened=short, comparable=not short))
    return out


def rows_face_cluster(results: dict, pool: dict, opts: SummaryOptions, sweep: str = "SWEEP.yaml",
                      reason: str = "") -> list[dict]:
    """The sweep on a Dask cluster started from the command line (``dask scheduler``, ``dask worker``): the whole
    command on 1 and 2 workers, then the points phase (what the workers share; the analysis and the plots of the
    command are the same on any number) of 2 workers against 1 and against the process pool of 2."""
    out = []
    short = opts.face_points != FACE_POINTS
    cmd = f"rths face {sweep} --out OUT --cluster tcp://HOST:PORT"
    for w in CLUSTER_WORKERS:
        r = results.get(f"cluster:{w}")
        what = (f"FACE sweep, {opts.face_points} in-process runs of contact_1d, Dask cluster from the command line: "
                f"dask scheduler + {w} dask worker{'s' if w > 1 else ''}")
        if r is None or "error" in r:
            out.append(not_measured(f"face.cluster:{w}", what, "s", reason or (r or {}).get("error", "not selected"),
                                    command=cmd))
            continue
        out.append(row(f"face.cluster:{w}", what, r["wall_s"], "s", command=r["command"],
                       detail=f"{r['points_per_s']:.1f} points/s; points phase {_f(r.get('points_s'))}; after a "
                              "warm-up sweep of 8 points on the same workers",
                       shortened=short, comparable=not short))
    one, two, p2 = results.get("cluster:1"), results.get("cluster:2"), (pool or {}).get("workers=2")
    what = "FACE sweep on the Dask cluster: speed-up of 2 workers over 1 (points phase)"
    if not (one and two and one.get("points_s") and two.get("points_s")):
        out.append(not_measured("face.cluster_speedup", what, "x", reason or "the cluster rows were not measured",
                                op=">=", limit=T_CLUSTER_SPEEDUP_X, command=cmd, target=f"≥ {T_CLUSTER_SPEEDUP_X:g}×"))
    else:
        x = one["points_s"] / two["points_s"]
        out.append(row("face.cluster_speedup", what, x, "", op=">=", limit=T_CLUSTER_SPEEDUP_X, command=cmd,
                       target=f"≥ {T_CLUSTER_SPEEDUP_X:g}×", display=f"{x:.2f}×",
                       detail=f"points phase {one['points_s']:.1f} s on 1 worker, {two['points_s']:.1f} s on 2; whole "
                              f"command {one['wall_s']:.1f} s and {two['wall_s']:.1f} s "
                              f"({one['wall_s'] / two['wall_s']:.2f}×: start-up, analysis and plots are not shared)",
                       shortened=short))
    what = "FACE sweep, Dask cluster of 2 workers against the process pool of 2 (points phase, ratio)"
    if not (two and p2 and two.get("points_s") and p2.get("points_s")):
        out.append(not_measured("face.cluster_vs_pool", what, "", reason or "the cluster or pool row was not measured",
                                op="<=", limit=T_CLUSTER_VS_POOL, command=cmd))
    else:
        ratio = two["points_s"] / p2["points_s"]
        out.append(row("face.cluster_vs_pool", what, ratio, "", op="<=", limit=T_CLUSTER_VS_POOL, command=cmd,
                       target=f"≤ {T_CLUSTER_VS_POOL:g} (no slower per worker)", display=f"{ratio:.2f}",
                       detail=f"points phase {two['points_s']:.1f} s on the cluster, {p2['points_s']:.1f} s in the "
                              "process pool (--workers 2), each from the workers' start (the pool's processes "
                              "forked; the client connected, after Dask's client library was imported); whole "
                              f"command {two['wall_s']:.2f} s and {p2['wall_s']:.2f} s", shortened=short))
    return out


#: the realtime rows: (row id, loop configuration of rths bench loop, what the row says of it); the first, the best
#: configuration for separate processes, carries the target; the scenario's own settings are shown beside it
REALTIME_ROWS = (("realtime", "realtime-processes-rt",
                  "realtime, separate processes, best configuration (SCHED_FIFO 80 for the loop's processes, pages "
                  "locked, no busy-wait)"),
                 ("realtime.defaults", "realtime-processes", "realtime, separate processes, the scenario's settings"))


def row_realtime(m: dict | None, opts: SummaryOptions, reason: str = "", rid: str = "realtime") -> dict:
    _, config, label = next(r for r in REALTIME_ROWS if r[0] == rid)
    what = f"{label}: highest rate with ≤ 0.1 % deadline misses"
    nominal = 1.0 / scn.load(opts.scenario, list(opts.overrides)).loop.dt_s
    target = f"≥ {nominal:g} Hz (the scenario's rate)" if rid == "realtime" else "– (no target)"
    lim = nominal if rid == "realtime" else None
    cmd0 = f"rths bench loop {opts.scenario} --configs {config} --duration {opts.rt_duration_s:g}"
    if m is None or not m.get("rates"):
        return not_measured(rid, what, "Hz", reason or "not selected", op=">=" if lim else None, limit=lim,
                            command=cmd0 + _sets(opts.overrides), target=target)
    rates = m["rates"]
    bits = []
    for r in rates:
        if "error" in r:
            bits.append(f"{r['hz']:g} Hz: failed ({r['error'][:80]})")
        else:
            bits.append(f"{r['hz']:g} Hz: misses {100 * r['miss_ratio']:.2f} %, latency p50 "
                        f"{_f(r['latency_p50_s'], 1e3, '.2f', '')} / p99.9 {_f(r['latency_p999_s'], 1e3, '.2f', '')} ms")
    ok = [r for r in rates if "error" not in r]
    limit = ""
    if ok:
        lat = ok[0]
        limit = (f"; limit: the step's {m['hops_per_step']} hops (plant → sensor → numerical → platform → plant) "
                 f"take p50 {_f(lat['latency_p50_s'], 1e3, '.2f', ' ms')} (≈ "
                 f"{_f(lat['hop_p50_s'], 1e3, '.2f', ' ms')} per hop), p99.9 "
                 f"{_f(lat['latency_p999_s'], 1e3, '.2f', ' ms')}; a response later than dt is a miss")
    h = rates[0].get("hops") if rates else None
    if h:
        def p(seg: str, q: str) -> str:
            return _f(h.get(seg, {}).get(q), 1e3, ".3f", "")
        transports = [k for k in h if k.endswith("transport")]
        works = [k for k in h if k.endswith("work")]
        limit += (f"; where the step's time goes at {rates[0]['hz']:g} Hz (hop logs, {rates[0].get('hops_png')}): "
                  + ", ".join(f"{k} p50 {p(k, 'p50_s')} / p99.9 {p(k, 'p999_s')} ms" for k in transports + works)
                  + f"; round trip p50 {p('step round trip', 'p50_s')} / p99.9 {p('step round trip', 'p999_s')} ms")
    keys = [k for k in m.get("dt_keys", []) if k != "loop.dt_s"]
    also = f"; with loop.dt_s the scenario requires {', '.join(keys)} = dt as well" if keys else ""
    also += "; settings counted in steps (safety.watchdog_steps, sim_plant.command_delay_steps) scale with dt"
    stop = "; the scan stops at the first rate that holds" if m["best_hz"] is not None else ""
    detail = f"{m['duration_s']:g} s per rate; " + "; ".join(bits) + limit + also + stop
    best = m["best_hz"]
    dt = 1.0 / (best if best else min(r["hz"] for r in rates))
    cmd = cmd0 + _sets(list(opts.overrides) + measure.dt_overrides(opts.scenario, dt, list(opts.overrides)))
    op = ">=" if lim else None
    if best is None:
        return row(rid, what, 0.0, "Hz", op=op, limit=lim, command=cmd, target=target,
                   display=f"none of {', '.join(f'{h:g}' for h in m['scanned_hz'])} Hz", detail=detail,
                   shortened=opts.quick)
    return row(rid, what, float(best), "Hz", op=op, limit=lim, command=cmd, target=target,
               detail=detail, shortened=opts.quick)


def _record_detail(record: dict, with_exit: bool = False) -> tuple[str, str]:
    """(PYTEST_ARGS of a test record, its detail: when, which commit, the subset if one)."""
    args = str(record.get("pytest_args") or "").strip()
    when = f"last run {record.get('date', '?')} at commit {record.get('commit', '?')}"
    if with_exit:
        when += f", exit {record.get('exit_code')}"
    return args, when + (f"; a subset: PYTEST_ARGS={args}" if args else "")


def rows_tests(record: dict | None, path: Path | None, reason: str = "") -> list[dict]:
    cmd = "make test"
    if record is None:
        why = reason or (f"no record at {path} (`make test` writes it)" if path else "no source tree with a Makefile")
        return [not_measured("tests.wall", "test suite (make test): wall time", "s", why, op="<=", limit=T_TESTS_S,
                             command=cmd),
                not_measured("tests.result", "test suite (make test): exit code", "", why, op="==", limit=0,
                             command=cmd, target="0 (passed)")]
    args, detail = _record_detail(record)
    distro = record.get("distro")
    what = f"test suite (make test: every test{f', on ROS 2 {distro}' if distro else ''})"
    second = _second_distro_record(path, distro)
    if second is not None:       # what make test runs after the suite, on the other distribution (Makefile)
        detail += (f"; make test then runs the graph and launch tiers on ROS 2 {second[0]} as well: "
                   f"{second[1]['wall_s']:.0f} s, exit {second[1].get('exit_code')} (its record "
                   f"{second[2].name}, {second[1].get('date', '?')})")
    return [row("tests.wall", f"{what}: wall time", record["wall_s"], "s", op="<=", limit=T_TESTS_S,
                command=cmd, detail=detail, shortened=bool(args), comparable=not args),
            row("tests.result", f"{what}: exit code", record.get("exit_code"), "", op="==", limit=0,
                command=cmd, detail=detail, target="0 (passed)", shortened=bool(args))]


def _second_distro_record(path: Path | None, distro: str | None) -> tuple[str, dict, Path] | None:
    """(distribution, record, its path) of the tiers make test runs on the other ROS 2 distribution, beside the
    main record (build/test_<distro>_wall.json), when one is there."""
    if path is None:
        return None
    for other in ("jazzy", "kilted"):
        if other == distro:
            continue
        p = Path(path).with_name(f"test_{other}_wall.json")
        rec = measure.read_test_record(p)
        if rec is not None:
            return other, rec, p
    return None


def rows_quick_tests(record: dict | None, path: Path | None, reason: str = "") -> list[dict]:
    """The last `make test-quick` record (build/test_quick_wall.json): its wall time and exit code."""
    cmd, what = "make test-quick", "quick test tier (make test-quick)"
    if record is None:
        why = reason or (f"no record at {path} (`make test-quick` writes it)" if path else "no source tree")
        return [not_measured("tests.quick_wall", f"{what}: wall time", "s", why, op="<=", limit=T_QUICK_S,
                             command=cmd)]
    args, detail = _record_detail(record, with_exit=True)
    return [row("tests.quick_wall", f"{what}: wall time", record["wall_s"], "s", op="<=", limit=T_QUICK_S,
                command=cmd, detail=detail, shortened=bool(args), comparable=not args)]


# ------------------------------------------------------------------------------------------------- running
def _guard(fn, log):
    """(result, reason): the measurement's result, or None and the error's last line (logged in full)."""
    try:
        return fn(), ""
    except Exception as exc:   # one failed measurement leaves the others standing; the row says why
        log(traceback.format_exc().rstrip())
        return None, f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def run_summary(opts: SummaryOptions, out: Path, log=print) -> dict:
    """Measure every selected group; returns bench.json's ``summary``: options, raw measurements, rows."""
    opts = opts.resolved()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sel = [g for g in GROUPS if g in opts.only]
    raw: dict = {}
    rows: list[dict] = []
    t_all = time.monotonic()
    step = 0

    def head(text: str) -> None:
        nonlocal step
        step += 1
        log(f"[{step}/{len(sel)}] {text}  (elapsed {time.monotonic() - t_all:.0f} s)")

    skip = "not selected (--only)"
    ov = list(opts.overrides)
    from rths_ros.bench.core import reference_loop_s
    speed = {"start_s": reference_loop_s()}
    if "run" in sel:
        head(f"rths run {opts.scenario}: {opts.run_duration_s:g} s of loop, one process per node, lockstep")
        dur = [f"loop.duration_s={opts.run_duration_s:g}"] if opts.quick else []
        m, why = _guard(lambda: measure.median_run_command(opts.scenario, out / "run", ov + dur, opts.run_repeats,
                                                           progress=log), log)
        raw["run"] = m
        rows += rows_run(m, opts, why)
        if m:
            log(f"      exit {m['exit_code']}, whole {_f(m['segments']['whole_s'])}")
    else:
        rows += rows_run(None, opts, skip)
    # the realtime scan before the groups that run in this process (the composed loop, the virtual runs, FACE and its
    # Dask cluster): after them every realtime run of the scan had one stall of about 22 ms early in its loop
    # (0.4 % late steps at 100-250 Hz), which the same scan started on its own never had; its rows stay in place
    rt_rows: list[dict] = []
    if "realtime" in sel:
        head(f"realtime, separate processes (best configuration, then the scenario's settings): rates "
             f"{', '.join(f'{h:g}' for h in opts.rates_hz)} Hz, {opts.rt_duration_s:g} s each, from the highest")
        for rid, config, _ in REALTIME_ROWS:
            m, why = _guard(lambda c=config: measure.measure_realtime(opts.scenario, list(opts.rates_hz),
                                                                      opts.rt_duration_s, out / "realtime" / c, ov,
                                                                      log, config=c), log)
            raw[rid] = m
            rt_rows.append(row_realtime(m, opts, why, rid))
    else:
        rt_rows += [row_realtime(None, opts, skip, rid) for rid, _, _ in REALTIME_ROWS]
    if "composed" in sel:
        head(f"lockstep composed, recorder on: {opts.composed_duration_s:g} s, {opts.composed_repeats} run(s)")
        from rths_ros.bench.loop import bench_loop

        def composed_runs():
            runs = [bench_loop(opts.scenario, ov + ["recording.enabled=true"], opts.composed_duration_s,
                               ["lockstep-composed"], out / "composed" / f"run_{i + 1}",
                               log=lambda s: log("    " + s))["lockstep-composed"]
                    for i in range(opts.composed_repeats)]
            return median_composed(runs)
        res, why = _guard(composed_runs, log)
        raw["composed"] = res
        rows.append(row_composed(res, opts, why))
    else:
        rows.append(row_composed(None, opts, skip))
    vr: dict = {}
    reasons: dict = {} if "vrths" in sel else {n: skip for n in VRTHS_SCENARIOS}
    if "vrths" in sel:
        head(f"in-process virtual runs: {', '.join(opts.vrths_scenarios)} (warm-up, best of {opts.vrths_repeats})")
        for name in opts.vrths_scenarios:
            m, why = _guard(lambda n=name: measure.measure_vrths(n, opts.vrths_repeats), log)
            if m is None:
                reasons[name] = why
                continue
            vr[name] = m
            log(f"    {name}: {m['us_per_step']:.1f} µs/step, {m['x_real_time']:.1f}× real time")
    raw["vrths"] = vr
    rows += rows_vrths(vr, opts, reasons)
    sweep = out / "face" / f"sweep_{opts.face_points}.yaml"
    if "face" in sel:
        head(f"FACE sweep, {opts.face_points} in-process runs of contact_1d: {', '.join(opts.face_configs)}")
        res, why = _guard(lambda: measure.measure_face(measure.face_sweep_file(out / "face", opts.face_points),
                                                       out / "face", list(opts.face_configs), log), log)
        raw["face"] = res
        rows += rows_face(res or {}, opts, str(sweep), why)
        if opts.face_cluster:
            head("FACE sweep on a Dask cluster started from the command line (dask scheduler, dask worker)")
            cl, cwhy = _guard(lambda: measure.measure_face_cluster(sweep, out / "face" / "cluster", CLUSTER_WORKERS,
                                                                   log), log)
            raw["face_cluster"] = cl
            rows += rows_face_cluster(cl or {}, res or {}, opts, str(sweep), cwhy)
        else:
            rows += rows_face_cluster({}, {}, opts, str(sweep), "not selected (--no-cluster)")
    else:
        rows += rows_face({}, opts, str(sweep), skip)
        rows += rows_face_cluster({}, {}, opts, str(sweep), skip)
    rows += rt_rows
    if "tests" in sel:
        head(f"test suite: the last `make test` record ({opts.test_record})")
        rec = measure.read_test_record(opts.test_record)
        raw["tests"] = rec
        rows += rows_tests(rec, opts.test_record)
        quick = measure.quick_test_record(opts.test_record)
        raw["tests_quick"] = measure.read_test_record(quick)
        rows += rows_quick_tests(raw["tests_quick"], quick)
    else:
        rows += rows_tests(None, opts.test_record, skip)
        rows += rows_quick_tests(None, None, skip)
    speed["end_s"] = reference_loop_s()
    o = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(opts).items()}
    return {"options": o, "quick": opts.quick, "commit": measure.git_describe(), "wall_s": time.monotonic() - t_all,
            "rows": rows, "counts": counts(rows), "measurements": raw, "machine_speed": speed}


def quick_label(opts: SummaryOptions) -> str:
    o = opts.resolved()
    return (f"QUICK (shortened): rths run and composed {o.run_duration_s:g} s of loop, FACE {o.face_points} points, "
            f"realtime {', '.join(f'{h:g}' for h in o.rates_hz)} Hz for {o.rt_duration_s:g} s each, virtual runs best "
            f"of {o.vrths_repeats}; shortened absolute wall times get no verdict")


def markdown_details(summary: dict) -> str:
    """Tables behind the rows: the `rths run` breakdown's sources, the FACE runs, the realtime scan."""
    raw = summary["measurements"]
    out = []
    m = raw.get("run")
    if m and m.get("exit_code") == 0:
        out += ["", "### rths run: where the time goes", "", "| segment | seconds | from |", "|---|---|---|"]
        for k, what, frm in (("startup_s", "start-up: command start to START", "start"),
                             ("interpreter_s", "… command start to the rths process", "cli_start"),
                             ("cli_to_spawn_s", "… rths process to node processes started", "spawn"),
                             ("spawn_to_start_s", "… node processes started to START", "start"),
                             ("loop_s", "loop: START to STOP", "stop"),
                             ("shutdown_s", "shutdown: STOP to every node ended", "nodes_ended"),
                             ("analysis_s", "analysis and plots", "analysis_done"),
                             ("exit_s", "after the analysis to exit", None), ("whole_s", "whole command", None)):
            if m["segments"].get(k) is None and k in ("interpreter_s", "cli_to_spawn_s", "spawn_to_start_s"):
                continue
            src = m["sources"].get(frm, "") if frm else "the bench's clock"
            out.append(f"| {what} | {_f(m['segments'].get(k), fmt='.3f', unit='')} | {src} |")
    face = raw.get("face") or {}
    if face:
        out += ["", "### FACE sweep", "", "| configuration | points | wall [s] | points/s | command |",
                "|---|---|---|---|---|"]
        for c, r in face.items():
            out.append(f"| {c} | {r['points']} | {r['wall_s']:.2f} | {r['points_per_s']:.1f} | `{r['command']}`"
                       f"{' FAILED: ' + r['error'] if 'error' in r else ''} |")
    rt = raw.get("realtime") or {}
    if rt.get("rates"):
        out += ["", f"### Realtime rate scan ({rt['duration_s']:g} s per rate, separate processes)", "",
                "| rate [Hz] | dt [ms] | deadline-miss ratio | latency p50 [ms] | p99 [ms] | p99.9 [ms] | "
                "per hop p50 [ms] | lost msgs | holds |", "|---|---|---|---|---|---|---|---|---|"]
        for r in rt["rates"]:
            if "error" in r:
                out.append(f"| {r['hz']:g} | {1e3 * r['dt_s']:g} | failed: {r['error']} | | | | | | |")
                continue
            out.append(f"| {r['hz']:g} | {1e3 * r['dt_s']:g} | {r['miss_ratio']:.4f} | "
                       f"{_f(r['latency_p50_s'], 1e3, '.3f', '')} | {_f(r['latency_p99_s'], 1e3, '.3f', '')} | "
                       f"{_f(r['latency_p999_s'], 1e3, '.3f', '')} | {_f(r['hop_p50_s'], 1e3, '.3f', '')} | "
                       f"{r.get('lost_messages', '')} | {'yes' if r['passed'] else 'no'} |")
    return "\n".join(out)


def markdown_summary(summary: dict, facts: dict, label: str = "") -> str:
    c = summary["counts"]
    head = ["# rths bench: what users wait for", "",
            f"Machine: {facts.get('cores')} cores, kernel {facts.get('kernel')}, Python {facts.get('python')}, "
            f"rmw {facts.get('rmw')} ({facts.get('ros')}); {facts.get('date')}; commit {summary.get('commit') or 'unknown'}; "
            f"the bench took {summary['wall_s']:.0f} s.", ""]
    from rths_ros.bench.core import speed_note
    note = speed_note(summary.get("machine_speed"))
    if note:
        head += [note, ""]
    if label:
        head += [f"**{label}**", ""]
    head += [f"{c['met']} met, {c['not_met']} not met, {c['no_verdict']} without a verdict, "
             f"{c['not_measured']} not measured (of {c['rows']} rows). Ratios to real time are simulated seconds / "
             "wall seconds.", ""]
    return "\n".join(head) + "\n" + markdown_rows(summary["rows"]) + "\n" + markdown_details(summary)


def cmd_summary(a) -> int:
    """``rths bench`` / ``rths bench summary`` from the parsed arguments of the bench parser."""
    from rths_ros.bench.core import machine_facts, write
    from rths_ros.launch_support import default_out
    out = Path(a.out) if a.out else default_out("bench")
    only = tuple(g.strip() for g in (a.only or ",".join(GROUPS)).split(",") if g.strip())
    opts = SummaryOptions(scenario=a.scenario, overrides=tuple(a.set), quick=a.quick, only=only,
                          face_points=a.face_points, face_cluster=not a.no_cluster, rates_hz=tuple(float(r) for r in a.rates.split(",") if r.strip())
                          if a.rates else None, rt_duration_s=a.rt_duration,
                          test_record=Path(a.test_record) if a.test_record else measure.default_test_record())
    opts.resolved()                  # validate before anything runs
    facts = machine_facts()
    label = quick_label(opts) if opts.quick else ""
    print(f"rths bench on {facts['cores']} cores, kernel {facts['kernel']}, Python {facts['python']} -> {out}")
    if label:
        print(label)
    summary = run_summary(opts, out, log=lambda s: print(s, flush=True))
    md = markdown_summary(summary, facts, label)
    write(out, {"machine": facts, "summary": summary}, md)
    print()
    if label:
        print(label)
    print(text_rows(summary["rows"]))
    c = summary["counts"]
    from rths_ros.bench.core import speed_note
    if speed_note(summary.get("machine_speed")):
        print("\n" + speed_note(summary.get("machine_speed")))
    print(f"\n{c['met']} met, {c['not_met']} not met, {c['no_verdict']} without a verdict, {c['not_measured']} not "
          f"measured (of {c['rows']})")
    print(f"-> {out / 'bench.json'}, {out / 'bench.md'}")
    return 0
