"""FE matrices of the large virtual parts (Bartl 2019 §2.2, §2.4.5): cantilever beam, aluminium plate, files."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from rths_ros.core.models.fe.matrices import (
    BeamParams,
    FEModel,
    PlateParams,
    aluminium_plate,
    beam_frequencies_hz,
    cantilever_beam,
    load_mtx,
    load_npz,
    plate_rigid_body_modes,
    rayleigh,
    save_npz,
)
from rths_ros.core.models.fe.reduction import free_modes


def test_beam_static_tip_deflection_is_exact():
    # cubic Hermite elements reproduce the cubic static deflection: w_tip = F L^3 / (3 E I) to round-off
    p = BeamParams(n_elements=7)
    b = cantilever_beam(p)
    q = sp.linalg.spsolve(b.K, b.G.T @ np.array([3.0]))
    assert (b.G @ q)[0] == pytest.approx(3.0 * p.length_m ** 3 / (3 * b.info["EI"]), rel=1e-10)


def test_beam_frequencies_converge_to_the_euler_bernoulli_values():
    p = BeamParams(n_elements=20)
    b = cantilever_beam(p)
    omega, _ = free_modes(b.M, b.K, 4)
    f = omega / (2 * math.pi)
    exact = beam_frequencies_hz(p, 4)
    assert exact[0] == pytest.approx(1.8751 ** 2 * math.sqrt(b.info["EI"] / (b.info["rhoA"] * 0.5 ** 4)) / (2 * math.pi),
                                     rel=1e-4)
    # consistent mass, h^4 convergence: 20 elements are within 1e-4 for the first four modes, from above
    assert np.all(f >= exact * (1 - 1e-9))
    np.testing.assert_allclose(f, exact, rtol=1e-4)


def test_beam_total_mass_and_io_nodes():
    p = BeamParams(n_elements=10)
    b = cantilever_beam(p, io_nodes=(5, 10))
    assert b.n_int == 2 and b.info["io_dofs"] == [8, 18]
    # Hermite translational shape functions sum to one, so w = 1 (theta = 0) at every node carries the whole mass;
    # the clamp removes node 0's row and column: total - (M_00 + 2 M_01) of element 1 = m_e (156 + 2 * 54) / 420
    w = np.zeros(b.n_dof)
    w[0::2] = 1.0
    me = p.density_kg_m3 * p.width_m * p.height_m * p.length_m / p.n_elements
    assert w @ (b.M @ w) == pytest.approx(me * p.n_elements - me * (156 + 2 * 54) / 420, rel=1e-12)
    with pytest.raises(ValueError):
        cantilever_beam(p, io_nodes=(0,))


def test_plate_default_has_about_8066_dofs_and_six_rigid_body_modes():
    m = aluminium_plate()
    p = PlateParams()
    assert m.n_dof == 6 * p.nx * p.ny + 4 * (p.nx + p.ny) + 3 == 8067
    assert m.n_int == 3 and len(set(m.info["io_dofs"])) == 3
    R = plate_rigid_body_modes(m)
    # K annihilates the six rigid motions (relative to the stiffness scale) ...
    assert np.abs(m.K @ R).max() < 1e-10 * abs(m.K).max() * np.abs(R).max()
    # ... and they are independent
    assert np.linalg.matrix_rank(R) == 6


def test_small_plate_mass_and_rigid_modes():
    p = PlateParams(nx=6, ny=4)
    m = aluminium_plate(p)
    R = plate_rigid_body_modes(m)
    mass = p.density_kg_m3 * p.thickness_m * p.length_m * p.width_m
    for j in (0, 3, 4):                       # translation normal to the plate, along x, along y
        assert R[:, j] @ (m.M @ R[:, j]) == pytest.approx(mass, rel=1e-12)
    omega, _ = free_modes(m.M, m.K, 9)
    assert np.sum(omega == 0.0) == 6 and omega[6] > 2 * math.pi * 50
    # Rayleigh damping D = a M + b K
    d = rayleigh(m.M, m.K, 2.0, 1e-5)
    assert abs(d - (2.0 * m.M + 1e-5 * m.K)).max() == 0.0
    assert abs(m.D - (p.rayleigh_a * m.M + p.rayleigh_b * m.K)).max() == 0.0


def test_simply_supported_plate_converges_to_kirchhoff_frequency():
    # omega_11 = pi^2 (1/a^2 + 1/b^2) sqrt(D / rho h); the Morley element converges from below, O(h^2)
    errs = []
    for n in (8, 16):
        p = PlateParams(nx=n, ny=n, support="simply_supported", points_m=((0.2, 0.15), (0.35, 0.2), (0.45, 0.3)))
        m = aluminium_plate(p)
        omega, _ = free_modes(m.M, m.K, 1)
        w11 = math.pi ** 2 * (1 / p.length_m ** 2 + 1 / p.width_m ** 2) * math.sqrt(
            m.info["bending_rigidity"] / (p.density_kg_m3 * p.thickness_m))
        errs.append(omega[0] / w11 - 1.0)
    assert -0.02 < errs[1] < 0.0               # 16 x 16: within 2 %
    assert 3.0 < errs[0] / errs[1] < 5.0       # halving h quarters the error
    with pytest.raises(ValueError):
        aluminium_plate(PlateParams(nx=4, ny=4, support="simply_supported", points_m=((0.0, 0.1),) * 3))


def test_npz_and_matrix_market_round_trip(tmp_path):
    b = cantilever_beam(BeamParams(n_elements=5))
    save_npz(b, tmp_path / "beam.npz")
    r = load_npz(tmp_path / "beam.npz")
    for key in ("M", "K", "D", "G"):
        assert abs(sp.csc_matrix(getattr(r, key)) - sp.csc_matrix(getattr(b, key))).max() == 0.0
    np.savez(tmp_path / "dense.npz", M=b.M.toarray(), K=b.K.toarray())
    d = load_npz(tmp_path / "dense.npz", io_dofs=[8])
    assert d.D.nnz == 0 and (d.G @ np.arange(d.n_dof))[0] == 8
    scipy.io.mmwrite(tmp_path / "m.mtx", b.M)
    scipy.io.mmwrite(tmp_path / "k.mtx", b.K)
    x = load_mtx(tmp_path / "m.mtx", tmp_path / "k.mtx", io_dofs=[8])
    assert abs(x.K - b.K).max() < 1e-9 * abs(b.K).max()
    with pytest.raises(ValueError):
        load_npz(tmp_path / "dense.npz")       # neither G nor io_dofs
    scipy.io.mmwrite(tmp_path / "k_other.mtx", cantilever_beam(BeamParams(n_elements=6)).K)
    with pytest.raises(ValueError):
        load_mtx(tmp_path / "m.mtx", tmp_path / "k_other.mtx", io_dofs=[8])   # M and K of different sizes
    assert isinstance(x, FEModel) and x.n_int == 1
