"""3-DoF sagittal interface of the prosthetic-foot RTHS (Insam 2022 §16.1-16.2, ch. 17): command -> TCP pose with
7 deg toe-out -> leg lengths, measured wrench -> (F_par, F_perp, M), CoP, and the §16.2 limits."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from rths_ros.core.models.gait.interface import (
    GaitInterface,
    GaitInterfaceParams,
    WrenchLimitViolation,
    leg_unit_vectors,
    rot_x,
)
from rths_ros.core.platform.commander import LimitViolation
from rths_ros.core.platform.stewart import StewartGeometryParams, StewartKinematics
from rths_ros.params import ParameterError, build

H0F = 0.16  # h_0f, Table A.7


@pytest.fixture(scope="module")
def kin():
    return StewartKinematics()


@pytest.fixture(scope="module")
def gi(kin):
    # a non-zero sensor offset and a horizontal ankle offset make the transport terms visible
    p = build(GaitInterfaceParams, {"sensor_offset_m": [0.01, -0.02, 0.03], "ankle_offset_m": [0.005, 0.0, 0.1]})
    return GaitInterface(p, kin)


def stance_command(alpha_deg, y, dx=0.0):
    """IFP on the leg axis at height y above the foot point x_FP = 0 (plus dx)."""
    a = math.radians(alpha_deg)
    return np.array([-y / math.tan(a) + dx, y, a])


def pinocchio_sensor_wrench(gi, q, f_g, c_g, free_moment_g=None, x_ref=0.0):
    """Independent construction: force f_g (G axes) acting at point c_g on the foot plus a free moment,
    expressed as the wrench on the sensor (S axes, about the S origin) with pinocchio's SE3 action."""
    free_moment_g = np.zeros(3) if free_moment_g is None else free_moment_g
    T_g_s = gi.ground_pose.inverse() * gi.tcp_pose(q, x_ref) * pin.SE3(np.eye(3), np.array(gi.params.sensor_offset_m))
    f_at_c = pin.Force(np.asarray(f_g, float), np.asarray(free_moment_g, float))  # in a frame at c, G axes
    T_g_c = pin.SE3(np.eye(3), np.asarray(c_g, float))
    return (T_g_s.inverse() * T_g_c).act(f_at_c).vector


def weight_wrench(gi, q, x_ref=0.0):
    """Sensor wrench of the payload weight alone (what the sensor reads in flight)."""
    p = gi.params
    T_gf = gi.foot_pose(q, x_ref)
    com = T_gf.act(np.array(p.payload_com_foot_m))
    return pinocchio_sensor_wrench(gi, q, p.payload_mass_kg * gi.gravity_in_ground, com, x_ref=x_ref)


# ----------------------------------------------------------------------------------------------------------------
# geometry
# ----------------------------------------------------------------------------------------------------------------

def test_neutral_command_is_home(gi, kin):
    # foot flat (alpha = 90 deg), IFP h_0f above the reference foot point: platform at home
    q = np.array([0.3, H0F, math.pi / 2])
    pose = gi.tcp_pose(q, x_ref_m=0.3)
    assert pin.log6(kin.home_pose.inverse() * pose).vector == pytest.approx(np.zeros(6), abs=1e-12)
    b, bd = gi.leg_commands(q, np.zeros(3), x_ref_m=0.3)
    assert b == pytest.approx(kin.home_lengths, abs=1e-12)
    assert bd == pytest.approx(np.zeros(6), abs=1e-12)
    # the plate faces down: model +y (away from the ground) is world -Z
    assert gi.ground_pose.rotation @ np.array([0.0, 1.0, 0.0]) == pytest.approx([0.0, 0.0, -1.0], abs=1e-15)
    assert gi.gravity_in_ground == pytest.approx([0.0, 9.81, 0.0], abs=1e-12)


