"""Digital twin of the experimental part of the 1-D contact test, mounted upside down.

Insam 2022, §4.1, §4.2.4 (Fig. 4.5), §4.3.2, Table A.2.

Geometry (world z up)::

        ======== plate ("ground", fixed)       at u = h0
            o     mass m_EXP (half sphere)     at u (displacement from its initial rest position)
            /\\/  spring k_EXP (no damping)
        [ FTS ]   on the platform               at p (platform displacement from home, up positive)

At rest with the platform at home (p = 0) the spring carries the weight with the static deflection
l_stat = m_EXP g / k_EXP and the mass is the gap h0 below the plate.  In this deviation form gravity
cancels from the mass's equation of motion::

    m_EXP u'' = k_EXP (p - u) + F_plate,          F_plate <= 0 (the plate only pushes down)

and the force the specimen exerts on the sensor (the spring force, world z up) is::

    F_z = -(m_EXP g + k_EXP (p - u))

i.e. ``-m_EXP g`` at rest in flight and ``-(m_EXP g + N)`` in static contact with
``N = k_EXP (p - h0)`` (the contact phase of eq. 6.21).  The rest length l0 only fixes the absolute
geometry and does not enter the deviation form.

Contact models (``contact_model``):

* ``penalty``: plate = unilateral spring-damper ``F_plate = -max(0, k_g d + d_g d')``, ``d = u - h0``,
  k_g = 1e9 N/m, d_g = 500 kg/s (§4.3.2).  Free flight and penalty contact are both linear; each
  sub-step is advanced with the exact (matrix-exponential) map of the active mode, with the platform
  motion as a ramp input, so the 8 kHz contact oscillation is integrated stably.  The mode is chosen at
  the start of each sub-step.
* ``cor``: impact law with coefficient of restitution e (``restitution``, 0.73 for plastic on aluminium):
  at an impact ``u' <- -e u'``; the mass then rests on the plate (u = h0, u' = 0) while the spring pushes
  it there (k_EXP (p - h0) > 0) and leaves it when the spring pulls.  A rebound too small to be resolved
  within one sub-step ends the bounce sequence (the mass comes to rest on the plate).
* ``sticky``: the same as ``cor`` with a perfectly plastic impact (e = 0), what the high-speed camera
  showed ("sticks to the ground immediately after the first impact").
* ``quasi_static``: no mass dynamics: the mass follows the platform rigidly in flight and sits on the
  plate in contact, ``F_z = -(m_EXP g + k_EXP max(0, p - h0))``; the unilateral-spring model of the
  reference solution.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numba
import numpy as np

from rths_ros.params import ParameterError, param

_MODEL_CODES = {"penalty": 0, "cor": 1, "sticky": 2, "quasi_static": 3}


@dataclass(frozen=True)
class Specimen1DParams:
    """Experimental part of the 1-D contact test (Table A.2, §4.3.2)."""

    k_exp_n_per_m: float = param(8650.0, "N/m", 1e-3, 1e9, "specimen spring stiffness k_EXP")
    m_exp_kg: float = param(0.38, "kg", 1e-4, 1e3, "specimen mass m_EXP (spring + mounting + half sphere)")
    l0_m: float = param(0.071, "m", 0.0, 10.0, "spring rest length l0 (geometry only)")
    h0_m: float = param(0.01, "m", 0.0, 1.0, "initial gap h0 between the resting mass and the plate")
    g_m_per_s2: float = param(9.81, "m/s^2", 0.0, 100.0, "gravitational acceleration g")
    contact_model: str = param("penalty", "", doc="plate contact law",
                               choices=("penalty", "cor", "sticky", "quasi_static"))
    restitution: float = param(0.0, "", 0.0, 1.0,
                               "coefficient of restitution e of the 'cor' model (0.73: plastic on aluminium)")
    ground_stiffness_n_per_m: float = param(1e9, "N/m", 1.0, 1e12, "penalty plate stiffness k_g")
    ground_damping_kg_per_s: float = param(500.0, "kg/s", 0.0, 1e7, "penalty plate damping d_g")
    substeps: int = param(1000, "", 1, 100000, "contact sub-steps per synchronisation step")


@numba.njit(cache=True, nogil=True)
def _specimen_step(state, p0, p1, dt, nsub, model, k, m, h0, kg, dg, e, phi_free, phi_pen):
    """Advance (u, u', resting) over one step with the platform moving linearly from p0 to p1.

    ``phi_*`` are the first two rows of the exact 5x5 sub-step maps of the augmented state
    (u, u', p, p', 1).  ``state[3]`` is set to 1 if the mass touched the plate during the step.
    Returns the spring force k (p1 - u) at the end of the step.
    """
    h = dt / nsub
    r = (p1 - p0) / dt
    u = state[0]
    v = state[1]
    resting = state[2] > 0.5
    touched = resting
    p = p0
    if model == 3:
        u = min(p1, h0)
        v = r if p1 < h0 else 0.0
        state[0] = u
        state[1] = v
        state[2] = 1.0 if p1 >= h0 else 0.0
        state[3] = 1.0 if max(p0, p1) >= h0 else 0.0
        return k * (p1 - u)
    for _ in range(nsub):
        if model == 0:
            d = u - h0
            if d > 0.0 and kg * d + dg * v > 0.0:
                ph = phi_pen
                touched = True
            else:
                ph = phi_free
            un = ph[0, 0] * u + ph[0, 1] * v + ph[0, 2] * p + ph[0, 3] * r + ph[0, 4]
            vn = ph[1, 0] * u + ph[1, 1] * v + ph[1, 2] * p + ph[1, 3] * r + ph[1, 4]
            u = un
            v = vn
            p += r * h
        else:
            if resting:
                # the plate holds the mass while the spring pushes it up against it
                if k * (p - h0) > 0.0 or (p - h0 == 0.0 and r > 0.0):
                    p += r * h
                    continue
                resting = False
            ph = phi_free
            un = ph[0, 0] * u + ph[0, 1] * v + ph[0, 2] * p + ph[0, 3] * r + ph[0, 4]
            vn = ph[1, 0] * u + ph[1, 1] * v + ph[1, 2] * p + ph[1, 3] * r + ph[1, 4]
            if un < h0:
                u = un
                v = vn
                p += r * h
                continue
            # impact within this sub-step: locate it with the acceleration frozen over the sub-step
            touched = True
            a = k * (p - u) / m
            gap = h0 - u
            vc2 = v * v + 2.0 * a * gap
            vc = np.sqrt(vc2) if vc2 > 0.0 else 0.0
            tau = 2.0 * gap / (v + vc) if v + vc > 0.0 else h
            if tau > h:
                tau = h
            rem = h - tau
            p += r * h
            u = h0
            a_plate = k * (p - h0) / m           # acceleration pushing the mass back onto the plate
            w = e * vc                           # rebound speed
            if a_plate > 0.0:
                # bounce sequence with the acceleration frozen: flights of 2 w e^n / a_plate; rest on
                # the plate if the whole (Zeno) sequence 2 w / (a_plate (1 - e)) ends within the sub-step
                if w <= 0.0 or (e < 1.0 and 2.0 * w <= a_plate * (1.0 - e) * rem):
                    resting = True
                    v = 0.0
                    continue
                while 2.0 * w <= a_plate * rem:
                    rem -= 2.0 * w / a_plate
                    w *= e
            u = h0 - w * rem + 0.5 * a_plate * rem * rem
            v = -w + a_plate * rem
            if u > h0:
                u = h0
    state[0] = u
    state[1] = v
    state[2] = 1.0 if resting else 0.0
    state[3] = 1.0 if touched else 0.0
    return k * (p1 - u)


def _mode_map(k, m, h0, kg, dg, h, contact):
    """First two rows of expm(A h) for the augmented state (u, u', p, p', 1) (a copy of the map computed once per
    process for the same numbers)."""
    return _mode_map_cached(float(k), float(m), float(h0), float(kg), float(dg), float(h), bool(contact)).copy()


@functools.lru_cache(maxsize=256)
def _mode_map_cached(k, m, h0, kg, dg, h, contact):
    from scipy.linalg import expm
    a = np.zeros((5, 5))
    a[0, 1] = 1.0
    a[1, 0] = -k / m
    a[1, 2] = k / m
    a[2, 3] = 1.0
    if contact:
        a[1, 0] -= kg / m
        a[1, 1] = -dg / m
        a[1, 4] = kg * h0 / m
    return np.ascontiguousarray(expm(a * h)[:2, :])


class Specimen1D:
    """Mass-spring specimen under the fixed plate, driven by the platform's vertical displacement.

    ``step(p0, p1)`` advances one synchronisation step ``dt_s`` with the platform moving linearly
    from ``p0`` to ``p1`` [m, world z up, relative to home] and returns the force the specimen exerts on
    the sensor, world z component [N] (``-m_EXP g`` at rest).
    """

    def __init__(self, params: Specimen1DParams | None = None, dt_s: float = 1e-3):
        self.params = params or Specimen1DParams()
        p = self.params
        if not dt_s > 0.0:
            raise ParameterError(f"dt_s: {dt_s!r} is not allowed; expected a number > 0 s")
        if p.contact_model == "penalty":
            # contact starts and ends on the sub-step grid: at least 10 sub-steps per period of the
            # plate oscillation (1e9 N/m on 0.38 kg: 8.2 kHz)
            w = np.sqrt((p.ground_stiffness_n_per_m + p.k_exp_n_per_m) / p.m_exp_kg)
            n_min = int(np.ceil(10.0 * w * dt_s / (2.0 * np.pi)))
            if p.substeps < n_min:
                raise ParameterError(
                    f"substeps: {p.substeps!r} is too small for the penalty contact (plate oscillation "
                    f"{w / (2 * np.pi):.4g} Hz, step {dt_s:g} s); expected >= {n_min}")
        self.dt_s = float(dt_s)
        self._model = _MODEL_CODES[p.contact_model]
        self._e = 0.0 if p.contact_model == "sticky" else float(p.restitution)
        self._nsub = int(p.substeps)
        h = self.dt_s / self._nsub
        args = (p.k_exp_n_per_m, p.m_exp_kg, p.h0_m, p.ground_stiffness_n_per_m, p.ground_damping_kg_per_s, h)
        self._phi_free = _mode_map(*args, contact=False)
        self._phi_pen = _mode_map(*args, contact=True)
        #: the constants of :func:`_specimen_step` after (state, p0, p1)
        self.kernel_args = (self.dt_s, self._nsub, self._model, float(p.k_exp_n_per_m), float(p.m_exp_kg),
                            float(p.h0_m), float(p.ground_stiffness_n_per_m), float(p.ground_damping_kg_per_s),
                            float(self._e), self._phi_free, self._phi_pen)
        self._state = np.zeros(4)
        self._p = 0.0
        self._spring = 0.0
        self._weight = p.m_exp_kg * p.g_m_per_s2
        # warm up the kernel (compile or load from cache) on a scratch state
        self._kernel(np.zeros(4), 0.0, 0.0)
        self.reset()

    def _kernel(self, state, p0, p1):
        return _specimen_step(state, p0, p1, *self.kernel_args)

    def reset(self, p0: float = 0.0) -> None:
        """Static equilibrium for the platform at ``p0`` (home: the mass at rest, h0 below the plate)."""
        p = self.params
        self._p = float(p0)
        h0 = p.h0_m
        if p0 <= h0:
            self._state[:] = (p0, 0.0, 0.0, 0.0)
        elif self._model == 0:
            k, kg = p.k_exp_n_per_m, p.ground_stiffness_n_per_m
            self._state[:] = (h0 + k * (p0 - h0) / (k + kg), 0.0, 0.0, 1.0)
        else:
            self._state[:] = (h0, 0.0, 1.0, 1.0)
        self._spring = p.k_exp_n_per_m * (self._p - self._state[0])

    def step(self, p0: float, p1: float) -> float:
        """Advance one step; the platform moves linearly from ``p0`` to ``p1``.  Returns F_z [N]."""
        self._spring = self._kernel(self._state, float(p0), float(p1))
        self._p = float(p1)
        return -(self._weight + self._spring)

    @property
    def sensor_force(self) -> float:
        """F_z the specimen exerts on the sensor at the current time [N, world z up]."""
        return -(self._weight + self._spring)

    @property
    def state(self) -> np.ndarray:
        """(u, u', resting, touched) of :func:`_specimen_step` (the internal array)."""
        return self._state

    def set_spring(self, spring: float, p1: float) -> None:
        """After :func:`_specimen_step` advanced :attr:`state` outside :meth:`step`: its spring force and the
        platform position at the end of the step."""
        self._spring = float(spring)
        self._p = float(p1)

    @property
    def position(self) -> float:
        """Mass displacement u from its initial rest position [m] (the plate is at h0)."""
        return float(self._state[0])

    @property
    def velocity(self) -> float:
        return float(self._state[1])

    @property
    def platform_position(self) -> float:
        return self._p

    @property
    def contact_force(self) -> float:
        """Plate reaction N >= 0 on the mass [N] (static value k_EXP (p - u) for the rigid-plate models)."""
        p = self.params
        u, v = self._state[0], self._state[1]
        if self._model == 0:
            d = u - p.h0_m
            if d <= 0.0:
                return 0.0
            return max(0.0, p.ground_stiffness_n_per_m * d + p.ground_damping_kg_per_s * v)
        if self._state[2] > 0.5:
            return max(0.0, self._spring)
        return 0.0

    @property
    def in_contact(self) -> bool:
        """The mass is on the plate now (a plate reaction acts at the current time)."""
        return self.contact_force > 0.0

    @property
    def touched(self) -> bool:
        """The mass was on the plate at some time during the last step (impacts and penalty contacts
        last far less than a step, so sampling :attr:`in_contact` can miss them)."""
        return bool(self._state[3] > 0.5)
