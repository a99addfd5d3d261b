"""Virtual Pivot Point (VPP) gait model and its amputee modification (Insam 2022, ch. 15-16).

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

Public entry points: :class:`VppState`, :func:`initial_state`, :func:`sync_step`, :func:`amputee_sync_step`,
:func:`interface_command`, :func:`simulate`, :func:`leg_quantities`, :func:`trunk_acceleration_both`,
:func:`cop_from_wrench`.  The parameters (:class:`VppParams`, :func:`param_vector`, :func:`series_stump`,
:func:`uniform_leg_split`, :func:`table_a6_params`) and the array layouts are in
:mod:`rths_ros.core.models.gait.vpp_params`, the numba kernels in :mod:`rths_ros.core.models.gait.vpp_kernels`.  The cost of
one synchronisation step is measured by ``rths bench core gait_vpp``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.gait.vpp_kernels import RECORD_COLUMNS, _command, _leg, _simulate_kernel, _sync_kernel
from rths_ros.core.models.gait.vpp_params import (
    C_FALL,
    C_R,
    FOOT_EXTERNAL,
    N_Q,
    N_S,
    P_AMP,
    P_FOOT,
    P_J,
    P_RH,
    P_RV,
    Q_ALPHA,
    Q_COP,
    Q_FAX,
    Q_FX,
    Q_FY,
    Q_GX,
    Q_GY,
    Q_L,
    Q_TANG,
    Q_TAU,
    S_LU,
    S_OM,
    S_PHI,
    S_VX,
    S_Y,
    VppParams,
    param_vector,
)
from rths_ros.params import ParameterError


@dataclass
class VppState:
    """Mutable model state: continuous ``s`` (x, y, phi, x', y', phi', l_u, l_u'), contact flags
    ``c`` (left, right, fallen), foot points ``fp`` (mid-foot x of each leg), time ``t``."""

    s: np.ndarray
    c: np.ndarray
    fp: np.ndarray
    t: float = 0.0

    def copy(self) -> VppState:
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
