"""The ``linear_motor`` family: declaration and parts (see the package doc)."""
from __future__ import annotations

from rths_ros.core.models.bartl import rths as bartl_rths
from rths_ros.families.base import Family, FamilyParts, ModelEntry
from rths_ros.families.own_rig import direct_force, validate_own_rig
from rths_ros.families.records import empty_record

NAME = "linear_motor"

MODELS = {
    "cubic_spring": ModelEntry(NAME, bartl_rths.build, "mass-spring-damper with a harmonic force, Newmark, "
                               "coupled to a cubic spring on a linear motor (numerical.cubic_spring; Bartl 2019 §6.2)",
                               bartl_rths.reference, section="cubic_spring",
                               params=bartl_rths.CubicSpringScenarioParams, validate=bartl_rths.validate_scenario),
}


def _path(s):
    from rths_ros.core.platform.linear_actuator import LinearActuatorPath
    return LinearActuatorPath(s.safety.interface_limit_m,
                              follow_command=s.numerical.cubic_spring.displacement_control)


def _aff(s):
    """The rig's harmonic AFF with the interface gap (rths_ros.core.models.bartl.rths.CubicSpringAff)."""
    from rths_ros.core.models.bartl.rths import CubicSpringAff
    return CubicSpringAff(s.numerical.cubic_spring, s.loop.dt_s)


def _plant(s):
    """The linear motor with the cubic spring (rths_ros.core.models.bartl.rths.CubicSpringTwin)."""
    from rths_ros.core.models.bartl.rths import CubicSpringTwin
    return CubicSpringTwin(s.numerical.cubic_spring)


def _seed(s, trial: int) -> int:
    """The rig's own numerical.cubic_spring.seed + trial (trial 0 draws the noise of the in-process rig study)."""
    return int(s.numerical.cubic_spring.seed) + int(trial)


FAMILY = Family(
    name=NAME,
    doc="one interface DoF on a linear motor's axis (Bartl 2019 §6.2)",
    models=MODELS,
    parts=FamilyParts(_path, direct_force, _plant, _seed, wrench_axes=(0,), legs=False, aff=_aff,
                      aff_gap="interface", force_reads_legs=False),
    widths=(1, 1, 1, 1),
    example="cubic_spring_pbc",
    trial="scalar",
    empty_record=empty_record,
    analyzer="rths_ros.families.linear_motor.analysis:analyze_bag",
    validate=validate_own_rig,
)
