"""ros2_control_plant: a hexapod run by a ros2_control controller manager as the plant; the beat of the run.

Started instead of ``sim_plant`` when ``plant = ros2_control`` (realtime mode; settings in the scenario section
``ros2_control``, :mod:`rths_ros.drivers.ros2_control`).  Towards the run it is a plant like the others:
publishes /rths/leg_state (LegState, step k), takes /rths/leg_command (LegCommand, step k+1).  Towards the rig:

* every beat the newest leg-length command goes out as ``std_msgs/Float64MultiArray`` (lengths of
  ``joint_names``, in that order) on ``command_topic``, the forward_command_controller's topic;
* the LegState of step k is the newest ``sensor_msgs/JointState`` from ``joint_state_topic`` (the
  joint_state_broadcaster), joints matched by name: position = length, velocity, effort -> current;
* the force/torque sensor is the rig's own ROS 2 driver: the ft_sensor node reads its WrenchStamped topic
  (``standard_interfaces.wrench_input_topic``), so this node publishes no /rths/raw_wrench.

A forward_command_controller takes positions only: the LegCommand's velocity feedforward cannot be passed on
(the rig's drive forms its own).  Start: the node announces READY once joint states arrive and the legs stand
at the trial's start pose (home, or the gait test's start pose); legs elsewhere are first ramped there with
the safe-pose ramp's profile (``safety.ramp_speed_m_per_s``, then ``safety.hold_s``).  Later trials start with
the same ramp.  A joint state that is older than ``state_timeout_s`` during the run, or one that lacks a joint
of ``joint_names``, aborts the run; like every plant, the node checks each leg command at its boundary
(finite, inside the stroke, leg speed) and on an abort ramps the legs to the safe pose, then reports SAFE.
"""
from __future__ import annotations

import threading
import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from rths_ros.app import factory
from rths_ros.core.platform.safety import SafePoseRamp, safe_pose_lengths, start_pose_ramp
from rths_ros.drivers.ros2_control import joint_order
from rths_ros.msg import LegCommand, LegState, TestEvent
from rths_ros.runtime.beat import BeatNode
from rths_ros.runtime.node import node_main, set_stamp, stamp_ns
from rths_ros.runtime.standard_interfaces import driver_qos, joint_state_out, standard_qos


