"""Stability of feedback-coupled hybrid tests with delay and with actuator dynamics (Bartl 2019 ch. 4).

Two analyses of the thesis's §4.2, in non-dimensional form.

**1. Pure delay, 1-DoF virtual + 1-DoF experimental component (§4.2.2).**  Ratios ``kappa = k_VIR/k_EXP``,
``phi = m_VIR/m_EXP``, time scaled by the coupled resonance ``omega_0``, delay ``T_d = tau * 2 pi / omega_0``
(``tau`` = delay over the coupled period).  With ``a_E = (phi+1)/(kappa+1)``, ``a_V = (1+1/phi)/(1+1/kappa)``::

    N_E(s) = s^2 + 2 zeta_EXP sqrt(a_E) s + a_E          D_V(s) = s^2 + 2 zeta_VIR sqrt(a_V) s + a_V
    displacement control  H_OL = (1/phi) N_E / D_V e^{-2 pi tau s}        (eq. 4.13)
    force control         H_OL =  phi    D_V / N_E e^{-2 pi tau s}        (eq. 4.37)

With the first-order Padé approximation ``e^{-2 pi tau s} ~ (1 - c s)/(1 + c s)``, ``c = pi tau`` (eq. 4.20), the
closed loop's characteristic polynomial is the cubic ``den (1 + c s) + g num (1 - c s)``, whose coefficients are
linear in ``c``.  The Hurwitz conditions (all coefficients positive, ``a2 a1 > a3 a0``) are then a linear and a
quadratic inequality in ``c``, so the largest stable delay :func:`tau_max_pade` is the smallest positive root of a
few low-order polynomials: exact, no scan.  :func:`tau_crit_exact` gives the same limit for the true delay from
the phase margin at every gain crossover (:func:`rths_ros.core.methods.stability.phase_margin`).  For the
thesis's example (kappa = 1, phi = 1.5, zeta = 0.1) these are 0.323 (Padé) and 0.253 (exact).

**2. Actuator dynamics with a proportional position controller, phi_EXP = 0 (§4.2.3, App. C).**  Ratios to the
virtual component (note: inverted against part 1): ``kappa_EXP = k_EXP/k_VIR``, ``kappa_ACT``, ``kappa_P =
k_P/k_VIR``, ``phi_ACT = m_ACT/m_VIR``; time scaled by ``omega_VIR``.  The closed loop's characteristic polynomial
is ``(phi_ACT s^2 + d_A s + kappa_ACT + kappa_EXP)(s^2 + 2 zeta_VIR s + 1) + kappa_P (s^2 + 2 zeta_VIR s + 1 +
kappa_EXP)`` with ``d_A = 2 zeta_ACT sqrt(kappa_ACT phi_ACT)``; divided by ``phi_ACT`` it is the quartic
``s^4 + a1 s^3 + a2 s^2 + a3 s + a4`` of eqs. 4.34-4.36, stable iff all ``a_i > 0`` and ``Delta = a1 a2 a3 -
a1^2 a4 - a3^2 > 0`` (Routh-Hurwitz).  ``Delta`` is quadratic in ``kappa_P`` and cubic in ``zeta_VIR``, so the
unstable gain band (:func:`p_loop_unstable_band`; 0.70 < kappa_P < 5.74 for the Fig. 4.16 set) and the minimum
virtual damping (:func:`p_loop_min_zeta_vir`, Fig. 4.19) are polynomial roots too.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.methods.stability import phase_margin

__all__ = ["DelayCase", "pade_cubic", "pade_stable", "tau_max_pade", "tau_crit_exact", "tau_max_map",
           "PLoopCase", "p_loop_characteristic", "p_loop_coefficients", "p_loop_hurwitz", "p_loop_stable", "p_loop_unstable_band",
           "p_loop_min_zeta_vir", "COUPLINGS"]

COUPLINGS = ("displacement", "force")
_EPS = 1e-9


@dataclass(frozen=True)
class DelayCase:
    """One point of the delay stability map (Bartl 2019 §4.2.2).  Defaults: the Fig. 4.7 example."""

    phi: float = 1.5            # m_VIR / m_EXP
    kappa: float = 1.0          # k_VIR / k_EXP
    zeta_vir: float = 0.1
    zeta_exp: float = 0.1
    coupling: str = "displacement"

    def __post_init__(self) -> None:
        for name in ("phi", "kappa"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"{name}: {v!r} must be a finite ratio > 0")
        for name in ("zeta_vir", "zeta_exp"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0.0):
                raise ValueError(f"{name}: {v!r} must be a finite damping ratio >= 0")
        if self.coupling not in COUPLINGS:
            raise ValueError(f"coupling: {self.coupling!r}; expected one of {', '.join(COUPLINGS)}")

    def open_loop(self) -> tuple[np.ndarray, np.ndarray]:
        """``(num, den)`` of the delay-free open loop ``H_0`` (highest power first), gain included."""
        a_e = (self.phi + 1.0) / (self.kappa + 1.0)
        a_v = (1.0 + 1.0 / self.phi) / (1.0 + 1.0 / self.kappa)
        n_e = np.array([1.0, 2.0 * self.zeta_exp * math.sqrt(a_e), a_e])
        d_v = np.array([1.0, 2.0 * self.zeta_vir * math.sqrt(a_v), a_v])
        if self.coupling == "displacement":
            return n_e / self.phi, d_v
        return d_v * self.phi, n_e


def pade_cubic(case: DelayCase, tau: float) -> np.ndarray:
    """Coefficients ``[a3, a2, a1, a0]`` of the closed loop with the first-order Padé delay ``tau``."""
    num, den = case.open_loop()
    c = math.pi * float(tau)
    return np.polymul(den, [c, 1.0]) + np.polymul(num, [-c, 1.0])


def pade_stable(case: DelayCase, tau: float) -> bool:
    """All closed-loop poles in the open left half-plane (eq. 4.20), from the roots themselves."""
    p = pade_cubic(case, tau)
    p = np.trim_zeros(p, "f")
    return bool(np.all(np.roots(p).real < 0.0))


def _smallest_positive_root(poly: np.ndarray) -> float:
    poly = np.trim_zeros(np.asarray(poly, dtype=float), "f")
    if poly.size <= 1:
        return math.inf
    r = np.roots(poly)
    r = r[(np.abs(r.imag) <= 1e-9 * np.maximum(1.0, np.abs(r.real))) & (r.real > _EPS)].real
    return float(r.min()) if r.size else math.inf


def tau_max_pade(case: DelayCase) -> float:
    """Largest ``tau`` up to which the Padé closed loop is stable for every smaller delay: 0 when it is unstable
    for any delay (e.g. displacement control with phi < 1), ``inf`` when it is stable for all."""
    num, den = case.open_loop()
    n = np.pad(num, (1, 0))
    d = np.pad(den, (1, 0))
    # cubic coefficients a_i(c) = base_i + c * slope_i (c = pi tau)
    base = d + n
    slope = np.pad(den, (0, 1)) - np.pad(num, (0, 1))
    a3, a2, a1, a0 = (np.array([slope[i], base[i]]) for i in range(4))   # each as a polynomial in c
    hurwitz = np.polysub(np.polymul(a2, a1), np.polymul(a3, a0))
    conds = (a3, a2, a1, a0, hurwitz)
    if not np.any(a3):
        # |H_0(inf)| = 1 exactly (phi = 1): the s^3 terms cancel for every delay and the closed loop is the
        # quadratic a2 s^2 + a1 s + a0, stable iff its three coefficients are positive (no cubic condition)
        conds = (a2, a1, a0)
    if any(np.polyval(q, _EPS) <= 0.0 for q in conds):
        return 0.0
    return min(_smallest_positive_root(q) for q in conds) / math.pi


def tau_crit_exact(case: DelayCase) -> float:
    """Largest stable ``tau`` for the exact delay: the smallest phase-margin delay over the gain crossovers, in
    units of the coupled period (0 when the delay-free loop is unstable or ``|H_0(inf)| > 1``; ``inf`` when
    ``|H_0| < 1`` everywhere)."""
    num, den = case.open_loop()
    if abs(num[0] / den[0]) > 1.0 or not np.all(np.roots(np.polyadd(den, num)).real < 0.0):
        return 0.0
    pm = phase_margin(num, den)
    t = float(pm["tau_crit_s"])
    return t / (2.0 * math.pi) if math.isfinite(t) else math.inf


def tau_max_map(phi: np.ndarray, kappa: np.ndarray, zeta: float, coupling: str = "displacement") -> np.ndarray:
    """``tau_max_pade`` over the grid ``phi x kappa`` (rows: kappa, columns: phi), the same damping on both
    components, as in the thesis's Fig. 4.8."""
    out = np.empty((len(kappa), len(phi)))
    for i, k in enumerate(kappa):
        for j, p in enumerate(phi):
            out[i, j] = tau_max_pade(DelayCase(float(p), float(k), zeta, zeta, coupling))
    return out


