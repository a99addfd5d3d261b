"""The interface-estimation experiment of Bartl 2019 §3.2: a planar transmission simulator driven by three shakers,
a cantilever beam as the experimental component, the interface force estimated three ways.

Geometry and masses are Table B.2's: platform a = 0.05 m, b = 0.01 m, c = 0.1 m, d = 0.12 m, m = 0.2 kg,
Theta = 6.7333e-4 kg m^2; steel beam E = 210 GPa, l = 0.5 m, w = 0.05 m, h = 0.008 m.  The excitation is
``F_A1 = 50 N sin(2 pi 50 t)``, the sensor noise ``c r``, ``r ~ U[-1, 1]``, with c = 0.5 N (forces), 8e-5 m
(displacements) and 0.1 m/s^2 (accelerations).  The thesis does not give the values below; they are this
package's choices (docs/interface_estimation.md):

- beam density 7850 kg/m^3, Rayleigh damping of 1 % at the first two bending modes, 10 planar frame elements
  (axial + Euler-Bernoulli bending, consistent mass), clamped to the platform at B, pointing along +x;
- each shaker holds its stinger's direction with its suspension, 2e4 N/m and 20 N s/m; the platform's rotation
  has the stingers' k_alpha = 50 N m/rad, d_alpha = 0.05 N m s/rad;
- displacement sensors along the three actuators (S1, S2 vertical, S3 horizontal), two biaxial accelerometers at
  S4 (horizontal and vertical) and a vertical one at S5; the Kalman filter's process noise on the force states ``q_force``.

The plant is integrated exactly for piecewise-constant actuator forces (zero-order hold at ``dt``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.fe.matrices import beam_element
from rths_ros.core.sysid.interface_estimation import (
    AugmentedKalman,
    TransmissionSimulator,
    discretise_zoh,
    inverse_dynamics_force,
    projected_force,
)

__all__ = ["TSExperiment", "platform_ts", "frame_beam", "simulate_experiment"]


@dataclass(frozen=True)
class TSExperiment:
    a_m: float = 0.05
    b_m: float = 0.01
    c_m: float = 0.1
    d_m: float = 0.12
    m_kg: float = 0.2
    theta_kg_m2: float = 6.7333e-4
    k_alpha: float = 50.0
    d_alpha: float = 0.05
    k_shaker: float = 2e4
    d_shaker: float = 20.0
    e_pa: float = 210e9
    length_m: float = 0.5
    width_m: float = 0.05
    height_m: float = 0.008
    density: float = 7850.0
    beam_elements: int = 10
    beam_zeta: float = 0.01
    amplitude_n: float = 50.0
    frequency_hz: float = 50.0
    c_nf: float = 0.5
    c_nd: float = 8e-5
    c_na: float = 0.1
    dt_s: float = 1e-4
    duration_s: float = 1.0
    q_force: float = 1e4
    seed: int = 1


def platform_ts(p: TSExperiment) -> TransmissionSimulator:
    """The platform of eq. 3.5 with the shakers' suspension, its interface B and its sensors."""
    b, d = p.b_m, p.d_m
    B_A = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [-d / 2, d / 2, 0.0]])
    M = np.diag([p.m_kg, p.m_kg, p.theta_kg_m2])
    K = np.diag([0.0, 0.0, p.k_alpha]) + p.k_shaker * B_A @ B_A.T
    D = np.diag([0.0, 0.0, p.d_alpha]) + p.d_shaker * B_A @ B_A.T
    G = np.array([[1.0, 0.0, -b], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    C_d = np.array([[0.0, 1.0, -d / 2], [0.0, 1.0, d / 2], [1.0, 0.0, 0.0]])
    a = p.a_m
    C_a = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, -a], [0.0, 1.0, a]])
    return TransmissionSimulator(M=M, D=D, K=K, G=G, B_A=B_A, C_d=C_d, C_a=C_a)


