"""Numba kernels of the gait test's interface (:class:`rths_ros.core.models.gait.interface.GaitInterface`), the
platform's leg-speed policy and the model's plate-frame command (:mod:`rths_ros.core.models.gait.rths`).

The objects call these kernels in their methods, and the compiled trial (:mod:`rths_ros.core.models.gait.trial`)
calls the same ones, so both give the same numbers bit for bit.  They give the numbers of the pinocchio and NumPy
code they replace to rounding (test/core/models/gait/test_gait_kernels.py checks them on random cases): the SE3
products and actions in pinocchio's order (:func:`~rths_ros.core.platform.interface_kernels.se3_mul`,
:func:`se3_act`), the products of a 3x3 summed left to right (:func:`cm_mat_vec`), and in the leg command
(:func:`tcp_twist`, :func:`leg_commands_pose`) every matrix product written out and summed left to right: no
BLAS call and no allocation, where ``np.dot`` (a BLAS call, whose order of summation depends on the CPU) took a
tenth of the compiled gait step.

``frames`` = (R_G_W, t_G_W, R_W_G, t_W_G, R_TCP_D, t_TCP_D, R_D_TCP, t_D_TCP, R_TCP_S, t_TCP_S, R_D_F, 0) of the
interface (``R_D_TCP`` column-major); ``work`` = (mid_r, mid_t, d_r, d_t, s_r, s_t, f_r, f_t, r_gd, v0, v1, v2, v3)
with ``r_gd`` row-major (3, 3).
"""
from __future__ import annotations

import math

from rths_ros.core.numerics.kernel import kernel
from rths_ros.core.platform.interface_kernels import se3_mul
from rths_ros.core.platform.stewart import _lengths_jacobian, _solve6

__all__ = ["se3_act", "cm_mat_vec", "cross3", "command_from_pose", "sagittal_load", "achieved_state",
           "tcp_twist", "leg_commands_pose", "foot_state_pose", "saturate_legs", "plate_command"]

#: entries of the ``out`` array of :func:`sagittal_load`
LOAD_FIELDS = ("f_x", "f_y", "f_parallel", "f_perp", "m_z", "f_lateral", "normal_force", "cop_x", "cop_z")


@kernel
def se3_act(r, t, p, out):
    """``out = r p + t`` (``pin.SE3.act`` of a point): rows 0-1 summed left to right, row 2 as
    ``a0 + (a1 + a2)``."""
    for i in range(2):
        out[i] = t[i] + ((r[i, 0] * p[0] + r[i, 1] * p[1]) + r[i, 2] * p[2])
    out[2] = t[2] + (r[2, 0] * p[0] + (r[2, 1] * p[1] + r[2, 2] * p[2]))


@kernel
def cm_mat_vec(r, v, out):
    """``out = r v`` for a 3x3 that NumPy holds column-major: summed left to right.  ``out`` must not alias ``v``."""
    for i in range(3):
        out[i] = (r[i, 0] * v[0] + r[i, 1] * v[1]) + r[i, 2] * v[2]


@kernel
def cm_mat_t_vec(r, v, out):
    """``out = r^T v`` for a row-major 3x3 ``r`` (its transpose is column-major): summed left to right."""
    for i in range(3):
        out[i] = (r[0, i] * v[0] + r[1, i] * v[1]) + r[2, i] * v[2]


