"""The check of a FACE sweep before its first point runs: everything that would stop it half-way, reported at once.

A sweep on a rig costs an afternoon; a problem found at point 7 (a value the scenario refuses, a window beyond the
record, a plant that cannot run in the chosen mode) wastes it.  :func:`check_sweep` therefore builds every point's
scenario and checks, without running anything:

* the runner can be built (scenario found, overrides valid);
* the plant and the mode go together (scenario rules, e.g. ``plant: ros2_control`` needs ``mode: realtime``; the
  in-process runner is the twin in lockstep only);
* every point's overrides load as a valid scenario (all points, each distinct message once, naming the values);
* the reference is available (``reference.source: runner``: the model has a reference solution);
* the e and q windows end inside the record (``loop.duration_s``), else every point would be dropped;
* the parallelism suits the runs: realtime points and points on a rig run one at a time, so a Dask cluster is
  refused for them (``workers`` > 1 is only noted: :func:`~rths_ros.analysis.face.engine.run_sweep` runs them
  one after the other anyway).

:func:`require_runnable` raises one :class:`~rths_ros.params.ParameterError` listing every problem;
``rths face`` calls it before the first point.
"""
from __future__ import annotations

import copy
from pathlib import Path

from rths_ros.analysis.face.spec import SweepSpec
from rths_ros.params import ParameterError

__all__ = ["check_sweep", "require_runnable", "SweepNotRunnable"]


class SweepNotRunnable(ParameterError):
    """Every problem that keeps a sweep from running (``problems``: one message each)."""

    def __init__(self, name: str, problems: list[str]):
        self.problems = list(problems)
        n = len(self.problems)
        super().__init__(f"sweep {name!r} cannot run ({n} problem{'s' if n != 1 else ''}; nothing was run):\n"
                         + "\n".join(f"  - {p}" for p in self.problems))


def _value(v):
    return int(v) if float(v).is_integer() else float(v)


def _window_end(window: tuple) -> float | None:
    return float(window[-1]) if window else None


def _scenario_problems(spec: SweepSpec, problems: list[str]) -> None:
    from rths_ros.analysis.face.execution import scenario_point_data
    from rths_ros.app import scenario as scn
    from rths_ros.families.registry import models as _registered_models
    MODELS = _registered_models()
    if spec.runner == "vrths" and (spec.mode == "realtime" or spec.plant not in ("", "sim")):
        problems.append(f"runner: 'vrths' is not allowed with mode {spec.mode or 'lockstep'!r} and plant "
                        f"{spec.plant or 'sim'!r}; expected runner: graph (the in-process run is the twin in lockstep)")
    try:
        base = scenario_point_data(spec.scenario, spec.overrides, spec.runner, spec.mode, spec.plant)
    except ParameterError as exc:
        problems.append(f"scenario: {exc}")
        return
    failures: dict[str, list] = {}
    good = None
    for v in spec.vary.values:
        data = copy.deepcopy(base)
        try:
            scn.set_dotted(data, spec.vary.parameter, _value(v))
            s = scn.from_data(data)
        except ParameterError as exc:
            failures.setdefault(str(exc), []).append(_value(v))
            continue
        good = good or s
    n = len(spec.vary.values)
    for msg, vals in failures.items():
        which = "every value" if len(vals) == n else f"{spec.vary.parameter} = {', '.join(map(str, vals))}"
        problems.append(f"point ({which}): {msg}")
    # the model and the record length: of a valid point, else as the scenario data says (defaults where it is silent)
    if good is not None:
        model, dur = good.numerical.model, good.loop.duration_s
    else:
        from rths_ros.app.scenario import LoopParams
        num, loop = base.get("numerical"), base.get("loop")
        model = num.get("model", "contact_1d") if isinstance(num, dict) else "contact_1d"
        dur = loop.get("duration_s", LoopParams().duration_s) if isinstance(loop, dict) else LoopParams().duration_s
        if model not in MODELS or not isinstance(dur, (int, float)):
            return
    if spec.reference.source == "runner" and MODELS[model].reference is None:
        problems.append(f"reference.source: 'runner' is not allowed for numerical.model = {model!r}; "
                        "the model has no reference solution (use source: value or none)")
    for key, window in (("e.window_s", spec.e.window_s), ("q.window_s", spec.q.window_s)):
        end = _window_end(window)
        if end is not None and end > dur + 1e-12:
            problems.append(f"{key}: {list(window)!r} ends after loop.duration_s = {dur:g} s; expected a window "
                            "inside the record (every point would be dropped)")


def check_sweep(spec: SweepSpec, out_dir: str | Path | None = None, cluster: str | None = None) -> list[str]:
    """Every problem that would stop ``spec`` before or while its points run (empty: it can run).  Nothing is run."""
    problems: list[str] = []
    if spec.runner in ("vrths", "graph"):
        _scenario_problems(spec, problems)
        one_at_a_time = spec.runner == "graph" and (spec.mode == "realtime" or spec.plant not in ("", "sim"))
        if cluster and one_at_a_time:
            problems.append(f"--cluster {cluster}: is not allowed for realtime runs or runs on a rig; expected no "
                            "cluster (such points run one at a time)")
        return problems
    from rths_ros.analysis.face.execution import make_runner
    try:
        runner = make_runner(spec, out_dir)
    except (ParameterError, TypeError, ValueError) as exc:
        problems.append(f"runner {spec.runner}: {exc}")
        return problems
    if spec.reference.source == "runner" and getattr(runner, "reference", None) is None:
        problems.append(f"reference.source: 'runner' is not allowed with runner = {spec.runner}; this runner has no "
                        "reference solution (use source: value)")
    return problems


def require_runnable(spec: SweepSpec, out_dir: str | Path | None = None, cluster: str | None = None) -> None:
    """Raise :class:`SweepNotRunnable` listing every problem of :func:`check_sweep`; return when there is none."""
    problems = check_sweep(spec, out_dir, cluster)
    if problems:
        raise SweepNotRunnable(spec.name, problems)
