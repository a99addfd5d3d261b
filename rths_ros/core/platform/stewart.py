"""Kinematics of the 6-6 Gough-Stewart platform (hexapod) used as the transfer system.

Insam 2022 (§4.2.1) describes the actuator as an in-house Gough-Stewart platform of about 0.7 m height in
the used configuration, six electric spindle legs with universal joints at both ends, and a TCP on the upper
plate with the six workspace coordinates X = {X, Y, Z, Phi, Theta, Psi}.  Inverse kinematics turns the
workspace command X into the leg commands b_i, direct (forward) kinematics turns the measured leg lengths b'_i
into the achieved pose X'.  The thesis gives no joint coordinates, so the geometry here is a documented,
plausible choice (see docs/stewart_platform.md); all of it is a parameter.

Frames
------
* World frame W: origin at the centre of the base joint plane (the plane through the six lower joint
  centres), z up, x through the middle of the first base joint pair.
* TCP frame: fixed to the moving plate, axes parallel to the platform frame; its origin lies ``tcp_offset_m``
  above the centre of the platform joint plane.  A *pose* is always the pose of the TCP frame in W,
  ``pin.SE3(R, t)``.  At home R = I and t = (0, 0, home_height_m + tcp_offset_m).

Closed-form inverse kinematics (Bartl 2019 eq. 3.8/3.9 in this notation):
``l_i = t + R p_i - a_i``, ``b_i = |l_i|`` with a_i the base joint i in W and p_i the platform joint i in the
TCP frame.

Twist convention
----------------
:meth:`StewartKinematics.jacobian` is the *body* (pinocchio ``LOCAL``) Jacobian: ``bdot = J V`` with
``V = (v, omega)``, linear part first, where v is the velocity of the TCP origin and omega the angular
velocity, both expressed in the TCP frame.  Row i is ``[ (R^T u_i)^T, (p_i x R^T u_i)^T ]`` with u_i the unit
leg vector in W.  The same convention is used for the Newton update of the forward kinematics:
``T <- T * exp6(delta)`` with ``delta = J^-1 (b - b(T))``.

Legs are indexed 0..5 in arrays and named "leg 1".."leg 6" (the thesis' b_1..b_6) in messages.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rths_ros.core.numerics.kernel import kernel
from rths_ros.core.platform.joints import JOINT_TOLERANCE_M, closest_pair, crossing_legs
from rths_ros.params import ParameterError, param

__all__ = ["StewartGeometryParams", "StewartKinematics", "KinematicsError", "joint_layout"]

#: largest half-angle of a joint pair: beyond it a joint lies nearer the neighbouring pair's joint (120 deg - 2 beta
#: away) than its own partner (2 beta away), i.e. the pairs overlap
MAX_HALF_ANGLE_DEG = 30.0


class KinematicsError(RuntimeError):
    """Forward kinematics did not converge (leg lengths outside the reachable set or a singular pose)."""


# --------------------------------------------------------------------------------------------------------------
# parameters
# --------------------------------------------------------------------------------------------------------------

#: the geometries that passed :meth:`StewartGeometryParams.validate` (frozen, so hashable by value)
_VALID_GEOMETRIES: set = set()
#: the geometries whose kinematics kernels ran once in this process (:class:`StewartKinematics`)
_WARMED: set = set()


@dataclass(frozen=True)
class StewartGeometryParams:
    """Geometry and limits of the 6-6 hexapod (thesis: no numbers given; documented choice).

    Base joint pairs are centred at 0, 120 and 240 deg about the world z axis, platform joint pairs at 60, 180 and
    300 deg; each leg joins a base joint to the nearest joint of the neighbouring platform pair (the usual
    zig-zag layout).  Stroke 0.18 m, leg speed 0.5 m/s (hardware) / 0.25 m/s (used) and 45 deg joint angles are
    the values of Insam 2022 §16.2.

    A rig whose joints do not follow the circles-and-pairs layout gives its joint centres explicitly
    (``base_joints_m`` and ``platform_joints_m``, both or neither); the radii and half-angles are then unused.
    :meth:`validate` refuses an inconsistent geometry (docs/stewart_platform.md, "Geometry of your rig").
    """

    base_radius_m: float = param(0.40, "m", 0.05, 5.0, "radius of the circle through the six base (lower) joint centres")
    platform_radius_m: float = param(0.25, "m", 0.05, 5.0,
                                     "radius of the circle through the six platform (upper) joint centres")
    base_joint_half_angle_deg: float = param(10.0, "deg", 1.0, MAX_HALF_ANGLE_DEG,
                                             "half the angle between the two base joints of a pair "
                                             "(pairs centred at 0, 120, 240 deg; above 30 deg a joint would lie "
                                             "nearer the neighbouring pair's joint than its partner)")
    platform_joint_half_angle_deg: float = param(10.0, "deg", 1.0, MAX_HALF_ANGLE_DEG,
                                                 "half the angle between the two platform joints of a pair "
                                                 "(pairs centred at 60, 180, 300 deg; at most 30 deg, as the base)")
    home_height_m: float = param(0.65, "m", 0.1, 5.0,
                                 "height of the platform joint plane above the base joint plane in the home pose "
                                 "(TCP at home_height_m + tcp_offset_m, about 0.7 m)")
    leg_length_min_m: float = param(0.6113, "m", 0.0, 10.0,
                                    "shortest admissible leg length (joint centre to joint centre); "
                                    "default = home length - 0.09 m (stroke 0.18 m centred at home)")
    leg_length_max_m: float = param(0.7913, "m", 0.0, 10.0,
                                    "longest admissible leg length; default = home length + 0.09 m")
    leg_velocity_max_m_per_s: float = param(0.25, "m/s", 0.0, 0.5,
                                            "admissible leg speed |b_i'| (hardware 0.5 m/s, 0.25 m/s used in the "
                                            "thesis' gait tests)")
    joint_angle_max_deg: float = param(45.0, "deg", 0.0, 90.0,
                                       "admissible universal-joint deflection: angle between the leg axis and "
                                       "the normal of the plate the joint sits on")
    tcp_offset_m: float = param(0.05, "m", 0.0, 1.0, "TCP height above the platform joint plane (>= 0: the TCP "
                                "is on the plate that carries the specimen, not below the joints among the legs)")
    base_joints_m: tuple[tuple[float, ...], ...] = param(
        [], "m", -5.0, 5.0, "explicit base joint centres [[x, y, z], ...] of legs 1..6 in the world frame (empty = "
        "the symmetric layout of base_radius_m, base_joint_half_angle_deg); needs platform_joints_m as well")
    platform_joints_m: tuple[tuple[float, ...], ...] = param(
        [], "m", -5.0, 5.0, "explicit platform joint centres [[x, y, z], ...] of legs 1..6 in the platform "
        "joint-plane frame (at home: world axes, origin home_height_m above the world origin; the TCP is "
        "tcp_offset_m above it); empty = the symmetric layout; needs base_joints_m as well")

    @property
    def explicit(self) -> bool:
        """True if the joint centres are given explicitly (base_joints_m, platform_joints_m)."""
        return bool(self.base_joints_m or self.platform_joints_m)

    def validate(self) -> None:
        """Refuse an inconsistent geometry, naming the key, the value and the derived quantity.  A geometry that
        passed once is not checked again (the check of crossing legs takes about 0.7 ms; a gait run builds four
        kinematics of one geometry)."""
        if self in _VALID_GEOMETRIES:
            return
        self._check()
        if len(_VALID_GEOMETRIES) >= 256:       # a sweep over many geometries: keep the memory bounded
            _VALID_GEOMETRIES.clear()
        _VALID_GEOMETRIES.add(self)

    def _check(self) -> None:
        if self.leg_length_min_m >= self.leg_length_max_m:
            raise ParameterError(
                f"leg_length_min_m: {self.leg_length_min_m!r} is not allowed; expected a value below "
                f"leg_length_max_m = {self.leg_length_max_m!r}")
        self._validate_layout_keys()
        a, p = joint_layout(self)
        joints = "base_joints_m/platform_joints_m" if self.explicit else \
            "base_joint_half_angle_deg/platform_joint_half_angle_deg"
        for key, pts in (("base_joints_m", a), ("platform_joints_m", p)):
            d, i, j = closest_pair(pts)
            if d < JOINT_TOLERANCE_M:
                raise ParameterError(
                    f"{key}: joints {i + 1} and {j + 1} coincide ({np.round(pts[:, i], 4).tolist()} and "
                    f"{np.round(pts[:, j], 4).tolist()} m, {d * 1e3:.2f} mm apart); expected six distinct joint "
                    f"centres at least {JOINT_TOLERANCE_M * 1e3:g} mm apart")
        home = np.array([0.0, 0.0, self.home_height_m])
        legs = home[:, None] + p - a
        lengths = np.linalg.norm(legs, axis=0)
        down = np.flatnonzero(legs[2] <= 0.0)
        if down.size:
            i = int(down[0])
            raise ParameterError(
                f"{'platform_joints_m' if self.explicit else 'home_height_m'}: leg {i + 1}'s platform joint lies "
                f"{-legs[2, i]:.4f} m below its base joint at home; expected every platform joint above its base "
                "joint (check home_height_m and the sign of z)")
        crossing = crossing_legs(a, home[:, None] + p)
        if crossing is not None:
            i, j, d, z = crossing
            raise ParameterError(
                f"{joints}: legs {i + 1} and {j + 1} cross at home (seen from above their axes intersect; in space "
                f"they pass {d * 1e3:.2f} mm apart at z = {z:.4f} m); expected every platform joint joined to its "
                "own base joint without crossing (check the order of the joints)")
        lo, hi = float(lengths.min()), float(lengths.max())
        if lo <= self.leg_length_min_m or hi >= self.leg_length_max_m:
            raise ParameterError(
                f"leg_length_min_m/leg_length_max_m: [{self.leg_length_min_m!r}, {self.leg_length_max_m!r}] m does "
                f"not contain the home leg lengths [{lo:.6f}, {hi:.6f}] m; expected limits around the home pose")
        jac = np.zeros((6, 6))
        p_tcp = p - np.array([[0.0], [0.0], [self.tcp_offset_m]])
        t_home = np.array([0.0, 0.0, self.home_height_m + self.tcp_offset_m])
        _lengths_jacobian(np.eye(3), t_home, a, p_tcp, np.zeros(6), np.zeros((3, 6)), jac)
        cond = np.linalg.cond(jac)
        if not np.isfinite(cond) or cond > 1e6:
            hint = "expected distinct joint pairs and a non-zero height"
            if not self.explicit and abs(self.base_joint_half_angle_deg + self.platform_joint_half_angle_deg
                                         - 60.0) < 1e-3:
                hint = ("the half-angles add up to 60 deg: every leg lies in a vertical plane through the centre "
                        "and none resists a turn about z; expected a sum below 60 deg")
            raise ParameterError(
                f"{joints}: the home pose is singular (Jacobian condition number {cond:.3g}); {hint}")
        angles = np.degrees(np.arccos(np.clip(legs[2] / lengths, -1.0, 1.0)))   # base = platform side at home
        k = int(np.argmax(angles))
        if angles[k] >= self.joint_angle_max_deg:
            raise ParameterError(
                f"joint_angle_max_deg: {self.joint_angle_max_deg!r} is not allowed; the home pose already has "
                f"joint angles of {angles[k]:.2f} deg (leg {k + 1})")

    def _validate_layout_keys(self) -> None:
        """Explicit joints: both sides, six points of three coordinates each; the symmetric layout's ranges."""
        if self.tcp_offset_m < 0.0:
            raise ParameterError(
                f"tcp_offset_m: {self.tcp_offset_m!r} is not allowed; the TCP would lie {-self.tcp_offset_m:g} m "
                "below the platform joints, among the legs, not on the plate that carries the specimen; expected "
                "the height of the TCP above the platform joint plane (>= 0)")
        if not self.explicit:
            for key in ("base_joint_half_angle_deg", "platform_joint_half_angle_deg"):
                beta = getattr(self, key)
                if beta > MAX_HALF_ANGLE_DEG:
                    raise ParameterError(
                        f"{key}: {beta!r} deg is not allowed; the pairs would overlap (a joint {120.0 - 2 * beta:.1f} "
                        f"deg from the neighbouring pair's joint but {2 * beta:.1f} deg from its partner); expected "
                        f"at most {MAX_HALF_ANGLE_DEG:g} deg, or explicit joints (base_joints_m, platform_joints_m)")
            return
        for key, other in (("base_joints_m", "platform_joints_m"), ("platform_joints_m", "base_joints_m")):
            if not getattr(self, other):
                raise ParameterError(
                    f"{key}: {len(getattr(self, key))} joints given but {other} is empty; expected both (six joints "
                    "each) or neither (the symmetric layout of the radii and half-angles)")
        for key in ("base_joints_m", "platform_joints_m"):
            pts = getattr(self, key)
            if len(pts) != 6:
                raise ParameterError(f"{key}: {len(pts)} points given; expected 6 points [x, y, z] in m (legs 1..6)")
            for i, pt in enumerate(pts):
                if len(pt) != 3:
                    raise ParameterError(f"{key}[{i}]: {list(pt)!r} is not allowed; expected a point [x, y, z] in m "
                                         f"(the joint of leg {i + 1})")


