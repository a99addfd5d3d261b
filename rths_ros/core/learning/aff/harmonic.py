"""Harmonic-basis adaptive feedforward filter (AFF) with LMS / QR-RLS adaptation and identification.

Bartl 2019, ch. 5, §5.1-5.4, App. D.  ROS-free; see docs/harmonic_aff.md.

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
  obtained from R'^T theta' = (theta'^T R')^T by back substitution.  X = W P_est, y = -g_ext.  (The thesis
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

Choices where the thesis is silent (documented in docs/harmonic_aff.md):

* timing: the output u[k] = W[k] theta[k] is held over [t_k, t_k+1); ``step`` receives the measurements of
  t_k+1 and returns u[k+1].  The identification regressor pairs g[k+1] with the theta that produced it
  (theta[k]); Alg. 5 prints theta[k+1], which differs only while theta moves;
* g-dot = backward difference of the gap over the time since the previous call; P_in is unfiltered by
  default (``p_in_filter_s = 0``) or passed through a first-order low-pass;
* nu is clipped to [0, 1];
* the random identification vector comes from a per-object xorshift64* generator (``seed``), so the
  object and the in-process simulation (rths_ros.core.methods.lumped_mass) give identical runs.

All per-sample work is one numba kernel (:func:`aff_step_kernel`) on preallocated arrays.

Modules: the parameters and the kernels' slot layout are :mod:`rths_ros.core.learning.aff.harmonic_params`, the
rearrangement, QR-RLS and identification :mod:`rths_ros.core.learning.aff.harmonic_identification`, the supervisor
:mod:`rths_ros.core.learning.aff.harmonic_supervisor`; this module holds the basis, the adaptation and
:class:`HarmonicAff`.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numba
import numpy as np

from rths_ros.core.learning.aff.harmonic_identification import (
    _identify,
    _p_from_tilde,
    h_from_p_tilde,
    p_tilde_from_h,
    qrrls_update,
)
from rths_ros.core.learning.aff.harmonic_params import (
    CF_GAMMA_LMS,
    CF_GAMMA_RLS,
    CF_ID_AMP,
    CF_MU_LMS,
    CF_MU_RLS,
    CF_T_ID,
    CF_T_RAND,
    CI_LAW,
    CI_NF,
    CI_NINT,
    CI_SIMUL,
    CI_SUP,
    FS_A_G,
    FS_A_MU,
    FS_GAMMA,
    FS_LEN,
    FS_LMAX,
    FS_MU,
    FS_NU,
    FS_P_IN,
    FS_T0,
    FS_T_PREV,
    FS_T_RAND,
    IS_K,
    IS_LEN,
    IS_PHASE,
    IS_STARTED,
    HarmonicAffParams,
)
from rths_ros.core.learning.aff.harmonic_supervisor import _supervise

__all__ = ["HarmonicAff", "basis_matrix", "p_matrix", "aff_step_kernel", "time_per_sample"]


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
        :class:`rths_ros.core.learning.aff.harmonic_supervisor.PowerFlowSupervisor` shared by several filters."""
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
