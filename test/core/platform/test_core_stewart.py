"""Stewart platform kinematics, interface mapping and leg command generation (Insam 2022 §4.2.1, §16.2)."""
import math

import numpy as np
import pinocchio as pin
import pytest

from rths_ros.core.platform.commander import (
    LegCommandArrays,
    LimitViolation,
    PlatformCommander,
    PlatformCommanderParams,
)
from rths_ros.core.platform.interface import InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.stewart import KinematicsError, StewartGeometryParams, StewartKinematics
from rths_ros.params import ParameterError, build

# documented test workspace around home: translations +-50 mm, rotation-vector components +-5 deg
WS_TRANS_M = 0.05
WS_ROT_RAD = math.radians(5.0)


@pytest.fixture(scope="module")
def kin():
    return StewartKinematics()


def random_pose(kin, rng):
    d = rng.uniform(-WS_TRANS_M, WS_TRANS_M, 3)
    r = rng.uniform(-WS_ROT_RAD, WS_ROT_RAD, 3)
    home = kin.home_pose
    return pin.SE3(pin.exp3(r), home.translation + d)


def pose_error(a, b):
    return float(np.linalg.norm(pin.log6(a.inverse() * b).vector))


# ----------------------------------------------------------------------------------------------------------------
# geometry and parameters
# ----------------------------------------------------------------------------------------------------------------

def test_home_geometry_matches_documented_choice(kin):
    p = kin.params
    home = kin.home_pose
    assert np.allclose(home.rotation, np.eye(3))
    # about 0.7 m height in the used configuration (Insam 2022 §4.2.1): TCP 0.70 m above the base joint plane
    assert home.translation == pytest.approx([0.0, 0.0, 0.70])
    # symmetric 6-6 layout: all home legs equal, about 0.70 m
    assert np.ptp(kin.home_lengths) < 1e-12
    assert kin.home_lengths[0] == pytest.approx(0.7012782, abs=1e-7)
    # stroke 0.18 m (Insam 2022 §16.2) centred on the home length within 0.1 mm
    assert p.leg_length_max_m - p.leg_length_min_m == pytest.approx(0.18, abs=1e-12)
    assert 0.5 * (p.leg_length_max_m + p.leg_length_min_m) == pytest.approx(kin.home_lengths[0], abs=1e-4)
    assert p.joint_angle_max_deg == 45.0
    assert p.leg_velocity_max_m_per_s == 0.25
    # joints on their circles; platform joints lie tcp_offset below the TCP
    assert np.allclose(np.hypot(*kin.base_joints[:2]), p.base_radius_m)
    assert np.allclose(np.hypot(*kin.platform_joints[:2]), p.platform_radius_m)
    assert np.allclose(kin.platform_joints[2], -p.tcp_offset_m)
    # the home joint deflection (leg vs plate normal) is 22.05 deg at both ends, well inside 45 deg
    ang = np.degrees(kin.joint_angles(home))
    assert np.allclose(ang, 22.0466, atol=1e-3)


def test_geometry_parameters_are_checked():
    with pytest.raises(ParameterError, match="leg_length_min_m"):
        build(StewartGeometryParams, {"leg_length_min_m": 0.72})  # above the home length 0.7013 m
    with pytest.raises(ParameterError, match="leg_velocity_max_m_per_s"):
        build(StewartGeometryParams, {"leg_velocity_max_m_per_s": 0.6})  # hardware maximum 0.5 m/s
    with pytest.raises(ParameterError, match="joint_angle_max_deg"):
        build(StewartGeometryParams, {"joint_angle_max_deg": 20.0})  # home already 22 deg
    with pytest.raises(ParameterError, match="leg_length_min_m"):
        StewartKinematics(StewartGeometryParams(leg_length_min_m=0.80, leg_length_max_m=0.79))
    ok = build(StewartGeometryParams, {"leg_velocity_max_m_per_s": 0.5})
    assert ok.leg_velocity_max_m_per_s == 0.5


# ----------------------------------------------------------------------------------------------------------------
# inverse / forward kinematics
# ----------------------------------------------------------------------------------------------------------------

