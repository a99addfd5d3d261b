"""``rths stress``: the same lockstep graph run N times in a row, to catch rare hangs, failures and nondeterminism.

    rths stress [SCENARIO] --runs N [--set KEY=VALUE ...] [--out DIR] [--composed] [--keep]

Each run is ``rths run`` (:func:`rths_ros.runner.run_scenario`: one process per node, or one with ``--composed``)
into OUT/run-000, OUT/run-001, ...  Every run is classified:

* hang: the runner had to end it (a node still running long after the supervisor ended the run, or the run's time
  limit: "did not end within" in its message), or a node's log holds a faulthandler dump ("Timeout (...)!"): the
  teardown watchdog (:mod:`rths_ros.runtime.teardown`; after its "teardown watchdog armed" line) or the spin hang
  dump;
* failure: the run's result code is not 0;
* difference: the recorded loop data differ from the reference run (the first run with a readable bag).  Every
  field of every control topic (per step; stamps left out) and the sequence of events after READY are compared
  exactly: a lockstep run is deterministic, so any difference is a bug.  The largest absolute difference of each
  differing array is reported.

A line per run is printed (run i/N, wall time, result); OUT/stress.json holds a row per run and the totals and is
rewritten after every run.  The bags of runs that match the reference are deleted after the comparison (the
reference run's, failed or differing runs' bags are kept; ``--keep`` keeps all).  Exit code 0 only if no run hung,
failed or differed.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError

#: message fields that are wall-clock times or constants, never compared
_SKIP_FIELDS = ("header", "origin_stamp")
#: a runner message of a run it had to end (stuck node, time limit)
RUNNER_HANG = "did not end within"
#: events compared by (type, step, trial, source): all but READY (sent whenever a node is connected)
_READY = 0


def _flatten(prefix: str, value, out: dict) -> None:
    if hasattr(value, "sec") and hasattr(value, "nanosec"):      # a time: wall clock, not loop data
        return
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            if f.name.startswith("__") or f.name.isupper() or f.name in _SKIP_FIELDS:
                continue
            _flatten(f"{prefix}.{f.name}" if prefix else f.name, getattr(value, f.name), out)
    elif isinstance(value, (bool, int, float, np.ndarray, np.number, np.bool_)):
        out[prefix] = value


def loop_arrays(bag: Path) -> dict[str, np.ndarray]:
    """The loop data of a recorded run: one array per field of every control topic (rows in step order) and
    ``/rths/events`` (type, step, trial) of every event but READY."""
    from rths_ros.bag import read_bag
    from rths_ros.runtime.topics import TOPICS
    control = {t.name for t in TOPICS if t.kind == "control"}
    topics = read_bag(Path(bag), sorted(control | {"/rths/events"}))
    arrays: dict[str, np.ndarray] = {}
    for topic, msgs in sorted(topics.items()):
        if topic == "/rths/events":
            rows = sorted((int(m.type), int(m.step), int(m.trial), m.source) for _, m in msgs if m.type != _READY)
            arrays[topic] = np.array([r[:3] for r in rows], dtype=np.int64).reshape(-1, 3)
            arrays[topic + ".source"] = np.array([r[3] for r in rows])
            continue
        rows = []
        for _, m in sorted(msgs, key=lambda tm: int(getattr(tm[1], "step", 0))):
            flat: dict = {}
            _flatten("", m, flat)
            rows.append(flat)
        for name in rows[0] if rows else ():
            try:
                arrays[f"{topic}:{name}"] = np.array([r[name] for r in rows])
            except ValueError:     # ragged rows (a list field whose length changes): one flat array
                arrays[f"{topic}:{name}"] = np.concatenate([np.ravel(r[name]) for r in rows])
    return arrays


def max_abs_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| (NaN where exactly one is NaN counts as inf, NaN against NaN as equal); inf if the shapes
    differ."""
    if a.shape != b.shape:
        return float("inf")
    if a.dtype.kind not in "biuf" or b.dtype.kind not in "biuf":
        return 0.0 if np.array_equal(a, b) else float("inf")
    x, y = a.astype(float), b.astype(float)
    both = np.isnan(x) & np.isnan(y)
    one = np.isnan(x) ^ np.isnan(y)
    if one.any():
        return float("inf")
    d = np.where(both, 0.0, np.abs(x - y))
    return float(d.max()) if d.size else 0.0


