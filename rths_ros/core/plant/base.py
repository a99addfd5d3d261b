"""What every plant offers the loop: the :class:`Plant` protocol and :class:`PlantFault`.

The sim_plant node and the virtual run drive a plant through these members only (in the ros2_control spirit:
``write`` the command, ``read`` the measurement, here one call per synchronisation step):

* ``reset(noise_seed) -> output``: back to the trial's start; the measurement of sample 0;
* ``step(length, feedforward_velocity=None) -> output``: apply the command (leg lengths and the velocity
  feedforward; the servo-hydraulic benchmark reads its actuator command from ``length[0]``) for one step, return
  the measurement of the next sample;
* ``start_lengths``: leg lengths at a trial's start (a command to hold between trials);
* ``kinematics``: the Stewart kinematics whose leg limits apply to the commands, or None (no legs to limit).

An ``output`` has ``lengths``, ``velocities``, ``currents`` and ``wrench`` (arrays of 6).  The Stewart
platform's twin (:class:`~rths_ros.core.plant.sim_plant.SimPlant`), the benchmark's servo-hydraulic twin
(:class:`~rths_ros.core.models.building.rths.ServoActuatorTwin`) and, behind the UDP protocols, a rig or its
emulator (:mod:`rths_ros.app.emulated_rig`) are the plants.  A plant that can no longer go on (an actuator beyond
its capacity) raises :class:`PlantFault`; the run aborts with its message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Plant", "PlantFault", "PlantOutput"]


@dataclass
class PlantOutput:
    """One sample of a plant's measurement: ``lengths``, ``velocities``, ``currents`` and ``wrench`` (arrays of 6;
    what each entry means is the plant's documented mapping)."""

    lengths: np.ndarray
    velocities: np.ndarray
    currents: np.ndarray
    wrench: np.ndarray


class PlantFault(RuntimeError):
    """The plant cannot go on (the message says why); the run aborts."""


@runtime_checkable
class Plant(Protocol):
    start_lengths: np.ndarray
    kinematics: Any

    def reset(self, noise_seed: int) -> Any: ...

    def step(self, length, feedforward_velocity=None) -> Any: ...
