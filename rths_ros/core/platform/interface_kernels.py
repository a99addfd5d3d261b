"""Numba kernels of the interface map (:class:`rths_ros.core.platform.interface.InterfaceMap`) for interfaces of
translations only: the leg command of an interface state and the achieved interface state of measured legs.

The rigid-body products reproduce pinocchio's rounding (``pin.SE3 * pin.SE3``, ``SE3.actInv(Motion)``: the
operations in the same order as the compiled products; test/core/platform/test_interface_kernels.py checks them on
random cases), and the 3x3 and 6x6 matrix-vector products go through ``np.dot`` as the array code does, with the
same memory layouts (pinocchio's rotations are column-major), so the kernels give the numbers of the pinocchio and
NumPy operations they replace bit for bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from rths_ros.core.numerics.kernel import kernel
from rths_ros.core.platform.stewart import _forward, _lengths_jacobian, _solve6

__all__ = ["se3_mul", "se3_act_inv_motion", "achieved_translation", "leg_commands_translation"]

#: codes of :func:`achieved_translation`
ACHIEVED_OK, ACHIEVED_NO_FK, ACHIEVED_SINGULAR = 0, 1, 2


@kernel
def se3_mul(ra, ta, rb, tb, r, t):
    """``(r, t) = (ra, ta) * (rb, tb)`` (SE3 product, as ``pin.SE3.__mul__``): rows 0-1 summed left to right,
    row 2 as ``a0 + (a1 + a2)``.  ``r, t`` must not alias the inputs."""
    for i in range(2):
        t[i] = ta[i] + ((ra[i, 0] * tb[0] + ra[i, 1] * tb[1]) + ra[i, 2] * tb[2])
        for j in range(3):
            r[i, j] = (ra[i, 0] * rb[0, j] + ra[i, 1] * rb[1, j]) + ra[i, 2] * rb[2, j]
    t[2] = ta[2] + (ra[2, 0] * tb[0] + (ra[2, 1] * tb[1] + ra[2, 2] * tb[2]))
    for j in range(3):
        r[2, j] = ra[2, 0] * rb[0, j] + (ra[2, 1] * rb[1, j] + ra[2, 2] * rb[2, j])


@kernel
def se3_act_inv_motion(r, t, v, lin, ang):
    """The motion ``v`` (6,: linear, angular) expressed in the frame ``(r, t)``, as ``SE3.actInv(Motion)``:
    ``lin = r^T (v_lin - t x v_ang)``, ``ang = r^T v_ang``."""
    w0, w1, w2 = v[3], v[4], v[5]
    u0 = v[0] - (t[1] * w2 - t[2] * w1)
    u1 = v[1] - (t[2] * w0 - t[0] * w2)
    u2 = v[2] - (t[0] * w1 - t[1] * w0)
    for i in range(3):
        lin[i] = (r[0, i] * u0 + r[1, i] * u1) + r[2, i] * u2
        ang[i] = (r[0, i] * w0 + r[1, i] * w1) + r[2, i] * w2


@njit(cache=True)
def achieved_translation(lengths, rates, r, t, a, p, tol, max_iter, fk_work, target, rates_w, v, frames, mid_r, mid_t,
                         d_r, d_t, lin, ang, idx, q_out, qd_out):
    """Achieved interface state of the measured legs (``InterfaceMap.achieved_into`` without rotations): forward
    kinematics warm-started from (and written to) the TCP pose ``(r, t)``, the TCP body twist ``v`` from
    ``J v = rates``, ``d = T_I0_W * T_W_TCP * T_TCP_I`` and the interface rates ``d_r (T_TCP_I^-1 v)_lin``.

    ``fk_work`` = (L, U, J, res, A, delta, S, Rn) of :func:`rths_ros.core.platform.stewart._forward`; ``frames``
    = (R_I0_W, t_I0_W, R_TCP_I, t_TCP_I); ``d_r`` column-major (3, 3).  Returns (code, Newton updates,
    residual): code :data:`ACHIEVED_NO_FK` (no convergence: ``r, t`` hold the last iterate, nothing else is
    written) or :data:`ACHIEVED_SINGULAR` (singular Jacobian at the pose), else :data:`ACHIEVED_OK`."""
    big_l, big_u, big_j, res, big_a, delta, s3, r3 = fk_work
    for i in range(6):
        target[i] = lengths[i]
    it, err = _forward(r, t, a, p, target, tol, max_iter, big_l, big_u, big_j, res, big_a, delta, s3, r3)
    if not err <= tol:
        return ACHIEVED_NO_FK, it, err
    _lengths_jacobian(r, t, a, p, big_l, big_u, big_j)
    for i in range(6):
        rates_w[i] = rates[i]
    if not _solve6(big_j, rates_w, big_a, v):
        return ACHIEVED_SINGULAR, it, err
    r_i0w, t_i0w, r_tcpi, t_tcpi = frames
    se3_mul(r_i0w, t_i0w, r, t, mid_r, mid_t)
    se3_mul(mid_r, mid_t, r_tcpi, t_tcpi, d_r, d_t)
    se3_act_inv_motion(r_tcpi, t_tcpi, v, lin, ang)
    xd = np.dot(d_r, lin)
    for i in range(idx.shape[0]):
        j = idx[i]
        q_out[i] = d_t[j]
        qd_out[i] = xd[j]
    return ACHIEVED_OK, it, err


@njit(cache=True)
def leg_commands_translation(q, qd, idx, r_home, t_home, r_w_i0, r_tcp_i, a, p, x3, xd3, v, t_out, u_work, j_work,
                             b_out, bd_out):
    """Leg lengths and rates of the interface state (q, qd) (``InterfaceMap.leg_commands_into`` without
    rotations): TCP pose ``(r_home, t_out)`` with ``t_out = t_home + r_w_i0 d``, TCP body twist
    ``v = (r_tcp_i d', 0)``, ``b_out`` the leg lengths and ``bd_out = J v`` (``r_w_i0`` row-major, ``r_tcp_i``
    column-major, as the map holds them)."""
    for i in range(3):
        x3[i] = 0.0
        xd3[i] = 0.0
    for i in range(idx.shape[0]):
        x3[idx[i]] = q[i]
        xd3[idx[i]] = qd[i]
    dt = np.dot(r_w_i0, x3)
    for i in range(3):
        t_out[i] = t_home[i] + dt[i]
    vl = np.dot(r_tcp_i, xd3)
    for i in range(3):
        v[i] = vl[i]
        v[i + 3] = 0.0
    _lengths_jacobian(r_home, t_out, a, p, b_out, u_work, j_work)
    bd = np.dot(j_work, v)
    for i in range(6):
        bd_out[i] = bd[i]
