"""Convergence condition of ILC inside the RTHS loop (Insam 2022 §6.2.1, eqs. 6.6-6.21).

In RTHS the reference ``z_j`` is not iteration-invariant: better tracking changes the excitation of the
experimental part, hence ``F_int,j`` and ``z_j``.  With ``e_j = z_j - z'_j`` and ``z'_j = P (f_j + C e_j)``
(eqs. 6.6-6.7) the error obeys ``e_j = S_in F_ext + S_f,in f_j`` (eq. 6.10) with the inner feedforward
sensitivity (eq. 6.12)::

    S_f,in = -(G_FTS G_DYN P + P) / (1 + G_FTS G_DYN C P + C P)

and the update law ``f_{j+1} = Q (L e_j + f_j)`` gives ``e_{j+1} = Q (1 + S_f,in L) e_j + (1 - Q) S_in F_ext``
(eq. 6.17).  Monotonic convergence requires (eq. 6.18)::

    |Q(jw) (1 + S_f,in(jw) L(jw))| < 1   for all w

Models plugged in (§6.2.2):

* contact phase only, ``G_DYN = k_EXP / (m_NUM s^2 + d_NUM s + k_NUM)`` (eq. 6.21), ``G_FTS = 1``;
* one leg (leg 2 of Table 4.1 stands in for the Z direction, collinearity assumed);
* velocity-level injection after the position gain: ``C = K_Pp`` and
  ``P = T_v / s`` with ``T_v = G_v s P_leg / (1 + G_v s P_leg)``, ``G_v = K_Pv + K_Iv / s`` (Table A.1);
* ``L = beta + gamma s`` (velocity-level gains; position injection with ``beta/K_Pp, gamma/K_Pp`` gives
  the identical loop ``L P``);
* ``Q`` = magnitude of the ILC's own zero-phase filter: ``|H(e^{jw dt})|^2`` of the digital Butterworth of
  order ``q_order`` at the sampling step ``dt_s`` of the contact test (phase zero).

At ``w -> 0``, ``S_f,in -> -1/K_Pp``, so the low-frequency factor is ``|1 - beta/K_Pp|`` (convergence needs
``0 < beta < 2 K_Pp``).
"""
from __future__ import annotations

import numpy as np

from rths_ros.core.learning.ilc.learner import IlcParams, q_filter_magnitude
from rths_ros.core.models.contact1d.model import Contact1DParams
from rths_ros.core.plant.legs import N_LEGS, LegCascadeParams, LegPlantParams
from rths_ros.params import ParameterError

__all__ = ["inner_feedforward_sensitivity", "convergence_frf", "ilc_convergence"]


def inner_feedforward_sensitivity(freq_hz, contact_params: Contact1DParams | None = None,
                                  leg_plant_params: LegPlantParams | None = None,
                                  cascade_params: LegCascadeParams | None = None, leg: int = 2) -> np.ndarray:
    """``S_f,in(jw)`` of eq. 6.12 in the contact phase for velocity-level injection (``leg`` 1-based)."""
    cp = contact_params or Contact1DParams()
    pl = leg_plant_params or LegPlantParams()
    cas = cascade_params or LegCascadeParams()
    if int(leg) != leg or not 1 <= leg <= N_LEGS:
        raise ParameterError(f"leg: {leg!r} is not allowed; expected an integer in [1, {N_LEGS}]")
    kpp, kpv, kiv = cas.gains
    s = 2j * np.pi * np.asarray(freq_hz, dtype=float)
    k = pl.gain_num[leg - 1]
    wc = pl.omega_c_rad_per_s[leg - 1]
    sp = k / (s + wc)                                   # s * P_leg(s)
    gv = kpv + kiv / s
    p_eff = gv * sp / (1.0 + gv * sp) / s               # velocity command -> length
    g_dyn = cp.k_exp_n_per_m / (cp.m_num_kg * s ** 2 + cp.d_num_kg_per_s * s + cp.k_num_n_per_m)
    g_fts = 1.0
    return -(g_fts * g_dyn * p_eff + p_eff) / (1.0 + g_fts * g_dyn * kpp * p_eff + kpp * p_eff)


def convergence_frf(freq_hz, contact_params: Contact1DParams | None = None,
                    leg_plant_params: LegPlantParams | None = None,
                    cascade_params: LegCascadeParams | None = None,
                    ilc_params: IlcParams | None = None, leg: int = 2) -> np.ndarray:
    """``|Q(jw) (1 + S_f,in(jw) L(jw))|`` (linear magnitude) of eq. 6.18 at ``freq_hz``."""
    cp = contact_params or Contact1DParams()
    ip = ilc_params or IlcParams()
    f = np.asarray(freq_hz, dtype=float)
    s = 2j * np.pi * f
    sf = inner_feedforward_sensitivity(f, cp, leg_plant_params, cascade_params, leg)
    lrn = ip.beta_per_s + ip.gamma * s
    q = q_filter_magnitude(f, ip.f_q_cut_hz, ip.q_order, cp.dt_s)
    return np.abs(q * (1.0 + sf * lrn))


def ilc_convergence(contact_params: Contact1DParams | None = None,
                    leg_plant_params: LegPlantParams | None = None,
                    cascade_params: LegCascadeParams | None = None,
                    ilc_params: IlcParams | None = None, leg: int = 2, f_max_hz: float = 100.0,
                    n_points: int = 20001, f_min_hz: float = 1e-3) -> dict:
    """Peak of eq. 6.18 over ``[f_min_hz, f_max_hz]`` (linear grid of ``n_points``, peak refined by a parabola).

    Returns ``dict(peak_db, peak_hz, converges, dc_db, curve=(freq_hz, db))``; ``converges`` is
    ``peak_db < 0``, ``dc_db`` the value at ``f_min_hz`` (``20 log10 |1 - beta/K_Pp|`` for small ``f_min_hz``).
    """
    if not 0.0 < f_min_hz < f_max_hz:
        raise ParameterError(f"f_max_hz: {f_max_hz!r} is not allowed; expected > f_min_hz = {f_min_hz!r} > 0")
    if int(n_points) != n_points or n_points < 3:
        raise ParameterError(f"n_points: {n_points!r} is not allowed; expected an integer >= 3")
    f = np.linspace(f_min_hz, f_max_hz, int(n_points))
    mag = convergence_frf(f, contact_params, leg_plant_params, cascade_params, ilc_params, leg)
    db = 20.0 * np.log10(mag)
    i = int(np.argmax(db))
    peak_db, peak_hz = float(db[i]), float(f[i])
    if 0 < i < db.size - 1:
        a, b, c = db[i - 1], db[i], db[i + 1]
        den = a - 2.0 * b + c
        if den < 0.0:
            shift = float(np.clip(0.5 * (a - c) / den, -0.5, 0.5))
            peak_hz = float(f[i] + shift * (f[1] - f[0]))
            peak_db = float(b - 0.25 * (a - c) * shift)
    return {"peak_db": peak_db, "peak_hz": peak_hz, "converges": bool(peak_db < 0.0), "dc_db": float(db[0]),
            "curve": (f, db)}
