"""ros2_control_emulator: a stand-in for a hexapod under ros2_control and its force/torque sensor driver.

(The node lives in the runtime layer so that the rig client :mod:`rths_ros.runtime.ros2_control_rig` can start
it in the client's process; :mod:`rths_ros.nodes.ros2_control_emulator` is its entry point as a node of a run.)

Started with the run when ``plant = ros2_control`` and ``ros2_control.emulate: true``; it is the rig, so it
runs on its own clock (``loop.dt_s``, from the moment it starts, whether or not the test runs) around the
scenario's digital twin (the same platform and specimen model as ``sim_plant``, :func:`rths_ros.app.factory.build_plant`):

* like ros2_control's ``forward_command_controller`` (position interface) it takes ``std_msgs/Float64MultiArray``
  on ``ros2_control.command_topic``: 6 joint positions (leg lengths, without the fault settings below) in the
  order of ``joint_names``; a message of another size or
  with a NaN/inf is refused (logged, counted) and the previous command held, as the controller does;
* like the ``joint_state_broadcaster`` it publishes ``sensor_msgs/JointState`` on ``ros2_control.joint_state_topic``
  every tick (position = leg length - ``emulator_position_offset_m``, velocity, effort = drive current), in its own joint order (reversed with
  ``emulator_reverse_order``, so the plant node must match the joints by name);
* like a force/torque sensor driver it publishes the twin's raw wrench (sensor frame) as
  ``geometry_msgs/WrenchStamped`` on ``standard_interfaces.wrench_input_topic``;
* the rig's wiring faults (``emulator_position_offset_m``, ``emulator_swap_legs``, ``emulator_sign_flip_legs``,
  ``emulator_stuck_legs``) and the effort it reports (``emulator_effort``) are modelled by
  :class:`~rths_ros.app.ros2_control_twin.Ros2ControlTwin`, which also clips what the twin gets to the stroke
  (``clipped_commands`` in the timing summary); with their defaults the emulator is the plain twin.

The twin's leg controllers take a velocity feedforward besides the length; a position interface carries none.
With ``emulator_feedforward: none`` (default) the emulated drives run their position loop alone, which is the
twin of a scenario without the commander's feedforward (contact_1d: feedback only), so the two plants compare
like for like; with ``difference`` a drive forms it from the two newest commands over ``loop.dt_s`` (held until
the next command), as a position-commanded drive with its own feedforward does.  After an ABORT the emulator keeps
running until the plant reports SAFE (its ramp to the safe pose goes through this rig), at most the ramp's
bound plus 3 s.
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from rths_ros.app.ros2_control_twin import Ros2ControlTwin
from rths_ros.core.platform.safety import safe_ramp_bound_s
from rths_ros.msg import TestEvent
from rths_ros.runtime.clock import RealtimeClock
from rths_ros.runtime.node import RthsNode, set_stamp
from rths_ros.runtime.standard_interfaces import standard_qos


class Ros2ControlEmulatorNode(RthsNode):
    role = "ros2_control_emulator"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        p = scenario.ros2_control
        self.twin = Ros2ControlTwin(scenario)
        self.plant = self.twin.plant
        self.cmd = self.twin.start_command()
        self.ff = np.zeros(6)
        self._ff_from_commands = p.emulator_feedforward == "difference"
        self._lock = threading.Lock()
        self.commands = 0
        self.refused_commands = 0
        self.ticks = 0
        order = list(range(6))[::-1] if p.emulator_reverse_order else list(range(6))
        self._order = order
        self.js_pub = self.create_publisher(JointState, p.joint_state_topic, standard_qos(10))
        self.js = JointState()
        names = p.emulator_joint_names or p.joint_names      # (other names: a drill of a mis-configured run)
        self.js.name = [names[i] for i in order]
        self.w_pub = self.create_publisher(WrenchStamped, scenario.standard_interfaces.wrench_input_topic,
                                           standard_qos(10))
        self.w = WrenchStamped()
        self.w.header.frame_id = "ft_sensor"
        self.create_subscription(Float64MultiArray, p.command_topic, self.on_command, standard_qos(10))
        self._abort_at: float | None = None
        self._abort_limit_s = safe_ramp_bound_s(scenario.safety) + 3.0
        self.create_timer(0.05, self._check_abort_end)
        self._thread = threading.Thread(target=self._run, name="ros2_control_emulator", daemon=True)
        self._thread.start()

    def on_command(self, msg) -> None:
        data = list(msg.data)
        if len(data) != 6 or not all(math.isfinite(x) for x in data):
            self.refused_commands += 1
            if self.refused_commands <= 5:
                self.get_logger().error(f"command of {len(data)} values refused: expected 6 finite leg lengths")
            return
        new = self.twin.lengths_of(data)
        with self._lock:
            if self._ff_from_commands and self.commands:
                self.ff = (new - self.cmd) / self.dt
            self.cmd = new
            self.commands += 1

    def _run(self) -> None:
        clock = RealtimeClock(self.dt, busy_wait_s=0.0)
        clock.start()
        while not self.done:
            with self._lock:
                cmd, ff = self.cmd.copy(), self.ff.copy()
            positions, velocities, efforts, ww = self.twin.step(cmd, ff)
            self.ticks += 1
            now = time.time_ns()
            js, o = self.js, self._order
            set_stamp(js.header.stamp, now)
            js.position = [float(positions[i]) for i in o]
            js.velocity = [float(velocities[i]) for i in o]
            js.effort = [float(efforts[i]) for i in o]
            self.js_pub.publish(js)
            w = self.w
            set_stamp(w.header.stamp, now)
            w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = float(ww[0]), float(ww[1]), float(ww[2])
            w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = float(ww[3]), float(ww[4]), float(ww[5])
            self.w_pub.publish(w)
            clock.wait_next()

    # the rig runs on through the plant's ramp to the safe pose ------------------------------------------------
    def on_abort(self, msg) -> None:
        if not self.started:        # an abort before START (e.g. the plant's pre-flight): no ramp will come
            super().on_abort(msg)
            return
        if self._abort_at is None:
            self._abort_at = time.monotonic()

    def on_event(self, msg) -> None:
        if msg.type == TestEvent.SAFE and not self.done:
            super().on_abort(msg)

    def _check_abort_end(self) -> None:
        if self._abort_at is not None and not self.done and time.monotonic() - self._abort_at > self._abort_limit_s:
            self.get_logger().warning(f"no SAFE within {self._abort_limit_s:g} s after the abort: ending")
            super().on_abort(None)

    def timing_summary(self) -> dict:
        s = super().timing_summary()
        s.update(commands=self.commands, refused_commands=self.refused_commands, ticks=self.ticks,
                 clipped_commands=self.twin.clipped_commands)
        return s

    def finalize(self) -> None:
        self.done = True
        self._thread.join(timeout=1.0)
        super().finalize()

