"""The rig side of a scenario: the plant and the force/torque sensor driver.

    plant:=sim       sim_plant (the digital twin) and ft_sensor reading its raw wrench
    plant:=hardware  hardware_plant (the platform controller link) and ft_sensor reading the sensor

rths.launch.py includes this file with the run's resolved scenario; started alone it brings up the
rig side for a graph whose other nodes run elsewhere on the same ROS domain:

    ros2 launch rths_ros plant.launch.py scenario:=contact_1d plant:=hardware
"""
from launch.actions import OpaqueFunction

from launch import LaunchDescription
from rths_ros.launch_actions import declare_arguments, plant_actions


def generate_launch_description():
    return LaunchDescription([
        *declare_arguments(("scenario", "plant", "mode", "out", "overrides")),
        OpaqueFunction(function=plant_actions),
    ])
