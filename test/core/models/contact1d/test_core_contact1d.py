"""1-D contact test of Insam 2022 Part I: integrator, numerical substructure, reference solution.

Numbers: thesis Table A.2  (touch-down 1.216 s,
lift-off 2.782 s for d_NUM = 50 kg/s and 2.775 s for 200 kg/s, min z -12.70 mm,
peak contact force 23.35 N / 23.25 N).
"""
import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from rths_ros.core.models.contact1d.model import (
    Contact1DParams,
    NumericalMSD,
    contact_events,
    reference_solution,
    suspension,
)
from rths_ros.core.numerics.integrators import DOP853, RK4, AffineHarmonicRK, erk_step, integrate_fixed
from rths_ros.params import ParameterError, build

G_EXP = 0.38 * 9.81


# --------------------------------------------------------------------------------------
# integrator
# --------------------------------------------------------------------------------------
def test_dop853_tableau_is_consistent():
    assert DOP853.stages == 12 and DOP853.order == 8
    assert DOP853.b.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(DOP853.a.sum(axis=1), DOP853.c, atol=1e-14)
    assert np.all(np.triu(DOP853.a) == 0.0)


@pytest.mark.parametrize("tableau, lo, hi", [(DOP853, 2 ** 8 * 0.6, 2 ** 8 * 1.6), (RK4, 2 ** 4 * 0.8, 2 ** 4 * 1.2)])
def test_fixed_step_convergence_order(tableau, lo, hi):
    """Halving the step divides the global error by 2**order (harmonic oscillator, exact by expm)."""
    A = np.array([[0.0, 1.0], [-1.0, -0.1]])
    y0 = np.array([1.0, 0.0])
    T = 8.0
    exact = expm(A * T) @ y0
    errs = []
    for n in (20, 40):
        ys = integrate_fixed(lambda t, y: A @ y, 0.0, y0, T / n, n, tableau)
        errs.append(np.abs(ys[-1] - exact).max())
    assert lo < errs[0] / errs[1] < hi


