"""Harmonic-basis adaptive feedforward filter (AFF) with LMS / QR-RLS adaptation and identification.

Seed 001 (Bartl), ch. 5, §5.1-5.4, App. D (digest seed001 §5.1-5.5).  ROS-free; see docs/harmonic_aff.md.

Basis (eq. 5.13).  For n_int interface DOFs and n_Omega excitation frequencies Omega_i::

    u(t) = W(t) theta,   W(t) = [I cos(Omega_1 t), -I sin(Omega_1 t), ..., I cos(Omega_n t), -I sin(Omega_n t)]
    theta = [Re psi_1; Im psi_1; ...; Re psi_n; Im psi_n]            (2 n_int n_Omega,)

Gap model (eqs. 5.14/5.15), g = y_EXP - y_VIR::

    g[k] = W[k] P_gu theta + g_ext[k],   P_gu = blkdiag_i [[Re H_i, -Im H_i], [Im H_i, Re H_i]]

with H_i = H_gu(Omega_i) (n_int x n_int complex) and g_ext the gap with u = 0 (with f_ext^EXP = 0 this is
``-y_VIR`` of the virtual model driven by f_ext alone).

Rearrangement (App. D.1, MIMO form with column-major vec)::

    P theta = theta~ P~,  P~_i = [vec Re H_i; vec Im H_i],
    theta~_i = [[theta_r^T (x) I, -theta_i^T (x) I], [theta_i^T (x) I, theta_r^T (x) I]]

Adaptation laws (one call of :meth:`HarmonicAff.step` per sample, measurements of sample k+1):

* leaky normalised LMS (eqs. 5.18-5.20)::

      theta <- nu theta - mu_bar P_est^T W[k+1]^T g[k+1],  mu_bar = mu/(lambda_max + gamma),  nu = 1 - mu_bar gamma

  lambda_max = largest eigenvalue of P_est^T P_est; gamma has the units of lambda_max, (g/u)^2 (e.g.
  (m/N)^2), as eq. 5.20 adds the two.
* QR-RLS (eqs. 5.29-5.33, Alg. 3, App. D.2) minimising
  ``sum mu^(k-i) |W[i] P_est theta + g_ext[i]|^2 + mu^(k+1) theta^T Xi theta``, Xi = gamma_rls I.  The
  square-root information matrix R (Phi = R R^T, lower triangular) is updated by Givens rotations of the
  matrix A = [[sqrt(mu) R, X^T], [sqrt(mu) theta^T R, y^T]] to [[R', 0], [theta'^T R', *]] and theta' is
  obtained from R'^T theta' = (theta'^T R')^T by back substitution.  X = W P_est, y = -g_ext.  (The seed
  prints the upper-right block as W P; it must be its transpose.)
* LMS identification (§5.2.2), error form (the printed eq. 5.24 omits the prediction)::

      P~ <- P~ + mu_id theta~^T W^T (g - g_ext - W theta~ P~)
* RLS identification (Alg. 4): the same QR-RLS kernel with X = W theta~, y = g - g_ext (the printed
  ``y_EXP y_VIR`` misses the minus sign), forgetting factor mu_id_rls, Xi_id = gamma_id_rls I.
* simultaneous identification and adaptation (Alg. 5): after the identification phase, each sample an RLS
  adaptation of theta with the current P_est, then an identification update of P~.

Test procedure (Alg. 1/5): for ``t - t_start < t_id_s`` the filter identifies: theta is a random vector
(uniform in [-id_amplitude, id_amplitude], redrawn every ``t_rand_s``); the caller must keep f_ext = 0
(see :attr:`HarmonicAff.identifying`).  Then theta := 0 (or a given start value) and the adaptation runs.

Power-flow supervisor (Alg. 2, eqs. 5.25-5.28), LMS only::

    P_in = lambda_VIR . g-dot                      (power into the transfer system)
    P_in < P_lim: a_gamma = min(a_gamma + da_gamma_up, 1),  a_mu = max(a_mu - da_mu_down, 0)
    P_in > P_lim: a_gamma = max(a_gamma - da_gamma_down, 0)
    gamma = gamma_max a_gamma^b_gamma,  mu = mu_lms a_mu^b_mu,  nu clipped to [0, 1]

Choices where the seed is silent (documented in docs/harmonic_aff.md):

* timing: the output u[k] = W[k] theta[k] is held over [t_k, t_k+1); ``step`` receives the measurements of
  t_k+1 and returns u[k+1].  The identification regressor pairs g[k+1] with the theta that produced it
  (theta[k]); Alg. 5 prints theta[k+1], which differs only while theta moves;
* g-dot = backward difference of the gap over the time since the previous call; P_in is unfiltered by
  default (``p_in_filter_s = 0``) or passed through a first-order low-pass;
* nu is clipped to [0, 1];
* the random identification vector comes from a per-object xorshift64* generator (``seed``), so the
  object and the in-process simulation (rths_ros.core.methods.lumped_mass) give identical runs.

All per-sample work is one numba kernel (:func:`aff_step_kernel`) on preallocated arrays.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numba
import numpy as np

from rths_ros.params import ParameterError, param

__all__ = ["HarmonicAffParams", "HarmonicAff", "PowerFlowSupervisor", "basis_matrix", "p_matrix", "theta_tilde",
           "qrrls_update",
           "p_tilde_from_h", "h_from_p_tilde",
           "aff_step_kernel", "time_per_sample"]

LAWS = ("lms", "rls")

# integer configuration / state slots
CI_NINT, CI_NF, CI_LAW, CI_IDLAW, CI_SIMUL, CI_SUP, CI_LEN = range(7)
(CF_MU_LMS, CF_GAMMA_LMS, CF_MU_ID_LMS, CF_MU_RLS, CF_GAMMA_RLS, CF_MU_ID_RLS, CF_GAMMA_ID_RLS, CF_T_ID,
 CF_T_RAND, CF_ID_AMP, CF_P_LIM, CF_DA_MU_DOWN, CF_DA_G_UP, CF_DA_G_DOWN, CF_B_MU, CF_B_G, CF_GAMMA_MAX,
 CF_P_TAU, CF_LEN) = range(19)
IS_STARTED, IS_PHASE, IS_K, IS_LEN = range(4)          # phase: 0 identification, 1 adaptation
(FS_T0, FS_T_RAND, FS_T_PREV, FS_A_MU, FS_A_G, FS_MU, FS_NU, FS_GAMMA, FS_P_IN, FS_LMAX, FS_K_SUP,
 FS_P_RAW, FS_LEN) = range(13)


@dataclass(frozen=True)
class HarmonicAffParams:
    """Harmonic AFF of seed 001 §5.1-5.4.  Defaults: §5.4.4 / §6.1 / Tables B.3-B.5 where the seed gives one."""

    frequencies_hz: tuple[float, ...] = param([8.0], "Hz", 1e-3, 1e4,
                                              "excitation frequencies Omega_i/2pi of the basis W(t) (§5.4.4: 8 Hz)")
    n_int: int = param(1, "", 1, 12, "number of interface DOFs = number of actuator inputs")
    law: str = param("rls", "", doc="adaptation law of theta: lms (eqs. 5.18-5.20) or rls (QR-RLS, Alg. 3)",
                     choices=LAWS)
    identification: str = param("rls", "", doc="identification law of P_gu: lms (§5.2.2) or rls (Alg. 4)",
                                choices=LAWS)
    simultaneous: bool = param(True, "", doc="identify P_gu during the adaptation too (Alg. 5; needs law rls "
                                             "and g_ext)")
    mu_lms: float = param(0.01, "", 0.0, 100.0, "normalised LMS adaptation gain mu_LMS (= mu_init of the "
                                                "supervisor; §5.4.4 uses 1e-1..1e-4)")
    gamma_lms: float = param(0.0, "g^2/u^2", 0.0, 1e9, "LMS regularisation gamma_LMS, same units as lambda_max "
                                                       "of P^T P (leakage nu = 1 - mu_bar gamma)")
    mu_id_lms: float = param(0.01, "1/u^2", 0.0, 1e9, "LMS identification gain mu_id,LMS (§5.4.4: 0.01; "
                                                      "not normalised, as eq. 5.24)")
    mu_rls: float = param(0.999, "", 1e-6, 1.0, "RLS forgetting factor mu_RLS of the adaptation (§6.1: 0.999)")
    gamma_rls: float = param(1e-12, "g^2/u^2", 0.0, 1e9, "RLS start confidence Xi = gamma_RLS I of theta = 0")
    mu_id_rls: float = param(0.9999, "", 1e-6, 1.0, "RLS forgetting factor mu_id,RLS of the identification "
                                                    "(§6.1: 0.9999; §5.4.4: 0.99)")
    gamma_id_rls: float = param(1e-6, "u^2", 0.0, 1e9, "RLS start confidence Xi_id = gamma_id I of P~ = 0")
    t_id_s: float = param(5.0, "s", 0.0, 1e6, "duration t_id of the identification phase (§6.1: 5 s)")
    t_rand_s: float = param(2.0, "s", 1e-6, 1e6, "hold time t_rand of each random identification theta "
                                                 "(§5.4.4: 2 s)")
    id_amplitude: float = param(1.0, "u", 0.0, 1e9, "random identification theta uniform in [-a, a] (units of u, "
                                                    "e.g. N)")
    seed: int = param(1, "", 0, 2**62, "seed of the identification random generator")
    supervisor: bool = param(False, "", doc="power-flow supervisor of mu_LMS and gamma_LMS (Alg. 2; law lms)")
    p_lim_w: float = param(-1.0, "W", -1e9, 0.0, "power-inflow limit P_lim < 0 (Tables B.3/B.4: -1 W)")
    da_mu_down: float = param(1e-4, "", 0.0, 1.0, "step Delta_down a_mu per violating sample (Table B.4: 1e-4)")
    da_gamma_up: float = param(0.01, "", 0.0, 1.0, "step Delta_up a_gamma per violating sample (Table B.3: 0.01)")
    da_gamma_down: float = param(0.001, "", 0.0, 1.0, "step Delta_down a_gamma per passive sample (B.3: 0.001)")
    b_mu: float = param(10.0, "", 1.0, 100.0, "exponent b_mu of mu = mu_init a_mu^b_mu (Table B.3: 10)")
    b_gamma: float = param(2.0, "", 1.0, 100.0, "exponent b_gamma of gamma = gamma_max a^b (Table B.3: 2)")
    gamma_max: float = param(1.0, "g^2/u^2", 0.0, 1e9, "maximum regularisation gamma_max (Table B.3: 1)")
    p_in_filter_s: float = param(0.0, "s", 0.0, 10.0, "time constant of a first-order low-pass on P_in before the "
                                                     "comparison with P_lim; 0 = unfiltered (the seed's form)")

    def validate(self) -> None:
        if len(self.frequencies_hz) < 1:
            raise ParameterError("frequencies_hz: at least one frequency is needed")
        if self.simultaneous and self.law != "rls":
            raise ParameterError("simultaneous: True needs law 'rls' (Alg. 5)")
        if self.supervisor and self.law != "lms":
            raise ParameterError("supervisor: True needs law 'lms' (Alg. 2 tunes mu_LMS and gamma_LMS)")

    @property
    def n_theta(self) -> int:
        return 2 * self.n_int * len(self.frequencies_hz)

    @property
    def n_ptilde(self) -> int:
        return 2 * self.n_int ** 2 * len(self.frequencies_hz)

    def config_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(omegas [rad/s], integer config, float config) for the kernels."""
        ci = np.zeros(CI_LEN, np.int64)
        ci[CI_NINT] = self.n_int
        ci[CI_NF] = len(self.frequencies_hz)
        ci[CI_LAW] = LAWS.index(self.law)
        ci[CI_IDLAW] = LAWS.index(self.identification)
        ci[CI_SIMUL] = int(self.simultaneous)
        ci[CI_SUP] = int(self.supervisor)
        cf = np.zeros(CF_LEN)
        cf[CF_MU_LMS], cf[CF_GAMMA_LMS], cf[CF_MU_ID_LMS] = self.mu_lms, self.gamma_lms, self.mu_id_lms
        cf[CF_MU_RLS], cf[CF_GAMMA_RLS] = self.mu_rls, self.gamma_rls
        cf[CF_MU_ID_RLS], cf[CF_GAMMA_ID_RLS] = self.mu_id_rls, self.gamma_id_rls
        cf[CF_T_ID], cf[CF_T_RAND], cf[CF_ID_AMP] = self.t_id_s, self.t_rand_s, self.id_amplitude
        cf[CF_P_LIM], cf[CF_DA_MU_DOWN] = self.p_lim_w, self.da_mu_down
        cf[CF_DA_G_UP], cf[CF_DA_G_DOWN] = self.da_gamma_up, self.da_gamma_down
        cf[CF_B_MU], cf[CF_B_G], cf[CF_GAMMA_MAX] = self.b_mu, self.b_gamma, self.gamma_max
        cf[CF_P_TAU] = self.p_in_filter_s
        omegas = 2.0 * np.pi * np.asarray(self.frequencies_hz, dtype=float)
        return omegas, ci, cf


