"""Newmark integrators for hybrid tests (seed 001 §2.3, Table 2.1, eqs. 2.46-2.48)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.newmark import (AverageAcceleration, CentralDifference, NewmarkParams, make_integrator)
from rths_ros.core.params import ParameterError, build


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


def test_feedforward_implicit_step_uses_measured_force():
    # Avg. acceleration fed by lam[n+1] equals the monolithic implicit solution only when lam is
    # the exact interface force; here lam is prescribed, so compare with the same model and f_ext = G^T lam.
    M, K = np.diag([1.0, 1.0]), np.array([[200.0, -100.0], [-100.0, 100.0]])
    C = np.zeros((2, 2))
    G = np.array([[1.0, 0.0]])
    a = AverageAcceleration(M, C, K, 1e-3, G=G)
    b = AverageAcceleration(M, C, K, 1e-3)
    for n in range(500):
        lam = math.sin(0.01 * n)
        ya = a.step(lam_new=[lam])
        b.step(f_ext_new=[lam, 0.0])
        assert ya[0] == pytest.approx(b.q[0], abs=1e-15)


def test_params_and_factory():
    p = build(NewmarkParams, {"dt_s": 0.002, "scheme": "average_acceleration"}, section="newmark")
    integ = make_integrator(p, [[1.0]], [[0.0]], [[1.0]])
    assert isinstance(integ, AverageAcceleration) and integ.dt == 0.002
    with pytest.raises(ParameterError, match="scheme"):
        build(NewmarkParams, {"scheme": "euler"})
