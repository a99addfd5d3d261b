"""FIR-based filtered-x LMS coupling under random excitation (Bartl 2019 §5.5, the experiment of §5.5.2).

System (Bartl 2019 §4.2.3, non-dimensional: m_VIR = k_VIR = 1, time in 1/omega_VIR): a virtual 1-DoF oscillator
(damping ratio zeta_VIR) excited by the external force f_ext; a massless experimental spring kappa_EXP; an
actuator mass-spring-damper (phi_ACT, kappa_ACT, zeta_ACT) driven by the force ``u`` and rigidly attached to the
experimental spring, whose displacement is the interface's ``y_EXP``::

    y_V'' + 2 zeta_VIR y_V' + y_V = f_ext - lambda,           lambda = kappa_EXP y_EXP
    phi_ACT y_A'' + d_A y_A' + (kappa_ACT + kappa_EXP) y_A = u,   d_A = 2 zeta_ACT sqrt(kappa_ACT phi_ACT)
    u = kappa_P (y_V - y_A) + u_FF                            (the P loop stays closed; the FIR adds u_FF)
    g = y_EXP - y_VIR                                          (the interface gap)

Reference: the virtual oscillator with the experimental spring attached rigidly, ``y'' + 2 zeta_VIR y' + (1 +
kappa_EXP) y = f_ext``; T_0 is its period.

Filter (eqs. 5.35-5.42): ``u_FF[k] = theta . [f_ext[k], ..., f_ext[k - N + 1]]``; the filtered reference is f_ext
through the secondary path H_g,u (u_FF -> g with the P loop closed), known beforehand as its pulse response
(here computed from the model, i.e. a perfect identification); the normalised, leaky update
``theta <- nu theta - mu / (delta + |x_filt|^2) x_filt g`` with ``nu = 1 - mu gamma``.

Choices where the thesis is silent (docs/harmonic_aff.md, "FxLMS under random excitation"): the sample time
T_0 / 100 (so that the thesis's filter lengths 10 / 100 / 1000 are 0.1 / 1 / 10 periods, eq. 5.43's bound N >=
T_0 / T_S sitting at 100), band-limited white noise up to 2 / T_0 as the random force, mu = 0.01 (0.02 diverges for N = 100 and 1000:
the secondary path is 25 periods long), gamma = 0, 600 periods, and an
exact discretisation of the plant for a force held over each step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["FxlmsCase", "plant", "secondary_path", "simulate"]


@dataclass(frozen=True)
class FxlmsCase:
    """The §5.5.2 system and the filter settings."""

    kappa_act: float = 0.1
    kappa_exp: float = 0.2
    kappa_p: float = 0.1
    phi_act: float = 0.1
    zeta_vir: float = 0.2
    zeta_act: float = 0.1
    n_theta: int = 100
    mu: float = 0.01
    gamma: float = 0.0
    samples_per_period: int = 100
    periods: float = 600.0
    noise_band_per_period: float = 2.0
    seed: int = 1

    def __post_init__(self) -> None:
        if self.n_theta < 1:
            raise ValueError(f"n_theta: {self.n_theta!r} must be >= 1")
        if not 0.0 < self.mu < 2.0:
            raise ValueError(f"mu: {self.mu!r} must be in (0, 2)")
        if self.samples_per_period < 10:
            raise ValueError(f"samples_per_period: {self.samples_per_period!r} must be >= 10")

    @property
    def omega0(self) -> float:
        return math.sqrt(1.0 + self.kappa_exp)

    @property
    def period(self) -> float:
        return 2.0 * math.pi / self.omega0

    @property
    def dt(self) -> float:
        return self.period / self.samples_per_period


def plant(c: FxlmsCase) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Ad, Bd, C)``: state ``[y_V, y_V', y_A, y_A']``, inputs ``[f_ext, u_FF]`` held over a step, outputs
    ``[y_VIR, y_EXP]``; the P loop is part of the plant."""
    from scipy.linalg import expm
    d_a = 2.0 * c.zeta_act * math.sqrt(c.kappa_act * c.phi_act)
    A = np.array([[0.0, 1.0, 0.0, 0.0],
                  [-1.0, -2.0 * c.zeta_vir, -c.kappa_exp, 0.0],
                  [0.0, 0.0, 0.0, 1.0],
                  [c.kappa_p / c.phi_act, 0.0, -(c.kappa_act + c.kappa_exp + c.kappa_p) / c.phi_act, -d_a / c.phi_act]])
    B = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 1.0 / c.phi_act]])
    n = 4
    blk = np.zeros((n + 2, n + 2))
    blk[:n, :n] = A
    blk[:n, n:] = B
    e = expm(blk * c.dt)
    C = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    return e[:n, :n], e[:n, n:], C


