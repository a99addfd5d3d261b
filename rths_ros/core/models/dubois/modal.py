"""Numerical substructure of du Bois et al. 2010 §4.1: modal transfer functions integrated by RK4.

From the FE matrices ``M, K`` and proportional damping ``C = alpha M + beta K`` (eqs. 10-11), the
mass-normalised modes ``Phi`` (``Phi^T M Phi = I``, ``Phi^T K Phi = Lambda``) decouple the equations
(eqs. 12-13); each retained mode is the transfer function (eq. 14)::

    H_i(s) = q_i / p_i = 1 / (s^2 + (alpha + beta lambda_i) s + lambda_i)

realised in state space ``(q_i, q_i')`` and advanced by explicit fourth-order Runge-Kutta.  One step:
``p = Phi_n^T f`` (excitation and the force fed back from the physical substructure), the modal
states over ``dt``, ``x = Phi_n q``.

A displacement input at DOF ``a`` removes its row and column from eq. (10) and adds (eq. 15, with the
printed ``K x_a`` read as ``K_a x_a``)::

    f = f_{-a} - M_a x_a'' - C_a x_a' - K_a x_a

with ``M_a, C_a, K_a`` the ``a``-th columns (row ``a`` removed).  The external force is held over a
step (zero-order hold, it is a measured force); the base motion is evaluated at the RK4 stage times.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rths_ros.core.models.dubois.params import ChainParams

__all__ = ["chain_matrices", "ModalSubstructure"]

BaseMotion = Callable[[float], tuple[float, float, float]]


def chain_matrices(p: ChainParams) -> tuple[np.ndarray, np.ndarray]:
    """``M, K`` of the chain ``x0 - k1 - m1 - k2 - m2`` over the DOFs ``(x0, x1, x2)``."""
    k1, k2 = p.k1_n_per_m, p.k2_n_per_m
    m = np.diag([0.0, p.m1_kg, p.m2_kg])
    k = np.array([[k1, -k1, 0.0], [-k1, k1 + k2, -k2], [0.0, -k2, k2]])
    return m, k


class ModalSubstructure:
    """Modal RK4 model of ``M x'' + C x' + K x = f`` with DOF ``input_dof`` prescribed.

    ``modes``: indices of the retained modes (ascending frequency; default all).  The remaining DOFs
    keep their order with ``input_dof`` removed (for the chain: index 0 is ``x1``, 1 is ``x2``).
    """

    def __init__(self, m_full, k_full, alpha: float, beta: float, input_dof: int = 0, dt_s: float = 1e-3,
                 modes=None) -> None:
        m_full = np.asarray(m_full, dtype=np.float64)
        k_full = np.asarray(k_full, dtype=np.float64)
        c_full = alpha * m_full + beta * k_full
        keep = [i for i in range(m_full.shape[0]) if i != input_dof]
        self.m = m_full[np.ix_(keep, keep)]
        self.k = k_full[np.ix_(keep, keep)]
        self.c = c_full[np.ix_(keep, keep)]
        self.m_a = m_full[keep, input_dof]
        self.c_a = c_full[keep, input_dof]
        self.k_a = k_full[keep, input_dof]
        from scipy import linalg
        lam, phi = linalg.eigh(self.k, self.m)
        sel = np.arange(lam.size) if modes is None else np.asarray(modes, dtype=int)
        self.lam = lam[sel]
        self.phi = phi[:, sel]
        self.modal_damping = alpha + beta * self.lam
        self._pm, self._pc, self._pk = self.phi.T @ self.m_a, self.phi.T @ self.c_a, self.phi.T @ self.k_a
        self._phi_t = self.phi.T.tolist()
        self._lam_l = self.lam.tolist()
        self._damp_l = self.modal_damping.tolist()
        self._coef = (self._pm.tolist(), self._pc.tolist(), self._pk.tolist())
        self.dt = float(dt_s)
        self.n_dof = len(keep)
        self.q = np.zeros(self.lam.size)
        self.qd = np.zeros(self.lam.size)
        self.t = 0.0

    @property
    def natural_frequencies_hz(self) -> np.ndarray:
        return np.sqrt(self.lam) / (2.0 * np.pi)

    @property
    def damping_ratios(self) -> np.ndarray:
        return self.modal_damping / (2.0 * np.sqrt(self.lam))

    def reset(self, t: float = 0.0) -> None:
        self.q[:] = 0.0
        self.qd[:] = 0.0
        self.t = float(t)

    def modal_force(self, f_ext: np.ndarray, base: tuple[float, float, float]) -> np.ndarray:
        """``p = Phi_n^T (f_ext - M_a x_a'' - C_a x_a' - K_a x_a)`` (eqs. 13, 15)."""
        xa, va, aa = base
        return self.phi.T @ f_ext - self._pm * aa - self._pc * va - self._pk * xa

    def step(self, f_ext, base_motion: BaseMotion | None = None) -> None:
        """Advance ``dt`` with the spatial force ``f_ext`` (length ``n_dof``, held) and the base motion
        ``base_motion(t) -> (x_a, x_a', x_a'')``.  Plain Python floats per mode (a few modes: faster than
        small arrays)."""
        h, t = self.dt, self.t
        fe = [float(v) for v in f_ext]
        phi_t = self._phi_t
        zero = (0.0, 0.0, 0.0)
        b0 = base_motion(t) if base_motion else zero
        bm = base_motion(t + 0.5 * h) if base_motion else zero
        b1 = base_motion(t + h) if base_motion else zero
        q_new, v_new = [], []
        for i, (row, lam, d, pm, pc, pk) in enumerate(zip(phi_t, self._lam_l, self._damp_l, *self._coef)):
            pf = sum(r * f for r, f in zip(row, fe))
            p0 = pf - pm * b0[2] - pc * b0[1] - pk * b0[0]
            p_m = pf - pm * bm[2] - pc * bm[1] - pk * bm[0]
            p1 = pf - pm * b1[2] - pc * b1[1] - pk * b1[0]
            q, v = float(self.q[i]), float(self.qd[i])
            k1q, k1v = v, p0 - d * v - lam * q
            q2, v2 = q + 0.5 * h * k1q, v + 0.5 * h * k1v
            k2q, k2v = v2, p_m - d * v2 - lam * q2
            q3, v3 = q + 0.5 * h * k2q, v + 0.5 * h * k2v
            k3q, k3v = v3, p_m - d * v3 - lam * q3
            q4, v4 = q + h * k3q, v + h * k3v
            k4q, k4v = v4, p1 - d * v4 - lam * q4
            q_new.append(q + h / 6.0 * (k1q + 2.0 * k2q + 2.0 * k3q + k4q))
            v_new.append(v + h / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v))
        self.q = np.array(q_new)
        self.qd = np.array(v_new)
        self.t = t + h

    def displacement(self, rows=None) -> np.ndarray:
        """``x = Phi_n q`` (only ``rows`` if given)."""
        phi = self.phi if rows is None else self.phi[np.atleast_1d(rows)]
        return phi @ self.q

    def velocity(self, rows=None) -> np.ndarray:
        phi = self.phi if rows is None else self.phi[np.atleast_1d(rows)]
        return phi @ self.qd

    @classmethod
    def from_chain(cls, p: ChainParams, dt_s: float, modes=None) -> ModalSubstructure:
        m, k = chain_matrices(p)
        return cls(m, k, p.alpha_per_s, p.beta_s, input_dof=0, dt_s=dt_s, modes=modes)
