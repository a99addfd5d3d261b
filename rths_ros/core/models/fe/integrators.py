"""Implicit Newmark and HHT-alpha steppers for large (sparse) or reduced (dense) virtual parts (Bartl 2019 §2.3).

Model ``M q'' + D q' + K q = B u`` (``B = G^T`` for the interface force ``u = lam``), output ``y = C q``
(``C = G``).  One call of :meth:`NewmarkStepper.step` takes the input of the new time level ``u[n+1]`` (the measured
interface force, treated as independent of ``q[n+1]``, eq. 2.48) and returns ``y[n+1]``: no iteration, one
back-substitution with the factor of the effective matrix computed once.

Newmark (eq. 2.39/2.40): predictors ``q* = q + dt q' + dt^2 (1/2 - beta) q''``, ``q'* = q' + dt (1 - gamma) q''``,
then ``S q''[n+1] = B u[n+1] - D q'* - K q*`` with ``S = M + gamma dt D + beta dt^2 K``, and the correctors
``q' = q'* + gamma dt q''``, ``q = q* + beta dt^2 q''``.

HHT-alpha (eq. 2.55/2.56, the thesis's sign convention): the equation of motion is evaluated between the levels,

    M q''[n+1] + (1 - alpha) (D q'[n+1] + K q[n+1] - B u[n+1]) + alpha (D q'[n] + K q[n] - B u[n]) = 0,

with ``gamma = 1/2 + alpha``, ``beta = (1 + alpha)^2 / 4``, ``alpha`` in ``[0, 1/3]``.  This ``alpha`` is minus the
``alpha`` of Hilber, Hughes and Taylor (who use ``[-1/3, 0]``); ``alpha = 0`` is the average-acceleration Newmark
scheme.  The thesis's benchmark uses ``alpha = 0.3``: ``gamma = 0.8``, ``beta = 0.4225`` (printed rounded, 0.42).
Effective matrix ``S = M + (1 - alpha) (gamma dt D + beta dt^2 K)``; the spectral radius for ``omega dt -> inf``
is ``(1 - alpha) / (1 + alpha)`` (0.538 at ``alpha = 0.3``), second-order accuracy is kept.

Factorisation: sparse ``S`` by SuperLU (:func:`scipy.sparse.linalg.splu`) with the minimum-degree ordering of
``S + S^T`` and symmetric mode (``S`` is symmetric positive definite, no pivoting needed); dense (reduced) ``S`` by
Cholesky.  States may be vectors or (n, k) blocks (k inputs at once, used for impulse responses).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rths_ros.core.models.fe.matrices import FEModel

__all__ = ["NewmarkStepper", "newmark", "hht", "factorise", "hht_parameters"]


def hht_parameters(alpha: float) -> tuple[float, float]:
    """``(beta, gamma)`` of HHT-alpha in the thesis's convention (eq. 2.56)."""
    if not 0.0 <= alpha <= 1.0 / 3.0:
        raise ValueError(f"alpha = {alpha} outside [0, 1/3] (Bartl 2019 eq. 2.56)")
    return 0.25 * (1.0 + alpha) ** 2, 0.5 + alpha


class _Dense:
    def __init__(self, A):
        import scipy.linalg as sla
        A = np.asarray(A, dtype=float)
        try:
            self._c = sla.cho_factor(A)
            self.solve = lambda r: sla.cho_solve(self._c, r)
        except np.linalg.LinAlgError:
            self._c = sla.lu_factor(A)
            self.solve = lambda r: sla.lu_solve(self._c, r)


def factorise(A):
    """Solver object with ``.solve(rhs)`` for a sparse (SuperLU, symmetric ordering) or dense (Cholesky) matrix."""
    if sp.issparse(A):
        import scipy.sparse.linalg as spla
        return spla.splu(sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                         options={"SymmetricMode": True})
    return _Dense(A)


def _mat(A):
    return sp.csr_matrix(A) if sp.issparse(A) else np.asarray(A, dtype=float)


