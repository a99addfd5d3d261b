"""Digital twin of the six Stewart-platform legs and their decentralised cascade controllers.

Insam 2022, §4.2.2 and §4.3.1, Fig. 4.4, Table 4.1, Table A.1.

Each leg ``i`` is the identified current -> length model (eq. 4.2, Table 4.1)::

    P_i(s) = B'_i(s) / I_i(s) = k_i w_c,i / (s (s + w_c,i))          [m/A]

i.e. ``b''  = -w_c b' + (k_i w_c) i`` with the current loop assumed ideal (G_i = 1).  It is driven by
the cascade of Fig. 4.4 (per leg, decoupled)::

    v_cmd = K_Pp (b_cmd - b') + ff_velocity                # P position loop (+ VFF/ILC injection)
    i     = K_Pv (v_cmd - b'dot) + K_Iv * int (v_cmd - b'dot) dt   # PI velocity loop G_v

The controller is sampled at the internal rate ``substeps / dt`` (>= 10 kHz by default; current held
over a sub-step), the leg dynamics are discretised exactly (zero-order hold) per sub-step.  The whole
sampled loop is linear and the commands are held over one synchronisation step, so the ``substeps``
sub-step maps are composed once in ``__init__`` into one exact affine map per leg; the per-step work is
a 3x3 matrix-vector product per leg in a numba kernel.

The controller uses the true leg length and rate (the resolver quantisation of the measured signals is
applied by :mod:`rths_ros.core.plant.sim_plant`).  Friction, leg coupling, current saturation and the effect of
the specimen force on the legs are not modelled, as in the thesis's identified model.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import numpy as np

from rths_ros.core.numerics.kernel import kernel
from rths_ros.params import ParameterError, param

N_LEGS = 6

#: Table A.1 of Insam 2022: (K_Pp [1/s], K_Pv [A s/m], K_Iv [A/m]).
CASCADE_PRESETS = {
    "PPI1": (20.0, 0.2, 1.0),
    "PPI2": (50.0, 0.2, 5.0),
}

_GAIN_FIELDS = ("k_pp_per_s", "k_pv_a_s_per_m", "k_iv_a_per_m")


@dataclass(frozen=True)
class LegCascadeParams:
    """Gains of the per-leg cascade (Table A.1).

    With ``preset`` 'PPI1' (chapters 4-7) or 'PPI2' (chapter 8) the three gains are taken from
    Table A.1; gain fields left at their defaults are filled from the preset, a gain that differs from
    both its default and the preset value is rejected by :meth:`validate`.  Use ``preset: custom`` for
    own gains.
    """

    preset: str = param("PPI1", "", doc="gain set of Table A.1, or 'custom' to use the three gains below",
                         choices=("PPI1", "PPI2", "custom"))
    k_pp_per_s: float = param(20.0, "1/s", 0.0, 1e4, "position loop gain K_Pp")
    k_pv_a_s_per_m: float = param(0.2, "A s/m", 0.0, 1e3, "velocity loop proportional gain K_Pv")
    k_iv_a_per_m: float = param(1.0, "A/m", 0.0, 1e5, "velocity loop integral gain K_Iv")

    def __post_init__(self) -> None:
        if self.preset == "custom":
            return
        preset_vals = CASCADE_PRESETS[self.preset]
        defaults = {f.name: f.default for f in fields(self)}
        for name, val in zip(_GAIN_FIELDS, preset_vals):
            if getattr(self, name) == defaults[name]:
                object.__setattr__(self, name, float(val))

    def validate(self) -> None:
        if self.preset == "custom":
            return
        for name, val in zip(_GAIN_FIELDS, CASCADE_PRESETS[self.preset]):
            if getattr(self, name) != val:
                raise ParameterError(
                    f"{name}: {getattr(self, name)!r} contradicts preset {self.preset!r} ({val:g}); "
                    f"allowed: leave it out or set preset: custom")

    @classmethod
    def PPI1(cls) -> LegCascadeParams:
        """K_Pp = 20 1/s, K_Pv = 0.2 As/m, K_Iv = 1 A/m (Insam 2022, chapters 4-7)."""
        return cls(preset="PPI1")

    @classmethod
    def PPI2(cls) -> LegCascadeParams:
        """K_Pp = 50 1/s, K_Pv = 0.2 As/m, K_Iv = 5 A/m (Insam 2022, chapter 8 and Part III)."""
        return cls(preset="PPI2")

    @property
    def gains(self) -> tuple[float, float, float]:
        """(K_Pp, K_Pv, K_Iv)."""
        return (self.k_pp_per_s, self.k_pv_a_s_per_m, self.k_iv_a_per_m)


@dataclass(frozen=True)
class LegPlantParams:
    """Identified leg models P_i(s) = gain_num_i / (s (s + omega_c_i)) of Table 4.1 (current -> length)."""

    gain_num: tuple[float, ...] = param([1011.0, 1053.1, 1123.5, 780.9, 988.1, 1070.9], "m/(A s^2)",
                                        1e-6, 1e7, "numerator k_i*w_c,i of P_i(s) per leg (Table 4.1)",
                                        length=N_LEGS)
    omega_c_rad_per_s: tuple[float, ...] = param([122.9, 55.5, 54.7, 55.3, 66.2, 59.0], "rad/s", 1e-3, 1e5,
                                                 "corner frequency w_c,i = 1/T_i per leg (Table 4.1)",
                                                 length=N_LEGS)


# ----------------------------------------------------------------------------------------------
# analytic closed-loop transfer functions (continuous controller), used for checks and secondary paths


def closed_loop_frf(freq_hz, leg: int, plant: LegPlantParams | None = None,
                    cascade: LegCascadeParams | None = None, vff: bool = False) -> np.ndarray:
    """Continuous-time closed loop B'(jw)/B(jw) of one leg (0-based index ``leg``).

    ``T_v = G_v s P / (1 + G_v s P)``; without VFF ``T = K_Pp T_v / (s + K_Pp T_v)``, with velocity
    feedforward ``T = (s + K_Pp) T_v / (s + K_Pp T_v)`` (Insam 2022, §2.3).
    """
    plant = plant or LegPlantParams()
    cascade = cascade or LegCascadeParams()
    kpp, kpv, kiv = cascade.gains
    s = 2j * np.pi * np.asarray(freq_hz, dtype=float)
    k = plant.gain_num[leg]
    wc = plant.omega_c_rad_per_s[leg]
    sp = k / (s + wc)                          # s * P(s)
    gv = kpv + kiv / s
    tv = gv * sp / (1.0 + gv * sp)
    if vff:
        return (s + kpp) * tv / (s + kpp * tv)
    return kpp * tv / (s + kpp * tv)


# ----------------------------------------------------------------------------------------------
# discretisation


def _substep_map(k: float, wc: float, kpp: float, kpv: float, kiv: float, h: float):
    """One controller sample of length ``h``: x+ = F x + G u, current = c x + d u.

    State x = (b', b'dot, xi) with xi the integral of the velocity error; input u = (b_cmd, ff).
    The controller is evaluated at the start of the sub-step (backward-Euler integral), the current
    is held over the sub-step and the leg moves exactly.
    """
    from scipy.linalg import expm
    a = np.array([[0.0, 1.0, 0.0], [0.0, -wc, k], [0.0, 0.0, 0.0]])
    e = expm(a * h)
    phi = e[:2, :2]           # leg state transition
    gam = e[:2, 2]            # response to a held unit current
    # velocity error e_v = c_e x + d_e u
    c_e = np.array([-kpp, -1.0, 0.0])
    d_e = np.array([kpp, 1.0])
    # xi+ = xi + h e_v ; current = K_Pv e_v + K_Iv xi+
    c_i = (kpv + kiv * h) * c_e + np.array([0.0, 0.0, kiv])
    d_i = (kpv + kiv * h) * d_e
    f = np.zeros((3, 3))
    g = np.zeros((3, 2))
    f[:2, :2] = phi
    f[:2, :] += np.outer(gam, c_i)
    g[:2, :] = np.outer(gam, d_i)
    f[2, :] = np.array([0.0, 0.0, 1.0]) + h * c_e
    g[2, :] = h * d_e
    return f, g, c_i, d_i


def _step_map(k, wc, kpp, kpv, kiv, dt, substeps):
    """Compose ``substeps`` sub-step maps into x_{k+1} = M x_k + N u, current of the last sub-step
    i = C x_k + D u.  (Copies of the maps computed once per process for the same numbers: the six matrix
    exponentials were most of a virtual run's construction, and a sweep builds the same legs for every point.)"""
    return tuple(a.copy() for a in _step_map_cached(float(k), float(wc), float(kpp), float(kpv), float(kiv),
                                                    float(dt), int(substeps)))


@functools.lru_cache(maxsize=256)
def _step_map_cached(k, wc, kpp, kpv, kiv, dt, substeps):
    h = dt / substeps
    f, g, c_i, d_i = _substep_map(k, wc, kpp, kpv, kiv, h)
    m = np.eye(3)
    n = np.zeros((3, 2))
    for _ in range(substeps - 1):
        m = f @ m
        n = f @ n + g
    # state at the start of the last sub-step is m x + n u
    c_last = c_i @ m
    d_last = c_i @ n + d_i
    m_full = f @ m
    n_full = f @ n + g
    return m_full, n_full, c_last, d_last


@kernel(nogil=True)
def _legs_step(x, b_cmd, ff, m, n, c, d, current_out):
    """x[i] <- M[i] x[i] + N[i] (b_cmd[i], ff[i]) for the six legs, and the last sub-step's current."""
    for i in range(x.shape[0]):
        x0 = x[i, 0]
        x1 = x[i, 1]
        x2 = x[i, 2]
        u0 = b_cmd[i]
        u1 = ff[i]
        current_out[i] = c[i, 0] * x0 + c[i, 1] * x1 + c[i, 2] * x2 + d[i, 0] * u0 + d[i, 1] * u1
        for r in range(3):
            x[i, r] = m[i, r, 0] * x0 + m[i, r, 1] * x1 + m[i, r, 2] * x2 + n[i, r, 0] * u0 + n[i, r, 1] * u1


class LegCascade:
    """Six independent legs P_i(s) under the P-PI cascade, advanced one synchronisation step at a time.

    Parameters
    ----------
    plant_params, cascade_params:
        Table 4.1 leg models and Table A.1 gains.
    dt_s:
        synchronisation step (1 ms in the thesis); ``b_cmd`` and ``ff_velocity`` are held over it.
    substeps:
        controller samples per step (10 -> 10 kHz internal rate).

    Attributes ``length`` (b' [m]), ``velocity`` (b'dot [m/s]) and ``current`` (i [A], the value applied
    during the last sub-step) are views of the internal state, updated in place by :meth:`step`.
    """

    def __init__(self, plant_params: LegPlantParams | None = None,
                 cascade_params: LegCascadeParams | None = None, dt_s: float = 1e-3, substeps: int = 10):
        if not dt_s > 0.0:
            raise ParameterError(f"dt_s: {dt_s!r} is not allowed; expected a number > 0 s")
        if int(substeps) != substeps or substeps < 1:
            raise ParameterError(f"substeps: {substeps!r} is not allowed; expected an integer >= 1")
        self.plant_params = plant_params or LegPlantParams()
        self.cascade_params = cascade_params or LegCascadeParams()
        self.cascade_params.validate()
        self.dt_s = float(dt_s)
        self.substeps = int(substeps)
        kpp, kpv, kiv = self.cascade_params.gains
        self._m = np.empty((N_LEGS, 3, 3))
        self._n = np.empty((N_LEGS, 3, 2))
        self._c = np.empty((N_LEGS, 3))
        self._d = np.empty((N_LEGS, 2))
        for i in range(N_LEGS):
            self._m[i], self._n[i], self._c[i], self._d[i] = _step_map(
                self.plant_params.gain_num[i], self.plant_params.omega_c_rad_per_s[i],
                kpp, kpv, kiv, self.dt_s, self.substeps)
        self._x = np.zeros((N_LEGS, 3))
        self._current = np.zeros(N_LEGS)
        self._cmd = np.zeros(N_LEGS)
        self._ff = np.zeros(N_LEGS)
        # warm up the kernel on scratch arrays (compiles or loads from cache)
        _legs_step(np.zeros((N_LEGS, 3)), self._cmd, self._ff, self._m, self._n, self._c, self._d,
                   np.zeros(N_LEGS))

    @property
    def length(self) -> np.ndarray:
        return self._x[:, 0]

    @property
    def velocity(self) -> np.ndarray:
        return self._x[:, 1]

    @property
    def current(self) -> np.ndarray:
        return self._current

    def reset(self, lengths0) -> None:
        """Legs at rest at ``lengths0`` (6,), integrators and currents zero."""
        self._x[:, 0] = np.asarray(lengths0, dtype=float)
        self._x[:, 1:] = 0.0
        self._current[:] = 0.0

    def step(self, b_cmd, ff_velocity=None) -> None:
        """Advance one ``dt_s`` with the length command ``b_cmd`` (6,) [m] and the velocity-level
        feedforward ``ff_velocity`` (6,) [m/s] (VFF b_dot, ILC) held over the step."""
        self._cmd[:] = b_cmd
        if ff_velocity is None:
            self._ff[:] = 0.0
        else:
            self._ff[:] = ff_velocity
        _legs_step(self._x, self._cmd, self._ff, self._m, self._n, self._c, self._d, self._current)
