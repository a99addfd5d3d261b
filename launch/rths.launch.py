"""Start a scenario's nodes from its YAML (for users with a ROS 2 distribution).

    ros2 launch rths_ros rths.launch.py scenario:=contact_1d plant:=sim mode:=lockstep out:=/tmp/run

Arguments:
  scenario  name under config/scenarios/ or a YAML path (default contact_1d)
  plant     sim | hardware (default: the scenario's)
  mode      lockstep | realtime (default: the scenario's)
  out       run directory for the bag, timing and logs (default: runs/<scenario>)

The node list and arguments come from rths_ros.launch_support.node_specs, the same validation the
`rths run` command uses.  Each node gets its own process; the run ends when the supervisor stops it.
Note: `rths run` additionally isolates each run on its own ROS domain id; under ros2 launch the
caller's ROS_DOMAIN_ID applies.
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _nodes(context):
    from rths_ros.launch_support import node_specs
    get = lambda k: LaunchConfiguration(k).perform(context)  # noqa: E731
    out = get("out") or f"runs/{get('scenario')}"
    _, specs = node_specs(get("scenario"), get("plant"), get("mode"), out)
    return [Node(package="rths_ros", executable=s.executable, name=s.name, arguments=list(s.arguments),
                 output="screen") for s in specs]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("scenario", default_value="contact_1d"),
        DeclareLaunchArgument("plant", default_value=""),
        DeclareLaunchArgument("mode", default_value=""),
        DeclareLaunchArgument("out", default_value=""),
        OpaqueFunction(function=_nodes),
    ])
