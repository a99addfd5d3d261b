"""Simulated prosthetic foot on the ground plate: nonlinear, angle-dependent sole contact with friction.

Insam 2022 §16.2 and appendix C: the tested foot is an Ottobock 1C40 (ESAR carbon foot).  Fig. C.1 gives
its measured force-displacement curves for several loading angles alpha between shank and ground (90 deg = heel
and forefoot on the ground, > 90 deg tilted towards the toes, < 90 deg towards the heel); the text states only that
the curves are nonlinear, that the forefoot is relatively stiff (the forces rise rapidly once it is deformed,
ch. 17) and that k_f = 4950 N/m is used as the linear approximation.  The digitised curves are not in the text, so
the model below is a documented construction that reproduces these qualitative facts and the stated k_f.

Model
-----
The foot is a rigid keel (pose prescribed by the platform) carrying a sole of ``n_points`` compliant contact
points on the line y_F = -h_0f of the foot frame F (x_F from the heel, -l_h, to the toe, +l_ff; l_h = 0.06 m,
l_ff = 0.19 m, h_0f = 0.16 m from Table A.7 / §16.1.2).  The sole is flat from the heel to the ball
(x_F = ``ball_fraction`` l_ff, a grid node); ahead of the ball the toe rises linearly to ``toe_spring_m`` at the
tip.  Point i
has the stiffness ``k_i = w_i k'(x_i)`` (trapezoid weights w_i) with the stiffness per unit length ``k'_h`` under the
heel (x < 0) and ``forefoot_stiffness_ratio * k'_h`` under the forefoot; ``k'_h`` is scaled so that the points of the
flat part sum to ``k_f``: at alpha = 90 deg and small compression the foot is exactly the linear spring k_f (the
thesis' linear approximation).  Each point in contact (penetration d > 0 of the plate plane y_G = 0) carries::

    n_i = max(0, k_i d (1 + (d / d_h)^2) + k_i tau_d d')          (hardening spring + damper, never pulling)
    t_i = -mu n_i tanh(|v_t| / v_s) v_t / |v_t|                    (regularised Coulomb friction, |t_i| <= mu n_i)

v_t is the velocity of the keel point along the plate.  The angle dependence and the roll-over follow from the
geometry: a pitched foot touches with the heel (alpha < 90 deg) or the forefoot (alpha > 90 deg) edge first, the
contact patch grows with the compression (progressive force-displacement curve) and moves from heel to toe as the
shank rotates, which shifts the centre of pressure without an ankle torque (ch. 17: "solely due to the rolling
motion of the foot").  The forces act at the point's projection on the plate surface.

Choices where the source is silent (all parameters): stiffness ratio forefoot/heel 3, hardening length d_h = 0.04 m,
ball at 0.6 l_ff, toe spring 0.01 m, damping time 2 ms, friction coefficient 0.5, regularisation speed 0.01 m/s,
foot mass 0.5 kg at (0.03, -0.10, 0) m in F.  Not modelled: tangential compliance and stiction of the sole (the
friction is a function of the slip velocity only), the foot's inertia (quasi-static), the sole width (a line
contact: frontal-plane moments come only from the toe-out), and the keel's own bending shape.

Output
------
The 6-axis wrench the foot exerts on the sensor, ``[Fx, Fy, Fz, Mx, My, Mz]`` in the sensor frame S about the S
origin (the quantity a force/torque sensor under the foot measures): ground reaction on the foot plus the foot's
weight (quasi-static), transported to S.  Inputs are the foot state in the ground frame G (y_G normal to the plate,
pointing away from it; see :mod:`rths_ros.core.models.gait.interface`) and the sensor pose in F.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.numerics.kernel import kernel
from rths_ros.params import ParameterError, param

__all__ = ["ProstheticFootParams", "ProstheticFoot", "FootContact"]


@dataclass(frozen=True)
class ProstheticFootParams:
    """Sole geometry, stiffness and friction of the simulated 1C40 foot (see module doc for the choices)."""

    k_f_n_per_m: float = param(4950.0, "N/m", 1.0, 1e8, "linear stiffness at foot flat (alpha = 90 deg, small "
                               "compression); the thesis' approximation of fig. C.1")
    heel_length_m: float = param(0.06, "m", 0.0, 0.5, "l_h: heel to mid-foot point (leg axis)")
    forefoot_length_m: float = param(0.19, "m", 0.01, 0.5, "l_ff: mid-foot point to toe")
    foot_height_m: float = param(0.16, "m", 0.01, 1.0, "h_0f: IFP (ankle adapter) to sole along the shank")
    forefoot_stiffness_ratio: float = param(3.0, "", 0.01, 100.0,
                                            "stiffness per unit length of the forefoot relative to the heel")
    hardening_length_m: float = param(0.04, "m", 1e-4, 100.0,
                                      "d_h of n = k d (1 + (d/d_h)^2); large values give a linear sole")
    ball_fraction: float = param(0.6, "", 0.0, 1.0, "ball (end of the flat sole) at this fraction of l_ff")
    toe_spring_m: float = param(0.01, "m", 0.0, 0.1, "rise of the toe tip above the flat sole")
    damping_time_s: float = param(0.002, "s", 0.0, 1.0, "sole damping c_i = k_i * damping_time_s")
    friction_coefficient: float = param(0.5, "", 0.0, 3.0, "Coulomb friction coefficient mu of sole on plate")
    slip_velocity_m_per_s: float = param(0.01, "m/s", 1e-6, 1.0, "regularisation speed v_s of the friction")
    n_points: int = param(31, "", 3, 1000, "contact points along the sole")
    foot_mass_kg: float = param(0.5, "kg", 0.0, 20.0, "mass of foot + adapter below the sensor (weight only)")
    foot_com_m: tuple[float, ...] = param([0.03, -0.10, 0.0], "m", -1.0, 1.0, "centre of mass in the foot frame",
                                          length=3)

    def validate(self) -> None:
        if self.heel_length_m + self.forefoot_length_m <= 0.0:
            raise ParameterError("heel_length_m/forefoot_length_m: the sole has zero length")


@dataclass
class FootContact:
    """Contact summary of the last evaluation: total normal force [N], tangential force magnitude [N], true CoP
    (x, z) in G [m] (NaN without contact) and the number of points in contact."""

    normal_force_n: float
    tangential_force_n: float
    cop_x_m: float
    cop_z_m: float
    n_contact: int


@kernel
def _foot_wrench(R, p, v, w, sole, k, c, d_h, mu, v_s, grav, mass, com, R_fs, p_fs, out, aux):
    """Wrench of the foot on the sensor (S axes, about the S origin) for the foot pose (R = R_G_F, p = IFP in G),
    IFP velocity v and angular velocity w (G axes).  aux = [sum n, |sum t|, sum n x, sum n z, n_contact]."""
    # sensor origin in G
    ps0 = p[0] + R[0, 0] * p_fs[0] + R[0, 1] * p_fs[1] + R[0, 2] * p_fs[2]
    ps1 = p[1] + R[1, 0] * p_fs[0] + R[1, 1] * p_fs[1] + R[1, 2] * p_fs[2]
    ps2 = p[2] + R[2, 0] * p_fs[0] + R[2, 1] * p_fs[1] + R[2, 2] * p_fs[2]
    fx = 0.0
    fy = 0.0
    fz = 0.0
    mx = 0.0
    my = 0.0
    mz = 0.0
    sn = 0.0
    snx = 0.0
    snz = 0.0
    tx = 0.0
    tz = 0.0
    nc = 0
    for i in range(sole.shape[1]):
        rx = R[0, 0] * sole[0, i] + R[0, 1] * sole[1, i] + R[0, 2] * sole[2, i]
        ry = R[1, 0] * sole[0, i] + R[1, 1] * sole[1, i] + R[1, 2] * sole[2, i]
        rz = R[2, 0] * sole[0, i] + R[2, 1] * sole[1, i] + R[2, 2] * sole[2, i]
        y = p[1] + ry
        if y >= 0.0:
            continue
        d = -y
        # point velocity v + w x r
        vx = v[0] + w[1] * rz - w[2] * ry
        vy = v[1] + w[2] * rx - w[0] * rz
        vz = v[2] + w[0] * ry - w[1] * rx
        q = d / d_h
        n = k[i] * d * (1.0 + q * q) - c[i] * vy
        if n <= 0.0:
            continue
        nc += 1
        vt = math.sqrt(vx * vx + vz * vz)
        if vt > 0.0:
            s = mu * n * math.tanh(vt / v_s) / vt
            gx = -s * vx
            gz = -s * vz
        else:
            gx = 0.0
            gz = 0.0
        # application point: projection on the plate surface
        cx = p[0] + rx
        cz = p[2] + rz
        fx += gx
        fy += n
        fz += gz
        tx += gx
        tz += gz
        ax = cx - ps0
        ay = -ps1
        az = cz - ps2
        mx += ay * gz - az * n
        my += az * gx - ax * gz
        mz += ax * n - ay * gx
        sn += n
        snx += n * cx
        snz += n * cz
    # weight of the foot at its centre of mass
    if mass > 0.0:
        gx = mass * grav[0]
        gy = mass * grav[1]
        gz = mass * grav[2]
        ax = p[0] + R[0, 0] * com[0] + R[0, 1] * com[1] + R[0, 2] * com[2] - ps0
        ay = p[1] + R[1, 0] * com[0] + R[1, 1] * com[1] + R[1, 2] * com[2] - ps1
        az = p[2] + R[2, 0] * com[0] + R[2, 1] * com[1] + R[2, 2] * com[2] - ps2
        fx += gx
        fy += gy
        fz += gz
        mx += ay * gz - az * gy
        my += az * gx - ax * gz
        mz += ax * gy - ay * gx
    # G -> S: R_G_S = R R_fs; out = R_G_S^T f
    for j in range(3):
        sx = R[0, 0] * R_fs[0, j] + R[0, 1] * R_fs[1, j] + R[0, 2] * R_fs[2, j]
        sy = R[1, 0] * R_fs[0, j] + R[1, 1] * R_fs[1, j] + R[1, 2] * R_fs[2, j]
        sz = R[2, 0] * R_fs[0, j] + R[2, 1] * R_fs[1, j] + R[2, 2] * R_fs[2, j]
        out[j] = sx * fx + sy * fy + sz * fz
        out[3 + j] = sx * mx + sy * my + sz * mz
    aux[0] = sn
    aux[1] = math.sqrt(tx * tx + tz * tz)
    aux[2] = snx
    aux[3] = snz
    aux[4] = nc


class ProstheticFoot:
    """Rigid keel with a compliant, rubbing sole (see module doc).  :meth:`wrench` is the per-step evaluation
    (numba kernel, no allocation with ``out``)."""

    def __init__(self, params: ProstheticFootParams | None = None):
        self.params = params if params is not None else ProstheticFootParams()
        self.params.validate()
        p = self.params
        n = p.n_points
        x_ball = p.ball_fraction * p.forefoot_length_m
        # the ball is a grid node: heel..ball and ball..toe are sampled with about the same spacing
        span = p.heel_length_m + p.forefoot_length_m
        n_toe = int(round((n - 1) * (p.forefoot_length_m - x_ball) / span))
        x = np.concatenate([np.linspace(-p.heel_length_m, x_ball, n - n_toe),
                            np.linspace(x_ball, p.forefoot_length_m, n_toe + 1)[1:]])
        rise = np.where(x > x_ball, p.toe_spring_m * (x - x_ball) / max(p.forefoot_length_m - x_ball, 1e-12), 0.0)
        self._sole = np.ascontiguousarray(np.vstack([x, -p.foot_height_m + rise, np.zeros(n)]))
        wts = np.empty(n)                         # trapezoid weights
        wts[1:-1] = 0.5 * (x[2:] - x[:-2])
        wts[0] = 0.5 * (x[1] - x[0])
        wts[-1] = 0.5 * (x[-1] - x[-2])
        dens = np.where(x < 0.0, 1.0, p.forefoot_stiffness_ratio)
        k = wts * dens
        flat = rise == 0.0
        k *= p.k_f_n_per_m / k[flat].sum()
        self._k = np.ascontiguousarray(k)
        self._c = np.ascontiguousarray(k * p.damping_time_s)
        self._com = np.array(p.foot_com_m, dtype=float)
        self._aux = np.zeros(5)
        self._out = np.zeros(6)
        # warm-up (compile or load from cache)
        self.wrench(np.eye(3), np.array([0.0, p.foot_height_m - 1e-3, 0.0]), np.zeros(3), np.zeros(3), np.eye(3),
                    np.zeros(3), np.array([0.0, 9.81, 0.0]))

    @property
    def sole_points(self) -> np.ndarray:
        """Contact points (3, n) in the foot frame (read-only copy)."""
        return self._sole.copy()

    @property
    def point_stiffness(self) -> np.ndarray:
        """Linear stiffness k_i of each contact point [N/m]."""
        return self._k.copy()

    def wrench(self, R_gf, p_g, v_g, w_g, R_fs, p_fs, gravity_g, out: np.ndarray | None = None) -> np.ndarray:
        """Wrench ``[Fx, Fy, Fz, Mx, My, Mz]`` [N, N m] of the foot on the sensor (S axes, about the S origin).

        ``R_gf`` (3, 3) and ``p_g`` (3,): foot frame orientation and IFP position in G; ``v_g``, ``w_g``: IFP
        velocity and angular velocity in G axes; ``R_fs``, ``p_fs``: sensor frame in F; ``gravity_g`` (3,):
        gravitational acceleration in G.  The last contact summary is in :attr:`contact`.
        """
        o = self._out if out is None else out
        p = self.params
        _foot_wrench(np.ascontiguousarray(R_gf, dtype=np.float64), np.asarray(p_g, dtype=np.float64),
                     np.asarray(v_g, dtype=np.float64), np.asarray(w_g, dtype=np.float64), self._sole, self._k,
                     self._c, p.hardening_length_m, p.friction_coefficient, p.slip_velocity_m_per_s,
                     np.asarray(gravity_g, dtype=np.float64), p.foot_mass_kg, self._com,
                     np.ascontiguousarray(R_fs, dtype=np.float64), np.asarray(p_fs, dtype=np.float64), o, self._aux)
        return o if out is not None else o.copy()

    def wrench_of_state(self, state, out: np.ndarray | None = None) -> np.ndarray:
        """:meth:`wrench` for a :class:`~rths_ros.core.models.gait.interface.FootState`."""
        return self.wrench(state.R_gf, state.p, state.v, state.w, state.R_fs, state.p_fs, state.gravity_g, out)

    @property
    def contact(self) -> FootContact:
        a = self._aux
        n = float(a[0])
        if n > 0.0:
            cx, cz = float(a[2] / n), float(a[3] / n)
        else:
            cx = cz = math.nan
        return FootContact(n, float(a[1]), cx, cz, int(a[4]))

    def secant_stiffness(self, load_n: float, alpha_rad: float = math.pi / 2, d_max_m: float = 0.1,
                         n: int = 1000) -> float:
        """Secant stiffness [N/m] of the :meth:`loading_curve` at ``alpha_rad`` where the force reaches ``load_n``
        (displacement grid of ``n`` points up to ``d_max_m``): the linear foot spring with the same compression
        under that load."""
        d = np.linspace(d_max_m / n, d_max_m, n)
        f = self.loading_curve(alpha_rad, d)
        i = min(max(int(np.searchsorted(f, load_n)), 1), d.size - 1)
        return float(load_n / d[i])

    def loading_curve(self, alpha_rad: float, displacements_m) -> np.ndarray:
        """Static force along the shank [N] for displacements [m] along the shank measured from first contact,
        shank at ``alpha_rad`` to the ground (the loading of fig. C.1; no toe-out, no friction, no weight).

        The foot is pitched by ``pi/2 - alpha`` about the lateral axis; first contact is the lowest sole point.
        """
        theta = math.pi / 2 - alpha_rad
        c, s = math.cos(theta), math.sin(theta)
        R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        y_low = float(np.min((R @ self._sole)[1]))
        shank = R[:, 1]                                 # shank axis (ankle -> knee) in G
        out = np.empty(len(displacements_m))
        p = self.params
        buf = np.zeros(6)
        for j, dsp in enumerate(displacements_m):
            # move the ankle along -shank by dsp starting from the first-contact pose
            pos = np.array([0.0, -y_low, 0.0]) - float(dsp) * shank
            _foot_wrench(R, pos, np.zeros(3), np.zeros(3), self._sole, self._k, self._c, p.hardening_length_m,
                         0.0, p.slip_velocity_m_per_s, np.zeros(3), 0.0, self._com, np.eye(3), np.zeros(3), buf,
                         self._aux)
            # buf is in F axes (R_fs = I) about the IFP; the force along the shank is the F-frame y component
            out[j] = buf[1]
        return out
