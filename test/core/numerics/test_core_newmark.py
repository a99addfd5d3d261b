"""Newmark integrators for hybrid tests (Bartl 2019 §2.3, Table 2.1, eqs. 2.46-2.48)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.numerics.newmark import (
    AverageAcceleration,
    CentralDifference,
    NewmarkParams,
    amplification_matrix,
    iteration_inverse,
    make_integrator,
    newmark_mdof_step,
    newmark_sample,
    newmark_sdof_step,
)
from rths_ros.params import ParameterError, build


def _free(integ, n):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array([integ.step()[0] for _ in range(n)])


def test_central_difference_free_vibration_matches_discrete_closed_form():
    # undamped SDOF, q0 = 1, v0 = 0: the CD recursion q[n+1] - 2 q[n] + q[n-1] = -(w dt)^2 q[n]
    # has the exact solution q[n] = cos(n theta), cos(theta) = 1 - (w dt)^2 / 2
    w, dt = 2 * math.pi * 3.0, 0.01
    cd = CentralDifference([[2.0]], [[0.0]], [[2.0 * w * w]], dt, q0=[1.0])
    q = _free(cd, 400)  # q[1] .. q[400]
    theta = math.acos(1.0 - 0.5 * (w * dt) ** 2)
    n = np.arange(1, 401)
    np.testing.assert_allclose(q, np.cos(n * theta), atol=1e-10)
    # period error against the continuous solution, Table 2.1: dT/T ~ -(w dt)^2/24 (shortening)
    assert (w * dt / theta - 1.0) == pytest.approx(-(w * dt) ** 2 / 24, rel=0.05)


def test_average_acceleration_free_vibration_matches_closed_form():
    # trapezoidal rule: |amplification| = 1, phase per step 2 atan(w dt / 2)
    w, dt = 2 * math.pi * 5.0, 0.01
    aa = AverageAcceleration([[1.0]], [[0.0]], [[w * w]], dt, q0=[0.01], qd0=[0.3])
    q = _free(aa, 500)
    theta = 2.0 * math.atan(0.5 * w * dt)
    n = np.arange(1, 501)
    np.testing.assert_allclose(q, 0.01 * np.cos(n * theta) + 0.3 / w * np.sin(n * theta), atol=1e-12)
    # no amplitude error, period elongation (w dt)^2/12 (the (w dt)^2/2 printed in Table 2.1 is not met)
    assert w * dt / theta - 1.0 == pytest.approx((w * dt) ** 2 / 12, rel=0.05)
    assert abs(w * dt / theta - 1.0) < 0.2 * (w * dt) ** 2 / 2


@pytest.mark.parametrize("cls", [CentralDifference, AverageAcceleration])
def test_damped_forced_response_converges_to_analytic(cls):
    # m q'' + c q' + k q = F0 (step): analytic underdamped step response; 2nd-order convergence
    m, k, c, F0 = 1.5, 600.0, 3.0, 2.0
    wn = math.sqrt(k / m)
    z = c / (2 * math.sqrt(k * m))
    wd = wn * math.sqrt(1 - z * z)
    T = 1.0
    errs = []
    for dt in (2e-3, 1e-3):
        # the step acts from t = 0: the implicit scheme needs q''(0) = F0/m (force at t = 0+)
        integ = (cls([[m]], [[c]], [[k]], dt) if cls is CentralDifference
                 else cls([[m]], [[c]], [[k]], dt, f_ext0=[F0]))
        n = int(round(T / dt))
        if cls is CentralDifference:
            q = np.array([integ.step(f_ext=[F0])[0] for _ in range(n)])
        else:
            q = np.array([integ.step(f_ext_new=[F0])[0] for _ in range(n)])
        t = np.arange(1, n + 1) * dt
        ex = F0 / k * (1 - np.exp(-z * wn * t) * (np.cos(wd * t) + z / math.sqrt(1 - z * z) * np.sin(wd * t)))
        errs.append(np.max(np.abs(q - ex)) / (F0 / k))
    assert errs[1] < 1e-2
    assert errs[0] / errs[1] == pytest.approx(4.0, rel=0.25)  # second order


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the unstable runs overflow on purpose
def test_central_difference_stability_limit():
    # Table 2.1: stable for w dt < 2
    w = 100.0
    assert CentralDifference.stability_limit_dt([[1.0]], [[w * w]]) == pytest.approx(0.02)
    for wdt, stable in ((1.95, True), (1.999, True), (2.02, False), (2.2, False)):
        cd = CentralDifference([[1.0]], [[0.0]], [[w * w]], wdt / w, q0=[1.0])
        q = _free(cd, 3000)
        assert bool(np.max(np.abs(q)) < 10.0) is stable, wdt


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_mdof_stability_limit_is_set_by_highest_mode():
    M = np.diag([1.0, 0.1])
    K = np.array([[2000.0, -1000.0], [-1000.0, 1000.0]])
    dt_lim = CentralDifference.stability_limit_dt(M, K)
    wmax = math.sqrt(max(np.linalg.eigvals(np.linalg.solve(M, K)).real))
    assert dt_lim == pytest.approx(2 / wmax)
    for fac, stable in ((0.98, True), (1.03, False)):
        cd = CentralDifference(M, np.zeros((2, 2)), K, fac * dt_lim, q0=[1e-3, 0.0])
        q = np.array([cd.step() for _ in range(4000)])
        assert bool(np.max(np.abs(q)) < 1.0) is stable, fac


def test_feedback_hybrid_coupling_reproduces_monolithic_system():
    # numerical: 2-DoF chain; physical: spring k_p from the interface DoF 1 to ground, measured after
    # the command is applied (ideal actuator).  CD coupling (eq. 2.46) must equal CD on the assembled model.
    M = np.diag([2.0, 1.0])
    K = np.array([[3000.0, -1000.0], [-1000.0, 1000.0]])
    C = 0.002 * K
    kp, dt = 1500.0, 1e-3
    G = np.array([[0.0, 1.0]])
    f_ext = np.array([0.0, 5.0])
    hyb = CentralDifference(M, C, K, dt, G=G)
    y = hyb.y
    ys = []
    for _ in range(2000):
        lam_exp = kp * y[0]          # force measured on the specimen
        y = hyb.step(lam=[-lam_exp], f_ext=f_ext)  # lam_VIR = -lam_EXP
        ys.append(y[0])
    Kt = K + kp * G.T @ G
    mono = CentralDifference(M, C, Kt, dt)
    ym = [mono.step(f_ext=f_ext)[1] for _ in range(2000)]
    np.testing.assert_allclose(ys, ym, atol=1e-12)
    assert ys[-1] == pytest.approx(np.linalg.solve(Kt, f_ext)[1], rel=0.05)


def test_feedforward_coupling_with_measured_force_reproduces_the_monolithic_solution():
    """Feedforward coupling (Bartl 2019 eq. 2.48): the actuator imposes the interface motion (here the converged,
    perfect feedforward), the specimen force lam_EXP[n+1] is measured at the new time level and advances the
    average-acceleration model without iteration.  Numerical part: 2-DoF chain with Rayleigh damping; physical
    part: mass-spring-damper at interface DoF 2; harmonic f_ext at 7 Hz.

    * The hybrid model's y_VIR[n+1] equals the monolithic average-acceleration solution of the assembled system
      (to 1e-12 of the peak): the gap g = y_EXP - y_VIR is zero.  Feeding the force one sample late (lam[n])
      leaves a gap of 1.3 % of the peak.
    * The monolithic steady state is the closed form of the trapezoidal rule: the continuous response at the
      prewarped frequency (2/dt) tan(omega dt/2) (measured 6e-9 relative), not at omega (2e-3 away)."""
    M = np.diag([2.0, 1.0])
    K = np.array([[3000.0, -1000.0], [-1000.0, 1000.0]])
    C = 2.0 * M + 2e-3 * K
    G = np.array([[0.0, 1.0]])
    mp, cp, kp = 0.3, 1.5, 800.0
    dt, w, F, n = 1e-3, 2.0 * math.pi * 7.0, 4.0, 10000
    Mt, Ct, Kt = M + mp * G.T @ G, C + cp * G.T @ G, K + kp * G.T @ G
    mono = AverageAcceleration(Mt, Ct, Kt, dt)
    hyb = AverageAcceleration(M, C, K, dt, G=G)
    late = AverageAcceleration(M, C, K, dt, G=G)
    y_m, y_h, y_l = np.zeros(n), np.zeros(n), np.zeros(n)
    lam_prev = 0.0
    for k in range(n):
        f = np.array([F * math.cos(w * (k + 1) * dt), 0.0])
        y_m[k] = mono.step(f_ext_new=f)[1]
        lam_exp = mp * mono.qdd[1] + cp * mono.qd[1] + kp * y_m[k]      # measured on the specimen at t_{n+1}
        y_h[k] = hyb.step(lam_new=[-lam_exp], f_ext_new=f)[0]           # lam_VIR = -lam_EXP
        y_l[k] = late.step(lam_new=[-lam_prev], f_ext_new=f)[0]
        lam_prev = lam_exp
    peak = np.max(np.abs(y_m))
    np.testing.assert_allclose(y_h, y_m, rtol=0, atol=1e-12 * peak)
    assert np.max(np.abs(y_l - y_m)) > 5e-3 * peak
    t = (np.arange(n) + 1) * dt
    sel = t >= t[-1] - 1.0                                              # the last 7 periods
    coef, *_ = np.linalg.lstsq(np.column_stack([np.cos(w * t[sel]), -np.sin(w * t[sel])]), y_m[sel], rcond=None)
    y_ss = complex(coef[0], coef[1])
    wp = 2.0 / dt * math.tan(0.5 * w * dt)
    h_wp = np.linalg.solve(Kt - wp ** 2 * Mt + 1j * wp * Ct, np.array([F, 0.0]))[1]
    h_w = np.linalg.solve(Kt - w ** 2 * Mt + 1j * w * Ct, np.array([F, 0.0]))[1]
    assert abs(y_ss / h_wp - 1.0) < 1e-5
    assert abs(h_w / h_wp - 1.0) > 1e-3


def test_params_and_factory():
    p = build(NewmarkParams, {"dt_s": 0.002, "scheme": "average_acceleration"}, section="newmark")
    integ = make_integrator(p, [[1.0]], [[0.0]], [[1.0]])
    assert isinstance(integ, AverageAcceleration) and integ.dt == 0.002
    with pytest.raises(ParameterError, match="scheme"):
        build(NewmarkParams, {"scheme": "euler"})


def _chain3():
    M = np.diag([3.0, 2.0, 1.0])
    K = np.array([[5000.0, -2000.0, 0.0], [-2000.0, 3000.0, -1000.0], [0.0, -1000.0, 1000.0]])
    return M, 1.5 * M + 1e-3 * K, K


@pytest.mark.parametrize("scheme", ["average_acceleration", "central_difference"])
def test_mdof_kernel_sample_equals_the_integrator_classes(scheme):
    """newmark_sample (the compiled MDOF kernel) against the Python integrators on a damped 3-DoF chain driven by
    a random load: the same scheme, the same time levels (AA: load of sample k at t_{k+1} and, in the first sample,
    also for q''[0]; CD: load of sample k at t_k, explicit q[k+1])."""
    M, C, K = _chain3()
    dt, n = 2e-3, 800
    loads = np.random.default_rng(5).standard_normal((n, 3)) * [50.0, 0.0, 20.0]
    beta = 0.25 if scheme == "average_acceleration" else 0.0
    m_inv, s_inv = np.linalg.inv(M), iteration_inverse(M, C, K, dt, beta, 0.5)
    st, scratch = np.zeros((3, 3)), np.zeros((4, 3))
    out_q, out_qd = np.zeros(3), np.zeros(3)
    if beta:
        ref = AverageAcceleration(M, C, K, dt, f_ext0=loads[0])
    else:
        ref = CentralDifference(M, C, K, dt)
    qk, qr = np.zeros((n, 3)), np.zeros((n, 3))
    for k in range(n):
        newmark_sample(st, k == 0, m_inv, s_inv, C, K, dt, beta, 0.5, loads[k], out_q, out_qd, scratch)
        qk[k] = out_q
        qr[k] = ref.step(f_ext_new=loads[k]) if beta else ref.step(f_ext=loads[k])
    np.testing.assert_allclose(qk, qr, rtol=0, atol=1e-12 * np.max(np.abs(qr)))
    if beta:   # the state is the new level: q' and q'' as the class
        np.testing.assert_allclose(st[1], ref.qd, rtol=1e-10)
        np.testing.assert_allclose(st[2], ref.qdd, rtol=1e-10)


def test_mdof_kernel_step_equals_the_sdof_kernel_for_one_dof():
    m, c, k, dt = 2.0, 3.0, 800.0, 1e-3
    s1, sc1 = np.array([1e-3, 0.2, 0.0]), np.zeros(3)
    s3, sc3 = np.array([[1e-3], [0.2], [0.0]]), np.zeros((4, 1))
    s_inv = iteration_inverse([[m]], [[c]], [[k]], dt, 0.25, 0.5)
    for i in range(200):
        f = math.sin(0.05 * i)
        newmark_sdof_step(s1, m, c, k, dt, 0.25, 0.5, f, sc1)
        newmark_mdof_step(s3, s_inv, np.array([[c]]), np.array([[k]]), dt, 0.25, 0.5, np.array([f]), sc3)
    np.testing.assert_allclose(s3[:, 0], s1, rtol=1e-12)


def test_amplification_matrix_spectral_radius():
    """Undamped: average acceleration |lambda| = 1 at any dt; central difference 1 below omega_max dt = 2 and > 1
    above it."""
    M, _, K = _chain3()
    Z = np.zeros((3, 3))
    dt_lim = CentralDifference.stability_limit_dt(M, K)

    def rho(dt, beta):
        return float(np.max(np.abs(np.linalg.eigvals(amplification_matrix(M, Z, K, dt, beta, 0.5)))))

    assert rho(10 * dt_lim, 0.25) == pytest.approx(1.0, abs=1e-9)
    assert rho(0.95 * dt_lim, 0.0) == pytest.approx(1.0, abs=1e-9)
    assert rho(1.05 * dt_lim, 0.0) > 1.5
