"""Interface forces and states through a transmission simulator (Bartl 2019 §3.2).

The experimental component is not instrumented at its interface.  It is mounted on a transmission simulator
(TS), a structure with a known model

    M q'' + D q' + K q = B_A f_A + G^T lambda              (eq. 3.10; q: TS coordinates, f_A: actuator forces)

whose interface motion is ``y_EXP = G q`` and whose sensors measure displacements ``y_d = C_d q`` and
accelerations ``y_a = C_a q''``.  Three estimators of the interface force ``lambda`` (the force the specimen puts
on the TS) are compared in the thesis:

- **projected forces** (eq. 3.15): ``lambda = -G^{T+} B_A f_A``, exact only when the TS has no inertia, stiffness
  or damping;
- **inverse dynamics** (eq. 3.14): ``lambda = G^{T+} (M q'' + D q' + K q - B_A f_A)`` from the sensors (q from the
  displacement sensors, q' and q'' from the accelerometers); every sensor's noise passes straight through;
- **the augmented-state Kalman filter** (eqs. 3.16-3.19): ``lambda`` joins the state ``x = [q; q'; lambda]`` as a
  random walk (``lambda' = 0`` plus process noise), and the filter fuses the model with both sensor kinds.

Choices where the thesis is silent (documented in docs/interface_estimation.md): the model is discretised with a
zero-order hold on ``f_A`` (matrix exponential of the augmented system); the innovation includes the direct
feed-through ``C_a M^-1 B_A f_A`` of the accelerometers (the thesis's printed update omits it, which would bias
the estimate whenever the actuators push); ``Q`` and ``R`` are diagonal, ``R`` defaults to the variance of the
sensors' uniform noise ``c^2/3``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import expm

__all__ = ["TransmissionSimulator", "augmented_model", "discretise_zoh", "AugmentedKalman", "projected_force",
           "inverse_dynamics_force"]


@dataclass(frozen=True)
class TransmissionSimulator:
    """The TS model of eq. 3.10 and its sensors (arrays; n coordinates, n_l interface forces, n_a actuators)."""

    M: np.ndarray
    D: np.ndarray
    K: np.ndarray
    G: np.ndarray          # (n_l, n): interface motion y_EXP = G q; the interface force enters as G^T lambda
    B_A: np.ndarray        # (n, n_a): actuator forces
    C_d: np.ndarray        # (n_d, n): displacement sensors
    C_a: np.ndarray        # (n_acc, n): acceleration sensors
    _minv: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = np.asarray(self.M).shape[0]
        for name, shape in (("M", (n, n)), ("D", (n, n)), ("K", (n, n))):
            if np.asarray(getattr(self, name)).shape != shape:
                raise ValueError(f"{name}: shape {np.asarray(getattr(self, name)).shape}, expected {shape}")
        for name in ("G", "C_d", "C_a"):
            if np.asarray(getattr(self, name)).ndim != 2 or np.asarray(getattr(self, name)).shape[1] != n:
                raise ValueError(f"{name}: shape {np.asarray(getattr(self, name)).shape}, expected (rows, {n})")
        if np.asarray(self.B_A).ndim != 2 or np.asarray(self.B_A).shape[0] != n:
            raise ValueError(f"B_A: shape {np.asarray(self.B_A).shape}, expected ({n}, actuators)")
        object.__setattr__(self, "_minv", np.linalg.inv(np.asarray(self.M, dtype=float)))

    @property
    def n(self) -> int:
        return int(np.asarray(self.M).shape[0])

    @property
    def n_l(self) -> int:
        return int(np.asarray(self.G).shape[0])


def augmented_model(ts: TransmissionSimulator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(A, B, C, D)`` of eqs. 3.16/3.17: state ``[q; q'; lambda]``, input ``f_A``, output ``[y_d; y_a]``."""
    n, nl = ts.n, ts.n_l
    mi = ts._minv
    G, K, Dm, BA = (np.asarray(x, dtype=float) for x in (ts.G, ts.K, ts.D, ts.B_A))
    A = np.zeros((2 * n + nl, 2 * n + nl))
    A[:n, n:2 * n] = np.eye(n)
    A[n:2 * n, :n] = -mi @ K
    A[n:2 * n, n:2 * n] = -mi @ Dm
    A[n:2 * n, 2 * n:] = mi @ G.T
    B = np.zeros((2 * n + nl, BA.shape[1]))
    B[n:2 * n] = mi @ BA
    Cd, Ca = np.asarray(ts.C_d, dtype=float), np.asarray(ts.C_a, dtype=float)
    C = np.vstack([np.hstack([Cd, np.zeros((Cd.shape[0], n + nl))]), Ca @ A[n:2 * n]])
    Dd = np.vstack([np.zeros((Cd.shape[0], BA.shape[1])), Ca @ B[n:2 * n]])
    return A, B, C, Dd


