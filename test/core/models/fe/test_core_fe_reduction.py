"""Model-order reduction (Bartl 2019 §2.2.3): Guyan, Craig-Bampton, modal truncation with rigid-body modes."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rths_ros.core.models.fe.integrators import newmark
from rths_ros.core.models.fe.matrices import BeamParams, PlateParams, aluminium_plate, cantilever_beam, rayleigh
from rths_ros.core.models.fe.reduction import craig_bampton, free_modes, guyan, m_orthonormalise, modal_truncation


@pytest.fixture(scope="module")
def beam():
    # tip and mid-span deflections as interface; a second boundary DoF set adds the tip slope
    return cantilever_beam(BeamParams(n_elements=30), io_nodes=(15, 30))


def _boundary(model):
    return np.array(sorted(model.info["io_dofs"]))


def test_guyan_matches_the_printed_condensed_matrices(beam):
    b = _boundary(beam)
    i = np.setdiff1d(np.arange(beam.n_dof), b)
    M, K = beam.M.toarray(), beam.K.toarray()
    Kii_inv = np.linalg.inv(K[np.ix_(i, i)])
    Kib, Kbi, Mib, Mbi = K[np.ix_(i, b)], K[np.ix_(b, i)], M[np.ix_(i, b)], M[np.ix_(b, i)]
    m_printed = (M[np.ix_(b, b)] - Mbi @ Kii_inv @ Kib - Kbi @ Kii_inv @ Mib
                 + Kbi @ Kii_inv @ M[np.ix_(i, i)] @ Kii_inv @ Kib)
    k_printed = K[np.ix_(b, b)] - Kbi @ Kii_inv @ Kib
    g = guyan(beam, b)
    np.testing.assert_allclose(g.M, m_printed, rtol=1e-9, atol=1e-12 * np.abs(m_printed).max())
    np.testing.assert_allclose(g.K, k_printed, rtol=1e-9)
    np.testing.assert_allclose(g.G, np.eye(2))                # G~ = G_b
    # exact for statics: the condensed model's deflections under interface forces are the full model's
    f = np.array([1.0, -2.0])
    q_full = sp.linalg.spsolve(beam.K, beam.G.T @ f)
    np.testing.assert_allclose(np.linalg.solve(g.K, g.G.T @ f), beam.G @ q_full, rtol=1e-9)


def test_craig_bampton_structure_and_accuracy(beam):
    b = _boundary(beam)
    cb = craig_bampton(beam, b, 8)
    nb = b.size
    omega_i = cb.info["omega_fixed"]
    # reduced matrices as in the thesis, with omega_i^2 (not omega_i) on the stiffness diagonal
    np.testing.assert_allclose(cb.M[nb:, nb:], np.eye(8), atol=1e-12)
    R = cb.info["R"]
    k_full = R.T @ (beam.K @ R)                                # not overwritten: the projection itself
    np.testing.assert_allclose(k_full[nb:, nb:], np.diag(omega_i ** 2), rtol=1e-8, atol=1e-6 * omega_i.max() ** 2)
    np.testing.assert_allclose(k_full[nb:, :nb], 0.0, atol=1e-6 * np.abs(k_full).max())
    np.testing.assert_allclose(cb.K[:nb, :nb], guyan(beam, b).K, rtol=1e-9)
    # eigenfrequencies of the reduced model approach the full model's; Craig-Bampton beats Guyan
    w_full, _ = free_modes(beam.M, beam.K, 3)
    w_cb, _ = free_modes(cb.M, cb.K, 3)
    w_g, _ = free_modes(guyan(beam, b).M, guyan(beam, b).K, 2)
    np.testing.assert_allclose(w_cb, w_full, rtol=1e-4)           # 8 fixed-interface modes: within 0.01 %
    assert abs(w_g[1] / w_full[1] - 1) > 100 * abs(w_cb[1] / w_full[1] - 1)


def test_reduced_model_steps_like_the_full_model(beam):
    cb = craig_bampton(beam, _boundary(beam), 8)
    dt = 2e-4
    t = np.arange(1, 801) * dt
    u = np.stack([np.sin(2 * np.pi * 30 * t) * np.minimum(t / 0.02, 1), np.zeros_like(t)], axis=1)
    y_full = newmark(beam, dt).run(u)
    y_cb = newmark(cb, dt).run(u)
    # 8 fixed-interface modes reach far beyond 30 Hz: relative RMS difference below 0.1 %
    assert np.sqrt(((y_cb - y_full) ** 2).mean() / (y_full ** 2).mean()) < 1e-3


def test_modal_truncation_of_a_free_plate_keeps_rigid_body_modes():
    m = aluminium_plate(PlateParams(nx=6, ny=6))
    red = modal_truncation(m, 10)
    omega = red.info["omega"]
    assert np.sum(omega == 0.0) == 6
    Phi = red.info["R"]
    np.testing.assert_allclose(Phi.T @ (m.M @ Phi), np.eye(10), atol=1e-10)
    np.testing.assert_allclose(Phi.T @ (m.K @ Phi), np.diag(omega ** 2), atol=1e-6 * omega.max() ** 2)
    # Rayleigh damping stays diagonal: 2 zeta_i omega_i = a + b omega_i^2
    p = PlateParams()
    np.testing.assert_allclose(np.diag(red.D), p.rayleigh_a + p.rayleigh_b * omega ** 2, rtol=1e-7)
    np.testing.assert_allclose(red.D - np.diag(np.diag(red.D)), 0.0, atol=1e-8 * red.D.max())


def test_m_orthonormalise_and_guards(beam):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((beam.n_dof, 3))
    Y = m_orthonormalise(X, beam.M)
    np.testing.assert_allclose(Y.T @ (beam.M @ Y), np.eye(3), atol=1e-10)
    with pytest.raises(ValueError):
        m_orthonormalise(np.hstack([X, X[:, :1]]), beam.M)
    with pytest.raises(ValueError):                           # G acts on a DoF outside the boundary set
        guyan(beam, [_boundary(beam)[0]])
    assert rayleigh(np.eye(2), 2 * np.eye(2), 1.0, 0.5).tolist() == [[2.0, 0.0], [0.0, 2.0]]
