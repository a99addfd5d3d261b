"""The run's data in standard ROS 2 messages, for tools and drivers that know no rths_ros types.

Scenario section ``standard_interfaces``:

* ``wrench_topic`` (default /rths/interface_wrench): the ft_sensor node publishes the processed interface
  force, the value the numerical substructure receives, as ``geometry_msgs/WrenchStamped`` in the frame
  ``frame_id``: each entry of the interface force goes to the wrench component of its interface coordinate
  (``platform.interface.dofs``: x, y, z -> force, rx, ry, rz -> torque; the gait test's sagittal load
  ``[F_par, F_perp, M]`` -> force x (along the shank), force y (across it) and torque z; a single actuator's
  force -> force x).
* ``joint_state_topic`` (default /rths/leg_joint_states): the plant publishes the measured legs as
  ``sensor_msgs/JointState`` with the joints ``leg_1`` .. ``leg_6`` (position = length [m], velocity [m/s],
  effort = the drive current [A]; not for the building benchmark and the linear motor, whose plants are one
  actuator).
* ``wrench_input_topic`` (default empty): a ``geometry_msgs/WrenchStamped`` topic of any force/torque sensor
  driver (ATI, Bota, Robotiq, OnRobot ... all publish one); the ft_sensor node then takes its raw input from
  there instead of the plant's /rths/raw_wrench (realtime mode: the sensor streams on its own clock, the node
  pairs the newest sample with each step's leg state).

Off the fast path: these publishers write after the step's loop messages went out, keep the last
``depth`` samples (reliable, KEEP_LAST: a slow or absent reader never blocks the writer, and no node waits
for their acknowledgements), and they go out every ``every_steps``-th step only (default 10), and only while a
reader is matched: without one, the publisher asks for one about every :data:`READER_CHECK_STEPS` steps
(:class:`~rths_ros.runtime.local_bus.ReaderGate`; a write to no reader cost as much as a third of the rest of a
composed lockstep step's work), so a tool that joins mid-run gets its first message within that many steps.
An empty topic name switches one off.  The bag records the loop topics these mirror, not the mirrors.
"""
from __future__ import annotations

from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from rths_ros.app.factory import parts
from rths_ros.app.interfaces import AXIS_INDEX, LEG_NAMES
from rths_ros.runtime.local_bus import ReaderGate

#: without a matched reader, a standard publisher asks for one about every this many steps
READER_CHECK_STEPS = 50


def reader_gate(pub, every_steps: int) -> ReaderGate:
    """The gate of a standard publisher that writes every ``every_steps``-th step."""
    return ReaderGate(pub, max(1, READER_CHECK_STEPS // max(1, int(every_steps))))


def standard_qos(depth: int) -> QoSProfile:
    """The standard publishers: reliable, KEEP_LAST (matches reliable and best-effort readers; never blocks)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.RELIABLE)


def driver_qos(depth: int) -> QoSProfile:
    """Reading a third-party driver: best effort, KEEP_LAST, which matches a driver that publishes reliable
    (the ROS default) as well as one with the sensor-data profile (best effort)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT)


def wrench_axes(scenario) -> tuple[int, ...]:
    """Wrench component of each entry of the scenario's interface force (see the module doc)."""
    axes = parts(scenario).wrench_axes
    return axes if axes is not None else tuple(AXIS_INDEX[d] for d in scenario.platform.interface.dofs)


class WrenchOut:
    """ft_sensor: the interface force of every ``every_steps``-th step as WrenchStamped."""

    def __init__(self, node, scenario):
        from geometry_msgs.msg import WrenchStamped
        p = scenario.standard_interfaces
        self.pub = node.create_publisher(WrenchStamped, p.wrench_topic, standard_qos(p.depth))
        self.msg = WrenchStamped()
        self.msg.header.frame_id = p.frame_id
        self.every = p.every_steps
        self.readers = reader_gate(self.pub, p.every_steps)
        self.axes = wrench_axes(scenario)
        self.values = [0.0] * 6

    def publish(self, k: int, stamp, force) -> None:
        if k % self.every or not self.readers():
            return
        v = self.values
        for axis, f in zip(self.axes, force):
            v[axis] = float(f)
        m = self.msg
        m.header.stamp = stamp
        m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = v[0], v[1], v[2]
        m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z = v[3], v[4], v[5]
        self.pub.publish(m)


class JointStateOut:
    """Plant: the measured legs of every ``every_steps``-th step as JointState."""

    def __init__(self, node, scenario):
        from sensor_msgs.msg import JointState
        p = scenario.standard_interfaces
        self.pub = node.create_publisher(JointState, p.joint_state_topic, standard_qos(p.depth))
        self.msg = JointState()
        self.msg.name = list(LEG_NAMES)
        self.every = p.every_steps
        self.readers = reader_gate(self.pub, p.every_steps)

    def publish(self, k: int, stamp, lengths, velocities, currents) -> None:
        if k % self.every or not self.readers():
            return
        m = self.msg
        m.header.stamp = stamp
        m.position = [float(x) for x in lengths]
        m.velocity = [float(x) for x in velocities]
        m.effort = [float(x) for x in currents]
        self.pub.publish(m)


def wrench_out(node, scenario) -> WrenchOut | None:
    """The interface-wrench publisher of the scenario, or None when ``wrench_topic`` is ''."""
    return WrenchOut(node, scenario) if scenario.standard_interfaces.wrench_topic else None


def joint_state_out(node, scenario) -> JointStateOut | None:
    """The leg JointState publisher of the scenario, or None when ``joint_state_topic`` is '' or the plant has no
    legs (the building benchmark's actuator, the linear motor)."""
    if not scenario.standard_interfaces.joint_state_topic or not parts(scenario).legs:
        return None
    return JointStateOut(node, scenario)
