"""The coupled-beam twin (rths_ros.core.models.bartl.beams): FE assembly, Craig-Bampton sizes, the Newmark map, the
interface force of eq. 6.3 and the coupled reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.models.bartl.beams import (
    BeamRigParams,
    _newmark_map,
    build_rig,
    interface_map,
    reference_receptance,
    stepped_beam,
)
from rths_ros.core.models.fe.integrators import NewmarkStepper
from rths_ros.core.models.fe.matrices import BeamParams, beam_frequencies_hz, cantilever_beam


@pytest.fixture(scope="module")
def rig():
    return build_rig()


def test_stepped_beam_with_one_section_is_the_package_cantilever():
    p = BeamRigParams()
    K, M = stepped_beam(((0.4, 0.004),), p, "left")
    ref = cantilever_beam(BeamParams(length_m=0.4, width_m=0.04, height_m=0.004, n_elements=40))
    assert abs(K - ref.K).max() <= 1e-9 * abs(ref.K).max()
    assert abs(M - ref.M).max() <= 1e-9 * abs(ref.M).max()
    # first two eigenfrequencies against Euler-Bernoulli theory (0.1 % tolerance)
    w2 = np.sort(np.linalg.eigvals(np.linalg.solve(M.toarray(), K.toarray())).real)[:2]
    f = np.sqrt(w2) / (2 * math.pi)
    fa = beam_frequencies_hz(BeamParams(length_m=0.4, width_m=0.04, height_m=0.004), 2)
    assert np.allclose(f, fa, rtol=1e-3)


def test_right_clamp_mirrors_the_left_clamp():
    p = BeamRigParams()
    Kl, Ml = stepped_beam(((0.1, 0.004), (0.2, 0.002)), p, "left")
    Kr, Mr = stepped_beam(((0.2, 0.002), (0.1, 0.004)), p, "right")
    wl = np.sort(np.linalg.eigvals(np.linalg.solve(Ml.toarray(), Kl.toarray())).real)[:5]
    wr = np.sort(np.linalg.eigvals(np.linalg.solve(Mr.toarray(), Kr.toarray())).real)[:5]
    assert np.allclose(wl, wr, rtol=1e-6)     # the same structure seen from its other end: same eigenfrequencies


def test_craig_bampton_sizes_and_interface(rig):
    # VIR: 4 boundary DoFs (z_P, alpha_P, z_B, alpha_B) + 20 modes; EXP: 2 + 20 (§6.1: 20 fixed-interface modes)
    assert rig.vir.n_dof == 24 and rig.exp.n_dof == 22
    assert np.allclose(np.asarray(rig.vir.G)[:, :4], [[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    assert np.allclose(interface_map(0.08), [[1, -0.04], [1, 0.04]])     # eq. 6.1 with d = 80 mm


def test_newmark_map_reproduces_the_stepper(rig):
    av, bv, cv = _newmark_map(rig.vir, rig.p.dt_s)
    st = NewmarkStepper.from_model(rig.vir, rig.p.dt_s)
    rng = np.random.default_rng(3)
    s = np.zeros(av.shape[0])
    for _ in range(200):
        u = rng.standard_normal(3)
        y = st.step(u)
        s = av @ s + bv @ u
        assert np.allclose(cv @ s, y, rtol=1e-9, atol=1e-15)


def test_interface_force_of_the_plate_model_is_the_beam_reaction(rig):
    """eq. 6.3 with the geometric input matrix T^T gives the force the plate exerts on the EXP beam: compare with
    the beam's own boundary equation (M q'' + D q' + K q)[boundary] at random states and inputs (1e-9 relative);
    the printed matrix [[-1, 1], [d/2, d/2]] does not."""
    n = rig.exp.n_dof
    p = rig.p
    T = rig.T
    M, D, K = (np.asarray(x) for x in (rig.exp.M, rig.exp.D, rig.exp.K))
    Mr, Dr, Kr = M.copy(), D.copy(), K.copy()
    Mr[:2, :2] += np.diag([p.m_plate_kg, p.theta_plate_kg_m2]) + p.m_shaker_kg * T.T @ T
    Dr[:2, :2] += p.d_shaker_n_s_per_m * T.T @ T
    Kr[:2, :2] += p.k_shaker_n_per_m * T.T @ T
    rng = np.random.default_rng(5)
    for _ in range(5):
        x = rng.standard_normal(2 * n) * 1e-5
        u = rng.standard_normal(2)
        q, qd = x[:n], x[n:]
        f = np.zeros(n)
        f[:2] = T.T @ u
        qdd = np.linalg.solve(Mr, f - Dr @ qd - Kr @ q)
        beam = (M @ qdd + D @ qd + K @ q)[:2]
        lam = rig.c_lam @ x + rig.d_lam @ u
        assert np.allclose(lam, beam, rtol=1e-9, atol=1e-12 * np.abs(beam).max())
        za_dd = T @ qdd[:2]
        fa = u - p.m_shaker_kg * za_dd - p.d_shaker_n_s_per_m * T @ qd[:2] - p.k_shaker_n_per_m * T @ q[:2]
        printed = np.array([[-1.0, 1.0], [p.d_act_m / 2, p.d_act_m / 2]])
        wrong = printed @ fa - np.diag([p.m_plate_kg, p.theta_plate_kg_m2]) @ qdd[:2]
        assert not np.allclose(wrong, beam, rtol=1e-3)


def test_reference_of_the_reduced_models_matches_the_full_assembly(rig):
    """Coupled VIR + EXP (clamped at both ends, stepped EXP) assembled from full FE matrices against the primal
    assembly of the two Craig-Bampton models (0.5 % tolerance at 60 and 320 Hz, continuous time)."""
    p = rig.p
    K, M = stepped_beam(((0.4, p.h_vir_m), (p.l_thin_m, p.h_exp2_m), (p.l_exp_m - p.l_thin_m, p.h_exp1_m)), p,
                        "left")
    n = K.shape[0] - 2          # clamp the right end too
    K, M = K.toarray()[:n, :n], M.toarray()[:n, :n]
    w1, w2 = 2 * math.pi * 20.0, 2 * math.pi * 800.0
    a, b = 2 * p.zeta * w1 * w2 / (w1 + w2), 2 * p.zeta / (w1 + w2)
    D = a * M + b * K
    i_p, i_b = 2 * (20 - 1), 2 * (40 - 1)
    for f in (60.0, 320.0):
        w = 2 * math.pi * f
        rhs = np.zeros(n)
        rhs[i_p] = 1.0
        x = np.linalg.solve(K + 1j * w * D - w * w * M, rhs)
        red = reference_receptance(rig, f, discrete=False)[0]
        assert np.allclose(red, x[[i_b, i_b + 1]], rtol=5e-3)
