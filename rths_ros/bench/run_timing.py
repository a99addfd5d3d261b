"""Where the wall time of one ``rths run`` goes: start-up, loop, shutdown, analysis and plots.

The run directory's ``timing/run.json`` holds the points in time (epoch seconds, ``time.time()``) that
the command passed: ``cli_start`` (the rths process started), ``spawn`` (node processes started),
``start`` (START issued), ``stop`` (STOP), ``nodes_ended`` (every node process ended), ``analysis_done``
(metrics and plots written); a point that was not reached is missing.  For a run directory without it
the points are taken from the supervisor's log (the START and STOP lines carry the epoch time) and from
file times: a node writes ``timing/NODE.json`` as it ends, and the report is the analysis's last output.
Each node's ``timing/NODE.json`` may carry a ``startup`` dict (``process_start``, ``imports_done``,
``built``, ``ready``, ``start``): the slowest node's imports and construction are part of the start-up.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

RUN_POINTS = ("cli_start", "spawn", "start", "stop", "nodes_ended", "analysis_done")
_LOG_LINE = re.compile(r"^\[\w+\] \[(?P<t>\d+(?:\.\d+)?)\] \[supervisor\]: (?P<msg>.*)$")
#: files the analysis writes (the last of them marks its end)
ANALYSIS_OUTPUTS = ("metrics.json", "report.md", "*.png")


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def supervisor_marks(log: Path) -> dict:
    """Epoch times of the first START and the last STOP in the supervisor's log."""
    out: dict = {}
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        m = _LOG_LINE.match(line.strip())
        if not m:
            continue
        msg = m["msg"].rstrip()
        if msg.endswith(": START") and "start" not in out:
            out["start"] = float(m["t"])
        elif msg.endswith(": STOP"):
            out["stop"] = float(m["t"])
    return out


def _latest_mtime(paths) -> float | None:
    times = [p.stat().st_mtime for p in paths if p.exists()]
    return max(times) if times else None


def run_points(run_dir: Path) -> tuple[dict, dict]:
    """(points, sources): epoch seconds of each point of :data:`RUN_POINTS` found, and where each came from."""
    run_dir = Path(run_dir)
    points: dict = {}
    sources: dict = {}
    rj = _read_json(run_dir / "timing" / "run.json")
    for k in RUN_POINTS:
        v = rj.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            points[k], sources[k] = float(v), "timing/run.json"
    marks = supervisor_marks(run_dir / "logs" / "supervisor.log")
    for k in ("start", "stop"):
        if k not in points and k in marks:
            points[k], sources[k] = marks[k], "logs/supervisor.log"
    if "nodes_ended" not in points:
        t = _latest_mtime([p for p in (run_dir / "timing").glob("*.json") if p.name != "run.json"])
        if t is not None:
            points["nodes_ended"], sources["nodes_ended"] = t, "time of the last timing/NODE.json"
    if "analysis_done" not in points:
        files = [p for pat in ANALYSIS_OUTPUTS for p in run_dir.glob(pat)]
        t = _latest_mtime(files)
        if t is not None:
            points["analysis_done"], sources["analysis_done"] = t, "time of the last report/plot file"
    return points, sources


def node_startup(run_dir: Path) -> dict | None:
    """The slowest node's imports (``imports_done - process_start``) and construction (``built -
    imports_done``), and the latest ``ready``, from the ``startup`` dicts of timing/NODE.json; None
    when no node wrote one."""
    imports, builds, ready = [], [], []
    for p in sorted((Path(run_dir) / "timing").glob("*.json")):
        st = _read_json(p).get("startup")
        if not isinstance(st, dict):
            continue
        node = p.stem
        if _num(st, "process_start", "imports_done"):
            imports.append((st["imports_done"] - st["process_start"], node))
        if _num(st, "imports_done", "built"):
            builds.append((st["built"] - st["imports_done"], node))
        if _num(st, "ready"):
            ready.append((float(st["ready"]), node))
    if not (imports or builds or ready):
        return None
    out: dict = {}
    if imports:
        out["import_s"], out["import_node"] = max(imports)
    if builds:
        out["build_s"], out["build_node"] = max(builds)
    if ready:
        out["last_ready"], out["last_ready_node"] = max(ready)
    return out


def _num(d: dict, *keys: str) -> bool:
    return all(isinstance(d.get(k), (int, float)) and not isinstance(d.get(k), bool) for k in keys)


def segments(points: dict, launch: float, exit_: float) -> dict:
    """Durations in seconds between the points (None where a point is missing): ``startup_s`` (command
    start to START), ``loop_s`` (START to STOP), ``shutdown_s`` (STOP to every node ended), ``analysis_s``
    (nodes ended to metrics and plots written), ``exit_s`` (from there to the command's exit),
    ``whole_s``; with run.json also ``interpreter_s`` (command start to the rths process's start) and
    ``spawn_to_start_s``."""
    p = dict(points, launch=launch, exit=exit_)

    def d(a: str, b: str) -> float | None:
        return (p[b] - p[a]) if a in p and b in p else None
    return {"startup_s": d("launch", "start"), "loop_s": d("start", "stop"), "shutdown_s": d("stop", "nodes_ended"),
            "analysis_s": d("nodes_ended", "analysis_done"), "exit_s": d("analysis_done", "exit"),
            "whole_s": exit_ - launch, "interpreter_s": d("launch", "cli_start"),
            "cli_to_spawn_s": d("cli_start", "spawn"), "spawn_to_start_s": d("spawn", "start")}