# ----------------------------------------------------------------------------------------------
# reference (numpy) forms of the building blocks, for tests and offline use


def basis_matrix(omegas, t: float, n_int: int) -> np.ndarray:
    """W(t) of eq. 5.13, shape (n_int, 2 n_int n_Omega)."""
    omegas = np.atleast_1d(np.asarray(omegas, dtype=float))
    eye = np.eye(n_int)
    return np.hstack([np.hstack([eye * math.cos(w * t), -eye * math.sin(w * t)]) for w in omegas])


def p_matrix(h) -> np.ndarray:
    """P_gu of eq. 5.14 from complex H (n_Omega, n_int, n_int) (or (n_Omega,) for SISO)."""
    h = np.asarray(h, dtype=complex)
    if h.ndim == 1:
        h = h[:, None, None]
    nf, n, _ = h.shape
    p = np.zeros((2 * n * nf, 2 * n * nf))
    for i in range(nf):
        o = 2 * n * i
        p[o:o + n, o:o + n] = h[i].real
        p[o:o + n, o + n:o + 2 * n] = -h[i].imag
        p[o + n:o + 2 * n, o:o + n] = h[i].imag
        p[o + n:o + 2 * n, o + n:o + 2 * n] = h[i].real
    return p


def p_tilde_from_h(h) -> np.ndarray:
    """P~ = [vec Re H_1; vec Im H_1; ...] (column-major vec), App. D.1 generalised to MIMO."""
    h = np.asarray(h, dtype=complex)
    if h.ndim == 1:
        h = h[:, None, None]
    return np.concatenate([np.concatenate([hi.real.ravel(order="F"), hi.imag.ravel(order="F")]) for hi in h])


