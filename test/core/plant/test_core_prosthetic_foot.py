"""Simulated prosthetic foot (Insam 2022 §16.2, appendix C): k_f = 4950 N/m linear limit, progressive and
angle-dependent stiffness (stiff forefoot), roll-over CoP, bounded friction, no force in flight."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.models.gait.interface import GaitInterface, GaitInterfaceParams, rot_z
from rths_ros.core.plant.prosthetic_foot import ProstheticFoot, ProstheticFootParams
from rths_ros.params import ParameterError, build

K_F = 4950.0   # N/m, §16.2
H0F = 0.16


@pytest.fixture(scope="module")
def foot():
    return ProstheticFoot()


@pytest.fixture(scope="module")
def bare():
    """Weightless foot: the wrench is the ground reaction alone."""
    return ProstheticFoot(ProstheticFootParams(foot_mass_kg=0.0))


def pitched_pose(foot, alpha_deg, compression):
    """Foot pitched for the shank angle alpha, pushed ``compression`` along the shank past first contact."""
    R = rot_z(math.pi / 2 - math.radians(alpha_deg))
    y_low = float(np.min((R @ foot.sole_points)[1]))
    return R, np.array([0.0, -y_low, 0.0]) - compression * R[:, 1]


def test_linear_limit_is_k_f(bare):
    # fig. C.1 approximated by k_f = 4950 N/m: at foot flat and small compression the foot is that spring
    d = np.array([1e-5, 1e-4, 1e-3])   # linear up to the first toe point (1.1 mm toe rise)
    f = bare.loading_curve(math.pi / 2, d)
    assert f / d == pytest.approx(K_F, rel=2e-3)
    # the same through the interface, with 7 deg toe-out and the sensor frame: f_parallel = -k_f * delta
    gi = GaitInterface(GaitInterfaceParams(payload_mass_kg=0.0))
    q = np.array([0.0, H0F - 1e-4, math.pi / 2])
    w = bare.wrench_of_state(gi.foot_state(q, np.zeros(3)))
    sw = gi.sagittal_wrench(w, q[2], gi.tcp_pose(q))
    assert sw.f_parallel == pytest.approx(-K_F * 1e-4, rel=2e-3)
    assert abs(sw.f_perp) < 1e-9


def test_stiffness_is_progressive(bare):
    d = np.array([0.005, 0.01, 0.02, 0.03, 0.04])
    for a in (80.0, 90.0, 100.0):
        f = bare.loading_curve(math.radians(a), d)
        secant = f / d
        assert np.all(np.diff(secant) > 0.0), a          # hardening: the secant stiffness grows
    assert bare.loading_curve(math.pi / 2, [0.03])[0] / 0.03 > 1.5 * K_F


def test_secant_stiffness_is_the_linear_spring_with_the_same_compression(bare):
    assert bare.secant_stiffness(3.0, d_max_m=0.001, n=1000) == pytest.approx(K_F, rel=5e-3)   # linear range
    k = bare.secant_stiffness(294.3)                        # one body weight of the 30 kg walker
    d = 294.3 / k
    assert bare.loading_curve(math.pi / 2, [d])[0] == pytest.approx(294.3, rel=0.02)
    assert k > 1.5 * K_F                                   # hardening: stiffer than the small-load k_f
    assert bare.secant_stiffness(600.0) > k


def test_heel_soft_forefoot_stiff(bare):
    # appendix C: alpha < 90 deg loads the heel, > 90 deg the forefoot; the forefoot is relatively stiff
    d = np.array([0.01, 0.02, 0.03])
    for tilt in (5.0, 10.0, 15.0):
        heel = bare.loading_curve(math.radians(90.0 - tilt), d)
        fore = bare.loading_curve(math.radians(90.0 + tilt), d)
        assert np.all(fore > 1.5 * heel), tilt
        # tilting away from foot flat softens the first millimetres (smaller initial contact patch)
        flat = bare.loading_curve(math.pi / 2, d)
        assert np.all(heel < flat) and np.all(fore < flat)


def test_roll_over_moves_the_cop_heel_to_toe(bare):
    cops = []
    for a in np.linspace(75.0, 105.0, 13):
        R, p = pitched_pose(bare, a, 0.02)
        bare.wrench(R, p, np.zeros(3), np.zeros(3), np.eye(3), np.zeros(3), np.zeros(3))
        c = bare.contact
        assert c.normal_force_n > 0.0
        x_fp = p[0] - p[1] * R[0, 1] / R[1, 1]            # leg axis (shank) meets the ground: mid-foot point
        cops.append(c.cop_x_m - x_fp)                     # the thesis plots x_CoP - x_FP (fig. 17.1d)
    cops = np.array(cops)
    assert np.all(np.diff(cops) > 0.0)
    assert cops[0] < -0.03 and cops[-1] > 0.12            # heel region at TD (75 deg), toe region at TO (105 deg)
    assert -0.06 <= cops[0] and cops[-1] <= 0.19          # inside the sole (l_h = 0.06 m, l_ff = 0.19 m)


@pytest.mark.parametrize("speed", [1e-3, 0.005, 0.05, 1.0])
def test_friction_bounded_and_opposing_slip(bare, speed):
    mu = bare.params.friction_coefficient
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.uniform(80.0, 100.0)
        R, p = pitched_pose(bare, a, rng.uniform(0.005, 0.03))
        direction = rng.normal(size=3)
        direction[1] = 0.0
        v = speed * direction / np.linalg.norm(direction)
        w = bare.wrench(np.eye(3) @ R, p, v, np.zeros(3), R.T, np.zeros(3), np.zeros(3))  # R_fs = R^T: S = G axes
        c = bare.contact
        tang = math.hypot(w[0], w[2])
        assert tang == pytest.approx(c.tangential_force_n, rel=1e-12)
        assert tang <= mu * c.normal_force_n * (1.0 + 1e-12)
        assert w[0] * v[0] + w[2] * v[2] < 0.0            # opposes the slip
        if speed >= 1.0:                                  # fully sliding: Coulomb limit reached
            assert tang == pytest.approx(mu * c.normal_force_n, rel=1e-9)
        # pure translation: each point slides with v, so tangential = mu N tanh(|v|/v_s)
        assert tang == pytest.approx(mu * c.normal_force_n * math.tanh(speed / bare.params.slip_velocity_m_per_s),
                                     rel=1e-9)


def test_no_force_in_flight(foot, bare):
    gi = GaitInterface()
    rng = np.random.default_rng(5)
    for _ in range(30):
        a = math.radians(rng.uniform(65.0, 115.0))
        q = np.array([rng.uniform(-0.1, 0.1), 0.0, a])
        # lift the foot until the lowest sole point is 1 mm above the plate
        R = gi.foot_pose(q).rotation
        q[1] = 1e-3 - float(np.min((R @ foot.sole_points)[1]))
        st = gi.foot_state(q, rng.uniform(-1, 1, 3))
        assert np.all(bare.wrench_of_state(st) == 0.0)
        assert bare.contact.n_contact == 0 and math.isnan(bare.contact.cop_x_m)
        # with the foot's weight the sensor reads the weight only; the interface removes it (matching payload)
        sw = gi.sagittal_wrench(foot.wrench_of_state(st), a, gi.tcp_pose(q))
        assert (sw.f_x, sw.f_y, sw.f_lateral, sw.m_z) == pytest.approx((0.0, 0.0, 0.0, 0.0), abs=1e-12)


def test_damping_never_pulls(bare):
    R, p = pitched_pose(bare, 90.0, 1e-3)
    bare.wrench(R, p, np.array([0.0, 2.0, 0.0]), np.zeros(3), np.eye(3), np.zeros(3), np.zeros(3))
    assert bare.contact.normal_force_n == 0.0             # leaving fast: the damper would pull, clipped to 0
    bare.wrench(R, p, np.array([0.0, -0.1, 0.0]), np.zeros(3), np.eye(3), np.zeros(3), np.zeros(3))
    n_static = K_F * 1e-3
    assert bare.contact.normal_force_n == pytest.approx(n_static * (1.0 + 0.1 * 0.002 / 1e-3), rel=1e-3)


def test_wrench_cop_matches_true_cop_through_the_interface(foot):
    gi = GaitInterface()
    rng = np.random.default_rng(11)
    for _ in range(20):
        a = rng.uniform(80.0, 100.0)
        x_ref = rng.uniform(0.0, 1.0)
        y = H0F - rng.uniform(0.005, 0.02)
        q = np.array([-y / math.tan(math.radians(a)) + x_ref, y, math.radians(a)])
        qd = rng.uniform(-0.05, 0.05, 3)
        st = gi.foot_state(q, qd, x_ref)
        w = foot.wrench_of_state(st)
        c = foot.contact
        sw = gi.sagittal_wrench(w, q[2], gi.tcp_pose(q, x_ref), x_ref_m=x_ref)
        assert sw.f_y == pytest.approx(c.normal_force_n, rel=1e-12)
        assert sw.cop_x == pytest.approx(c.cop_x_m + x_ref, abs=1e-9)
        assert sw.cop_z == pytest.approx(c.cop_z_m, abs=1e-9)


def test_parameters():
    with pytest.raises(ParameterError, match="k_f_n_per_m"):
        build(ProstheticFootParams, {"k_f_n_per_m": -1.0})
    with pytest.raises(ParameterError, match="friction_coefficient"):
        build(ProstheticFootParams, {"friction_coefficient": 5.0})
    f = ProstheticFoot(build(ProstheticFootParams, {"k_f_n_per_m": 9000.0, "forefoot_stiffness_ratio": 1.0,
                                                    "toe_spring_m": 0.0}))
    # uniform flat sole: every point carries k_f / (n - 1) except the half-weight ends
    k = f.point_stiffness
    assert k.sum() == pytest.approx(9000.0) and k[1] == pytest.approx(2 * k[0])
