"""Start-up marks of a node process: when it started, finished importing, built its nodes, announced
READY and received START (epoch seconds, ``time.time()``).

They go into each node's ``timing/NODE.json`` under ``startup`` so that ``rths bench`` can break the
wait before a run's first step into its parts.  Only the first occurrence of a mark counts.
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
