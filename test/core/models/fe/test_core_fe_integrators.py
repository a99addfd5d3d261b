"""Implicit Newmark and HHT-alpha steppers for large and reduced virtual parts (Bartl 2019 §2.3, eq. 2.39/2.40,
2.55/2.56)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from rths_ros.core.models.fe.integrators import NewmarkStepper, hht, hht_parameters, newmark
from rths_ros.core.models.fe.matrices import BeamParams, FEModel, cantilever_beam

W, ZETA = 2 * math.pi * 5.0, 0.02


def _sdof(w=W, zeta=ZETA) -> FEModel:
    return FEModel(np.array([[1.0]]), np.array([[w * w]]), np.array([[2 * zeta * w]]), np.array([[1.0]]))


def _forced_error(stepper_factory, dt, t_end=1.0, f_hz=3.0):
    n = round(t_end / dt)
    t = np.arange(1, n + 1) * dt
    y = stepper_factory(dt).run(np.sin(2 * math.pi * f_hz * t)[:, None])[:, 0]
    rhs = lambda s, x: [x[1], math.sin(2 * math.pi * f_hz * s) - 2 * ZETA * W * x[1] - W * W * x[0]]
    ref = solve_ivp(rhs, (0, t_end), [0.0, 0.0], t_eval=t, method="DOP853", rtol=1e-12, atol=1e-15).y[0]
    return np.abs(y - ref).max() / np.abs(ref).max()


@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_second_order_convergence_on_a_forced_oscillator(alpha):
    make = (lambda dt: newmark(_sdof(), dt)) if alpha == 0.0 else (lambda dt: hht(_sdof(), dt, alpha))
    e1, e2 = _forced_error(make, 2e-3), _forced_error(make, 1e-3)
    assert e1 < 0.01                              # (omega dt = 0.063): below 1 % of the peak
    assert 3.5 < e1 / e2 < 4.5                    # halving dt quarters the error


def _amplification(stepper: NewmarkStepper) -> np.ndarray:
    """The 3x3 map (q, q', q'') -> next state of a free 1-DoF stepper."""
    A = np.zeros((3, 3))
    for j in range(3):
        e = np.zeros(3)
        e[j] = 1.0
        stepper.set_state(e[:1], e[1:2], e[2:3])
        stepper.step_force(np.zeros(1))
        A[:, j] = [stepper.q[0], stepper.qd[0], stepper.qdd[0]]
    return A


def test_spectral_radius_and_period_error():
    dt = 1e-3
    # average acceleration: no amplitude error at any omega dt; period elongation (omega dt)^2 / 12
    for wdt in (0.1, 1.0, 1e4):
        rho = np.abs(np.linalg.eigvals(_amplification(newmark(_sdof(wdt / dt, 0.0), dt)))).max()
        assert rho == pytest.approx(1.0, abs=1e-9)
    lam = np.linalg.eigvals(_amplification(newmark(_sdof(0.1 / dt, 0.0), dt)))
    # the principal pair on the unit circle; the third eigenvalue is the spurious zero of q'' as a state, whose
    # rounding (+0, -0 or -1e-17 by the CPU's LAPACK kernels) would give it an angle of pi
    lam = lam[np.abs(lam) > 0.5]
    assert len(lam) == 2
    theta = np.abs(np.angle(lam)).max()
    assert (0.1 / theta - 1.0) == pytest.approx(0.1 ** 2 / 12, rel=0.02)
    # HHT-alpha, thesis sign convention: high frequencies damped to (1 - alpha) / (1 + alpha), low ones kept
    for alpha in (0.1, 0.3):
        st = hht(_sdof(1e4 / dt, 0.0), dt, alpha)
        rho_inf = np.abs(np.linalg.eigvals(_amplification(st))).max()
        assert rho_inf == pytest.approx((1 - alpha) / (1 + alpha), rel=1e-3)
        rho_low = np.abs(np.linalg.eigvals(_amplification(hht(_sdof(0.05 / dt, 0.0), dt, alpha)))).max()
        assert 1.0 - 1e-4 < rho_low < 1.0


def test_hht_parameters_of_the_thesis():
    beta, gamma = hht_parameters(0.3)
    assert (beta, gamma) == pytest.approx((0.4225, 0.8))      # printed rounded: beta = 0.42
    st = hht(_sdof(), 1e-3)
    assert (st.alpha, st.beta, st.gamma) == pytest.approx((0.3, 0.4225, 0.8))
    st = hht(_sdof(), 1e-3, beta=0.42)
    assert st.beta == 0.42
    for bad in (-0.1, 0.34):
        with pytest.raises(ValueError):
            hht_parameters(bad)
    with pytest.raises(ValueError):
        newmark(_sdof(), 0.0)


def test_sparse_dense_and_block_stepping_agree():
    b = cantilever_beam(BeamParams(n_elements=12), io_nodes=(6, 12))
    dense = FEModel(b.M.toarray(), b.K.toarray(), b.D.toarray(), b.G.toarray())
    rng = np.random.default_rng(3)
    u = rng.standard_normal((50, 2))
    for alpha in (0.0, 0.3):
        ys = NewmarkStepper.from_model(b, 1e-4, **_kw(alpha)).run(u)
        yd = NewmarkStepper.from_model(dense, 1e-4, **_kw(alpha)).run(u)
        np.testing.assert_allclose(ys, yd, rtol=1e-9, atol=1e-12 * np.abs(ys).max())
        # two input histories stepped at once as a block equal the two stepped alone
        st = NewmarkStepper.from_model(b, 1e-4, **_kw(alpha))
        st.reset(width=2)
        for uk in u:
            st.step_force(b.G.T @ np.stack([uk, 2 * uk[::-1]], axis=1))
        y_block = b.G @ st.q
        y2 = NewmarkStepper.from_model(b, 1e-4, **_kw(alpha)).run(2 * u[:, ::-1])[-1]
        np.testing.assert_allclose(y_block[:, 0], ys[-1], rtol=1e-10)
        np.testing.assert_allclose(y_block[:, 1], y2, rtol=1e-10)


def _kw(alpha):
    if alpha == 0.0:
        return {}
    beta, gamma = hht_parameters(alpha)
    return {"alpha": alpha, "beta": beta, "gamma": gamma}
