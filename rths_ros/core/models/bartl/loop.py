"""In-process hybrid test of the cubic-spring rig (:mod:`rths_ros.core.models.bartl.cubic_spring`) with the
harmonic AFF of :mod:`rths_ros.core.learning.aff.harmonic` and the passivity controller of
:mod:`rths_ros.core.methods.passivity` (Bartl 2019 §6.2.1, §6.2.2, §5.6).

Strategies (argument ``strategy``):

* ``aff``      pure AFF (§5.2): the motor's position demand is ``x_d = PF(W theta)`` (PF = peak filter at the
  excitation frequency on the actuator input, §6.2.1); LMS adaptation, with or without the power-flow
  supervisor (Alg. 2, ``supervisor``);
* ``pbc``      pure feedback (displacement control, §4.4): ``x_d = y_VIR``, and the passivity controller adds the
  damping force ``F_d = alpha y_VIR-dot`` to the force fed back to the virtual part;
* ``pbc_aff``  the combination (§5.6, eq. 5.44): ``x_d = y_VIR + PF(W theta)`` with the passivity controller.

One sample (dt) of the loop, k -> k+1:

1. the AFF receives the gap g[k], g_ext[k] and lambda_VIR[k] and returns u[k] = W(t_k) theta (from k = 1 on: the
   demand of sample 0 is the rig at rest, and the AFF's first sample, which starts its identification, is k = 1);
2. the demand x_d is held over [t_k, t_k+1) and the rig advances (:meth:`CubicSpringRig.advance`), giving the
   measured position y_EXP[k+1] and force f_meas[k+1];
3. the passivity controller (if any) observes step k and returns F_d = alpha y_VIR-dot[k];
4. the virtual part takes one Newmark step with ``f_ext(t_k+1) - (f_meas[k+1] + F_d)`` (lambda_VIR = -f_meas, eq. 6.2
   sign convention), a second virtual model driven by f_ext alone gives g_ext = -y_VIR,f-only;
5. g[k+1] = y_EXP[k+1] - y_VIR[k+1].

The excitation ``f_ext = A cos(Omega t)`` (§6.2.2) is switched on at the end of the AFF's identification phase
(Alg. 1: f_ext = 0 while identifying); with ``pbc`` at ``t_on_s``.  The AFF's identification runs in the same loop
(for ``pbc_aff`` with the feedback closed, so P_gu is the one the AFF sees).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from rths_ros.core.learning.aff.harmonic import HarmonicAff
from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
from rths_ros.core.methods.passivity import PassivityController, PassivityParams
from rths_ros.core.models.bartl.cubic_spring import CubicSpringParams, CubicSpringRig, PeakFilter
from rths_ros.core.numerics.newmark import newmark_sdof_step

__all__ = ["STRATEGIES", "table63_aff", "default_pbc", "simulate_cubic"]

STRATEGIES = ("aff", "pbc", "pbc_aff")


def table63_aff(f_hz: float, supervisor: bool, **over) -> HarmonicAffParams:
    """The AFF of §6.2.1 (Table 6.3): one harmonic, LMS with mu_init = 0.1, supervisor constants of Table 6.3.
    The identification (RLS, 1 s, random theta held 0.1 s, +-1 mm) is this package's choice (the thesis gives
    none for §6.2)."""
    kw = dict(frequencies_hz=(float(f_hz),), n_int=1, law="lms", identification="rls", simultaneous=False,
              mu_lms=0.1, gamma_lms=0.0, supervisor=supervisor, p_lim_w=-0.3, da_mu_down=0.001, b_mu=2.0,
              da_gamma_down=0.001, da_gamma_up=0.01, gamma_max=1.0, b_gamma=2.0, t_id_s=1.0, t_rand_s=0.1,
              id_amplitude=1e-3, mu_id_rls=0.9995, gamma_id_rls=1e-6)
    kw.update(over)
    return HarmonicAffParams(**kw)


def default_pbc(dt_s: float, enabled: bool = True) -> PassivityParams:
    """Passivity controller of the cubic rig; G_PCB and the filter time constants are not printed (§6.2.2): a
    damping scale of 20 kg/s (a third of the virtual part's critical damping 2 sqrt(m k) = 63 kg/s, reached at a
    normalised power ratio of 1), alpha capped at 100 kg/s, low passes of 50 ms and 10 ms."""
    return PassivityParams(enabled=enabled, g_p_kg_per_s=20.0, t_error_s=0.05, t_tot_s=0.01, p_tot_min_w=0.01,
                           alpha_max_kg_per_s=100.0, filter="exponential", dt_s=dt_s)


def simulate_cubic(strategy: str, f_hz: float, amp_n: float, t_end_s: float,
                   aff: HarmonicAffParams | None = None, rig: CubicSpringParams | None = None,
                   pbc: PassivityParams | None = None, peak_filter: bool = True, peak_bw_hz: float = 2.0,
                   t_on_s: float | None = None) -> dict:
    """Run one hybrid test (module doc) and return the recorded signals (every sample, value at t_k):

    ``t, f_ext, x_d, y_exp, y_vir, g, g_ext, lam_vir, p_in, mu_lms, nu_lms, alpha, saturated`` and the scalars
    ``t_on_s`` (excitation on), ``strategy``, ``f_hz``, ``amp_n``.  ``p_in`` = lambda_VIR g-dot [W] (the power into
    the transfer system, eq. 5.25, computed here for every strategy)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy {strategy!r}; expected one of {STRATEGIES}")
    rp = rig or CubicSpringParams()
    dt = rp.dt_s
    use_aff = strategy in ("aff", "pbc_aff")
    use_pbc = strategy in ("pbc", "pbc_aff")
    if use_aff:
        ap = aff or table63_aff(f_hz, supervisor=False)
        filt = HarmonicAff(ap)
        t_on = ap.t_id_s if t_on_s is None else max(t_on_s, ap.t_id_s)
    else:
        filt = None
        t_on = 0.0 if t_on_s is None else t_on_s
    pc = PassivityController(pbc or default_pbc(dt, enabled=use_pbc)) if use_pbc else None
    pf = PeakFilter(f_hz, dt, peak_bw_hz / (2.0 * f_hz)) if (use_aff and peak_filter) else None
    plant = CubicSpringRig(rp)
    n = int(round(t_end_s / dt))
    names = ("t", "f_ext", "x_d", "y_exp", "y_vir", "g", "g_ext", "lam_vir", "p_in", "mu_lms", "nu_lms", "alpha",
             "saturated")
    rec = {k: np.zeros(n) for k in names}
    qv = np.zeros(3)
    qe = np.zeros(3)
    scratch = np.zeros(3)
    mv, dv, kv = rp.m_vir_kg, rp.d_vir_n_s_per_m, rp.k_vir_n_per_m
    w = 2.0 * math.pi * f_hz
    g = ge = lam = 0.0
    y_exp = y_exp_prev = 0.0
    f = 0.0
    g_prev = 0.0
    garr = np.zeros(1)
    gearr = np.zeros(1)
    lamarr = np.zeros(1)
    f_d = 0.0
    for k in range(n):
        t = k * dt
        u_ff = 0.0
        if filt is not None and k > 0:    # sample 0: the rig at rest, as every trial of the node graph starts
            garr[0], gearr[0], lamarr[0] = g, ge, lam
            u_ff = float(filt.step(t, garr, gearr, lamarr)[0])
            if pf is not None:
                u_ff = pf(u_ff)
        x_d = u_ff + (qv[0] if use_pbc else 0.0)
        rec["t"][k] = t
        rec["f_ext"][k] = f
        rec["x_d"][k] = x_d
        rec["y_exp"][k] = y_exp
        rec["y_vir"][k] = qv[0]
        rec["g"][k] = g
        rec["g_ext"][k] = ge
        rec["lam_vir"][k] = lam
        rec["p_in"][k] = lam * (g - g_prev) / dt if k > 0 else 0.0
        rec["mu_lms"][k] = filt.mu_lms if filt is not None else 0.0
        rec["nu_lms"][k] = filt.nu_lms if filt is not None else 1.0
        rec["alpha"][k] = pc.alpha if pc is not None else 0.0
        g_prev = g
        y_exp_prev = y_exp
        y_exp, f_meas = plant.advance(x_d)
        rec["saturated"][k] = plant.saturated
        if pc is not None:
            f_d = pc.step(f_meas, qv[1], (y_exp - y_exp_prev) / dt)
        tn = (k + 1) * dt
        f = amp_n * math.cos(w * tn) if tn >= t_on - 1e-12 else 0.0
        newmark_sdof_step(qv, mv, dv, kv, dt, 0.25, 0.5, f - (f_meas + f_d), scratch)
        newmark_sdof_step(qe, mv, dv, kv, dt, 0.25, 0.5, f, scratch)
        lam = -f_meas
        g = y_exp - qv[0]
        ge = -qe[0]
    rec.update(t_on_s=t_on, strategy=strategy, f_hz=f_hz, amp_n=amp_n, dt_s=dt,
               aff_params=dataclasses.asdict(filt.params) if filt is not None else None)
    return rec