def test_inverse_matches_leg_vector_definition(kin):
    rng = np.random.default_rng(1)
    a, p = kin.base_joints, kin.platform_joints
    for _ in range(20):
        M = random_pose(kin, rng)
        expected = np.linalg.norm(M.translation[:, None] + M.rotation @ p - a, axis=0)
        assert np.allclose(kin.inverse(M), expected, atol=1e-15, rtol=0)
        out = np.zeros(6)
        assert kin.inverse_into(M, out) is out
        assert np.array_equal(out, kin.inverse(M))


def test_ik_fk_round_trip_over_workspace(kin):
    rng = np.random.default_rng(2)
    for _ in range(300):
        M = random_pose(kin, rng)
        b = kin.inverse(M)
        # cold start from home
        M1 = kin.forward(b, guess=kin.home_pose)
        assert np.linalg.norm(M1.translation - M.translation) < 1e-9
        assert np.linalg.norm(pin.log3(M1.rotation.T @ M.rotation)) < 1e-9
        assert np.abs(kin.inverse(M1) - b).max() < 1e-12
        assert np.abs(M1.rotation.T @ M1.rotation - np.eye(3)).max() < 1e-14


def test_fk_warm_start_follows_a_1khz_trajectory_in_few_iterations(kin):
    # 6-DoF sinusoids (30 mm, 3 deg, 0.5-2 Hz) sampled at 1 kHz; each FK starts from the previous solution
    t = np.arange(2000) * 1e-3
    amp = np.array([0.03, 0.03, 0.03, *np.radians([3.0, 3.0, 3.0])])
    f = np.array([0.5, 0.7, 1.0, 1.3, 1.7, 2.0])
    home = kin.home_pose
    prev = home
    iters = []
    for tk in t:
        x = amp * np.sin(2 * np.pi * f * tk)
        M = pin.SE3(pin.exp3(x[3:]), home.translation + x[:3])
        Mf = kin.forward(kin.inverse(M), guess=prev)
        iters.append(kin.last_iterations)
        assert pose_error(Mf, M) < 1e-9
        prev = Mf
    assert max(iters) <= 2
    # default guess = this object's previous result
    kin.forward(kin.inverse(home), guess=home)
    M = pin.SE3(np.eye(3), home.translation + [0.0, 0.0, 1e-4])
    kin.forward(kin.inverse(M))
    assert kin.last_iterations <= 2


def test_fk_rejects_unreachable_lengths(kin):
    with pytest.raises(KinematicsError, match="did not converge"):
        kin.forward(np.array([0.3, 1.2, 0.3, 1.2, 0.3, 1.2]), guess=kin.home_pose)


def test_jacobian_matches_finite_differences_of_body_twist(kin):
    rng = np.random.default_rng(3)
    h = 1e-6
    for _ in range(20):
        M = random_pose(kin, rng)
        J = kin.jacobian(M)
        Jfd = np.zeros((6, 6))
        for j in range(6):
            e = np.zeros(6)
            e[j] = h
            Jfd[:, j] = (kin.inverse(M * pin.exp6(e)) - kin.inverse(M * pin.exp6(-e))) / (2 * h)
        assert np.abs(J - Jfd).max() < 1e-8
        out = np.zeros((6, 6))
        assert np.array_equal(kin.jacobian_into(M, out), J)
    # at home a pure +Z body velocity lengthens every leg by cos(leg tilt)
    Jh = kin.jacobian(kin.home_pose)
    assert np.allclose(Jh[:, 2], kin.params.home_height_m / kin.home_lengths[0], atol=1e-15)
    assert math.degrees(math.acos(Jh[0, 2])) == pytest.approx(22.0466, abs=1e-4)


# ----------------------------------------------------------------------------------------------------------------
# interface mapping
# ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mount,sign", [("upside_down", -1.0), ("upright", +1.0)])
def test_1d_z_moves_platform_along_world_z_with_mount_sign(kin, mount, sign):
    m = InterfaceMap(InterfaceMapParams(dofs=("z",), mount=mount), kin)
    home = kin.home_pose
    for z in (-0.015, -0.01, 0.005, 0.02):
        M = m.to_platform([z])
        assert np.allclose(M.rotation, np.eye(3), atol=0, rtol=0)
        assert M.translation == pytest.approx(home.translation + [0.0, 0.0, sign * z], abs=1e-15)
        b, _ = m.leg_commands([z], [0.0])
        db = b - kin.home_lengths
        # all six legs change, all in the direction of the platform motion (symmetric layout: equally)
        assert np.all(np.abs(db) > 0.8 * abs(z))
        assert np.all(np.sign(db) == np.sign(sign * z))
        assert np.ptp(db) < 1e-12