def h_from_p_tilde(p_tilde, n_int: int) -> np.ndarray:
    """Inverse of :func:`p_tilde_from_h`: complex H, shape (n_Omega, n_int, n_int)."""
    p_tilde = np.asarray(p_tilde, dtype=float)
    n2 = n_int * n_int
    nf = p_tilde.size // (2 * n2)
    out = np.empty((nf, n_int, n_int), dtype=complex)
    for i in range(nf):
        blk = p_tilde[2 * n2 * i:2 * n2 * (i + 1)]
        out[i] = blk[:n2].reshape(n_int, n_int, order="F") + 1j * blk[n2:].reshape(n_int, n_int, order="F")
    return out


def theta_tilde(theta, n_int: int) -> np.ndarray:
    """theta~ with P theta = theta~ P~ (App. D.1, MIMO via Kronecker products)."""
    theta = np.asarray(theta, dtype=float)
    nf = theta.size // (2 * n_int)
    eye = np.eye(n_int)
    n2 = n_int * n_int
    out = np.zeros((2 * n_int * nf, 2 * n2 * nf))
    for i in range(nf):
        tr = theta[2 * n_int * i:2 * n_int * i + n_int]
        ti = theta[2 * n_int * i + n_int:2 * n_int * (i + 1)]
        r, c = 2 * n_int * i, 2 * n2 * i
        out[r:r + n_int, c:c + n2] = np.kron(tr[None, :], eye)
        out[r:r + n_int, c + n2:c + 2 * n2] = -np.kron(ti[None, :], eye)
        out[r + n_int:r + 2 * n_int, c:c + n2] = np.kron(ti[None, :], eye)
        out[r + n_int:r + 2 * n_int, c + n2:c + 2 * n2] = np.kron(tr[None, :], eye)
    return out


