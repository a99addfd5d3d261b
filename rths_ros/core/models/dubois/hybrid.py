"""Hybrid system model of du Bois et al. 2010 §4.3: the 2-DOF chain with the linear Maxwell damper at ``m2``.

Eqs. (18-19) with ``f = c_d k_d s / (c_d s + k_d) x2`` (eq. 23) give (eq. 24)::

    x2 / x0 = (k1 + c1 s)(k2 + c2 s)(c_d s + k_d) / D(s)
    D(s) = (m1 s^2 + (c1 + c2) s + k1 + k2) ((m2 s^2 + c2 s + k2)(c_d s + k_d) + c_d k_d s)
           - (k2 + c2 s)^2 (c_d s + k_d)
    x1 / x0 = ((k2 + c2 s) x2/x0 + (k1 + c1 s)) / (m1 s^2 + (c1 + c2) s + k1 + k2)

``D`` has five roots: two underdamped pairs and one real pole (Fig. 11, whose table lists the damped
frequency ``f_d`` in Hz, ``w0`` in rad/s and ``zeta`` per pole; for the real pole ``f_d = 0`` and
``s = -zeta w0``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.dubois.params import ChainParams, MaxwellParams

__all__ = ["HybridModel", "Pole"]


@dataclass(frozen=True)
class Pole:
    s: complex
    f_d_hz: float
    omega0_rad_s: float
    zeta: float


class HybridModel:
    """Transfer functions and poles of eq. (24)."""

    def __init__(self, chain: ChainParams, maxwell: MaxwellParams) -> None:
        P = np.poly1d
        c1, c2, k1, k2 = chain.c1, chain.c2, chain.k1_n_per_m, chain.k2_n_per_m
        cd, kd = maxwell.c_d_n_s_per_m, maxwell.k_d_n_per_m
        self.a1 = P([chain.m1_kg, c1 + c2, k1 + k2])
        d = P([cd, kd])
        kc2 = P([c2, k2])
        self.kc1 = P([c1, k1])
        self.kc2 = kc2
        self.num2 = self.kc1 * kc2 * d
        self.den = self.a1 * (P([chain.m2_kg, c2, k2]) * d + P([cd * kd, 0.0])) - kc2 * kc2 * d

    def x2_over_x0(self, freqs_hz) -> np.ndarray:
        s = 2j * np.pi * np.asarray(freqs_hz, dtype=np.float64)
        return self.num2(s) / self.den(s)

    def x1_over_x0(self, freqs_hz) -> np.ndarray:
        s = 2j * np.pi * np.asarray(freqs_hz, dtype=np.float64)
        return (self.kc2(s) * self.x2_over_x0(freqs_hz) + self.kc1(s)) / self.a1(s)

    def poles(self) -> list[Pole]:
        """The roots of ``D`` with ``Im >= 0``, ascending in ``w0``."""
        out = []
        for s in np.roots(self.den.coeffs):
            if s.imag < -1e-9 * abs(s):
                continue
            w0 = abs(s)
            out.append(Pole(complex(s), float(max(s.imag, 0.0) / (2 * np.pi)), float(w0), float(-s.real / w0)))
        return sorted(out, key=lambda p: p.omega0_rad_s)

    def modes(self) -> list[Pole]:
        """The underdamped pairs, ascending in frequency."""
        return [p for p in self.poles() if p.f_d_hz > 0.0]