def test_contact_test_sign_convention(kin):
    # fast-path contract: interface z down (towards contact) -> platform up by p = -z, towards the fixed plate
    m = InterfaceMap(InterfaceMapParams(), kin)
    M = m.to_platform([-0.01])
    assert M.translation[2] - kin.home_pose.translation[2] == pytest.approx(0.01, abs=1e-15)
    b, bd = m.leg_commands([-0.01], [-0.05])
    assert np.all(b > kin.home_lengths) and np.all(bd > 0)


def test_upside_down_mount_maps_axes_by_180_deg_about_x(kin):
    dofs = ("x", "y", "z", "rx", "ry", "rz")
    m = InterfaceMap(InterfaceMapParams(dofs=dofs, mount="upside_down"), kin)
    home = kin.home_pose
    for k, (dt, rot_axis, s) in enumerate([((1, 0, 0), None, 1), ((0, -1, 0), None, 1), ((0, 0, -1), None, 1),
                                           (None, 0, 1.0), (None, 1, -1.0), (None, 2, -1.0)]):
        q = np.zeros(6)
        q[k] = 0.02
        M = m.to_platform(q)
        if dt is not None:
            assert np.allclose(M.rotation, np.eye(3), atol=1e-15)
            assert np.allclose(M.translation - home.translation, 0.02 * np.array(dt), atol=1e-15)
        else:
            w = pin.log3(M.rotation)
            expected = np.zeros(3)
            expected[rot_axis] = s * 0.02
            assert np.allclose(w, expected, atol=1e-14)
            assert np.allclose(M.translation, home.translation, atol=1e-15)  # offset 0: rotation about the TCP


def test_specimen_offset_rotation_keeps_interface_point_fixed(kin):
    m = InterfaceMap(InterfaceMapParams(dofs=("rx", "ry", "rz"), specimen_offset_m=0.12), kin)
    point0 = kin.home_pose.act(np.array([0.0, 0.0, 0.12]))
    q = np.radians([3.0, -2.0, 4.0])
    M = m.to_platform(q)
    assert np.allclose(M.act(np.array([0.0, 0.0, 0.12])), point0, atol=1e-15)
    assert not np.allclose(M.translation, kin.home_pose.translation)
    assert np.allclose(m.from_platform(M), q, atol=1e-14)


def test_leg_rates_are_the_time_derivative_of_leg_lengths(kin):
    # bdot from J * V must equal d b(q(t)) / dt along a smooth 6-DoF interface trajectory
    dofs = ("x", "y", "z", "rx", "ry", "rz")
    for mount, off in (("upside_down", 0.1), ("upright", -0.03)):
        m = InterfaceMap(InterfaceMapParams(dofs=dofs, mount=mount, specimen_offset_m=off), kin)
        amp = np.array([0.02, 0.015, 0.03, 0.04, 0.05, 0.06])
        f = np.array([0.9, 1.1, 1.3, 0.7, 1.9, 1.5])

        def q_of(t, amp=amp, f=f):
            return amp * np.sin(2 * np.pi * f * t + 0.3), amp * 2 * np.pi * f * np.cos(2 * np.pi * f * t + 0.3)

        h = 1e-6
        for t in (0.05, 0.31, 0.77):
            q, qd = q_of(t)
            _, bd = m.leg_commands(q, qd)
            bp, _ = m.leg_commands(q_of(t + h)[0], np.zeros(6))
            bm, _ = m.leg_commands(q_of(t - h)[0], np.zeros(6))
            assert np.abs(bd - (bp - bm) / (2 * h)).max() < 1e-8


