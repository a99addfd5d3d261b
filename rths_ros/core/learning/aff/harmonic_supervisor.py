"""Power-flow supervisor of the harmonic-basis AFF (Bartl 2019 Alg. 2, eqs. 5.25-5.28; module doc of
:mod:`rths_ros.core.learning.aff.harmonic`): the kernel shared with
:class:`rths_ros.core.learning.aff.harmonic.HarmonicAff` (``supervisor = True``) and :class:`PowerFlowSupervisor`, one
supervisor for several filters."""
from __future__ import annotations

import math

import numba
import numpy as np

from rths_ros.core.learning.aff.harmonic_params import (
    CF_B_G,
    CF_B_MU,
    CF_DA_G_DOWN,
    CF_DA_G_UP,
    CF_DA_MU_DOWN,
    CF_GAMMA_MAX,
    CF_MU_LMS,
    CF_P_LIM,
    CF_P_TAU,
    FS_A_G,
    FS_A_MU,
    FS_GAMMA,
    FS_K_SUP,
    FS_LEN,
    FS_MU,
    FS_P_IN,
    FS_P_RAW,
    FS_T_PREV,
    HarmonicAffParams,
)

__all__ = ["PowerFlowSupervisor"]


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


class PowerFlowSupervisor:
    """The power-flow supervisor of Alg. 2 on its own, for several filters that share one interface.

    Same law and kernel as the supervisor inside :class:`rths_ros.core.learning.aff.harmonic.HarmonicAff`
    (``supervisor = True``): per sample
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
