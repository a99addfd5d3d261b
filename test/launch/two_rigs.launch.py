"""A lab's launch file: two rigs in one ROS domain, each under its own namespace with its own run directory.

    ros2 launch two_rigs.launch.py out_a:=runs/a out_b:=runs/b [scenario:=contact_1d] [composed_a:=false]
        [composed_b:=false] [overrides_a:="..."] [overrides_b:="..."]

Each rig is rths.launch.py included under PushRosNamespace: its topics, events, services and parameters resolve
under /rig_a or /rig_b, so the two runs never see each other."""
from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import PushRosNamespace

from launch import LaunchDescription

RTHS = str(Path(get_package_share_directory("rths_ros")) / "launch" / "rths.launch.py")


def _rig(namespace: str, suffix: str) -> GroupAction:
    return GroupAction([
        PushRosNamespace(namespace),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(RTHS), launch_arguments={
            "scenario": LaunchConfiguration("scenario"),
            "composed": LaunchConfiguration(f"composed_{suffix}"),
            "out": LaunchConfiguration(f"out_{suffix}"),
            "overrides": LaunchConfiguration(f"overrides_{suffix}"),
        }.items()),
    ])


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value="contact_1d"),
        DeclareLaunchArgument("composed_a", default_value="false"),
        DeclareLaunchArgument("composed_b", default_value="false"),
        DeclareLaunchArgument("out_a", description="run directory of rig A"),
        DeclareLaunchArgument("out_b", description="run directory of rig B"),
        DeclareLaunchArgument("overrides_a", default_value=""),
        DeclareLaunchArgument("overrides_b", default_value=""),
        _rig("rig_a", "a"),
        _rig("rig_b", "b"),
    ])
