"""FACE point runners: the ``run_point(params) -> record`` callables that actually run a point.

:class:`rths_ros.core.methods.linear_vrths.LinearPointRunner` (linear vRTHS of §12.1),
:class:`ScenarioPointRunner` (a project scenario, in process or through the ROS graph, one lockstep run
with its bag per point in ``OUT/runs/<point>``) and a family's own in-process runner (``Family.face_runner``,
named in the sweep by the family's name: the building benchmark's,
:class:`rths_ros.families.building.face.BuildingPointRunner`).  :func:`make_runner` builds the one a sweep names; the caller passes it to :func:`rths_ros.analysis.face.engine.run_sweep`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from rths_ros.analysis.face.spec import SweepSpec
from rths_ros.families import registry
from rths_ros.families.base import resolve
from rths_ros.families.registry import models as _registered_models
from rths_ros.params import ParameterError


def point_tag(point: Mapping) -> str:
    """Directory name of a point's run: ``<last key part>=<value>`` joined by ``_``, e.g.
    ``command_delay_steps=3``."""
    return "_".join(f"{k.split('.')[-1]}={v}" for k, v in point.items())


def scenario_point_data(scenario: str, overrides: Mapping | None = None, backend: str = "vrths", mode: str = "",
                        plant: str = "") -> dict:
    """The scenario data every point of a scenario runner starts from: the scenario with the sweep's overrides;
    graph backend: recording on, ``loop.mode`` = ``mode`` (default lockstep) and, if given, ``plant``.  The vrths
    backend runs the twin in process, so it leaves mode and plant as they are (:func:`check_sweep` refuses a
    realtime mode or another plant with it)."""
    from rths_ros.app import scenario as scn
    data = scn.load_data(scenario)
    for k, v in (overrides or {}).items():
        scn.set_dotted(data, k, v)
    if backend == "graph":
        scn.set_dotted(data, "loop.mode", mode or "lockstep")
        scn.set_dotted(data, "recording.enabled", True)
        if plant:
            scn.set_dotted(data, "plant", plant)
    return data


class ScenarioPointRunner:
    """``run_point`` for a project scenario: the scenario with ``overrides`` and the point's dotted keys
    (e.g. ``sim_plant.command_delay_steps``, ``platform.commander.added_delay_steps``,
    ``sim_plant.cascade.k_pp_per_s`` with ``sim_plant.cascade.preset: custom``), run in process
    (``backend="vrths"``, :func:`rths_ros.app.vrths.run_virtual`) or through the ROS graph (``backend="graph"``).

    Graph backend: every point is one :func:`rths_ros.runner.run_scenario` in ``out_dir/runs/<point>``
    (see :func:`point_tag`) with recording on (the record is read back from the bag with
    :func:`rths_ros.analysis.run_analysis.record_from_bag`), in lockstep mode unless ``mode`` says realtime
    (a lockstep point is reproducible; a rig runs in realtime), on the scenario's plant or ``plant``
    (sim, hardware, ros2_control), with every node in one process when ``composed``.  A run that fails or
    aborts is returned flagged ``aborted`` (with the reason) so that :func:`analyse` drops it; a run where the
    passivity controller intervened carries its nonzero ``f_d`` and is dropped as well.  Each run leases its own
    ROS domain id, so lockstep points can run in parallel; realtime points and points on a rig run one at a
    time (:attr:`one_at_a_time`)."""

    def __init__(self, scenario: str, overrides: Mapping | None = None, backend: str = "vrths",
                 out_dir: str | Path | None = None, mode: str = "", plant: str = "", composed: bool = False):
        if backend not in ("vrths", "graph"):
            raise ParameterError(f"backend: {backend!r} is not allowed; expected 'vrths' or 'graph'")
        if backend == "graph" and out_dir is None:
            raise ParameterError("out_dir: required for backend = graph")
        if backend == "vrths" and (mode == "realtime" or plant not in ("", "sim")):
            raise ParameterError(f"runner: 'vrths' is not allowed with mode {mode or 'lockstep'!r} and plant "
                                 f"{plant or 'sim'!r}; expected runner: graph (the in-process run is the twin in "
                                 "lockstep)")
        self.data = scenario_point_data(scenario, overrides, backend, mode, plant)
        self.backend = backend
        self.composed = bool(composed)
        self.out_dir = Path(out_dir).resolve() if out_dir is not None else None
        s = self.scenario(None)         # validate now
        #: realtime runs and runs on a rig do not run side by side: a rig is one machine, and concurrent realtime
        #: runs disturb each other's timing (run_sweep runs such points one after the other)
        self.one_at_a_time = backend == "graph" and (s.loop.mode == "realtime" or s.plant != "sim")
        self.setup = {"runner": backend, "plant": s.plant, "mode": s.loop.mode if backend == "graph" else "in process",
                      "composed": self.composed if backend == "graph" else None}

    def scenario(self, point: Mapping | None):
        import copy

        from rths_ros.app import scenario as scn
        data = copy.deepcopy(self.data)
        for k, v in (point or {}).items():
            scn.set_dotted(data, k, v)
        return scn.from_data(data)

    def __call__(self, point: Mapping) -> dict:
        s = self.scenario(point)
        if self.backend == "vrths":
            from rths_ros.app.vrths import run_virtual
            rec = run_virtual(s)
        else:
            rec = self._run_graph(s, point)
        rec = {k: v for k, v in rec.items() if not k.startswith("_")}
        rec["dt"] = s.loop.dt_s
        return rec

    def _run_graph(self, s, point: Mapping) -> dict:
        from rths_ros.analysis.run_analysis import record_from_bag
        from rths_ros.runner import RunError, run_scenario
        out = self.out_dir / "runs" / point_tag(point)
        if out.exists():                # an earlier attempt of this point (aborted): keep it beside, run afresh
            i = 1
            while out.with_name(f"{out.name}.attempt-{i}").exists():
                i += 1
            out.rename(out.with_name(f"{out.name}.attempt-{i}"))
        empty = {"t": np.zeros(0), "z_cmd": np.zeros(0), "z_ach": np.zeros(0), "aborted": True}
        try:
            res = run_scenario(s, out, composed=self.composed, progress=False, log=lambda *_: None)
        except RunError as exc:
            return {**empty, "abort_reason": f"run failed to start: {exc}"}
        bag = out / "bag"
        if not bag.exists():
            return {**empty, "abort_reason": res.message or "no bag recorded"}
        try:
            rec, _, _ = record_from_bag(bag)
        except Exception as exc:
            return {**empty, "abort_reason": f"bag not readable: {exc}"}
        if res.code != 0:
            rec["aborted"] = True
            rec["abort_reason"] = rec.get("abort_reason") or res.message.splitlines()[0]
        missing = rec.pop("missing_samples", None) or {}
        rec["missing_samples_total"] = int(sum(missing.values()))     # realtime: steps that never reached the bag
        rec["wall_s"] = res.wall_s
        return rec

    def reference(self, point: Mapping | None = None) -> dict:
        """The model's reference solution z^r (the contact test's: thesis §4.4, pure simulation with an ideal
        transfer system; rths_ros.core.models.entry) as a record (``z_cmd = z_ach = z^r``), for ``reference.source: runner``."""
        s = self.scenario(point)
        ref = _registered_models()[s.numerical.model].reference
        if ref is None:
            raise ParameterError(f"reference.source: 'runner' is not allowed for numerical.model = "
                                 f"{s.numerical.model!r}; the model has no reference solution")
        dt = s.loop.dt_s
        r = ref(s.numerical, s.steps + 1, dt)
        z = np.array(r["z"], dtype=float)
        return {"t": np.arange(z.size) * dt, "z_cmd": z, "z_ach": z.copy(),
                "contact": np.array(r["contact"], dtype=float)[: z.size], "dt": dt}


def make_runner(spec: SweepSpec, out_dir: str | Path | None = None) -> Callable[[dict], dict]:
    """The ``run_point`` callable named by the sweep's ``runner``."""
    if spec.runner == "linear_vrths":
        from rths_ros.core.methods.linear_vrths import LinearPointRunner
        return LinearPointRunner(spec.scenario, **dict(spec.overrides))
    fams = registry.families()
    if spec.runner in fams and fams[spec.runner].face_runner:     # a family's own in-process runner
        return resolve(fams[spec.runner].face_runner)(spec.scenario, spec.overrides)
    return ScenarioPointRunner(spec.scenario, spec.overrides, backend=spec.runner, out_dir=out_dir, mode=spec.mode,
                               plant=spec.plant, composed=spec.composed)
