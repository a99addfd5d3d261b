"""Distances between joint centres and between legs, for the consistency checks of a hexapod geometry
(:meth:`rths_ros.core.platform.stewart.StewartGeometryParams.validate`) and its report
(:mod:`rths_ros.core.platform.geometry_report`)."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["JOINT_TOLERANCE_M", "closest_pair", "segment_distance", "closest_legs", "crossing_legs"]

#: two joint centres closer than this are one joint given twice; two leg axes closer than this cross
JOINT_TOLERANCE_M = 1e-3


def closest_pair(points: np.ndarray) -> tuple[float, int, int]:
    """The two closest of the points (3, n): (distance, i, j) with i < j."""
    best = (math.inf, 0, 1)
    for i in range(points.shape[1]):
        for j in range(i + 1, points.shape[1]):
            d = float(np.linalg.norm(points[:, i] - points[:, j]))
            if d < best[0]:
                best = (d, i, j)
    return best


def _point_to_segment(x, p0, d) -> float:
    dd = float(d @ d)
    t = 0.0 if dd == 0.0 else min(1.0, max(0.0, float((x - p0) @ d) / dd))
    return float(np.linalg.norm(x - (p0 + t * d)))


def segment_distance(p0, p1, q0, q1) -> tuple[float, np.ndarray]:
    """Shortest distance between the segments p0-p1 and q0-q1 (3-vectors) and the midpoint of the closest points
    (the interior minimum of the convex distance, else the smallest endpoint-to-segment distance)."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, b, e, c, f = d1 @ d1, d1 @ d2, d2 @ d2, d1 @ r, d2 @ r
    den = a * e - b * b
    if den > 1e-12 * a * e:
        s, t = (b * f - c * e) / den, (a * f - b * c) / den
        if 0.0 <= s <= 1.0 and 0.0 <= t <= 1.0:
            x, y = p0 + s * d1, q0 + t * d2
            return float(np.linalg.norm(x - y)), 0.5 * (x + y)
    ends = ((p0, q0, d2), (p1, q0, d2), (q0, p0, d1), (q1, p0, d1))
    k = min(range(4), key=lambda m: _point_to_segment(*ends[m]))
    x, s0, dd = ends[k]
    return _point_to_segment(x, s0, dd), x


def closest_legs(a: np.ndarray, b: np.ndarray) -> tuple[float, int, int, float]:
    """The two closest legs a_i-b_i (joint centres (3, 6) each, one frame): (distance, i, j, height z of the
    closest points)."""
    best = (math.inf, 0, 1, 0.0)
    for i in range(6):
        for j in range(i + 1, 6):
            d, mid = segment_distance(a[:, i], b[:, i], a[:, j], b[:, j])
            if d < best[0]:
                best = (d, i, j, float(mid[2]))
    return best


def _orient(o, p, q) -> float:
    """Twice the signed area of the triangle o, p, q in the x-y plane."""
    return float((p[0] - o[0]) * (q[1] - o[1]) - (p[1] - o[1]) * (q[0] - o[0]))


def crossing_legs(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float, float] | None:
    """The first two legs a_i-b_i that cross: seen from above (projected on the x-y plane) their axes intersect, or
    in space they come within JOINT_TOLERANCE_M.  Returns (i, j, distance of the axes in space, height z of their
    closest points), or None.  A leg seen end-on (vertical) crosses nothing from above."""
    for i in range(6):
        for j in range(i + 1, 6):
            p0, p1, q0, q1 = a[:, i], b[:, i], a[:, j], b[:, j]
            d, mid = segment_distance(p0, p1, q0, q1)
            o1, o2 = _orient(p0, p1, q0), _orient(p0, p1, q1)
            o3, o4 = _orient(q0, q1, p0), _orient(q0, q1, p1)
            if d < JOINT_TOLERANCE_M or (o1 * o2 < 0.0 and o3 * o4 < 0.0):
                return i, j, d, float(mid[2])
    return None
