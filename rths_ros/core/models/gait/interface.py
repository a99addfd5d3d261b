"""3-DoF sagittal interface between the VPP amputee model and the Stewart platform (prosthetic-foot RTHS).

Insam 2022 §16.1-16.2 and ch. 17: the numerical part (the VPP amputee) and the experimental part (an
Ottobock 1C40 right foot on the force/torque sensor of the hexapod) share three interface DoFs in the sagittal
plane, the position of the interface point (IFP, the stump end = the ankle adapter) ``(x_IFP, y_IFP)`` and the leg
angle ``alpha_R``; the interface load is two planar forces and one moment.  The foot is mounted with about 7 deg
toe-out.  The thesis gives no kinematic transforms; the chain below is our documented choice (docs/gait_interface.md).

Frames (all right-handed)
-------------------------
* Model frame M (the VPP model): x forward (walking direction), y up (away from the ground, y = 0 is the ground),
  z = x cross y (lateral, to the walker's right).  Leg angle ``alpha`` is measured from the ground on the rear
  side: the unit vector foot -> hip is ``(-cos alpha, sin alpha)``, so the leg axis hip -> foot is
  ``e = (cos alpha, -sin alpha)``; ``alpha < 90 deg`` puts the foot ahead of the hip (touch-down, 75 deg),
  ``alpha = 90 deg`` is a vertical leg (foot flat).  The leg normal is ``e_perp = (sin alpha, cos alpha)`` (``e``
  turned +90 deg about +z; forward for a vertical leg).
* Ground frame G: M shifted by the reference foot point, ``p_G = p_M - (x_ref, 0, 0)``; physically its origin is
  the point of the fixed ground plate that stands for the model point ``(x_ref, 0)``.  The plate hangs above the
  platform and the foot is mounted upside down, so model "up" (+y_G) is physically DOWN: ``R_W_G = R_x(-90 deg)``
  (x_G = X_W, y_G = -Z_W, z_G = +Y_W).
* Adapter frame D: origin at the IFP (ankle adapter point), ``R_G_D = R_z(theta)`` with ``theta = pi/2 - alpha``
  (the shank pitches with the leg; theta > 0 lifts the toes).  y_D is the shank axis (ankle -> knee).
* Foot frame F: D turned by the toe-out about the shank axis, ``R_D_F = R_y(-psi)`` for a right foot
  (``R_y(+psi)`` for a left one), psi = ``toe_out_deg``: the toes point outwards (+z for the right foot).  The sole
  of the undeformed foot lies at y_F = -h_0f; the leg axis meets it at the mid-foot point.
* TCP frame: identity orientation at the platform's home pose; the IFP sits at ``ankle_offset_m`` in the TCP frame
  and ``R_TCP_D = R_x(-90 deg)`` (TCP +Z = shank axis pointing at the plate = -y_D).  The toe-out is part of the
  foot mounting, so the TCP itself only pitches (no yaw).
* Sensor frame S: axes of the TCP, origin at ``sensor_offset_m`` in the TCP frame.

Chain: ``T_W_TCP(q) = T_W_G * T_G_D(q) * T_TCP_D^-1``, ``T_G_D(q) = SE3(R_z(pi/2 - alpha), (x - x_ref, y, 0))``.
The plate position ``T_W_G`` is chosen so that the neutral command (x = x_ref, y = h_0f, alpha = 90 deg) puts the
TCP at the platform's home pose (the undeformed foot then just touches the plate), plus ``plate_clearance_m`` and
``ground_offset_xy_m``.  Leg rates come from the TCP body twist and the hexapod body Jacobian (no numerical
differentiation).

Loads
-----
The sensor measures the wrench the foot exerts on it, ``(F, M)`` in S about the S origin.  Quasi-statically that
is the ground reaction on the foot plus the weight of the mounted payload (foot + adapter below the measuring
plane).  :meth:`GaitInterface.sagittal_wrench` subtracts the payload weight (``payload_mass_kg`` at
``payload_com_foot_m``), rotates into G with the pose of the sensor and moves the moment to the IFP.  The result is
the load the foot exerts on the stump end, as the model sees it:

* ``f_x, f_y`` (M axes) -- for a loaded foot f_y > 0 (the ground pushes the stump up);
* ``f_parallel = f . e`` (along hip -> foot; NEGATIVE in compression, the sign of eq. 16.1
  ``m_IFP l_u'' = F_int,par - d_u l_u' - k_u (l_u - l_0u)`` with l_u growing towards the foot);
* ``f_perp = f . e_perp``;
* ``m_z`` = moment about the IFP around +z (counter-clockwise in the x-y plane).  The thesis' M_int is taken about
  the negative z axis, i.e. ``M_int = -m_z``.

Centre of pressure: the ground reaction acts on the plate plane y = 0, so its moment about the G origin is
``c x f`` with ``c = (c_x, 0, c_z)`` plus a free moment about y: ``c_x = M_O,z / f_y``, ``c_z = -M_O,x / f_y``
with ``M_O = M_IFP + p_IFP x f``; in planar form ``c_x = x_IFP + (m_z - y_IFP f_x) / f_y`` (ch. 17, "torque
equilibrium about the FTS").

Limits (§16.2): leg stroke 0.18 m, leg speed (0.25 m/s used, at most 0.5 m/s) and universal-joint angles 45 deg
from :class:`~rths_ros.core.platform.stewart.StewartGeometryParams` (checked by :class:`~rths_ros.core.platform.commander.
PlatformCommander.check`, raising :class:`~rths_ros.core.platform.commander.LimitViolation`); sensor force 1e4 N and moment
500 N m per axis and the reaction frame's vertical load 500 N, raising :class:`WrenchLimitViolation` (a
LimitViolation with ``leg = 0``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rths_ros.core.models.gait import kernels as gk
from rths_ros.core.platform.commander import LimitViolation, PlatformCommander, PlatformCommanderParams
from rths_ros.core.platform.interface import InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.stewart import KinematicsError, StewartKinematics
from rths_ros.params import ParameterError, param

__all__ = ["GaitInterfaceParams", "GaitInterface", "SagittalWrench", "WrenchLimitViolation", "FootState",
           "leg_unit_vectors", "rot_x", "rot_y", "rot_z"]


def rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _cross(a, b) -> np.ndarray:
    """3-vector cross product (np.cross costs tens of microseconds per call; this is on the 1 ms path)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def leg_unit_vectors(alpha_rad: float) -> tuple[np.ndarray, np.ndarray]:
    """Leg axis ``e`` (hip -> foot) and its normal ``e_perp`` (e turned +90 deg about +z), 2-vectors in M."""
    c, s = math.cos(alpha_rad), math.sin(alpha_rad)
    return np.array([c, -s]), np.array([s, c])