@dataclass(frozen=True)
class PLoopCase:
    """The proportionally controlled actuator loop with phi_EXP = 0 (Bartl 2019 §4.2.3).  Defaults: the set of
    Figs. 4.16-4.18."""

    kappa_p: float = 1.0
    kappa_exp: float = 2.0
    kappa_act: float = 0.1
    phi_act: float = 0.1
    zeta_vir: float = 2e-3
    zeta_act: float = 0.1

    def __post_init__(self) -> None:
        for name in ("kappa_p", "kappa_exp", "kappa_act", "zeta_vir", "zeta_act"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0.0):
                raise ValueError(f"{name}: {v!r} must be finite and >= 0")
        if not (math.isfinite(self.phi_act) and self.phi_act > 0.0):
            raise ValueError(f"phi_act: {self.phi_act!r} must be finite and > 0")

    def with_(self, **kw) -> PLoopCase:
        return PLoopCase(**{**self.__dict__, **kw})


def p_loop_characteristic(case: PLoopCase) -> np.ndarray:
    """The closed loop's characteristic polynomial (highest power first), undivided."""
    d_a = 2.0 * case.zeta_act * math.sqrt(case.kappa_act * case.phi_act)
    vir = np.array([1.0, 2.0 * case.zeta_vir, 1.0])
    act = np.array([case.phi_act, d_a, case.kappa_act + case.kappa_exp])
    return np.polyadd(np.polymul(act, vir), case.kappa_p * np.array([1.0, 2.0 * case.zeta_vir,
                                                                        1.0 + case.kappa_exp]))