@kernel
def cross3(a, b, out):
    """``out = a x b`` (as the interface's ``_cross``)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@kernel
def _ground_to(r, t, frames, work, rb, tb, r_out, t_out):
    """``(r_out, t_out) = (T_G_W * pose) * (rb, tb)``; ``T_G_W * pose`` stays in ``work[0:2]``."""
    se3_mul(frames[0], frames[1], r, t, work[0], work[1])
    se3_mul(work[0], work[1], rb, tb, r_out, t_out)


@kernel
def command_from_pose(r, t, frames, work, x_ref, q_out):
    """Interface coordinates ``(x_IFP, y_IFP, alpha_R)`` of the TCP pose ``(r, t)`` (``command_from_tcp``);
    ``T_G_D`` stays in ``work[2:4]``."""
    _ground_to(r, t, frames, work, frames[4], frames[5], work[2], work[3])
    d_r, d_t = work[2], work[3]
    theta = math.atan2(d_r[1, 0], d_r[0, 0])
    q_out[0] = d_t[0] + x_ref
    q_out[1] = d_t[1]
    q_out[2] = math.pi / 2 - theta


@kernel
def sagittal_load(w, alpha, r, t, frames, work, x_ref, mass, gravity, com_f, cop_min, out):
    """The interface load of the raw sensor wrench ``w`` at the TCP pose ``(r, t)`` (``sagittal_wrench`` without
    the limit checks): ``out`` = :data:`LOAD_FIELDS`."""
    s_r, s_t, f_r, f_t = work[4], work[5], work[6], work[7]
    f_g, m_g, v2, v3 = work[9], work[10], work[11], work[12]
    _ground_to(r, t, frames, work, frames[8], frames[9], s_r, s_t)         # T_G_S
    _ground_to(r, t, frames, work, frames[4], frames[5], work[2], work[3])  # T_G_D
    se3_mul(work[2], work[3], frames[10], frames[11], f_r, f_t)             # T_G_F
    v2[0], v2[1], v2[2] = w[0], w[1], w[2]
    cm_mat_vec(s_r, v2, f_g)
    v2[0], v2[1], v2[2] = w[3], w[4], w[5]
    cm_mat_vec(s_r, v2, m_g)
    if mass > 0.0:
        fw0, fw1, fw2 = mass * gravity[0], mass * gravity[1], mass * gravity[2]
        se3_act(f_r, f_t, com_f, v2)
        r0, r1, r2 = v2[0] - s_t[0], v2[1] - s_t[1], v2[2] - s_t[2]
        f_g[0], f_g[1], f_g[2] = f_g[0] - fw0, f_g[1] - fw1, f_g[2] - fw2
        m_g[0] = m_g[0] - (r1 * fw2 - r2 * fw1)
        m_g[1] = m_g[1] - (r2 * fw0 - r0 * fw2)
        m_g[2] = m_g[2] - (r0 * fw1 - r1 * fw0)
    a = work[3]
    v3[0], v3[1], v3[2] = s_t[0] - a[0], s_t[1] - a[1], s_t[2] - a[2]
    cross3(v3, f_g, v2)
    ma0, ma2 = m_g[0] + v2[0], m_g[2] + v2[2]
    c, s = math.cos(alpha), math.sin(alpha)
    fx, fy = f_g[0], f_g[1]
    out[0] = fx
    out[1] = fy
    out[2] = fx * c + fy * -s
    out[3] = fx * s + fy * c
    out[4] = ma2
    out[5] = f_g[2]
    out[6] = fy
    if abs(fy) >= cop_min:
        cross3(a, f_g, v2)
        out[7] = (ma2 + v2[2]) / fy + x_ref
        out[8] = -(ma0 + v2[0]) / fy
    else:
        out[7] = math.nan
        out[8] = math.nan


@kernel
def achieved_state(r, t, rates, a, p, big_l, big_u, big_j, big_a, rates_w, v, frames, work, a_t, x_ref, xd_ref,
                   q_out, qd_out):
    """Achieved interface state at the TCP pose ``(r, t)`` with the measured leg ``rates`` (``achieved`` after
    the forward kinematics): the body twist ``v`` from ``J v = rates``, ``q_out`` and ``qd_out``.  Returns False
    if the Jacobian is singular (nothing else written)."""
    _lengths_jacobian(r, t, a, p, big_l, big_u, big_j)
    for i in range(6):
        rates_w[i] = rates[i]
    if not _solve6(big_j, rates_w, big_a, v):
        return False
    command_from_pose(r, t, frames, work, x_ref, q_out)
    rg = work[0]                                           # R_G_TCP
    w_g, v_g, r_g, tmp = work[9], work[10], work[11], work[12]
    tmp[0], tmp[1], tmp[2] = v[3], v[4], v[5]
    cm_mat_vec(rg, tmp, w_g)
    tmp[0], tmp[1], tmp[2] = v[0], v[1], v[2]
    cm_mat_vec(rg, tmp, v_g)
    cm_mat_vec(rg, a_t, r_g)
    cross3(w_g, r_g, tmp)
    qd_out[0] = (v_g[0] + tmp[0]) + xd_ref
    qd_out[1] = v_g[1] + tmp[1]
    qd_out[2] = -w_g[2]
    return True


@kernel
def tcp_twist(alpha, qd, xd_ref, frames, work, out):
    """Body twist (v, omega) of the TCP in TCP axes for the command rates ``qd`` at the leg angle ``alpha``
    (``tcp_body_twist``).  The products with ``R_G_D`` are summed left to right (no BLAS call, no allocation)."""
    r_gd = work[8]
    c, s = math.cos(math.pi / 2 - alpha), math.sin(math.pi / 2 - alpha)
    r_gd[0, 0], r_gd[0, 1], r_gd[0, 2] = c, -s, 0.0
    r_gd[1, 0], r_gd[1, 1], r_gd[1, 2] = s, c, 0.0
    r_gd[2, 0], r_gd[2, 1], r_gd[2, 2] = 0.0, 0.0, 1.0
    w2 = -qd[2]
    t_dt = frames[7]
    g0 = (r_gd[0, 0] * t_dt[0] + r_gd[0, 1] * t_dt[1]) + r_gd[0, 2] * t_dt[2]
    g1 = (r_gd[1, 0] * t_dt[0] + r_gd[1, 1] * t_dt[1]) + r_gd[1, 2] * t_dt[2]
    g2 = (r_gd[2, 0] * t_dt[0] + r_gd[2, 1] * t_dt[1]) + r_gd[2, 2] * t_dt[2]
    v0 = (qd[0] - xd_ref) + (0.0 * g2 - w2 * g1)
    v1 = qd[1] + (w2 * g0 - 0.0 * g2)
    v2 = 0.0 + (0.0 * g1 - 0.0 * g0)
    r_dt = frames[6]
    for i in range(3):
        # column i of R_G_TCP = R_G_D R_D_TCP, then its product with the twist in G (R_G_TCP^T v)
        c0 = (r_gd[0, 0] * r_dt[0, i] + r_gd[0, 1] * r_dt[1, i]) + r_gd[0, 2] * r_dt[2, i]
        c1 = (r_gd[1, 0] * r_dt[0, i] + r_gd[1, 1] * r_dt[1, i]) + r_gd[1, 2] * r_dt[2, i]
        c2 = (r_gd[2, 0] * r_dt[0, i] + r_gd[2, 1] * r_dt[1, i]) + r_gd[2, 2] * r_dt[2, i]
        out[i] = (c0 * v0 + c1 * v1) + c2 * v2
        out[3 + i] = (c0 * 0.0 + c1 * 0.0) + c2 * w2


@kernel
def leg_commands_pose(q, qd, x_ref, xd_ref, frames, work, a, p, big_u, big_j, v, pose_r, pose_t, b_out, bd_out):
    """Leg lengths and rates of the interface command (q, qd) (``leg_commands`` without the checks): the TCP
    pose ``(pose_r, pose_t) = T_W_G * T_G_D(q) * T_D_TCP``, ``b_out``, the twist ``v`` and ``bd_out = J v``."""
    r_gd = work[8]
    c, s = math.cos(math.pi / 2 - q[2]), math.sin(math.pi / 2 - q[2])
    r_gd[0, 0], r_gd[0, 1], r_gd[0, 2] = c, -s, 0.0
    r_gd[1, 0], r_gd[1, 1], r_gd[1, 2] = s, c, 0.0
    r_gd[2, 0], r_gd[2, 1], r_gd[2, 2] = 0.0, 0.0, 1.0
    t_gd = work[9]
    t_gd[0], t_gd[1], t_gd[2] = q[0] - x_ref, q[1], 0.0
    se3_mul(frames[2], frames[3], r_gd, t_gd, work[0], work[1])
    se3_mul(work[0], work[1], frames[6], frames[7], pose_r, pose_t)
    _lengths_jacobian(pose_r, pose_t, a, p, b_out, big_u, big_j)
    tcp_twist(q[2], qd, xd_ref, frames, work, v)
    for i in range(6):
        acc = 0.0
        for j in range(6):
            acc += big_j[i, j] * v[j]
        bd_out[i] = acc


@kernel
def foot_state_pose(r, t, v, frames, work, a_t, r_gf, p_g, v_g, w_g):
    """Foot pose (``r_gf``, ``p_g``) and IFP velocity and angular velocity in G of the TCP pose ``(r, t)`` with
    the body twist ``v`` (``foot_state_from_tcp``)."""
    _ground_to(r, t, frames, work, frames[4], frames[5], work[2], work[3])  # T_G_D
    se3_mul(work[2], work[3], frames[10], frames[11], r_gf, p_g)           # T_G_F
    rg = work[0]
    tmp, tmp2 = work[11], work[12]
    tmp[0], tmp[1], tmp[2] = v[3], v[4], v[5]
    cm_mat_vec(rg, tmp, w_g)
    cross3(tmp, a_t, tmp2)
    tmp[0], tmp[1], tmp[2] = v[0] + tmp2[0], v[1] + tmp2[1], v[2] + tmp2[2]
    cm_mat_vec(rg, tmp, v_g)


@kernel
def saturate_legs(b, bd, prev, lim, vmax, dt, db):
    """The ``saturate`` leg-speed policy in place on (b, bd): each length moves from ``prev`` by at most ``lim``,
    the rates are clipped to ``vmax`` (those of a clipped length = the clipped move / dt).  Returns whether
    anything was limited (then b, bd changed)."""
    hit = False
    for i in range(6):
        db[i] = b[i] - prev[i]
        if abs(db[i]) > lim or abs(bd[i]) > vmax:
            hit = True
    if not hit:
        return False
    for i in range(6):
        sat = abs(db[i]) > lim
        d = db[i]
        d = -lim if d < -lim else (lim if d > lim else d)
        b[i] = prev[i] + d
        if sat:
            bd[i] = d / dt
        else:
            x = bd[i]
            bd[i] = -vmax if x < -vmax else (vmax if x > vmax else x)
    return True


@kernel
def plate_command(c, right_stance, fp_r, t, t_to, q_to, gp, q, qd):
    """The plate-frame command (q, qd) of the model command ``c`` (``GaitNumerical._update_command``);
    ``gp`` = (h_0f, alpha_0, swing_transition_s, swing_lift_m, 2, 3): the exponents as data, so that the powers
    are the C library's ``pow`` of the Python code."""
    if right_stance:
        q[0], q[1], q[2] = c[0] - fp_r, c[1], c[2]
        qd[0], qd[1], qd[2] = c[3], c[4], c[5]
        return
    h0f, a0, big_t, lift, two, three = gp[0], gp[1], gp[2], gp[3], gp[4], gp[5]
    tx, ty, ta = -h0f * math.cos(a0), c[1], a0
    tyd = c[4]
    tau = (t - t_to) / big_t if big_t > 0.0 else 1.0
    if tau >= 1.0:
        q[0], q[1], q[2] = tx, ty, ta
        qd[0], qd[1], qd[2] = 0.0, tyd, 0.0
        return
    s = tau * tau * tau * (10.0 - 15.0 * tau + 6.0 * tau * tau)
    sd = 30.0 * tau * tau * (1.0 - tau) * (1.0 - tau) / big_t
    b = 64.0 * math.pow(tau * (1.0 - tau), three)
    bd = 192.0 * math.pow(tau * (1.0 - tau), two) * (1.0 - 2.0 * tau) / big_t
    q0, q1, q2 = q_to[0], q_to[1], q_to[2]
    q[0] = q0 + s * (tx - q0)
    q[1] = q1 + s * (ty - q1) + lift * b
    q[2] = q2 + s * (ta - q2)
    qd[0] = sd * (tx - q0)
    qd[1] = sd * (ty - q1) + s * tyd + lift * bd
    qd[2] = sd * (ta - q2)
