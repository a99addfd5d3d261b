"""Leg commands for the Stewart platform: inverse kinematics, velocity feedforward, limit checks.

Per synchronisation step the numerical part's interface state (q, qdot) becomes six leg commands (Insam 2022
§4.2.1, Fig. 4.4):

* desired leg length b_i = IK(q) (closed form, :class:`~rths_ros.core.platform.stewart.StewartKinematics`);
* desired leg rate bdot_i = J(pose) V_TCP(q, qdot) (analytic, no numerical differentiation);
* velocity feedforward (VFF, §4.2.1): the feedforward input is the desired leg position and the feedforward
  block a time derivative, so the output of the position controller is enhanced by the desired leg velocity,
  ``v_cmd,i = K_Pp (b_i - b'_i) + bdot_i``.  Here ``feedforward_velocity = bdot`` when ``vff`` is on, else 0;
* position-level feedforward (AFF, ch. 7: ``b_i,cmd = b_i + u_i``) is carried in ``feedforward_position``; the
  commander writes 0 and the adaptive filter adds its output there;
* command shaping (``coupling``, :mod:`rths_ros.core.methods.coupling`): before the inverse kinematics the interface
  state may be replaced by its forward prediction or by the inverse process model of the transfer system
  (transfer-dynamics cancellation, du Bois et al. 2010).  Off by default; then (q, qdot) pass unchanged.

Added delay (``added_delay_steps`` = n, default 0): the finished command of step k (after the limit check) waits n
steps and leaves at step k + n; the first n steps of a trial send the start pose (home lengths, zero rates).  It is
a pure extra delay of the transfer system placed before the commands leave the platform path, so it degrades the
loop in the same way on the digital twin, on the hardware drivers and on a ros2_control rig (the degradation of a
FACE sweep on a rig, Insam 2022 ch. 11; docs/fidelity.md).  Feedforward that the learners add afterwards (ILC,
AFF) is not delayed.  With n = 0 the command path is unchanged.

Limits (Insam 2022 §16.2, Riebe [183]): stroke (leg length range), leg speed and universal-joint angle.  A command
outside them raises :class:`LimitViolation` (the supervisor stops the test) unless ``enforce_limits`` is off.
The leg speed limit applies to the desired rate ``bdot`` and to the velocity feedforward the leg controller
adds (VFF plus any velocity-level learner output, e.g. ILC with ``injection: velocity``):
:meth:`PlatformCommander.check_command` checks a whole command after every feedforward was added.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rths_ros.core.methods.coupling import CommandShaper, CouplingParams
from rths_ros.core.numerics.kernel import kernel
from rths_ros.core.platform.interface import InterfaceMap
from rths_ros.params import param

__all__ = ["PlatformCommanderParams", "LegCommandArrays", "CommandRejected", "LimitViolation", "PlatformCommander"]


@dataclass(frozen=True)
class PlatformCommanderParams:
    """Feedforward and limit switches of the leg command generation."""

    vff: bool = param(False, "", doc="velocity feedforward: add the desired leg velocity bdot to the output of the "
                      "position controller (Insam 2022 §4.2.1)")
    enforce_limits: bool = param(True, "", doc="raise LimitViolation when a command leaves the stroke, leg speed or "
                                 "joint angle limits")
    coupling: CouplingParams = param(CouplingParams(), doc="command shaping before the inverse kinematics: forward "
                                     "prediction or transfer-dynamics cancellation (du Bois et al. 2010)")
    added_delay_steps: int = param(0, "steps", 0, 1000, "added pure delay of the leg commands: the command of "
                                   "step k leaves the platform path at step k + n, the first n steps of a trial hold "
                                   "the start pose; degrades the transfer system on every plant (FACE on a rig, "
                                   "docs/fidelity.md); 0 = none")


@dataclass
class LegCommandArrays:
    """Leg commands of one step, each (6,) in leg order 1..6: length b [m], velocity bdot [m/s],
    feedforward_velocity [m/s] (added after the position controller) and feedforward_position [m] (added to b)."""

    length: np.ndarray = field(default_factory=lambda: np.zeros(6))
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(6))
    feedforward_velocity: np.ndarray = field(default_factory=lambda: np.zeros(6))
    feedforward_position: np.ndarray = field(default_factory=lambda: np.zeros(6))

    def copy(self) -> LegCommandArrays:
        return LegCommandArrays(self.length.copy(), self.velocity.copy(), self.feedforward_velocity.copy(),
                                self.feedforward_position.copy())

    def fill(self, other: LegCommandArrays) -> None:
        """Copy ``other`` into these arrays (no allocation)."""
        self.length[:] = other.length
        self.velocity[:] = other.velocity
        self.feedforward_velocity[:] = other.feedforward_velocity
        self.feedforward_position[:] = other.feedforward_position


class CommandRejected(Exception):
    """The platform path refuses to execute a command (the message says why); the run aborts."""


class LimitViolation(CommandRejected):
    """A leg command outside the platform limits.  Attributes: ``leg`` (1..6), ``quantity``
    ('length', 'velocity', 'feedforward velocity', 'base joint angle', 'platform joint angle'), ``value`` and
    ``limit`` (SI units; angles in rad, the message shows degrees)."""

    def __init__(self, leg: int, quantity: str, value: float, limit: float, message: str):
        super().__init__(message)
        self.leg = leg
        self.quantity = quantity
        self.value = value
        self.limit = limit


@kernel
def _first_violation(length, velocity, ff_velocity, ang, lo, hi, vmax, amax):
    """Code of the first limit violation: 0 none, 1+i stroke of leg i, 7+i speed, 13+i base joint,
    19+i platform joint, 25+i speed of the velocity feedforward."""
    for i in range(6):
        if not (lo <= length[i] <= hi):
            return 1 + i
    for i in range(6):
        if not (abs(velocity[i]) <= vmax):
            return 7 + i
    for i in range(6):
        if not (abs(ff_velocity[i]) <= vmax):
            return 25 + i
    for i in range(6):
        if not (ang[0, i] <= amax):
            return 13 + i
    for i in range(6):
        if not (ang[1, i] <= amax):
            return 19 + i
    return 0


class PlatformCommander:
    """Interface state -> :class:`LegCommandArrays` for the next step, with limit checks."""

    def __init__(self, interface_map: InterfaceMap, params: PlatformCommanderParams | None = None):
        self.map = interface_map
        self.kinematics = interface_map.kinematics
        self.params = params if params is not None else PlatformCommanderParams()
        g = self.kinematics.params
        self._len_min = g.leg_length_min_m
        self._len_max = g.leg_length_max_m
        self._vel_max = g.leg_velocity_max_m_per_s
        self._ang_max = math.radians(g.joint_angle_max_deg)
        self._out = LegCommandArrays()
        self._ang = np.zeros((2, 6))
        self._q = np.zeros(interface_map.n)
        self._qd = np.zeros(interface_map.n)
        cp = self.params.coupling
        self.shaper = CommandShaper(cp, interface_map.n) if cp.active else None
        n = int(self.params.added_delay_steps)
        #: the added delay: a ring of the n newest finished commands (and their TCP poses, for the joint-angle
        #: check of the command that leaves); None without delay
        self._delay = [LegCommandArrays() for _ in range(n)] if n > 0 else None
        self._delay_pose = [self.kinematics.home_pose] * n
        self._delay_i = 0
        self._fresh = LegCommandArrays()
        self._sent_pose = self.kinematics.home_pose
        self.reset()
        # warm-up of the whole chain at home
        self.command(self._q, self._qd)
        self.reset()

    def reset(self) -> None:
        """Zero the internal command buffer and forget the last pose (the platform is back at home)."""
        for a in (self._out.length, self._out.velocity, self._out.feedforward_velocity,
                  self._out.feedforward_position):
            a.fill(0.0)
        self._out.length[:] = self.kinematics.home_lengths
        self.map.reset()
        if self.shaper is not None:
            self.shaper.reset()
        if self._delay is not None:        # the first n steps of a trial send the start pose
            for slot in self._delay:
                slot.length[:] = self.kinematics.home_lengths
                slot.velocity.fill(0.0)
                slot.feedforward_velocity.fill(0.0)
                slot.feedforward_position.fill(0.0)
            self._delay_pose = [self.kinematics.home_pose] * len(self._delay)
            self._delay_i = 0
        self._sent_pose = self.kinematics.home_pose

    @property
    def added_delay_steps(self) -> int:
        """The added delay n in steps (``params.added_delay_steps``)."""
        return 0 if self._delay is None else len(self._delay)

    @property
    def last(self) -> LegCommandArrays:
        """The internal buffer (the result of the last call without ``out``)."""
        return self._out

    def command(self, q, qdot, out: LegCommandArrays | None = None) -> LegCommandArrays:
        """Leg commands for the interface state (q, qdot) (len(dofs) each).

        Writes into ``out`` (or the internal buffer, which the next call overwrites) and returns it.
        Raises :class:`LimitViolation` if ``enforce_limits`` and a leg leaves its stroke, exceeds the leg speed or
        a universal joint exceeds the joint angle limit.
        """
        o = self._out if out is None else out
        c = o if self._delay is None else self._fresh      # with the added delay: the command of this step waits
        if self.shaper is not None:     # prediction / transfer-dynamics cancellation of the interface command
            q, qdot = self.shaper.shape(q, qdot)
        self.map.leg_commands_into(q, qdot, c.length, c.velocity)
        if self.params.vff:
            c.feedforward_velocity[:] = c.velocity
        else:
            c.feedforward_velocity.fill(0.0)
        c.feedforward_position.fill(0.0)
        if self.params.enforce_limits:
            self.check(c.length, c.velocity, self.map.last_platform_pose, c.feedforward_velocity)
        if self._delay is None:
            return o
        i = self._delay_i                   # the slot of step k - n: it leaves now, the command of step k takes it
        slot = self._delay[i]
        o.fill(slot)
        slot.fill(c)
        self._sent_pose, self._delay_pose[i] = self._delay_pose[i], self.map.last_platform_pose
        self._delay_i = (i + 1) % len(self._delay)
        return o

    def check_command(self, cmd: LegCommandArrays, pose=None) -> None:
        """Check a whole leg command as it will be sent: its length (with any position-level feedforward), its
        desired rate and its velocity feedforward (with any velocity-level feedforward); see :meth:`check`."""
        self.check(cmd.length, cmd.velocity, pose, cmd.feedforward_velocity)

    def check(self, length: np.ndarray, velocity: np.ndarray, pose=None, feedforward_velocity=None) -> None:
        """Raise :class:`LimitViolation` for the first leg (stroke, then speed, then joint angles) outside the
        limits.  ``pose`` (TCP, for the joint angles) defaults to the pose of the last command sent (with the
        added delay: the command of n steps earlier).  With
        ``feedforward_velocity`` (6,) the velocity feedforward must keep the leg speed limit as well."""
        lo, hi, vmax, amax = self._len_min, self._len_max, self._vel_max, self._ang_max
        if pose is None:
            pose = self.map.last_platform_pose if self._delay is None else self._sent_pose
        ang = self.kinematics.joint_angles(pose, self._ang)
        ffv = velocity if feedforward_velocity is None else np.asarray(feedforward_velocity, dtype=float)
        code = _first_violation(length, velocity, ffv, ang, lo, hi, vmax, amax)
        if code == 0:
            return
        kind, i = divmod(code - 1, 6)
        if kind == 4:
            v = float(ffv[i])
            raise LimitViolation(i + 1, "feedforward velocity", v, vmax,
                                 f"leg {i + 1}: commanded velocity feedforward {v:.6f} m/s exceeds the leg speed "
                                 f"limit {vmax:.4f} m/s (|feedforward velocity| <= {vmax:.4f} m/s)")
        if kind == 0:
            b = float(length[i])
            if b < lo:
                side, lim = "below the minimum", lo
            elif b > hi:
                side, lim = "above the maximum", hi
            else:
                side, lim = "not finite; allowed maximum", hi
            raise LimitViolation(i + 1, "length", b, lim,
                                 f"leg {i + 1}: commanded length {b:.6f} m is {side} {lim:.6f} m "
                                 f"(stroke limits [{lo:.4f}, {hi:.4f}] m)")
        if kind == 1:
            v = float(velocity[i])
            raise LimitViolation(i + 1, "velocity", v, vmax,
                                 f"leg {i + 1}: commanded velocity {v:.6f} m/s exceeds the leg speed limit "
                                 f"{vmax:.4f} m/s (|velocity| <= {vmax:.4f} m/s)")
        name = "base joint angle" if kind == 2 else "platform joint angle"
        a = float(ang[kind - 2, i])
        raise LimitViolation(i + 1, name, a, amax,
                             f"leg {i + 1}: {name} {math.degrees(a):.3f} deg exceeds the universal joint limit "
                             f"{math.degrees(amax):.3f} deg")