@dataclass(frozen=True)
class GaitInterfaceParams:
    """Mounting geometry, payload and load limits of the prosthetic-foot interface (Insam 2022 §16.2)."""

    toe_out_deg: float = param(7.0, "deg", -30.0, 30.0,
                               "toe-out of the mounted foot about the shank axis (7 deg, the typical human value)")
    side: str = param("right", "", doc="which foot is tested (sets the sense of the toe-out)", choices=("right", "left"))
    foot_height_m: float = param(0.16, "m", 0.01, 1.0, "h_0f: IFP (ankle adapter point) to the sole along the "
                                 "shank axis, undeformed (Table A.7)")
    ankle_offset_m: tuple[float, ...] = param([0.0, 0.0, 0.10], "m", -1.0, 1.0,
                                              "IFP position in the TCP frame (sensor + pyramid adapter height)",
                                              length=3)
    sensor_offset_m: tuple[float, ...] = param([0.0, 0.0, 0.0], "m", -1.0, 1.0,
                                               "origin of the FTS measuring frame in the TCP frame (axes = TCP axes)",
                                               length=3)
    plate_clearance_m: float = param(0.0, "m", -0.1, 0.5, "gap between the undeformed foot-flat sole and the plate "
                                     "with the platform at home")
    ground_offset_xy_m: tuple[float, ...] = param([0.0, 0.0], "m", -0.5, 0.5,
                                                  "horizontal offset (X_W, Y_W) of the plate reference point from "
                                                  "above the home IFP", length=2)
    payload_mass_kg: float = param(0.5, "kg", 0.0, 20.0, "mass below the sensor's measuring plane (foot + adapter), "
                                   "subtracted as a pose-dependent weight")
    payload_com_foot_m: tuple[float, ...] = param([0.03, -0.10, 0.0], "m", -1.0, 1.0,
                                                  "centre of mass of the payload in the foot frame F", length=3)
    g_m_per_s2: float = param(9.81, "m/s^2", 0.0, 100.0, "gravitational acceleration")
    fts_force_max_n: float = param(1e4, "N", 0.0, 1e6, "force range of the FTS, per axis (Kistler: 1e4 N)")
    fts_moment_max_n_m: float = param(500.0, "N m", 0.0, 1e5, "moment range of the FTS, per axis (500 N m)")
    frame_load_max_n: float = param(500.0, "N", 0.0, 1e6, "admissible load of the reaction frame normal to the plate "
                                    "(estimated 500 N)")
    enforce_limits: bool = param(True, "", doc="raise LimitViolation on a leg command or wrench outside the limits")
    cop_min_force_n: float = param(5.0, "N", 0.0, 1e4, "below this normal force the CoP is undefined (NaN)")

    def validate(self) -> None:
        if not self.ankle_offset_m[2] > 0.0:
            raise ParameterError(f"ankle_offset_m: {list(self.ankle_offset_m)!r} is not allowed; expected the IFP "
                                 "above the TCP (z > 0)")


