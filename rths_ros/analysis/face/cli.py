"""FACE command line: ``python -m rths_ros.analysis.face`` and ``rths face``."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from rths_ros.analysis.face.engine import reanalyse, run_sweep
from rths_ros.analysis.face.execution import make_runner
from rths_ros.analysis.face.outputs import _pct
from rths_ros.analysis.face.spec import load_sweep
from rths_ros.params import ParameterError


def main(argv: list[str] | None = None, prog: str = "face") -> int:
    """``python -m rths_ros.analysis.face SWEEP.yaml --out DIR [--workers N] [--reanalyse] [--cluster ADDRESS]``
    (also ``rths face``)."""
    import argparse
    ap = argparse.ArgumentParser(prog=prog, description="FACE fidelity assessment sweep")
    ap.add_argument("sweep", help="sweep YAML (with --reanalyse: optional, default OUT/sweep.yaml)", nargs="?")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parallel processes (default: the number of cores)")
    ap.add_argument("--reanalyse", action="store_true", help="analyse the saved points again, do not run")
    ap.add_argument("--cluster", default=None, metavar="ADDRESS",
                    help="run the points on a Dask distributed cluster: local:N (N local worker processes) or a "
                         "scheduler address such as tcp://host:8786")
    a = ap.parse_args(argv)
    try:
        if a.reanalyse:
            spec = load_sweep(a.sweep)[0] if a.sweep else None
            res = reanalyse(a.out, spec)
        else:
            if not a.sweep:
                ap.error("a sweep file is required unless --reanalyse")
            spec, raw = load_sweep(a.sweep)
            res = run_sweep(spec, a.out, make_runner(spec, Path(a.out)), workers=max(1, a.workers), raw=raw,
                            cluster=a.cluster)
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
    return 0
