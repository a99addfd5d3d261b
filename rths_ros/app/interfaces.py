"""Settings of the standard ROS 2 interfaces (scenario section ``standard_interfaces``); the publishers are in
:mod:`rths_ros.runtime.standard_interfaces`, which describes every key."""
from __future__ import annotations

from dataclasses import dataclass

from rths_ros.drivers.ros2_control import check_topic
from rths_ros.params import param

LEG_NAMES = ("leg_1", "leg_2", "leg_3", "leg_4", "leg_5", "leg_6")
#: wrench component (0..5: force x, y, z, torque x, y, z) of each interface coordinate name
AXIS_INDEX = {"x": 0, "y": 1, "z": 2, "rx": 3, "ry": 4, "rz": 5}


@dataclass(frozen=True)
class StandardInterfacesParams:
    wrench_topic: str = param("/rths/interface_wrench", "", doc="ft_sensor: the processed interface force as "
                              "geometry_msgs/WrenchStamped ('' = off)")
    joint_state_topic: str = param("/rths/leg_joint_states", "", doc="plant: the measured legs as "
                                   "sensor_msgs/JointState leg_1..leg_6 ('' = off)")
    wrench_input_topic: str = param("", "", doc="ft_sensor: take the raw wrench from this "
                                    "geometry_msgs/WrenchStamped topic of any sensor driver ('' = the plant's "
                                    "/rths/raw_wrench; realtime mode only)")
    frame_id: str = param("rths_interface", "", doc="frame_id of the interface wrench")
    every_steps: int = param(10, "steps", 1, 10000, "publish the standard messages every n-th step (1: every "
                             "step, at some cost to the loop)")
    depth: int = param(10, "", 1, 1000, "history depth of the standard publishers (reliable, KEEP_LAST)")

    def validate(self) -> None:
        for key in ("wrench_topic", "joint_state_topic", "wrench_input_topic"):
            check_topic(key, getattr(self, key), allow_empty=True)
