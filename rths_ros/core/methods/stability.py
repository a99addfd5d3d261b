"""Phase margin and critical delay of linear RTHS loops (Insam 2022 ch. 2.2.1, §4.1.2).

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

Library use.  The gain crossovers and the phase margin at each of them come from
python-control (``control``, pinned in requirements/runtime.txt):
``control.stability_margins(control.tf(num, den), returnall=True, method="poly")``, which
finds every ``w > 0`` with ``|L(jw)| = 1`` as the positive real roots of
``|N(jw)|^2 - |D(jw)|^2`` and evaluates ``L`` there.  Its result is post-processed to keep
this module's documented behaviour where python-control's conventions differ:

- Which crossover: python-control's default (``returnall=False``) reports the crossover with
  the smallest ``|PM|``; here all crossovers are taken (``returnall=True``) and the one with
  the smallest ``tau_crit`` is reported (ties: the higher frequency), the others are listed
  under ``crossovers``.
- Wrapping: python-control returns ``PM = (angle L(jw) mod 360) - 180`` in ``[-180, 180)``;
  this is the same value as ``180 + angle L`` wrapped, except that ``-180`` is mapped to
  ``+180`` so the margin lies in ``(-180, 180]`` (a crossover where ``L(jw) = +1``).
- Sign: a negative margin is kept negative (python-control does the same); its critical delay
  is set to 0 here.
- No crossover: python-control returns empty arrays; here the margin and ``tau_crit`` are
  ``inf`` and the frequencies ``nan``, with an empty ``crossovers`` list (the same values as
  python-control's ``returnall=False`` for the margin and frequency).
- :func:`gain_crossovers` drops repeated frequencies (a double root, where ``|L|`` touches one).

Hand-written: the critical delay ``tau_crit = PM / w_pm`` per crossover and the choice of the
relevant crossover by smallest ``tau_crit`` (python-control has no delay margin), and the
contact-loop polynomials of :func:`contact_open_loop`.
"""
from __future__ import annotations

import math

import control
import numpy as np

from rths_ros.core.models.contact1d.model import Contact1DParams


def _poly(p) -> np.ndarray:
    """Polynomial coefficients (highest power first) as float64 without leading zeros."""
    return np.trim_zeros(np.atleast_1d(np.asarray(p, dtype=np.float64)), "f")


def _margins_at_crossovers(num, den) -> tuple[np.ndarray, np.ndarray]:
    """Gain crossovers ``w > 0`` (ascending, rad/s) and python-control's phase margin (deg) at each."""
    loop = control.tf(_poly(num), _poly(den))
    _gm, pm, _sm, _wpc, wgc, _wms = control.stability_margins(loop, returnall=True, method="poly")
    wgc = np.asarray(wgc, dtype=np.float64)
    pm = np.asarray(pm, dtype=np.float64)
    order = np.argsort(wgc, kind="stable")
    return wgc[order], pm[order]


def gain_crossovers(num, den) -> np.ndarray:
    """All frequencies ``w > 0`` (rad/s, ascending) with ``|num(jw)/den(jw)| = 1``."""
    w, _ = _margins_at_crossovers(num, den)
    out: list[float] = []
    for wi in w:   # a double root (|L| touching one) is one crossover
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
    rows = []
    last_w = None
    for w, pm in zip(*_margins_at_crossovers(num, den)):
        if last_w is not None and abs(w - last_w) <= 1e-9 * max(1.0, w):
            continue   # repeated root: same crossover
        last_w = w
        pm = float(pm)
        if pm <= -180.0:   # python-control wraps into [-180, 180); this module into (-180, 180]
            pm += 360.0
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