# ----------------------------------------------------------------------------------------------
# numba kernels


@numba.njit(cache=True, nogil=True)
def _basis(omegas, t, cs):
    for i in range(omegas.shape[0]):
        cs[2 * i] = math.cos(omegas[i] * t)
        cs[2 * i + 1] = math.sin(omegas[i] * t)


@numba.njit(cache=True, nogil=True)
def _output(theta, cs, n, u):
    """u = W theta."""
    nf = cs.shape[0] // 2
    for r in range(n):
        s = 0.0
        for i in range(nf):
            o = 2 * n * i
            s += cs[2 * i] * theta[o + r] - cs[2 * i + 1] * theta[o + n + r]
        u[r] = s


@numba.njit(cache=True, nogil=True)
def _regressor_adapt(p, cs, n, x):
    """x = W P (n x n_theta); P block diagonal."""
    nf = cs.shape[0] // 2
    x[:, :] = 0.0
    for i in range(nf):
        c, s = cs[2 * i], cs[2 * i + 1]
        o = 2 * n * i
        for r in range(n):
            for col in range(o, o + 2 * n):
                x[r, col] = c * p[o + r, col] - s * p[o + n + r, col]


@numba.njit(cache=True, nogil=True)
def _regressor_ident(theta, cs, n, x):
    """x = W theta~ (n x n_ptilde)."""
    nf = cs.shape[0] // 2
    n2 = n * n
    x[:, :] = 0.0
    for i in range(nf):
        c, s = cs[2 * i], cs[2 * i + 1]
        ot = 2 * n * i
        op = 2 * n2 * i
        for q in range(n):
            a = c * theta[ot + q] - s * theta[ot + n + q]
            b = c * theta[ot + n + q] + s * theta[ot + q]
            for r in range(n):
                x[r, op + r + n * q] = a
                x[r, op + n2 + r + n * q] = -b


@numba.njit(cache=True, nogil=True)
def _p_from_tilde(pt, n, nf, p):
    n2 = n * n
    p[:, :] = 0.0
    for i in range(nf):
        o = 2 * n * i
        op = 2 * n2 * i
        for q in range(n):
            for r in range(n):
                re = pt[op + r + n * q]
                im = pt[op + n2 + r + n * q]
                p[o + r, o + q] = re
                p[o + r, o + n + q] = -im
                p[o + n + r, o + q] = im
                p[o + n + r, o + n + q] = re


