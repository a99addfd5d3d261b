"""Parameters of the harmonic-basis AFF (:mod:`rths_ros.core.learning.aff.harmonic`, Bartl 2019 §5.1-5.4) and the slot
layout of the integer / float configuration and state arrays its numba kernels share."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.params import ParameterError, param

__all__ = ["HarmonicAffParams"]

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
    """Harmonic AFF of Bartl 2019 §5.1-5.4.  Defaults: §5.4.4 / §6.1 / Tables B.3-B.5 where the thesis gives one."""

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
                                                     "comparison with P_lim; 0 = unfiltered (the thesis's form)")

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
