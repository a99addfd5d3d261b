"""The ``shaker_pair`` family: declaration and parts (see the package doc)."""
from __future__ import annotations

from rths_ros.core.models.bartl import beams_rths
from rths_ros.families.base import Family, FamilyParts, ModelEntry
from rths_ros.families.own_rig import validate_own_rig
from rths_ros.families.records import empty_vector_record

NAME = "shaker_pair"

MODELS = {
    "coupled_beams": ModelEntry(NAME, beams_rths.build, "Craig-Bampton cantilever (Newmark) coupled through "
                                "a two-DoF plate interface to a second beam driven by two shakers, harmonic AFF "
                                "(numerical.coupled_beams; Bartl 2019 §6.1)", section="coupled_beams",
                                params=beams_rths.CoupledBeamsParams, validate=beams_rths.validate_scenario),
}


def _path(s):
    from rths_ros.core.models.bartl.beams_rths import ShakerPath
    return ShakerPath(s.safety.interface_limit_m, s.numerical.coupled_beams.force_limit_n)


def _force(s):
    from rths_ros.core.models.bartl.beams_rths import PlateForce
    return PlateForce()


def _plant(s):
    """The EXP beam with the plate and the two shakers (rths_ros.core.models.bartl.beams_rths.BeamRigTwin)."""
    from rths_ros.core.models.bartl.beams_rths import BeamRigTwin
    return BeamRigTwin(s.numerical.coupled_beams, s.loop.dt_s)


def _aff(s):
    """The rig's two-DoF harmonic AFF with the interface gap (rths_ros.core.models.bartl.beams_rths.CoupledBeamsAff)."""
    from rths_ros.core.models.bartl.beams_rths import CoupledBeamsAff
    return CoupledBeamsAff(s.numerical.coupled_beams, s.loop.dt_s)


def empty_shaker_record(n: int) -> dict:
    """Record of the two-shaker rig (:mod:`rths_ros.core.models.bartl.beams_rths`): the vector record of width 2."""
    return empty_vector_record(n, 2)


FAMILY = Family(
    name=NAME,
    doc="two force-controlled shakers on a two-DoF plate interface (Bartl 2019 §6.1)",
    models=MODELS,
    # the twin is noise-free: the trial index is its seed
    parts=FamilyParts(_path, _force, _plant, lambda s, trial: int(trial), wrench_axes=(2, 4), legs=False, aff=_aff,
                      aff_gap="interface", force_reads_legs=False),
    widths=(2, 2, 2, 2),
    example="coupled_beams_aff",
    trial="vector",
    empty_record=empty_shaker_record,
    analyzer="rths_ros.families.shaker_pair.analysis:analyze_shaker_pair_bag",
    validate=validate_own_rig,
)