def test_toe_out_is_a_mounting_rotation(kin):
    for side, sign in (("right", 1.0), ("left", -1.0)):
        g = GaitInterface(GaitInterfaceParams(side=side), kin)
        q = np.array([0.0, H0F, math.pi / 2])
        x_foot = g.foot_pose(q).rotation[:, 0]
        # the toes point 7 deg outwards: towards +z (the walker's right) for the right foot
        assert math.degrees(math.atan2(x_foot[2], x_foot[0])) == pytest.approx(sign * 7.0, abs=1e-12)
        # the platform itself does not yaw: toe-out lives in the mount
        assert g.tcp_pose(q).rotation == pytest.approx(np.eye(3), abs=1e-12)
        # pitching the leg keeps the toe-out about the shank axis and rotates the TCP about the lateral axis only
        q2 = stance_command(80.0, 0.15)
        R = g.tcp_pose(q2).rotation
        assert R[:, 1] == pytest.approx([0.0, 1.0, 0.0], abs=1e-12)
        assert math.degrees(math.acos(R[0, 0])) == pytest.approx(10.0, abs=1e-9)
        Rf = g.foot_pose(q2).rotation
        assert Rf[:, 1] @ np.array([-math.cos(math.radians(80)), math.sin(math.radians(80)), 0.0]) == \
            pytest.approx(1.0, abs=1e-12)


def test_heel_down_at_touch_down_angle(gi):
    # alpha < 90 deg (foot ahead of the hip) lifts the toes: the heel is the lowest sole point
    T = gi.foot_pose(stance_command(75.0, H0F))
    heel = T.act(np.array([-0.06, -H0F, 0.0]))
    toe = T.act(np.array([0.19, -H0F, 0.0]))
    assert heel[1] < 0.0 < toe[1]


def test_round_trip_through_forward_kinematics(gi, kin):
    rng = np.random.default_rng(7)
    for _ in range(40):
        q = stance_command(rng.uniform(78.0, 102.0), rng.uniform(0.13, 0.17), rng.uniform(-0.02, 0.02))
        q[0] += 0.4
        qd = rng.uniform(-0.1, 0.1, 3)
        qd[2] = rng.uniform(-0.5, 0.5)
        b, bd = gi.leg_commands(q, qd, x_ref_m=0.4, check=False)
        q_a, qd_a = gi.achieved(b, bd, x_ref_m=0.4)
        assert q_a == pytest.approx(q, abs=1e-9)
        assert qd_a == pytest.approx(qd, abs=1e-9)
        # a reference point moving with the IFP (swing: x - x_ref held) leaves only the y and alpha rates
        b2, bd2 = gi.leg_commands(q, qd, x_ref_m=0.4, check=False, xd_ref_m_per_s=qd[0])
        _, bd_noslide = gi.leg_commands(q, np.array([0.0, qd[1], qd[2]]), x_ref_m=0.4, check=False)
        assert bd2 == pytest.approx(bd_noslide, abs=1e-12)
        assert gi.achieved(b2, bd2, x_ref_m=0.4, xd_ref_m_per_s=qd[0])[1] == pytest.approx(qd, abs=1e-9)
        # leg rates agree with a central difference of the inverse kinematics
        h = 1e-6
        bp, _ = gi.leg_commands(q + h * qd, qd, x_ref_m=0.4, check=False)
        bm, _ = gi.leg_commands(q - h * qd, qd, x_ref_m=0.4, check=False)
        assert bd == pytest.approx((bp - bm) / (2 * h), abs=1e-8)


def test_stance_workspace_fits_the_limits(gi):
    # the +-15 deg stance sweep (TD 75 deg, TO 105 deg) at a 2 cm compressed foot stays inside stroke and joints
    for a in np.linspace(75.0, 105.0, 13):
        gi.leg_commands(stance_command(a, H0F - 0.02), np.zeros(3))
    ang = gi.kinematics.joint_angles(gi.tcp_pose(stance_command(75.0, H0F - 0.02)))
    assert math.degrees(ang.max()) == pytest.approx(42.4, abs=0.5)      # close to the 45 deg limit


