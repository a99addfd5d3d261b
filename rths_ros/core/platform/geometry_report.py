"""Derived values of a hexapod geometry and its limits: what a lab checks before its own rig moves.

:func:`geometry_report` takes a :class:`~rths_ros.core.platform.stewart.StewartGeometryParams` (symmetric or explicit
joints), the interface mount (:class:`~rths_ros.core.platform.interface.InterfaceMapParams`) and the safety limits,
and computes, with :class:`~rths_ros.core.platform.stewart.StewartKinematics` for the inverse kinematics:

* at home: the leg lengths and their margins to the stroke, the joint angles at the base and the platform, the
  closest two joints of each plate, the closest two legs, the condition number of the body Jacobian;
* over the interface box -- every interface coordinate (x, y, z, rx, ry, rz of the interface frame) sampled on a
  grid over ``[-interface_limit_m, interface_limit_m]`` for translations and ``[-rotation_limit_deg,
  rotation_limit_deg]`` for the rotation-vector components: the largest condition number, the largest leg change and
  the poses beyond the stroke or the joint-angle limit (the first one named);
* the reach along each interface axis alone, both ways: the largest displacement from home that keeps every leg in
  its stroke and every joint within its angle, found by a scan (1 mm, 0.25 deg) and bisection to 1e-9, with the
  constraint that ends it (the leg, stroke min/max or the base/platform joint angle);
* the leg lengths of the safe pose (home moved ``safe_retract_m`` down) and whether they lie in the stroke.

The scenario bounds only the interface translations (``safety.interface_limit_m``); the rotations have no bound of
their own, so the box uses ``rotation_limit_deg`` (default 5 deg, the documented test workspace of
docs/stewart_platform.md).  The condition number mixes metres and radians (body twist, linear part first).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.platform.interface import DOF_NAMES, InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.joints import closest_legs, closest_pair
from rths_ros.core.platform.safety import safe_pose_lengths
from rths_ros.core.platform.stewart import StewartGeometryParams, StewartKinematics, joint_layout

__all__ = ["Limit", "AxisReach", "BoxResult", "GeometryReport", "geometry_report", "limit_violation",
           "ROTATION_LIMIT_DEG"]

#: rotation bound of the interface box when none is given: the documented test workspace (+-5 deg per component)
ROTATION_LIMIT_DEG = 5.0
#: reach search: scan step and bound per axis kind (translation m, rotation rad), bisection tolerance
_SCAN = {"translation": (1e-3, 1.0), "rotation": (math.radians(0.25), math.pi / 2)}
_TOL = 1e-9


@dataclass(frozen=True)
class Limit:
    """One constraint: ``leg`` (1..6), ``kind`` ('stroke max', 'stroke min', 'base joint angle' or 'platform joint
    angle'), the limit's ``value`` (m or deg) and by how much a pose exceeds it (``excess``, same unit)."""

    leg: int
    kind: str
    value: float
    excess: float = 0.0

    @property
    def unit(self) -> str:
        return "m" if self.kind.startswith("stroke") else "deg"

    def __str__(self) -> str:
        v = f"{self.value:.4f} m" if self.unit == "m" else f"{self.value:g} deg"
        return f"leg {self.leg} {self.kind} {v}"

    def to_dict(self) -> dict:
        return {"leg": self.leg, "kind": self.kind, "value": self.value, "unit": self.unit, "excess": self.excess}


@dataclass(frozen=True)
class AxisReach:
    """Largest displacement along one interface axis from home, both ways (m or rad, magnitudes), and the limit
    that ends it (None: none within the search bound, 1 m or 90 deg)."""

    axis: str
    plus: float
    minus: float
    plus_limit: Limit | None
    minus_limit: Limit | None

    @property
    def rotation(self) -> bool:
        return self.axis.startswith("r")

    def to_dict(self) -> dict:
        return {"axis": self.axis, "unit": "rad" if self.rotation else "m", "plus": self.plus, "minus": self.minus,
                "plus_limit": self.plus_limit.to_dict() if self.plus_limit else None,
                "minus_limit": self.minus_limit.to_dict() if self.minus_limit else None}


@dataclass(frozen=True)
class BoxResult:
    """The interface box sampled on a grid: size, condition numbers, leg change and the poses beyond the limits."""

    interface_limit_m: float
    rotation_limit_deg: float
    samples: int
    cond_max: float
    cond_max_q: np.ndarray
    leg_change_max_m: float
    outside: int
    worst_q: np.ndarray | None
    worst_limit: Limit | None

    def to_dict(self) -> dict:
        return {"interface_limit_m": self.interface_limit_m, "rotation_limit_deg": self.rotation_limit_deg,
                "samples": self.samples, "cond_max": self.cond_max, "cond_max_q": self.cond_max_q.tolist(),
                "leg_change_max_m": self.leg_change_max_m, "outside_limits": self.outside,
                "worst_q": None if self.worst_q is None else self.worst_q.tolist(),
                "worst_limit": self.worst_limit.to_dict() if self.worst_limit else None}


@dataclass(frozen=True)
class GeometryReport:
    """Everything :func:`geometry_report` derives (arrays: legs in columns, leg i+1 = column i)."""

    layout: str                      # 'symmetric' or 'explicit'
    base_joints_m: np.ndarray        # (3, 6) world frame
    platform_joints_m: np.ndarray    # (3, 6) platform joint-plane frame
    home_tcp_m: np.ndarray           # (3,)
    home_lengths_m: np.ndarray       # (6,)
    stroke_m: tuple[float, float]
    joint_angles_home_deg: np.ndarray   # (2, 6): base, platform
    joint_angle_max_deg: float
    joint_spacing_m: tuple[tuple[float, int, int], tuple[float, int, int]]   # (distance, leg, leg) base, platform
    leg_clearance: tuple[float, int, int]   # (distance, leg, leg) of the closest two legs at home
    cond_home: float
    box: BoxResult
    reach: tuple[AxisReach, ...]
    mount: str
    specimen_offset_m: float
    safe_retract_m: float
    safe_lengths_m: np.ndarray       # (6,)

    @property
    def home_margins_m(self) -> tuple[float, float]:
        """Smallest distance of a home leg length from the stroke's lower and upper end."""
        return (float(np.min(self.home_lengths_m) - self.stroke_m[0]),
                float(self.stroke_m[1] - np.max(self.home_lengths_m)))

    @property
    def safe_inside_stroke(self) -> bool:
        return bool(np.all(self.safe_lengths_m >= self.stroke_m[0]) and np.all(self.safe_lengths_m <= self.stroke_m[1]))

    def to_dict(self) -> dict:
        """Plain data (lists, numbers) for JSON."""
        (bd, bi, bj), (pd, pi, pj) = self.joint_spacing_m
        d, i, j = self.leg_clearance
        return {"layout": self.layout, "base_joints_m": self.base_joints_m.T.tolist(),
                "platform_joints_m": self.platform_joints_m.T.tolist(), "home_tcp_m": self.home_tcp_m.tolist(),
                "home_lengths_m": self.home_lengths_m.tolist(), "stroke_m": list(self.stroke_m),
                "home_margins_m": list(self.home_margins_m),
                "joint_angles_home_deg": {"base": self.joint_angles_home_deg[0].tolist(),
                                          "platform": self.joint_angles_home_deg[1].tolist()},
                "joint_angle_max_deg": self.joint_angle_max_deg,
                "joint_spacing_m": {"base": {"distance": bd, "legs": [bi, bj]},
                                    "platform": {"distance": pd, "legs": [pi, pj]}},
                "leg_clearance_m": {"distance": d, "legs": [i, j]},
                "cond_home": self.cond_home, "box": self.box.to_dict(),
                "reach": [r.to_dict() for r in self.reach], "mount": self.mount,
                "specimen_offset_m": self.specimen_offset_m, "safe_retract_m": self.safe_retract_m,
                "safe_lengths_m": self.safe_lengths_m.tolist(), "safe_inside_stroke": self.safe_inside_stroke}


def limit_violation(kin: StewartKinematics, pose) -> Limit | None:
    """The constraint a TCP pose violates most (stroke or joint angle; excess relative to the stroke or the angle
    limit), or None if the pose is within all of them."""
    g = kin.params
    lengths = kin.inverse(pose)
    angles = np.degrees(kin.joint_angles(pose))
    stroke = g.leg_length_max_m - g.leg_length_min_m
    found: list[tuple[float, Limit]] = []
    for i in range(6):
        if lengths[i] > g.leg_length_max_m:
            e = float(lengths[i] - g.leg_length_max_m)
            found.append((e / stroke, Limit(i + 1, "stroke max", g.leg_length_max_m, e)))
        if lengths[i] < g.leg_length_min_m:
            e = float(g.leg_length_min_m - lengths[i])
            found.append((e / stroke, Limit(i + 1, "stroke min", g.leg_length_min_m, e)))
        for side, row in (("base", 0), ("platform", 1)):
            if angles[row, i] > g.joint_angle_max_deg:
                e = float(angles[row, i] - g.joint_angle_max_deg)
                found.append((e / max(g.joint_angle_max_deg, 1e-9),
                              Limit(i + 1, f"{side} joint angle", g.joint_angle_max_deg, e)))
    return max(found, key=lambda f: f[0])[1] if found else None


def _axis_reach(kin: StewartKinematics, imap: InterfaceMap, axis: int, sign: float) -> tuple[float, Limit | None]:
    step, bound = _SCAN["rotation" if axis >= 3 else "translation"]
    q = np.zeros(6)

    def beyond(s: float) -> Limit | None:
        q[axis] = sign * s
        return limit_violation(kin, imap.to_platform(q))

    ok = 0.0
    for k in range(1, int(math.ceil(bound / step)) + 1):
        s = min(k * step, bound)
        hit = beyond(s)
        if hit is not None:
            lo, hi = ok, s
            while hi - lo > _TOL:
                mid = 0.5 * (lo + hi)
                h = beyond(mid)
                if h is None:
                    lo = mid
                else:
                    hi, hit = mid, h
            return lo, hit
        ok = s
    return bound, None


def _box(kin: StewartKinematics, imap: InterfaceMap, limit_m: float, rot_deg: float, n: int) -> BoxResult:
    r = math.radians(rot_deg)
    axes = [np.linspace(-limit_m, limit_m, n)] * 3 + [np.linspace(-r, r, n)] * 3
    home = kin.home_lengths
    jac = np.empty((n ** 6, 6, 6))
    qs = np.empty((n ** 6, 6))
    change = 0.0
    outside = 0
    worst: tuple[float, np.ndarray | None, Limit | None] = (-1.0, None, None)
    stroke = kin.params.leg_length_max_m - kin.params.leg_length_min_m
    for k, q in enumerate(itertools.product(*axes)):
        qs[k] = q
        pose = imap.to_platform(qs[k])
        kin.jacobian_into(pose, jac[k])
        change = max(change, float(np.max(np.abs(kin.inverse(pose) - home))))
        lim = limit_violation(kin, pose)
        if lim is not None:
            outside += 1
            rel = lim.excess / (stroke if lim.unit == "m" else max(kin.params.joint_angle_max_deg, 1e-9))
            if rel > worst[0]:
                worst = (rel, qs[k].copy(), lim)
    cond = np.linalg.cond(jac)
    c = int(np.argmax(cond))
    return BoxResult(limit_m, rot_deg, n ** 6, float(cond[c]), qs[c].copy(), change, outside, worst[1], worst[2])


def geometry_report(geometry: StewartGeometryParams | None = None, interface: InterfaceMapParams | None = None,
                    interface_limit_m: float = 0.05, rotation_limit_deg: float = ROTATION_LIMIT_DEG,
                    safe_retract_m: float = 0.005, samples_per_axis: int = 5) -> GeometryReport:
    """The derived values of ``geometry`` (see module doc).  ``interface`` gives the mount and the specimen offset
    of the interface frame (its ``dofs`` are not used: the box and the reach cover all six coordinates); default
    upright with no offset, i.e. the TCP axes.  ``samples_per_axis`` grid points per coordinate of the box (odd:
    the grid holds home)."""
    g = geometry if geometry is not None else StewartGeometryParams()
    ip = interface if interface is not None else InterfaceMapParams(mount="upright")
    if samples_per_axis < 2:
        raise ValueError(f"samples_per_axis: {samples_per_axis!r} is not allowed; expected at least 2")
    kin = StewartKinematics(g)
    imap = InterfaceMap(InterfaceMapParams(dofs=DOF_NAMES, mount=ip.mount, specimen_offset_m=ip.specimen_offset_m),
                        kin)
    a, p = joint_layout(g)
    home = kin.home_pose
    reach = []
    for axis, name in enumerate(DOF_NAMES):
        plus, plus_lim = _axis_reach(kin, imap, axis, 1.0)
        minus, minus_lim = _axis_reach(kin, imap, axis, -1.0)
        reach.append(AxisReach(name, plus, minus, plus_lim, minus_lim))
    d_base, bi, bj = closest_pair(a)
    d_plat, pi, pj = closest_pair(p)
    d_leg, li, lj, _ = closest_legs(a, p + np.array([[0.0], [0.0], [g.home_height_m]]))
    return GeometryReport(
        layout="explicit" if g.explicit else "symmetric", base_joints_m=a, platform_joints_m=p,
        home_tcp_m=home.translation.copy(), home_lengths_m=np.array(kin.home_lengths),
        stroke_m=(g.leg_length_min_m, g.leg_length_max_m),
        joint_angles_home_deg=np.degrees(kin.joint_angles(home)), joint_angle_max_deg=g.joint_angle_max_deg,
        joint_spacing_m=((d_base, bi + 1, bj + 1), (d_plat, pi + 1, pj + 1)), leg_clearance=(d_leg, li + 1, lj + 1),
        cond_home=float(np.linalg.cond(kin.jacobian(home))),
        box=_box(kin, imap, interface_limit_m, rotation_limit_deg, samples_per_axis), reach=tuple(reach),
        mount=ip.mount, specimen_offset_m=ip.specimen_offset_m, safe_retract_m=safe_retract_m,
        safe_lengths_m=safe_pose_lengths(kin, safe_retract_m))