def joint_layout(params: StewartGeometryParams) -> tuple[np.ndarray, np.ndarray]:
    """Joint centres ``(a, p)``: base joints a (3, 6) in the world frame (z = 0), platform joints (3, 6) in the
    *platform joint plane* frame (z = 0, origin at the plane centre; subtract ``tcp_offset_m`` from z to get
    TCP-frame coordinates).  With explicit joints (``base_joints_m``, ``platform_joints_m``) these, as given."""
    if params.explicit:
        return (np.array(params.base_joints_m, dtype=float).T.copy(),
                np.array(params.platform_joints_m, dtype=float).T.copy())
    beta = math.radians(params.base_joint_half_angle_deg)
    gamma = math.radians(params.platform_joint_half_angle_deg)
    a = np.zeros((3, 6))
    p = np.zeros((3, 6))
    for k in range(3):
        c = math.radians(120.0 * k)
        # leg 2k: base joint at c - beta, joined to the platform pair centred at c - 60 deg (its joint nearest)
        # leg 2k+1: base joint at c + beta, joined to the platform pair centred at c + 60 deg
        for j, (ab, ap) in enumerate(((c - beta, c - math.pi / 3 + gamma), (c + beta, c + math.pi / 3 - gamma))):
            i = 2 * k + j
            a[:, i] = (params.base_radius_m * math.cos(ab), params.base_radius_m * math.sin(ab), 0.0)
            p[:, i] = (params.platform_radius_m * math.cos(ap), params.platform_radius_m * math.sin(ap), 0.0)
    return a, p


