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
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rths_ros.params import ParameterError, param

__all__ = ["Ros2ControlParams", "check_topic", "joint_order"]

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

    def validate(self) -> None:
        check_topic("command_topic", self.command_topic)
        check_topic("joint_state_topic", self.joint_state_topic)
        names = list(self.joint_names)
        if len(set(names)) != len(names) or any(not n for n in names):
            raise ParameterError(f"joint_names: {names!r} is not allowed; expected 6 distinct, "
                                 "non-empty joint names")


def joint_order(names_in_message: Sequence[str], joint_names: Sequence[str]) -> list[int] | None:
    """Index into a JointState's arrays of each of ``joint_names`` (legs 1..6), or None when one is missing."""
    where = {n: i for i, n in enumerate(names_in_message)}
    try:
        return [where[n] for n in joint_names]
    except KeyError:
        return None
