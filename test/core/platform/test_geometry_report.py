"""Derived geometry of the hexapod (rths_ros/core/platform/geometry_report.py), explicit joint coordinates and the
refusal of inconsistent geometries (StewartGeometryParams.validate), checked against computations by hand."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
import yaml

from rths_ros.core.platform.geometry_report import geometry_report, limit_violation
from rths_ros.core.platform.interface import InterfaceMapParams
from rths_ros.core.platform.joints import segment_distance
from rths_ros.core.platform.stewart import StewartGeometryParams, StewartKinematics, joint_layout
from rths_ros.params import ParameterError, build, to_dict

UPRIGHT = InterfaceMapParams(mount="upright")
#: a second rig: other radii, half-angles, height, stroke, joint limit and TCP offset
SECOND = StewartGeometryParams(base_radius_m=0.5, platform_radius_m=0.3, base_joint_half_angle_deg=15.0,
                               platform_joint_half_angle_deg=20.0, home_height_m=0.6, leg_length_min_m=0.57,
                               leg_length_max_m=0.75, joint_angle_max_deg=40.0, tcp_offset_m=0.08)


def _offset(g: StewartGeometryParams) -> float:
    """Horizontal distance between the two joints of a leg at home (law of cosines: the joints are
    60 - beta - gamma degrees apart about z, on circles of the two radii)."""
    dphi = math.radians(60.0 - g.base_joint_half_angle_deg - g.platform_joint_half_angle_deg)
    return math.sqrt(g.base_radius_m ** 2 + g.platform_radius_m ** 2
                     - 2.0 * g.base_radius_m * g.platform_radius_m * math.cos(dphi))


def _hand_jacobian(a, p_plane, g, R=None, t=None):
    """Body Jacobian written out from its definition: row i = [R^T u_i, p_i x R^T u_i] (p_i in the TCP frame)."""
    R = np.eye(3) if R is None else R
    p_tcp = p_plane - np.array([[0.0], [0.0], [g.tcp_offset_m]])
    t = np.array([0.0, 0.0, g.home_height_m + g.tcp_offset_m]) if t is None else t
    rows = []
    for i in range(6):
        leg = t + R @ p_tcp[:, i] - a[:, i]
        w = R.T @ (leg / np.linalg.norm(leg))
        rows.append(np.concatenate([w, np.cross(p_tcp[:, i], w)]))
    return np.array(rows)


def _explicit(g: StewartGeometryParams, **changes) -> StewartGeometryParams:
    a, p = joint_layout(g)
    values = {k: v for k, v in to_dict(g).items() if k not in ("base_joints_m", "platform_joints_m")}
    values.update(base_joints_m=a.T.tolist(), platform_joints_m=p.T.tolist(), **changes)
    return build(StewartGeometryParams, values)


@pytest.fixture(scope="module")
def default_report():
    return geometry_report(StewartGeometryParams(), UPRIGHT, 0.05, 5.0, 0.005, samples_per_axis=3)


# ---------------------------------------------------------------------------------------------------------------
# home values against the joint coordinates by hand
# ---------------------------------------------------------------------------------------------------------------

def test_default_home_values_by_hand(default_report):
    r = default_report
    # leg 1 joins the base joint at -10 deg (r = 0.40 m) to the platform joint at -50 deg (r = 0.25 m), 0.65 m up
    a1 = np.array([0.40 * math.cos(math.radians(-10)), 0.40 * math.sin(math.radians(-10)), 0.0])
    p1 = np.array([0.25 * math.cos(math.radians(-50)), 0.25 * math.sin(math.radians(-50)), 0.65])
    length = float(np.linalg.norm(p1 - a1))
    assert length == pytest.approx(0.7012782, abs=1e-7)          # the documented 0.701278 m
    assert r.home_lengths_m == pytest.approx([length] * 6, abs=1e-12)
    tilt = math.degrees(math.acos(0.65 / length))
    assert tilt == pytest.approx(22.0466, abs=1e-4)
    assert r.joint_angles_home_deg == pytest.approx(np.full((2, 6), tilt), abs=1e-9)
    assert r.home_margins_m == pytest.approx((length - 0.6113, 0.7913 - length), abs=1e-12)
    assert r.home_tcp_m == pytest.approx([0.0, 0.0, 0.70])
    a, p = joint_layout(StewartGeometryParams())
    assert r.cond_home == pytest.approx(np.linalg.cond(_hand_jacobian(a, p, StewartGeometryParams())), rel=1e-12)
    assert r.cond_home == pytest.approx(10.11, abs=0.005)        # the documented value
    # closest joints: the two platform joints of a pair, 2 x 10 deg apart on the 0.25 m circle
    assert r.joint_spacing_m[1][0] == pytest.approx(2 * 0.25 * math.sin(math.radians(10)), abs=1e-12)
    assert r.joint_spacing_m[0][0] == pytest.approx(2 * 0.40 * math.sin(math.radians(10)), abs=1e-12)
    # safe pose: every platform joint 5 mm lower
    assert r.safe_lengths_m == pytest.approx([math.hypot(_offset(StewartGeometryParams()), 0.645)] * 6, abs=1e-12)
    assert r.safe_inside_stroke


def test_second_geometry_home_values_by_hand():
    g = SECOND
    r = geometry_report(g, UPRIGHT, 0.02, 2.0, 0.01, samples_per_axis=3)
    off = _offset(g)
    length = math.hypot(off, g.home_height_m)
    assert r.home_lengths_m == pytest.approx([length] * 6, abs=1e-12)
    assert length != pytest.approx(0.7012782, abs=1e-3)           # really another rig
    assert r.joint_angles_home_deg == pytest.approx(np.full((2, 6), math.degrees(math.atan2(off, 0.6))), abs=1e-9)
    a, p = joint_layout(g)
    assert r.cond_home == pytest.approx(np.linalg.cond(_hand_jacobian(a, p, g)), rel=1e-12)
    assert r.home_tcp_m == pytest.approx([0.0, 0.0, 0.68])
    assert r.safe_lengths_m == pytest.approx([math.hypot(off, 0.59)] * 6, abs=1e-12)
    # pure z translation keeps the legs equal: L(dz) = sqrt(off^2 + (h + dz)^2) meets the stroke ends at
    z = {x.axis: x for x in r.reach}["z"]
    assert z.plus == pytest.approx(math.sqrt(0.75 ** 2 - off ** 2) - 0.6, abs=1e-8)
    assert z.plus_limit.kind == "stroke max"
    # downwards the joint angle atan(off / (h + dz)) grows: whichever of the two limits comes first ends it
    down_stroke = 0.6 - math.sqrt(0.57 ** 2 - off ** 2)
    down_angle = 0.6 - off / math.tan(math.radians(40.0))
    assert z.minus == pytest.approx(min(down_stroke, down_angle), abs=1e-8)
    assert z.minus_limit.kind == ("stroke min" if down_stroke < down_angle else "base joint angle")


def test_explicit_joints_equal_to_the_symmetric_layout_give_identical_kinematics():
    g = StewartGeometryParams()
    e = _explicit(g)
    assert e.explicit and not g.explicit
    for x, y in zip(joint_layout(g), joint_layout(e)):
        assert np.array_equal(x, y)
    k1, k2 = StewartKinematics(g), StewartKinematics(e)
    assert np.array_equal(k1.home_lengths, k2.home_lengths)
    rng = np.random.default_rng(3)
    for _ in range(50):
        pose = k1.home_pose * pin.SE3(pin.exp3(rng.uniform(-0.08, 0.08, 3)), rng.uniform(-0.04, 0.04, 3))
        b = k1.inverse(pose)
        assert np.array_equal(b, k2.inverse(pose))
        assert np.array_equal(k1.jacobian(pose), k2.jacobian(pose))
        assert np.array_equal(k1.joint_angles(pose), k2.joint_angles(pose))
        f1, f2 = k1.forward(b, guess=k1.home_pose), k2.forward(b, guess=k2.home_pose)
        assert np.array_equal(f1.homogeneous, f2.homogeneous)
    r1 = geometry_report(g, UPRIGHT, samples_per_axis=3)
    r2 = geometry_report(e, UPRIGHT, samples_per_axis=3)
    assert r2.layout == "explicit"
    d1, d2 = r1.to_dict(), r2.to_dict()
    d1.pop("layout"), d2.pop("layout")
    assert d1 == d2


def test_an_asymmetric_explicit_rig():
    """Joints moved off the circles by a few mm and one base joint raised: the report follows them."""
    a, p = joint_layout(StewartGeometryParams())
    rng = np.random.default_rng(11)
    a = a + rng.uniform(-0.004, 0.004, a.shape)
    p = p + rng.uniform(-0.004, 0.004, p.shape)
    a[2, 3] = 0.012
    g = StewartGeometryParams(base_joints_m=tuple(map(tuple, a.T)), platform_joints_m=tuple(map(tuple, p.T)))
    r = geometry_report(g, UPRIGHT, samples_per_axis=3)
    home_plane = p + np.array([[0.0], [0.0], [0.65]])
    lengths = np.linalg.norm(home_plane - a, axis=0)
    assert r.home_lengths_m == pytest.approx(lengths, abs=1e-12)
    assert np.ptp(r.home_lengths_m) > 1e-3                          # no longer all equal
    tilt = np.degrees(np.arccos((home_plane - a)[2] / lengths))
    assert r.joint_angles_home_deg == pytest.approx(np.vstack([tilt, tilt]), abs=1e-9)
    assert r.cond_home == pytest.approx(np.linalg.cond(_hand_jacobian(a, p, g)), rel=1e-12)
    # two platform joints given in the wrong order: the legs cross, although in space their axes just miss
    swapped = p[:, [1, 0, 2, 3, 4, 5]]
    top = swapped + np.array([[0.0], [0.0], [0.65]])
    assert segment_distance(a[:, 0], top[:, 0], a[:, 1], top[:, 1])[0] > 1e-4
    with pytest.raises(ParameterError, match=r"^base_joints_m/platform_joints_m: legs 1 and 2 cross at home"):
        StewartGeometryParams(base_joints_m=tuple(map(tuple, a.T)), platform_joints_m=tuple(map(tuple, swapped.T))
                              ).validate()


def test_no_false_crossing_over_many_symmetric_layouts():
    rng = np.random.default_rng(2)
    for _ in range(300):
        rb, rp = rng.uniform(0.1, 0.8, 2)
        beta, gamma = rng.uniform(1.0, 30.0, 2)
        if beta + gamma > 59.0:
            continue
        g = StewartGeometryParams(base_radius_m=rb, platform_radius_m=rp, base_joint_half_angle_deg=beta,
                                  platform_joint_half_angle_deg=gamma, leg_length_min_m=0.0, leg_length_max_m=10.0,
                                  joint_angle_max_deg=90.0)
        g.validate()


# ---------------------------------------------------------------------------------------------------------------
# reach along single axes: the named constraint, a pose just beyond really violates it
# ---------------------------------------------------------------------------------------------------------------

def _pose(kin, axis: int, s: float) -> pin.SE3:
    """TCP pose for an upright interface with no offset: home composed with the displacement, built directly."""
    d, r = np.zeros(3), np.zeros(3)
    (d if axis < 3 else r)[axis % 3] = s
    return kin.home_pose * pin.SE3(pin.exp3(r), d)


def _value(kin, pose, lim) -> float:
    i = lim.leg - 1
    if lim.kind.startswith("stroke"):
        return float(kin.inverse(pose)[i])
    return float(np.degrees(kin.joint_angles(pose))[0 if lim.kind.startswith("base") else 1, i])


def _within(kin, pose) -> bool:
    g = kin.params
    b = kin.inverse(pose)
    return bool(np.all(b >= g.leg_length_min_m) and np.all(b <= g.leg_length_max_m)
                and np.degrees(kin.joint_angles(pose)).max() <= g.joint_angle_max_deg)


@pytest.mark.parametrize("geometry", [StewartGeometryParams(), SECOND], ids=["default", "second"])
def test_reach_ends_at_the_named_constraint(geometry):
    kin = StewartKinematics(geometry)
    r = geometry_report(geometry, UPRIGHT, samples_per_axis=2)
    kinds = set()
    for axis, x in enumerate(r.reach):
        for sign, s, lim in ((1.0, x.plus, x.plus_limit), (-1.0, x.minus, x.minus_limit)):
            assert lim is not None, (x.axis, sign)
            kinds.add(lim.kind)
            eps = 1e-6
            inside, beyond = _pose(kin, axis, sign * (s - eps)), _pose(kin, axis, sign * (s + eps))
            assert _within(kin, inside), (x.axis, sign)
            v = _value(kin, beyond, lim)
            if lim.kind == "stroke min":
                assert v < lim.value, (x.axis, sign, v, lim)
            else:
                assert v > lim.value, (x.axis, sign, v, lim)
            assert lim.value == {"stroke max": geometry.leg_length_max_m, "stroke min": geometry.leg_length_min_m}.get(
                lim.kind, geometry.joint_angle_max_deg)
    # both kinds of limit occur on the default rig: the stroke ends translations, the joint angle tilts
    if geometry == StewartGeometryParams():
        assert {"stroke max", "stroke min", "platform joint angle"} <= kinds


def test_default_reach_matches_the_documented_table(default_report):
    """docs/stewart_platform.md, "Reach from home along single axes" (TCP axes)."""
    reach = {x.axis: x for x in default_report.reach}
    mm = {k: (round(reach[k].plus * 1e3), round(reach[k].minus * 1e3)) for k in "xyz"}
    assert mm == {"x": (206, 201), "y": (188, 188), "z": (96, 98)}
    deg = {k: (round(math.degrees(reach[k].plus), 1), round(math.degrees(reach[k].minus), 1)) for k in ("rx", "ry", "rz")}
    assert deg == {"rx": (21.0, 21.0), "ry": (20.4, 25.1), "rz": (44.6, 44.6)}
    assert reach["rx"].plus_limit.kind.endswith("joint angle") and reach["rz"].plus_limit.kind == "stroke max"


def test_upside_down_mount_turns_z():
    """Upside down (the contact test), interface +z is platform -Z: the reach of z swaps its two sides."""
    up = {x.axis: x for x in geometry_report(interface=UPRIGHT, samples_per_axis=2).reach}
    down = {x.axis: x for x in geometry_report(interface=InterfaceMapParams(mount="upside_down"),
                                               samples_per_axis=2).reach}
    assert down["z"].plus == pytest.approx(up["z"].minus, abs=1e-8)
    assert down["z"].minus == pytest.approx(up["z"].plus, abs=1e-8)
    assert down["x"].plus == pytest.approx(up["x"].plus, abs=1e-8)


def test_a_shorter_stroke_shortens_the_reach_and_names_it():
    g = StewartGeometryParams(leg_length_max_m=0.72)
    z = {x.axis: x for x in geometry_report(g, UPRIGHT, samples_per_axis=2).reach}["z"]
    assert z.plus == pytest.approx(math.sqrt(0.72 ** 2 - _offset(g) ** 2) - 0.65, abs=1e-8)
    assert str(z.plus_limit).endswith("stroke max 0.7200 m")


# ---------------------------------------------------------------------------------------------------------------
# the interface box
# ---------------------------------------------------------------------------------------------------------------

def test_box_condition_and_worst_pose(default_report):
    b = default_report.box
    assert b.samples == 3 ** 6
    assert b.cond_max >= default_report.cond_home
    kin = StewartKinematics(StewartGeometryParams())
    # the corner of largest condition number, rebuilt by hand: its Jacobian's condition is the reported one
    q = b.cond_max_q
    pose = kin.home_pose * pin.SE3(pin.exp3(q[3:]), q[:3])
    a, p = joint_layout(StewartGeometryParams())
    assert np.linalg.cond(_hand_jacobian(a, p, kin.params, pose.rotation, pose.translation)) == pytest.approx(
        b.cond_max, rel=1e-9)
    # the full box (corners need 110 mm of leg change) is not within the stroke; its worst pose violates its limit
    assert b.leg_change_max_m == pytest.approx(0.110, abs=0.002)
    assert b.outside > 0
    worst = kin.home_pose * pin.SE3(pin.exp3(b.worst_q[3:]), b.worst_q[:3])
    assert limit_violation(kin, worst) == b.worst_limit
    assert _value(kin, worst, b.worst_limit) == pytest.approx(b.worst_limit.value + b.worst_limit.excess, abs=1e-12)
    # a small box is within every limit and hardly changes the conditioning
    small = geometry_report(interface=UPRIGHT, interface_limit_m=1e-4, rotation_limit_deg=0.01, samples_per_axis=3)
    assert small.box.outside == 0 and small.box.worst_limit is None
    assert small.box.cond_max == pytest.approx(small.cond_home, rel=1e-3)


# ---------------------------------------------------------------------------------------------------------------
# explicit joints as parameters; inconsistent geometries refused
# ---------------------------------------------------------------------------------------------------------------

def test_explicit_joints_round_trip_through_yaml():
    e = _explicit(StewartGeometryParams())
    data = yaml.safe_load(yaml.safe_dump(to_dict(e)))
    assert isinstance(data["base_joints_m"][0], list) and len(data["base_joints_m"]) == 6
    again = build(StewartGeometryParams, data)
    assert again == e
    assert StewartGeometryParams().base_joints_m == () and not StewartGeometryParams().explicit


def _symmetric_points():
    a, p = joint_layout(StewartGeometryParams())
    return a.T.tolist(), p.T.tolist()


@pytest.mark.parametrize("values, key, words", [
    ({"base_joints_m": "A"}, "base_joints_m", "platform_joints_m is empty"),
    ({"platform_joints_m": "P"}, "platform_joints_m", "base_joints_m is empty"),
    ({"base_joints_m": "A", "platform_joints_m": "P5"}, "platform_joints_m", "5 points given; expected 6"),
    ({"base_joints_m": "A", "platform_joints_m": "P2d"}, "platform_joints_m[0]", "expected a point [x, y, z]"),
    ({"base_joints_m": "Adup", "platform_joints_m": "P"}, "base_joints_m", "joints 1 and 3 coincide"),
    ({"base_joints_m": "A", "platform_joints_m": "Pswap"}, "base_joints_m/platform_joints_m",
     "legs 1 and 2 cross at home"),
    ({"base_joints_m": "A", "platform_joints_m": "Pdown"}, "platform_joints_m", "leg 4's platform joint lies"),
    ({"base_joint_half_angle_deg": 30.0, "platform_joint_half_angle_deg": 30.0},
     "base_joint_half_angle_deg/platform_joint_half_angle_deg", "half-angles add up to 60 deg"),
    ({"base_joint_half_angle_deg": 59.0}, "base_joint_half_angle_deg", "59.0 is out of range"),
    ({"tcp_offset_m": -0.05}, "tcp_offset_m", "-0.05 is out of range"),
    ({"joint_angle_max_deg": 20.0}, "joint_angle_max_deg", "joint angles of 22.05 deg"),
    ({"leg_length_max_m": 0.70}, "leg_length_min_m/leg_length_max_m", "home leg lengths [0.701278, 0.701278]"),
])
def test_inconsistent_geometries_are_refused_naming_the_key(values, key, words):
    a, p = _symmetric_points()
    points = {"A": a, "P": p, "P5": p[:5], "P2d": [pt[:2] for pt in p], "Adup": [a[0], a[1], a[0]] + a[3:],
              "Pswap": [p[1], p[0]] + p[2:], "Pdown": p[:3] + [[p[3][0], p[3][1], -0.70]] + p[4:]}
    values = {k: points.get(v, v) if isinstance(v, str) else v for k, v in values.items()}
    with pytest.raises(ParameterError) as exc:
        build(StewartGeometryParams, values, section="platform.geometry")
    msg = str(exc.value)
    assert msg.startswith(f"platform.geometry.{key}: "), msg
    assert words in msg, msg


def test_direct_construction_explains_the_ranges():
    """Built in Python (no range check of build()), validate() still refuses and says why."""
    with pytest.raises(ParameterError, match=r"base_joint_half_angle_deg: 59.0 deg .* pairs would overlap \(a joint "
                                             r"2.0 deg from the neighbouring pair's joint but 118.0 deg"):
        StewartGeometryParams(base_joint_half_angle_deg=59.0).validate()
    with pytest.raises(ParameterError, match="tcp_offset_m: -0.05 .* below the platform joints"):
        StewartKinematics(StewartGeometryParams(tcp_offset_m=-0.05))


def test_half_angles_up_to_30_deg_never_cross_or_overlap():
    """Within the declared range the pairs stay pairs (2 beta <= 120 - 2 beta) and the legs never meet: the only
    singular layout is beta + gamma = 60 deg (30 + 30)."""
    for beta in (1.0, 10.0, 20.0, 29.0, 30.0):
        for gamma in (1.0, 10.0, 20.0, 29.0):
            g = StewartGeometryParams(base_joint_half_angle_deg=beta, platform_joint_half_angle_deg=gamma)
            g.validate()
            a, p = joint_layout(g)
            top = p + np.array([[0.0], [0.0], [g.home_height_m]])
            gaps = [segment_distance(a[:, i], top[:, i], a[:, j], top[:, j])[0]
                    for i in range(6) for j in range(i + 1, 6)]
            assert min(gaps) > 0.005, (beta, gamma)


def test_swapped_radii_are_a_valid_layout_with_less_rotation_reach():
    """Swapping the radii keeps the home legs (the horizontal offset is symmetric in the two radii) and the
    translations' reach; it is not refused, but the report shows the smaller tilt reach."""
    g = StewartGeometryParams(base_radius_m=0.25, platform_radius_m=0.40)
    g.validate()
    r0 = {x.axis: x for x in geometry_report(interface=UPRIGHT, samples_per_axis=2).reach}
    r1 = geometry_report(g, UPRIGHT, samples_per_axis=2)
    assert r1.home_lengths_m == pytest.approx([0.7012782] * 6, abs=1e-7)
    reach = {x.axis: x for x in r1.reach}
    assert reach["z"].plus == pytest.approx(r0["z"].plus, abs=1e-8)
    assert reach["rx"].plus < r0["rx"].plus - math.radians(5.0)
    assert reach["rx"].plus_limit.kind.startswith("stroke")


def test_segment_distance_against_sampling():
    rng = np.random.default_rng(5)
    s = np.linspace(0.0, 1.0, 801)
    for _ in range(30):
        p0, p1, q0, q1 = rng.normal(size=(4, 3))
        d, _ = segment_distance(p0, p1, q0, q1)
        P = p0 + s[:, None] * (p1 - p0)
        Q = q0 + s[:, None] * (q1 - q0)
        brute = np.min(np.linalg.norm(P[:, None, :] - Q[None, :, :], axis=2))
        assert d <= brute + 1e-12
        assert d == pytest.approx(brute, abs=5e-3)
    # two crossing diagonals of a square meet; parallel segments keep their distance
    assert segment_distance(np.zeros(3), np.array([1.0, 1, 0]), np.array([1.0, 0, 0]), np.array([0.0, 1, 0]))[0] == \
        pytest.approx(0.0, abs=1e-15)
    assert segment_distance(np.zeros(3), np.array([1.0, 0, 0]), np.array([0.0, 0, 0.3]),
                            np.array([1.0, 0, 0.3]))[0] == pytest.approx(0.3)