# --------------------------------------------------------------------------------------------------------------
# numba kernels (no allocation)
# --------------------------------------------------------------------------------------------------------------

@kernel
def _lengths(R, t, a, p, L, U):
    """Leg lengths L (6,) and unit leg vectors U (3, 6) in W for the TCP pose (R, t)."""
    for i in range(6):
        lx = R[0, 0] * p[0, i] + R[0, 1] * p[1, i] + R[0, 2] * p[2, i] + t[0] - a[0, i]
        ly = R[1, 0] * p[0, i] + R[1, 1] * p[1, i] + R[1, 2] * p[2, i] + t[1] - a[1, i]
        lz = R[2, 0] * p[0, i] + R[2, 1] * p[1, i] + R[2, 2] * p[2, i] + t[2] - a[2, i]
        n = math.sqrt(lx * lx + ly * ly + lz * lz)
        L[i] = n
        U[0, i] = lx / n
        U[1, i] = ly / n
        U[2, i] = lz / n


@kernel
def _lengths_jacobian(R, t, a, p, L, U, J):
    """Leg lengths, unit vectors and the body Jacobian J (6, 6) (rows [R^T u_i, p_i x R^T u_i])."""
    _lengths(R, t, a, p, L, U)
    for i in range(6):
        wx = R[0, 0] * U[0, i] + R[1, 0] * U[1, i] + R[2, 0] * U[2, i]
        wy = R[0, 1] * U[0, i] + R[1, 1] * U[1, i] + R[2, 1] * U[2, i]
        wz = R[0, 2] * U[0, i] + R[1, 2] * U[1, i] + R[2, 2] * U[2, i]
        J[i, 0] = wx
        J[i, 1] = wy
        J[i, 2] = wz
        J[i, 3] = p[1, i] * wz - p[2, i] * wy
        J[i, 4] = p[2, i] * wx - p[0, i] * wz
        J[i, 5] = p[0, i] * wy - p[1, i] * wx


