"""The platform path and the force path of a rig with one linear actuator (a linear motor or a shaker) instead of
the Stewart platform: the ``linear_motor`` family (:mod:`rths_ros.app.factory`).

The interface DoF is the actuator's own axis, so there is no kinematics: the interface command is the actuator's
position demand (LegCommand ``length[0]``), the achieved state is the measured actuator position and velocity
(LegState ``length[0]``, ``velocity[0]``) and the interface force is the force sensor's reading along the axis
(RawWrench ``force.x``).  Both objects satisfy the protocols of :mod:`rths_ros.core.platform.paths`, so the
stewart_platform and ft_sensor nodes run them unchanged.
"""
from __future__ import annotations

import math

import numpy as np

from rths_ros.core.platform.commander import CommandRejected, LegCommandArrays

__all__ = ["LinearActuatorPath", "DirectForce"]


class LinearActuatorPath:
    """Open-loop path: demand = interface command, or ``shaper(interface command)`` (a compensation of the
    transfer system, e.g. the damper rig's inverse process model; ``shaper.reset()`` starts a trial), or 0 with
    ``follow_command = False`` (pure adaptive feedforward: the filter's output, :meth:`add_feedforward`, is the
    demand).  An interface command or a demand beyond ``limit_m`` (or not finite) is refused and the run aborts
    (the actuator's own stroke clipping is the plant's).  No leg commander: the leg-space ILC does not apply."""

    closed_loop = False
    commander = None

    def __init__(self, limit_m: float, shaper=None, follow_command: bool = True):
        self.limit_m = float(limit_m)
        self.shaper = shaper
        self.follow = bool(follow_command)   # False: the demand is the adaptive filter's output alone (pure AFF)
        self.start_lengths = np.zeros(6)
        self._out = LegCommandArrays()

    def reset(self) -> None:
        self._out.length[:] = 0.0
        self._out.velocity[:] = 0.0
        if self.shaper is not None:
            self.shaper.reset()

    def _limit(self, what: str, x: float) -> None:
        if not (math.isfinite(x) and abs(x) <= self.limit_m):
            raise CommandRejected(f"{what} {x:.6g} m beyond safety.interface_limit_m = {self.limit_m:g} m")

    def command(self, position, velocity, measured: float | None = None) -> LegCommandArrays:
        x = float(position[0])
        self._limit("interface command" if self.shaper is not None else "actuator demand", x)
        out = self._out
        if self.shaper is not None:
            r = float(self.shaper(x))
            self._limit("actuator demand", r)
            out.length[0] = r
        else:
            out.length[0] = x if self.follow else 0.0
        out.velocity[0] = float(velocity[0]) if self.follow else 0.0
        out.feedforward_position[0] = 0.0
        return out

    def add_feedforward(self, cmd: LegCommandArrays, u) -> None:
        """Add an adaptive filter's output ``u[0]`` to the demand and check the limit again."""
        cmd.length[0] += u[0]
        cmd.feedforward_position[0] += u[0]
        self._limit("actuator demand", float(cmd.length[0]))

    def check(self, cmd: LegCommandArrays) -> None:
        self._limit("actuator demand", float(cmd.length[0]))

    @staticmethod
    def achieved(lengths, velocities) -> tuple[list, list]:
        return [float(lengths[0])], [float(velocities[0])]


class DirectForce:
    """The force sensor sits on the actuator's axis: its reading (``wrench[0]``) is the interface force, with no
    tare, gravity compensation or contact gate (the specimen is fixed to the actuator: always in contact)."""

    def reset(self) -> None:
        pass

    def process(self, wrench) -> tuple[float, float, bool]:
        f = float(wrench[0])
        return f, f, True