@numba.njit(cache=True, nogil=True)
def qrrls_update(rm, x, xreg, y, lam, row, col):
    """One QR-RLS step in place (App. D.2, Givens rotations).

    Minimises ``sum_i lam^(k-i) |xreg_i x - y_i|^2 + lam^(k+1) x^T Xi x`` recursively: ``rm`` (m x m, lower
    triangular) is the square root of the information matrix Phi = rm rm^T, ``x`` (m,) the solution,
    ``xreg`` (n, m) the new regressor rows, ``y`` (n,) the new targets.  ``row`` (m,), ``col`` (m,) scratch.
    Returns the a-posteriori residual norm |B_22|.
    """
    m = rm.shape[0]
    n = xreg.shape[0]
    sl = math.sqrt(lam)
    for j in range(m):                      # row = sqrt(lam) R^T x  (the row theta^T R)
        s = 0.0
        for i in range(j, m):
            s += x[i] * rm[i, j]
        row[j] = sl * s
    for i in range(m):
        for j in range(i + 1):
            rm[i, j] *= sl
    res2 = 0.0
    for e in range(n):                      # annihilate the extra column e (= row e of xreg) into R
        for i in range(m):
            col[i] = xreg[e, i]
        yl = y[e]
        for i in range(m):
            b = col[i]
            if b == 0.0:
                continue
            a = rm[i, i]
            r = math.hypot(a, b)
            c = a / r
            s = b / r
            rm[i, i] = r
            col[i] = 0.0
            for k in range(i + 1, m):
                rk = rm[k, i]
                xk = col[k]
                rm[k, i] = c * rk + s * xk
                col[k] = c * xk - s * rk
            ri = row[i]
            row[i] = c * ri + s * yl
            yl = c * yl - s * ri
        res2 += yl * yl
    for j in range(m - 1, -1, -1):          # R^T x = row  (back substitution)
        s = row[j]
        for i in range(j + 1, m):
            s -= rm[i, j] * x[i]
        d = rm[j, j]
        x[j] = s / d if d != 0.0 else 0.0
    return math.sqrt(res2)


@numba.njit(cache=True, nogil=True)
def _rand_uniform(rng):
    """xorshift64* -> uniform in [0, 1)."""
    v = rng[0]
    v ^= v >> np.uint64(12)
    v ^= v << np.uint64(25)
    v ^= v >> np.uint64(27)
    rng[0] = v
    w = v * np.uint64(0x2545F4914F6CDD1D)
    return float(w >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True, nogil=True)
def _lambda_max(p):
    a = p.T @ p
    ev = np.linalg.eigvalsh(a)
    return ev[-1]


@numba.njit(cache=True, nogil=True)
def _begin_adaptation(ci, cf, ist, fs, theta, theta0, r_ad, p_tilde, p):
    n = ci[CI_NINT]
    nf = ci[CI_NF]
    _p_from_tilde(p_tilde, n, nf, p)
    fs[FS_LMAX] = _lambda_max(p)
    theta[:] = theta0
    m = theta.shape[0]
    r_ad[:, :] = 0.0
    sg = math.sqrt(cf[CF_GAMMA_RLS])
    for i in range(m):
        r_ad[i, i] = sg
    fs[FS_A_MU] = 1.0
    fs[FS_A_G] = 0.0
    ist[IS_PHASE] = 1


@numba.njit(cache=True, nogil=True)
def _identify(ci, cf, cs, theta_app, g, gext, p_tilde, r_id, x_id, y_id, row_id, col_id):
    n = ci[CI_NINT]
    _regressor_ident(theta_app, cs, n, x_id)
    for r in range(n):
        y_id[r] = g[r] - gext[r]
    if ci[CI_IDLAW] == 1:
        qrrls_update(r_id, p_tilde, x_id, y_id, cf[CF_MU_ID_RLS], row_id, col_id)
    else:
        mu = cf[CF_MU_ID_LMS]
        npt = p_tilde.shape[0]
        for r in range(n):                  # e = y - X P~  (error form)
            s = y_id[r]
            for j in range(npt):
                s -= x_id[r, j] * p_tilde[j]
            y_id[r] = s
        for j in range(npt):
            s = 0.0
            for r in range(n):
                s += x_id[r, j] * y_id[r]
            p_tilde[j] += mu * s


@numba.njit(cache=True, nogil=True)
def _supervise(t, lam, g, g_prev, cf, fs):
    """Power-flow supervisor (Alg. 2, eqs. 5.25-5.28): P_in = lam . (g - g_prev) / (t - t_prev) into fs[FS_P_IN],
    the schedules a_mu, a_gamma in fs updated; returns (mu_LMS, gamma_LMS).  ``g_prev``, fs[FS_T_PREV]: the
    previous sample (the caller stores them)."""
    dt = t - fs[FS_T_PREV]
    pin = 0.0
    if dt > 0.0:
        for r in range(g.shape[0]):
            pin += lam[r] * (g[r] - g_prev[r]) / dt
    fs[FS_P_RAW] = pin
    tau = cf[CF_P_TAU]
    if tau > 0.0:                           # optional first-order low-pass of P_in (exact for a held input)
        pin = fs[FS_P_IN] + (1.0 - math.exp(-dt / tau)) * (pin - fs[FS_P_IN])
    fs[FS_P_IN] = pin
    plim = cf[CF_P_LIM]
    if pin < plim:
        fs[FS_A_G] = min(fs[FS_A_G] + cf[CF_DA_G_UP], 1.0)
        fs[FS_A_MU] = max(fs[FS_A_MU] - cf[CF_DA_MU_DOWN], 0.0)
    elif pin > plim:
        fs[FS_A_G] = max(fs[FS_A_G] - cf[CF_DA_G_DOWN], 0.0)
    gam = cf[CF_GAMMA_MAX] * fs[FS_A_G] ** cf[CF_B_G]
    mu = cf[CF_MU_LMS] * fs[FS_A_MU] ** cf[CF_B_MU]
    fs[FS_MU] = mu
    fs[FS_GAMMA] = gam
    return mu, gam


