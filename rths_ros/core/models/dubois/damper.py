"""The physical substructure of du Bois et al. 2010 and its models (§4.2-4.3).

:class:`HydraulicDamper` - eq. (16) with ``V1 = V2 = V0/2`` (so ``B (V1 + V2) / (V1 V2) = 4 B / V0``,
the factor of eq. 17)::

    dp' = (4 B / V0) [A y' - Q(dp) - a(dp_f) Q_p(dp)]
    Q(dp) = sign(dp) (-c1 + sqrt(c1^2 + 4 c2 |dp|)) / (2 c2)          (dp = c1 Q + c2 Q^2)
    a = (1 + tanh((|dp_f| - p_open) / p_width)) / 2,   T_p dp_f' = dp - dp_f      (poppet loop)
    F = A dp

``Q_p`` is the orifice law with the poppet path's coefficients (the paper: "a second loop, identical to
the bottom loop of the main orifice flow, but with larger flow coefficients"; here larger flow means
smaller pressure-loss coefficients).  The paper prints ``A y``; the text defines ``y'`` as the piston
velocity, so the flow term is ``A y'``.  The force ``F = A dp`` (not printed) opposes the motion of
``m2`` in eq. (19).  The state is integrated by RK4 with ``substeps`` sub-steps per control period,
the piston moving at constant velocity between the two displacements it is given.

:class:`MaxwellDamper` - eqs. (20-23), ``c_d f' + k_d f = k_d c_d x2'``, integrated exactly for a
constant velocity over the step.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from rths_ros.core.models.dubois.params import HydraulicDamperParams, MaxwellParams

__all__ = ["HydraulicDamper", "MaxwellDamper", "orifice_flow", "maxwell_from_hydraulic"]


@numba.njit(cache=True)
def _flow(dp, c1, c2):  # pragma: no cover - numba
    a = abs(dp)
    q = (-c1 + math.sqrt(c1 * c1 + 4.0 * c2 * a)) / (2.0 * c2)
    return q if dp >= 0.0 else -q


@numba.njit(cache=True)
def _rates(dp, dpf, v, k):  # pragma: no cover - numba
    # k: [kappa, A, c1, c2, poppet(0/1), c1p, c2p, p_open, p_width, T_p]
    q = _flow(dp, k[2], k[3])
    if k[4] > 0.0:
        act = 0.5 * (1.0 + math.tanh((abs(dpf) - k[7]) / k[8]))
        q += act * _flow(dp, k[5], k[6])
    return k[0] * (k[1] * v - q), (dp - dpf) / k[9]


@numba.njit(cache=True)
def _advance(state, v, h, n, k):  # pragma: no cover - numba
    dp = state[0]
    dpf = state[1]
    for _ in range(n):
        a1, b1 = _rates(dp, dpf, v, k)
        a2, b2 = _rates(dp + 0.5 * h * a1, dpf + 0.5 * h * b1, v, k)
        a3, b3 = _rates(dp + 0.5 * h * a2, dpf + 0.5 * h * b2, v, k)
        a4, b4 = _rates(dp + h * a3, dpf + h * b3, v, k)
        dp += h / 6.0 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        dpf += h / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4)
    state[0] = dp
    state[1] = dpf


def orifice_flow(dp, c1: float, c2: float):
    """``Q`` solving ``|dp| = c1 |Q| + c2 Q^2`` with the sign of ``dp`` (the bracket of eq. 16)."""
    dp = np.asarray(dp, dtype=np.float64)
    return np.sign(dp) * (-c1 + np.sqrt(c1 * c1 + 4.0 * c2 * np.abs(dp))) / (2.0 * c2)


class HydraulicDamper:
    """Streaming damper model: :meth:`step` moves the piston from the last displacement to ``y`` in ``dt``."""

    def __init__(self, params: HydraulicDamperParams, dt_s: float) -> None:
        p = params
        self.params = p
        self.dt = float(dt_s)
        self._k = np.array([4.0 * p.bulk_modulus_pa / p.volume_m3, p.area_m2, p.c1_pa_s_per_m3, p.c2_pa_s2_per_m6,
                            1.0 if p.poppet else 0.0, p.poppet_c1_pa_s_per_m3, p.poppet_c2_pa_s2_per_m6,
                            p.poppet_open_pa, p.poppet_width_pa, p.poppet_time_constant_s])
        self._h = self.dt / p.substeps
        self.state = np.zeros(2)
        self.y = 0.0
        _advance(self.state, 0.0, self._h, 1, self._k)  # compile now
        self.reset()

    def reset(self, y: float = 0.0) -> None:
        self.state[:] = 0.0
        self.y = float(y)

    @property
    def pressure_pa(self) -> float:
        return float(self.state[0])

    @property
    def force_n(self) -> float:
        return self.params.area_m2 * float(self.state[0])

    @property
    def poppet_activation(self) -> float:
        p = self.params
        if not p.poppet:
            return 0.0
        return 0.5 * (1.0 + math.tanh((abs(self.state[1]) - p.poppet_open_pa) / p.poppet_width_pa))

    def step(self, y: float) -> float:
        """Advance one control period with the piston moving linearly to ``y``; returns the force ``A dp``."""
        v = (float(y) - self.y) / self.dt
        _advance(self.state, v, self._h, self.params.substeps, self._k)
        self.y = float(y)
        return self.force_n

    def simulate(self, y) -> np.ndarray:
        """Forces for a displacement history ``y`` (starting from rest at ``y[0]``)."""
        y = np.asarray(y, dtype=np.float64)
        self.reset(y[0] if y.size else 0.0)
        return np.array([self.step(v) for v in y])


class MaxwellDamper:
    """Streaming linear damper (eq. 22) driven by displacement; :meth:`step` returns the force."""

    def __init__(self, params: MaxwellParams, dt_s: float) -> None:
        self.params = params
        self.dt = float(dt_s)
        c, k = params.c_d_n_s_per_m, params.k_d_n_per_m
        self._decay = math.exp(-k * self.dt / c) if c > 0.0 else 0.0
        self.reset()

    def reset(self, y: float = 0.0) -> None:
        self.force_n = 0.0
        self.y = float(y)

    def step(self, y: float) -> float:
        v = (float(y) - self.y) / self.dt
        cv = self.params.c_d_n_s_per_m * v
        self.force_n = cv + (self.force_n - cv) * self._decay
        self.y = float(y)
        return self.force_n

    def frequency_response(self, freqs_hz) -> np.ndarray:
        """Dynamic stiffness ``f / x2 = c_d k_d s / (c_d s + k_d)`` (eq. 23)."""
        s = 2j * np.pi * np.asarray(freqs_hz, dtype=np.float64)
        c, k = self.params.c_d_n_s_per_m, self.params.k_d_n_per_m
        return c * k * s / (c * s + k)


def maxwell_from_hydraulic(params: HydraulicDamperParams, velocity_amplitude_m_s: float) -> MaxwellParams:
    """The linear damper "approximated under mid-range operating conditions" (§4.3): ``k_d = 4 B A^2 / V0``
    and ``c_d`` the equivalent viscous damping of the orifice at the given velocity amplitude."""
    return MaxwellParams(c_d_n_s_per_m=params.equivalent_damping(velocity_amplitude_m_s),
                         k_d_n_per_m=params.stiffness_n_per_m)
