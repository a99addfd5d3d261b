"""Phase margin and critical delay of linear RTHS loops (seed 000 ch. 2.2.1, §4.1.2).

For a loop ``1 + L(s) = 0`` the phase margin ``phi_pm`` at a gain crossover ``w_pm``
(``|L(j w_pm)| = 1``) gives the largest pure delay the loop tolerates::

    tau_crit = 2 pi phi_pm / (360 w_pm)          (phi_pm in degrees, w_pm in rad/s)

The contact phase of the 1-D contact test is analysed with the open loop (mass ``m_EXP``
resting on the ground)::

    F_o(s) = k_EXP / (m_NUM s^2 + d_NUM s + k_NUM)

``|F_o(0)| = k_EXP/k_NUM < 1`` and the resonance lifts ``|F_o|`` above one, so there are
two gain crossovers.  The low one (about 2 Hz, margin > 160 deg) is irrelevant; the relevant
one is the crossover with the smallest critical delay, which for ``F_o`` is the
high-frequency one near the contact eigenfrequency (about 6-7 Hz).
"""
from __future__ import annotations

import math

import numpy as np

from rths_ros.core.models.contact1d.model import Contact1DParams


def _unwrapped_phase(num: np.ndarray, den: np.ndarray, w: float) -> float:
    """Phase of ``num(jw)/den(jw)`` in radians, continuous in ``w > 0``.

    Each factor ``(jw - r)`` contributes ``angle(jw - r)``, taken on a branch that is
    continuous in ``w`` for every root off the imaginary axis; roots at the origin contribute
    +90 deg.
    The sign of the leading-coefficient ratio adds 0 or 180 deg.
    """
    def factor(r: complex) -> float:
        if r.real > 0.0:   # jw - r = -(r - jw): keep the branch cut away from the w axis
            return math.pi + math.atan2(r.imag - w, r.real)
        return math.atan2(w - r.imag, -r.real)

    ph = sum(factor(r) for r in np.roots(num)) - sum(factor(r) for r in np.roots(den))
    lead = num[np.flatnonzero(num)[0]] / den[np.flatnonzero(den)[0]]
    if lead < 0:
        ph += math.pi
    return ph


def gain_crossovers(num, den) -> np.ndarray:
    """All frequencies ``w > 0`` (rad/s, ascending) with ``|num(jw)/den(jw)| = 1``."""
    num = np.trim_zeros(np.atleast_1d(np.asarray(num, dtype=np.float64)), "f")
    den = np.trim_zeros(np.atleast_1d(np.asarray(den, dtype=np.float64)), "f")
    # |N(jw)|^2 - |D(jw)|^2 as a polynomial in w
    def sq_mag(p: np.ndarray) -> np.ndarray:
        pj = p * (1j) ** np.arange(p.size - 1, -1, -1)   # coefficients of p(jw) in powers of w
        return np.real(np.polymul(pj, np.conj(pj)))
    diff = np.polysub(sq_mag(num), sq_mag(den))
    diff = np.trim_zeros(diff, "f")
    if diff.size <= 1:
        return np.zeros(0)
    roots = np.roots(diff)
    scale = max(1.0, float(np.max(np.abs(roots))))
    w = np.sort(roots[(np.abs(roots.imag) <= 1e-9 * scale) & (roots.real > 0)].real)
    # polish with Newton steps on |L|^2 - 1 and drop duplicates (double roots)
    out: list[float] = []
    for wi in w:
        for _ in range(3):
            f = np.polyval(diff, wi)
            df = np.polyval(np.polyder(diff), wi)
            if df == 0:
                break
            wi -= f / df
        if not out or abs(wi - out[-1]) > 1e-9 * max(1.0, wi):
            out.append(float(wi))
    return np.array(out)


def phase_margin(num, den) -> dict:
    """Phase margin of the loop ``1 + num(s)/den(s) = 0`` (polynomial coefficients, highest power first).

    Returns ``phase_margin_deg, crossover_rad_s, crossover_hz, tau_crit_s`` for the relevant
    crossover (the one with the smallest critical delay ``tau_crit``; for a delay-free loop
    this is the delay margin), and ``crossovers``: a list of dicts with the same keys for every
    gain crossover.  Without a crossover the margin is infinite (``nan`` frequency).
    ``phase_margin_deg = 180 + angle L(j w_pm)`` wrapped into (-180, 180];
    ``tau_crit_s = 0`` for a non-positive margin.
    """
    num = np.trim_zeros(np.atleast_1d(np.asarray(num, dtype=np.float64)), "f")
    den = np.trim_zeros(np.atleast_1d(np.asarray(den, dtype=np.float64)), "f")
    rows = []
    for w in gain_crossovers(num, den):
        pm = math.degrees(_unwrapped_phase(num, den, w)) + 180.0
        pm = (pm + 180.0) % 360.0 - 180.0
        if pm == -180.0:
            pm = 180.0
        tau = 2.0 * math.pi * pm / (360.0 * w) if pm > 0 else 0.0
        rows.append({"phase_margin_deg": pm, "crossover_rad_s": float(w),
                     "crossover_hz": float(w) / (2.0 * math.pi), "tau_crit_s": float(tau)})
    if not rows:
        return {"phase_margin_deg": math.inf, "crossover_rad_s": math.nan, "crossover_hz": math.nan,
                "tau_crit_s": math.inf, "crossovers": []}
    best = min(rows, key=lambda r: (r["tau_crit_s"], -r["crossover_rad_s"]))
    return {**best, "crossovers": rows}


def contact_open_loop(params: Contact1DParams | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator of ``F_o(s) = k_EXP / (m_NUM s^2 + d_NUM s + k_NUM)``."""
    p = params or Contact1DParams()
    return (np.array([p.k_exp_n_per_m]),
            np.array([p.m_num_kg, p.d_num_kg_per_s, p.k_num_n_per_m]))


def contact_phase_margin(params: Contact1DParams | None = None) -> dict:
    """Phase margin, crossover and ``tau_crit`` of the contact-phase open loop ``F_o`` (§4.1.2).

    Thesis: ``d_NUM = 200 kg/s`` -> 62 deg, ``tau_crit = 0.0284 s``;
    ``d_NUM = 50 kg/s`` -> ``tau_crit = 0.0058 s`` (14.63 deg).
    """
    num, den = contact_open_loop(params)
    return phase_margin(num, den)
