"""The prosthetic-foot gait test (Insam 2022 Part III): the VPP amputee walker (:mod:`.vpp`), its initial conditions
(:mod:`.vpp_ic`), the 3-DoF sagittal interface (:mod:`.interface`) and its loop objects (:mod:`.rths`)."""
from __future__ import annotations

__all__ = ["build"]


def build(numerical, dt_s: float):
    """``numerical.model = vpp``: the walker as a :class:`~rths_ros.core.models.base.NumericalModel`."""
    from rths_ros.core.models.gait.rths import GaitModel, GaitNumerical
    return GaitModel(GaitNumerical(numerical.vpp, numerical.gait, dt_s))
