"""Numba kernels of the VPP gait model (:mod:`rths_ros.core.models.gait.vpp`, whose module doc gives the equations):
leg forces, right-hand side, RK4 sub-step with event location, interface command, synchronisation step and
the whole-walk simulation loop."""
from __future__ import annotations

import math

import numpy as np

from rths_ros.core.models.gait.vpp_params import (
    C_FALL,
    EV_FALL,
    EV_TD_L,
    EV_TD_R,
    EV_TO_L,
    EV_TO_R,
    FOOT_SPRING,
    N_Q,
    N_S,
    P_A0,
    P_AMP,
    P_ATO,
    P_COP,
    P_DU,
    P_FOOT,
    P_FTO,
    P_G,
    P_J,
    P_KF,
    P_KL,
    P_KR,
    P_KU,
    P_L0L,
    P_L0R,
    P_L0U,
    P_LFF,
    P_LH,
    P_M,
    P_MIFP,
    P_RH,
    P_RV,
    Q_ALPHA,
    Q_COP,
    Q_FAX,
    Q_FU,
    Q_FX,
    Q_FY,
    Q_GX,
    Q_GY,
    Q_L,
    Q_LUDD,
    Q_TANG,
    Q_TAU,
    S_LU,
    S_LUD,
    S_OM,
    S_PHI,
    S_VX,
    S_VY,
    S_X,
    S_Y,
)
from rths_ros.core.numerics.kernel import kernel


@kernel
def _hip_vpp_sc(s, P, sp, cp):
    """Hip and VPP positions (hx, hy, vx, vy) with ``sp, cp`` = sin, cos of the trunk angle."""
    return (s[S_X] - P[P_RH] * sp, s[S_Y] - P[P_RH] * cp, s[S_X] + P[P_RV] * sp, s[S_Y] + P[P_RV] * cp)


@kernel
def _hip_vpp(s, P):
    return _hip_vpp_sc(s, P, math.sin(s[S_PHI]), math.cos(s[S_PHI]))


@kernel
def _cop(fp, alpha, P):
    if P[P_COP] == 0.0:
        return fp
    half = 0.5 * math.pi
    if alpha <= half:
        d = P[P_LH] * (alpha - half) / (half - P[P_A0])
    else:
        d = P[P_LFF] * (alpha - half) / (P[P_ATO] - half)
    if d < -P[P_LH]:
        d = -P[P_LH]
    elif d > P[P_LFF]:
        d = P[P_LFF]
    return fp + d


@kernel
def _leg(s, c, fp, P, w, n, q):
    """Fill ``q`` (N_Q) with the quantities of leg ``n`` (0 = left, 1 = right); zeros in swing."""
    hx, hy, vx, vy = _hip_vpp(s, P)
    _leg_at(s, c, fp, P, w, n, q, hx, hy, vx, vy, True)


