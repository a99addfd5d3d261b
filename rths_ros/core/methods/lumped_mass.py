"""Base lumped-mass hybrid test of Bartl 2019 (Fig. 1.2, Table B.1) as a sampled-data simulation.

Components (Table B.1):

* VIR  m_V = 0.1 kg,  d_V = 0.05 N s/m, k_V = 1000 N/m, excited by f_ext; simulated by implicit Newmark
  (beta = 1/4, gamma = 1/2) fed with the measured interface force of the same sample (eq. 2.48);
* EXP  m_E = 0.01 kg, d_E = 0.05 N s/m, k_E = 1000 N/m;
* ACT  m_A = 0.1 kg,  d_A = 1 N s/m,    k_A = 100 N/m, driven by the actuator force u and rigidly attached to
  EXP.  The test rig (ACT + EXP, one coordinate x = y_EXP) is
  ``(m_A + m_E) x'' + (d_A + d_E) x' + (k_A + k_E) x = u`` and the measured interface force on EXP is
  ``lambda_EXP = m_E x'' + d_E x' + k_E x``; lambda_VIR = -lambda_EXP.

Reference (eq. 4.7): ``H_REF = 1 / ((m_V + m_E) s^2 + (d_V + d_E) s + k_V + k_E)``, the coupled VIR + EXP
without actuator: |H_REF| = 5.8069e-4, 6.3867e-4, 3.7987e-3, 1.1291e-4 m/N at 8, 10, 20, 50 Hz.  With the
adaptive feedforward filter the gap g = y_EXP - y_VIR vanishes at the excitation lines, so y_VIR = y_EXP =
H_REF f_ext there (§5.2.4).

Sampled-data loop (one sample dt; the thesis does not state the step of its ch. 5 studies):

1. the AFF returns u[k] from the measurements of t_k; u[k] is held over [t_k, t_k+1);
2. the rig advances exactly (zero-order hold, matrix exponential); x, x' and lambda_EXP (with the force
   u[k] still acting) are sampled at t_k+1;
3. the VIR advances one Newmark step with f_ext(t_k+1) + lambda_VIR[k+1]; a second VIR model driven by
   f_ext alone gives g_ext = -y_VIR,f-only (f_ext^EXP = 0);
4. g[k+1] = y_EXP - y_VIR goes to the AFF.

f_ext = A sum_i cos(Omega_i t) over the AFF frequencies (§5.4.4 form), switched on when the AFF leaves the
identification phase (Alg. 1: f_ext = 0 during the identification).

Because the VIR is integrated with Newmark (the trapezoidal rule), its discrete frequency response is the
continuous one at the prewarped frequency (2/dt) tan(w dt/2); :func:`h_ref_discrete` is the reference the
sampled loop converges to, :func:`h_ref` the continuous one of the thesis.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from rths_ros.core.learning.aff.harmonic import HarmonicAff, aff_step_kernel
from rths_ros.core.learning.aff.harmonic_params import FS_MU, FS_NU, FS_P_IN, HarmonicAffParams
from rths_ros.core.numerics.newmark import newmark_sdof_step
from rths_ros.params import param

__all__ = ["LumpedMassParams", "h_vir", "h_exp", "h_ref", "h_ref_discrete", "h_gu", "simulate",
           "fit_harmonic", "gap_envelope", "convergence_time", "H_REF_SEED"]

#: |H_REF| of the Table B.1 system at 8, 10, 20, 50 Hz [m/N]
H_REF_SEED = {8.0: 5.8069e-4, 10.0: 6.3867e-4, 20.0: 3.7987e-3, 50.0: 1.1291e-4}


@dataclass(frozen=True)
class LumpedMassParams:
    """Table B.1 of Bartl 2019 and the simulation step."""

    m_vir_kg: float = param(0.1, "kg", 1e-9, 1e6, "virtual mass m_VIR")
    d_vir_n_s_per_m: float = param(0.05, "N s/m", 0.0, 1e6, "virtual damping d_VIR")
    k_vir_n_per_m: float = param(1000.0, "N/m", 0.0, 1e9, "virtual stiffness k_VIR")
    m_exp_kg: float = param(0.01, "kg", 0.0, 1e6, "experimental mass m_EXP")
    d_exp_n_s_per_m: float = param(0.05, "N s/m", 0.0, 1e6, "experimental damping d_EXP")
    k_exp_n_per_m: float = param(1000.0, "N/m", 0.0, 1e9, "experimental stiffness k_EXP")
    m_act_kg: float = param(0.1, "kg", 0.0, 1e6, "actuator mass m_ACT")
    d_act_n_s_per_m: float = param(1.0, "N s/m", 0.0, 1e6, "actuator damping d_ACT")
    k_act_n_per_m: float = param(100.0, "N/m", 0.0, 1e9, "actuator stiffness k_ACT")
    dt_s: float = param(1e-3, "s", 1e-6, 0.1, "sample time of the loop (not stated in the thesis for ch. 5)")


def _s(f_hz):
    return 2j * np.pi * np.asarray(f_hz, dtype=float)


def h_vir(f_hz, p: LumpedMassParams = LumpedMassParams()):
    s = _s(f_hz)
    return 1.0 / (p.m_vir_kg * s * s + p.d_vir_n_s_per_m * s + p.k_vir_n_per_m)


def h_exp(f_hz, p: LumpedMassParams = LumpedMassParams()):
    s = _s(f_hz)
    return 1.0 / (p.m_exp_kg * s * s + p.d_exp_n_s_per_m * s + p.k_exp_n_per_m)


def h_ref(f_hz, p: LumpedMassParams = LumpedMassParams()):
    """Coupled reference VIR + EXP (eq. 4.7) [m/N]."""
    s = _s(f_hz)
    return 1.0 / ((p.m_vir_kg + p.m_exp_kg) * s * s + (p.d_vir_n_s_per_m + p.d_exp_n_s_per_m) * s
                  + p.k_vir_n_per_m + p.k_exp_n_per_m)


def h_ref_discrete(f_hz, p: LumpedMassParams = LumpedMassParams()):
    """Reference of the sampled loop at g = 0: Newmark VIR (continuous VIR at the prewarped frequency)
    coupled to the exact EXP: 1 / (1/H_VIR(w') + 1/H_EXP(w)), w' = (2/dt) tan(w dt/2)."""
    f = np.asarray(f_hz, dtype=float)
    fw = np.tan(np.pi * f * p.dt_s) / (np.pi * p.dt_s)
    return 1.0 / (1.0 / h_vir(fw, p) + 1.0 / h_exp(f, p))


def h_gu(f_hz, p: LumpedMassParams = LumpedMassParams()):
    """Continuous H_gu = H_TR,yu + H_VIR H_TR,lambda-u (eq. 5.1 form) [m/N]."""
    s = _s(f_hz)
    den = ((p.m_act_kg + p.m_exp_kg) * s * s + (p.d_act_n_s_per_m + p.d_exp_n_s_per_m) * s
           + p.k_act_n_per_m + p.k_exp_n_per_m)
    h_yu = 1.0 / den
    h_lu = h_yu / h_exp(f_hz, p)
    return h_yu + h_vir(f_hz, p) * h_lu


def _rig_matrices(p: LumpedMassParams):
    from scipy.linalg import expm
    m = p.m_act_kg + p.m_exp_kg
    c = p.d_act_n_s_per_m + p.d_exp_n_s_per_m
    k = p.k_act_n_per_m + p.k_exp_n_per_m
    a = np.array([[0.0, 1.0], [-k / m, -c / m]])
    b = np.array([0.0, 1.0 / m])
    big = np.zeros((3, 3))
    big[:2, :2] = a * p.dt_s
    big[:2, 2] = b * p.dt_s
    e = expm(big)
    return e[:2, :2].copy(), e[:2, 2].copy(), m, c, k


@numba.njit(cache=True, nogil=True)
def _sim_loop(n_steps, dt, every, amp, omegas, ad, bd, mt, ct, kt, mv, dv, kv, me, de, ke, limit, out, th_out,
              ci, cf, ist, fs, rng, theta, theta_app, theta0, r_ad, p_tilde, r_id, p, g_prev, cs, x_ad, x_id,
              y_ad, y_id, row_ad, col_ad, row_id, col_id, u):
    xr = np.zeros(2)
    qv = np.zeros(3)
    qe = np.zeros(3)
    scratch = np.zeros(3)
    g = np.zeros(1)
    ge = np.zeros(1)
    lam = np.zeros(1)
    y_exp = 0.0
    f = 0.0
    phase = 0
    j = 0
    for k in range(n_steps):
        t = k * dt
        phase = aff_step_kernel(t, g, ge, lam, omegas, ci, cf, ist, fs, rng, theta, theta_app, theta0, r_ad,
                                p_tilde, r_id, p, g_prev, cs, x_ad, x_id, y_ad, y_id, row_ad, col_ad, row_id,
                                col_id, u)
        if k % every == 0:
            out[j, 0] = t
            out[j, 1] = f
            out[j, 2] = u[0]
            out[j, 3] = g[0]
            out[j, 4] = ge[0]
            out[j, 5] = qv[0]
            out[j, 6] = y_exp
            out[j, 7] = lam[0]
            out[j, 8] = fs[FS_P_IN]
            out[j, 9] = fs[FS_MU]
            out[j, 10] = fs[FS_NU]
            out[j, 11] = phase
            th_out[j, :] = theta
            j += 1
        uk = u[0]
        x0 = ad[0, 0] * xr[0] + ad[0, 1] * xr[1] + bd[0] * uk
        x1 = ad[1, 0] * xr[0] + ad[1, 1] * xr[1] + bd[1] * uk
        xr[0] = x0
        xr[1] = x1
        acc = (uk - ct * x1 - kt * x0) / mt
        lam_exp = me * acc + de * x1 + ke * x0
        y_exp = x0
        tn = t + dt
        f = 0.0
        if phase == 1:
            for i in range(omegas.shape[0]):
                f += amp * math.cos(omegas[i] * tn)
        newmark_sdof_step(qv, mv, dv, kv, dt, 0.25, 0.5, f - lam_exp, scratch)   # average acceleration
        newmark_sdof_step(qe, mv, dv, kv, dt, 0.25, 0.5, f, scratch)
        lam[0] = -lam_exp
        g[0] = y_exp - qv[0]
        ge[0] = -qe[0]
        if not (abs(g[0]) < limit):
            return j, k + 1
    return j, n_steps


def simulate(aff_params: HarmonicAffParams, t_end_s: float, amp_n: float = 1.0,
             plant: LumpedMassParams | None = None, record_every: int = 1, divergence_limit_m: float = 1.0,
             theta0=None, h_est=None) -> dict:
    """Closed loop of the Table B.1 system with the harmonic AFF (module doc), in process.

    Returns a dict of recorded arrays (every ``record_every``-th sample, values at the start of each
    sample): ``t, f_ext, u, g, g_ext, y_vir, y_exp, lam_vir, p_in, mu_lms, nu_lms, phase, theta`` and
    ``diverged`` (|g| exceeded ``divergence_limit_m``; the run stops there), ``aff`` (the filter object,
    e.g. for ``h_est``), ``t_adapt_s`` (start of the adaptation phase) and ``plant``.
    """
    if aff_params.n_int != 1:
        raise ValueError("the lumped-mass system has one interface DOF (n_int = 1)")
    plant = plant or LumpedMassParams()
    dt = plant.dt_s
    aff = HarmonicAff(aff_params)
    aff.reset(theta0=theta0, h_est=h_est)
    n_steps = int(round(t_end_s / dt))
    every = max(1, int(record_every))
    n_rec = (n_steps + every - 1) // every
    out = np.full((n_rec, 12), np.nan)
    th = np.full((n_rec, aff_params.n_theta), np.nan)
    ad, bd, mt, ct, kt = _rig_matrices(plant)
    arrs = aff._arrays()
    j, k_done = _sim_loop(n_steps, dt, every, float(amp_n), aff.omegas, ad, bd, mt, ct, kt, plant.m_vir_kg,
                          plant.d_vir_n_s_per_m, plant.k_vir_n_per_m, plant.m_exp_kg, plant.d_exp_n_s_per_m,
                          plant.k_exp_n_per_m, float(divergence_limit_m), out, th, *arrs[1:])
    names = ("t", "f_ext", "u", "g", "g_ext", "y_vir", "y_exp", "lam_vir", "p_in", "mu_lms", "nu_lms", "phase")
    res = {nm: out[:, i] for i, nm in enumerate(names)}
    res["t"] = np.arange(n_rec) * every * dt
    res["theta"] = th
    res["diverged"] = k_done < n_steps
    res["aff"] = aff
    res["t_adapt_s"] = aff_params.t_id_s
    res["plant"] = plant
    return res


# ----------------------------------------------------------------------------------------------
# evaluation helpers


def fit_harmonic(t, x, f_hz: float) -> complex:
    """Least-squares complex amplitude X of x(t) ~ Re(X e^{j w t}) + c (use whole periods)."""
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    w = 2.0 * np.pi * f_hz
    a = np.column_stack([np.cos(w * t), -np.sin(w * t), np.ones_like(t)])
    coef, *_ = np.linalg.lstsq(a, x, rcond=None)
    return complex(coef[0], coef[1])


def gap_envelope(t, g, period_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Peak envelope of |g|: maximum over consecutive windows of one period -> (window start times, peaks)."""
    t = np.asarray(t, dtype=float)
    g = np.abs(np.asarray(g, dtype=float))
    dt = t[1] - t[0]
    n = max(1, int(round(period_s / dt)))
    m = g.size // n
    return t[:m * n:n], g[:m * n].reshape(m, n).max(axis=1)


def convergence_time(t, g, period_s: float, threshold: float, t_from: float = 0.0) -> float:
    """First time (>= ``t_from``) after which the gap envelope stays below ``threshold``; inf if never
    (or if the run ended with the envelope above the threshold or not finite)."""
    te, env = gap_envelope(t, g, period_s)
    sel = te >= t_from
    te, env = te[sel], env[sel]
    if env.size == 0:
        return math.inf
    bad = ~(env < threshold)
    if bad[-1]:
        return math.inf
    idx = np.nonzero(bad)[0]
    i0 = 0 if idx.size == 0 else idx[-1] + 1
    return float(te[i0] - t_from)
