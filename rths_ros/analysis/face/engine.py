"""FACE sweep engine: run every point, save the records, analyse, write the outputs; re-analysis of saved points.

The engine is independent of how a point is run: it takes a callable ``run_point(params) -> record``
(a dict of recorded arrays ``t, z_cmd, z_ach, ...`` plus optional ``dt``, ``unstable``); the runners are in
:mod:`rths_ros.analysis.face.execution` and the caller passes one (:func:`rths_ros.analysis.face.cli.main`
uses :func:`rths_ros.analysis.face.execution.make_runner`).  Points run in parallel in a
``ProcessPoolExecutor`` or on a Dask distributed cluster (``cluster="local:N"`` or a scheduler address);
each record is saved to ``OUT/points/point_NNN.npz`` so :func:`reanalyse` can refit (other e, q or fit
settings) without running again.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import multiprocessing
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from rths_ros.analysis.face.fit import analyse, analyse_rows, point_row
from rths_ros.analysis.face.measures import q_value
from rths_ros.analysis.face.outputs import _load_record, _save_record, write_outputs
from rths_ros.analysis.face.spec import SweepSpec, load_sweep
from rths_ros.params import ParameterError, to_dict
from rths_ros.runtime.rt import one_blas_thread


def _reference_q(spec: SweepSpec, run_point: Any, out_dir: Path | None) -> float | None:
    if spec.reference.source == "value":
        return spec.reference.value
    if spec.reference.source == "runner":
        ref = getattr(run_point, "reference", None)
        if ref is None:
            raise ParameterError(f"reference.source: 'runner' is not allowed with runner = {spec.runner}; "
                                 "this runner has no reference solution (use source: value)")
        rec = ref({spec.vary.parameter: spec.vary.values[0]})
        if out_dir is not None:
            _save_record(out_dir / "points" / "reference.npz", rec)
        return float(q_value(rec, spec.q))
    return None


# Each worker process runs one BLAS thread (one_blas_thread): a point is a sequential simulation whose matrix
# products are tiny, and extra BLAS threads only compete with the other workers for the cores (on 2 cores, two
# workers with two OpenBLAS threads each ran a point 2.5 times slower than one worker).


#: glibc's ``mallopt`` parameters (malloc.h) and the thresholds a point's arrays need: a sweep's worker allocates
#: and frees the same few MB of arrays for every point
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_MMAP_THRESHOLD = 128 * 1024              # glibc's initial threshold: larger blocks are mapped for each use
_POINTS_MMAP_THRESHOLD = 32 * 1024 * 1024       # the largest one glibc's own dynamic threshold would reach
_POINTS_TRIM_THRESHOLD = 64 * 1024 * 1024


def _worker_malloc(restore: bool = False) -> str:
    """In a Dask worker started by a nanny: Dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``
    (distributed's ``nanny.pre-spawn-environ``), which also switches off glibc's dynamic mmap threshold, so every
    array above 128 KB is mapped, faulted in and unmapped again for each point: 43 ms of CPU per point of contact_1d
    instead of 39 (the same process without the variable).  For the sweep the thresholds are raised (the arrays
    stay on the heap); ``restore`` sets the worker's own values back after it.  A worker without the variable
    (no nanny, glibc's dynamic thresholds) is left alone.  Returns what it did."""
    import ctypes
    import ctypes.util
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_", "")
    if not trim.isdigit():
        return "untouched"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):       # not glibc
        return "untouched"
    if restore:
        ok = mallopt(_M_MMAP_THRESHOLD, _GLIBC_MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, int(trim))
        return "restored" if ok else "refused"
    ok = mallopt(_M_MMAP_THRESHOLD, _POINTS_MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, _POINTS_TRIM_THRESHOLD)
    return "raised" if ok else "refused"


def _call(run_point, point, save_to: str | None = None, retries: int = 0, analysis: tuple | None = None):
    """Run one point; with ``save_to``, also save its record there (in the worker, so the compression of the
    records is spread over the workers instead of queueing in the parent).  A run that aborts is run again up to
    ``retries`` times (a realtime run on a rig may abort on a stall of its link); the record says how many
    ``attempts`` it took.  With ``save_to`` and ``analysis`` = (spec, index, value), the point's row of the
    analysis (:func:`~rths_ros.analysis.face.fit.point_row`) is returned instead of the record: the record stays
    on disk, and the parent neither receives nor holds it (1.5 MB for a point of contact_1d)."""
    attempts = 0
    while True:
        rec = run_point(point)
        attempts += 1
        if not bool(rec.get("aborted", False)) or attempts > int(retries):
            break
    if retries:
        rec["attempts"] = attempts
    if save_to is not None:
        _save_record(Path(save_to), rec)
        if analysis is not None:
            return point_row(analysis[0], analysis[1], rec, analysis[2])
    return rec


def _call_batch(run_point, items, retries: int = 0, spec: SweepSpec | None = None) -> list:
    """Several points in one task, ``[(i, point, save_to, value)]`` -> ``[(i, row or record)]`` (:func:`_call`;
    rows with ``spec``, where the points are saved): a task of a Dask cluster costs a round trip through its
    scheduler, a point of contact_1d about 40 ms of work."""
    return [(i, _call(run_point, pt, save_to, retries, (spec, i, v) if spec is not None else None))
            for i, pt, save_to, v in items]


#: the periodic callbacks of a Dask worker that sample its task thread's stack (distributed's statistical profiler,
#: ``distributed.worker.profile``: every 10 ms the worker's event loop takes the interpreter lock from the running
#: point to walk its frames); paused for a sweep, whose points are not what a lab profiles
_PROFILER_CALLBACKS = ("profile", "profile-cycle")


def _worker_profiler(dask_worker=None, resume: bool = False) -> str:
    """Pause (``resume``: start again) a Dask worker's statistical profiler; runs in the worker's event loop
    (``client.run``).  Returns what it did: "paused", "resumed" or "untouched" (no such callbacks, or not
    running)."""
    callbacks = getattr(dask_worker, "periodic_callbacks", None) or {}
    found = [callbacks[k] for k in _PROFILER_CALLBACKS if k in callbacks]
    if not found:
        return "untouched"
    if resume:
        for pc in found:
            if not pc.is_running():
                pc.start()
        return "resumed"
    running = [pc for pc in found if pc.is_running()]
    for pc in running:
        pc.stop()
    return "paused" if running else "untouched"


def _worker_setup(probe: str, dask_worker=None) -> tuple[str | None, str, str]:
    """Each Dask worker before a sweep, in one round trip: one BLAS thread (:func:`one_blas_thread`), malloc for the
    points (:func:`_worker_malloc`), its profiler paused (:func:`_worker_profiler`), and the text of the file
    ``probe`` as this worker reads it (None: no such file here)."""
    one_blas_thread()
    try:
        text = Path(probe).read_text()
    except OSError:
        text = None
    return text, _worker_malloc(), _worker_profiler(dask_worker)


def _worker_restore(dask_worker=None) -> tuple[str, str]:
    """A cluster's worker after a sweep, as it was before it (:func:`_worker_malloc`, :func:`_worker_profiler`)."""
    return _worker_malloc(restore=True), _worker_profiler(dask_worker, resume=True)


def _set_up_workers(client, out: Path) -> tuple[bool, bool]:
    """(every worker of the cluster reads a file written here under the same path, so it can write the points;
    some worker was changed for the sweep and is to be restored after it) after :func:`_worker_setup` on every
    worker."""
    import uuid
    token = uuid.uuid4().hex
    probe = out / f".workers-probe-{token}"
    probe.write_text(token)
    try:
        seen = client.run(_worker_setup, str(probe))
    finally:
        probe.unlink(missing_ok=True)
    return (bool(seen) and all(text == token for text, _, _ in seen.values()),
            any(m == "raised" or p == "paused" for _, m, p in seen.values()))


#: Dask tasks per worker thread of the cluster at the start of a sweep: the first batches are this many per worker,
#: few enough that the per-task round trips through the scheduler stay a small part of a sweep
TASKS_PER_WORKER = 8
#: a batch holds at most the remaining points over this many per worker thread: the batches shrink towards the end
#: of a sweep down to single points, so the workers finish within about a point of each other
GUIDED_SHARE = 3


def batches(n: int, workers: int) -> list[range]:
    """The points ``0 .. n-1`` in consecutive batches: at first about :data:`TASKS_PER_WORKER` per worker, then
    shrinking with what remains (guided self-scheduling: a batch holds at most the remaining points over
    :data:`GUIDED_SHARE` per worker), the last ones single points.  Equal batches (200 points on 2 workers: 16 of
    13 points) left one worker idle for up to a batch (0.2 s of 5.7) while the other ran its last one."""
    w = max(1, workers)
    cap = max(1, -(-n // (TASKS_PER_WORKER * w)))
    out, i = [], 0
    while i < n:
        size = min(cap, max(1, -(-(n - i) // (GUIDED_SHARE * w))))
        out.append(range(i, min(n, i + size)))
        i += size
    return out


def sweep_dask_config() -> dict:
    """The Dask settings for a sweep's cluster (``config/dask/rths-sweeps.yaml``: less housekeeping in every Dask
    process), flattened to dotted keys for ``dask.config.set``; {} if the file is missing."""
    from rths_ros.resources import config_dir
    path = config_dir() / "dask" / "rths-sweeps.yaml"
    if not path.is_file():
        return {}

    def flat(d: Mapping, prefix: str = "") -> dict:
        out = {}
        for k, v in d.items():
            key = f"{prefix}{k}"
            out.update(flat(v, key + ".") if isinstance(v, Mapping) else {key: v})
        return out
    return flat(yaml.safe_load(path.read_text()) or {})


def open_cluster(address: str):
    """(client, cluster) of a Dask distributed cluster.  ``local:N`` starts a LocalCluster of N worker
    processes (one thread each, on 127.0.0.1, no dashboard) that is closed with the client; any other
    value is the address of a running scheduler (e.g. ``tcp://host:8786``), whose cluster is left running."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:    # pragma: no cover - the packages are in requirements/runtime.txt
        raise ParameterError("cluster: the packages dask and distributed are not installed "
                             "(pip install -r requirements/runtime.txt)") from None
    address = str(address).strip()
    if address.startswith("local:"):
        n = address[len("local:"):]
        if not n.isdigit() or not 1 <= int(n) <= 256:
            raise ParameterError(f"cluster: {address!r} is not allowed; expected local:N with N in 1..256")
        import dask.config
        with dask.config.set(sweep_dask_config()):     # (its nannies hand the settings to their workers)
            cluster = LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None)
        return Client(cluster), cluster
    if not address:
        raise ParameterError("cluster: '' is not allowed; expected local:N or a scheduler address")
    return Client(address), None


def run_sweep(spec: SweepSpec, out_dir: str | Path, run_point: Callable[[dict], dict],
              workers: int = 1, progress: Callable[[str], None] | None = print, raw: Mapping | None = None,
              cluster: str | None = None, check: bool = True, retries: int = 0) -> dict:
    """Run every point, save them, analyse, write the outputs.

    ``run_point`` runs one point (the sweep's runner:
    ``rths_ros.analysis.face.execution.make_runner(spec, out_dir)``, or any callable of the same form).
    Points run one after the other (``workers = 1``), in a ``ProcessPoolExecutor`` of ``workers``
    processes, or, with ``cluster`` (``local:N`` or a scheduler address), as tasks of a Dask distributed
    cluster (:func:`open_cluster`).  ``run_point`` must be picklable for the last two; with a remote
    cluster the output directory must be reachable by the workers under the same path (graph runs write
    their bags there).

    Before the first point (``check``): :func:`rths_ros.analysis.face.preflight.require_runnable` reports every
    problem of the sweep at once and nothing runs.  A runner with ``one_at_a_time`` (realtime runs, runs on a rig)
    runs its points one after the other whatever ``workers`` says.  A point whose run aborts is run again up to
    ``retries`` times (:func:`_call`).  The result carries the runner's ``setup``
    (plant, mode) and the ``verdict`` (:func:`rths_ros.analysis.face.fit.verdict`)."""
    if check:
        from rths_ros.analysis.face.preflight import require_runnable
        require_runnable(spec, out_dir, cluster)
    if getattr(run_point, "one_at_a_time", False) and (workers > 1 or cluster):
        if progress is not None:
            progress(f"  FACE {spec.name}: realtime runs / runs on a rig go one at a time (workers = 1)")
        workers, cluster = 1, None
    setup = dict(getattr(run_point, "setup", None) or {})
    out = Path(out_dir)
    (out / "points").mkdir(parents=True, exist_ok=True)
    (out / "sweep.yaml").write_text(yaml.safe_dump(dict(raw) if raw is not None else _spec_data(spec),
                                                   sort_keys=False))
    values = list(spec.vary.values)
    points = [{spec.vary.parameter: _plain_number(v)} for v in values]
    rows: list[Any] = [None] * len(points)      # each point's row of the analysis (fit.point_row)

    def point_file(i: int) -> Path:
        return out / "points" / f"point_{i:03d}.npz"
    if cluster:     # Dask's client library (0.25 s of imports) is loaded before the clock of the points starts, as
        with contextlib.suppress(ImportError):  # the process pool's module is (without it: open_cluster's error)
            import distributed  # noqa: F401
    t0 = time.monotonic()
    done = 0

    def report() -> None:
        if progress is not None:
            n = len(points)
            bar = "#" * (30 * done // n) + "-" * (30 - 30 * done // n)
            progress(f"  FACE {spec.name}: [{bar}] {done}/{n} points done  {time.monotonic() - t0:6.1f} s")

    if cluster:
        client, local = open_cluster(cluster)       # (first: it names what to install when Dask is missing)
        from distributed import as_completed as dask_completed
        changed = False
        try:
            # workers that see this disk (a LocalCluster's, a cluster on this machine or on a shared file system)
            # save their points themselves; the others' records are saved here
            shared_disk, changed = _set_up_workers(client, out)
            local_workers = local is not None or shared_disk
            threads = sum(int(w.get("nthreads", 1)) for w in client.scheduler_info()["workers"].values())
            # the runner goes to every worker once (not with each task); the points in batches (batches())
            runner = client.scatter(run_point, broadcast=True, hash=False)
            tag = time.time_ns()
            futs = [client.submit(_call_batch, runner,
                                  [(i, points[i], str(point_file(i)) if local_workers else None, values[i])
                                   for i in batch], retries, spec if local_workers else None, pure=False,
                                  key=f"face-{spec.name}-{batch.start}-{tag}")
                    for batch in batches(len(points), threads)]
            for fut in dask_completed(futs):
                for i, got in fut.result():
                    if not local_workers:       # the record came back: saved and analysed here
                        _save_record(point_file(i), got)
                        got = point_row(spec, i, got, values[i])
                    rows[i] = got
                    done += 1
                report()
        finally:
            if changed and local is None:        # a cluster that stays: its workers as they were
                with contextlib.suppress(Exception):
                    client.run(_worker_restore)
            client.close()
            if local is not None:
                local.close()
    elif workers > 1:
        # forked workers inherit this process's locks; a DDS library that ran here (a ROS context, even one shut
        # down: its threads hold locks) would leave them locked in a worker, whose forked nodes then hang: then the
        # workers start from a fresh interpreter instead
        from rths_ros.runtime.forked import dds_threads
        ctx = multiprocessing.get_context("forkserver") if dds_threads() else None
        with cf.ProcessPoolExecutor(max_workers=workers, initializer=one_blas_thread, mp_context=ctx) as pool:
            futs = {pool.submit(_call, run_point, pt, str(point_file(i)), retries, (spec, i, values[i])): i
                    for i, pt in enumerate(points)}
            for fut in cf.as_completed(futs):
                rows[futs[fut]] = fut.result()
                done += 1
                report()
    else:
        for i, pt in enumerate(points):
            rows[i] = _call(run_point, pt, str(point_file(i)), retries, (spec, i, values[i]))
            done += 1
            report()
    (out / "points" / "index.json").write_text(json.dumps(
        {"parameter": spec.vary.parameter, "values": values,
         "files": [f"point_{i:03d}.npz" for i in range(len(points))], "setup": setup}, indent=1))
    q_ref = _reference_q(spec, run_point, out)
    result = analyse_rows(spec, rows, q_ref, setup=setup)
    write_outputs(result, out, spec)
    return result


def _plain_number(v: float):
    return int(v) if float(v).is_integer() else float(v)


def _spec_data(spec: SweepSpec) -> dict:
    d = to_dict(spec)
    d["overrides"] = dict(spec.overrides)
    return d


def reanalyse(out_dir: str | Path, spec: SweepSpec | None = None) -> dict:
    """Analyse saved points again (no run).  ``spec`` may change e, q, fit or reference settings; its
    ``vary`` must match the saved points.  Default: the sweep.yaml saved with the points."""
    out = Path(out_dir)
    index = json.loads((out / "points" / "index.json").read_text())
    if spec is None:
        spec, _ = load_sweep(out / "sweep.yaml")
    if spec.vary.parameter != index["parameter"] or [float(v) for v in spec.vary.values] != \
            [float(v) for v in index["values"]]:
        raise ParameterError(f"vary: {spec.vary.parameter} = {list(spec.vary.values)} does not match the saved "
                             f"points ({index['parameter']} = {index['values']})")
    records = [_load_record(out / "points" / f) for f in index["files"]]
    q_ref = None
    if spec.reference.source == "value":
        q_ref = spec.reference.value
    elif spec.reference.source == "runner":
        ref_path = out / "points" / "reference.npz"
        if not ref_path.exists():
            raise ParameterError(f"reference.source: 'runner' but {ref_path.name} was not saved with the points")
        q_ref = float(q_value(_load_record(ref_path), spec.q))
    result = analyse(spec, records, index["values"], q_ref, setup=index.get("setup"))
    write_outputs(result, out, spec)
    return result
