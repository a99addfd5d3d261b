"""``rths building-benchmark``: J1-J9 of the building benchmark for the nominal plant or a seeded perturbed set.

* ``--runs 0`` (default): one run of :func:`rths_ros.core.models.building.benchmark.run_benchmark` with the nominal plant.
* ``--runs R``: :func:`rths_ros.core.models.building.benchmark.run_perturbed` with seeds 1..R; the table gives the mean
  and the sample standard deviation (ddof 1) of every criterion over the runs that completed (aborted
  runs are listed with their reason and left out of the statistics).
* ``--convention paper|matlab`` selects the definitions and the order of J1-J9
  (:mod:`rths_ros.core.models.building.criteria`); the printed table and both files state it.
* ``--controller MODULE:CLASS`` loads a :class:`rths_ros.core.models.building.tracking_controller.TrackingController`
  subclass by import path (the module must be importable, e.g. on ``PYTHONPATH``).  The class is
  instantiated with no arguments, once per run; its ``dt_s`` must be the benchmark's 1/4096 s.

Outputs in ``--out``: ``benchmark.json`` (settings, per-run table, statistics) and ``benchmark.md``.
"""
from __future__ import annotations

import importlib
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rths_ros.core.models.building.criteria import CRITERIA
from rths_ros.core.models.building.tracking_controller import TrackingController
from rths_ros.params import ParameterError

CONVENTION_TEXT = {
    "paper": "paper convention: J1 = lag (ms) maximising the Pearson correlation over 0-0.1 s; "
             "J2-J9 with ‖s‖ = RMS; J4-J6 RMS errors of floors 1-3, J7-J9 peak errors of floors 1-3",
    "matlab": "matlab convention: J1 = lag over 0-49 samples rounded to 0.1 ms; J2-J9 with ‖s‖ = standard "
              "deviation; J4 RMS floor 1, J5 peak floor 1, J6-J7 RMS floors 2-3, J8-J9 peak floors 2-3",
}
UNITS = {"J1": "ms"}


