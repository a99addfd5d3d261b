"""FIR and IIR virtual parts from impulse responses (Bartl 2019 §2.4, App. A): Dirac approximations, rectangle-rule
FIR with predictor-corrector and windows, impulse-invariant IIR, the rigid/slow-mode split with Q = I - L L^T M."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.models.fe import filters as F
from rths_ros.core.models.fe.integrators import newmark
from rths_ros.core.models.fe.matrices import BeamParams, FEModel, PlateParams, aluminium_plate, cantilever_beam
from rths_ros.core.models.fe.reduction import free_modes

CASES = {"rigid, undamped": (0.0, 0.0), "rigid, damped": (0.0, 3.0), "underdamped": (2 * math.pi * 20, 2.0),
         "critically damped": (50.0, 50.0), "overdamped": (50.0, 120.0)}


def _iir_impulse(b1, a1, a2, dt, n):
    """Run zeta[n+1] = dt b1 chi[n] - a1 zeta[n] - a2 zeta[n-1] with chi = [1/dt, 0, ...]: zeta[1..n]."""
    z, zp, out = 0.0, 0.0, []
    for k in range(n):
        chi = 1.0 / dt if k == 0 else 0.0
        z, zp = dt * b1 * chi - a1 * z - a2 * zp, z
        out.append(z)
    return np.array(out)


@pytest.mark.parametrize("case", list(CASES))
def test_iir_reproduces_the_sampled_analytic_impulse_response(case):
    omega, delta = CASES[case]
    dt, n = 1e-3, 400
    t = np.arange(1, n + 1) * dt
    h = F.modal_impulse_response(omega, delta, t)
    # the analytic h of App. A against a direct solution of zeta'' + 2 delta zeta' + omega^2 zeta = 0, zeta'(0) = 1
    lam = np.roots([1.0, 2 * delta, omega ** 2])
    if np.isclose(lam[0], lam[1]):
        h_ode = t * np.exp(lam[0].real * t)
    else:
        h_ode = np.real((np.exp(lam[0] * t) - np.exp(lam[1] * t)) / (lam[0] - lam[1]))
    np.testing.assert_allclose(h, h_ode, rtol=1e-6, atol=1e-9 * np.abs(h).max())
    b1, a1, a2 = (float(c[0]) for c in F.iir_coefficients([omega], [delta], dt))
    np.testing.assert_allclose(_iir_impulse(b1, a1, a2, dt, n), h, rtol=1e-9, atol=1e-12 * np.abs(h).max())
    # the same through the filter object (one mode, unit input and output maps)
    iir = F.ModalIIR([omega], [delta], dt, np.array([[1.0]]), np.array([[1.0]]))
    y = np.array([iir.step([1.0 / dt if k == 0 else 0.0])[0] for k in range(n)])
    np.testing.assert_allclose(y, h, rtol=1e-9, atol=1e-12 * np.abs(h).max())


def test_printed_rigid_body_row_is_wrong_and_the_corrected_one_is_the_overdamped_limit():
    dt, delta, n = 1e-3, 3.0, 200
    h = F.modal_impulse_response(0.0, delta, np.arange(1, n + 1) * dt)
    e = math.exp(-delta * dt)                  # Table A.1 as printed, with c_k = 2 delta
    printed = _iir_impulse((1 - e) / (2 * delta), 1 + e, e, dt, n)
    assert np.abs(printed - h).max() > 0.5 * np.abs(h).max()
    rigid = np.array(F.iir_coefficients([0.0], [delta], dt)).ravel()
    over = np.array(F.iir_coefficients([1e-4], [delta], dt)).ravel()
    np.testing.assert_allclose(rigid, over, rtol=1e-8)
    with pytest.raises(ValueError):
        F.iir_coefficients([10.0], [-1.0], dt)


def test_windows():
    M = 58
    for kind in F.WINDOWS:
        w = F.window(kind, M)
        assert w.shape == (M + 1,) and w[0] == 1.0
    assert np.all(F.window("rect", M) == 1.0)
    assert F.window("cosine", M)[M] == pytest.approx(0.0, abs=1e-15)
    assert F.window("cosine", M)[M // 2] == pytest.approx(math.cos(math.pi * (M // 2) / (2 * M)))
    np.testing.assert_allclose(F.window("hann", M), F.window("cosine", M) ** 2)
    with pytest.raises(ValueError):
        F.window("kaiser", M)


@pytest.mark.parametrize("M", [1, 2, 7])
def test_predictor_corrector_fir_equals_the_convolution(M):
    rng = np.random.default_rng(M)
    b = rng.standard_normal((M + 1, 3, 2))
    u = rng.standard_normal((40, 2))
    y_ref = F.fir_convolve(b, u)               # y[n] = sum_{k=1}^{M} b[k] u[n-k], b[0] unused
    fir = F.FIRFilter(b)
    y = fir.run(u)                             # step(u[n]) -> y[n+1]
    np.testing.assert_allclose(y[:-1], y_ref[1:], rtol=1e-12, atol=1e-12)
    # the corrector alone is one product with b[1] on top of the prepared prediction
    fir.reset()
    fir.step(u[0])
    assert np.allclose(fir.correct(u[1]), fir.y_star + b[1] @ u[1])


@pytest.fixture(scope="module")
def beam():
    # mass-proportional damping so that the impulse responses die out within the test's horizon
    return cantilever_beam(BeamParams(n_elements=12, rayleigh_a=60.0, rayleigh_b=2e-5), io_nodes=(6, 12))


def test_second_step_impulse_convolution_reproduces_newmark_exactly(beam):
    dt, n = 2e-4, 300
    rng = np.random.default_rng(0)
    u = rng.standard_normal((n, 2))
    H = F.impulse_response(beam, dt, n, "force_second")
    b = F.fir_taps(H, dt, n)
    y_conv = F.fir_convolve(b, u, feedthrough=True)
    y_nm = newmark(beam, dt).run(u)
    np.testing.assert_allclose(y_conv, y_nm, rtol=1e-9, atol=1e-11 * np.abs(y_nm).max())
    # without the direct term (the thesis's strictly causal FIR) it is not exact for a white input
    assert np.abs(F.fir_convolve(b, u) - y_nm).max() > 1e-3 * np.abs(y_nm).max()


def test_dirac_approximations_converge_to_the_analytic_impulse_response():
    m, w, zeta = 2.0, 2 * math.pi * 10, 0.02
    model = FEModel(np.array([[m]]), np.array([[m * w * w]]), np.array([[2 * m * zeta * w]]), np.array([[1.0]]))
    errs = {k: [] for k in F.IMPULSE_METHODS}
    for dt in (1e-3, 5e-4):
        n = round(0.2 / dt)
        h = F.modal_impulse_response(w, zeta * w, np.arange(n + 1) * dt) / m
        for k in F.IMPULSE_METHODS:
            errs[k].append(np.abs(F.impulse_response(model, dt, n, k)[:, 0, 0] - h).max() / np.abs(h).max())
    # omega dt = 0.063 and 0.031: the velocity step is second order, the two force impulses first order
    assert errs["velocity"][0] < 0.01 and 3.5 < errs["velocity"][0] / errs["velocity"][1] < 4.5
    for k in ("force_first", "force_second"):
        assert errs[k][0] < 0.05 and 1.8 < errs[k][0] / errs[k][1] < 2.2


def test_plain_fir_follows_newmark_on_a_damped_beam(beam):
    dt = 2e-4
    t = np.arange(1, 2001) * dt
    u = np.stack([np.sin(2 * np.pi * 25 * t), 0.5 * np.sin(2 * np.pi * 60 * t + 1)], 1) * np.minimum(t / 0.02, 1)[:, None]
    y_nm = newmark(beam, dt).run(u)
    err = lambda y: np.sqrt(((y[:-1] - y_nm[1:]) ** 2).mean() / (y_nm ** 2).mean())
    # velocity-step impulse responses (second order), rectangular window: 1000 taps (0.2 s, every mode decayed by
    # e^-6) follow Newmark within 0.5 %; 100 taps cut the responses off and miss most of the output
    assert err(F.fir_filter(beam, dt, 1000, "rect", "velocity").run(u)) < 0.005
    assert err(F.fir_filter(beam, dt, 100, "rect", "velocity").run(u)) > 0.3
    # the force impulse at the first step is first order in dt (module doc): within 2.5 % here
    assert err(F.fir_filter(beam, dt, 1000, "rect", "force_first").run(u)) < 0.025
    # a Hann window over a response that has not died out distorts it (the window acts from the first tap)
    assert err(F.fir_filter(beam, dt, 1000, "hann", "velocity").run(u)) > 0.05


def test_modal_iir_follows_newmark_on_the_modal_model(beam):
    # the IIR of the two lowest beam modes against Newmark on the same two-mode modal truncation
    from rths_ros.core.models.fe.reduction import modal_truncation
    red = modal_truncation(beam, 2)
    omega = red.info["omega"]
    delta = F.modal_damping(np.eye(2), red.D)
    GL = red.G
    dt = 1e-4
    t = np.arange(1, 2001) * dt
    u = np.stack([np.sin(2 * np.pi * 25 * t), np.cos(2 * np.pi * 70 * t) - 1.0], 1) * np.minimum(t / 0.02, 1)[:, None]
    y_nm = newmark(red, dt).run(u)
    iir = F.ModalIIR(omega, delta, dt, GL.T, GL)
    y = np.array([iir.step(uk) for uk in u])
    # omega dt <= 0.11: the two differ by Newmark's O(dt^2) error (measured 8e-5, a quarter of it at dt / 2)
    assert np.sqrt(((y[:-1] - y_nm[1:]) ** 2).mean() / (y_nm ** 2).mean()) < 5e-4


@pytest.fixture(scope="module")
def plate():
    return aluminium_plate(PlateParams(nx=8, ny=8))


def test_projector_removes_rigid_and_slow_modes(plate):
    omega, V = free_modes(plate.M, plate.K, 14)
    L = V[:, :11]
    assert np.sum(omega == 0.0) == 6
    Q = F.fast_projector(L, plate.M)
    np.testing.assert_allclose(Q @ Q, Q, atol=1e-9)
    np.testing.assert_allclose(Q @ L, 0.0, atol=1e-9)
    np.testing.assert_allclose(L.T @ (plate.M @ Q), 0.0, atol=1e-9)
    np.testing.assert_allclose(Q @ V[:, 11:], V[:, 11:], atol=1e-8)       # faster modes pass unchanged
    # the full impulse response of a free plate grows (rigid-body drift); the projected one decays
    dt, n = 5e-4, 120
    H = F.impulse_response(plate, dt, n)
    H_fast = F.impulse_response(plate, dt, n, basis=L)
    assert np.abs(H[-1]).max() > np.abs(H[n // 2]).max()
    assert np.abs(H_fast[-1]).max() < 0.05 * np.abs(H_fast).max()


def test_split_fir_iir_follows_newmark_on_a_free_plate(plate):
    dt = 5e-4
    t = np.arange(1, 801) * dt
    u = np.minimum(t / 0.02, 1)[:, None] * np.stack(
        [np.sin(2 * np.pi * 40 * t), 0.5 * np.sin(2 * np.pi * 90 * t + 1), 0.3 * np.sin(2 * np.pi * 150 * t + 2)], 1)
    y_nm = newmark(plate, dt).run(u)
    sf = F.split_filter(plate, dt, n_slow=11, n_taps=58, kind="hann")
    assert sf.info["n_rigid"] == 6
    y = sf.run(u)
    rel = np.sqrt(((y[:-1] - y_nm[1:]) ** 2).mean() / (y_nm ** 2).mean())
    # 0.4 s of a plate drifting on its rigid-body modes: within 1 % (Newmark's own period error at the fifth
    # elastic mode, 295 Hz, omega dt = 0.93, is several per cent; the IIR samples the exact modal response)
    assert rel < 0.01
    # the slow part alone is the modal IIR: its output is the projection on L, stepped exactly
    sf.reset()
    y_iir = np.array([sf.iir.step(uk) for uk in u])
    assert 0.0 < np.abs(y - y_iir).max() < 0.2 * np.abs(y).max()


def test_modal_damping_requires_proportional_damping(plate):
    _, L = free_modes(plate.M, plate.K, 8)
    assert F.modal_damping(L, plate.D)[:6] == pytest.approx([1.0] * 6)   # rigid: delta = a / 2
    D = plate.D.tolil()
    D[0, 0] += 50.0                                      # a local damper
    with pytest.raises(ValueError):
        F.modal_damping(L, D.tocsc())
    with pytest.raises(ValueError):
        F.impulse_response(plate, 5e-4, 3, "dirac")