@kernel
def _solve6(J, rhs, A, x):
    """Solve J x = rhs (6x6) by Gaussian elimination with partial pivoting; A is a (6, 7) work array.
    Returns False if J is (numerically) singular."""
    scale = 0.0
    for i in range(6):
        for j in range(6):
            A[i, j] = J[i, j]
            if abs(J[i, j]) > scale:
                scale = abs(J[i, j])
        A[i, 6] = rhs[i]
    if scale == 0.0:
        return False
    for c in range(6):
        piv = c
        best = abs(A[c, c])
        for r in range(c + 1, 6):
            if abs(A[r, c]) > best:
                best = abs(A[r, c])
                piv = r
        if best <= 1e-13 * scale:
            return False
        if piv != c:
            for j in range(c, 7):
                tmp = A[c, j]
                A[c, j] = A[piv, j]
                A[piv, j] = tmp
        inv = 1.0 / A[c, c]
        for r in range(c + 1, 6):
            f = A[r, c] * inv
            if f != 0.0:
                for j in range(c, 7):
                    A[r, j] -= f * A[c, j]
    for r in range(5, -1, -1):
        s = A[r, 6]
        for j in range(r + 1, 6):
            s -= A[r, j] * x[j]
        x[r] = s / A[r, r]
    return True


@kernel
def _newton_step(R, t, a, p, target, L, U, J, res, A, delta):
    """One Newton step of the forward kinematics: residual res = target - b(R, t), delta = J^-1 res.
    Returns max |res| (inf if J is singular)."""
    _lengths_jacobian(R, t, a, p, L, U, J)
    m = 0.0
    for i in range(6):
        res[i] = target[i] - L[i]
        if abs(res[i]) > m:
            m = abs(res[i])
    if not (m >= 0.0):  # NaN lengths
        return math.inf
    if not _solve6(J, res, A, delta):
        return math.inf
    return m


