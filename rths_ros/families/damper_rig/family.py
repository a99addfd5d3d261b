"""The ``damper_rig`` family: declaration and parts (see the package doc)."""
from __future__ import annotations

from rths_ros.core.models.dubois import rths as dubois_rths
from rths_ros.families.base import Family, FamilyParts, ModelEntry
from rths_ros.families.own_rig import direct_force, validate_own_rig
from rths_ros.families.records import empty_record

NAME = "damper_rig"

MODELS = {
    "dubois_damper": ModelEntry(NAME, dubois_rths.build, "2-DOF chain with base excitation as modal "
                                "transfer functions (RK4), coupled to a hydraulic damper on a servo-hydraulic "
                                "actuator (numerical.dubois_damper; du Bois et al. 2010)", section="dubois_damper",
                                params=dubois_rths.DuboisScenarioParams),
}


def _path(s):
    from rths_ros.core.models.dubois.rths import TdcShaper
    from rths_ros.core.platform.linear_actuator import LinearActuatorPath
    return LinearActuatorPath(s.safety.interface_limit_m, TdcShaper(s.numerical.dubois_damper, s.loop.dt_s))


def _plant(s):
    """The actuator with the hydraulic damper (rths_ros.core.models.dubois.rths.DamperRigTwin), the sensor noise
    drawn for the trial's steps."""
    from rths_ros.core.models.dubois.rths import DamperRigTwin
    return DamperRigTwin(s.numerical.dubois_damper, s.loop.dt_s, s.steps + 1)


def _blend(s):
    from rths_ros.core.models.dubois.rths import DamperBlend
    return DamperBlend(s.numerical.dubois_damper, s.loop.dt_s)


FAMILY = Family(
    name=NAME,
    doc="a hydraulic damper on a servo-hydraulic actuator with transfer-dynamics cancellation (du Bois et al. 2010)",
    models=MODELS,
    parts=FamilyParts(_path, direct_force, _plant,
                      lambda s, trial: int(s.numerical.dubois_damper.noise_seed) + int(trial),
                      wrench_axes=(0,), legs=False, blend=_blend, force_reads_legs=False),
    widths=(1, 1, 1, 1),
    example="dubois_damper",
    trial="scalar",
    empty_record=empty_record,
    analyzer="rths_ros.families.damper_rig.analysis:analyze_bag",
    validate=validate_own_rig,
)