def discretise_zoh(A: np.ndarray, B: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Zero-order-hold discretisation ``x[k+1] = Ad x[k] + Bd u[k]``."""
    n, m = A.shape[0], B.shape[1]
    blk = np.zeros((n + m, n + m))
    blk[:n, :n] = A
    blk[:n, n:] = B
    e = expm(blk * dt)
    return e[:n, :n], e[:n, n:]


class AugmentedKalman:
    """The augmented-state Kalman filter of eqs. 3.16-3.19, one :meth:`step` per sample.

    ``q_force``: spectral density of the white noise driving the interface forces' rate (the random walk, N^2/s);
    ``q_accel``: that of an unmodelled acceleration of the TS coordinates (0: the TS model is trusted); both are
    discretised exactly over ``dt``.  ``r_disp`` and ``r_acc``: measurement-noise variances (default: uniform
    noise of ``c_d`` m and ``c_a`` m/s^2, variance c^2/3).
    """

    def __init__(self, ts: TransmissionSimulator, dt: float, q_force: float, q_accel: float = 0.0,
                 r_disp: float | None = None, r_acc: float | None = None, c_d: float = 8e-5, c_a: float = 0.1,
                 p0_force: float = 1e4) -> None:
        for name, v in (("dt", dt), ("q_force", q_force), ("p0_force", p0_force)):
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"{name}: {v!r} must be finite and > 0")
        if not (math.isfinite(q_accel) and q_accel >= 0.0):
            raise ValueError(f"q_accel: {q_accel!r} must be finite and >= 0")
        self.ts = ts
        A, B, self.C, self.Dd = augmented_model(ts)
        self.Ad, self.Bd = discretise_zoh(A, B, dt)
        n, nl = ts.n, ts.n_l
        self.nx = 2 * n + nl
        # continuous white noise on the force's rate (random walk, N^2/s) and on the TS accelerations ((m/s^2)^2 s),
        # discretised exactly (Van Loan) so that a force change within a step reaches the velocity states too
        qc = np.diag([0.0] * n + [q_accel] * n + [q_force] * nl)
        self.Q = _van_loan_q(A, qc, dt)
        nd, na = np.asarray(ts.C_d).shape[0], np.asarray(ts.C_a).shape[0]
        rd = c_d * c_d / 3.0 if r_disp is None else r_disp
        ra = c_a * c_a / 3.0 if r_acc is None else r_acc
        if not (rd > 0.0 and ra > 0.0):
            raise ValueError(f"r_disp, r_acc: {rd!r}, {ra!r} must be > 0")
        self.R = np.diag([rd] * nd + [ra] * na)
        self.x = np.zeros(self.nx)
        self.P = np.diag([0.0] * (2 * n) + [p0_force] * nl) + 1e-12 * np.eye(self.nx)

    @property
    def force(self) -> np.ndarray:
        return self.x[2 * self.ts.n:].copy()

    @property
    def q(self) -> np.ndarray:
        return self.x[:self.ts.n].copy()

    def step(self, f_prev: np.ndarray, f_now: np.ndarray, y_d: np.ndarray, y_a: np.ndarray) -> np.ndarray:
        """Predict over the last step with the actuator forces held there (``f_prev``), update with the
        measurements of this sample (the accelerations feel the actuator forces of this sample, ``f_now``) and
        return the interface-force estimate."""
        f_prev = np.asarray(f_prev, dtype=float)
        f_a = np.asarray(f_now, dtype=float)
        z = np.concatenate([np.asarray(y_d, dtype=float), np.asarray(y_a, dtype=float)])
        xp = self.Ad @ self.x + self.Bd @ f_prev
        pp = self.Ad @ self.P @ self.Ad.T + self.Q
        s = self.C @ pp @ self.C.T + self.R
        gain = np.linalg.lstsq(s, self.C @ pp, rcond=None)[0].T     # S may be near-singular with duplicate sensors
        self.x = xp + gain @ (z - self.C @ xp - self.Dd @ f_a)
        ikc = np.eye(self.nx) - gain @ self.C
        self.P = ikc @ pp @ ikc.T + gain @ self.R @ gain.T      # Joseph form: stays symmetric positive
        return self.force


def _van_loan_q(A: np.ndarray, qc: np.ndarray, dt: float) -> np.ndarray:
    """Covariance over one step of the state driven by continuous white noise of spectral density ``qc``."""
    n = A.shape[0]
    blk = np.zeros((2 * n, 2 * n))
    blk[:n, :n] = -A
    blk[:n, n:] = qc
    blk[n:, n:] = A.T
    e = expm(blk * dt)
    phi = e[n:, n:].T
    q = phi @ e[:n, n:]
    return 0.5 * (q + q.T)


def projected_force(ts: TransmissionSimulator, f_a: np.ndarray) -> np.ndarray:
    """Eq. 3.15: ``lambda = -G^{T+} B_A f_A`` (rows: samples)."""
    gtp = np.linalg.pinv(np.asarray(ts.G, dtype=float).T)
    return -(np.atleast_2d(f_a) @ (gtp @ np.asarray(ts.B_A, dtype=float)).T)


def inverse_dynamics_force(ts: TransmissionSimulator, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                           f_a: np.ndarray) -> np.ndarray:
    """Eq. 3.14 per sample (rows): ``lambda = G^{T+} (M q'' + D q' + K q - B_A f_A)``."""
    gtp = np.linalg.pinv(np.asarray(ts.G, dtype=float).T)
    res = (np.atleast_2d(qdd) @ np.asarray(ts.M, dtype=float).T + np.atleast_2d(qd) @ np.asarray(ts.D).T
           + np.atleast_2d(q) @ np.asarray(ts.K).T - np.atleast_2d(f_a) @ np.asarray(ts.B_A).T)
    return res @ gtp.T