def load_controller(spec: str) -> Callable[[], TrackingController]:
    """A factory for the TrackingController subclass named ``module:Class``."""
    module_name, sep, cls_name = str(spec).partition(":")
    if not sep or not module_name or not cls_name:
        raise ParameterError(f"--controller: {spec!r} is not allowed; expected MODULE:CLASS, e.g. "
                             "my_package.controllers:MyController")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ParameterError(f"--controller: module {module_name!r} cannot be imported ({exc})") from None
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise ParameterError(f"--controller: module {module_name!r} has no attribute {cls_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, TrackingController)):
        raise ParameterError(f"--controller: {spec!r} is not a subclass of "
                             "rths_ros.core.models.building.tracking_controller.TrackingController")

    def make() -> TrackingController:
        return cls()
    make()          # fail now (missing constructor arguments, bad dt_s) rather than inside a run
    return make


def _fmt(x: float) -> str:
    return "nan" if x is None or not math.isfinite(x) else f"{x:.2f}"


def markdown_table(result: dict) -> str:
    """The J1-J9 table of a nominal (``J``) or perturbed (``mean``/``std``) result."""
    head = "| | " + " | ".join(f"{c} {UNITS.get(c, '%')}" for c in CRITERIA) + " |"
    rule = "|---" * (len(CRITERIA) + 1) + "|"
    if result["runs"] == 0:
        rows = ["| nominal | " + " | ".join(_fmt(result["J"].get(c)) for c in CRITERIA) + " |"]
    else:
        rows = [f"| {name} | " + " | ".join(_fmt(result[name].get(c)) for c in CRITERIA) + " |"
                for name in ("mean", "std", "min", "max") if result.get(name)]
        rows.append("| mean ± std | " + " | ".join(
            f"{_fmt(result['mean'].get(c))} ± {_fmt(result['std'].get(c))}" if result.get("std") else
            _fmt(result["mean"].get(c)) for c in CRITERIA) + " |")
    return "\n".join([head, rule, *rows])


def run(case: int = 1, earthquake: str = "elcentro", runs: int = 0, convention: str = "paper",
        controller: str | None = None, duration_s: float = 0.0) -> dict:
    """Run the benchmark and return a JSON-ready result (see module doc)."""
    from rths_ros.core.models.building.benchmark import run_benchmark, run_perturbed
    if runs < 0:
        raise ParameterError(f"--runs: {runs!r} is not allowed; expected 0 (nominal) or a positive count")
    if convention not in CONVENTION_TEXT:
        raise ParameterError(f"--convention: {convention!r} is not allowed; expected paper or matlab")
    make = load_controller(controller) if controller else None
    overrides = {"duration_s": duration_s} if duration_s else {}
    t0 = time.perf_counter()
    out = {"case": case, "earthquake": earthquake, "runs": runs, "convention": convention,
           "convention_text": CONVENTION_TEXT[convention], "controller": controller or "reference (PI + phase lead)",
           "duration_s": duration_s or None, "criteria": list(CRITERIA)}
    if runs == 0:
        rec = run_benchmark(case, earthquake, make() if make else None, convention=convention, **overrides)
        out["aborted"] = bool(rec["aborted"])
        out["abort_reason"] = rec["abort_reason"]
        out["J"] = {c: float(rec["J"][c]) for c in CRITERIA} if not rec["aborted"] else {}
        out["J1_at_window_edge"] = bool(rec["J"]["J1_at_window_edge"]) if not rec["aborted"] else None
        out["limits"] = {k: (bool(v) if isinstance(v, (bool, np.bool_)) else float(v)) for k, v in rec["limits"].items()}
    else:
        res = run_perturbed(case, runs, earthquake, controller=make, convention=convention, **overrides)
        out["seeds"] = res["seeds"]
        out["table"] = [[None if not math.isfinite(v) else float(v) for v in row] for row in res["table"]]
        out["aborted"] = {str(k): v for k, v in res["aborted"].items()}
        for name in ("mean", "std", "min", "max"):
            out[name] = {c: float(v) for c, v in res.get(name, {}).items()}
        out["plants"] = [{"beta1_per_s": p.beta1, "beta2_per_s2": p.beta2, "a3_per_s": p.a3, "k_e_n_per_m": p.k_e}
                         for p in res["plants"]] if res["plants"] and hasattr(res["plants"][0], "beta1") else []
    out["wall_s"] = time.perf_counter() - t0
    return out


def write(result: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    js = out_dir / "benchmark.json"
    js.write_text(json.dumps(result, indent=1, allow_nan=False, default=lambda o: None))
    what = "nominal plant" if result["runs"] == 0 else f"{result['runs']} perturbed plants (seeds 1..{result['runs']})"
    lines = [f"# Building benchmark: case {result['case']}, {result['earthquake']}, {what}", "",
             f"Controller: `{result['controller']}`.", "", f"Convention: {result['convention_text']}.", "",
             markdown_table(result), ""]
    if result["runs"] == 0 and result.get("aborted"):
        lines += [f"The run aborted: {result['abort_reason']}", ""]
    if result["runs"] > 0 and result.get("aborted"):
        lines += ["Aborted runs (left out of the statistics):", ""] + \
                 [f"- seed {k}: {v}" for k, v in result["aborted"].items()] + [""]
    md = out_dir / "benchmark.md"
    md.write_text("\n".join(lines))
    return js, md


def run_cli(a) -> int:
    out = Path(a.out) if a.out else Path("runs") / f"benchmark-{time.strftime('%Y%m%d-%H%M%S')}"
    if str(a.case) == "all":       # every partitioning case, one directory and table each
        codes = [_run_case(a, case, out / f"case{case}") for case in (1, 2, 3, 4)]
        return max(codes)
    return _run_case(a, int(a.case), out)


def _run_case(a, case: int, out: Path) -> int:
    what = "the nominal plant" if a.runs == 0 else f"{a.runs} perturbed plants (seeds 1..{a.runs})"
    print(f"rths building-benchmark: case {case}, {a.earthquake}, {what}, controller "
          f"{a.controller or 'reference (PI + phase lead)'}")
    res = run(case, a.earthquake, a.runs, a.convention, a.controller, a.duration)
    print(f"J1-J9, {res['convention_text']}:")
    print(markdown_table(res))
    if a.runs == 0 and res["aborted"]:
        print(f"rths building-benchmark: the run aborted: {res['abort_reason']}", file=sys.stderr)
    if a.runs > 0 and res["aborted"]:
        print(f"rths building-benchmark: {len(res['aborted'])} of {a.runs} runs aborted (left out): "
              + "; ".join(f"seed {k}: {v}" for k, v in res["aborted"].items()), file=sys.stderr)
    js, md = write(res, out)
    print(f"-> {js}, {md}  ({res['wall_s']:.1f} s)")
    if a.runs == 0 and res["aborted"]:
        return 1
    if a.runs > 0 and len(res["aborted"]) == a.runs:
        return 1
    return 0
