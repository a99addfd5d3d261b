"""A ros2_control rig as the plant: the settings (scenario section ``ros2_control``) and the joint mapping.

``plant = ros2_control`` replaces the simulated plant node by ``ros2_control_plant``
(:mod:`rths_ros.nodes.ros2_control_plant`), which drives a hexapod that a ros2_control controller manager runs:

* leg-length commands go out as ``std_msgs/Float64MultiArray`` (one value per joint, in the order of
  ``joint_names``) to a ``forward_command_controller`` (position interface) on ``command_topic``;
* the leg feedback comes back from the ``joint_state_broadcaster`` on ``joint_state_topic``
  (``sensor_msgs/JointState``, position = leg length [m], velocity [m/s]); the broadcaster's joint order is its
  own, the node maps the joints by name;
* the force/torque sensor is any ROS 2 driver publishing ``geometry_msgs/WrenchStamped``: the ft_sensor node
  reads it from ``standard_interfaces.wrench_input_topic``.

A ros2_control rig runs on its own clock, so this plant is for ``loop.mode = realtime`` only.  With
``emulate: true`` the run also starts ``ros2_control_emulator`` (:mod:`rths_ros.nodes.ros2_control_emulator`),
which behaves like forward_command_controller + joint_state_broadcaster + a WrenchStamped sensor driver around
the scenario's digital twin.  docs/hardware.md explains how to point the node at a real controller manager.

Joint mapping.  A rig's joint position need not be the leg length (joint to joint, in metres) that the rest of the
package works with: a drive may report the actuator stroke (zero at the retracted end), count in millimetres or
encoder units, or run the other way.  Per joint (legs 1..6, in the order of ``joint_names``)::

    leg_length = joint_offsets_m[i] + joint_signs[i] * joint_scales[i] * joint_position

:func:`lengths_from_positions` applies it to the broadcaster's positions, :func:`positions_from_lengths` inverts
it for the commands.  The defaults (offset 0, scale 1, sign +1) leave the values untouched (bit for bit), i.e. a
rig whose joint position is the leg length in metres.  Example: a rig whose joints report the stroke in metres,
0 at a leg length of 0.46 m, has ``joint_offsets_m: [0.46, 0.46, 0.46, 0.46, 0.46, 0.46]``; the same rig counting
the stroke in millimetres adds ``joint_scales: [0.001, ...]``; a leg whose drive counts positive when it
shortens, ``joint_signs: [1, 1, 1, 1, -1, 1]`` (with its offset = its length at joint position 0).
``rths commission`` (docs/commissioning.md) checks the mapping, the leg order and the signs on the rig.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rths_ros.params import ParameterError, param

__all__ = ["Ros2ControlParams", "check_topic", "joint_order", "lengths_from_positions", "positions_from_lengths",
           "velocities_from_joint_velocities"]

LEG_JOINTS = ("leg_1", "leg_2", "leg_3", "leg_4", "leg_5", "leg_6")


def check_topic(key: str, value: str, allow_empty: bool = False) -> None:
    """A ROS topic name in a scenario: absolute, no blanks, not ending in '/' ('' only with ``allow_empty``)."""
    if allow_empty and not value:
        return
    if not value.startswith("/") or value.endswith("/") or any(c.isspace() for c in value):
        raise ParameterError(f"{key}: {value!r} is not allowed; expected "
                             + ("'' (off) or " if allow_empty else "") + "an absolute ROS topic name such as "
                             "'/joint_states'")


@dataclass(frozen=True)
class Ros2ControlParams:
    command_topic: str = param("/forward_position_controller/commands", "",
                               doc="the forward_command_controller's command topic (std_msgs/Float64MultiArray, "
                                   "leg lengths in the order of joint_names)")
    joint_state_topic: str = param("/joint_states", "", doc="the joint_state_broadcaster's topic "
                                   "(sensor_msgs/JointState; joints matched by name)")
    joint_names: tuple[str, ...] = param(list(LEG_JOINTS), "", doc="the rig's joint names of legs 1 to 6, in the "
                                         "order of the controller's command vector", length=6)
    state_timeout_s: float = param(0.1, "s", 1e-3, 10.0, "a joint state older than this during the run aborts "
                                   "it (the rig stopped reporting)")
    ready_timeout_s: float = param(10.0, "s", 0.1, 600.0, "how long the node waits at start for the first joint "
                                   "state before it reports that none arrives")
    emulate: bool = param(False, "", doc="start ros2_control_emulator with the run: forward_command_controller + "
                          "joint_state_broadcaster + a WrenchStamped sensor driver around the digital twin")
    emulator_reverse_order: bool = param(True, "", doc="the emulated broadcaster lists the joints in reverse "
                                         "order (as a broadcaster may: the node must map them by name)")
    emulator_feedforward: str = param("none", "", doc="velocity feedforward of the emulated drives: none (position "
                                      "loop only, as the twin without the commander's feedforward) or difference "
                                      "(from successive commands)", choices=("none", "difference"))
    # -- the joint mapping: leg_length = offset + sign * scale * joint_position (module doc) --------------------
    joint_offsets_m: tuple[float, ...] = param([0.0] * 6, "m", -10.0, 10.0, "per joint (legs 1..6): the leg "
                                               "length at joint position 0 (e.g. 0.46 for a rig whose joints report "
                                               "the actuator stroke from 0 at a 0.46 m leg)", length=6)
    joint_scales: tuple[float, ...] = param([1.0] * 6, "m per joint unit", 1e-7, 1e3, "per joint: leg length per "
                                            "unit of joint position (1 for metres, 0.001 for millimetres); the "
                                            "direction is joint_signs", length=6)
    joint_signs: tuple[int, ...] = param([1] * 6, "", -1, 1, "per joint: +1 when the joint position grows with "
                                         "the leg length, -1 when it shrinks", length=6)
    # -- faults of the emulated rig (drills, `rths commission` tests; docs/commissioning.md) --------------------
    emulator_position_offset_m: float = param(0.0, "m", -10.0, 10.0, "emulate only: the emulated rig reports and "
                                              "takes joint position = leg length - this (0.46: a rig reporting the "
                                              "stroke from 0 at 0.46 m)")
    emulator_swap_legs: tuple[int, ...] = param([], "", 1, 6, "emulate only: empty or a pair of legs, e.g. [2, 3], "
                                                "whose command slots drive each other's physical legs (the joint "
                                                "states keep the true names)")
    emulator_sign_flip_legs: tuple[int, ...] = param([], "", 1, 6, "emulate only: legs whose command runs the "
                                                     "other way: a command d above the leg's start moves it d below "
                                                     "(the joint state reports the true length)")
    emulator_stuck_legs: tuple[int, ...] = param([], "", 1, 6, "emulate only: legs that do not move whatever is "
                                                 "commanded (they report their length)")
    emulator_joint_names: tuple[str, ...] = param([], "", doc="emulate only: the joint names the emulated "
                                                  "broadcaster publishes, legs 1 to 6 (empty: joint_names); other "
                                                  "names drill a rig whose joint_names are configured wrong")
    emulator_effort: str = param("last", "", doc="emulate only: the effort published = the twin's motor current "
                                 "of the step's last controller sample (last) or its mean over the step (mean, as a "
                                 "drive averaging its current; identification over ros2_control needs it)",
                                 choices=("last", "mean"))

    def validate(self) -> None:
        check_topic("command_topic", self.command_topic)
        check_topic("joint_state_topic", self.joint_state_topic)
        names = list(self.joint_names)
        if len(set(names)) != len(names) or any(not n for n in names):
            raise ParameterError(f"joint_names: {names!r} is not allowed; expected 6 distinct, "
                                 "non-empty joint names")
        for i, s in enumerate(self.joint_signs):
            if s not in (-1, 1):
                raise ParameterError(f"joint_signs[{i}]: {s!r} is not allowed; expected -1 or 1 (the scale is "
                                     "joint_scales)")
        for key in ("emulator_sign_flip_legs", "emulator_stuck_legs", "emulator_swap_legs"):
            legs = list(getattr(self, key))
            if len(set(legs)) != len(legs):
                raise ParameterError(f"{key}: {legs!r} is not allowed; expected distinct leg numbers 1..6")
        if self.emulator_joint_names and (len(self.emulator_joint_names) != 6
                                          or len(set(self.emulator_joint_names)) != 6):
            raise ParameterError(f"emulator_joint_names: {list(self.emulator_joint_names)!r} is not allowed; "
                                 "expected [] or 6 distinct joint names")
        swap = list(self.emulator_swap_legs)
        if len(swap) not in (0, 2):
            raise ParameterError(f"emulator_swap_legs: {swap!r} is not allowed; expected [] or a pair of distinct "
                                 "leg numbers 1..6, e.g. [2, 3]")


def joint_order(names_in_message: Sequence[str], joint_names: Sequence[str]) -> list[int] | None:
    """Index into a JointState's arrays of each of ``joint_names`` (legs 1..6), or None when one is missing."""
    where = {n: i for i, n in enumerate(names_in_message)}
    try:
        return [where[n] for n in joint_names]
    except KeyError:
        return None


