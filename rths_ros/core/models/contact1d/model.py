"""1-D contact test of Insam 2022 Part I (Insam, ch. 4, Fig. 4.1, Table A.2).

Vertical chain, top to bottom: a moving suspension ``z_d(t)``, the spring-damper
``k_NUM || d_NUM``, the numerical mass ``m_NUM`` (the interface DoF), the spring ``k_EXP``,
the experimental mass ``m_EXP`` and a rigid ground ``h0`` below it.  The numerical part
(suspension, ``k_NUM``, ``d_NUM``, ``m_NUM``) is simulated; the experimental part
(``k_EXP``, ``m_EXP``, ground) is the specimen.

Sign conventions (deviation form, every coordinate zero at the initial rest state):

* ``z`` = displacement of ``m_NUM`` from its rest position, positive UP; contact happens
  for ``z < -h0`` (ideal transfer system, static spring deflection neglected).
* ``F_int`` = force the numerical part exerts on the experimental part = tension of
  ``k_EXP``: ``+m_EXP g`` in flight, ``m_EXP g - N`` in contact (``N`` = ground reaction).
  The numerical mass feels ``-F_int``.
* Numerical equation of motion (absolute form, ``c`` an irrelevant spring length)::

      m_NUM z'' = k_NUM (z_d - z - c) + d_NUM (z_d' - z') - m_NUM g + F_ext^NUM - F_int
      F_ext^NUM = (m_NUM + m_EXP) g                    (constant external force, ch. 4.1.1)

  With the rest state as origin the constant terms reduce to ``m_EXP g``::

      m_NUM z'' = k_NUM (z_d - z) + d_NUM (z_d' - z') + m_EXP g - F_int

  so the system stays at rest with ``F_int = m_EXP g``, and a larger ``F_int`` pushes the
  numerical mass DOWN.
* Suspension (deviation form, )::

      z_d(t) = -(h0 + dz_max)/2 * (1 - cos(2 pi f_d t))

The reference solution (thesis §4.4) simulates the overall system with an ideal transfer
system, the identified specimen (no damping), the penalty contact model (ground
``1e9 N/m``, ``500 kg/s``) and the thesis's force gating; see :func:`reference_solution`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numba
import numpy as np

from rths_ros.core.numerics.integrators import DOP853, AffineHarmonicRK, erk_affine_harmonic_step
from rths_ros.params import ParameterError, param

GATE_CHOICES = ("contact_phase", "ground_contact")


@dataclass(frozen=True)
class Contact1DParams:
    """Parameters of the 1-D contact test (Table A.2 of Insam 2022 plus the contact model of §4.3)."""

    m_num_kg: float = param(9.62, "kg", 1e-3, 1e4, "numerical mass m_NUM")
    k_num_n_per_m: float = param(1e4, "N/m", 0.0, 1e8, "numerical spring k_NUM (suspension to m_NUM)")
    d_num_kg_per_s: float = param(200.0, "kg/s", -1e3, 1e5,
                                  "numerical damper d_NUM; 200 = robust set, 50 = sensitive set (ch. 4.1.2)")
    h0_m: float = param(0.01, "m", 0.0, 0.5, "initial gap h0 between experimental mass and ground")
    dz_max_m: float = param(0.005, "m", 0.0, 0.5, "extra suspension travel dz_max beyond h0")
    f_d_hz: float = param(0.25, "Hz", 1e-3, 10.0, "suspension cosine frequency f_d (one test = 1/f_d)")
    l0_m: float = param(0.071, "m", 0.0, 1.0, "rest length l0 of k_EXP (geometry only, not in the dynamics)")
    m_exp_kg: float = param(0.38, "kg", 1e-4, 100.0, "experimental mass m_EXP")
    k_exp_n_per_m: float = param(8650.0, "N/m", 1.0, 1e8, "experimental spring k_EXP")
    g_m_per_s2: float = param(9.81, "m/s^2", 0.0, 20.0, "gravitational acceleration g")
    dt_s: float = param(0.001, "s", 1e-5, 0.1, "synchronisation / integration step dT")
    ground_stiffness_n_per_m: float = param(1e9, "N/m", 1e3, 1e12,
                                            "penalty ground stiffness of the reference solution (§4.3)")
    ground_damping_kg_per_s: float = param(500.0, "kg/s", 0.0, 1e6,
                                           "penalty ground damping of the reference solution (§4.3)")
    reference_gate: str = param("contact_phase", "", doc=(
        "force gating of the reference solution: 'contact_phase' = F_int is measured from touch-down until the "
        "spring unloads to the hanging weight (rebounds included); 'ground_contact' = only while the ground "
        "penalty force acts"), choices=GATE_CHOICES)

    def validate(self) -> None:
        if self.dt_s * self.f_d_hz > 0.05:
            raise ParameterError(f"dt_s: {self.dt_s!r} is too coarse for f_d_hz={self.f_d_hz!r}; "
                                 f"expected dt_s <= 0.05/f_d_hz = {0.05 / self.f_d_hz:g} s")

    @property
    def amplitude_m(self) -> float:
        """Cosine amplitude (h0 + dz_max)/2."""
        return 0.5 * (self.h0_m + self.dz_max_m)

    @property
    def omega_d_rad_s(self) -> float:
        return 2.0 * math.pi * self.f_d_hz

    @property
    def external_force_num_n(self) -> float:
        """F_ext^NUM = (m_NUM + m_EXP) g, the constant external force on the numerical mass."""
        return (self.m_num_kg + self.m_exp_kg) * self.g_m_per_s2

    @property
    def flight_force_n(self) -> float:
        """Gated interface force m_EXP g fed to the numerical part without contact."""
        return self.m_exp_kg * self.g_m_per_s2

    @property
    def test_duration_s(self) -> float:
        """One test (one bump, one ILC iteration) lasts 1/f_d."""
        return 1.0 / self.f_d_hz


def suspension(params: Contact1DParams, t):
    """Suspension excitation ``(z_d, z_d')`` at time(s) ``t`` (deviation form, ``z_d(0) = 0``).

    ``z_d = -A (1 - cos(w t))``, ``z_d' = -A w sin(w t)``, ``A = (h0 + dz_max)/2``, ``w = 2 pi f_d``.
    Scalars in, floats out; arrays in, arrays out.
    """
    a, w = params.amplitude_m, params.omega_d_rad_s
    if np.ndim(t) == 0:
        t = float(t)
        return -a * (1.0 - math.cos(w * t)), -a * w * math.sin(w * t)
    t = np.asarray(t, dtype=np.float64)
    return -a * (1.0 - np.cos(w * t)), -a * w * np.sin(w * t)


@numba.njit(cache=True)
def msd_step(rk, b0, inv_m, f_int, k, dt, y, kbuf, out):  # pragma: no cover - numba
    """One step of :meth:`NumericalMSD.step` from ``y`` at step ``k`` with ``F_int`` held: the RK input
    ``b[1] = b0 - F_int / m``, then the DOP853 step into ``out``, copied to ``y``.  ``rk`` = (stage matrix,
    weights, nodes, A, b, c, s, omega) of :class:`~rths_ros.core.numerics.integrators.AffineHarmonicRK`."""
    ta, tb, tc, a, b, c, s, omega = rk
    b[1] = b0 - f_int * inv_m
    erk_affine_harmonic_step(ta, tb, tc, a, b, c, s, omega, k * dt, dt, y, kbuf, out)
    y[0] = out[0]
    y[1] = out[1]


class NumericalMSD:
    """Numerical substructure: ``m_NUM`` on ``k_NUM || d_NUM`` driven by the suspension.

    State ``(z, z')`` in the deviation form of the module docstring.  :meth:`step` advances
    ``t_k -> t_{k+1}`` with ``F_int`` held constant over the step (zero-order hold) and the
    suspension ``z_d(t), z_d'(t)`` evaluated at every stage of the 8th-order Dormand-Prince
    step (Simulink ode8 class, Table A.2).  The constant terms ``-m_NUM g + F_ext^NUM`` with
    ``F_ext^NUM = (m_NUM + m_EXP) g`` are part of the model; they equal ``m_EXP g`` so that
    ``F_int = m_EXP g`` keeps the system at rest.
    """

    def __init__(self, params: Contact1DParams | None = None) -> None:
        p = params or Contact1DParams()
        self.params = p
        m, k, d = p.m_num_kg, p.k_num_n_per_m, p.d_num_kg_per_s
        a, w = p.amplitude_m, p.omega_d_rad_s
        self.dt = p.dt_s
        # gravity on m_NUM plus the constant external force: -m_NUM g + (m_NUM + m_EXP) g
        self._const_force = -m * p.g_m_per_s2 + p.external_force_num_n
        self._inv_m = 1.0 / m
        A = np.array([[0.0, 1.0], [-k / m, -d / m]])
        # k (z_d) + d (z_d') with z_d = -a + a cos(wt), z_d' = -a w sin(wt)
        self._b0 = (-k * a + self._const_force) / m
        c = np.array([0.0, k * a / m])
        s = np.array([0.0, -d * a * w / m])
        self._rk = AffineHarmonicRK(A, np.array([0.0, self._b0]), c, s, w, DOP853)
        self._y = np.zeros(2)
        self._next = np.zeros(2)
        rk = self._rk
        #: the integrator's arrays and constants, as :func:`msd_step` takes them
        self.rk_args = (rk._ta, rk._tb, rk._tc, rk.A, rk.b, rk.c, rk.s, rk.omega)
        self.k = 0
        self.reset()

    # --- state -------------------------------------------------------------------------
    def reset(self) -> None:
        """Rest state: ``z = z' = 0`` at ``k = 0``."""
        self._y[:] = 0.0
        self.k = 0

    def set_state(self, z: float, zdot: float, k: int = 0) -> None:
        self._y[0] = float(z)
        self._y[1] = float(zdot)
        self.k = int(k)

    @property
    def t(self) -> float:
        """Time ``t_k = k dT`` of the current state."""
        return self.k * self.dt

    @property
    def position(self) -> float:
        return float(self._y[0])

    @property
    def velocity(self) -> float:
        return float(self._y[1])

    # --- dynamics ----------------------------------------------------------------------
    def acceleration(self, f_int: float, z: float | None = None, zdot: float | None = None,
                     t: float | None = None) -> float:
        """``z''`` of the equation of motion (for checks; the stepping does not use it)."""
        z = self.position if z is None else z
        zdot = self.velocity if zdot is None else zdot
        t = self.t if t is None else t
        zd, zd_dot = suspension(self.params, t)
        p = self.params
        return (p.k_num_n_per_m * (zd - z) + p.d_num_kg_per_s * (zd_dot - zdot)
                + self._const_force - f_int) * self._inv_m

    def step(self, f_int: float) -> tuple[float, float]:
        """Advance one step with ``F_int`` held; returns ``(z_{k+1}, z'_{k+1})``."""
        msd_step(self.rk_args, self._b0, self._inv_m, float(f_int), self.k, self.dt, self._y, self._rk._k, self._next)
        self.k += 1
        return float(self._y[0]), float(self._y[1])


# ----------------------------------------------------------------------------------------
# Reference solution
# ----------------------------------------------------------------------------------------
_FLIGHT, _GROUND, _REBOUND = 0, 1, 2  # gate off / ground force acting / gate on without ground force


def _mode_matrices(p: Contact1DParams) -> np.ndarray:
    """System matrices of the three modes for the augmented state [z, z', y, y', 1, cos, sin]."""
    m, k, d = p.m_num_kg, p.k_num_n_per_m, p.d_num_kg_per_s
    me, ke = p.m_exp_kg, p.k_exp_n_per_m
    kg, cg = p.ground_stiffness_n_per_m, p.ground_damping_kg_per_s
    a, w = p.amplitude_m, p.omega_d_rad_s
    flight = np.zeros((7, 7))
    flight[0, 1] = 1.0
    flight[1, 0], flight[1, 1] = -k / m, -d / m
    flight[1, 4], flight[1, 5], flight[1, 6] = -k * a / m, k * a / m, -d * a * w / m
    flight[2, 3] = 1.0
    flight[3, 0], flight[3, 2] = ke / me, -ke / me          # specimen mass hangs on k_EXP
    flight[5, 6], flight[6, 5] = -w, w                      # cos/sin oscillator of the excitation
    rebound = flight.copy()                                 # gate on: m_NUM feels -(F_int - m_EXP g)
    rebound[1, 0] -= ke / m
    rebound[1, 2] += ke / m
    ground = rebound.copy()                                 # plus penalty force kg*pen - cg*y'
    ground[3, 4] -= kg * p.h0_m / me
    ground[3, 2] -= kg / me
    ground[3, 3] -= cg / me
    return np.stack([flight, ground, rebound])


@numba.njit(cache=True)
def _mode_of(s, prev, h0, kg, cg, latch):  # pragma: no cover - numba
    pen = -h0 - s[2]
    if pen > 0.0 and kg * pen - cg * s[3] > 0.0:
        return 1
    if latch and prev != 0 and s[0] - s[2] < 0.0:
        return 2
    return 0


@numba.njit(cache=True)
def _simulate_modes(P, emax, n_steps, J, h0, kg, cg, latch, max_events):  # pragma: no cover - numba
    """Exact piecewise-linear propagation with dyadic event location.

    ``P[mode, e]`` is the transition matrix over ``2**e`` ticks (``tick = dT / 2**J``).
    A step that would change the mode is halved until it spans one tick; the mode switch is
    then taken after that tick, so event times are located to one tick.
    """
    s = np.zeros(7)
    s[4] = 1.0
    s[5] = 1.0
    X = np.zeros((n_steps + 1, 4))
    modes = np.zeros(n_steps + 1, np.int8)
    ev_t = np.zeros(max_events)
    ev_mode = np.zeros(max_events, np.int8)
    nev = 0
    mode = 0
    N = np.int64(1) << J
    tmp = np.zeros(7)
    for kk in range(n_steps):
        pos = np.int64(0)
        while pos < N:
            e = emax[mode]
            if pos > 0:
                tz = 0
                q = pos
                while (q & 1) == 0:
                    q >>= 1
                    tz += 1
                if tz < e:
                    e = tz
            while pos + (np.int64(1) << e) > N:
                e -= 1
            while True:
                for r in range(7):
                    acc = 0.0
                    for c in range(7):
                        acc += P[mode, e, r, c] * s[c]
                    tmp[r] = acc
                new_mode = _mode_of(tmp, mode, h0, kg, cg, latch)
                if new_mode != mode and e > 0:
                    e -= 1
                    continue
                break
            for r in range(7):
                s[r] = tmp[r]
            pos += np.int64(1) << e
            if new_mode != mode:
                if nev < max_events:
                    ev_t[nev] = kk + pos / N
                    ev_mode[nev] = new_mode
                    nev += 1
                mode = new_mode
        for r in range(4):
            X[kk + 1, r] = s[r]
        modes[kk + 1] = mode
    return X, modes, ev_t[:nev], ev_mode[:nev]


def _dyadic_level(step_s: float, dt: float) -> int:
    """Smallest l with dt / 2**l <= step_s."""
    return max(0, int(math.ceil(math.log2(dt / step_s))))


@functools.lru_cache(maxsize=16)
def _reference_cached(p: Contact1DParams, n_steps: int) -> dict:
    from scipy.linalg import expm
    dt = p.dt_s
    me = p.m_exp_kg
    w_ground = math.sqrt(p.ground_stiffness_n_per_m / me)
    w_spring = math.sqrt(p.k_exp_n_per_m / me)
    # largest steps: 1/32 of the ground-contact period while the gate is on, 1/16 of the
    # specimen period (and at most dT) in flight; events are located 2**10 finer
    lvl_contact = _dyadic_level(2.0 * math.pi / w_ground / 32.0, dt)
    lvl_flight = _dyadic_level(2.0 * math.pi / w_spring / 16.0, dt)
    J = lvl_contact + 10
    emax = np.array([J - lvl_flight, J - lvl_contact, J - lvl_contact], dtype=np.int64)
    A = _mode_matrices(p)
    P = np.zeros((3, int(emax.max()) + 1, 7, 7))
    for mode in range(3):
        for e in range(int(emax[mode]) + 1):
            P[mode, e] = expm(A[mode] * (dt * 2.0 ** (e - J)))
    X, modes, ev_t, ev_mode = _simulate_modes(P, emax, n_steps, J, p.h0_m, p.ground_stiffness_n_per_m,
                                              p.ground_damping_kg_per_s, p.reference_gate == "contact_phase",
                                              100000)
    t = np.arange(n_steps + 1) * dt
    z, zdot, y = X[:, 0], X[:, 1], X[:, 2]
    contact = modes != _FLIGHT
    f_int = np.where(contact, p.flight_force_n + p.k_exp_n_per_m * (z - y), p.flight_force_n)
    pen = -p.h0_m - y
    ground_force = np.where(modes == _GROUND,
                            np.maximum(0.0, p.ground_stiffness_n_per_m * pen - p.ground_damping_kg_per_s * X[:, 3]),
                            0.0)
    ev_t = ev_t * dt
    td = ev_t[ev_mode == _GROUND]
    touchdown = float(td[0]) if td.size else math.nan
    lo = ev_t[(ev_mode == _FLIGHT) & (ev_t > touchdown)] if td.size else ev_t[:0]
    liftoff = float(lo[0]) if lo.size else math.nan
    i_min = int(np.argmin(z))
    out = {
        "t": t, "z": z.copy(), "zdot": zdot.copy(), "f_int": f_int, "contact": contact,
        "z_exp": y.copy(), "ground_force": ground_force, "z_d": suspension(p, t)[0],
        "touchdown_s": touchdown, "liftoff_s": liftoff,
        "min_z_m": float(z[i_min]), "t_min_z_s": float(t[i_min]),
        "peak_contact_force_n": float(np.max(p.flight_force_n - f_int)) if contact.any() else 0.0,
        "n_impacts": int(np.count_nonzero(ev_mode == _GROUND)),
    }
    for v in out.values():
        if isinstance(v, np.ndarray):
            v.flags.writeable = False
    return out


def reference_solution(params: Contact1DParams | None = None, t_end_s: float | None = None) -> dict:
    """Reference solution ``z^r`` of the overall system (thesis §4.4), sampled every ``dT``.

    Model: numerical part of :class:`NumericalMSD` coupled through an ideal transfer system
    (``z' = z``) to the specimen mass ``m_EXP`` on ``k_EXP`` (no damping); ground contact by
    the penalty method, force ``N = max(0, k_g pen - d_g y')`` while the mass penetrates
    (non-adhesive).  Force gating as in the real test: the numerical part receives
    ``F_int = m_EXP g`` outside the contact phase and the spring tension
    ``m_EXP g + k_EXP (z - y)`` inside it.  With ``reference_gate = 'contact_phase'`` the
    contact phase runs from the first ground contact until the spring has unloaded to the
    hanging weight after the last separation (rebounds of the mass right after the impact
    belong to it); with ``'ground_contact'`` the gate follows the penalty force itself.

    Method: the model is linear within each of its three modes (flight / ground force /
    gated rebound), so it is propagated exactly with matrix exponentials of the augmented
    state ``[z, z', y, y', 1, cos, sin]``.  Steps are at most ``dT`` in flight and 1/32 of
    the ground-contact period while the gate is on; a mode change is located by dyadic
    bisection to ``2**-10`` of that step.  There is no stiffness-induced instability and no
    integration error besides round-off.

    Returns arrays ``t, z, zdot, f_int, contact, z_exp, ground_force, z_d`` (one entry per
    ``dT`` sample, ``contact`` = gate state at ``t_k``; read-only, cached) and scalars
    ``touchdown_s, liftoff_s`` (exact event times of the gate), ``min_z_m, t_min_z_s``,
    ``peak_contact_force_n = max(m_EXP g - F_int)`` (the quasi-static ground load through the
    spring, not the penalty impact spike) and ``n_impacts`` (ground contacts incl. rebounds).
    """
    p = params or Contact1DParams()
    t_end = p.test_duration_s if t_end_s is None else float(t_end_s)
    n_steps = int(round(t_end / p.dt_s))
    if n_steps < 1:
        raise ValueError(f"t_end_s={t_end!r} is shorter than one step dt_s={p.dt_s!r}")
    return dict(_reference_cached(p, n_steps))


def contact_events(t, contact) -> tuple[float, float]:
    """``(touchdown_s, liftoff_s)`` of a sampled contact flag.

    Touch-down = time of the first sample with contact (first rising edge; ``t[0]`` if the
    record starts in contact), lift-off = time of the first sample without contact after it
    (first subsequent falling edge).  ``nan`` where an edge does not exist.
    """
    t = np.asarray(t, dtype=np.float64)
    c = np.asarray(contact, dtype=bool)
    if t.shape != c.shape:
        raise ValueError("t and contact must have the same shape")
    on = np.flatnonzero(c)
    if on.size == 0:
        return math.nan, math.nan
    i_td = int(on[0])
    off = np.flatnonzero(~c[i_td:])
    return float(t[i_td]), (float(t[i_td + int(off[0])]) if off.size else math.nan)


class SteppedMSD:
    """Common part of the alternative integrators of the contact test's numerical part
    (:class:`rths_ros.core.models.contact1d.newmark.NewmarkMSD`,
    :class:`rths_ros.core.models.contact1d.independent.IndependentMSD`): the model constants, the forcing of the
    moving suspension and the demand (z, z') a subclass keeps in ``_z``, ``_zd`` with its step count ``k``."""

    def _set_model(self, p: Contact1DParams, dt_s: float) -> None:
        self.params = p
        self.dt = float(dt_s)
        self._m, self._k, self._d = p.m_num_kg, p.k_num_n_per_m, p.d_num_kg_per_s
        self._a, self._w = p.amplitude_m, p.omega_d_rad_s
        self._const = -p.m_num_kg * p.g_m_per_s2 + p.external_force_num_n      # = m_EXP g
        self._z = 0.0
        self._zd = 0.0
        self.k = 0

    def _f_ext(self, t: float) -> float:
        """``k z_d(t) + d z_d'(t) + m_EXP g`` (everything but the interface force)."""
        zd = -self._a * (1.0 - math.cos(self._w * t))
        zdd = -self._a * self._w * math.sin(self._w * t)
        return self._k * zd + self._d * zdd + self._const

    @property
    def t(self) -> float:
        return self.k * self.dt

    @property
    def position(self) -> float:
        """The current interface demand ``z``."""
        return self._z

    @property
    def velocity(self) -> float:
        """The current interface velocity demand ``z'``."""
        return self._zd