def frame_beam(p: TSExperiment) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(M, D, K)`` of the planar beam along +x, node DOFs [u, v, theta], node 0 first (the clamped end at B)."""
    n_el = p.beam_elements
    le = p.length_m / n_el
    area = p.width_m * p.height_m
    inertia = p.width_m * p.height_m ** 3 / 12.0
    ea, ei, rho_a = p.e_pa * area, p.e_pa * inertia, p.density * area
    ke = np.zeros((6, 6))
    me = np.zeros((6, 6))
    ax = np.array([0, 3])
    ke[np.ix_(ax, ax)] = ea / le * np.array([[1.0, -1.0], [-1.0, 1.0]])
    me[np.ix_(ax, ax)] = rho_a * le / 6.0 * np.array([[2.0, 1.0], [1.0, 2.0]])
    bd = np.array([1, 2, 4, 5])
    ke[np.ix_(bd, bd)], me[np.ix_(bd, bd)] = beam_element(ei, rho_a, le)
    ndof = 3 * (n_el + 1)
    K = np.zeros((ndof, ndof))
    M = np.zeros((ndof, ndof))
    for e in range(n_el):
        idx = np.arange(3 * e, 3 * e + 6)
        K[np.ix_(idx, idx)] += ke
        M[np.ix_(idx, idx)] += me
    # Rayleigh damping with zeta at the first two bending modes of the clamped beam
    w = np.sqrt(np.sort(np.abs(np.linalg.eigvals(np.linalg.solve(M[3:, 3:], K[3:, 3:])))))
    w1, w2 = w[0], w[1]
    alpha, beta = np.linalg.solve([[1 / (2 * w1), w1 / 2], [1 / (2 * w2), w2 / 2]], [p.beam_zeta, p.beam_zeta])
    return M, alpha * M + beta * K, K


def _coupled(p: TSExperiment, ts: TransmissionSimulator):
    """The platform with the beam clamped at B: coordinates [q_TS; beam DOFs except node 0]."""
    Mb, Db, Kb = frame_beam(p)
    G = np.asarray(ts.G)
    nts, nb = ts.n, Mb.shape[0] - 3
    T = np.zeros((3 + nb, nts + nb))         # beam DOFs from the coupled coordinates
    T[:3, :nts] = G
    T[3:, nts:] = np.eye(nb)
    pad = np.zeros((nts + nb, nts + nb))

    def couple(ts_mat, beam_mat):
        out = pad.copy()
        out[:nts, :nts] = ts_mat
        return out + T.T @ beam_mat @ T
    return couple(ts.M, Mb), couple(ts.D, Db), couple(ts.K, Kb), (Mb, Db, Kb, T)


def simulate_experiment(p: TSExperiment | None = None) -> dict:
    """Truth, noisy sensors and the three estimates of the interface force ``lambda = [F_Bx, F_By, M_B]`` (the
    force the beam puts on the platform).  Returns arrays per sample and the RMS errors of each estimate against
    the truth after the first 0.1 s."""
    p = p or TSExperiment()
    ts = platform_ts(p)
    Mc, Dc, Kc, (Mb, Db, Kb, T) = _coupled(p, ts)
    nc = Mc.shape[0]
    mi = np.linalg.inv(Mc)
    A = np.block([[np.zeros((nc, nc)), np.eye(nc)], [-mi @ Kc, -mi @ Dc]])
    Bin = np.zeros((nc, 3))
    Bin[:ts.n] = ts.B_A
    B = np.vstack([np.zeros((nc, 3)), mi @ Bin])
    Ad, Bd = discretise_zoh(A, B, p.dt_s)
    n = int(round(p.duration_s / p.dt_s))
    t = np.arange(n + 1) * p.dt_s
    f_a = np.zeros((n + 1, 3))
    f_a[:, 0] = p.amplitude_n * np.sin(2 * np.pi * p.frequency_hz * t)
    x = np.zeros(2 * nc)
    X = np.empty((n + 1, 2 * nc))
    X[0] = x
    for k in range(n):
        x = Ad @ x + Bd @ f_a[k]
        X[k + 1] = x
    q, qd = X[:, :nc], X[:, nc:]
    qdd = (A[nc:] @ X.T).T + (B[nc:] @ f_a.T).T
    ub, ubd, ubdd = q @ T.T, qd @ T.T, qdd @ T.T
    lam = -(ubdd @ Mb[:3].T + ubd @ Db[:3].T + ub @ Kb[:3].T)           # beam's force on the platform at B
    nts = ts.n
    rng = np.random.default_rng(p.seed)
    y_d = q[:, :nts] @ ts.C_d.T + p.c_nd * rng.uniform(-1, 1, (n + 1, ts.C_d.shape[0]))
    y_a = qdd[:, :nts] @ ts.C_a.T + p.c_na * rng.uniform(-1, 1, (n + 1, ts.C_a.shape[0]))
    f_meas = f_a + p.c_nf * rng.uniform(-1, 1, f_a.shape)
    kf = AugmentedKalman(ts, p.dt_s, q_force=p.q_force, c_d=p.c_nd, c_a=p.c_na)
    lam_kf = np.zeros_like(lam)
    q_kf = np.zeros((n + 1, nts))
    for k in range(1, n + 1):
        lam_kf[k] = kf.step(f_meas[k - 1], f_meas[k], y_d[k], y_a[k])
        q_kf[k] = kf.x[:nts]
    q_s = y_d @ np.linalg.pinv(ts.C_d).T                      # projected displacements
    qdd_s = y_a @ np.linalg.pinv(ts.C_a).T
    qd_s = np.cumsum(qdd_s, axis=0) * p.dt_s                 # integrated from zero, as in the thesis
    q_int = np.cumsum(qd_s, axis=0) * p.dt_s
    lam_id = inverse_dynamics_force(ts, q_s, qd_s, qdd_s, f_meas)
    lam_pr = projected_force(ts, f_meas)
    G = np.asarray(ts.G)
    y_true = q[:, :nts] @ G.T
    y_est = {"kalman": q_kf @ G.T, "projected": q_s @ G.T, "integrated": q_int @ G.T}
    k0 = int(round(0.1 / p.dt_s))

    def rms(e):
        return np.sqrt(np.mean(e[k0:] ** 2, axis=0))
    return {"t": t, "truth": lam, "estimates": {"kalman": lam_kf, "inverse_dynamics": lam_id, "projected": lam_pr},
            "rms_truth": rms(lam), "rms_error": {"kalman": rms(lam_kf - lam), "inverse_dynamics": rms(lam_id - lam),
                                                 "projected": rms(lam_pr - lam)},
            "y_true": y_true, "y_estimates": y_est, "rms_y_truth": rms(y_true),
            "rms_y_error": {k: rms(v - y_true) for k, v in y_est.items()},
            "final_y_error": {k: np.abs(v[-1] - y_true[-1]) for k, v in y_est.items()}, "settings": p}
