"""The vRTHS building benchmark (Silva et al. 2020): the structure and its simulation, the benchmark criteria
J1-J9 (:mod:`.criteria`), the tracking controllers (:mod:`.tracking_controller`) and its loop objects
(:mod:`.rths`)."""
from __future__ import annotations

__all__ = ["build"]


def build(numerical, dt_s: float):
    """``numerical.model = building``: the building without the specimen as a
    :class:`~rths_ros.core.models.base.NumericalModel`."""
    from rths_ros.core.models.building.rths import BuildingModel, BuildingNumerical
    return BuildingModel(BuildingNumerical(numerical.building))
