"""sim_plant: the Gazebo-free digital twin of platform + specimen; the beat of the run.

A managed (lifecycle) node, like the hardware drivers that replace it: ``configure`` builds the twin,
``activate`` lets it serve (announce READY, take START, step), ``deactivate`` stops the stepping.
It configures and activates itself at start; with ``realtime.lifecycle_autostart: false`` an
external lifecycle manager drives it (``ros2 lifecycle set /sim_plant configure``, ``... activate``).

Publishes exactly what the hardware drivers publish: /rths/leg_state (LegState) and
/rths/raw_wrench (RawWrench), for step k.  Takes /rths/leg_command (LegCommand, step k+1).
In lockstep mode it advances when the command for the next step arrived; in realtime mode on
absolute wall-clock deadlines with the latest command (see rths_ros.runtime.beat).

Pre-flight before READY (docs/safety.md): the twin's measured legs at the start pose, inside the stroke, belonging
to a pose (the same check as on a rig, :meth:`rths_ros.runtime.beat.BeatNode.preflight`).
Boundary checks (docs/safety.md): a leg command with a NaN or inf, a length outside the stroke or a velocity
feedforward beyond the leg speed limit (``platform.geometry``) is not executed; the run aborts and the plant
ramps to the safe pose.  These limits hold whatever feedforward the commander and the learners added.
Process watch: the node processes of the run that no watchdog covers (recorder, supervisor, ILC learner) are
checked every 0.1 s; one that ends during the run aborts it, so the platform goes to the safe pose.

Building benchmark (numerical.model = building): the twin is the servo-hydraulic actuator with its specimen,
sensors and converters (:class:`rths_ros.core.models.building.rths.ServoActuatorTwin`, ``u = length[0]``).  An actuator
force beyond the capacity aborts the run (ABORT with the reason; no safe-pose ramp).
"""
from __future__ import annotations

import time

import numpy as np
from rclpy.lifecycle import LifecycleNodeMixin, TransitionCallbackReturn

from rths_ros.app import factory
from rths_ros.core.plant.base import PlantFault
from rths_ros.core.platform.safety import SafePoseRamp, safe_pose_lengths
from rths_ros.msg import LegCommand, LegState, RawWrench, TestEvent
from rths_ros.runtime.beat import BeatNode
from rths_ros.runtime.node import node_main, set_stamp, stamp_ns
from rths_ros.runtime.standard_interfaces import joint_state_out


class SimPlantNode(LifecycleNodeMixin, BeatNode):
    role = "sim_plant"
    beat_inputs = ("/rths/leg_command",)
    watch_processes = True

    def __init__(self, scenario, out_dir=None, context=None):
        BeatNode.__init__(self, scenario, out_dir, context)
        LifecycleNodeMixin.__init__(self, enable_communication_interface=True)
        self.active = False
        self.plant = None
        self.state_pub = self.control_publisher(LegState, "/rths/leg_state")
        self.wrench_pub = self.control_publisher(RawWrench, "/rths/raw_wrench")
        self.control_subscription(LegCommand, "/rths/leg_command", self.on_input)
        self.state_msg = LegState()
        self.wrench_msg = RawWrench()
        self.joint_out = joint_state_out(self, scenario)     # sensor_msgs/JointState, after the loop messages
        self.halted = False     # the plant refused a step (benchmark: actuator capacity): no more output
        self.refused = False    # a leg command failed the boundary check: nothing more is executed
        if scenario.realtime.lifecycle_autostart:
            self.trigger_configure()
            self.trigger_activate()

    # lifecycle -------------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        self.plant = factory.build_plant(self.scenario)
        self.out = self.plant.reset(factory.plant_seed(self.scenario, 0))
        self.hold_length = np.array(self.plant.start_lengths, dtype=float)   # home, or the gait's start pose
        self.hold_ff = np.zeros(6)
        kin = self.plant.kinematics
        g = kin.params if kin is not None else None
        # the building benchmark's actuator command (length[0]) is no leg length: no stroke to check there
        self.leg_limits = None if g is None else (g.leg_length_min_m, g.leg_length_max_m,
                                                  g.leg_velocity_max_m_per_s)
        if kin is not None:     # the pre-flight every plant runs before READY (the twin starts at the start pose)
            self.preflight("at the start pose", np.array(self.out.lengths, dtype=float), self.hold_length, kin,
                           confirm=True)
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self.active = True
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self.active = False
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self.plant = None
        return TransitionCallbackReturn.SUCCESS

    def serving(self) -> bool:
        return self.active and not self._preflight_failed

    def on_start(self) -> None:
        if self.active:
            super().on_start()

    def on_input(self, inp) -> None:
        if not self.active or self.done or self.refused:
            return
        if not self.leg_command_ok(inp):
            self.refused = True
            return
        super().on_input(inp)

    def reset_trial(self, trial: int) -> None:
        self.out = self.plant.reset(factory.plant_seed(self.scenario, trial))
        self.hold_length[:] = self.plant.start_lengths
        self.hold_ff[:] = 0.0

    def emit_output(self, k: int, origin_ns: int) -> None:
        if self.halted:
            return
        o = self.out
        s = self.state_msg
        set_stamp(s.header.stamp, origin_ns)
        s.step = k
        s.length = o.lengths
        s.velocity = o.velocities
        s.current = o.currents
        w = self.wrench_msg
        set_stamp(w.header.stamp, origin_ns)
        w.step = k
        f, t = w.wrench.force, w.wrench.torque
        ww = o.wrench
        fp = self.scenario.faults
        if k == fp.nan_wrench_at_step:   # injected sensor fault
            ww = [float("nan")] * 6
        elif 0 <= fp.saturate_wrench_at_step <= k:   # injected: the sensor reads beyond its range
            ww = list(ww)
            ww[2] = 2.0 * self.scenario.safety.force_limit_n
        f.x, f.y, f.z = float(ww[0]), float(ww[1]), float(ww[2])
        t.x, t.y, t.z = float(ww[3]), float(ww[4]), float(ww[5])
        w.sequence = k & 0xFFFFFFFF
        self.publish_legs_and_wrench(s, w)
        if self.joint_out is not None:
            self.joint_out.publish(k, s.header.stamp, o.lengths, o.velocities, o.currents)

    def on_arrival(self, inp) -> None:
        """End-to-end step latency: from the measurement this command answers to its arrival."""
        self.timing.latency((time.time_ns() - stamp_ns(inp.origin_stamp)) * 1e-9)

    def make_safe_ramp(self):
        if self.plant is None or self.plant.kinematics is None:
            return None
        sp = self.scenario.safety
        b_safe = safe_pose_lengths(self.plant.kinematics, sp.safe_retract_m)
        return SafePoseRamp(self.out.lengths, b_safe, sp.ramp_speed_m_per_s, self.dt, sp.hold_s)

    def safe_step(self, length, velocity) -> None:
        self.out = self.plant.step(length, velocity)

    def advance(self, k_next: int, inp) -> None:
        if inp is not None:
            self.hold_length[:] = inp.length
            self.hold_ff[:] = inp.feedforward_velocity
        if self.halted:
            return
        try:
            self.out = self.plant.step(self.hold_length, self.hold_ff)
        except PlantFault as exc:    # e.g. the building benchmark's actuator capacity
            self.halted = True
            self.abort_reason = f"sim_plant: step {k_next}: {exc}"
            self.get_logger().error(self.abort_reason)
            self.emit(TestEvent.ABORT, k_next, self.abort_reason)


def main(argv=None) -> int:
    return node_main([SimPlantNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
