"""What a numerical model is to the rest of the package: :class:`ModelEntry`.

Every model belongs to a *family* (rths_ros.families) that says how the rest of the loop serves it; the family
lists its models, and a model added to an existing family from another package registers its entry in the
entry-point group ``rths_ros.models`` (docs/extending.md).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rths_ros.core.models.base import NumericalModel

__all__ = ["ModelEntry"]


@dataclass(frozen=True)
class ModelEntry:
    """One numerical model: its family, its builder ``(scenario.numerical, loop.dt_s) -> NumericalModel``, a
    one-line description, optionally its reference solution ``(scenario.numerical, n_rows, dt_s) -> {"z": z^r,
    "contact": gate}`` (the interface motion of the ideal coupled system and its contact state, arrays of n_rows;
    None: the analysis reports no reference error) and optionally
    its own parameter section ``numerical.<section>`` of dataclass ``params``.  ``qualification``: the transfer-system
    qualification on the twin (``rths qualify``, rths_ros.analysis.twin_qualification) supports the model.
    ``reference_report`` ``(scenario.numerical, dt_s, t_end_s) -> dict``: the reference solution as ``rths reference``
    prints and plots it (keys ``title, t, contact, series, events, marks, method``; see
    :func:`rths_ros.core.models.contact1d.reference_report`), None when the model has none.  ``validate``
    ``(scenario) -> None``: the model's own checks of a whole scenario (raise ParameterError naming the key)."""

    family: str
    build: Callable[[Any, float], NumericalModel]
    doc: str
    reference: Callable[[Any, int, float], dict] | None = None
    section: str = ""
    params: type | None = None
    qualification: bool = False
    reference_report: Callable[[Any, float, float], dict] | None = None
    validate: Callable[[Any], None] | None = None