@kernel
def _reorthonormalize(R, S, Rn):
    """One step of the polar iteration R <- R (3 I - R^T R) / 2 (in place; S, Rn are 3x3 work arrays);
    removes the round-off drift that repeated pose updates would accumulate."""
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R[k, i] * R[k, j]
            S[i, j] = -0.5 * s
        S[i, i] += 1.5
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R[i, k] * S[k, j]
            Rn[i, j] = s
    for i in range(3):
        for j in range(3):
            R[i, j] = Rn[i, j]


#: below this rotation angle the pose update uses the Taylor expansions of its coefficients (the threshold of
#: pinocchio's ``exp6``, eps^(1/4))
_EXP6_TAYLOR = float(np.finfo(np.float64).eps) ** 0.25


@kernel
def _compose_exp6(R, t, d, E):
    """``(R, t) <- (R, t) * exp6(d)`` in place, with ``d = (v, omega)`` a body twist (linear part first); E is a
    3x3 work array.  Same operations, in the same order, as ``pin.SE3 * pin.exp6`` (bit-identical results)."""
    v0, v1, v2, w0, w1, w2 = d[0], d[1], d[2], d[3], d[4], d[5]
    t2 = (w0 * w0 + w1 * w1) + w2 * w2
    th = math.sqrt(t2)
    if th < _EXP6_TAYLOR:
        a_wxv = 0.5 - t2 / 24.0
        a_v = 1.0 - t2 / 6.0
        a_w = 1.0 / 6.0 - t2 / 120.0
        diag = 1.0 - t2 / 2.0
    else:
        ct = math.cos(th)
        inv_t2 = 1.0 / t2
        a_wxv = (1.0 - ct) * inv_t2
        a_v = math.sin(th) / th
        a_w = (1.0 - a_v) * inv_t2
        diag = ct
    aw = a_w * ((w0 * v0 + w1 * v1) + w2 * v2)
    p0 = a_v * v0 + aw * w0 + a_wxv * (w1 * v2 - w2 * v1)
    p1 = a_v * v1 + aw * w1 + a_wxv * (w2 * v0 - w0 * v2)
    p2 = a_v * v2 + aw * w2 + a_wxv * (w0 * v1 - w1 * v0)
    w = (w0, w1, w2)
    for i in range(3):
        for j in range(3):
            E[i, j] = a_wxv * w[i] * w[j]
    E[1, 0] += a_v * w2
    E[0, 1] -= a_v * w2
    E[2, 0] -= a_v * w1
    E[0, 2] += a_v * w1
    E[2, 1] += a_v * w0
    E[1, 2] -= a_v * w0
    E[0, 0] += diag
    E[1, 1] += diag
    E[2, 2] += diag
    # t <- t + R p and R <- R E, rows 0-1 summed left to right, row 2 right to left (as the compiled product)
    for i in range(2):
        t[i] = t[i] + ((R[i, 0] * p0 + R[i, 1] * p1) + R[i, 2] * p2)
        r0, r1, r2 = R[i, 0], R[i, 1], R[i, 2]
        for j in range(3):
            R[i, j] = (r0 * E[0, j] + r1 * E[1, j]) + r2 * E[2, j]
    t[2] = t[2] + (R[2, 0] * p0 + (R[2, 1] * p1 + R[2, 2] * p2))
    r0, r1, r2 = R[2, 0], R[2, 1], R[2, 2]
    for j in range(3):
        R[2, j] = r0 * E[0, j] + (r1 * E[1, j] + r2 * E[2, j])