class NewmarkStepper:
    """One time step per call (module doc).  ``alpha = 0``: Newmark; ``alpha > 0``: HHT-alpha."""

    def __init__(self, M, D, K, B, C, dt: float, beta: float = 0.25, gamma: float = 0.5, alpha: float = 0.0):
        if dt <= 0:
            raise ValueError("dt must be positive")
        if not 0.0 <= alpha <= 1.0 / 3.0:
            raise ValueError(f"alpha = {alpha} outside [0, 1/3]")
        self.dt, self.beta, self.gamma, self.alpha = float(dt), float(beta), float(gamma), float(alpha)
        self.M, self.D, self.K = _mat(M), _mat(D), _mat(K)
        self.B, self.C = _mat(B), _mat(C)
        self.n = self.M.shape[0]
        a1 = 1.0 - self.alpha
        self.S = (self.M + a1 * self.gamma * self.dt * self.D + a1 * self.beta * self.dt ** 2 * self.K)
        self._lu = factorise(self.S.tocsc() if sp.issparse(self.S) else self.S)
        self.reset()

    @classmethod
    def from_model(cls, model: FEModel, dt: float, **kw) -> NewmarkStepper:
        return cls(model.M, model.D, model.K, model.G.T, model.G, dt, **kw)

    def reset(self, width: int | None = None) -> None:
        """Back to rest (all states and the previous input zero); ``width``: k columns for block stepping."""
        shape = (self.n,) if width is None else (self.n, width)
        self.q, self.qd, self.qdd = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        self.f_prev = np.zeros(shape)         # B u[n] (HHT only)
        self.k = 0

    def set_state(self, q, qd, qdd, f_prev=None) -> None:
        """Initial conditions (e.g. the Dirac approximations of eq. 2.61/2.62); ``f_prev`` = ``B u`` at that level."""
        self.q, self.qd, self.qdd = (np.array(x, dtype=float) for x in (q, qd, qdd))
        self.f_prev = np.zeros_like(self.q) if f_prev is None else np.array(f_prev, dtype=float)

    def step_force(self, f) -> None:
        """Advance one step with the full load vector ``f[n+1]`` (n,) or (n, k) acting at the new level."""
        dt, beta, gamma, alpha = self.dt, self.beta, self.gamma, self.alpha
        qd_star = self.qd + (dt * (1.0 - gamma)) * self.qdd
        q_star = self.q + dt * self.qd + (dt * dt * (0.5 - beta)) * self.qdd
        if alpha == 0.0:
            rhs = f - self.D @ qd_star - self.K @ q_star
        else:
            a1 = 1.0 - alpha
            rhs = (a1 * f + alpha * self.f_prev - self.D @ (a1 * qd_star + alpha * self.qd)
                   - self.K @ (a1 * q_star + alpha * self.q))
            self.f_prev = f
        qdd = self._lu.solve(rhs)
        self.qdd = qdd
        self.qd = qd_star + (gamma * dt) * qdd
        self.q = q_star + (beta * dt * dt) * qdd
        self.k += 1

    def step(self, u) -> np.ndarray:
        """Interface input ``u[n+1]`` (n_u,) -> interface output ``y[n+1] = C q[n+1]`` (n_y,)."""
        self.step_force(self.B @ np.asarray(u, dtype=float))
        return self.C @ self.q

    def run(self, u: np.ndarray) -> np.ndarray:
        """Outputs for an input sequence ``u`` (N, n_u) from rest: row ``k`` is the response to ``u[0..k]``."""
        self.reset()
        return np.array([self.step(uk) for uk in np.asarray(u, dtype=float)])


def newmark(model: FEModel, dt: float, beta: float = 0.25, gamma: float = 0.5) -> NewmarkStepper:
    """Implicit Newmark (default average acceleration, ``beta = 1/4``, ``gamma = 1/2``) for ``model``."""
    return NewmarkStepper.from_model(model, dt, beta=beta, gamma=gamma)


def hht(model: FEModel, dt: float, alpha: float = 0.3, beta: float | None = None,
        gamma: float | None = None) -> NewmarkStepper:
    """HHT-alpha (thesis convention); ``beta``, ``gamma`` default to eq. 2.56."""
    b, g = hht_parameters(alpha)
    return NewmarkStepper.from_model(model, dt, beta=b if beta is None else beta, gamma=g if gamma is None else gamma,
                                     alpha=alpha)