class WrenchLimitViolation(LimitViolation):
    """A measured load outside the sensor range or the reaction frame's capacity.  ``leg`` is 0; ``quantity`` is
    'FTS force Fx' .. 'FTS moment Mz' or 'frame vertical load'."""


@dataclass
class SagittalWrench:
    """Interface load on the stump end in the model frame (see module doc for the signs).  N, N m, m."""

    f_x: float
    f_y: float
    f_parallel: float
    f_perp: float
    m_z: float
    f_lateral: float        # z component (out of the sagittal plane)
    normal_force: float     # ground reaction normal to the plate (= f_y); the reaction frame's load
    cop_x: float            # centre of pressure, model x (NaN below cop_min_force_n)
    cop_z: float            # lateral CoP (NaN below cop_min_force_n)

    def as_array(self) -> np.ndarray:
        """``[f_parallel, f_perp, m_z]``."""
        return np.array([self.f_parallel, self.f_perp, self.m_z])


@dataclass
class FootState:
    """Pose and velocity of the foot in the ground frame G: rotation R_G_F (3, 3), IFP position p (3,), IFP velocity
    v (3,) and angular velocity w (3,) in G axes, and the sensor pose in the foot frame (R_F_S, p_F_S)."""

    R_gf: np.ndarray
    p: np.ndarray
    v: np.ndarray
    w: np.ndarray
    R_fs: np.ndarray
    p_fs: np.ndarray
    gravity_g: np.ndarray   # gravitational acceleration in G (+y: the foot hangs upside down)


