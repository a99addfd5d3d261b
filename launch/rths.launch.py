"""Run one scenario: every node of the graph, the recording, and metrics, report and plots at the end.

    ros2 launch rths_ros rths.launch.py scenario:=contact_1d
    ros2 launch rths_ros rths.launch.py scenario:=gait_vpp plant:=hardware out:=runs/gait1
    ros2 launch rths_ros rths.launch.py scenario:=contact_1d composed:=true mode:=realtime
    ros2 launch rths_ros rths.launch.py --show-args          # every argument with its description

The rig side (plant and force/torque sensor driver) is included from plant.launch.py, so plant:=sim
or plant:=hardware is the one switch between the digital twin and the hardware drivers.  The run
ends the launch: exit 0 for a completed run, 1 naming the node when a node failed or the run
aborted.  Node set, run directory and end-of-run rules come from rths_ros.launch_support and
rths_ros.launch_actions (the same code `rths run` uses); docs/ros2.md describes every argument.
"""
from pathlib import Path

from launch.actions import OpaqueFunction

from launch import LaunchDescription
from rths_ros.launch_actions import declare_arguments, run_actions

PLANT_LAUNCH = str(Path(__file__).resolve().with_name("plant.launch.py"))


def generate_launch_description():
    return LaunchDescription([
        *declare_arguments(),
        OpaqueFunction(function=lambda context: run_actions(context, PLANT_LAUNCH)),
    ])
