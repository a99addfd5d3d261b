"""The ``building`` family: declaration and parts (see the package doc)."""
from __future__ import annotations

from rths_ros.core.models import building
from rths_ros.core.models.building.rths import BuildingScenarioParams
from rths_ros.core.platform.paths import ScalarForcePath
from rths_ros.families.base import Family, FamilyParts, ModelEntry
from rths_ros.params import ParameterError

NAME = "building"

MODELS = {
    "building": ModelEntry(NAME, building.build, "the servo-hydraulic vRTHS building benchmark "
                           "(numerical.building, tracking_controller)"),
}


def _platform(s):
    """The benchmark's tracking controller (rths_ros.core.models.building.rths.BuildingPlatform)."""
    from rths_ros.core.models.building.rths import BuildingPlatform, make_controller
    return BuildingPlatform(make_controller(s.tracking_controller, s.loop.dt_s))


def _force(s) -> ScalarForcePath:
    from rths_ros.core.models.building.rths import BuildingForce
    return ScalarForcePath(BuildingForce())


def _plant(s):
    """The benchmark's servo-hydraulic actuator and specimen."""
    from rths_ros.core.models.building.rths import ServoActuatorTwin
    return ServoActuatorTwin(s.numerical.building)


def _seed(s, trial: int) -> int:
    """The benchmark's own numerical.building.noise_seed + trial (trial 0 draws the noise of the core
    run_benchmark)."""
    return int(s.numerical.building.noise_seed) + int(trial)


def _empty_record(n: int) -> dict:
    from rths_ros.core.models.building.rths import empty_building_record
    return empty_building_record(n)


def validate(s) -> None:
    """The servo-hydraulic benchmark: simulated plant, no contact-test controllers, one sample time."""
    if s.plant != "sim":
        raise ParameterError(f"plant: {s.plant!r} is not allowed with numerical.model = 'building' (the "
                             "benchmark's transfer system is virtual); expected 'sim'")
    for sec in ("passivity", "ilc", "aff"):
        if getattr(s, sec).enabled:
            raise ParameterError(f"{sec}.enabled: true is not allowed with numerical.model = 'building' (the "
                                 "benchmark's tracking controller is tracking_controller)")
    for key, value in (("numerical.building.dt_s", s.numerical.building.dt_s),
                       ("tracking_controller.reference.dt_s", s.tracking_controller.reference.dt_s)):
        if abs(value - s.loop.dt_s) > 1e-15:
            raise ParameterError(f"{key}: {value!r} differs from loop.dt_s = {s.loop.dt_s!r}; they must be "
                                 "equal (one update per synchronisation step)")
    if s.tracking_controller.kind == "python" and not s.tracking_controller.class_path:
        raise ParameterError("tracking_controller.class_path: missing; kind = 'python' needs 'module:Class'")


FAMILY = Family(
    name=NAME,
    doc="the vRTHS building benchmark: servo-hydraulic actuator and specimen, tracking controller, J1-J9",
    models=MODELS,
    parts=FamilyParts(_platform, _force, _plant, _seed, wrench_axes=(0,), legs=False, force_reads_legs=False),
    widths=(3, 1, 1, 1),
    example="benchmark_building",
    trial="rths_ros.families.building.trial:run_trial",
    empty_record=_empty_record,
    analyzer="rths_ros.families.building.analysis:analyze_building_bag",
    validate=validate,
    face_runner="rths_ros.families.building.face:BuildingPointRunner",
    sections={"building": (BuildingScenarioParams, "servo-hydraulic building benchmark (Silva et al. 2020): "
                           "structure, ground motion, transfer system, sensors, limits, plant draw "
                           "(docs/benchmark_building.md)")},
)
