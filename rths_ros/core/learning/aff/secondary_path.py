"""Secondary-path model of the adaptive feedforward filters: the closed loop B'(s)/B(s) of each leg
(Insam 2022 §7.1), discretised and run sample by sample (one numba kernel for the six legs)."""
from __future__ import annotations

import numba
import numpy as np

from rths_ros.core.plant.legs import N_LEGS, LegCascadeParams, LegPlantParams
from rths_ros.params import ParameterError

__all__ = ["SecondaryPath", "closed_loop_tf"]


# ----------------------------------------------------------------------------------------------
# secondary path


def closed_loop_tf(leg: int, plant: LegPlantParams | None = None, cascade: LegCascadeParams | None = None,
                   vff: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(numerator, denominator) polynomial coefficients in s of the closed loop B'(s)/B(s) of one leg.

    With ``N_v = k (K_Pv s + K_Iv)``, ``D_v = s^2 + (w_c + k K_Pv) s + k K_Iv`` (so ``T_v = N_v / D_v``)::

        T_fb  = K_Pp N_v / (s D_v + K_Pp N_v)
        T_VFF = (s + K_Pp) N_v / (s D_v + K_Pp N_v)

    the same functions as :func:`rths_ros.core.plant.legs.closed_loop_frf`, in polynomial form.
    """
    plant = plant or LegPlantParams()
    cascade = cascade or LegCascadeParams()
    kpp, kpv, kiv = cascade.gains
    k = plant.gain_num[leg]
    wc = plant.omega_c_rad_per_s[leg]
    nv = np.array([k * kpv, k * kiv])
    dv = np.array([1.0, wc + k * kpv, k * kiv])
    den = np.polyadd(np.polymul([1.0, 0.0], dv), kpp * nv)
    num = np.polymul([1.0, kpp], nv) if vff else kpp * nv
    return num, den


@numba.njit(cache=True, nogil=True, inline="always")
def _sp_leg(a, b, c, d, x, i, u, xn):
    """Leg ``i`` of the secondary path: returns y = C x + D u and sets x <- A x + B u (``xn``: scratch)."""
    n = x.shape[1]
    y = d[i] * u
    for r in range(n):
        y += c[i, r] * x[i, r]
    for r in range(n):
        s = b[i, r] * u
        for q in range(n):
            s += a[i, r, q] * x[i, q]
        xn[r] = s
    for r in range(n):
        x[i, r] = xn[r]
    return y


@numba.njit(cache=True, nogil=True)
def _sp_step(a, b, c, d, x, u, y_out, xn):
    """All legs of the secondary path, one sample: y_out[i] = _sp_leg(..., u[i])."""
    for i in range(x.shape[0]):
        y_out[i] = _sp_leg(a, b, c, d, x, i, u[i], xn)


class SecondaryPath:
    """Discrete model S of the six legs' secondary paths (desired -> achieved leg length), one LTI per leg.

    Standard state space per leg i: ``y = C_i x_i + D_i u``, ``x_i <- A_i x_i + B_i u``, where ``u`` is the
    desired length of step k+1 (held over t_k -> t_{k+1}) and ``y`` the model of the length measured at
    t_{k+1} (see the module doc for the one-sample-advanced ZOH form).

    ``kind``: 'closed_loop' (T_VFF if ``vff`` else T_fb, ZOH at ``dt_s``) or 'identity'.
    """

    def __init__(self, kind: str = "closed_loop", leg_plant_params: LegPlantParams | None = None,
                 cascade_params: LegCascadeParams | None = None, vff: bool = False, dt_s: float = 1e-3):
        if kind not in ("closed_loop", "identity"):
            raise ParameterError(f"secondary_path: {kind!r} is not allowed; expected one of 'closed_loop', "
                                 "'identity'")
        if not dt_s > 0.0:
            raise ParameterError(f"dt_s: {dt_s!r} is not allowed; expected a number > 0 s")
        self.kind = kind
        self.vff = bool(vff)
        self.dt_s = float(dt_s)
        self.leg_plant_params = leg_plant_params or LegPlantParams()
        self.cascade_params = cascade_params or LegCascadeParams()
        self.cascade_params.validate()
        if kind == "identity":
            n = 1
            self.a = np.zeros((N_LEGS, n, n))
            self.b = np.zeros((N_LEGS, n))
            self.c = np.zeros((N_LEGS, n))
            self.d = np.ones(N_LEGS)
        else:
            mats = []
            for i in range(N_LEGS):
                num, den = closed_loop_tf(i, self.leg_plant_params, self.cascade_params, self.vff)
                from scipy import signal  # imported on use: scipy.signal is slow to import
                ac, bc, cc, dc = signal.tf2ss(num, den)
                ad, bd, cd, dd, _ = signal.cont2discrete((ac, bc, cc, dc), self.dt_s, method="zoh")
                # one-sample advance: y_{k+1} = C (A x_k + B u_{k+1})
                mats.append((ad, bd[:, 0], (cd @ ad)[0], float((cd @ bd)[0, 0] + dd[0, 0])))
            n = mats[0][0].shape[0]
            self.a = np.array([m[0] for m in mats])
            self.b = np.array([m[1] for m in mats])
            self.c = np.array([m[2] for m in mats])
            self.d = np.array([m[3] for m in mats])
        self.order = n
        self.x = np.zeros((N_LEGS, n))
        self._y = np.zeros(N_LEGS)
        self._u = np.zeros(N_LEGS)
        self.scratch = np.zeros(n)
        _sp_step(self.a, self.b, self.c, self.d, np.zeros((N_LEGS, n)), self._u, np.zeros(N_LEGS), self.scratch)

    def dc_gain(self) -> np.ndarray:
        """Static gain C (I - A)^-1 B + D per leg (1 for both kinds)."""
        eye = np.eye(self.order)
        return np.array([self.c[i] @ np.linalg.solve(eye - self.a[i], self.b[i]) + self.d[i]
                         for i in range(N_LEGS)])

    def frf(self, freq_hz) -> np.ndarray:
        """Discrete frequency response H_i(e^{j w dt}), shape (6, len(freq_hz))."""
        f = np.atleast_1d(np.asarray(freq_hz, dtype=float))
        zs = np.exp(2j * np.pi * f * self.dt_s)
        eye = np.eye(self.order)
        out = np.empty((N_LEGS, f.size), dtype=complex)
        for i in range(N_LEGS):
            for j, z in enumerate(zs):
                out[i, j] = self.c[i] @ np.linalg.solve(z * eye - self.a[i], self.b[i]) + self.d[i]
        return out

    def reset(self, u0=None) -> None:
        """State at rest with the constant input ``u0`` (6,) (default 0): x = (I - A)^-1 B u0."""
        if u0 is None:
            self.x[:] = 0.0
            return
        u0 = np.asarray(u0, dtype=float)
        eye = np.eye(self.order)
        for i in range(N_LEGS):
            self.x[i] = np.linalg.solve(eye - self.a[i], self.b[i]) * u0[i]

    def step(self, u) -> np.ndarray:
        """Filter one sample ``u`` (6,); returns the filtered sample (internal buffer, overwritten next call)."""
        self._u[:] = u
        _sp_step(self.a, self.b, self.c, self.d, self.x, self._u, self._y, self.scratch)
        return self._y


# ----------------------------------------------------------------------------------------------
# the FXLMS step