# ----------------------------------------------------------------------------------------------------------------
# loads
# ----------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha_deg", [78.0, 90.0, 101.0])
def test_force_along_the_leg_gives_f_parallel_only(gi, alpha_deg):
    q = stance_command(alpha_deg, 0.15)
    e, en = leg_unit_vectors(q[2])
    pose = gi.tcp_pose(q)
    # the ground pushes the foot towards the hip with 200 N, line of action = leg axis (through the IFP)
    f = np.array([-200.0 * e[0], -200.0 * e[1], 0.0])
    c = gi.foot_pose(q).act(np.array([0.0, -0.15, 0.0]))  # a point on the leg axis
    w = pinocchio_sensor_wrench(gi, q, f, c) + weight_wrench(gi, q)
    sw = gi.sagittal_wrench(w, q[2], pose)
    assert sw.f_parallel == pytest.approx(-200.0, abs=1e-9)     # negative in compression (eq. 16.1 sign)
    assert sw.f_perp == pytest.approx(0.0, abs=1e-9)
    assert sw.m_z == pytest.approx(0.0, abs=1e-9)
    assert sw.f_lateral == pytest.approx(0.0, abs=1e-9)
    # a force along e_perp at the IFP gives f_perp only
    a = gi.adapter_pose(q).translation
    w2 = pinocchio_sensor_wrench(gi, q, np.array([30.0 * en[0], 30.0 * en[1], 0.0]), a) + weight_wrench(gi, q)
    sw2 = gi.sagittal_wrench(w2, q[2], pose)
    assert (sw2.f_parallel, sw2.f_perp, sw2.m_z) == pytest.approx((0.0, 30.0, 0.0), abs=1e-9)


def test_moment_and_centre_of_pressure_of_a_known_wrench(gi):
    q = stance_command(95.0, 0.15)
    x_ref = 1.25
    q[0] += x_ref
    pose = gi.tcp_pose(q, x_ref)
    f = np.array([40.0, 250.0, -8.0])
    c = np.array([0.07, 0.0, 0.012])                     # on the plate, in G
    free = np.array([0.0, 0.4, 0.0])                     # free moment about the plate normal
    w = pinocchio_sensor_wrench(gi, q, f, c, free, x_ref) + weight_wrench(gi, q, x_ref)
    sw = gi.sagittal_wrench(w, q[2], pose, x_ref_m=x_ref)
    a = gi.adapter_pose(q, x_ref).translation
    # moment about the IFP = (c - a) x f (the free moment has no z part)
    assert sw.m_z == pytest.approx(np.cross(c - a, f)[2], abs=1e-9)
    assert (sw.f_x, sw.f_y, sw.f_lateral) == pytest.approx(tuple(f), abs=1e-9)
    assert sw.cop_x == pytest.approx(c[0] + x_ref, abs=1e-12)
    assert sw.cop_z == pytest.approx(c[2], abs=1e-12)
    # the planar formula x_CoP = x_IFP + (M - y_IFP F_x) / F_y of ch. 17
    assert gi.centre_of_pressure(sw.f_x, sw.f_y, sw.m_z, q[0], q[1]) == pytest.approx(c[0] + x_ref, abs=1e-12)
    # the thesis' M_int about -z: a CoP ahead of the IFP under a vertical load gives M_int < 0 here (m_z > 0)
    sw3 = gi.sagittal_wrench(pinocchio_sensor_wrench(gi, q, [0.0, 100.0, 0.0], [a[0] + 0.05, 0.0, 0.0], x_ref=x_ref)
                             + weight_wrench(gi, q, x_ref), q[2], pose, x_ref_m=x_ref)
    assert sw3.m_z == pytest.approx(5.0, abs=1e-9)
    # unloaded: CoP undefined
    sw0 = gi.sagittal_wrench(weight_wrench(gi, q, x_ref), q[2], pose, x_ref_m=x_ref)
    assert math.isnan(sw0.cop_x) and abs(sw0.f_y) < 1e-9 and abs(sw0.m_z) < 1e-9


# ----------------------------------------------------------------------------------------------------------------
# limits (§16.2)
# ----------------------------------------------------------------------------------------------------------------

