"""Identification of P_gu for the harmonic-basis AFF (:mod:`rths_ros.core.learning.aff.harmonic`; Bartl 2019 §5.2.2,
Alg. 4, App. D): the rearrangement ``P theta = theta~ P~`` (App. D.1), the QR-RLS kernel (App. D.2; also the RLS
adaptation law of Alg. 3) and the LMS / RLS identification step.  The laws are in the module doc of
:mod:`rths_ros.core.learning.aff.harmonic`."""
from __future__ import annotations

import math

import numba
import numpy as np

from rths_ros.core.learning.aff.harmonic_params import CF_MU_ID_LMS, CF_MU_ID_RLS, CI_IDLAW, CI_NINT

__all__ = ["theta_tilde", "qrrls_update", "p_tilde_from_h", "h_from_p_tilde"]


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