@numba.njit(cache=True, nogil=True)
def supervisor_step_kernel(t, lam, g, g_prev, cf, fs):
    """One sample of a stand-alone supervisor (:class:`PowerFlowSupervisor`): the first call only stores the
    sample; returns (mu_LMS, gamma_LMS)."""
    if fs[FS_K_SUP] == 0.0:
        mu = cf[CF_MU_LMS] * fs[FS_A_MU] ** cf[CF_B_MU]
        gam = cf[CF_GAMMA_MAX] * fs[FS_A_G] ** cf[CF_B_G]
        fs[FS_MU] = mu
        fs[FS_GAMMA] = gam
    else:
        mu, gam = _supervise(t, lam, g, g_prev, cf, fs)
    fs[FS_K_SUP] += 1.0
    for r in range(g.shape[0]):
        g_prev[r] = g[r]
    fs[FS_T_PREV] = t
    return mu, gam


@numba.njit(cache=True, nogil=True)
def aff_step_kernel(t, g, gext, lam, omegas, ci, cf, ist, fs, rng, theta, theta_app, theta0, r_ad, p_tilde,
                    r_id, p, g_prev, cs, x_ad, x_id, y_ad, y_id, row_ad, col_ad, row_id, col_id, u):
    """One sample of the harmonic AFF (see module doc).  Measurements of t = t_{k+1}: gap ``g`` (n,),
    ``gext`` (n,) (zeros if unknown; needed by RLS adaptation and simultaneous identification), ``lam``
    (n,) = lambda_VIR (supervisor).  Writes ``u`` = u[k+1] = W(t) theta[k+1] and returns the phase
    (0 identification, 1 adaptation)."""
    n = ci[CI_NINT]
    nf = ci[CI_NF]
    if ist[IS_STARTED] == 0:                # first call: start of the test
        ist[IS_STARTED] = 1
        ist[IS_PHASE] = 0
        fs[FS_T0] = t
        fs[FS_T_RAND] = t
        fs[FS_T_PREV] = t
        for r in range(n):
            g_prev[r] = g[r]
        amp = cf[CF_ID_AMP]
        for j in range(theta.shape[0]):
            theta[j] = amp * (2.0 * _rand_uniform(rng) - 1.0)
        if cf[CF_T_ID] <= 0.0:
            _begin_adaptation(ci, cf, ist, fs, theta, theta0, r_ad, p_tilde, p)
        theta_app[:] = theta
        _basis(omegas, t, cs)
        _output(theta, cs, n, u)
        ist[IS_K] += 1
        return ist[IS_PHASE]
    _basis(omegas, t, cs)
    if ist[IS_PHASE] == 0:
        _identify(ci, cf, cs, theta_app, g, gext, p_tilde, r_id, x_id, y_id, row_id, col_id)
        if t - fs[FS_T0] >= cf[CF_T_ID] - 1e-12:
            _begin_adaptation(ci, cf, ist, fs, theta, theta0, r_ad, p_tilde, p)
        elif t - fs[FS_T_RAND] >= cf[CF_T_RAND] - 1e-12:
            fs[FS_T_RAND] = t
            amp = cf[CF_ID_AMP]
            for j in range(theta.shape[0]):
                theta[j] = amp * (2.0 * _rand_uniform(rng) - 1.0)
    else:
        if ci[CI_LAW] == 1:                 # QR-RLS adaptation with g_ext (Alg. 3)
            _regressor_adapt(p, cs, n, x_ad)
            for r in range(n):
                y_ad[r] = -gext[r]
            qrrls_update(r_ad, theta, x_ad, y_ad, cf[CF_MU_RLS], row_ad, col_ad)
            if ci[CI_SIMUL] == 1:           # Alg. 5: identification with the theta that produced g
                _identify(ci, cf, cs, theta_app, g, gext, p_tilde, r_id, x_id, y_id, row_id, col_id)
                _p_from_tilde(p_tilde, n, nf, p)
        else:                               # leaky normalised LMS (5.18-5.20) + supervisor (Alg. 2)
            lmax = fs[FS_LMAX]
            if ci[CI_SUP] == 1:
                mu, gam = _supervise(t, lam, g, g_prev, cf, fs)
            else:
                gam = cf[CF_GAMMA_LMS]
                mu = cf[CF_MU_LMS]
            gabs = gam
            den = lmax + gabs
            mubar = mu / den if den > 0.0 else 0.0
            nu = 1.0 - mubar * gabs
            nu = min(max(nu, 0.0), 1.0)
            fs[FS_MU] = mu
            fs[FS_NU] = nu
            fs[FS_GAMMA] = gam
            _regressor_adapt(p, cs, n, x_ad)
            m = theta.shape[0]
            for j in range(m):
                s = 0.0
                for r in range(n):
                    s += x_ad[r, j] * g[r]
                theta[j] = nu * theta[j] - mubar * s
    for r in range(n):
        g_prev[r] = g[r]
    fs[FS_T_PREV] = t
    theta_app[:] = theta
    _output(theta, cs, n, u)
    ist[IS_K] += 1
    return ist[IS_PHASE]