def _mapping(p) -> tuple[np.ndarray, np.ndarray]:
    """(offset, sign * scale) per joint of the mapping ``p`` (a :class:`Ros2ControlParams`)."""
    return (np.asarray(p.joint_offsets_m, dtype=float),
            np.asarray(p.joint_signs, dtype=float) * np.asarray(p.joint_scales, dtype=float))


def lengths_from_positions(positions, p) -> np.ndarray:
    """Leg lengths [m] of joint positions (legs 1..6 in the order of ``joint_names``; shape (6,) or (n, 6)):
    ``offset + sign * scale * position`` with ``p.joint_offsets_m``, ``p.joint_signs``, ``p.joint_scales``.

    Example: joints that report the actuator stroke [m], 0 at a 0.46 m leg (``joint_offsets_m`` all 0.46):
    ``lengths_from_positions([0.24] * 6, p)`` -> 0.70 m each.  With the defaults the result equals the input."""
    offset, gain = _mapping(p)
    q = np.asarray(positions, dtype=float)
    return offset + gain * q


def positions_from_lengths(lengths, p) -> np.ndarray:
    """Joint positions of leg lengths [m] (the inverse of :func:`lengths_from_positions`; shape (6,) or (n, 6)):
    ``(length - offset) / (sign * scale)``.  Example: ``joint_offsets_m`` all 0.46, a 0.70 m leg -> 0.24."""
    offset, gain = _mapping(p)
    b = np.asarray(lengths, dtype=float)
    return (b - offset) / gain


def velocities_from_joint_velocities(velocities, p) -> np.ndarray:
    """Leg rates [m/s] of joint velocities: ``sign * scale * velocity`` (the offset drops out)."""
    return _mapping(p)[1] * np.asarray(velocities, dtype=float)
