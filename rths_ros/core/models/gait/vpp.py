"""Virtual Pivot Point (VPP) gait model and its amputee modification (seed 000, ch. 15-16).

Planar walking model (Maus et al.): one rigid trunk with all the mass (CoM ``(x, y)``, trunk angle
``phi`` from the vertical, ``phi > 0`` = forward lean = clockwise), two massless spring legs and a
hip torque that redirects each ground reaction force (GRF) through the Virtual Pivot Point above
the CoM.  The amputee model replaces the right leg by a stump spring ``k_u`` with a parallel damper
``d_u`` and a small interface-point mass ``m_IFP`` that slides along the leg axis; the prosthetic
foot below the interface point is the experimental part (or a simulated foot spring ``k_f``).

Geometry and sign conventions (derived; the thesis states only eqs. 15.1-15.8 and 16.1-16.10):

* hip ``h = (x - r_h sin phi, y - r_h cos phi)``, VPP ``v = (x + r_VPP sin phi, y + r_VPP cos phi)``;
* leg angle ``alpha`` measured from the ground on the rear side: the unit vector from the foot
  point to the hip is ``e = (-cos alpha, sin alpha)`` (``alpha < 90 deg``: foot ahead of the hip);
  ``e_perp = (e_y, -e_x)`` is ``e`` turned clockwise by 90 deg;
* torques on the trunk are counter-clockwise positive, hence the ``-J phi''`` of eqs. 15.7-15.9.

Stance leg n (eq. 15.1 and the corrected eqs. 15.2-15.4): spring force ``F_s = k (l0 - l)`` along
``e``; ``gamma`` = signed angle (clockwise) from ``e`` to the line from the centre of pressure (CoP)
to the VPP; ``F_tau = F_s tan gamma`` along ``e_perp``.  The GRF is the VECTOR
``F_s e + F_tau e_perp = F_s / cos(gamma) * e_(CoP->VPP)`` -- it points into the VPP.  Eqs. 15.3-15.4 as
printed project the magnitude of 15.2 onto the leg axis instead, which contradicts the VPP idea and
makes eqs. 15.7 and 15.8 disagree; they are not used.  The hip torque on the trunk is the moment of
the GRF about the hip, ``tau = (p_CoP - h) x GRF``; without CoP shift this is ``F_tau l`` (eq. 15.1).

Equations of motion (15.5, 15.6 and the free-body trunk equation 15.8)::

    m x''  = sum GRF_x
    m y''  = sum GRF_y - m g
    -J phi'' = sum_n [ r_h (cos phi GRF_x,n - sin phi GRF_y,n) + tau_n ]                 (15.8)
             = r_VPP (sin phi sum GRF_y - cos phi sum GRF_x)                              (15.7)

(15.7 holds because every GRF passes through the VPP; :func:`trunk_acceleration_both` evaluates both.)

Amputee right leg (ch. 16, written with vectors because the printed projections in 16.5-16.9 carry
inconsistent signs): stump length ``l_u`` from the hip to the interface point (IFP),
``IFP = h - l_u e``; the measured interface wrench is the force of the foot on the IFP,
``F_par`` along the hip->foot direction ``-e`` (negative under load, thesis convention of 16.1),
``F_perp`` along ``e_perp``, and the moment ``M`` (counter-clockwise, about +z of the model frame)::

    F_u = d_u l_u' + k_u (l_u - l0_u)                      stump force (negative in compression)
    m_IFP l_u'' = F_par - F_u                                                         (16.1)
    P = -F_par tan(gamma_R)                                VPP perpendicular force (16.4 minus F_perp)
    force of the right leg on the trunk  = -F_u e + P e_perp
    hip torque tau_h,R = (p_CoP - h) x (-F_par e + P e_perp)    = -F_par tan(gamma_R) l_R  (16.2) w/o CoP shift

The measured ``F_perp`` cancels in 16.4-16.9 (the hip torque of 16.3 compensates it), so the trunk
dynamics use only ``F_par``; ``F_perp`` enters only the VPP controller's share of the hip torque,
``tau_VPP,R = tau_h,R + F_perp l_R`` (16.3), which :func:`leg_quantities` returns as ``tau_vpp`` (the gait
analysis records and plots it beside ``tau_h,R``).
The moment ``M`` is used only for the CoP estimate (:func:`cop_from_wrench`).

Contact logic (BSLIP/VPP convention; thesis: TD height and TO condition only): a swing leg is held at
the angle of attack ``alpha_0``; it touches down when the hip height falls through ``l0 sin alpha_0``
(and the hip has passed the other leg's foot point, or the other leg is in swing); the foot point is
then fixed so that the leg has its rest length.  A basic leg takes off when ``l > l0``; the amputee
leg when the stump extends beyond ``l0_u`` (thesis §A.2) -- within ``to_force_n / k_u``, because a
critically damped stump approaches ``l0_u`` only asymptotically once the foot is unloaded.  Events are located inside a sub-step by a
secant on the event function and the sub-step is split there, so the time grid stays fixed.

CoP shift (16.10, both legs, optional): ``x_CoP = x_FP + l_h (alpha - pi/2) / (pi/2 - alpha_0)`` for
``alpha <= pi/2`` and ``x_FP + l_ff (alpha - pi/2) / (alpha_TO - pi/2)`` above, clamped to the foot
``[x_FP - l_h, x_FP + l_ff]``; ``alpha`` is the leg-axis angle (the interface DoF), which removes the
circularity of the thesis's CoP-hip definition.  The spring still acts along the leg axis.

Integration: classic RK4 at the sub-step ``dt_sub = 0.2 ms`` (the thesis used explicit Euler at
0.2 ms; RK4 keeps the stiff IFP mode accurate at the same step), ``n_sub = 5`` sub-steps per 1 ms
synchronisation step with the interface wrench held (zero-order hold).

Public entry points: :class:`VppParams`, :func:`param_vector`, :class:`VppState`,
:func:`initial_state`, :func:`sync_step`, :func:`amputee_sync_step`, :func:`interface_command`,
:func:`simulate`, :func:`leg_quantities`, :func:`trunk_acceleration_both`, :func:`cop_from_wrench`,
:func:`series_stump`, :func:`uniform_leg_split`, :func:`table_a6_params`.  The cost of one synchronisation step
is measured by ``rths bench core gait_vpp``.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from rths_ros.params import ParameterError, param

# --- thesis values (Table A.7) kept for reference; the defaults below are the re-optimised ICs ---
THESIS_IC_A7 = {"y0_m": 1.0709, "xd0_m_per_s": 0.97633, "phi0_rad": 0.0, "phid0_rad_per_s": -0.0071}
THESIS_IC_A6 = {"y0_m": 1.086, "xd0_m_per_s": 1.136, "phi0_rad": 0.0, "phid0_rad_per_s": -0.145}


@dataclass(frozen=True)
class VppParams:
    """VPP / amputee-VPP parameters; defaults = Table A.7 of seed 000 (the RTHS test set).

    The initial conditions ``y0_m``, ``xd0_m_per_s``, ``phid0_rad_per_s`` are the CMA-ES optimum of
    this implementation on the basic model (see docs/vpp.md); ``amp_*`` are the 3-stride optimum on the
    modified model with a simulated foot spring (:func:`uniform_leg_split`), no CoP shift (27 steps
    before a fall; with the CoP shift no initial condition completes a stride, see docs/vpp.md).  A gait
    scenario stores the ``amp_*`` optimum of its own modified model (docs/gait.md).
    """

    m_vpp_kg: float = param(30.0, "kg", 1e-3, 1e4, "trunk (total) mass m_VPP")
    j_vpp_kg_m2: float = param(3.0, "kg m^2", 1e-4, 1e4, "trunk moment of inertia J_VPP about the CoM")
    g_m_per_s2: float = param(9.81, "m/s^2", 0.0, 20.0, "gravitational acceleration g")
    r_h_m: float = param(0.1, "m", 0.0, 2.0, "distance CoM to hip r_h")
    r_vpp_m: float = param(0.25, "m", -2.0, 2.0, "distance CoM to VPP r_VPP (above the CoM)")
    l0_l_m: float = param(1.0, "m", 0.1, 3.0, "rest length of the left (intact) leg l_0,L")
    l0_r_m: float = param(1.0, "m", 0.1, 3.0, "rest length of the right leg l_0,R (= l_0,u + h_0,f)")
    k_l_n_per_m: float = param(5.4e3, "N/m", 1.0, 1e7, "left leg stiffness k_L")
    k_r_n_per_m: float = param(5.4e3, "N/m", 1.0, 1e7, "right leg stiffness k_R of the basic model (= k_L)")
    alpha0_deg: float = param(75.0, "deg", 30.0, 89.9, "angle of attack alpha_0 (from the ground)")
    cop_shift: bool = param(False, "", doc="heel-to-toe CoP shift (eq. 16.10) on both legs")
    l_heel_m: float = param(0.06, "m", 0.0, 0.5, "heel to mid-foot point l_h")
    l_forefoot_m: float = param(0.19, "m", 0.0, 0.5, "mid-foot point to toe l_ff")
    alpha_to_deg: float = param(105.0, "deg", 90.1, 150.0, "leg angle at take-off alpha_TO for eq. 16.10")
    l0_u_m: float = param(0.84, "m", 0.05, 3.0, "stump rest length l_0,u (foot height h_0,f = l_0,R - l_0,u)")
    m_ifp_kg: float = param(0.005, "kg", 1e-6, 10.0, "interface-point mass m_IFP")
    k_u_n_per_m: float = param(1.1e3, "N/m", 1.0, 1e8, "stump stiffness k_u (Table A.7 value, see docs)")
    d_u_kg_per_s: float = param(4.69, "kg/s", 0.0, 1e5, "stump damper d_u (2 sqrt(m_IFP k_u))")
    k_f_n_per_m: float = param(4950.0, "N/m", 1.0, 1e8, "simulated foot spring k_f (seed's foot approximation)")
    to_force_n: float = param(1.0, "N", 0.0, 1e3, "amputee take-off: stump spring force k_u (l0_u - l_u) below this")
    y0_m: float = param(1.0697261021396056, "m", 0.3, 3.0, "initial CoM height y_0 (basic model, optimised)")
    xd0_m_per_s: float = param(0.9861694881703542, "m/s", 0.0, 10.0, "initial forward speed x'_0 (basic model, optimised)")
    phi0_rad: float = param(0.0, "rad", -1.0, 1.0, "initial trunk angle phi_0")
    phid0_rad_per_s: float = param(-0.0046641597314161865, "rad/s", -10.0, 10.0,
                                   "initial trunk rate phi'_0 (basic model, optimised)")
    amp_y0_m: float = param(1.0662367884475048, "m", 0.3, 3.0, "initial CoM height, modified model (optimised)")
    amp_xd0_m_per_s: float = param(1.0361291193467683, "m/s", 0.0, 10.0, "initial speed, modified model (optimised)")
    amp_phid0_rad_per_s: float = param(0.020514232621829102, "rad/s", -10.0, 10.0,
                                       "initial trunk rate, modified model (optimised)")
    dt_sub_s: float = param(2e-4, "s", 1e-6, 1e-2, "numerical sub-step (thesis: 0.2 ms)")
    n_sub: int = param(5, "", 1, 1000, "sub-steps per synchronisation step (1 ms / 0.2 ms)")

    @property
    def h0_f_m(self) -> float:
        """Rest height of the prosthetic foot ``l_0,R - l_0,u``."""
        return self.l0_r_m - self.l0_u_m

    def validate(self) -> None:
        if self.l0_u_m >= self.l0_r_m:
            raise ParameterError(f"l0_u_m: {self.l0_u_m!r} must be below l0_r_m={self.l0_r_m!r} "
                                 "(the foot height l0_r_m - l0_u_m must be positive)")


# ---------------------------------------------------------------------------------------------
# packed parameter vector for the numba kernels
P_M, P_J, P_G, P_RH, P_RV, P_L0L, P_L0R, P_KL, P_KR, P_A0, P_COP, P_LH, P_LFF, P_ATO, P_AMP, \
    P_L0U, P_MIFP, P_KU, P_DU, P_KF, P_FOOT, P_FTO = range(22)
N_P = 22
FOOT_EXTERNAL, FOOT_SPRING = 0, 1

# continuous state indices
S_X, S_Y, S_PHI, S_VX, S_VY, S_OM, S_LU, S_LUD = range(8)
N_S = 8
# discrete state: contact flags (left, right), fallen flag
C_L, C_R, C_FALL = 0, 1, 2
# event bits returned by a sub-step
EV_TD_L, EV_TD_R, EV_TO_L, EV_TO_R, EV_FALL = 1, 2, 4, 8, 16
# leg-quantity layout (per leg)
Q_FX, Q_FY, Q_TAU, Q_GX, Q_GY, Q_COP, Q_L, Q_ALPHA, Q_FAX, Q_TANG, Q_FU, Q_LUDD = range(12)
N_Q = 12


def param_vector(p: VppParams, amputee: bool = False, foot: str = "external") -> np.ndarray:
    """Pack ``p`` into the float vector the kernels use.

    ``amputee`` selects the modified model for the right leg; ``foot`` = ``"external"`` (measured
    wrench held per sync step) or ``"spring"`` (simulated linear foot spring ``k_f`` evaluated inside
    the right-hand side, i.e. a monolithic co-simulation as for fig. 16.3).
    """
    if foot not in ("external", "spring"):
        raise ParameterError(f"foot: {foot!r} is not allowed; expected 'external' or 'spring'")
    v = np.zeros(N_P)
    v[P_M], v[P_J], v[P_G] = p.m_vpp_kg, p.j_vpp_kg_m2, p.g_m_per_s2
    v[P_RH], v[P_RV] = p.r_h_m, p.r_vpp_m
    v[P_L0L], v[P_L0R], v[P_KL], v[P_KR] = p.l0_l_m, p.l0_r_m, p.k_l_n_per_m, p.k_r_n_per_m
    v[P_A0] = math.radians(p.alpha0_deg)
    v[P_COP] = 1.0 if p.cop_shift else 0.0
    v[P_LH], v[P_LFF], v[P_ATO] = p.l_heel_m, p.l_forefoot_m, math.radians(p.alpha_to_deg)
    v[P_AMP] = 1.0 if amputee else 0.0
    v[P_L0U], v[P_MIFP], v[P_KU], v[P_DU], v[P_KF] = p.l0_u_m, p.m_ifp_kg, p.k_u_n_per_m, p.d_u_kg_per_s, \
        p.k_f_n_per_m
    v[P_FOOT] = FOOT_SPRING if foot == "spring" else FOOT_EXTERNAL
    v[P_FTO] = p.to_force_n
    return v


def series_stump(k_r: float, k_f: float, m_ifp: float) -> tuple[float, float]:
    """Stump stiffness from ``1/k_u = 1/k_R - 1/k_f`` and the critical damper ``2 sqrt(m_IFP k_u)``."""
    if k_f <= k_r:
        raise ParameterError(f"k_f_n_per_m: {k_f!r} must exceed k_R={k_r!r} for 1/k_u = 1/k_R - 1/k_f to be positive")
    k_u = 1.0 / (1.0 / k_r - 1.0 / k_f)
    return k_u, 2.0 * math.sqrt(m_ifp * k_u)


def uniform_leg_split(p: VppParams) -> VppParams:
    """Simulated-foot split of the right leg as a uniform rod: ``k_f = k_R l0_R / h0_f``,
    ``k_u = k_R l0_R / l0_u`` (so ``k_u`` and ``k_f`` in series give ``k_R``), critical ``d_u``."""
    k_f = p.k_r_n_per_m * p.l0_r_m / p.h0_f_m
    k_u, d_u = series_stump(p.k_r_n_per_m, k_f, p.m_ifp_kg)
    return dataclasses.replace(p, k_f_n_per_m=k_f, k_u_n_per_m=k_u, d_u_kg_per_s=d_u)


def table_a6_params() -> VppParams:
    """The co-simulation set of Table A.6 (fig. 16.3): 80 kg, k = 13 kN/m, alpha_0 = 69 deg, k_f = 94176 N/m."""
    return VppParams(m_vpp_kg=80.0, j_vpp_kg_m2=5.0, k_l_n_per_m=13e3, k_r_n_per_m=13e3, alpha0_deg=69.0,
                     r_vpp_m=0.25, r_h_m=0.1, l0_u_m=0.5, m_ifp_kg=0.005, k_u_n_per_m=15082.0,
                     k_f_n_per_m=94176.0, d_u_kg_per_s=43.4, y0_m=THESIS_IC_A6["y0_m"],
                     xd0_m_per_s=THESIS_IC_A6["xd0_m_per_s"], phid0_rad_per_s=THESIS_IC_A6["phid0_rad_per_s"],
                     amp_y0_m=THESIS_IC_A6["y0_m"], amp_xd0_m_per_s=THESIS_IC_A6["xd0_m_per_s"],
                     amp_phid0_rad_per_s=THESIS_IC_A6["phid0_rad_per_s"])


# ---------------------------------------------------------------------------------------------
# numba kernels

@njit(cache=True)
def _hip_vpp(s, P):
    sp, cp = math.sin(s[S_PHI]), math.cos(s[S_PHI])
    return (s[S_X] - P[P_RH] * sp, s[S_Y] - P[P_RH] * cp, s[S_X] + P[P_RV] * sp, s[S_Y] + P[P_RV] * cp)


@njit(cache=True)
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


@njit(cache=True)
def _leg(s, c, fp, P, w, n, q):
    """Fill ``q`` (N_Q) with the quantities of leg ``n`` (0 = left, 1 = right); zeros in swing."""
    for i in range(N_Q):
        q[i] = 0.0
    if c[n] == 0:
        return
    hx, hy, vx, vy = _hip_vpp(s, P)
    dx, dy = hx - fp[n], hy
    l = math.sqrt(dx * dx + dy * dy)
    ex, ey = dx / l, dy / l
    px, py = ey, -ex
    alpha = math.atan2(dy, -dx)
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


@njit(cache=True)
def _rhs(s, c, fp, P, w, ds, q):
    sp, cp = math.sin(s[S_PHI]), math.cos(s[S_PHI])
    fx = 0.0
    fy = 0.0
    mom = 0.0
    ds[S_LU] = 0.0
    ds[S_LUD] = 0.0
    for n in range(2):
        _leg(s, c, fp, P, w, n, q)
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


@njit(cache=True)
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


@njit(cache=True)
def _event_value(s, c, fp, P, n):
    """Event function of leg ``n``: swing -> hip height above the TD height; stance -> extension."""
    hx, hy, _, _ = _hip_vpp(s, P)
    if c[n] == 0:
        l0 = P[P_L0L] if n == 0 else P[P_L0R]
        return hy - l0 * math.sin(P[P_A0])
    if n == 1 and P[P_AMP] != 0.0:
        return s[S_LU] - P[P_L0U] + P[P_FTO] / P[P_KU]
    l0 = P[P_L0L] if n == 0 else P[P_L0R]
    dx = hx - fp[n]
    return math.sqrt(dx * dx + hy * hy) - l0


@njit(cache=True)
def _td_allowed(s, c, fp, P, n):
    other = 1 - n
    if c[other] == 0:
        return True
    hx, _, _, _ = _hip_vpp(s, P)
    return hx > fp[other]


@njit(cache=True)
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


@njit(cache=True)
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
        for n in range(2):
            g0 = _event_value(s, c, fp, P, n)
            g1 = _event_value(s1, c, fp, P, n)
            hit = False
            if c[n] == 0:
                hit = g0 > 0.0 and g1 <= 0.0 and _td_allowed(s1, c, fp, P, n)
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


@njit(cache=True)
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


@njit(cache=True)
def _sync_kernel(s, c, fp, P, w, h, n_sub, wk, cmd):
    ev = 0
    for _ in range(n_sub):
        ev |= _substep(s, c, fp, P, w, h, wk)
    _command(s, c, fp, P, cmd)
    return ev


@njit(cache=True)
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


# ---------------------------------------------------------------------------------------------
# Python API

@dataclass
class VppState:
    """Mutable model state: continuous ``s`` (x, y, phi, x', y', phi', l_u, l_u'), contact flags
    ``c`` (left, right, fallen), foot points ``fp`` (mid-foot x of each leg), time ``t``."""

    s: np.ndarray
    c: np.ndarray
    fp: np.ndarray
    t: float = 0.0

    def copy(self) -> "VppState":
        return VppState(self.s.copy(), self.c.copy(), self.fp.copy(), self.t)

    @property
    def fallen(self) -> bool:
        return bool(self.c[C_FALL])


def initial_state(p: VppParams, amputee: bool = False, ic: dict | None = None) -> VppState:
    """Start state of §16.2: left single support with the left leg vertical (foot flat), ``x = 0``,
    ``y' = 0`` (apex); ``ic`` may override ``y0_m``, ``xd0_m_per_s``, ``phi0_rad``, ``phid0_rad_per_s``.
    The amputee model uses the ``amp_*`` initial conditions unless ``ic`` is given."""
    if amputee:
        d = {"y0_m": p.amp_y0_m, "xd0_m_per_s": p.amp_xd0_m_per_s, "phi0_rad": p.phi0_rad,
             "phid0_rad_per_s": p.amp_phid0_rad_per_s}
    else:
        d = {"y0_m": p.y0_m, "xd0_m_per_s": p.xd0_m_per_s, "phi0_rad": p.phi0_rad,
             "phid0_rad_per_s": p.phid0_rad_per_s}
    d.update(ic or {})
    s = np.zeros(N_S)
    s[S_Y], s[S_VX], s[S_PHI], s[S_OM] = d["y0_m"], d["xd0_m_per_s"], d["phi0_rad"], d["phid0_rad_per_s"]
    s[S_LU] = p.l0_u_m
    hip_x = -p.r_h_m * math.sin(d["phi0_rad"])
    hip_y = d["y0_m"] - p.r_h_m * math.cos(d["phi0_rad"])
    if hip_y >= p.l0_l_m:
        raise ParameterError(f"y0_m: {d['y0_m']!r} puts the hip above the left rest length; no stance possible")
    return VppState(s, np.array([1, 0, 0], dtype=np.int64), np.array([hip_x, 0.0]), 0.0)


class _Work:
    def __init__(self):
        self.wk = np.zeros((9, N_Q))
        self.q = np.zeros(N_Q)
        self.cmd = np.zeros(6)
        self.w = np.zeros(3)


def sync_step(state: VppState, P: np.ndarray, wrench=(0.0, 0.0, 0.0), n_sub: int = 5, dt_sub: float = 2e-4,
              work: _Work | None = None) -> tuple[int, np.ndarray]:
    """Advance ``state`` IN PLACE by one synchronisation step (``n_sub`` RK4 sub-steps of ``dt_sub``)
    with the interface wrench ``(F_par, F_perp, M)`` held; returns (event bits, command array
    ``[x_IFP, y_IFP, alpha_R, x_IFP', y_IFP', alpha_R']``).  ``P`` from :func:`param_vector`."""
    wkr = work or _Work()
    wkr.w[0], wkr.w[1], wkr.w[2] = wrench[0], wrench[1], wrench[2]
    ev = _sync_kernel(state.s, state.c, state.fp, P, wkr.w, dt_sub, n_sub, wkr.wk, wkr.cmd)
    state.t += n_sub * dt_sub
    return int(ev), wkr.cmd.copy()


@dataclass(frozen=True)
class InterfaceCommand:
    """Pose and velocity the transfer system must impose on the prosthetic foot (model frame:
    x forward, y up from the ground, alpha_R from the ground on the rear side)."""

    x_ifp_m: float
    y_ifp_m: float
    alpha_r_rad: float
    xd_ifp_m_per_s: float
    yd_ifp_m_per_s: float
    alphad_r_rad_per_s: float
    right_stance: bool
    events: int


def amputee_sync_step(state: VppState, f_par_n: float, f_perp_n: float, m_nm: float, P: np.ndarray,
                      n_sub: int = 5, dt_sub: float = 2e-4) -> tuple[VppState, InterfaceCommand]:
    """Pure step for a ROS node: copy ``state``, advance one sync step with the measured foot wrench
    (force of the foot on the interface point: ``F_par`` along hip->foot, negative under load;
    ``F_perp`` along the clockwise leg normal; ``M`` counter-clockwise) held, and return the new state
    and the interface command.  ``P`` must be built with ``amputee=True, foot="external"``."""
    new = state.copy()
    ev, cmd = sync_step(new, P, (f_par_n, f_perp_n, m_nm), n_sub, dt_sub)
    return new, InterfaceCommand(float(cmd[0]), float(cmd[1]), float(cmd[2]), float(cmd[3]), float(cmd[4]),
                                 float(cmd[5]), bool(new.c[C_R]), ev)


def interface_command(state: VppState, P: np.ndarray) -> np.ndarray:
    """Current interface command ``[x_IFP, y_IFP, alpha_R, x', y', alpha_R']`` without stepping."""
    out = np.zeros(6)
    _command(state.s, state.c, state.fp, P, out)
    return out


def simulated_foot_wrench(cmd: np.ndarray, state: VppState, p: VppParams) -> tuple[float, float, float]:
    """Wrench of a linear foot spring ``k_f`` standing on the ground at the right foot point, for a
    foot posed by ``cmd`` (axial compression only; unilateral; zero in swing)."""
    if state.c[C_R] == 0:
        return 0.0, 0.0, 0.0
    dx, dy = cmd[0] - state.fp[1], cmd[1]
    h_f = math.hypot(dx, dy)
    comp = p.h0_f_m - h_f
    return (-p.k_f_n_per_m * comp if comp > 0.0 else 0.0), 0.0, 0.0


def leg_quantities(state: VppState, P: np.ndarray, wrench=(0.0, 0.0, 0.0)) -> dict:
    """Per-leg GRF vector, hip torque, CoP, axial force, length, angle, tan(gamma) (dict of 2-arrays).

    ``tau`` is the total hip torque on the trunk (``tau_h``, eq. 16.2 for the amputee leg); ``tau_vpp`` is the
    VPP controller's share ``tau_VPP,R = tau_h,R + F_perp l_R`` (eq. 16.3) for the amputee leg in stance with the
    external wrench ``(F_par, F_perp, M)``, and equals ``tau`` for the legs of the basic model."""
    q = np.zeros(N_Q)
    w = np.asarray(wrench, dtype=float)
    out = {k: np.zeros(2) for k in ("grf_x", "grf_y", "tau", "tau_vpp", "cop", "f_axial", "leg_len", "alpha",
                                    "tan_gamma", "f_trunk_x", "f_trunk_y")}
    for n in range(2):
        _leg(state.s, state.c, state.fp, P, w, n, q)
        out["grf_x"][n], out["grf_y"][n], out["tau"][n], out["cop"][n] = q[Q_GX], q[Q_GY], q[Q_TAU], q[Q_COP]
        out["f_axial"][n], out["leg_len"][n], out["alpha"][n], out["tan_gamma"][n] = q[Q_FAX], q[Q_L], \
            q[Q_ALPHA], q[Q_TANG]
        out["f_trunk_x"][n], out["f_trunk_y"][n] = q[Q_FX], q[Q_FY]
        out["tau_vpp"][n] = q[Q_TAU]
        if n == 1 and P[P_AMP] != 0.0 and P[P_FOOT] == FOOT_EXTERNAL and state.c[C_R]:
            out["tau_vpp"][n] = q[Q_TAU] + w[1] * q[Q_L]      # eq. 16.3
    return out


def trunk_acceleration_both(state: VppState, P: np.ndarray) -> tuple[float, float]:
    """phi'' from eq. 15.7 (whole-system angular momentum about the CoM) and from eq. 15.8 (trunk
    free body with hip torques), basic model.  They agree when every GRF passes through the VPP."""
    lq = leg_quantities(state, P)
    phi = state.s[S_PHI]
    sp, cp = math.sin(phi), math.cos(phi)
    gx, gy = lq["grf_x"].sum(), lq["grf_y"].sum()
    a157 = -P[P_RV] * (sp * gy - cp * gx) / P[P_J]
    a158 = -(P[P_RH] * (cp * gx - sp * gy) + lq["tau"].sum()) / P[P_J]
    return a157, a158


def cop_from_wrench(x_ifp: float, y_ifp: float, alpha_r: float, f_par: float, f_perp: float, m_z: float) -> float:
    """CoP on the ground (y = 0) from the wrench of the foot on the interface point (static, massless
    foot): ground force G = F_on_IFP, moment balance about the IFP gives
    ``x_CoP = x_IFP + (M - y_IFP G_x) / G_y``."""
    ex, ey = -math.cos(alpha_r), math.sin(alpha_r)
    gx = -f_par * ex + f_perp * ey
    gy = -f_par * ey - f_perp * ex
    if abs(gy) < 1e-9:
        return math.nan
    return x_ifp + (m_z - y_ifp * gx) / gy


def simulate(p: VppParams, n_steps: int = 50, t_max_s: float = 60.0, amputee: bool = False, foot: str = "spring",
             ic: dict | None = None, decimate: int = 1, P: np.ndarray | None = None) -> dict:
    """Simulate until ``n_steps`` touch-downs, a fall or ``t_max_s``; return a record dict.

    Keys: the RECORD_COLUMNS arrays (GRF vectors per leg, hip torques, contact flags, CoPs, ...),
    ``sections`` (rows t, y, y', x', phi, phi' at each left mid-stance), ``n_td``, ``fallen``,
    ``bw_n`` (body weight), ``l0_m``.  With ``amputee=True`` the right leg is the modified leg and
    ``foot="spring"`` closes it with the simulated foot spring ``k_f`` (monolithic co-simulation).
    """
    P = param_vector(p, amputee, foot) if P is None else P
    st = initial_state(p, amputee, ic)
    h = p.dt_sub_s
    n_max = int(round(t_max_s / h))
    rec = np.zeros((n_max // decimate + 2, len(RECORD_COLUMNS)))
    sec = np.zeros((4 * n_steps + 8, 6))
    wk = np.zeros((9, N_Q))
    q = np.zeros(N_Q)
    n_rec, n_sec, n_td, fallen = _simulate_kernel(st.s, st.c, st.fp, P, np.zeros(3), h, n_max, n_steps, rec,
                                                  decimate, sec, sec.shape[0], wk, q)
    out = {name: rec[:n_rec, i].copy() for i, name in enumerate(RECORD_COLUMNS)}
    out.update(sections=sec[:n_sec].copy(), n_td=int(n_td), fallen=bool(fallen), bw_n=p.m_vpp_kg * p.g_m_per_s2,
               l0_m=p.l0_l_m, r_h_m=p.r_h_m, final_state=st)
    return out
