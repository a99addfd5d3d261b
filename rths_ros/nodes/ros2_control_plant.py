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
(the rig's drive forms its own).  Joint positions are mapped to leg lengths per joint (``joint_offsets_m``,
``joint_scales``, ``joint_signs``: length = offset + sign * scale * position; :mod:`rths_ros.drivers.ros2_control`).

Start (pre-flight, :meth:`~rths_ros.runtime.beat.BeatNode.preflight`): once joint states arrive, the measured legs
must lie inside the stroke and belong to a pose of the platform, or the run aborts before START naming the leg, the
values and the likely cause (an offset such as a stroke reported instead of a length, a unit, swapped legs); nothing
is commanded then.  Legs elsewhere than the trial's start pose (home, or the gait test's start pose) are ramped
there with the safe-pose ramp's profile (``safety.ramp_speed_m_per_s``, then ``safety.hold_s``), and the ramp is
confirmed by the measurements: a fresh joint state within ``safety.preflight_tolerance_m`` of the start pose, or the
run aborts before START (a leg that did not move, moved the opposite way, ...).  Only then READY.  A joint state
that lacks a joint of ``joint_names`` aborts at once naming the joints it has; none at all within
``ready_timeout_s`` aborts naming the topic.  Later trials start with the same ramp.

Every command that leaves this node (loop, ramps, the safe pose) is checked against the stroke first; one outside
it is not sent.  A joint state that is older than ``state_timeout_s`` during the run aborts it; like every plant,
the node checks each leg command at its boundary (finite, inside the stroke, leg speed) and on an abort ramps the
legs to the safe pose, then reports SAFE.
"""
from __future__ import annotations

import threading
import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from rths_ros.app import factory
from rths_ros.core.platform.safety import (
    SafePoseRamp,
    commands_outside_stroke,
    safe_pose_lengths,
    start_pose_ramp,
)
from rths_ros.drivers.ros2_control import (
    joint_order,
    lengths_from_positions,
    positions_from_lengths,
    velocities_from_joint_velocities,
)
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
        self.preflight_hint = ("check ros2_control.joint_names, joint_offsets_m, joint_scales and joint_signs "
                               "(docs/hardware.md); `rths commission` moves each leg alone")
        self.sent_outside = 0           # commands that failed the stroke check in send(): never sent
        self._joint_gain = velocities_from_joint_velocities(np.ones(6), p)    # sign * scale per joint
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
        lengths = lengths_from_positions([pos[i] for i in o], self.p)
        gain = self._joint_gain
        velocities = gain * np.array([vel[i] for i in o], dtype=float) if len(vel) == len(names) else np.zeros(6)
        efforts = np.array([eff[i] for i in o], dtype=float) if len(eff) == len(names) else np.zeros(6)
        self.joints = (np.asarray(lengths, dtype=float), velocities, efforts, time.monotonic_ns())

    def send(self, lengths) -> bool:
        """Send leg lengths (as joint positions) to the controller, if they are inside the stroke; a command
        outside it is never sent: the first one aborts the run (before START: the pre-flight fails)."""
        lo, hi, _ = self.leg_limits
        bad = commands_outside_stroke(lengths, lo, hi)
        if bad:
            self.sent_outside += 1
            if self.sent_outside == 1:
                reason = f"ros2_control_plant: {bad}"
                if not self.started:
                    self.preflight_failed(reason)
                elif not self.abort_reason:
                    self.abort_reason = reason
                    self.get_logger().error(reason)
                    self.emit(TestEvent.ABORT, int(self.k), reason)
            return False
        self.cmd_msg.data = [float(x) for x in positions_from_lengths(lengths, self.p)]
        self.cmd_pub.publish(self.cmd_msg)
        return True

    # start pose ------------------------------------------------------------------------------------
    def _prepare(self) -> None:
        if self.prepared or self._prep_thread is not None or self.done or self._preflight_failed:
            return
        if self.joints is None:
            if self.bad_names:      # joint states arrive, but not of this rig's joints: the cause is known
                self.preflight_failed(f"ros2_control_plant: pre-flight: the {self.bad_names} "
                                      f"(ros2_control.joint_names = {list(self.p.joint_names)})")
            elif time.monotonic() - self._t_created > self.p.ready_timeout_s:
                self.preflight_failed(f"ros2_control_plant: pre-flight: nothing arrived on "
                                      f"{self.p.joint_state_topic} within ros2_control.ready_timeout_s = "
                                      f"{self.p.ready_timeout_s:g} s (is the joint_state_broadcaster running, "
                                      f"in this ROS domain?)")
            return
        self._prep_thread = threading.Thread(target=self._ramp_to_start, args=(0,), daemon=True,
                                             name="ros2_control_plant-start")
        self._prep_thread.start()

    def _fresh_lengths(self, after_ns: int, timeout_s: float):
        """The leg lengths of the first joint state received after ``after_ns`` (monotonic), or None."""
        t_end = time.monotonic() + timeout_s
        while time.monotonic() < t_end and not self.done:
            j = self.joints
            if j is not None and j[3] > after_ns:
                return j[0].copy()
            time.sleep(0.002)
        return None

    def _ramp_to_start(self, trial: int) -> None:
        before = self.joints[0].copy()
        first = trial == 0 and not self.started
        if first and not self.preflight("before the ramp to the start pose", before, self.start, self.kin):
            return          # nothing was commanded
        ramp = start_pose_ramp(before, self.start, self.scenario.safety, self.dt)
        if ramp is not None:
            t0 = time.monotonic()
            for j in range(1, ramp.total_steps + 1):
                time.sleep(max(0.0, t0 + j * self.dt - time.monotonic()))
                if not self.send(ramp.command(j)[0]):
                    return
            self.start_ramps.append({"trial": trial, "steps": ramp.total_steps, "ramp_s": ramp.duration_s,
                                     "max_leg_travel_m": float(np.abs(ramp.delta).max())})
            self.get_logger().info(f"trial {trial}: legs commanded to the start pose in {ramp.duration_s:.2f} s")
        if not self.send(self.start):
            return
        self.hold_length[:] = self.start
        if first:      # the ramp is confirmed by the measurements, not by the commands sent
            sent_ns = time.monotonic_ns()
            measured = self._fresh_lengths(sent_ns, max(1.0, 3 * self.p.state_timeout_s))
            if measured is None:
                self.preflight_failed(f"ros2_control_plant: pre-flight: no joint state on {self.p.joint_state_topic} "
                                      "after the ramp to the start pose")
                return
            if not self.preflight("after the ramp to the start pose", measured, self.start, self.kin, confirm=True,
                                  before=before):
                return
            if self.start_ramps:
                self.start_ramps[-1]["start_error_after_m"] = float(np.max(np.abs(measured - self.start)))
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
            if not self.abort_reason and not self.done:
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
        lo, hi, _ = self.leg_limits
        if self.joints is None or commands_outside_stroke(self.joints[0], lo, hi):
            return None         # no ramp from legs outside the stroke: the rig's controller holds them
        sp = self.scenario.safety
        return SafePoseRamp(self.joints[0], safe_pose_lengths(self.kin, sp.safe_retract_m), sp.ramp_speed_m_per_s,
                            self.dt, sp.hold_s)

    def safe_step(self, length, velocity) -> None:
        self.send(length)

    def timing_summary(self) -> dict:
        s = super().timing_summary()
        s["start_ramps"] = self.start_ramps
        s["commands_not_sent"] = self.sent_outside
        return s


def main(argv=None) -> int:
    return node_main([Ros2ControlPlantNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