@pytest.mark.parametrize("dofs", [("z",), ("x", "z", "ry"), ("x", "y", "z", "rx", "ry", "rz")])
def test_achieved_inverts_leg_commands(kin, dofs):
    m = InterfaceMap(InterfaceMapParams(dofs=dofs, specimen_offset_m=0.08), kin)
    rng = np.random.default_rng(4)
    scale = np.array([0.03 if d in ("x", "y", "z") else math.radians(4.0) for d in dofs])
    for _ in range(30):
        q = rng.uniform(-1, 1, len(dofs)) * scale
        qd = rng.uniform(-1, 1, len(dofs)) * scale * 5.0
        b, bd = m.leg_commands(q, qd)
        q2, qd2 = m.achieved(b, bd)
        assert np.allclose(q2, q, atol=1e-12, rtol=0)
        assert np.allclose(qd2, qd, atol=1e-11, rtol=0)
    # the warm start is the previous achieved pose
    assert pose_error(m.last_achieved_pose, kin.forward(b, guess=kin.home_pose)) < 1e-12


def test_interface_params_are_checked(kin):
    with pytest.raises(ParameterError, match="dofs"):
        build(InterfaceMapParams, {"dofs": ["z", "w"]})
    with pytest.raises(ParameterError, match="dofs"):
        build(InterfaceMapParams, {"dofs": ["z", "z"]})
    with pytest.raises(ParameterError, match="mount"):
        build(InterfaceMapParams, {"mount": "sideways"})
    m = InterfaceMap(build(InterfaceMapParams, {"dofs": ["z"]}), kin)
    with pytest.raises(ValueError, match="expected 1 values"):
        m.to_platform([0.0, 0.0])


# ----------------------------------------------------------------------------------------------------------------
# platform commander
# ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("vff", [False, True])
def test_commander_outputs_and_velocity_feedforward(kin, vff):
    m = InterfaceMap(InterfaceMapParams(), kin)
    c = PlatformCommander(m, PlatformCommanderParams(vff=vff))
    out = LegCommandArrays()
    res = c.command([-0.012], [-0.04], out=out)
    assert res is out
    b, bd = m.leg_commands([-0.012], [-0.04])
    assert np.array_equal(out.length, b)
    assert np.array_equal(out.velocity, bd)
    # VFF (Insam 2022 §4.2.1): the desired leg velocity is added after the position controller
    assert np.array_equal(out.feedforward_velocity, bd if vff else np.zeros(6))
    assert np.array_equal(out.feedforward_position, np.zeros(6))
    assert np.all(bd > 0)  # interface moving down -> platform up -> legs extend
    internal = c.command([0.0], [0.0])
    assert internal is c.last
    assert np.allclose(internal.length, kin.home_lengths)
    c.reset()
    assert np.array_equal(c.last.length, kin.home_lengths)


def test_stroke_limit_raises_with_clear_message(kin):
    c = PlatformCommander(InterfaceMap(InterfaceMapParams(), kin))
    # the home length is 0.09 m from either stroke end; a pure Z motion changes each leg by cos(22.05 deg) * dz
    c.command([-0.095], [0.0])  # legs +0.0880 m: inside
    with pytest.raises(LimitViolation) as e:
        c.command([-0.10], [0.0])  # legs +0.0927 m: above 0.7913 m
    err = e.value
    assert err.leg == 1 and err.quantity == "length"
    assert err.limit == kin.params.leg_length_max_m and err.value > err.limit
    assert "leg 1" in str(err) and "length" in str(err) and "0.791300 m" in str(err) and f"{err.value:.6f}" in str(err)
    with pytest.raises(LimitViolation, match=r"leg 1: commanded length 0\.6\d+ m is below the minimum 0\.611300 m"):
        c.command([0.10], [0.0])
    # a tilt about X shortens and lengthens different legs: the first violating leg is named
    m6 = InterfaceMap(InterfaceMapParams(dofs=("rx",), mount="upright"), kin)
    c6 = PlatformCommander(m6)
    with pytest.raises(LimitViolation) as e:
        c6.command([math.radians(25.0)], [0.0])
    b, _ = m6.leg_commands([math.radians(25.0)], [0.0])
    first = int(np.flatnonzero((b < kin.params.leg_length_min_m) | (b > kin.params.leg_length_max_m))[0]) + 1
    assert e.value.leg == first and f"leg {first}:" in str(e.value)
    # no check when disabled
    c_off = PlatformCommander(InterfaceMap(InterfaceMapParams(), kin), PlatformCommanderParams(enforce_limits=False))
    assert c_off.command([-0.10], [0.0]).length.max() > kin.params.leg_length_max_m