def secondary_path(c: FxlmsCase, tol: float = 1e-6, max_len: int = 200_000) -> np.ndarray:
    """Pulse response of u_FF -> g (one unit held over the first step), ``h[0]`` = the gap at the end of that
    step, truncated where its envelope has fallen below ``tol`` of its peak."""
    Ad, Bd, C = plant(c)
    x = Bd[:, 1].copy()
    out = []
    for _ in range(max_len):
        out.append(float(C[1] @ x - C[0] @ x))
        x = Ad @ x
        if len(out) > 4 * c.samples_per_period:
            peak = max(abs(v) for v in out)
            if max(abs(v) for v in out[-c.samples_per_period:]) < tol * peak:
                break
    return np.asarray(out)


def _reference(c: FxlmsCase, f: np.ndarray) -> np.ndarray:
    from scipy.linalg import expm
    w2 = 1.0 + c.kappa_exp
    A = np.array([[0.0, 1.0], [-w2, -2.0 * c.zeta_vir]])
    blk = np.zeros((3, 3))
    blk[:2, :2] = A
    blk[1, 2] = 1.0
    e = expm(blk * c.dt)
    ad, bd = e[:2, :2], e[:2, 2]
    x = np.zeros(2)
    y = np.empty(f.size)
    for k in range(f.size):
        y[k] = x[0]
        x = ad @ x + bd * f[k]
    return y


def simulate(c: FxlmsCase) -> dict:
    """The coupled run with the FxLMS filter from rest; returns ``t`` (in periods T_0), ``y_vir``, ``y_exp``,
    ``y_ref``, ``g``, ``f_ext``, ``y_rms_ref`` and ``theta`` (final)."""
    from scipy.signal import butter, lfilter
    n = int(round(c.periods * c.samples_per_period))
    rng = np.random.default_rng(c.seed)
    b, a = butter(4, min(0.99, 2.0 * c.noise_band_per_period / c.samples_per_period))
    f = lfilter(b, a, rng.standard_normal(n))
    f /= np.std(f)
    Ad, Bd, C = plant(c)
    h = secondary_path(c)
    f_filt = np.convolve(f, h)[:n]             # x_filt[k]: f_ext through H_g,u, aligned with g[k + 1]
    N = c.n_theta
    fpad = np.concatenate([np.zeros(N - 1), f])
    ffpad = np.concatenate([np.zeros(N - 1), f_filt])
    theta = np.zeros(N)
    x = np.zeros(4)
    y_v = np.empty(n)
    y_e = np.empty(n)
    nu = 1.0 - c.mu * c.gamma
    for k in range(n):
        y_v[k], y_e[k] = C @ x
        g = y_e[k] - y_v[k]
        if k >= 1:                              # g[k] answers the regressor of step k - 1
            xf = ffpad[k - 1:k - 1 + N][::-1]
            theta = nu * theta - (c.mu / (1e-12 + xf @ xf)) * g * xf
        u_ff = theta @ fpad[k:k + N][::-1]
        x = Ad @ x + Bd @ np.array([f[k], u_ff])
    y_ref = _reference(c, f)
    return {"t": np.arange(n) / c.samples_per_period, "y_vir": y_v, "y_exp": y_e, "y_ref": y_ref, "g": y_e - y_v,
            "f_ext": f, "y_rms_ref": float(np.sqrt(np.mean(y_ref ** 2))), "theta": theta, "h_len": int(h.size)}