def p_loop_coefficients(case: PLoopCase) -> tuple[float, float, float, float]:
    """``(a1, a2, a3, a4)`` of the monic quartic (eqs. 4.34-4.36)."""
    c = p_loop_characteristic(case) / case.phi_act
    return float(c[1]), float(c[2]), float(c[3]), float(c[4])


def p_loop_hurwitz(case: PLoopCase) -> float:
    """``Delta = a1 a2 a3 - a1^2 a4 - a3^2`` (stable iff > 0 with all a_i > 0)."""
    a1, a2, a3, a4 = p_loop_coefficients(case)
    return a1 * a2 * a3 - a1 * a1 * a4 - a3 * a3


def p_loop_stable(case: PLoopCase) -> bool:
    return min(p_loop_coefficients(case)) > 0.0 and p_loop_hurwitz(case) > 0.0


def _delta_poly(case: PLoopCase, field: str) -> np.ndarray:
    """``Delta`` as a polynomial in ``field`` (kappa_p: degree 2, zeta_vir: degree 3), fitted exactly through
    degree + 1 samples (Delta is a polynomial in each of them)."""
    deg = 2 if field == "kappa_p" else 3
    xs = np.arange(deg + 1, dtype=float)
    ys = [p_loop_hurwitz(case.with_(**{field: float(x)})) for x in xs]
    return np.polyfit(xs, ys, deg)


def p_loop_unstable_band(case: PLoopCase) -> list[tuple[float, float]]:
    """The intervals of ``kappa_p >= 0`` in which the loop is unstable (the other parameters of ``case``)."""
    roots = np.roots(_delta_poly(case, "kappa_p"))
    roots = sorted(float(r.real) for r in roots if abs(r.imag) < 1e-12 and r.real > 0.0)
    edges = [0.0, *roots, math.inf]
    bands = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        probe = lo + 1.0 if math.isinf(hi) else 0.5 * (lo + hi)
        if not p_loop_stable(case.with_(kappa_p=probe)):
            bands.append((lo, hi))
    return bands


def p_loop_min_zeta_vir(case: PLoopCase, zeta_max: float = 10.0) -> float:
    """The smallest ``zeta_VIR`` in ``[0, zeta_max]`` above which the loop is stable up to ``zeta_max`` (Fig. 4.19's
    contour value); ``nan`` when it is unstable at ``zeta_max``."""
    if not p_loop_stable(case.with_(zeta_vir=zeta_max)):
        return math.nan
    roots = np.roots(_delta_poly(case, "zeta_vir"))
    cand = sorted(float(r.real) for r in roots if abs(r.imag) < 1e-9 and 0.0 < r.real < zeta_max)
    edges = [0.0, *cand, zeta_max]
    z_min = zeta_max
    for lo, hi in reversed(list(zip(edges[:-1], edges[1:]))):
        if p_loop_stable(case.with_(zeta_vir=0.5 * (lo + hi))):
            z_min = lo
        else:
            break
    return z_min
