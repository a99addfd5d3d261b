"""Harmonic adaptive feedforward on the six legs of the Stewart platform (Bartl 2019, ch. 5, applied to the
contact test of Insam 2022).  ROS-free; see docs/harmonic_aff.md, "Through the ROS graph".

Per leg i one :class:`rths_ros.core.learning.aff.harmonic.HarmonicAff` (n_int = 1) adapts the weights theta_i of a
position-level feedforward on the harmonics of the periodic test frequency f_d::

    u_i(t) = sum_h  cos(h Omega t) theta_i[2h-2] - sin(h Omega t) theta_i[2h-1],   Omega = 2 pi f_d,  h = 1..n

(eq. 5.13 with n_int = 1), added to the leg length command: b_cmd = b + u.

Timing (fast-path step k, local to the trial, t_k = k dT), the same split as the FIR filter
(rths_ros.core.learning.aff.fxlms):

* learner half :meth:`HarmonicLegAff.adapt` after measurement k: the gap g_k = b_k - b'_k (b_k = the
  un-augmented desired length of the command held over t_{k-1} -> t_k, b'_k the measured length) adapts theta
  with the basis at t_k: ``HarmonicAff.step(t_k, g_k, g_ext_k)``;
* platform half :meth:`HarmonicLegAff.feedforward`: the command of step k+1 (the length to be reached at
  t_{k+1}) gets u_{k+1} = W(t_{k+1}) theta_k, evaluated by :func:`harmonic_feedforward_kernel`, with the
  filter's own theta (in-process run) or the theta published by the learner (node graph).

Plant model P_est (Alg. 1 with a model-based estimate, identification off).  The injected displacement u
reaches the measured length through the closed-loop leg, so g = b - b' contains -S(u) with S the secondary-path
model of the FIR filter (one-sample-advanced ZOH discretisation of the closed-loop leg, T_fb or T_VFF;
``aff.secondary_path``).  H_gu(h Omega) = -S_i(e^{j h Omega dT}) per leg is passed as ``h_est`` and t_id_s = 0:
the random-theta identification phase of Alg. 1 would disturb the test and needs f_ext = 0, which the contact
test cannot provide (the suspension drives the numerical part from t = 0).

External gap for QR-RLS.  Alg. 3 needs g_ext, the gap without feedforward.  It is estimated as
g_ext,k = g_k + S(u)_k with the same secondary-path model driven by the applied outputs (the "modified" error of
the FIR filter).  LMS uses the measured gap only.

Power-flow supervisor (Alg. 2, ``aff.harmonic.supervisor``, LMS only).  One
:class:`rths_ros.core.learning.aff.harmonic_supervisor.PowerFlowSupervisor` serves the six leg filters: with the power into the
transfer system at the interface DoF, P_in = lam_VIR . g-dot, lam_VIR = -F_int[k] and g = z_ach[k] - z_cmd[k]
(passed to :meth:`HarmonicLegAff.adapt`), it schedules mu_LMS and gamma_LMS, which every leg filter uses for its
adaptation step of sample k (the filters' own supervisors stay off).

Choices where the thesis is silent (docs/harmonic_aff.md):

* the fundamental is f_d of the contact test (``base_frequency_hz = 0``) and the basis holds its first
  ``n_harmonics`` multiples;
* the basis of the output is evaluated at t_{k+1}, the instant the command is meant for, and the gap of
  measurement k is paired with W(t_k); the secondary-path model relates exactly these samples;
* theta starts at 0 in every trial (trials are independent tests).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from rths_ros.core.learning.aff.params import HarmonicFeedforwardParams
from rths_ros.params import ParameterError

__all__ = ["HarmonicLegAff", "harmonic_feedforward_kernel", "harmonic_feedforward", "harmonic_omegas"]

def harmonic_omegas(params: HarmonicFeedforwardParams, f_d_hz: float) -> np.ndarray:
    """Angular frequencies [rad/s] of the basis."""
    return 2.0 * np.pi * np.asarray(params.frequencies_hz(f_d_hz), dtype=float)


@numba.njit(cache=True, nogil=True)
def harmonic_feedforward_kernel(theta, omegas, t, u_out):
    """u_out[i] = W(t) theta[i] for every leg i: ``theta`` (n_legs, 2 n), ``omegas`` (n,) [rad/s]."""
    n_legs = theta.shape[0]
    nf = omegas.shape[0]
    for i in range(n_legs):
        u_out[i] = 0.0
    for h in range(nf):
        c = math.cos(omegas[h] * t)
        s = math.sin(omegas[h] * t)
        for i in range(n_legs):
            u_out[i] += c * theta[i, 2 * h] - s * theta[i, 2 * h + 1]


def harmonic_feedforward(theta, omegas, t: float) -> np.ndarray:
    """Reference form of :func:`harmonic_feedforward_kernel` (numpy, new array)."""
    theta = np.asarray(theta, dtype=float)
    om = np.asarray(omegas, dtype=float)
    return theta[:, 0::2] @ np.cos(om * t) - theta[:, 1::2] @ np.sin(om * t)


class HarmonicLegAff:
    """Harmonic AFF of the six legs, with the interface of :class:`rths_ros.core.learning.aff.fxlms.FxlmsAff`.

    ``aff_params``: the scenario's :class:`rths_ros.core.learning.aff.params.AffParams` (``enabled``, ``secondary_path``,
    ``harmonic``); ``f_d_hz``: the test frequency; the rest as for FxlmsAff.  ``coefficients`` (6, 2 n) holds
    theta per leg, ``[Re psi_1, Im psi_1, Re psi_2, ...]``.  Every call takes the local step index ``step``
    (t = step dT from the start of the trial).
    """

    kind = "harmonic"

    def __init__(self, aff_params, leg_plant_params=None, cascade_params=None, vff: bool = False,
                 dt_s: float = 1e-3, home_lengths=None, f_d_hz: float = 0.25):
        from rths_ros.core.learning.aff.harmonic import HarmonicAff
        from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
        from rths_ros.core.learning.aff.harmonic_supervisor import PowerFlowSupervisor
        from rths_ros.core.learning.aff.secondary_path import SecondaryPath
        from rths_ros.core.plant.legs import N_LEGS
        self.params = aff_params
        hp: HarmonicFeedforwardParams = aff_params.harmonic
        self.hparams = hp
        self.dt_s = float(dt_s)
        self.n_legs = N_LEGS
        freqs = hp.frequencies_hz(f_d_hz)
        if max(freqs) >= 0.5 / self.dt_s:
            raise ParameterError(f"aff.harmonic.n_harmonics: {hp.n_harmonics} harmonics of {freqs[0]:g} Hz reach "
                                 f"{max(freqs):g} Hz, at or above the Nyquist frequency {0.5 / self.dt_s:g} Hz")
        self.omegas = 2.0 * np.pi * np.asarray(freqs, dtype=float)
        self.path = SecondaryPath(aff_params.secondary_path, leg_plant_params, cascade_params, vff, self.dt_s)
        law = "rls" if hp.algorithm == "qr_rls" else "lms"
        sp = hp.supervisor
        self.core_params = HarmonicAffParams(
            frequencies_hz=freqs, n_int=1, law=law, identification="rls", simultaneous=False,
            mu_lms=hp.mu_lms, gamma_lms=hp.gamma_lms, mu_rls=hp.mu_rls, gamma_rls=hp.gamma_rls, t_id_s=0.0,
            supervisor=False, p_lim_w=sp.p_lim_w, da_mu_down=sp.da_mu_down, da_gamma_up=sp.da_gamma_up,
            da_gamma_down=sp.da_gamma_down, b_mu=sp.b_mu, b_gamma=sp.b_gamma, gamma_max=sp.gamma_max,
            p_in_filter_s=sp.p_in_filter_s)
        # Alg. 2 on the interface DoF, one for the six filters (each filter's own supervisor stays off and gets
        # the supervised gains before every adaptation step)
        self.supervisor = PowerFlowSupervisor(self.core_params, 1) if sp.enabled and law == "lms" else None
        self._lam1 = np.zeros(1)
        self._gif1 = np.zeros(1)
        # H_gu(h Omega) = -S_i(e^{j h Omega dT}): the gap answers the injected displacement through the leg
        self.h_est = -self.path.frf(np.asarray(freqs))                   # (6, n) complex
        self.filters = [HarmonicAff(self.core_params) for _ in range(N_LEGS)]
        m = 2 * len(freqs)
        self._theta = np.zeros((N_LEGS, m))
        self._gap = np.zeros(N_LEGS)
        self._gext = np.zeros(N_LEGS)
        self._u = np.zeros(N_LEGS)
        self._u_k = np.zeros(N_LEGS)
        self._b_prev = np.zeros(N_LEGS)
        self._g1 = np.zeros(1)
        self._ge1 = np.zeros(1)
        self._rls = law == "rls"
        self._home = None if home_lengths is None else np.array(home_lengths, dtype=float).reshape(N_LEGS)
        harmonic_feedforward_kernel(self._theta, self.omegas, 0.0, self._u)      # compile or load from the cache
        self.reset()

    # ------------------------------------------------------------------------------------------------
    @property
    def coefficients(self) -> np.ndarray:
        """theta per leg, (6, 2 n) (view; updated in place by :meth:`adapt`)."""
        return self._theta

    @property
    def gap(self) -> np.ndarray:
        return self._gap

    @property
    def gains(self) -> tuple[float, ...]:
        """(mu_LMS, nu_LMS) of the first leg's LMS adaptation (the supervisor sets every leg's alike), () for
        QR-RLS."""
        return () if self._rls else (self.filters[0].mu_lms, self.filters[0].nu_lms)

    @property
    def gap_ext(self) -> np.ndarray:
        """Estimated gap without feedforward g + S(u) of the last adaptation (QR-RLS only)."""
        return self._gext

    @property
    def output(self) -> np.ndarray:
        return self._u

    @property
    def uses_output(self) -> bool:
        """True for QR-RLS: :meth:`adapt` needs the output u_k that was added to b_k (for g_ext)."""
        return self._rls

    @property
    def home_lengths(self):
        return self._home

    def reset(self, home_lengths=None) -> None:
        """Start of a trial: theta = 0, the model-based P_est loaded, the secondary-path model at rest."""
        if home_lengths is not None:
            self._home = np.array(home_lengths, dtype=float).reshape(self.n_legs)
        for i, f in enumerate(self.filters):
            f.reset(h_est=self.h_est[i])
        self._theta[:] = 0.0
        self._gap[:] = 0.0
        self._gext[:] = 0.0
        self._u[:] = 0.0
        self._u_k[:] = 0.0
        self.path.reset()
        if self.supervisor is not None:
            self.supervisor.reset()
            for f in self.filters:
                f.set_lms_gains(self.hparams.mu_lms, 0.0)
        if self._home is not None:
            self._b_prev[:] = self._home

    @property
    def supervised(self) -> bool:
        """True when the power-flow supervisor runs: :meth:`adapt` needs ``lam_vir`` and ``gap_interface``."""
        return self.supervisor is not None

    def adapt(self, b_desired_k, b_measured_k, u_k=None, step: int = 0, lam_vir: float = 0.0,
              gap_interface: float = 0.0) -> np.ndarray:
        """Learner half after measurement ``step`` = k: g_k = b_k - b'_k adapts theta with W(t_k).
        ``u_k``: the output added to b_k (default: the last :meth:`feedforward` output).  With the supervisor:
        ``lam_vir`` = -F_int[k] (force on the numerical part) and ``gap_interface`` = z_ach[k] - z_cmd[k] give
        P_in, and the supervised mu_LMS, gamma_LMS apply to this adaptation step.  Returns g_k (view)."""
        if not self.params.enabled:
            return self._gap
        np.subtract(b_desired_k, b_measured_k, out=self._gap)
        if self._rls:
            self._u_k[:] = self._u if u_k is None else u_k
            np.add(self._gap, self.path.step(self._u_k), out=self._gext)
        t = step * self.dt_s
        if self.supervisor is not None:
            self._lam1[0] = lam_vir
            self._gif1[0] = gap_interface
            mu, gam = self.supervisor.step(t, self._lam1, self._gif1)
            for f in self.filters:
                f.set_lms_gains(mu, gam)
        for i, f in enumerate(self.filters):
            self._g1[0] = self._gap[i]
            self._ge1[0] = self._gext[i]
            f.step(t, self._g1, self._ge1)
            self._theta[i] = f.theta
        return self._gap

    def feedforward(self, b_desired_next=None, theta=None, step: int = 1) -> np.ndarray:
        """Platform half for the command of ``step`` = k+1: u_{k+1} = W(t_{k+1}) theta with this object's
        theta or the given ``theta`` (6, 2 n) published by the learner.  ``b_desired_next`` is not needed
        (accepted for the interface of FxlmsAff).  Returns u (6,) (internal buffer)."""
        if not self.params.enabled:
            return self._u
        harmonic_feedforward_kernel(self._theta if theta is None else theta, self.omegas, step * self.dt_s,
                                    self._u)
        return self._u

    def step(self, b_desired, b_measured, step: int, lam_vir: float = 0.0, gap_interface: float = 0.0) -> np.ndarray:
        """Both halves in one call (measurement of ``step``, command of ``step`` + 1), as FxlmsAff.step."""
        self.adapt(self._b_prev, b_measured, step=step, lam_vir=lam_vir, gap_interface=gap_interface)
        self._b_prev[:] = b_desired
        return self.feedforward(b_desired, step=step + 1)