@kernel
def _forward(R, t, a, p, target, tol, max_iter, L, U, J, res, A, delta, S, Rn):
    """Forward kinematics by Newton's method on the body twist, in place on the TCP pose (R, t) (the guess on
    entry): ``T <- T * exp6(J^-1 (b - b(T)))`` until ``max |b - b(T)| <= tol``, then one polar re-orthonormalisation
    of R if T was updated.  Returns (updates, residual); a residual above ``tol`` (or NaN): no convergence after
    ``max_iter`` updates or a non-finite residual (R, t then hold the last iterate)."""
    it = 0
    while True:
        err = _newton_step(R, t, a, p, target, L, U, J, res, A, delta)
        if err <= tol:
            break
        if it >= max_iter or not math.isfinite(err):
            return it, err
        _compose_exp6(R, t, delta, Rn)
        it += 1
    if it > 0:
        _reorthonormalize(R, S, Rn)
    return it, err


@kernel
def _joint_angles(R, t, a, p, L, U, out):
    """Universal-joint deflections (rad): out[0, i] base joint (leg vs world z), out[1, i] platform joint
    (leg vs platform z)."""
    _lengths(R, t, a, p, L, U)
    for i in range(6):
        cb = U[2, i]
        cp = R[0, 2] * U[0, i] + R[1, 2] * U[1, i] + R[2, 2] * U[2, i]
        out[0, i] = math.acos(min(1.0, max(-1.0, cb)))
        out[1, i] = math.acos(min(1.0, max(-1.0, cp)))


