"""The building benchmark's FACE point runner (Insam 2022 §12.2), in process: ``runner: building`` in a sweep.
tau_add delays the desired displacement by whole samples before the controller, a choice: the thesis does not say
where its delay was inserted."""
from __future__ import annotations

from collections.abc import Mapping

from rths_ros.core.models.building.tracking_controller import TrackingController
from rths_ros.params import ParameterError

__all__ = ["DelayedCommandController", "BUILDING_CONTROLLER_KEYS", "BuildingPointRunner"]


class DelayedCommandController(TrackingController):
    """Wraps a tracking controller and delays its desired displacement by ``n`` samples (tau_add of the
    building benchmark): the command path gets a pure extra delay, the feedback loop is unchanged."""

    def __init__(self, inner: TrackingController, n: int):
        super().__init__(inner.dt_s)
        self.inner, self.n = inner, int(n)
        self.reset()

    def reset(self) -> None:
        self.inner.reset()
        self._buf = [0.0] * (self.n + 1)
        self._i = 0

    def step(self, desired: float, measured: float) -> float:
        self._buf[self._i] = desired
        self._i = (self._i + 1) % (self.n + 1)
        return self.inner.step(self._buf[self._i], measured)


BUILDING_CONTROLLER_KEYS = ("kp", "ki_per_s", "lead_gain", "lead_zero_rad_s", "lead_pole_rad_s",
                           "quantise", "quantisation_bits", "saturation_m")


class BuildingPointRunner:
    """``run_point`` for the building benchmark (Insam 2022 §12.2) in process with
    :func:`rths_ros.core.models.building.benchmark.run_benchmark` and its reference controller.

    ``scenario``: ``case1``..``case4``, optionally with the ground motion, ``case1/kobe``.  Keys of a
    point or of the overrides: ``tau_add_s`` (extra delay of the desired displacement y1 before the
    controller, rounded to whole samples of 1/4096 s), the controller gains ``kp``, ``ki_per_s``,
    ``lead_*`` and its converters ``quantise``, ``quantisation_bits``, ``saturation_m``
    (:class:`rths_ros.core.models.building.tracking_controller.ReferenceControllerParams`), or any field of
    :class:`rths_ros.core.models.building.structure.BenchmarkParams`.  Record: ``z_cmd`` = y1 (numerical DoF 1, the
    desired actuator displacement), ``z_ach`` = x_m (measured actuator displacement); the thesis's
    floor-1 magnitude is q on ``z_cmd`` (the numerical substructure's response)."""

    def __init__(self, scenario: str = "case1", overrides: Mapping | None = None):
        head, _, quake = str(scenario).partition("/")
        if not head.startswith("case") or not head[4:].isdigit():
            raise ParameterError(f"scenario: {scenario!r} is not allowed with runner = building; expected "
                                 "'case1'..'case4' or 'case1/elcentro'")
        self.case = int(head[4:])
        self.earthquake = quake or "elcentro"
        self.overrides = dict(overrides or {})
        self._split({})                 # validate now

    def _split(self, point: Mapping):
        from rths_ros.core.models.building.structure import benchmark_params
        from rths_ros.core.models.building.tracking_controller import ReferenceController
        merged = {**self.overrides, **point}
        tau = float(merged.pop("tau_add_s", 0.0))
        gains = {k: merged.pop(k) for k in list(merged) if k in BUILDING_CONTROLLER_KEYS}
        params = benchmark_params(self.case, self.earthquake, **merged)
        if tau < 0:
            raise ParameterError(f"tau_add_s: {tau!r} is not allowed; expected >= 0 s")
        n = int(round(tau / params.dt_s))
        inner = ReferenceController(dt_s=params.dt_s, **gains)
        ctrl = inner if n == 0 else DelayedCommandController(inner, n)
        return params, ctrl, n

    def __call__(self, point: Mapping) -> dict:
        from rths_ros.core.models.building.benchmark import run_benchmark
        params, ctrl, n = self._split(point)
        rec = run_benchmark(controller=ctrl, params=params, evaluate=False)
        return {"t": rec["t"], "z_cmd": rec["y"][:, 0], "z_ach": rec["x_m"], "x_r1": rec["x_r"][:, 0],
                "aborted": bool(rec["aborted"]), "abort_reason": rec["abort_reason"], "dt": params.dt_s,
                "delay_samples": n}

    def reference(self, point: Mapping | None = None) -> dict:
        """The reference structure's floor-1 response x_r1 (``z_cmd = z_ach = x_r1``)."""
        rec = self({})
        return {"t": rec["t"], "z_cmd": rec["x_r1"], "z_ach": rec["x_r1"].copy(), "dt": rec["dt"]}