@kernel
def _leg_at(s, c, fp, P, w, n, q, hx, hy, vx, vy, full):
    """:func:`_leg` at the hip and VPP positions ``hx, hy, vx, vy`` of the state; without ``full`` only what the
    right-hand side reads (Q_FX, Q_FY, Q_TAU, Q_LUDD: the leg angle is then computed only for the CoP shift)."""
    for i in range(N_Q):
        q[i] = 0.0
    if c[n] == 0:
        return
    dx, dy = hx - fp[n], hy
    l = math.sqrt(dx * dx + dy * dy)
    ex, ey = dx / l, dy / l
    px, py = ey, -ex
    alpha = math.atan2(dy, -dx) if (full or P[P_COP] != 0.0) else 0.0
    cop = _cop(fp[n], alpha, P)
    ux, uy = vx - cop, vy
    tang = (ux * px + uy * py) / (ux * ex + uy * ey)
    amp_leg = n == 1 and P[P_AMP] != 0.0
    if amp_leg:
        lu, lud = s[S_LU], s[S_LUD]
        if P[P_FOOT] == FOOT_SPRING:
            comp = (P[P_L0R] - P[P_L0U]) - (l - lu)
            fpar = -P[P_KF] * comp if comp > 0.0 else 0.0
        else:
            fpar = w[0]
        fu = P[P_DU] * lud + P[P_KU] * (lu - P[P_L0U])
        fax = -fpar
        perp = fax * tang
        q[Q_FX] = -fu * ex + perp * px
        q[Q_FY] = -fu * ey + perp * py
        q[Q_FU] = fu
        q[Q_LUDD] = (fpar - fu) / P[P_MIFP]
    else:
        k = P[P_KL] if n == 0 else P[P_KR]
        l0 = P[P_L0L] if n == 0 else P[P_L0R]
        fax = k * (l0 - l)
        perp = fax * tang
        q[Q_FX] = fax * ex + perp * px
        q[Q_FY] = fax * ey + perp * py
    gx = fax * ex + perp * px
    gy = fax * ey + perp * py
    q[Q_GX], q[Q_GY] = gx, gy
    q[Q_TAU] = (cop - hx) * gy - (0.0 - hy) * gx
    q[Q_COP], q[Q_L], q[Q_ALPHA], q[Q_FAX], q[Q_TANG] = cop, l, alpha, fax, tang


@kernel
def _rhs(s, c, fp, P, w, ds, q):
    sp, cp = math.sin(s[S_PHI]), math.cos(s[S_PHI])
    fx = 0.0
    fy = 0.0
    mom = 0.0
    ds[S_LU] = 0.0
    ds[S_LUD] = 0.0
    hx, hy, vx, vy = _hip_vpp_sc(s, P, sp, cp)
    for n in range(2):
        _leg_at(s, c, fp, P, w, n, q, hx, hy, vx, vy, False)
        fx += q[Q_FX]
        fy += q[Q_FY]
        mom += P[P_RH] * (cp * q[Q_FX] - sp * q[Q_FY]) + q[Q_TAU]
        if n == 1 and P[P_AMP] != 0.0 and c[1] != 0:
            ds[S_LU] = s[S_LUD]
            ds[S_LUD] = q[Q_LUDD]
    ds[S_X], ds[S_Y], ds[S_PHI] = s[S_VX], s[S_VY], s[S_OM]
    ds[S_VX] = fx / P[P_M]
    ds[S_VY] = fy / P[P_M] - P[P_G]
    ds[S_OM] = -mom / P[P_J]


@kernel
def _rk4(s, c, fp, P, w, h, out, k1, k2, k3, k4, tmp, q):
    _rhs(s, c, fp, P, w, k1, q)
    for i in range(N_S):
        tmp[i] = s[i] + 0.5 * h * k1[i]
    _rhs(tmp, c, fp, P, w, k2, q)
    for i in range(N_S):
        tmp[i] = s[i] + 0.5 * h * k2[i]
    _rhs(tmp, c, fp, P, w, k3, q)
    for i in range(N_S):
        tmp[i] = s[i] + h * k3[i]
    _rhs(tmp, c, fp, P, w, k4, q)
    for i in range(N_S):
        out[i] = s[i] + h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])


@kernel
def _event_value_at(s, c, fp, P, n, hx, hy):
    """Event function of leg ``n`` at the hip position ``hx, hy`` of the state: swing -> hip height above the TD
    height; stance -> extension."""
    if c[n] == 0:
        l0 = P[P_L0L] if n == 0 else P[P_L0R]
        return hy - l0 * math.sin(P[P_A0])
    if n == 1 and P[P_AMP] != 0.0:
        return s[S_LU] - P[P_L0U] + P[P_FTO] / P[P_KU]
    l0 = P[P_L0L] if n == 0 else P[P_L0R]
    dx = hx - fp[n]
    return math.sqrt(dx * dx + hy * hy) - l0