def compare(ref: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> dict[str, dict]:
    """Every array of either record that is not exactly the same in the other: {name: {max_abs_diff, shapes}}."""
    out = {}
    for name in sorted(set(ref) | set(other)):
        a, b = ref.get(name), other.get(name)
        if a is None or b is None:
            out[name] = {"max_abs_diff": float("inf"), "note": "missing in the " + ("reference" if a is None
                                                                                    else "run")}
            continue
        same = a.shape == b.shape and (np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f"))
        if not same:
            out[name] = {"max_abs_diff": max_abs_difference(a, b), "shapes": [list(a.shape), list(b.shape)]}
    return out


def scan_logs(run_dir: Path) -> dict:
    """Faulthandler dumps in the node logs: {"teardown": [nodes], "spin": [nodes], "slow_teardown": [lines]}."""
    from rths_ros.runtime.teardown import TEARDOWN_MARK, TIMEOUT_HEADER
    found = {"teardown": [], "spin": [], "slow_teardown": []}
    for log in sorted((Path(run_dir) / "logs").glob("*.log")):
        text = log.read_text(errors="replace")
        dump = text.find(TIMEOUT_HEADER)
        if dump >= 0:
            mark = text.find(TEARDOWN_MARK)
            found["teardown" if 0 <= mark < dump else "spin"].append(log.stem)
        found["slow_teardown"] += [f"{log.stem}: {line.strip()}" for line in text.splitlines()
                                   if ": teardown took " in line]
    return found


def resources() -> dict:
    """What a long series could leak, read now: Fast DDS's shared-memory files in /dev/shm (segments, their
    locks and semaphores), the runner's open file descriptors and its resident memory [MB], and the live
    processes of this machine."""
    try:
        shm = [f for f in os.listdir("/dev/shm") if "fastdds" in f or "fast_datasharing" in f]
    except OSError:
        shm = []
    rss_mb = float("nan")
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss_mb = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    try:
        procs = sum(1 for d in os.listdir("/proc") if d.isdigit())
    except OSError:
        procs = -1
    return {"shm_files": len(shm), "fds": len(os.listdir("/proc/self/fd")), "rss_mb": round(rss_mb, 1),
            "processes": procs}


def _machine() -> dict:
    return {"cores": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "rmw": os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"), "date": time.strftime("%Y-%m-%d %H:%M:%S")}


def _totals(rows: list[dict]) -> dict:
    walls = [r["wall_s"] for r in rows]
    res = [r["resources"] for r in rows if "resources" in r]
    growth = {k: {"after_first": res[0][k], "after_last": res[-1][k], "max": max(r[k] for r in res)}
              for k in res[0]} if res else {}
    return {"resources": growth, "runs": len(rows), "hangs": sum(r["hang"] for r in rows), "failures": sum(r["failed"] for r in rows),
            "differences": sum(bool(r["differences"]) for r in rows),
            "wall_mean_s": float(np.mean(walls)) if walls else 0.0, "wall_max_s": max(walls, default=0.0),
            "wall_total_s": float(sum(walls))}


def _verdict(row: dict) -> str:
    parts = []
    if row["hang"]:
        parts.append("HANG (" + ", ".join(row["hang_nodes"]) + ")")
    if row["failed"]:
        parts.append(f"FAILED (code {row['code']}: {row['message'].splitlines()[0] if row['message'] else ''})")
    if row["differences"]:
        worst = max(row["differences"].items(), key=lambda kv: kv[1]["max_abs_diff"])
        parts.append(f"DIFFERS in {len(row['differences'])} arrays (largest: {worst[0]} "
                     f"{worst[1]['max_abs_diff']:.3g})")
    if not parts:
        parts.append("ok" + (" (reference)" if row["reference"] else f", identical ({row['arrays']} arrays)"))
    return "; ".join(parts)


def run_stress(scenario: scn.Scenario, runs: int, out: Path, composed: bool = False, keep: bool = False,
               log=print, sets_for_run: dict[int, list[str]] | None = None, command: str = "") -> dict:
    """Run ``scenario`` ``runs`` times into OUT/run-NNN and classify each run (module doc); returns the report
    written to OUT/stress.json.  ``sets_for_run`` ({run index: overrides}) perturbs chosen runs: the tests use it
    to show that a changed run is caught."""
    from rths_ros.runner import run_scenario
    if scenario.loop.mode != "lockstep":
        raise ParameterError(f"loop.mode: {scenario.loop.mode!r} is not allowed for rths stress; expected 'lockstep' "
                             "(the runs are compared exactly)")
    out = Path(out).resolve()
    if (out / "stress.json").exists() or (out / "run-000").exists():
        raise ParameterError(f"out: {out} already holds a stress run; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    report = {"resources_at_start": resources(), "command": command, "scenario": scenario.name, "mode": scenario.loop.mode,
              "processes": "composed" if composed else "one per node", "steps": scenario.steps * scenario.loop.trials,
              "machine": _machine(), "reference_run": None, "rows": [], "totals": {}}
    ref: dict | None = None
    t_all = time.monotonic()
    for i in range(runs):
        s = scenario
        if sets_for_run and i in sets_for_run:
            s = scn.from_data(scn.to_dict(scenario), sets_for_run[i])
        run_dir = out / f"run-{i:03d}"
        notes: list[str] = []
        r = run_scenario(s, run_dir, composed=composed, progress=False, log=notes.append)
        logs = scan_logs(run_dir)
        hang_nodes = [f"{n} (teardown watchdog)" for n in logs["teardown"]] + [f"{n} (spin hang dump)"
                                                                              for n in logs["spin"]]
        if RUNNER_HANG in r.message:
            hang_nodes.append(f"{r.failed_node or 'run'} (ended by the runner)")
        row = {"run": i, "dir": run_dir.name, "code": r.code, "wall_s": round(r.wall_s, 3),
               "message": r.message, "failed_node": r.failed_node, "exit_codes": r.exit_codes,
               "hang": bool(hang_nodes), "hang_nodes": hang_nodes, "failed": r.code != 0,
               "slow_teardowns": logs["slow_teardown"], "differences": {}, "arrays": 0, "reference": False,
               "overrides": list(sets_for_run.get(i, [])) if sets_for_run else [], "resources": resources()}
        bag = run_dir / "bag"
        arrays = None
        try:
            arrays = loop_arrays(bag) if bag.exists() else None
        except Exception as exc:         # an unreadable bag is this run's failure, not the tool's
            row["failed"] = True
            row["message"] = (row["message"] + f"\nbag not readable: {exc}").strip()
        if arrays is not None:
            row["arrays"] = len(arrays)
            if ref is None and r.code == 0:
                ref, row["reference"], report["reference_run"] = arrays, True, run_dir.name
            elif ref is not None:
                row["differences"] = compare(ref, arrays)
        if bag.exists() and not keep and not row["reference"] and not row["failed"] and not row["differences"]:
            shutil.rmtree(bag, ignore_errors=True)
        row["bag_kept"] = bag.exists()
        report["rows"].append(row)
        report["totals"] = _totals(report["rows"])
        report["totals"]["elapsed_s"] = round(time.monotonic() - t_all, 3)
        (out / "stress.json").write_text(json.dumps(report, indent=2, default=_json_default))
        log(f"run {i + 1}/{runs}: {r.wall_s:6.1f} s  {_verdict(row)}")
        if r.code in (130, 143) and not row["hang"]:     # interrupted: stop the series
            log("rths stress: interrupted; the series ends here")
            break
    return report


def _json_default(v):
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return str(v)


def summary_lines(report: dict) -> list[str]:
    t = report["totals"]
    return [f"{t['runs']} runs of {report['scenario']} ({report['mode']}, {report['processes']}): "
            f"{t['hangs']} hangs, {t['failures']} failures, {t['differences']} differences from "
            f"{report['reference_run'] or 'no reference run'}",
            f"wall time per run: mean {t['wall_mean_s']:.1f} s, max {t['wall_max_s']:.1f} s; "
            f"total {t['elapsed_s']:.0f} s",
            *_resource_lines(report)]


def _resource_lines(report: dict) -> list[str]:
    start, growth = report.get("resources_at_start"), report["totals"].get("resources")
    if not start or not growth:
        return []
    names = {"shm_files": "Fast DDS files in /dev/shm", "fds": "runner's open fds", "rss_mb": "runner's RSS [MB]",
             "processes": "processes on the machine"}
    return ["before the first run -> after the first -> after the last (max): " + "; ".join(
        f"{names[k]} {start[k]:g} -> {g['after_first']:g} -> {g['after_last']:g} ({g['max']:g})"
        for k, g in growth.items())]


def cmd_stress(a) -> int:
    s = scn.load(a.scenario, a.set)
    if a.runs < 1:
        raise ParameterError(f"--runs: {a.runs} is not allowed; expected at least 1")
    if a.out:
        out = Path(a.out)
    else:
        from rths_ros.launch_support import default_out
        out = default_out(f"stress-{s.name}")
    command = " ".join(["rths stress", a.scenario, "--runs", str(a.runs)] + [f"--set {x}" for x in a.set]
                       + (["--composed"] if a.composed else []))
    print(f"rths stress {s.name}: {a.runs} runs, {s.loop.mode}, "
          f"{'composed' if a.composed else 'one process per node'}, {s.steps * s.loop.trials} steps each -> {out}")
    report = run_stress(s, a.runs, out, composed=a.composed, keep=a.keep, command=command)
    for line in summary_lines(report):
        print(line)
    print(f"-> {Path(out) / 'stress.json'}")
    t = report["totals"]
    bad = t["hangs"] + t["failures"] + t["differences"]
    if bad or t["runs"] < a.runs:
        print(f"rths stress: FAILED: {t['hangs']} hangs, {t['failures']} failures, {t['differences']} differences"
              + (f", {a.runs - t['runs']} runs not done" if t["runs"] < a.runs else ""), file=sys.stderr)
        return 1
    return 0


def add_parsers(sub, scenario_args=None) -> None:
    """Register ``rths stress`` on the ``rths`` subcommand parsers."""
    st = sub.add_parser("stress", help="run a lockstep scenario N times; count hangs, failures and differences")
    st.add_argument("scenario", nargs="?", default="contact_1d", help="scenario name or YAML (default contact_1d)")
    st.add_argument("--runs", type=int, default=10, help="number of runs (default 10)")
    st.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario value")
    st.add_argument("--out", help="directory for run-NNN/ and stress.json (default runs/stress-NAME-TIME)")
    st.add_argument("--composed", action="store_true", help="all nodes in one process (default: one per node)")
    st.add_argument("--keep", action="store_true", help="keep every run's bag (default: only the reference run's "
                    "and those of failed or differing runs)")
    st.set_defaults(func=cmd_stress)