class Ros2ControlPlantNode(BeatNode):
    role = "ros2_control_plant"
    beat_inputs = ("/rths/leg_command",)
    watch_processes = True

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.p = p = scenario.ros2_control
        from rths_ros.core.platform.stewart import StewartKinematics
        self.kin = StewartKinematics(scenario.platform.geometry)
        g = scenario.platform.geometry
        self.leg_limits = (g.leg_length_min_m, g.leg_length_max_m, g.leg_velocity_max_m_per_s)
        self.start = np.array(factory.start_lengths(scenario), dtype=float)
        self.hold_length = self.start.copy()
        self.refused = False
        self.state_pub = self.control_publisher(LegState, "/rths/leg_state")
        self.control_subscription(LegCommand, "/rths/leg_command", self.on_input)
        self.state_msg = LegState()
        self.joint_out = joint_state_out(self, scenario)
        self.cmd_pub = self.create_publisher(Float64MultiArray, p.command_topic, standard_qos(10))
        self.cmd_msg = Float64MultiArray()
        self.create_subscription(JointState, p.joint_state_topic, self.on_joint_state, driver_qos(10))
        # the newest joint state: (lengths, velocities, efforts, receive time [monotonic ns]); None before the first
        self.joints: tuple | None = None
        self._order: list[int] | None = None
        self._order_names: tuple = ()
        self.bad_names = ""
        self.prepared = False
        self._prep_thread: threading.Thread | None = None
        self.start_ramps: list[dict] = []
        self._t_created = time.monotonic()
        self._waiting_logged = False
        self._prep_timer = self.create_timer(0.02, self._prepare)

    # the rig's side ------------------------------------------------------------------------------
    def on_joint_state(self, msg) -> None:
        names = tuple(msg.name)
        if names != self._order_names:
            self._order_names = names
            self._order = joint_order(names, self.p.joint_names)
            if self._order is None:
                missing = [n for n in self.p.joint_names if n not in names]
                self.bad_names = f"joint state on {self.p.joint_state_topic} lacks {', '.join(missing)} " \
                                 f"(has {', '.join(names) or 'no names'})"
        if self._order is None:
            return
        o = self._order
        pos, vel, eff = msg.position, msg.velocity, msg.effort
        lengths = np.array([pos[i] for i in o], dtype=float)
        velocities = np.array([vel[i] for i in o], dtype=float) if len(vel) == len(names) else np.zeros(6)
        efforts = np.array([eff[i] for i in o], dtype=float) if len(eff) == len(names) else np.zeros(6)
        self.joints = (lengths, velocities, efforts, time.monotonic_ns())

    def send(self, lengths) -> None:
        self.cmd_msg.data = [float(x) for x in lengths]
        self.cmd_pub.publish(self.cmd_msg)

    # start pose ------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        if self.prepared or self._prep_thread is not None:
            return
        if self.joints is None:
            if not self._waiting_logged and time.monotonic() - self._t_created > self.p.ready_timeout_s:
                self._waiting_logged = True
                why = self.bad_names or f"nothing arrived on {self.p.joint_state_topic}"
                self.get_logger().error(f"ros2_control_plant: no usable joint state after "
                                        f"{self.p.ready_timeout_s:g} s: {why}")
            return
        self._prep_thread = threading.Thread(target=self._ramp_to_start, args=(0,), daemon=True,
                                             name="ros2_control_plant-start")
        self._prep_thread.start()

    def _ramp_to_start(self, trial: int) -> None:
        ramp = start_pose_ramp(self.joints[0], self.start, self.scenario.safety, self.dt)
        if ramp is not None:
            t0 = time.monotonic()
            for j in range(1, ramp.total_steps + 1):
                time.sleep(max(0.0, t0 + j * self.dt - time.monotonic()))
                self.send(ramp.command(j)[0])
            self.start_ramps.append({"trial": trial, "steps": ramp.total_steps, "ramp_s": ramp.duration_s,
                                     "max_leg_travel_m": float(np.abs(ramp.delta).max())})
            self.get_logger().info(f"trial {trial}: legs ramped to the start pose in {ramp.duration_s:.2f} s")
        self.send(self.start)
        self.hold_length[:] = self.start
        self.prepared = True
        self._prep_thread = None

    def serving(self) -> bool:
        return self.prepared

    def _begin_trial(self, trial: int) -> None:
        """A later trial starts after the ramp back to the start pose (the legs are where the previous trial
        left them), in a thread: the executor goes on taking the joint states meanwhile."""
        if trial == 0:
            super()._begin_trial(trial)
            return
        self.trial = trial      # (a repeated TRIAL_BEGIN does not start a second ramp)

        def ramp_then_begin() -> None:
            self._ramp_to_start(trial)
            BeatNode._begin_trial(self, trial)
        threading.Thread(target=ramp_then_begin, daemon=True, name="ros2_control_plant-trial").start()

    # the beat ---------------------------------------------------------------------------------------
    def on_input(self, inp) -> None:
        if self.done or self.refused:
            return
        if not self.leg_command_ok(inp):
            self.refused = True
            return
        super().on_input(inp)

    def on_arrival(self, inp) -> None:
        self.timing.latency((time.time_ns() - stamp_ns(inp.origin_stamp)) * 1e-9)

    def advance(self, k_next: int, inp) -> None:
        if inp is not None and not self.refused:
            self.hold_length[:] = inp.length
        self.send(self.hold_length)

    def emit_output(self, k: int, origin_ns: int) -> None:
        j = self.joints
        if j is None:
            return
        lengths, velocities, efforts, rx_ns = j
        age = (time.monotonic_ns() - rx_ns) * 1e-9
        if age > self.p.state_timeout_s and not self._aborting and not self.abort_reason:
            self.abort_reason = (f"ros2_control_plant: the newest joint state on {self.p.joint_state_topic} is "
                                 f"{age * 1e3:.1f} ms old at step {k} (limit {self.p.state_timeout_s * 1e3:g} ms)"
                                 + (f"; the newer ones are not usable: {self.bad_names}" if self._order is None
                                    else ""))
            self.get_logger().error(self.abort_reason)
            self.emit(TestEvent.ABORT, k, self.abort_reason)
            return
        s = self.state_msg
        set_stamp(s.header.stamp, origin_ns)
        s.step = k
        s.length = lengths.tolist()
        s.velocity = velocities.tolist()
        s.current = efforts.tolist()
        self.state_pub.publish(s)
        if self.joint_out is not None:
            self.joint_out.publish(k, s.header.stamp, lengths, velocities, efforts)

    # abort: ramp to the safe pose through the controller -----------------------------------------------
    def make_safe_ramp(self):
        if self.joints is None:
            return None
        sp = self.scenario.safety
        return SafePoseRamp(self.joints[0], safe_pose_lengths(self.kin, sp.safe_retract_m), sp.ramp_speed_m_per_s,
                            self.dt, sp.hold_s)

    def safe_step(self, length, velocity) -> None:
        self.send(length)

    def timing_summary(self) -> dict:
        s = super().timing_summary()
        s["start_ramps"] = self.start_ramps
        return s


def main(argv=None) -> int:
    return node_main([Ros2ControlPlantNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