# ----------------------------------------------------------------------------------------------
# object API


class HarmonicAff:
    """Harmonic AFF for one test (module doc).  Per sample: ``u = aff.step(t, gap, gap_ext, lam_vir)``.

    ``t`` [s] sample time (any origin; the first call after :meth:`reset` starts the test), ``gap`` (n_int,)
    g = y_EXP - y_VIR, ``gap_ext`` (n_int,) gap of the external forces alone (RLS adaptation and
    simultaneous identification; may be omitted for LMS), ``lam_vir`` (n_int,) interface force on the
    virtual part (supervisor).  Returns u (n_int,) to hold until the next sample (internal buffer).
    While :attr:`identifying` is True the caller must keep the external excitation off.
    """

    def __init__(self, params: HarmonicAffParams | None = None):
        self.params = params if params is not None else HarmonicAffParams()
        self.params.validate()
        p = self.params
        self.omegas, self.ci, self.cf = p.config_arrays()
        n, m, mp = p.n_int, p.n_theta, p.n_ptilde
        self.ist = np.zeros(IS_LEN, np.int64)
        self.fs = np.zeros(FS_LEN)
        self.rng = np.zeros(1, np.uint64)
        self.theta = np.zeros(m)
        self.theta_app = np.zeros(m)
        self.theta0 = np.zeros(m)
        self.r_ad = np.zeros((m, m))
        self.p_tilde = np.zeros(mp)
        self.r_id = np.zeros((mp, mp))
        self.p = np.zeros((m, m))
        self.g_prev = np.zeros(n)
        self.cs = np.zeros(2 * len(p.frequencies_hz))
        self.x_ad = np.zeros((n, m))
        self.x_id = np.zeros((n, mp))
        self.y_ad = np.zeros(n)
        self.y_id = np.zeros(n)
        self.row_ad = np.zeros(m)
        self.col_ad = np.zeros(m)
        self.row_id = np.zeros(mp)
        self.col_id = np.zeros(mp)
        self.u = np.zeros(n)
        self._zeros = np.zeros(n)
        self._g = np.zeros(n)
        self._ge = np.zeros(n)
        self._lam = np.zeros(n)
        self.reset()
        # warm-up (compile or load from cache) on a copy of the state
        saved = self._state_copy()
        for k in range(3):
            self.step(k * 1e-3, self._zeros, self._zeros, self._zeros)
        self._state_restore(saved)

    def _arrays(self):
        return (self.omegas, self.ci, self.cf, self.ist, self.fs, self.rng, self.theta, self.theta_app,
                self.theta0, self.r_ad, self.p_tilde, self.r_id, self.p, self.g_prev, self.cs, self.x_ad,
                self.x_id, self.y_ad, self.y_id, self.row_ad, self.col_ad, self.row_id, self.col_id, self.u)

    def _state_copy(self):
        return [a.copy() for a in self._arrays()]

    def _state_restore(self, saved):
        for a, s in zip(self._arrays(), saved):
            a[...] = s

    def reset(self, theta0=None, h_est=None) -> None:
        """Start of a test: identification restarts at the next :meth:`step`.

        ``theta0`` (n_theta,): start value of theta in the adaptation (default 0, Alg. 1).  ``h_est``
        complex (n_Omega, n_int, n_int) (or (n_Omega,) for SISO): start value of P_est (default 0); with
        ``t_id_s = 0`` it is used as is (e.g. a model-based estimate).
        """
        p = self.params
        self.ist[:] = 0
        self.fs[:] = 0.0
        self.fs[FS_A_MU] = 1.0
        self.fs[FS_MU] = p.mu_lms
        self.fs[FS_NU] = 1.0
        self.rng[0] = np.uint64((int(p.seed) * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % (2 ** 64) or 1)
        self.theta[:] = 0.0
        self.theta_app[:] = 0.0
        self.theta0[:] = 0.0 if theta0 is None else np.asarray(theta0, dtype=float).reshape(-1)
        self.r_ad[:] = 0.0
        self.p_tilde[:] = 0.0 if h_est is None else p_tilde_from_h(h_est)
        self.r_id[:] = np.eye(p.n_ptilde) * math.sqrt(p.gamma_id_rls)
        self.p[:] = 0.0
        self.g_prev[:] = 0.0
        self.u[:] = 0.0

    def step(self, t: float, gap, gap_ext=None, lam_vir=None) -> np.ndarray:
        """One sample (module doc); returns u[k+1] (n_int,) (internal buffer, overwritten next call)."""
        self._g[:] = gap
        self._ge[:] = self._zeros if gap_ext is None else gap_ext
        self._lam[:] = self._zeros if lam_vir is None else lam_vir
        aff_step_kernel(float(t), self._g, self._ge, self._lam, *self._arrays())
        return self.u

    def set_lms_gains(self, mu_lms: float, gamma_lms: float) -> None:
        """Set mu_LMS and gamma_LMS of the (unsupervised) LMS adaptation from the next :meth:`step` on, e.g. from a
        :class:`PowerFlowSupervisor` shared by several filters."""
        self.cf[CF_MU_LMS] = mu_lms
        self.cf[CF_GAMMA_LMS] = gamma_lms

    # -------------------------------------------------------------------------------------------
    @property
    def identifying(self) -> bool:
        """True during the identification phase (and before the first step): keep f_ext = 0."""
        return self.ist[IS_STARTED] == 0 or self.ist[IS_PHASE] == 0

    @property
    def phase(self) -> str:
        return "identification" if self.identifying else "adaptation"

    @property
    def h_est(self) -> np.ndarray:
        """Current estimate of H_gu(Omega_i), complex (n_Omega, n_int, n_int)."""
        return h_from_p_tilde(self.p_tilde, self.params.n_int)

    @property
    def mu_lms(self) -> float:
        """Current (supervised) mu_LMS."""
        return float(self.fs[FS_MU])

    @property
    def nu_lms(self) -> float:
        """Current leakage factor nu_LMS."""
        return float(self.fs[FS_NU])

    @property
    def p_in(self) -> float:
        """Last power inflow P_in = lambda_VIR . g-dot into the transfer system [W] (supervisor on)."""
        return float(self.fs[FS_P_IN])

    @property
    def lambda_max(self) -> float:
        return float(self.fs[FS_LMAX])


class PowerFlowSupervisor:
    """The power-flow supervisor of Alg. 2 on its own, for several filters that share one interface.

    Same law and kernel as the supervisor inside :class:`HarmonicAff` (``supervisor = True``): per sample
    ``mu, gamma = sup.step(t, lam_vir, gap)`` with P_in = lam_vir . g-dot (g-dot by backward difference); the
    first call after :meth:`reset` only stores the sample.  Uses ``mu_lms`` (mu_init), ``p_lim_w``,
    ``da_mu_down``, ``da_gamma_up``, ``da_gamma_down``, ``b_mu``, ``b_gamma``, ``gamma_max`` of ``params``.
    """

    def __init__(self, params: HarmonicAffParams, n: int = 1):
        self.params = params
        _, _, self.cf = params.config_arrays()
        self.n = int(n)
        self.fs = np.zeros(FS_LEN)
        self.g_prev = np.zeros(self.n)
        self._g = np.zeros(self.n)
        self._lam = np.zeros(self.n)
        self.reset()
        saved = (self.fs.copy(), self.g_prev.copy())
        supervisor_step_kernel(0.0, self._lam, self._g, self.g_prev, self.cf, self.fs)   # compile / load
        self.fs[:], self.g_prev[:] = saved

    def reset(self) -> None:
        self.fs[:] = 0.0
        self.fs[FS_A_MU] = 1.0
        self.fs[FS_MU] = self.params.mu_lms
        self.g_prev[:] = 0.0

    def step(self, t: float, lam_vir, gap) -> tuple[float, float]:
        self._lam[:] = lam_vir
        self._g[:] = gap
        return supervisor_step_kernel(float(t), self._lam, self._g, self.g_prev, self.cf, self.fs)

    @property
    def mu_lms(self) -> float:
        return float(self.fs[FS_MU])

    @property
    def gamma_lms(self) -> float:
        return float(self.fs[FS_GAMMA])

    @property
    def p_in(self) -> float:
        """P_in as compared with P_lim (low-passed if ``p_in_filter_s > 0``) [W]."""
        return float(self.fs[FS_P_IN])

    @property
    def p_in_raw(self) -> float:
        """Unfiltered P_in = lam_vir . g-dot of the last sample [W]."""
        return float(self.fs[FS_P_RAW])

    @property
    def a_mu(self) -> float:
        return float(self.fs[FS_A_MU])

    @property
    def a_gamma(self) -> float:
        return float(self.fs[FS_A_G])


def time_per_sample(params: HarmonicAffParams | None = None, n_samples: int = 20000, dt_s: float = 1e-3) -> dict:
    """Per-sample cost [s] of :meth:`HarmonicAff.step` (Python call included) and of the bare kernel,
    averaged over ``n_samples`` calls, half of them in the identification phase and half in the adaptation.
    The inputs are random numbers (the cost does not depend on their values)."""
    p = dataclasses.replace(params or HarmonicAffParams(), t_id_s=n_samples * dt_s / 2)
    aff = HarmonicAff(p)
    rng = np.random.default_rng(0)
    sig = rng.standard_normal((n_samples, 3, p.n_int)) * 1e-3
    t0 = time.perf_counter()
    for k in range(n_samples):
        aff.step(k * dt_s, sig[k, 0], sig[k, 1], sig[k, 2])
    t_obj = (time.perf_counter() - t0) / n_samples
    aff.reset()
    arrays = aff._arrays()
    t0 = time.perf_counter()
    for k in range(n_samples):
        aff_step_kernel(k * dt_s, sig[k, 0], sig[k, 1], sig[k, 2], *arrays)
    t_kernel = (time.perf_counter() - t0) / n_samples
    return {"step_s": t_obj, "kernel_s": t_kernel, "n_theta": p.n_theta, "n_ptilde": p.n_ptilde}
