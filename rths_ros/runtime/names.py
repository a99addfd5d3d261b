"""The run's names on the ROS graph, relative to a node's namespace.

The run's topics and services are written "/rths/..." throughout the package (the topic table, the bag, the
analysis).  On the ROS graph a node uses them relative ("rths/..."), so they resolve under the node's namespace:
"/rths/leg_command" in the root namespace as before, "/rig_a/rths/leg_command" under PushRosNamespace('rig_a') or
__ns:=/rig_a.  Several rigs share one ROS domain this way, each with its own loop, events, supervisor and recorder
(docs/ros2.md).  Names outside /rths/ (/diagnostics, a ros2_control rig's topics) stay as they are.
"""
from __future__ import annotations


class RunNames:
    """Mixin for an rclpy Node (before it in the bases): the graph calls take the run's names relative."""

    RUN_PREFIX = "/rths/"

    def run_name(self, name: str) -> str:
        """``name`` as this node uses it on the ROS graph (relative if it is one of the run's names)."""
        return name[1:] if name.startswith(self.RUN_PREFIX) else name

    def create_publisher(self, msg_type, topic, qos_profile, **kw):
        return super().create_publisher(msg_type, self.run_name(topic), qos_profile, **kw)

    def create_subscription(self, msg_type, topic, callback, qos_profile, **kw):
        return super().create_subscription(msg_type, self.run_name(topic), callback, qos_profile, **kw)

    def create_service(self, srv_type, srv_name, callback, **kw):
        return super().create_service(srv_type, self.run_name(srv_name), callback, **kw)

    def create_client(self, srv_type, srv_name, **kw):
        return super().create_client(srv_type, self.run_name(srv_name), **kw)

    def get_publishers_info_by_topic(self, topic_name, no_mangle=False):
        return super().get_publishers_info_by_topic(self.resolve_topic_name(self.run_name(topic_name)), no_mangle)

    def get_subscriptions_info_by_topic(self, topic_name, no_mangle=False):
        return super().get_subscriptions_info_by_topic(self.resolve_topic_name(self.run_name(topic_name)), no_mangle)