@kernel
def _switch(s, c, fp, P, n):
    hx, hy, _, _ = _hip_vpp(s, P)
    l0 = P[P_L0L] if n == 0 else P[P_L0R]
    if c[n] == 0:
        c[n] = 1
        dx2 = l0 * l0 - hy * hy
        fp[n] = hx + (math.sqrt(dx2) if dx2 > 0.0 else 0.0)
        if n == 1:
            s[S_LU] = P[P_L0U]
            s[S_LUD] = 0.0
        return EV_TD_L if n == 0 else EV_TD_R
    c[n] = 0
    if n == 1:
        s[S_LU] = P[P_L0U]
        s[S_LUD] = 0.0
    return EV_TO_L if n == 0 else EV_TO_R


@kernel
def _substep(s, c, fp, P, w, h, wk):
    """Advance one sub-step ``h`` with event location; returns the event bits. ``wk``: (9, N_Q) work."""
    if c[C_FALL] != 0:
        return EV_FALL
    ev = 0
    rem = h
    s1 = wk[0]
    for _it in range(6):
        _rk4(s, c, fp, P, w, rem, s1, wk[1], wk[2], wk[3], wk[4], wk[5], wk[6])
        best = 2.0
        leg = -1
        hx0, hy0, _, _ = _hip_vpp(s, P)
        hx1, hy1, _, _ = _hip_vpp(s1, P)
        for n in range(2):
            g0 = _event_value_at(s, c, fp, P, n, hx0, hy0)
            g1 = _event_value_at(s1, c, fp, P, n, hx1, hy1)
            hit = False
            if c[n] == 0:
                # touch-down only ahead of the other foot while that one is in stance
                hit = g0 > 0.0 and g1 <= 0.0 and (c[1 - n] == 0 or hx1 > fp[1 - n])
            else:
                hit = g0 < 0.0 and g1 >= 0.0
            if hit:
                th = g0 / (g0 - g1)
                if th < best:
                    best = th
                    leg = n
        if leg < 0:
            for i in range(N_S):
                s[i] = s1[i]
            break
        hh = best * rem
        if hh > 0.0:
            _rk4(s, c, fp, P, w, hh, s1, wk[1], wk[2], wk[3], wk[4], wk[5], wk[6])
            for i in range(N_S):
                s[i] = s1[i]
        ev |= _switch(s, c, fp, P, leg)
        rem -= hh
        if rem <= 1e-12 * h:
            break
    hx, hy, _, _ = _hip_vpp(s, P)
    if hy < 0.3 * P[P_L0L] or abs(s[S_PHI]) > 1.2 or not np.isfinite(s[S_Y]):
        c[C_FALL] = 1
        ev |= EV_FALL
    return ev


@kernel
def _command(s, c, fp, P, out):
    """Interface-point command (x, y, alpha_R, x', y', alpha_R') of the right leg."""
    sp, cp = math.sin(s[S_PHI]), math.cos(s[S_PHI])
    hx, hy, _, _ = _hip_vpp(s, P)
    hvx = s[S_VX] - P[P_RH] * cp * s[S_OM]
    hvy = s[S_VY] + P[P_RH] * sp * s[S_OM]
    if c[1] == 0:
        a0 = P[P_A0]
        out[0] = hx + P[P_L0U] * math.cos(a0)
        out[1] = hy - P[P_L0U] * math.sin(a0)
        out[2] = a0
        out[3], out[4], out[5] = hvx, hvy, 0.0
        return
    dx, dy = hx - fp[1], hy
    l2 = dx * dx + dy * dy
    l = math.sqrt(l2)
    ex, ey = dx / l, dy / l
    ld = ex * hvx + ey * hvy
    edx, edy = (hvx - ld * ex) / l, (hvy - ld * ey) / l
    lu, lud = s[S_LU], s[S_LUD]
    out[0] = hx - lu * ex
    out[1] = hy - lu * ey
    out[2] = math.atan2(dy, -dx)
    out[3] = hvx - lud * ex - lu * edx
    out[4] = hvy - lud * ey - lu * edy
    out[5] = (-dx * hvy + dy * hvx) / l2


