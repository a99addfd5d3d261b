"""The 1-D contact test's numerical part (seed 000 ch. 4): a mass-spring-damper driven by a suspension motion,
integrated one of three ways: explicit Runge-Kutta (:mod:`.model`), Newmark (:mod:`.newmark`, seed 001) or
independent integration (:mod:`.independent`, seed 003).  The builders below are the model table's entries
(:mod:`rths_ros.core.models.registry`)."""
from __future__ import annotations

import numpy as np

from rths_ros.core.models.base import OneDofModel
from rths_ros.core.models.contact1d.independent import IndependentMSD
from rths_ros.core.models.contact1d.model import NumericalMSD, reference_solution
from rths_ros.core.models.contact1d.newmark import NewmarkMSD
from rths_ros.params import ParameterError

__all__ = ["build_rk", "build_newmark", "build_independent", "reference"]


def build_rk(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = contact_1d``: DOP853 steps of ``numerical.contact_1d.dt_s`` (= the loop step)."""
    p = numerical.contact_1d
    if abs(p.dt_s - dt_s) > 1e-15:
        raise ParameterError(f"numerical.contact_1d.dt_s: {p.dt_s!r} differs from loop.dt_s = {dt_s!r}; "
                             "they must be equal (one integration step per synchronisation step)")
    return OneDofModel(NumericalMSD(p))


def build_newmark(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = contact_1d_newmark`` (``numerical.newmark``)."""
    return OneDofModel(NewmarkMSD(numerical.contact_1d, numerical.newmark, dt_s))


def build_independent(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = contact_1d_independent`` (``numerical.independent``)."""
    return OneDofModel(IndependentMSD(numerical.contact_1d, numerical.independent, dt_s))


def reference(numerical, n_rows: int, dt_s: float) -> dict:
    """The reference solution (thesis §4.4) over ``n_rows`` samples (held after its end): ``z`` (z^r) and
    ``contact`` (the gate state at each sample)."""
    ref = reference_solution(numerical.contact_1d, t_end_s=(n_rows - 1) * dt_s)
    out = {}
    for key in ("z", "contact"):
        v = np.asarray(ref[key], dtype=float)
        if v.size < n_rows:
            v = np.concatenate([v, np.full(n_rows - v.size, v[-1])])
        out[key] = v[:n_rows]
    return out
