"""FACE command line: ``python -m rths_ros.analysis.face`` and ``rths face``."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from rths_ros.analysis.face.engine import reanalyse, run_sweep
from rths_ros.analysis.face.execution import make_runner
from rths_ros.analysis.face.outputs import _pct
from rths_ros.analysis.face.preflight import require_runnable
from rths_ros.analysis.face.spec import MODES, PLANTS, load_sweep, sweep_from_data
from rths_ros.params import ParameterError


def with_command_line(raw: dict, sets: list[str], mode: str | None = None, plant: str | None = None,
                      composed: bool = False) -> dict:
    """The sweep data with the command line's scenario settings: ``--set KEY=VALUE`` entries join the overrides
    (``plant=...`` and ``loop.mode=...`` set the sweep's own ``plant`` and ``mode``), ``--mode`` / ``--plant`` /
    ``--composed`` set them directly.  The result is what sweep.yaml records."""
    from rths_ros.app.scenario import parse_override
    data = dict(raw)
    overrides = dict(data.get("overrides") or {})
    for text in sets:
        path, value = parse_override(text)
        key = ".".join(path)
        if key == "plant":
            data["plant"] = value
        elif key == "loop.mode":
            data["mode"] = value
        else:
            overrides[key] = value
    if overrides:
        data["overrides"] = overrides
    if mode:
        data["mode"] = mode
    if plant:
        data["plant"] = plant
    if composed:
        data["composed"] = True
    return data


def main(argv: list[str] | None = None, prog: str = "face") -> int:
    """``python -m rths_ros.analysis.face SWEEP.yaml --out DIR [--set KEY=VALUE ...] [--mode M] [--plant P]
    [--composed] [--workers N] [--reanalyse] [--cluster ADDRESS]`` (also ``rths face``)."""
    import argparse
    ap = argparse.ArgumentParser(prog=prog, description="FACE fidelity assessment sweep")
    ap.add_argument("sweep", help="sweep YAML (with --reanalyse: optional, default OUT/sweep.yaml)", nargs="?")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parallel processes (default: the number of cores; realtime runs and runs on a rig go one "
                         "at a time)")
    ap.add_argument("--reanalyse", action="store_true", help="analyse the saved points again, do not run")
    ap.add_argument("--cluster", default=None, metavar="ADDRESS",
                    help="run the points on a Dask distributed cluster: local:N (N local worker processes) or a "
                         "scheduler address such as tcp://host:8786")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a scenario setting of every point (joins the sweep's overrides; plant=... and "
                         "loop.mode=... set the sweep's plant and mode)")
    ap.add_argument("--mode", choices=MODES[1:], help="clock mode of the graph runs (the sweep's mode:)")
    ap.add_argument("--plant", choices=PLANTS[1:], help="plant of the graph runs (the sweep's plant:)")
    ap.add_argument("--composed", action="store_true", help="graph runs with every node in one process")
    ap.add_argument("--retries", type=int, default=0, metavar="N", help="run a point whose run aborts again, up "
                    "to N times (a realtime run on a rig may abort on a stall of its link)")
    a = ap.parse_args(argv)
    try:
        if a.reanalyse:
            if a.set or a.mode or a.plant or a.composed or a.retries:
                ap.error("--set, --mode, --plant, --composed and --retries change how points run; --reanalyse runs "
                         "nothing")
            spec = load_sweep(a.sweep)[0] if a.sweep else None
            res = reanalyse(a.out, spec)
        else:
            if not a.sweep:
                ap.error("a sweep file is required unless --reanalyse")
            _, raw = load_sweep(a.sweep)
            raw = with_command_line(raw, a.set, a.mode, a.plant, a.composed)
            spec = sweep_from_data(raw)
            require_runnable(spec, Path(a.out), a.cluster)       # every problem at once, before the first point
            res = run_sweep(spec, a.out, make_runner(spec, Path(a.out)), workers=max(1, a.workers), raw=raw,
                            cluster=a.cluster, check=False, retries=max(0, a.retries))
    except ParameterError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print(f"q_min = {res['q_min']:.5g}, q_pred = {res['q_pred']:.5g}, error estimate "
          f"{_pct(res['error_estimate'])}" + (f", prediction error {_pct(res['prediction_error'])}"
                                              if res.get("prediction_error") is not None else ""))
    tf = res.get("tau_fei")
    if tf and tf["slope_adapted"] is not None and tf["slope_standard"] is not None:
        print(f"tau_FEI against tau_add: slope {tf['slope_adapted']:.3f} (adapted), {tf['slope_standard']:.3f} "
              f"(standard)")
    for w in res["warnings"]:
        print(f"warning: {w}")
    v = res.get("verdict")
    if v:
        print(f"verdict: {v['text']}")
    return 0