def test_leg_speed_limit_raises_with_clear_message(kin):
    c = PlatformCommander(InterfaceMap(InterfaceMapParams(), kin))
    cos_tilt = kin.params.home_height_m / kin.home_lengths[0]  # cos of the home leg tilt (22.05 deg)
    v_ok = 0.249 / cos_tilt
    c.command([0.0], [v_ok])
    with pytest.raises(LimitViolation) as e:
        c.command([0.0], [0.26 / cos_tilt])
    assert e.value.quantity == "velocity" and e.value.limit == 0.25
    assert e.value.value == pytest.approx(-0.26, abs=1e-12)  # upside down: interface up -> legs shorten
    assert "leg 1: commanded velocity -0.260000 m/s exceeds the leg speed limit 0.2500 m/s" in str(e.value)
    # 0.5 m/s (hardware limit) allows it
    kin05 = StewartKinematics(StewartGeometryParams(leg_velocity_max_m_per_s=0.5))
    PlatformCommander(InterfaceMap(InterfaceMapParams(), kin05)).command([0.0], [0.26 / cos_tilt])


def test_joint_angle_limit_raises_with_clear_message():
    kin = StewartKinematics(StewartGeometryParams(joint_angle_max_deg=25.0))  # home deflection 22.05 deg
    c = PlatformCommander(InterfaceMap(InterfaceMapParams(dofs=("x",)), kin))
    c.command([0.005], [0.0])
    with pytest.raises(LimitViolation) as e:
        c.command([0.06], [0.0])
    ang = np.degrees(kin.joint_angles(c.map.last_platform_pose))
    assert e.value.quantity in ("base joint angle", "platform joint angle")
    assert e.value.limit == pytest.approx(math.radians(25.0))
    row = 0 if e.value.quantity.startswith("base") else 1
    assert ang[row, e.value.leg - 1] > 25.0
    assert "exceeds the universal joint limit 25.000 deg" in str(e.value)
    assert f"leg {e.value.leg}: {e.value.quantity} {ang[row, e.value.leg - 1]:.3f} deg" in str(e.value)


def test_a_second_kinematics_of_the_same_geometry_skips_the_warm_up_and_computes_the_same():
    """The kernels run once per geometry and process at construction; a later instance starts at home as the first
    did, and its forward / inverse kinematics give the first one's numbers bit for bit."""
    from rths_ros.core.platform import stewart as st
    g = st.StewartGeometryParams(home_height_m=st.StewartGeometryParams().home_height_m + 0.00123)
    st._WARMED.discard(g)
    first = st.StewartKinematics(g)
    assert g in st._WARMED
    second = st.StewartKinematics(g)
    for kin in (first, second):
        assert kin.last_iterations == 0 and np.array_equal(kin._fk_last.homogeneous, kin.home_pose.homogeneous)
    lengths = first.inverse(first.home_pose) + np.array([1e-3, -2e-3, 0.5e-3, 0.0, 1e-3, -1e-3])
    a, b = first.forward(lengths), second.forward(lengths)
    assert np.array_equal(a.homogeneous, b.homogeneous) and first.last_iterations == second.last_iterations


def test_the_gait_start_lengths_are_computed_once_per_parameters_and_each_caller_gets_a_copy():
    from rths_ros.app import scenario as scn
    from rths_ros.families.gait import family
    s = scn.load("gait_vpp", [])
    fresh = family.build_gait_platform(s).start_lengths.copy()
    one = family.gait_start_lengths(s)
    one[:] = 0.0                                            # a caller's copy: the cache is untouched
    two = family.gait_start_lengths(s)
    assert np.array_equal(two, fresh) and two is not one
    other = scn.load("gait_vpp", [f"platform.geometry.home_height_m={s.platform.geometry.home_height_m + 0.01}"])
    assert np.array_equal(family.gait_start_lengths(other), family.build_gait_platform(other).start_lengths)
    assert not np.array_equal(family.gait_start_lengths(other), fresh)
