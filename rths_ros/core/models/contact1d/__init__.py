"""The 1-D contact test's numerical part (Insam 2022 ch. 4): a mass-spring-damper driven by a suspension motion,
integrated one of three ways: explicit Runge-Kutta (:mod:`.model`), Newmark (:mod:`.newmark`, Bartl 2019) or
independent integration (:mod:`.independent`, du Bois (IMAC, ch. 25)).  The builders below are the model table's entries
(:mod:`rths_ros.core.models.entry`)."""
from __future__ import annotations

import dataclasses

import numpy as np

from rths_ros.core.models.base import OneDofModel
from rths_ros.core.models.contact1d.independent import IndependentMSD
from rths_ros.core.models.contact1d.model import NumericalMSD, reference_solution
from rths_ros.core.models.contact1d.newmark import NewmarkMSD
from rths_ros.params import ParameterError

__all__ = ["build_rk", "build_newmark", "build_independent", "reference", "reference_report"]


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


def reference_report(numerical, dt_s: float, t_end_s: float) -> dict:
    """The reference solution (thesis §4.4) as ``rths reference`` shows it: the signals over ``0..t_end_s`` and the
    events of the contact phase.  ``dt_s`` is the scenario's sampling step (the solution is exact at every
    sample; the gate's event times are located 2**-10 of a step finer)."""
    p = dataclasses.replace(numerical.contact_1d, dt_s=float(dt_s))
    r = reference_solution(p, t_end_s=t_end_s)
    contact = np.asarray(r["contact"], dtype=bool)
    peak = float(r["peak_contact_force_n"])
    return {
        "title": (f"contact_1d reference: ideal transfer system (m_NUM={p.m_num_kg:g} kg, d_NUM="
                  f"{p.d_num_kg_per_s:g} kg/s, k_NUM={p.k_num_n_per_m:g} N/m, m_EXP={p.m_exp_kg:g} kg, "
                  f"k_EXP={p.k_exp_n_per_m:g} N/m)"),
        "t": np.asarray(r["t"]),
        "contact": contact,
        "series": [
            {"key": "z_ref_m", "label": "interface z^r", "unit": "m", "panel": "displacement", "values": r["z"]},
            {"key": "z_d_m", "label": "suspension z_d", "unit": "m", "panel": "displacement", "values": r["z_d"]},
            {"key": "z_exp_m", "label": "experimental mass y", "unit": "m", "panel": "displacement",
             "values": r["z_exp"]},
            {"key": "f_int_n", "label": "interface force F_int", "unit": "N", "panel": "force", "values": r["f_int"]},
            {"key": "ground_force_n", "label": "ground force N", "unit": "N", "panel": "force",
             "values": r["ground_force"]},
        ],
        "events": [
            {"key": "touchdown_s", "label": "touch-down", "value": float(r["touchdown_s"]), "unit": "s"},
            {"key": "liftoff_s", "label": "lift-off", "value": float(r["liftoff_s"]), "unit": "s"},
            {"key": "min_z_m", "label": "minimum of z^r", "value": float(r["min_z_m"]), "unit": "m"},
            {"key": "t_min_z_s", "label": "time of the minimum", "value": float(r["t_min_z_s"]), "unit": "s"},
            {"key": "peak_contact_force_n", "label": "peak contact force m_EXP g - F_int", "value": peak,
             "unit": "N"},
            {"key": "n_impacts", "label": "ground contacts (incl. rebounds)", "value": int(r["n_impacts"]),
             "unit": ""},
        ],
        "marks": [("touch-down", float(r["touchdown_s"])), ("lift-off", float(r["liftoff_s"]))],
        "method": ("exact propagation of the three linear modes (flight / ground / gated rebound) by matrix "
                   "exponentials; the gate's events located by dyadic bisection (rths_ros.core.models.contact1d."
                   "model.reference_solution)"),
    }
