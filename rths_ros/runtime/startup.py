"""Start-up marks of a node process: when it started, finished importing, built its nodes, announced
READY and received START (epoch seconds, ``time.time()``).

They go into each node's ``timing/NODE.json`` under ``startup`` so that ``rths bench`` can break the
wait before a run's first step into its parts.  Only the first occurrence of a mark counts.

:func:`warm_fast_path` loads the fast path's kernels before READY in realtime runs (docs/performance.md, "The first
steps of a realtime run"), once per process: a node process forked from a runner that did it starts warm.
"""
from __future__ import annotations

import os
import time

MARKS: dict[str, float] = {}


def process_start_epoch() -> float | None:
    """When this process started (epoch seconds, clock-tick resolution), from /proc; None elsewhere."""
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])   # field 22 of stat(5): start after boot
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return time.time() - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def mark(name: str) -> None:
    """Note the first time ``name`` happened in this process."""
    MARKS.setdefault(name, time.time())


def marks() -> dict[str, float]:
    """The marks so far, with the process start first."""
    out: dict[str, float] = {}
    start = process_start_epoch()
    if start is not None:
        out["process_start"] = start
    out.update(MARKS)
    return out


def update_run_timing(out_dir, **phase_marks: float) -> dict:
    """Merge ``phase_marks`` (epoch seconds) into ``OUT/timing/run.json``, the phases of a whole run:
    ``cli_start``, ``spawn``, ``start`` and ``stop`` (the first node that saw START / STOP),
    ``nodes_ended``, ``analysis_done``.  START and STOP are taken from the nodes' own marks."""
    import json
    from pathlib import Path
    d = Path(out_dir) / "timing"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "run.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    for f in sorted(d.glob("*.json")):
        if f.name == "run.json":
            continue
        try:
            node_marks = json.loads(f.read_text()).get("startup", {})
        except (OSError, ValueError, AttributeError):
            continue
        for key in ("start", "stop"):
            if key in node_marks:
                data[key] = min(data.get(key, node_marks[key]), node_marks[key])
    data.update({k: float(v) for k, v in phase_marks.items() if v is not None})
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
    return data


#: warm_fast_path ran in this process (or in the process this one was forked from)
FAST_PATH_WARM = False


def warm_fast_path(scenario, steps: int = 20) -> str:
    """Step the scenario's fast-path objects (model, platform path, force path, plant, learners) ``steps`` steps in
    this process, on objects of their own, before READY in every clock mode.  The first call of a compiled kernel
    compiles it (a fresh installation: seconds for the gait model's kernels) or loads it from numba's cache, and the
    first call of some library functions imports their modules: 10-30 ms each.  A run would pay them in its first
    steps: in realtime a stall of over 0.1 s on a busy machine (in a composed process all in the plant's thread at
    step 0), in lockstep, on a fresh installation under load, more than the 5 s lockstep watchdog before the first
    leg command.  Once per process; a warm-up that fails leaves the run as it was (the run's own objects are
    untouched) and returns why (the caller logs it), else ""."""
    global FAST_PATH_WARM
    if FAST_PATH_WARM:
        return ""
    import dataclasses

    from rths_ros.app.vrths import VirtualRun
    try:
        loop = dataclasses.replace(scenario.loop, duration_s=steps * scenario.loop.dt_s, trials=1)
        VirtualRun(dataclasses.replace(scenario, loop=loop), compiled=False).run()
        FAST_PATH_WARM = True
    except Exception as exc:   # an optimisation only: the node's own objects are built and checked already
        return f"the warm-up of the fast path failed ({type(exc).__name__}: {exc}); its first steps may be slow"
    return ""
