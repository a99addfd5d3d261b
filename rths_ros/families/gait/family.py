"""The ``gait`` family: declaration and parts (see the package doc)."""
from __future__ import annotations

import numpy as np

from rths_ros.core.models import gait
from rths_ros.core.models.gait.rths import GaitCommandParams
from rths_ros.core.models.gait.vpp_params import VppParams
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.families.base import Family, FamilyParts, ModelEntry
from rths_ros.families.records import empty_vector_record
from rths_ros.families.stewart import stewart_seed, stewart_twin
from rths_ros.params import ParameterError

NAME = "gait"

MODELS = {
    "vpp": ModelEntry(NAME, gait.build, "VPP amputee walker of the prosthetic-foot gait test (numerical.vpp, "
                      "numerical.gait; Insam 2022 ch. 15-17)"),
}


def build_gait_platform(s):
    """GaitPlatform of the gait test, with its start pose = inverse kinematics of the model's initial command."""
    from rths_ros.core.models.gait.rths import GaitNumerical, GaitPlatform
    plat = GaitPlatform(s.platform.gait, StewartKinematics(s.platform.geometry), s.platform.commander.vff,
                        s.loop.dt_s)
    q0 = GaitNumerical(s.numerical.vpp, s.numerical.gait, s.loop.dt_s).q
    plat.set_start(q0)
    return plat


#: the start lengths computed in this process, by the parameters they depend on (:func:`gait_start_lengths`)
_START_LENGTHS: dict = {}


def gait_start_lengths(s):
    """Leg lengths of the gait test's start pose (the same numbers the platform node computes).  Computed once per
    process for the same parameters (building a gait platform and the model's initial command for them was a third
    of the construction of an in-process gait run); each caller gets its own copy."""
    key = (s.platform.gait, s.platform.geometry, s.platform.commander.vff, s.loop.dt_s, s.numerical.vpp,
           s.numerical.gait)
    try:
        hit = _START_LENGTHS.get(key)
    except TypeError:            # (a parameter object that cannot be hashed: computed every time)
        return build_gait_platform(s).start_lengths.copy()
    if hit is None:
        hit = _START_LENGTHS[key] = build_gait_platform(s).start_lengths.copy()
        hit.setflags(write=False)
    return hit.copy()


def _gait_force(s):
    from rths_ros.core.models.gait.rths import GaitForceProcessor
    return GaitForceProcessor(s.platform.gait, StewartKinematics(s.platform.geometry))


def empty_gait_record(n: int) -> dict:
    """Record of the gait test: 3-DoF interface command / achieved state / load per step (plate frame, see
    :mod:`rths_ros.core.models.gait.rths`), contact and CoP, and the leg and wrench channels."""
    rec = empty_vector_record(n, 3)
    rec["cop_x"] = np.full(n, np.nan)
    return rec


def validate(s) -> None:
    """The foot on the twin, and none of the 1-D interface's controllers."""
    if s.plant == "sim" and s.sim_plant.specimen_kind != "prosthetic_foot":
        raise ParameterError(f"sim_plant.specimen_kind: {s.sim_plant.specimen_kind!r} is not allowed with "
                             f"numerical.model = {s.numerical.model!r}; expected 'prosthetic_foot'")
    for sec in ("passivity", "ilc", "aff"):
        if getattr(s, sec).enabled:
            raise ParameterError(f"{sec}.enabled: true is not allowed with numerical.model = {s.numerical.model!r} "
                                 "(the controllers act on the 1-D contact interface only)")


FAMILY = Family(
    name=NAME,
    doc="the prosthetic-foot gait test: 3-DoF sagittal interface on the Stewart platform",
    models=MODELS,
    parts=FamilyParts(build_gait_platform, _gait_force, lambda s: stewart_twin(s, gait_start_lengths(s)),
                      stewart_seed, wrench_axes=(0, 1, 5)),
    widths=(3, 3, 3, 3),
    example="gait_vpp",
    trial="vector",
    empty_record=empty_gait_record,
    analyzer="rths_ros.families.gait.analysis:analyze_gait_bag",
    bench="rths_ros.families.gait.bench:bench_core_gait",
    validate=validate,
    stewart=True,
    geometry_note="the gait test maps its interface with platform.gait (the foot), not platform.interface",
    sections={
        "vpp": (VppParams, "VPP gait model, amputee right leg (Insam 2022 ch. 15-16, Table A.7)"),
        "gait": (GaitCommandParams, "initial conditions and swing policy of the gait interface command"),
    },
)