def no_convergence(target, err: float, it: int) -> KinematicsError:
    """The error of a forward kinematics that did not converge for the leg lengths ``target``."""
    return KinematicsError(
        f"forward kinematics did not converge for leg lengths {np.array2string(target, precision=6)} m "
        f"(max residual {err:.3g} m after {it} Newton updates); lengths outside the reachable set, a "
        "singular pose or a guess too far away")


# --------------------------------------------------------------------------------------------------------------
# kinematics object
# --------------------------------------------------------------------------------------------------------------

class StewartKinematics:
    """Inverse (closed form), forward (Newton, warm-started) and differential kinematics of the hexapod.

    Not thread-safe: the work arrays are shared between calls.
    """

    def __init__(self, params: StewartGeometryParams | None = None):
        self.params = params if params is not None else StewartGeometryParams()
        self.params.validate()
        a, p_plane = joint_layout(self.params)
        self._a = np.ascontiguousarray(a)
        # platform joints in the TCP frame: the joint plane lies tcp_offset_m below the TCP
        self._p = np.ascontiguousarray(p_plane - np.array([[0.0], [0.0], [self.params.tcp_offset_m]]))
        #: (base joints a, platform joints p) as the kernels take them (the internal arrays)
        self.geometry = (self._a, self._p)
        self._home = pin.SE3(np.eye(3), np.array([0.0, 0.0, self.params.home_height_m + self.params.tcp_offset_m]))
        # work arrays
        self._L = np.zeros(6)
        self._U = np.zeros((3, 6))
        self._J = np.zeros((6, 6))
        self._res = np.zeros(6)
        self._A = np.zeros((6, 7))
        self._delta = np.zeros(6)
        self._target = np.zeros(6)
        self._rates = np.zeros(6)
        self._S3 = np.zeros((3, 3))
        self._R3 = np.zeros((3, 3))
        self._fk_R = np.zeros((3, 3))
        self._fk_t = np.zeros(3)
        self._home_lengths = np.zeros(6)
        _lengths(self._home.rotation, self._home.translation, self._a, self._p, self._home_lengths, self._U)
        self._home_lengths.setflags(write=False)
        self._fk_last = self._home.copy()
        #: Newton iterations (pose updates) of the last :meth:`forward` call
        self.last_iterations = 0
        # warm up every kernel (compilation happens here, never on the fast path), once per geometry and process:
        # every instance after the first starts from the same state, home (50 µs each, four per gait run)
        if self.params not in _WARMED:
            self.forward(self._home_lengths + 1e-3)
            self.forward(self._home_lengths)
            self.joint_angles(self._home)
            self.twist_from_rates(self._home, self._res, self._delta)
            self.jacobian(self._home)
            self.inverse(self._home)
            self._fk_last = self._home.copy()
            self.last_iterations = 0
            _WARMED.add(self.params)

    # ----- geometry -----------------------------------------------------------------------------------------
    @property
    def home_pose(self) -> pin.SE3:
        """TCP pose at home: no rotation, TCP at (0, 0, home_height_m + tcp_offset_m)."""
        return self._home.copy()

    @property
    def home_lengths(self) -> np.ndarray:
        """Leg lengths (6,) at home (read-only array)."""
        return self._home_lengths

    @property
    def base_joints(self) -> np.ndarray:
        """Base joint centres a_i, (3, 6), world frame."""
        return self._a.copy()

    @property
    def platform_joints(self) -> np.ndarray:
        """Platform joint centres p_i, (3, 6), TCP frame."""
        return self._p.copy()

    # ----- inverse kinematics -------------------------------------------------------------------------------
    def inverse(self, pose: pin.SE3) -> np.ndarray:
        """Leg lengths b (6,) for the TCP pose (closed form)."""
        out = np.empty(6)
        _lengths(pose.rotation, pose.translation, self._a, self._p, out, self._U)
        return out

    def inverse_into(self, pose: pin.SE3, out: np.ndarray) -> np.ndarray:
        """Allocation-free :meth:`inverse`: writes the leg lengths into ``out`` (float64, (6,)) and returns it."""
        _lengths(pose.rotation, pose.translation, self._a, self._p, out, self._U)
        return out

    # ----- differential kinematics --------------------------------------------------------------------------
    def jacobian(self, pose: pin.SE3) -> np.ndarray:
        """Body Jacobian d(b)/d(V), (6, 6): V = (v, omega) of the TCP expressed in the TCP frame, linear first."""
        out = np.empty((6, 6))
        _lengths_jacobian(pose.rotation, pose.translation, self._a, self._p, self._L, self._U, out)
        return out

    def jacobian_into(self, pose: pin.SE3, out: np.ndarray, lengths_out: np.ndarray | None = None) -> np.ndarray:
        """Allocation-free :meth:`jacobian`; optionally also writes the leg lengths into ``lengths_out``."""
        L = self._L if lengths_out is None else lengths_out
        _lengths_jacobian(pose.rotation, pose.translation, self._a, self._p, L, self._U, out)
        return out

    def twist_from_rates(self, pose: pin.SE3, rates: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Body twist V (6,) of the TCP from the leg rates bdot: solves J(pose) V = bdot (allocation-free)."""
        _lengths_jacobian(pose.rotation, pose.translation, self._a, self._p, self._L, self._U, self._J)
        self._rates[:] = rates
        if not _solve6(self._J, self._rates, self._A, out):
            raise KinematicsError("singular hexapod Jacobian: the leg rates do not determine the platform twist")
        return out

    # ----- forward kinematics -------------------------------------------------------------------------------
    def forward(self, lengths, guess: pin.SE3 | None = None, tol: float = 1e-12, max_iter: int = 20) -> pin.SE3:
        """TCP pose for the leg lengths b (6,) by Newton's method on the body twist.

        Starts from ``guess`` or, if None, from the result of this object's previous :meth:`forward` call (home
        at first).  Iterates ``T <- T * exp6(J(T)^-1 (b - b(T)))`` until ``max |b - b(T)| <= tol`` (metres).
        Raises :class:`KinematicsError` after ``max_iter`` updates without convergence.  From the previous 1 ms
        solution it converges in 1-2 updates.
        """
        target = self._target
        target[:] = lengths
        M = guess if guess is not None else self._fk_last
        R, t = self._fk_R, self._fk_t
        R[:] = M.rotation
        t[:] = M.translation
        it, err = _forward(R, t, self._a, self._p, target, tol, max_iter, self._L, self._U, self._J, self._res,
                           self._A, self._delta, self._S3, self._R3)
        if not err <= tol:
            raise no_convergence(target, err, it)
        M = pin.SE3(R, t)
        self.last_iterations = it
        self._fk_last = M
        return M

    def note_forward(self, pose: pin.SE3, iterations: int) -> None:
        """Record a forward kinematics solved by the kernels outside :meth:`forward` (as :meth:`forward` does)."""
        self.last_iterations = iterations
        self._fk_last = pose

    # ----- joints ---------------------------------------------------------------------------------------------
    def joint_angles(self, pose: pin.SE3, out: np.ndarray | None = None) -> np.ndarray:
        """Universal-joint deflections (rad), (2, 6): row 0 base joints (leg axis vs world z), row 1 platform
        joints (leg axis vs platform z)."""
        if out is None:
            out = np.empty((2, 6))
        _joint_angles(pose.rotation, pose.translation, self._a, self._p, self._L, self._U, out)
        return out