@kernel
def _sync_kernel(s, c, fp, P, w, h, n_sub, wk, cmd):
    ev = 0
    for _ in range(n_sub):
        ev |= _substep(s, c, fp, P, w, h, wk)
    _command(s, c, fp, P, cmd)
    return ev


@kernel
def _simulate_kernel(s, c, fp, P, w, h, n_max, td_max, rec, dec, sec, n_sec_max, wk, q):
    """Run up to ``n_max`` sub-steps or ``td_max`` touch-downs; record every ``dec``-th sub-step.

    Record columns (see RECORD_COLUMNS).  ``sec`` receives the state at each left mid-stance
    (hip passing over the left foot point) in left single or double support: columns
    t, y, vy, vx, phi, om.  Returns (n_rec, n_sec, n_td, fallen).
    """
    n_rec = 0
    n_sec = 0
    n_td = 0
    t = 0.0
    ds = wk[8]
    for k in range(n_max + 1):
        if k % dec == 0 and n_rec < rec.shape[0]:
            _rhs(s, c, fp, P, w, ds, q)
            r = rec[n_rec]
            r[0] = t
            for i in range(N_S):
                r[1 + i] = s[i]
            r[9], r[10] = c[0], c[1]
            r[11], r[12] = fp[0], fp[1]
            for n in range(2):
                _leg(s, c, fp, P, w, n, q)
                o = 13 + 8 * n
                r[o], r[o + 1], r[o + 2], r[o + 3] = q[Q_GX], q[Q_GY], q[Q_TAU], q[Q_COP]
                r[o + 4], r[o + 5], r[o + 6], r[o + 7] = q[Q_FAX], q[Q_L], q[Q_ALPHA], q[Q_FU]
            r[29], r[30], r[31] = ds[S_VX], ds[S_VY], ds[S_OM]
            n_rec += 1
        if k == n_max or c[C_FALL] != 0 or n_td >= td_max:
            break
        hx0, _, _, _ = _hip_vpp(s, P)
        rel0 = hx0 - fp[0]
        left0 = c[0]
        prev = wk[7]
        for i in range(N_S):
            prev[i] = s[i]
        ev = _substep(s, c, fp, P, w, h, wk)
        t += h
        if ev & (EV_TD_L | EV_TD_R):
            n_td += 1
        hx1, _, _, _ = _hip_vpp(s, P)
        rel1 = hx1 - fp[0]
        if left0 != 0 and c[0] != 0 and rel0 < 0.0 and rel1 >= 0.0 and n_sec < n_sec_max:
            th = rel0 / (rel0 - rel1)
            sec[n_sec, 0] = t - h + th * h
            sec[n_sec, 1] = prev[S_Y] + th * (s[S_Y] - prev[S_Y])
            sec[n_sec, 2] = prev[S_VY] + th * (s[S_VY] - prev[S_VY])
            sec[n_sec, 3] = prev[S_VX] + th * (s[S_VX] - prev[S_VX])
            sec[n_sec, 4] = prev[S_PHI] + th * (s[S_PHI] - prev[S_PHI])
            sec[n_sec, 5] = prev[S_OM] + th * (s[S_OM] - prev[S_OM])
            n_sec += 1
    return n_rec, n_sec, n_td, c[C_FALL]


RECORD_COLUMNS = ("t", "x", "y", "phi", "vx", "vy", "phid", "lu", "lud", "contact_l", "contact_r",
                  "fp_l", "fp_r",
                  "grf_x_l", "grf_y_l", "tau_l", "cop_l", "f_axial_l", "leg_len_l", "alpha_l", "f_u_l",
                  "grf_x_r", "grf_y_r", "tau_r", "cop_r", "f_axial_r", "leg_len_r", "alpha_r", "f_u_r",
                  "ax", "ay", "phidd")