def test_affine_harmonic_kernel_matches_generic_step_and_exact_solution():
    """The numba kernel equals the generic RK step and the exact (augmented expm) solution."""
    A = np.array([[0.0, 1.0], [-1e4 / 9.62, -50.0 / 9.62]])
    b = np.array([0.0, -0.3])
    c = np.array([0.0, 2.0])
    s = np.array([0.0, -0.7])
    w = 2.0 * math.pi * 0.25
    rk = AffineHarmonicRK(A, b, c, s, w)
    fun = lambda t, y: A @ y + b + c * math.cos(w * t) + s * math.sin(w * t)
    y = np.array([1e-3, -2e-2])
    t, h = 0.37, 1e-3
    np.testing.assert_allclose(rk.step(t, y, h), erk_step(fun, t, y, h), rtol=0, atol=1e-16)
    # exact: augmented state [y, 1, cos, sin]
    M = np.zeros((5, 5))
    M[:2, :2], M[:2, 2], M[:2, 3], M[:2, 4] = A, b, c, s
    M[3, 4], M[4, 3] = -w, w
    ya = np.r_[y, 1.0, math.cos(w * t), math.sin(w * t)]
    yy = y.copy()
    for i in range(1000):
        yy = rk.step(t + i * h, yy, h).copy()
    exact = expm(M * 1.0) @ ya
    np.testing.assert_allclose(yy, exact[:2], rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------
# parameters and suspension
# --------------------------------------------------------------------------------------
def test_params_defaults_are_table_a2():
    p = Contact1DParams()
    assert (p.m_num_kg, p.k_num_n_per_m, p.d_num_kg_per_s) == (9.62, 1e4, 200.0)
    assert (p.h0_m, p.dz_max_m, p.f_d_hz, p.l0_m) == (0.01, 0.005, 0.25, 0.071)
    assert (p.m_exp_kg, p.k_exp_n_per_m, p.g_m_per_s2, p.dt_s) == (0.38, 8650.0, 9.81, 0.001)
    assert (p.ground_stiffness_n_per_m, p.ground_damping_kg_per_s) == (1e9, 500.0)
    assert p.external_force_num_n == pytest.approx(10.0 * 9.81)
    assert p.test_duration_s == 4.0


def test_params_ranges():
    assert build(Contact1DParams, {"d_num_kg_per_s": -1000}).d_num_kg_per_s == -1000.0
    with pytest.raises(ParameterError, match="d_num_kg_per_s"):
        build(Contact1DParams, {"d_num_kg_per_s": -1001.0})
    with pytest.raises(ParameterError, match="reference_gate"):
        build(Contact1DParams, {"reference_gate": "always"})
    with pytest.raises(ParameterError, match="dt_s"):
        build(Contact1DParams, {"dt_s": 0.05, "f_d_hz": 2.0})


def test_suspension_one_minus_cos():
    p = Contact1DParams()
    assert suspension(p, 0.0) == (0.0, 0.0)
    zd, zdd = suspension(p, 2.0)                       # half period: lowest point
    assert zd == pytest.approx(-(0.01 + 0.005)) and zdd == pytest.approx(0.0, abs=1e-15)
    zd, zdd = suspension(p, 1.0)
    assert zd == pytest.approx(-0.0075) and zdd == pytest.approx(-0.0075 * 2 * math.pi * 0.25)
    t = np.array([0.0, 1.0, 4.0])
    zd, _ = suspension(p, t)
    np.testing.assert_allclose(zd, [0.0, -0.0075, 0.0], atol=1e-15)


# --------------------------------------------------------------------------------------
# numerical substructure
# --------------------------------------------------------------------------------------
def test_rest_stays_at_rest_with_hanging_weight():
    p = Contact1DParams(h0_m=0.0, dz_max_m=0.0)          # no suspension motion
    msd = NumericalMSD(p)
    assert msd.acceleration(G_EXP) == pytest.approx(0.0, abs=1e-12)
    for _ in range(500):
        z, zd = msd.step(G_EXP)
    assert abs(z) < 1e-15 and abs(zd) < 1e-15
    assert msd.k == 500 and msd.t == pytest.approx(0.5)


def test_larger_interface_force_pushes_numerical_mass_down():
    """m_NUM feels -F_int: +1 N of spring tension settles at z = -1 N / k_NUM."""
    p = Contact1DParams(h0_m=0.0, dz_max_m=0.0)
    msd = NumericalMSD(p)
    z, _ = msd.step(G_EXP + 1.0)
    assert z < 0.0
    for _ in range(3000):
        z, zd = msd.step(G_EXP + 1.0)
    assert z == pytest.approx(-1.0 / 1e4, rel=1e-6)
    msd.reset()
    for _ in range(3000):
        z, _ = msd.step(G_EXP - 1.0)
    assert z == pytest.approx(+1.0 / 1e4, rel=1e-6)


@pytest.mark.parametrize("d", [50.0, 200.0])
def test_flight_phase_matches_scipy_dop853(d):
    """Fixed-step ode8-class integration vs solve_ivp(DOP853, rtol=1e-12) over one test."""
    p = Contact1DParams(d_num_kg_per_s=d)
    msd = NumericalMSD(p)
    n = 4000
    z = np.zeros((n + 1, 2))
    for i in range(n):
        z[i + 1] = msd.step(p.flight_force_n)

    def f(t, s):
        zd, zdd = suspension(p, t)
        return [s[1], (p.k_num_n_per_m * (zd - s[0]) + p.d_num_kg_per_s * (zdd - s[1])) / p.m_num_kg]

    t = np.arange(n + 1) * p.dt_s
    sol = solve_ivp(f, (0.0, t[-1]), [0.0, 0.0], method="DOP853", rtol=1e-12, atol=1e-15, t_eval=t)
    assert np.abs(sol.y[0] - z[:, 0]).max() < 1e-11           # z amplitude is 7.5e-3 m
    assert np.abs(sol.y[1] - z[:, 1]).max() < 1e-10
    assert z[:, 0].min() == pytest.approx(-0.015, rel=0.01)   # follows the suspension


def test_step_holds_force_constant_over_the_step():
    p = Contact1DParams(d_num_kg_per_s=50.0)
    msd = NumericalMSD(p)
    msd.set_state(-0.004, 0.003, k=1234)
    assert msd.t == pytest.approx(1.234)
    f_int = 7.5

    def f(t, s):
        zd, zdd = suspension(p, t)
        return [s[1], (p.k_num_n_per_m * (zd - s[0]) + p.d_num_kg_per_s * (zdd - s[1]) + G_EXP - f_int)
                / p.m_num_kg]

    sol = solve_ivp(f, (1.234, 1.235), [-0.004, 0.003], method="DOP853", rtol=1e-13, atol=1e-16)
    z, zd = msd.step(f_int)
    assert z == pytest.approx(sol.y[0, -1], abs=1e-14)
    assert zd == pytest.approx(sol.y[1, -1], abs=1e-12)
    assert (msd.k, msd.position, msd.velocity) == (1235, z, zd)


def test_reset_restores_rest_and_run_is_deterministic():
    msd = NumericalMSD(Contact1DParams(d_num_kg_per_s=50.0))
    forces = G_EXP + np.sin(np.arange(300) * 0.05)
    first = [msd.step(f) for f in forces]
    msd.reset()
    assert (msd.k, msd.t, msd.position, msd.velocity) == (0, 0.0, 0.0, 0.0)
    second = [msd.step(f) for f in forces]
    assert first == second


# --------------------------------------------------------------------------------------
# reference solution
# --------------------------------------------------------------------------------------
# App. V.2: (d_NUM, lift-off s, min z mm, peak contact force N)
REFERENCE = [(50.0, 2.782, -12.699, 23.35), (200.0, 2.775, -12.688, 23.25)]


@pytest.mark.parametrize("d, t_lo, zmin_mm, f_peak", REFERENCE)
def test_reference_solution_reproduces_thesis_numbers(d, t_lo, zmin_mm, f_peak):
    r = reference_solution(Contact1DParams(d_num_kg_per_s=d))
    assert r["touchdown_s"] == pytest.approx(1.216, rel=0.01)
    assert r["touchdown_s"] == pytest.approx(1.216, abs=1e-3)
    assert r["liftoff_s"] == pytest.approx(t_lo, rel=0.01)
    assert r["liftoff_s"] == pytest.approx(t_lo, abs=1e-3)
    assert r["min_z_m"] * 1e3 == pytest.approx(-12.70, rel=0.01)
    assert r["min_z_m"] * 1e3 == pytest.approx(zmin_mm, abs=0.01)
    assert r["peak_contact_force_n"] == pytest.approx(f_peak, rel=0.01)
    assert r["peak_contact_force_n"] == pytest.approx(23.3, rel=0.01)
    assert r["t"].shape == (4001,) and r["t"][-1] == pytest.approx(4.0)
    # the sampled gate gives the same events to one sample
    td, lo = contact_events(r["t"], r["contact"])
    assert td == pytest.approx(r["touchdown_s"], abs=1e-3) and lo == pytest.approx(r["liftoff_s"], abs=1e-3)


@pytest.mark.parametrize("d", [50.0, 200.0])
def test_reference_solution_matches_sticking_unilateral_spring(d):
    """With the contact-phase gate, penalty contact ~ mass sticking at the ground."""
    p = Contact1DParams(d_num_kg_per_s=d)
    r = reference_solution(p)

    def f(t, s):
        zd, zdd = suspension(p, t)
        return [s[1], (p.k_num_n_per_m * (zd - s[0]) + p.d_num_kg_per_s * (zdd - s[1])
                       + p.k_exp_n_per_m * max(0.0, -p.h0_m - s[0])) / p.m_num_kg]

    sol = solve_ivp(f, (0.0, 4.0), [0.0, 0.0], method="DOP853", rtol=1e-10, atol=1e-13, max_step=1e-3,
                    t_eval=r["t"])
    assert np.abs(sol.y[0] - r["z"]).max() < 5e-5          # < 0.4 % of the stroke


def test_reference_gating_and_contact_physics():
    p = Contact1DParams(d_num_kg_per_s=50.0)
    r = reference_solution(p)
    c = r["contact"]
    # force gating: exactly m_EXP g outside contact
    assert np.all(r["f_int"][~c] == p.flight_force_n)
    # one contiguous contact phase (rebounds after the impact do not open the gate)
    assert np.count_nonzero(np.diff(c.astype(int)) != 0) == 2
    assert r["n_impacts"] > 1                                # the penalty contact does rebound
    # non-adhesive ground; the mass rests on the ground (penetration N/k_g) when settled
    assert np.all(r["ground_force"] >= 0.0)
    k = int(np.argmin(r["z"]))
    pen = -p.h0_m - r["z_exp"][k]
    assert pen * p.ground_stiffness_n_per_m == pytest.approx(r["ground_force"][k], rel=0.02)
    assert r["ground_force"][k] == pytest.approx(p.flight_force_n - r["f_int"][k], rel=0.02)
    # before touch-down the numerical part sees exactly the flight force: NumericalMSD reproduces it
    msd = NumericalMSD(p)
    k_td = int(np.argmax(c))
    z = np.array([0.0] + [msd.step(p.flight_force_n)[0] for _ in range(k_td - 1)])
    assert np.abs(z - r["z"][:k_td]).max() < 1e-12
    # suspension output is the excitation
    np.testing.assert_allclose(r["z_d"], suspension(p, r["t"])[0])


def test_numerical_part_driven_by_reference_force_reproduces_reference():
    """Replaying the reference F_int (held per step) through NumericalMSD gives z^r (ZOH error only)."""
    p = Contact1DParams(d_num_kg_per_s=50.0)
    r = reference_solution(p)
    msd = NumericalMSD(p)
    z = np.array([0.0] + [msd.step(f)[0] for f in r["f_int"][:-1]])
    assert np.abs(z - r["z"]).max() < 2e-5


def test_ground_contact_gate_variant_chatters():
    """Gating on the instantaneous penalty force opens/closes the gate during the impact rebounds."""
    p = Contact1DParams(d_num_kg_per_s=50.0, reference_gate="ground_contact")
    r = reference_solution(p)
    assert r["touchdown_s"] == pytest.approx(1.216, abs=1e-3)
    assert r["liftoff_s"] - r["touchdown_s"] < 1e-3          # first rebound ends the first contact
    assert np.count_nonzero(np.diff(r["contact"].astype(int)) != 0) > 2


def test_reference_solution_is_cached_and_read_only():
    p = Contact1DParams(d_num_kg_per_s=200.0)
    r1 = reference_solution(p)
    r2 = reference_solution(p)
    assert r1["z"] is r2["z"]
    with pytest.raises(ValueError):
        r1["z"][0] = 1.0
    r3 = reference_solution(p, t_end_s=2.0)
    assert r3["t"].shape == (2001,)
    np.testing.assert_array_equal(r3["z"], r1["z"][:2001])


def test_no_contact_before_the_gap_is_closed():
    r = reference_solution(Contact1DParams(), t_end_s=1.0)
    assert not r["contact"].any()
    assert math.isnan(r["touchdown_s"]) and math.isnan(r["liftoff_s"])
    assert r["peak_contact_force_n"] == 0.0


def test_contact_events_edges():
    t = np.arange(8) * 0.5
    assert contact_events(t, [0, 0, 1, 1, 0, 1, 1, 0]) == (1.0, 2.0)
    assert contact_events(t, [1, 1, 0, 0, 0, 0, 0, 0]) == (0.0, 1.0)
    td, lo = contact_events(t, [0, 0, 0, 1, 1, 1, 1, 1])
    assert td == 1.5 and math.isnan(lo)
    assert all(math.isnan(v) for v in contact_events(t, np.zeros(8, bool)))