def test_stroke_limit(gi):
    with pytest.raises(LimitViolation) as ei:
        gi.leg_commands(np.array([0.0, H0F - 0.15, math.pi / 2]), np.zeros(3))
    assert ei.value.quantity == "length" and "stroke" in str(ei.value)
    assert ei.value.value > ei.value.limit == pytest.approx(gi.kinematics.params.leg_length_max_m)
    gi.leg_commands(np.array([0.0, H0F - 0.15, math.pi / 2]), np.zeros(3), check=False)  # check off: no raise


def test_leg_velocity_limit_default_and_configured():
    kin25 = StewartKinematics()
    g25 = GaitInterface(None, kin25)
    q = np.array([0.0, H0F, math.pi / 2])
    qd = np.array([0.0, -0.3, 0.0])                     # 0.3 m/s towards the plate: every leg ~0.3 m/s
    with pytest.raises(LimitViolation) as ei:
        g25.leg_commands(q, qd)
    assert ei.value.quantity == "velocity" and ei.value.limit == 0.25 and abs(ei.value.value) > 0.25
    assert "0.2500 m/s" in str(ei.value)
    kin50 = StewartKinematics(StewartGeometryParams(leg_velocity_max_m_per_s=0.5))
    GaitInterface(None, kin50).leg_commands(q, qd)      # allowed with the hardware's 0.5 m/s
    with pytest.raises(ParameterError):
        build(StewartGeometryParams, {"leg_velocity_max_m_per_s": 0.6})


def test_joint_angle_limit(gi):
    with pytest.raises(LimitViolation) as ei:
        gi.leg_commands(stance_command(68.0, 0.2), np.zeros(3))
    assert "joint angle" in ei.value.quantity
    assert ei.value.value > math.radians(45.0) and ei.value.limit == pytest.approx(math.radians(45.0))


def test_sensor_and_frame_limits(gi):
    q = np.array([0.0, H0F, math.pi / 2])
    pose = gi.tcp_pose(q)
    base = weight_wrench(gi, q)
    w = base.copy()
    w[0] = 1.2e4
    with pytest.raises(WrenchLimitViolation) as ei:
        gi.sagittal_wrench(w, q[2], pose)
    assert ei.value.quantity == "FTS force Fx" and ei.value.value == 1.2e4 and ei.value.limit == 1e4
    assert isinstance(ei.value, LimitViolation) and ei.value.leg == 0
    w = base.copy()
    w[4] = -650.0
    with pytest.raises(WrenchLimitViolation) as ei:
        gi.sagittal_wrench(w, q[2], pose)
    assert ei.value.quantity == "FTS moment My" and "500 N m" in str(ei.value)
    # 520 N pressing the foot onto the plate: above the frame's 500 N, far below the sensor range
    w = base + pinocchio_sensor_wrench(gi, q, [0.0, 520.0, 0.0], [0.0, 0.0, 0.0])
    with pytest.raises(WrenchLimitViolation) as ei:
        gi.sagittal_wrench(w, q[2], pose)
    assert ei.value.quantity == "frame vertical load" and ei.value.value == pytest.approx(520.0)
    assert gi.sagittal_wrench(w, q[2], pose, check=False).normal_force == pytest.approx(520.0)
    w = base + pinocchio_sensor_wrench(gi, q, [0.0, 480.0, 0.0], [0.0, 0.0, 0.0])
    assert gi.sagittal_wrench(w, q[2], pose).f_parallel == pytest.approx(-480.0)


def test_parameter_validation():
    with pytest.raises(ParameterError, match="toe_out_deg"):
        build(GaitInterfaceParams, {"toe_out_deg": 45.0})
    with pytest.raises(ParameterError, match="side"):
        build(GaitInterfaceParams, {"side": "middle"})
    with pytest.raises(ParameterError, match="ankle_offset_m"):
        build(GaitInterfaceParams, {"ankle_offset_m": [0.0, 0.0, -0.1]})
    assert np.allclose(rot_x(-math.pi / 2) @ rot_x(math.pi / 2), np.eye(3))
