"""Mapping between the interface coordinates of the numerical part and the Stewart platform.

The numerical part commands an interface displacement vector q (Insam 2022: z, len(dofs) entries) measured from the
interface's home; the platform must impose it on the specimen.  Insam 2022 §2.8 step 4: "inverse
kinematics: Z = z (pure Z motion) -> desired leg lengths b_i"; step 7: "b'_i -> direct kinematics -> z'".

Interface frame
---------------
The interface frame I is rigidly attached to the moving plate: origin ``specimen_offset_m`` above the TCP
(along the TCP z axis), orientation

* ``upright``: the TCP axes;
* ``upside_down`` (the thesis' contact test, §4.2.4): the TCP axes turned by 180 deg about X, i.e.
  ``R_TCP_I = diag(1, -1, -1)``.  The specimen hangs in the numerical model's world but stands inverted on the
  plate, so model "up" is physical down.  Being a proper rotation it maps consistently:
  +x -> +X, +y -> -Y, +z -> -Z for translations and rx -> +rX, ry -> -rY, rz -> -rZ for rotations.

Interface coordinates
---------------------
q is the pose of I relative to its home pose I0, expressed in I0 (the numerical model's fixed frame):
``T_I0_I(q) = SE3(exp3(r), d)`` with d = (x, y, z) the displacement of the interface point and r = (rx, ry, rz)
the rotation vector.  Entries not listed in ``dofs`` stay 0.  Rates: ``d'`` and ``r'``; the body angular velocity
is ``omega_I = Jexp3(r) r'`` (for a single rotation axis r' is simply the angular rate).

The platform TCP pose follows as ``T_W_TCP(q) = T_W_I0 * T_I0_I(q) * T_I_TCP`` with
``T_W_I0 = T_W_TCP(home) * T_TCP_I``.  With the upside-down mount and dofs=("z",), q = [z] gives a pure platform
translation ``Z = Z_home - z``: the platform rises towards the fixed plate when the interface moves down.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from rths_ros.core.platform.interface_kernels import ACHIEVED_OK, achieved_translation, leg_commands_translation
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.params import ParameterError, param

__all__ = ["InterfaceMapParams", "InterfaceMap", "DOF_NAMES"]

DOF_NAMES = ("x", "y", "z", "rx", "ry", "rz")
_DOF_INDEX = {name: i for i, name in enumerate(DOF_NAMES)}


@dataclass(frozen=True)
class InterfaceMapParams:
    """Which interface coordinates the numerical part drives and how the specimen sits on the plate."""

    dofs: tuple[str, ...] = param(("z",), "", doc="interface coordinates, in the order of the q vector "
                                  "(each one of x, y, z [m], rx, ry, rz [rad, rotation vector])", choices=DOF_NAMES)
    mount: str = param("upside_down", "", doc="specimen orientation on the plate: upside_down = interface frame "
                       "turned 180 deg about X (interface +z -> platform -Z)", choices=("upside_down", "upright"))
    specimen_offset_m: float = param(0.0, "m", -1.0, 1.0, "interface point above the TCP along the platform z axis")

    def validate(self) -> None:
        if len(self.dofs) == 0:
            raise ParameterError("dofs: () is not allowed; expected at least one of " + ", ".join(DOF_NAMES))
        for d in self.dofs:
            if d not in _DOF_INDEX:
                raise ParameterError(f"dofs: {d!r} is not allowed; expected each one of " + ", ".join(DOF_NAMES))
        if len(set(self.dofs)) != len(self.dofs):
            raise ParameterError(f"dofs: {list(self.dofs)!r} is not allowed; expected each coordinate at most once")


class InterfaceMap:
    """Interface coordinates <-> platform pose and leg lengths (see module doc for the conventions).

    Keeps its own forward-kinematics warm start (the last achieved pose); :meth:`reset` returns it to home.
    Not thread-safe (shared work arrays).
    """

    def __init__(self, params: InterfaceMapParams | None, kinematics: StewartKinematics):
        self.params = params if params is not None else InterfaceMapParams()
        self.params.validate()
        self.kinematics = kinematics
        self.n = len(self.params.dofs)
        self._idx = np.array([_DOF_INDEX[d] for d in self.params.dofs], dtype=np.int64)
        self._has_rot = bool(np.any(self._idx >= 3))
        r_mount = np.diag([1.0, -1.0, -1.0]) if self.params.mount == "upside_down" else np.eye(3)
        self._T_tcp_i = pin.SE3(r_mount, np.array([0.0, 0.0, self.params.specimen_offset_m]))
        self._T_i_tcp = self._T_tcp_i.inverse()
        self._T_w_i0 = kinematics.home_pose * self._T_tcp_i
        self._T_i0_w = self._T_w_i0.inverse()
        # translation-only fast path: T_W_TCP = (R_home, t_home + R_W_I0 d)
        self._R_w_i0 = self._T_w_i0.rotation.copy()
        self._t_home = kinematics.home_pose.translation.copy()
        self._R_home = kinematics.home_pose.rotation.copy()
        # work arrays
        self._x6 = np.zeros(6)
        self._xd6 = np.zeros(6)
        self._V = np.zeros(6)
        self._J = np.zeros((6, 6))
        self._b = np.zeros(6)
        self._bd = np.zeros(6)
        self._q = np.zeros(self.n)
        self._qd = np.zeros(self.n)
        self._pose = kinematics.home_pose
        self._fk_last = kinematics.home_pose
        self._kernel_setup(kinematics)
        #: TCP pose of the last :meth:`leg_commands_into` / :meth:`to_platform` call
        self.last_platform_pose = kinematics.home_pose
        #: TCP pose of the last :meth:`achieved_into` call (the forward-kinematics warm start)
        self.last_achieved_pose = kinematics.home_pose
        # warm-up (kernels of the kinematics are already compiled; this checks the wiring once)
        self.leg_commands_into(self._q, self._qd, self._b, self._bd)
        self.achieved_into(kinematics.home_lengths, np.zeros(6), self._q, self._qd)
        self.reset()

    def _kernel_setup(self, kin: StewartKinematics) -> None:
        """Constants and work arrays of the translation-only kernels (:mod:`.interface_kernels`)."""
        self.geometry = kin.geometry
        #: (R_I0_W, t_I0_W, R_TCP_I, t_TCP_I) of the achieved state
        self.frames = (np.array(self._T_i0_w.rotation, order="F"), self._T_i0_w.translation.copy(),
                       np.array(self._T_tcp_i.rotation, order="F"), self._T_tcp_i.translation.copy())
        self._r_tcp_i = self.frames[2]          # column-major, as pinocchio holds it
        self.fk_work = (np.zeros(6), np.zeros((3, 6)), np.zeros((6, 6)), np.zeros(6), np.zeros((6, 7)),
                        np.zeros(6), np.zeros((3, 3)), np.zeros((3, 3)))
        self._fk_r = np.zeros((3, 3))
        self._fk_t = np.zeros(3)
        self._ach = (np.zeros(6), np.zeros(6), np.zeros((3, 3)), np.zeros(3), np.asfortranarray(np.zeros((3, 3))),
                     np.zeros(3), np.zeros(3), np.zeros(3))
        self._cmd_work = (np.zeros(3), np.zeros(3), np.zeros(3), np.zeros((3, 6)))

    # ------------------------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the warm start: the next :meth:`achieved` starts Newton at home."""
        self._fk_last = self.kinematics.home_pose
        self.last_achieved_pose = self._fk_last
        self.last_platform_pose = self.kinematics.home_pose

    def reset_warm_start(self, rotation, translation) -> None:
        """The achieved pose (the forward kinematics' warm start) after a compiled loop advanced it."""
        self._fk_last = pin.SE3(np.asarray(rotation, dtype=float), np.asarray(translation, dtype=float))
        self.last_achieved_pose = self._fk_last

    @property
    def dofs(self) -> tuple[str, ...]:
        return self.params.dofs

    @property
    def interface_home(self) -> pin.SE3:
        """Pose of the interface frame at home in the world frame, T_W_I0."""
        return self._T_w_i0.copy()

    def _expand(self, q, x6) -> None:
        x6[:] = 0.0
        x6[self._idx] = q

    # ----- interface -> platform --------------------------------------------------------------------------------
    def to_platform(self, q) -> pin.SE3:
        """TCP pose (world frame) for the interface displacement q (len(dofs))."""
        q = np.asarray(q, dtype=np.float64)
        if q.shape != (self.n,):
            raise ValueError(f"q: expected {self.n} values for dofs {self.params.dofs}, got shape {q.shape}")
        return self._pose_from_x6(q)

    def _pose_from_x6(self, q) -> pin.SE3:
        x6 = self._x6
        self._expand(q, x6)
        if not self._has_rot:
            return pin.SE3(self._R_home, self._t_home + self._R_w_i0 @ x6[:3])
        d = pin.SE3(pin.exp3(x6[3:]), x6[:3])
        return self._T_w_i0 * d * self._T_i_tcp

    def leg_commands(self, q, qdot) -> tuple[np.ndarray, np.ndarray]:
        """Leg lengths b (6,) and rates bdot (6,) for the interface state (q, qdot)."""
        b = np.empty(6)
        bd = np.empty(6)
        self.leg_commands_into(q, qdot, b, bd)
        return b, bd

    def leg_commands_into(self, q, qdot, b_out: np.ndarray, bdot_out: np.ndarray) -> None:
        """Allocation-light :meth:`leg_commands`: IK for b, body Jacobian times the TCP body twist for bdot.
        Stores the TCP pose in :attr:`last_platform_pose`."""
        if not self._has_rot:
            x3, xd3, t, u = self._cmd_work
            q = np.asarray(q, dtype=np.float64)
            qdot = np.asarray(qdot, dtype=np.float64)
            if q.shape != (self.n,) or qdot.shape != (self.n,):
                raise ValueError(f"q, qdot: expected {self.n} values each for dofs {self.params.dofs}, got shapes "
                                 f"{q.shape}, {qdot.shape}")
            leg_commands_translation(q, qdot, self._idx, self._R_home, self._t_home, self._R_w_i0, self._r_tcp_i, *self.geometry, x3,
                                     xd3, self._V, t, u, self._J, b_out, bdot_out)
            self.last_platform_pose = pin.SE3(self._R_home, t)
            return
        pose = self._pose_from_x6(q)
        xd = self._xd6
        self._expand(qdot, xd)
        x6 = self._x6
        # interface body twist V_I = (R^T d', Jexp3(r) r'), then V_TCP = Ad(T_TCP_I) V_I
        if self._has_rot:
            rot = pin.exp3(x6[3:])
            v_i = rot.T @ xd[:3]
            w_i = pin.Jexp3(x6[3:]) @ xd[3:]
            m = self._T_tcp_i.act(pin.Motion(v_i, w_i))
            self._V[:3] = m.linear
            self._V[3:] = m.angular
        else:
            # no rotation: V_TCP linear = R_TCP_I d' (the offset lever arm needs omega, which is zero)
            rm = self._T_tcp_i.rotation
            self._V[:3] = rm @ xd[:3]
            self._V[3:] = 0.0
        self.kinematics.jacobian_into(pose, self._J, lengths_out=b_out)
        np.dot(self._J, self._V, out=bdot_out)
        self.last_platform_pose = pose

    # ----- platform -> interface --------------------------------------------------------------------------------
    def from_platform(self, pose: pin.SE3, q_out: np.ndarray | None = None) -> np.ndarray:
        """Interface coordinates q (len(dofs)) of a TCP pose (the full 6-vector is in :meth:`full_coordinates`)."""
        x6 = self.full_coordinates(pose)
        out = np.empty(self.n) if q_out is None else q_out
        out[:] = x6[self._idx]
        return out

    def full_coordinates(self, pose: pin.SE3) -> np.ndarray:
        """All six interface coordinates (x, y, z, rx, ry, rz) of a TCP pose (new array)."""
        d = self._T_i0_w * pose * self._T_tcp_i
        return np.concatenate([d.translation, pin.log3(d.rotation)])

    def achieved(self, lengths, lengths_rate) -> tuple[np.ndarray, np.ndarray]:
        """Achieved interface state (q', qdot') from measured leg lengths b' and rates b'dot."""
        q = np.empty(self.n)
        qd = np.empty(self.n)
        self.achieved_into(lengths, lengths_rate, q, qd)
        return q, qd

    def achieved_into(self, lengths, lengths_rate, q_out: np.ndarray, qdot_out: np.ndarray) -> None:
        """Allocation-light :meth:`achieved`: forward kinematics warm-started from the previous achieved pose,
        TCP body twist from ``J V = b'dot``, mapped to the interface rates.  Stores the pose in
        :attr:`last_achieved_pose`."""
        kin = self.kinematics
        if not self._has_rot:
            r, t = self._fk_r, self._fk_t
            r[:] = self._fk_last.rotation
            t[:] = self._fk_last.translation
            target, rates, mid_r, mid_t, d_r, d_t, lin, ang = self._ach
            code, it, _ = achieved_translation(np.asarray(lengths, dtype=np.float64),
                                               np.asarray(lengths_rate, dtype=np.float64), r, t, *self.geometry,
                                               1e-12, 20, self.fk_work, target, rates, self._V, self.frames, mid_r,
                                               mid_t, d_r, d_t, lin, ang, self._idx, q_out, qdot_out)
            if code != ACHIEVED_OK:     # the kinematics raises the error with its message
                pose = kin.forward(lengths, guess=self._fk_last)
                kin.twist_from_rates(pose, lengths_rate, self._V)
            pose = pin.SE3(r, t)
            kin.note_forward(pose, it)
            self._fk_last = pose
            self.last_achieved_pose = pose
            return
        pose = kin.forward(lengths, guess=self._fk_last)
        self._fk_last = pose
        self.last_achieved_pose = pose
        kin.twist_from_rates(pose, lengths_rate, self._V)
        d = self._T_i0_w * pose * self._T_tcp_i
        rot = d.rotation
        x6 = self._x6
        x6[:3] = d.translation
        xd = self._xd6
        m = self._T_tcp_i.actInv(pin.Motion(self._V))  # body twist of I
        xd[:3] = rot @ m.linear
        if self._has_rot:
            x6[3:] = pin.log3(rot)
            xd[3:] = pin.Jlog3(rot) @ m.angular
        else:
            x6[3:] = 0.0
            xd[3:] = 0.0
        q_out[:] = x6[self._idx]
        qdot_out[:] = xd[self._idx]