class GaitInterface:
    """Sagittal command ``q = (x_IFP, y_IFP, alpha_R)`` <-> platform, measured wrench -> sagittal loads.

    Not thread-safe.  ``kinematics`` defaults to the standard :class:`StewartKinematics`; its parameters carry the
    stroke, leg speed and joint-angle limits.
    """

    def __init__(self, params: GaitInterfaceParams | None = None, kinematics: StewartKinematics | None = None):
        self.params = params if params is not None else GaitInterfaceParams()
        self.params.validate()
        self.kinematics = kinematics if kinematics is not None else StewartKinematics()
        p = self.params
        kin = self.kinematics
        # limit checks of the leg commands are those of the platform commander (stroke, speed, joint angles)
        self._commander = PlatformCommander(InterfaceMap(InterfaceMapParams(), kin),
                                            PlatformCommanderParams(enforce_limits=True))
        psi = math.radians(p.toe_out_deg) * (-1.0 if p.side == "right" else 1.0)
        self._R_df = rot_y(psi)
        self._R_tcp_d = rot_x(-math.pi / 2)
        self._a_t = np.array(p.ankle_offset_m, dtype=float)
        self._T_tcp_d = pin.SE3(self._R_tcp_d, self._a_t)
        self._T_d_tcp = self._T_tcp_d.inverse()
        self._T_tcp_s = pin.SE3(np.eye(3), np.array(p.sensor_offset_m, dtype=float))
        home = kin.home_pose
        ifp_home = home.rotation @ self._a_t + home.translation
        g0 = ifp_home + np.array([p.ground_offset_xy_m[0], p.ground_offset_xy_m[1],
                                  p.foot_height_m + p.plate_clearance_m])
        self._T_w_g = pin.SE3(rot_x(-math.pi / 2), g0)
        self._T_g_w = self._T_w_g.inverse()
        # sensor frame in the foot frame (fixed): T_F_S = T_F_D T_D_TCP T_TCP_S
        self._T_f_s = pin.SE3(self._R_df.T, np.zeros(3)) * self._T_d_tcp * self._T_tcp_s
        self._com_f = np.array(p.payload_com_foot_m, dtype=float)
        self._gravity_g = self._T_w_g.rotation.T @ np.array([0.0, 0.0, -p.g_m_per_s2])
        self._V = np.zeros(6)
        self._J = np.zeros((6, 6))
        self.last_tcp_pose = home
        self._fk_last = home
        # the frames and work arrays of the kernels (rths_ros.core.models.gait.kernels)
        fr = [np.asfortranarray(x) for T in (self._T_g_w, self._T_w_g, self._T_tcp_d, self._T_d_tcp, self._T_tcp_s)
              for x in (T.rotation, T.translation)]
        self.frames = (*fr, np.asfortranarray(self._R_df), np.zeros(3))
        self.work = (np.zeros((3, 3)), np.zeros(3), np.zeros((3, 3)), np.zeros(3), np.zeros((3, 3)), np.zeros(3),
                     np.zeros((3, 3)), np.zeros(3), np.zeros((3, 3)), np.zeros(3), np.zeros(3), np.zeros(3),
                     np.zeros(3))
        self._fk_work = (np.zeros(6), np.zeros((3, 6)), np.zeros((6, 6)), np.zeros((6, 7)), np.zeros(6))
        self._pose_r = np.zeros((3, 3))
        self._pose_t = np.zeros(3)
        self._load = np.zeros(len(gk.LOAD_FIELDS))

    # ----- geometry -----------------------------------------------------------------------------------------
    @property
    def ground_pose(self) -> pin.SE3:
        """T_W_G: the plate reference frame in the platform's world frame."""
        return self._T_w_g.copy()

    @property
    def sensor_in_foot(self) -> pin.SE3:
        """T_F_S: the sensor frame in the foot frame (fixed by the mounting)."""
        return self._T_f_s.copy()

    @property
    def gravity_in_ground(self) -> np.ndarray:
        """Gravitational acceleration in G axes, (0, +g, 0): the foot hangs upside down under the plate."""
        return self._gravity_g.copy()

    @property
    def toe_out_rotation(self) -> np.ndarray:
        """R_D_F, the fixed toe-out rotation of the foot about its shank axis."""
        return self._R_df.copy()

    def adapter_pose(self, q, x_ref_m: float = 0.0) -> pin.SE3:
        """T_G_D: IFP position and shank orientation in the ground frame for ``q = (x_IFP, y_IFP, alpha_R)``."""
        x, y, alpha = float(q[0]), float(q[1]), float(q[2])
        return pin.SE3(rot_z(math.pi / 2 - alpha), np.array([x - x_ref_m, y, 0.0]))

    def foot_pose(self, q, x_ref_m: float = 0.0) -> pin.SE3:
        """T_G_F: the foot frame (with toe-out) in the ground frame."""
        return self.adapter_pose(q, x_ref_m) * pin.SE3(self._R_df, np.zeros(3))

    def tcp_pose(self, q, x_ref_m: float = 0.0) -> pin.SE3:
        """T_W_TCP for the interface command q."""
        return self._T_w_g * self.adapter_pose(q, x_ref_m) * self._T_d_tcp

    def tcp_body_twist(self, q, qdot, out: np.ndarray | None = None, xd_ref_m_per_s: float = 0.0) -> np.ndarray:
        """Body twist (v, omega) of the TCP in TCP axes for the command rates ``qdot = (x', y', alpha')``;
        ``xd_ref_m_per_s`` = rate of the reference point x_ref (0 during a stance)."""
        out = np.empty(6) if out is None else out
        qd = np.asarray(qdot, dtype=float)
        gk.tcp_twist(float(q[2]), qd, float(xd_ref_m_per_s), self.frames, self.work, out)
        return out

    # ----- commands -----------------------------------------------------------------------------------------
    def leg_commands(self, q, qdot, x_ref_m: float = 0.0, check: bool | None = None,
                     xd_ref_m_per_s: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Leg lengths b (6,) [m] and rates bdot (6,) [m/s] for the command ``q = (x_IFP [m], y_IFP [m],
        alpha_R [rad])`` with rates ``qdot``.  ``x_ref_m`` = model x of the plate reference point (the foot point
        x_FP,R of the current stance) and ``xd_ref_m_per_s`` its rate (0 during a stance).  Raises :class:`LimitViolation` on a stroke, speed or joint-angle violation
        (if ``check``, default ``enforce_limits``)."""
        b, bd = np.empty(6), np.empty(6)
        L, U, J, A, rates = self._fk_work
        gk.leg_commands_pose(np.asarray(q, dtype=float), np.asarray(qdot, dtype=float), float(x_ref_m),
                             float(xd_ref_m_per_s), self.frames, self.work, *self.kinematics.geometry, U, self._J,
                             self._V, self._pose_r, self._pose_t, b, bd)
        pose = pin.SE3(self._pose_r, self._pose_t)
        self.last_tcp_pose = pose
        if self.params.enforce_limits if check is None else check:
            self._commander.check(b, bd, pose)
        return b, bd

    def command_from_tcp(self, pose: pin.SE3, x_ref_m: float = 0.0) -> np.ndarray:
        """Interface coordinates ``(x_IFP, y_IFP, alpha_R)`` of a TCP pose (sagittal part; the out-of-plane
        components of a real pose are ignored)."""
        q = np.empty(3)
        gk.command_from_pose(pose.rotation, pose.translation, self.frames, self.work, float(x_ref_m), q)
        return q

    def achieved(self, lengths, rates, x_ref_m: float = 0.0, xd_ref_m_per_s: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray]:
        """Achieved interface state (q', q'dot) from measured leg lengths and rates (forward kinematics,
        warm-started from the previous call)."""
        kin = self.kinematics
        pose = kin.forward(np.asarray(lengths, dtype=float), guess=self._fk_last)
        self._fk_last = pose
        L, U, J, A, rates_w = self._fk_work
        q, qd = np.empty(3), np.empty(3)
        if not gk.achieved_state(pose.rotation, pose.translation, np.asarray(rates, dtype=float), *kin.geometry, L, U,
                                 J, A, rates_w, self._V, self.frames, self.work, self._a_t, float(x_ref_m),
                                 float(xd_ref_m_per_s), q, qd):
            raise KinematicsError("singular hexapod Jacobian: the leg rates do not determine the platform twist")
        return q, qd

    def reset(self) -> None:
        """Forget the forward-kinematics warm start."""
        self._fk_last = self.kinematics.home_pose
        self.last_tcp_pose = self.kinematics.home_pose

    # ----- the foot seen from the ground ----------------------------------------------------------------------
    def foot_state(self, q, qdot, x_ref_m: float = 0.0, xd_ref_m_per_s: float = 0.0) -> FootState:
        """Pose and velocity of the foot in G for the interface state (for a simulated foot)."""
        T = self.foot_pose(q, x_ref_m)
        return FootState(T.rotation.copy(), T.translation.copy(),
                         np.array([float(qdot[0]) - xd_ref_m_per_s, float(qdot[1]), 0.0]),
                         np.array([0.0, 0.0, -float(qdot[2])]), self._T_f_s.rotation.copy(),
                         self._T_f_s.translation.copy(), self._gravity_g.copy())

    def foot_state_from_tcp(self, pose: pin.SE3, twist_body) -> FootState:
        """Foot state in G from a TCP pose and its body twist (e.g. the digital twin's true platform motion)."""
        R, p, v_ifp, w_g = np.empty((3, 3)), np.empty(3), np.empty(3), np.empty(3)
        gk.foot_state_pose(pose.rotation, pose.translation, np.asarray(twist_body, dtype=float), self.frames,
                           self.work, self._a_t, R, p, v_ifp, w_g)
        return FootState(R, p, v_ifp, w_g, self._T_f_s.rotation.copy(),
                         self._T_f_s.translation.copy(), self._gravity_g.copy())

    # ----- loads ----------------------------------------------------------------------------------------------
    def check_wrench(self, wrench) -> None:
        """Raise :class:`WrenchLimitViolation` if a sensor channel exceeds its range (per axis)."""
        p = self.params
        w = np.asarray(wrench, dtype=float)
        names = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")
        for i in range(6):
            lim = p.fts_force_max_n if i < 3 else p.fts_moment_max_n_m
            if not abs(w[i]) <= lim:
                unit = "N" if i < 3 else "N m"
                kind = "force" if i < 3 else "moment"
                raise WrenchLimitViolation(0, f"FTS {kind} {names[i]}", float(w[i]), lim,
                                           f"FTS {kind} {names[i]} = {w[i]:.3f} {unit} exceeds the sensor range "
                                           f"{lim:g} {unit} (|{names[i]}| <= {lim:g} {unit})")

    def sagittal_wrench(self, wrench, alpha_rad: float, pose: pin.SE3 | None = None, x_ref_m: float = 0.0,
                        check: bool | None = None) -> SagittalWrench:
        """Interface load on the stump end from the raw sensor wrench ``[Fx, Fy, Fz, Mx, My, Mz]`` (S frame, about
        the S origin, exerted by the foot on the sensor).

        ``pose`` = TCP pose at the measurement (achieved pose from forward kinematics; default the pose of the last
        leg command); ``alpha_rad`` = the model's leg angle that defines e and e_perp.  The moment is taken about
        the physical IFP of ``pose``.  Raises :class:`WrenchLimitViolation` on a sensor-range or frame-load
        violation (if ``check``, default ``enforce_limits``).
        """
        p = self.params
        w = np.asarray(wrench, dtype=float)
        do_check = p.enforce_limits if check is None else check
        if do_check:
            self.check_wrench(w)
        pose = self.last_tcp_pose if pose is None else pose
        o = self._load
        gk.sagittal_load(w, float(alpha_rad), pose.rotation, pose.translation, self.frames, self.work,
                         float(x_ref_m), float(p.payload_mass_kg), self._gravity_g, self._com_f,
                         float(p.cop_min_force_n), o)
        fx, fy, f_par, f_perp, m_z, f_lat, normal, cop_x, cop_z = (float(x) for x in o)
        if do_check and not normal <= p.frame_load_max_n:
            raise WrenchLimitViolation(0, "frame vertical load", normal, p.frame_load_max_n,
                                       f"reaction frame load {normal:.3f} N exceeds the admissible "
                                       f"{p.frame_load_max_n:g} N (force normal to the ground plate)")
        return SagittalWrench(f_x=fx, f_y=fy, f_parallel=f_par, f_perp=f_perp, m_z=m_z, f_lateral=f_lat,
                              normal_force=normal, cop_x=cop_x, cop_z=cop_z)

    def centre_of_pressure(self, f_x: float, f_y: float, m_z: float, x_ifp_m: float, y_ifp_m: float) -> float:
        """Planar CoP on the ground (model x) from the sagittal load about the IFP at (x_IFP, y_IFP):
        ``x_CoP = x_IFP + (m_z - y_IFP f_x) / f_y``; NaN if ``|f_y| < cop_min_force_n``."""
        if abs(f_y) < self.params.cop_min_force_n:
            return math.nan
        return x_ifp_m + (m_z - y_ifp_m * f_x) / f_y
