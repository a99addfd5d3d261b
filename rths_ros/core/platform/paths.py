"""The platform path and the force path as the stewart_platform and ft_sensor nodes drive them.

Every numerical model family brings one object of each kind (built by :mod:`rths_ros.app.factory` from its
table), so the nodes run all of them with the same code, in the spirit of a ros2_control controller: claim
the inputs, ``update`` to an output.

:class:`PlatformPath` (stewart_platform):

* ``closed_loop``: False: the leg command of step k follows from the interface command of step k alone (inverse
  kinematics); True: it is a feedback controller: the leg command of step k+1 follows from the interface command
  and the measured legs of step k (the building benchmark's tracking controller);
* ``start_lengths``: leg lengths at a trial's first step;
* ``reset()``; ``command(position, velocity, measured) -> LegCommandArrays`` (``measured``: the measured first
  leg length, closed-loop paths only; raises :class:`~rths_ros.core.platform.commander.CommandRejected`);
* ``check(cmd)``: the limits of a command changed after :meth:`command` (raises ``CommandRejected``);
* ``achieved(lengths, velocities) -> (q, q')``: the interface state of measured legs;
* ``commander``: the :class:`~rths_ros.core.platform.commander.PlatformCommander` that the feedforward learners
  (ILC, AFF) add to, or None where they do not apply;
* ``add_feedforward(cmd, u)``: add an adaptive filter's position-level output ``u`` (6,) to a command and check
  the limits again (raises ``CommandRejected``).

:class:`ForcePath` (ft_sensor): ``needs_leg_state`` (the load needs the measured legs of the same step),
``reset()`` and ``process(wrench, lengths) -> (force, measured, contact)`` (sequences of the model's force
width; may raise ``CommandRejected`` for a load beyond a capacity).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from rths_ros.core.platform.commander import CommandRejected, LegCommandArrays, PlatformCommander
from rths_ros.core.platform.interface import InterfaceMap

__all__ = ["PlatformPath", "ForcePath", "InterfacePath", "ScalarForcePath"]


@runtime_checkable
class PlatformPath(Protocol):
    closed_loop: bool
    start_lengths: np.ndarray
    commander: PlatformCommander | None

    def reset(self) -> None: ...

    def command(self, position, velocity, measured: float | None = None) -> LegCommandArrays: ...

    def check(self, cmd: LegCommandArrays) -> None: ...

    def achieved(self, lengths, velocities) -> tuple[Sequence[float], Sequence[float]]: ...

    def add_feedforward(self, cmd: LegCommandArrays, u) -> None: ...


@runtime_checkable
class ForcePath(Protocol):
    needs_leg_state: bool

    def reset(self) -> None: ...

    def process(self, wrench, lengths=None) -> tuple[Sequence[float], Sequence[float], bool]: ...


class InterfacePath:
    """Open-loop path of the 1-D interface: the interface limit, inverse kinematics, velocity feedforward and the
    leg limits (:class:`~rths_ros.core.platform.commander.PlatformCommander`)."""

    closed_loop = False

    def __init__(self, imap: InterfaceMap, commander: PlatformCommander, interface_limit_m: float):
        self.map = imap
        self.commander = commander
        self.start_lengths = np.array(imap.kinematics.home_lengths, dtype=float)
        self._lin = [i for i, d in enumerate(imap.params.dofs) if d in ("x", "y", "z")]
        self._q_lim = float(interface_limit_m)

    def reset(self) -> None:
        self.commander.reset()

    def command(self, position, velocity, measured: float | None = None) -> LegCommandArrays:
        for i in self._lin:
            if abs(position[i]) > self._q_lim:
                raise CommandRejected(f"interface displacement {float(position[i]):.6g} m beyond "
                                      f"safety.interface_limit_m = {self._q_lim:g} m")
        return self.commander.command(position, velocity)

    def check(self, cmd: LegCommandArrays) -> None:
        self.commander.check(cmd.length, cmd.velocity)

    def achieved(self, lengths, velocities):
        return self.map.achieved(lengths, velocities)

    def add_feedforward(self, cmd: LegCommandArrays, u) -> None:
        """``b += u`` on every leg; the leg limits are checked again (the stroke holds whatever the filter adds)."""
        cmd.length += u
        cmd.feedforward_position += u
        if self.commander.params.enforce_limits:
            self.commander.check(cmd.length, cmd.velocity)


class ScalarForcePath:
    """Force path of a processor whose ``process(wrench)`` returns scalars ``(force, measured, contact)``."""

    needs_leg_state = False

    def __init__(self, processor):
        self.processor = processor

    def reset(self) -> None:
        self.processor.reset()

    def process(self, wrench, lengths=None):
        f, m, contact = self.processor.process(wrench)
        return (f,), (m,), contact
