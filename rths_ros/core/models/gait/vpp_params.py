"""Parameters of the VPP gait model and its amputee modification (:mod:`rths_ros.core.models.gait.vpp`, Insam 2022
ch. 15-16): :class:`VppParams` (Table A.7), the Table A.6 set, the stump split of the right leg, and the array
layouts shared by the numba kernels (:mod:`rths_ros.core.models.gait.vpp_kernels`) and the state
(:class:`rths_ros.core.models.gait.vpp.VppState`): the packed parameter vector (``P_*``), the continuous state
(``S_*``), the contact flags (``C_*``), the event bits (``EV_*``) and the per-leg quantities (``Q_*``)."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from rths_ros.params import ParameterError, param

# --- thesis values (Table A.7) kept for reference; the defaults below are the re-optimised ICs ---
THESIS_IC_A7 = {"y0_m": 1.0709, "xd0_m_per_s": 0.97633, "phi0_rad": 0.0, "phid0_rad_per_s": -0.0071}
THESIS_IC_A6 = {"y0_m": 1.086, "xd0_m_per_s": 1.136, "phi0_rad": 0.0, "phid0_rad_per_s": -0.145}


@dataclass(frozen=True)
class VppParams:
    """VPP / amputee-VPP parameters; defaults = Table A.7 of Insam 2022 (the RTHS test set).

    The initial conditions ``y0_m``, ``xd0_m_per_s``, ``phid0_rad_per_s`` are the CMA-ES optimum of
    this implementation on the basic model (see docs/vpp.md); ``amp_*`` are the 3-stride optimum on the
    modified model with a simulated foot spring (:func:`uniform_leg_split`), no CoP shift (27 steps
    before a fall; with the CoP shift that model completes no stride, and a gait scenario's stiffer model walks
    one stride and falls within 5-7 steps, see docs/vpp.md and docs/gait.md).  A gait scenario stores the
    ``amp_*`` optimum of its own modified model (docs/gait.md).
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
    k_f_n_per_m: float = param(4950.0, "N/m", 1.0, 1e8, "simulated foot spring k_f (thesis's foot approximation)")
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
