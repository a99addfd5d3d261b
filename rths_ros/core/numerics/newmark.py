"""Newmark time integration of a linear numerical substructure inside a hybrid test (Bartl 2019 §2.3).

Model: ``M q'' + C q' + K q = G^T lam + f_ext`` with ``n`` DoF, interface displacement
``y = G q`` (``G``: ``n_int x n`` Boolean/Jacobian, default the identity) and ``lam`` the force
the physical substructure exerts on the numerical one in interface coordinates.  With the
single sign convention of Bartl 2019 (``lam_VIR = -lam_EXP``) this is minus the force measured on
the specimen; the caller converts.

Two one-step schemes, both with a pre-factorised iteration matrix ``S`` (no solve in the loop
beyond a triangular back-substitution, no allocation):

* :class:`CentralDifference` (``beta = 0, gamma = 1/2``, Bartl 2019 eq. 2.46) for **feedback**
  coupling.  At sample ``n`` the command ``y[n] = G q[n]`` has been sent; the measured force
  ``lam[n]`` yields ``q''[n]``, ``q'[n]`` and the explicit next displacement
  ``q[n+1] = q[n] + dt q'[n] + dt^2/2 q''[n]``, which :meth:`CentralDifference.step` returns as the
  next displacement command.  ``S = M + dt/2 C``.  Stable for ``omega_max dt < 2`` (Table 2.1).
* :class:`AverageAcceleration` (``beta = 1/4, gamma = 1/2``, eq. 2.48) for **feedforward**
  coupling: the actuator command comes from elsewhere (e.g. adaptive feedforward); the measured
  ``lam[n+1]`` is treated as independent of ``q[n+1]`` and advances the model without iteration.
  :meth:`AverageAcceleration.step` returns ``y_VIR[n+1] = G q[n+1]``, the interface displacement
  the physical side must match (the gap ``g = y_EXP - y_VIR`` drives the adaptation).
  ``S = M + dt/2 C + dt^2/4 K``.  Unconditionally stable, no amplitude error, period elongation
  ``~ (omega dt)^2 / 12`` (the value printed in Bartl 2019 Table 2.1, ``(omega dt)^2/2``, is not the
  behaviour of this scheme; see the tests).

:class:`Newmark` is the general ``(beta, gamma)`` member with the force at the new time level
(used by both); ``beta = 0`` is the explicit branch.

The same predictors and correctors run compiled for 1-DoF (:func:`newmark_sdof_step`) and MDOF models
(:func:`newmark_mdof_step`, one sample of either coupling form: :func:`newmark_sample`), for numerical
substructures stepped inside numba loops (the lumped-mass test, the building benchmark).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from rths_ros.params import ParameterError, param

SCHEME_CHOICES = ("central_difference", "average_acceleration")


@dataclass(frozen=True)
class NewmarkParams:
    """Time-integration settings of the numerical substructure."""

    dt_s: float = param(0.001, "s", 1e-6, 1.0, "integration step (= control period, one step per sample)")
    scheme: str = param("central_difference", "", doc=(
        "'central_difference' (explicit, feedback coupling) or 'average_acceleration' (implicit, fed by "
        "the measured force, feedforward coupling)"), choices=SCHEME_CHOICES)


@numba.njit(cache=True, nogil=True)
def newmark_predict(q, qd, qdd, dt, beta, gamma, q_star, qd_star):
    """Newmark predictors from the state at t_n: ``q* = q + dt q' + dt^2 (1/2 - beta) q''``,
    ``q'* = q' + dt (1 - gamma) q''`` (written into ``q_star``, ``qd_star``)."""
    for i in range(q.shape[0]):
        qd_star[i] = qd[i] + dt * (1.0 - gamma) * qdd[i]
        q_star[i] = q[i] + dt * qd[i] + dt * dt * (0.5 - beta) * qdd[i]


@numba.njit(cache=True, nogil=True)
def newmark_correct(q_star, qd_star, qdd_new, dt, beta, gamma, q, qd, qdd):
    """Newmark correctors with the new acceleration: ``q'' = qdd_new``, ``q' = q'* + gamma dt q''``,
    ``q = q* + beta dt^2 q''`` (written into ``q``, ``qd``, ``qdd``)."""
    for i in range(q.shape[0]):
        qdd[i] = qdd_new[i]
        qd[i] = qd_star[i] + gamma * dt * qdd_new[i]
        q[i] = q_star[i] + beta * dt * dt * qdd_new[i]


@numba.njit(cache=True, nogil=True)
def newmark_sdof_step(state, m, c, k, dt, beta, gamma, f, scratch):
    """One Newmark step of a 1-DoF oscillator ``m x'' + c x' + k x = f`` (force at the new time level) in place:
    ``state`` = [x, x', x''] (3,), ``scratch`` (3,).  The same predictors and correctors as :class:`Newmark`
    (:func:`newmark_predict`, :func:`newmark_correct`), with the scalar iteration matrix
    ``S = m + gamma dt c + beta dt^2 k``; usable inside other numba loops."""
    q = state[0:1]
    qd = state[1:2]
    qdd = state[2:3]
    q_star = scratch[0:1]
    qd_star = scratch[1:2]
    acc = scratch[2:3]
    newmark_predict(q, qd, qdd, dt, beta, gamma, q_star, qd_star)
    acc[0] = (f - c * qd_star[0] - k * q_star[0]) / (m + gamma * dt * c + beta * dt * dt * k)
    newmark_correct(q_star, qd_star, acc, dt, beta, gamma, q, qd, qdd)


@numba.njit(cache=True, nogil=True)
def newmark_acceleration(a_inv, c, k, f, q, qd, r, qdd):
    """Acceleration from the equation of motion with a pre-inverted matrix ``A``:
    ``q'' = A^-1 (f - C q' - K q)`` (written into ``qdd``; ``r`` (n,) is scratch).  ``A = M`` gives the
    initial acceleration, ``A = S`` (the iteration matrix) with the predictors the Newmark acceleration."""
    n = q.shape[0]
    for i in range(n):
        s = f[i]
        for j in range(n):
            s -= c[i, j] * qd[j] + k[i, j] * q[j]
        r[i] = s
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += a_inv[i, j] * r[j]
        qdd[i] = s


@numba.njit(cache=True, nogil=True)
def newmark_mdof_step(state, s_inv, c, k, dt, beta, gamma, f, scratch):
    """One Newmark step of ``M q'' + C q' + K q = f`` (``n`` DoF, force at the new time level) in place.

    ``state`` (3, n): rows ``q, q', q''`` at ``t_n`` -> ``t_{n+1}``; ``s_inv`` = ``S^-1``,
    ``S = M + gamma dt C + beta dt^2 K`` (inverted once: the models are small); ``scratch`` (4, n).  The
    predictors and correctors of :class:`Newmark` (:func:`newmark_predict`, :func:`newmark_correct`) with the
    solve as a matrix-vector product; no allocation, usable inside other numba loops."""
    q, qd, qdd = state[0], state[1], state[2]
    q_star, qd_star, r, acc = scratch[0], scratch[1], scratch[2], scratch[3]
    newmark_predict(q, qd, qdd, dt, beta, gamma, q_star, qd_star)
    newmark_acceleration(s_inv, c, k, f, q_star, qd_star, r, acc)
    newmark_correct(q_star, qd_star, acc, dt, beta, gamma, q, qd, qdd)


@numba.njit(cache=True, nogil=True)
def newmark_sample(state, first, m_inv, s_inv, c, k, dt, beta, gamma, f, out_q, out_qd, scratch):
    """One control sample of a linear MDOF numerical substructure coupled to a test, given the load ``f``
    (all inputs: external and measured interface force) of the sample.  Writes the next command
    ``q[n+1]``, ``q'[n+1]`` into ``out_q``, ``out_qd``; ``state`` (3, n) rows ``q, q', q''``, ``scratch``
    (4, n); ``first``: the first sample after rest (or after setting ``q``, ``q'``).

    * ``beta == 0`` -- **central difference, feedback form** (:class:`CentralDifference`, eq. 2.46,
      ``gamma = 1/2``): ``f`` acts at the current level ``n`` (the command ``q[n]`` is applied, the force
      measured there).  First sample: ``q''[0]`` from the equation of motion with ``M``; later: the Newmark
      step ``n-1 -> n``.  Then the explicit predictor ``q[n+1] = q + dt q' + dt^2/2 q''``; the velocity handed
      on is ``q'[n] + dt q''[n]`` (the scheme itself needs no ``q'[n+1]``).  ``state`` holds level ``n``.
    * ``beta > 0`` -- **implicit, feedforward form** (:class:`AverageAcceleration` for ``beta = 1/4``,
      eq. 2.48): ``f`` (the force measured in this sample) acts at the new level ``n+1`` and advances the
      model without iteration.  First sample: ``q''[0]`` from the equation of motion with this ``f`` (the
      load acts from ``t = 0+``; otherwise the first step sees a ramp and the scheme drops to first order).
      ``state`` holds level ``n+1`` = the output."""
    q, qd, qdd = state[0], state[1], state[2]
    if beta == 0.0:
        if first:
            newmark_acceleration(m_inv, c, k, f, q, qd, scratch[2], qdd)
        else:
            newmark_mdof_step(state, s_inv, c, k, dt, 0.0, gamma, f, scratch)
        newmark_predict(q, qd, qdd, dt, 0.0, 0.0, out_q, out_qd)
    else:
        if first:
            newmark_acceleration(m_inv, c, k, f, q, qd, scratch[2], qdd)
        newmark_mdof_step(state, s_inv, c, k, dt, beta, gamma, f, scratch)
        for i in range(q.shape[0]):
            out_q[i] = q[i]
            out_qd[i] = qd[i]


def iteration_inverse(M, C, K, dt: float, beta: float, gamma: float) -> np.ndarray:
    """``S^-1`` of :func:`newmark_mdof_step`, ``S = M + gamma dt C + beta dt^2 K``."""
    M, C, K = _as_matrix(M), _as_matrix(C), _as_matrix(K)
    return np.ascontiguousarray(np.linalg.inv(M + gamma * dt * C + beta * dt * dt * K))


def amplification_matrix(M, C, K, dt: float, beta: float, gamma: float) -> np.ndarray:
    """The free (``f = 0``) one-step map of :func:`newmark_mdof_step` on ``[q; q'; q'']`` (3n x 3n), built by
    stepping the kernel from the unit states; its spectral radius decides stability (> 1: growing)."""
    M, C, K = _as_matrix(M), _as_matrix(C), _as_matrix(K)
    n = M.shape[0]
    s_inv = iteration_inverse(M, C, K, dt, beta, gamma)
    f = np.zeros(n)
    scratch = np.zeros((4, n))
    a = np.zeros((3 * n, 3 * n))
    for j in range(3 * n):
        st = np.zeros((3, n))
        st.reshape(-1)[j] = 1.0
        newmark_mdof_step(st, s_inv, C, K, float(dt), float(beta), float(gamma), f, scratch)
        a[:, j] = st.reshape(-1)
    return a


def _as_matrix(a, n: int | None = None) -> np.ndarray:
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    if a.shape[0] != a.shape[1] or (n is not None and a.shape[0] != n):
        raise ParameterError(f"matrix of shape {a.shape} is not allowed; expected square {n or ''}")
    return np.ascontiguousarray(a)


class _Factor:
    """Cholesky if symmetric positive definite, else LU."""

    def __init__(self, S: np.ndarray) -> None:
        # (SciPy's linear algebra imported here, not with the module: a process that loads a scenario but builds
        # no Newmark integrator is spared its import)
        from scipy.linalg import cho_factor, cho_solve, lu_factor, lu_solve
        self._chol = None
        if np.allclose(S, S.T):
            try:
                self._chol = cho_factor(S)
            except np.linalg.LinAlgError:
                self._chol = None
        if self._chol is None:
            self._lu = lu_factor(S)
        self._cho_solve, self._lu_solve = cho_solve, lu_solve

    def solve(self, b: np.ndarray) -> np.ndarray:
        if self._chol is not None:
            return self._cho_solve(self._chol, b, check_finite=False)
        return self._lu_solve(self._lu, b, check_finite=False)


class Newmark:
    """General Newmark step with the interface force at the new time level.

    ``step(lam_new, f_ext_new)`` advances ``(q, q', q'')`` from ``t_n`` to ``t_{n+1}`` using
    ``lam[n+1]`` and returns ``G q[n+1]``.  For ``beta = 0`` the displacement ``q[n+1]`` does not
    depend on ``lam[n+1]`` (explicit); :class:`CentralDifference` re-orders that case for feedback.
    """

    def __init__(self, M, C, K, dt: float, beta: float, gamma: float, G=None,
                 q0=None, qd0=None, f_ext0=None, lam0=None) -> None:
        self.M = _as_matrix(M)
        n = self.M.shape[0]
        self.C = _as_matrix(C, n)
        self.K = _as_matrix(K, n)
        self.n = n
        self.G = np.eye(n) if G is None else np.atleast_2d(np.asarray(G, dtype=np.float64))
        if self.G.shape[1] != n:
            raise ParameterError(f"G of shape {self.G.shape} does not match {n} DoF")
        self.dt = float(dt)
        self.beta = float(beta)
        self.gamma = float(gamma)
        S = self.M + self.gamma * self.dt * self.C + self.beta * self.dt ** 2 * self.K
        self._S = _Factor(S)
        self.q = np.zeros(n) if q0 is None else np.asarray(q0, dtype=np.float64).reshape(n).copy()
        self.qd = np.zeros(n) if qd0 is None else np.asarray(qd0, dtype=np.float64).reshape(n).copy()
        self.qdd = self._initial_acceleration(f_ext0, lam0)
        self._q_star = np.zeros(n)
        self._qd_star = np.zeros(n)
        self.k = 0

    def _rhs_const(self, lam, f_ext) -> np.ndarray:
        r = np.zeros(self.n)
        if lam is not None:
            r += self.G.T @ np.atleast_1d(np.asarray(lam, dtype=np.float64))
        if f_ext is not None:
            r += np.asarray(f_ext, dtype=np.float64).reshape(self.n)
        return r

    def _initial_acceleration(self, f_ext0, lam0) -> np.ndarray:
        rhs = self._rhs_const(lam0, f_ext0) - self.C @ self.qd - self.K @ self.q
        return np.linalg.solve(self.M, rhs)

    @property
    def y(self) -> np.ndarray:
        """Interface displacement ``G q`` of the current state."""
        return self.G @ self.q

    def step(self, lam_new=None, f_ext_new=None) -> np.ndarray:
        dt, b, g = self.dt, self.beta, self.gamma
        q_star, qd_star = self._q_star, self._qd_star
        newmark_predict(self.q, self.qd, self.qdd, dt, b, g, q_star, qd_star)
        rhs = self._rhs_const(lam_new, f_ext_new) - self.C @ qd_star - self.K @ q_star
        newmark_correct(q_star, qd_star, self._S.solve(rhs), dt, b, g, self.q, self.qd, self.qdd)
        self.k += 1
        return self.G @ self.q


class AverageAcceleration(Newmark):
    """Implicit average-acceleration Newmark (``beta = 1/4, gamma = 1/2``) fed by measured forces.

    ``step(lam[n+1], f_ext[n+1]) -> y_VIR[n+1]`` (Bartl 2019 eq. 2.48; no iteration).
    """

    def __init__(self, M, C, K, dt: float, G=None, q0=None, qd0=None, f_ext0=None, lam0=None) -> None:
        super().__init__(M, C, K, dt, 0.25, 0.5, G, q0, qd0, f_ext0, lam0)


class CentralDifference:
    """Explicit central-difference Newmark (``beta = 0, gamma = 1/2``) for feedback coupling.

    State at sample ``n``: ``q[n]`` (already commanded), ``q'[n-1]``, ``q''[n-1]``.
    ``step(lam[n], f_ext[n])`` returns the next displacement command ``G q[n+1]``
    (Bartl 2019 eq. 2.46 and its pseudo-code).  The first call uses ``q'[-1] = q'0`` and
    ``q''[-1] = 0`` so that ``q'[0] = q'0`` exactly.
    """

    def __init__(self, M, C, K, dt: float, G=None, q0=None, qd0=None) -> None:
        self.M = _as_matrix(M)
        n = self.M.shape[0]
        self.C = _as_matrix(C, n)
        self.K = _as_matrix(K, n)
        self.n = n
        self.G = np.eye(n) if G is None else np.atleast_2d(np.asarray(G, dtype=np.float64))
        if self.G.shape[1] != n:
            raise ParameterError(f"G of shape {self.G.shape} does not match {n} DoF")
        self.dt = float(dt)
        self._S = _Factor(self.M + 0.5 * self.dt * self.C)
        self.q = np.zeros(n) if q0 is None else np.asarray(q0, dtype=np.float64).reshape(n).copy()
        self.qd = np.zeros(n) if qd0 is None else np.asarray(qd0, dtype=np.float64).reshape(n).copy()
        self.qdd = np.zeros(n)
        self.k = 0

    @property
    def y(self) -> np.ndarray:
        """Interface displacement ``G q[n]`` (the command currently applied)."""
        return self.G @ self.q

    @staticmethod
    def stability_limit_dt(M, K) -> float:
        """Largest stable step ``2 / omega_max`` of the undamped system (Table 2.1: ``omega dt < 2``)."""
        w2 = np.linalg.eigvals(np.linalg.solve(_as_matrix(M), _as_matrix(K))).real
        wmax = float(np.sqrt(max(w2.max(), 0.0)))
        return np.inf if wmax == 0.0 else 2.0 / wmax

    def step(self, lam=None, f_ext=None) -> np.ndarray:
        dt = self.dt
        rhs = np.zeros(self.n)
        if lam is not None:
            rhs += self.G.T @ np.atleast_1d(np.asarray(lam, dtype=np.float64))
        if f_ext is not None:
            rhs += np.asarray(f_ext, dtype=np.float64).reshape(self.n)
        if self.k == 0:
            # initial state: q'[0] = q'0 given, q''[0] from the equation of motion
            self.qdd = np.linalg.solve(self.M, rhs - self.C @ self.qd - self.K @ self.q)
        else:
            qd_star = self.qd + 0.5 * dt * self.qdd
            self.qdd = self._S.solve(rhs - self.C @ qd_star - self.K @ self.q)
            self.qd = qd_star + 0.5 * dt * self.qdd
        self.q = self.q + dt * self.qd + 0.5 * dt * dt * self.qdd
        self.k += 1
        return self.G @ self.q


def make_integrator(params: NewmarkParams, M, C, K, G=None, q0=None, qd0=None):
    """Integrator of the chosen scheme for a linear ``M, C, K`` model."""
    if params.scheme == "central_difference":
        return CentralDifference(M, C, K, params.dt_s, G, q0, qd0)
    return AverageAcceleration(M, C, K, params.dt_s, G, q0, qd0)
