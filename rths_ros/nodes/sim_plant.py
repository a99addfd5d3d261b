"""sim_plant: the Gazebo-free digital twin of platform + specimen; the beat of the run.

A managed (lifecycle) node, like the hardware drivers that replace it: ``configure`` builds the twin,
``activate`` lets it serve (announce READY, take START, step), ``deactivate`` stops the stepping.
It configures and activates itself at start; with ``realtime.lifecycle_autostart: false`` an
external lifecycle manager drives it (``ros2 lifecycle set /sim_plant configure``, ``... activate``).

Publishes exactly what the hardware drivers publish: /rths/leg_state (LegState) and
/rths/raw_wrench (RawWrench), for step k.  Takes /rths/leg_command (LegCommand, step k+1).
In lockstep mode it advances when the command for the next step arrived; in realtime mode on
absolute wall-clock deadlines with the latest command (see rths_ros.runtime.beat).

Boundary checks (docs/safety.md): a leg command with a NaN or inf, a length outside the stroke or a velocity
feedforward beyond the leg speed limit (``platform.geometry``) is not executed; the run aborts and the plant
ramps to the safe pose.  These limits hold whatever feedforward the commander and the learners added.
Process watch: the node processes of the run that no watchdog covers (recorder, supervisor, ILC learner) are
checked every 0.1 s; one that ends during the run aborts it, so the platform goes to the safe pose.

Building benchmark (numerical.model = building): the twin is the servo-hydraulic actuator with its specimen,
sensors and converters (:class:`rths_ros.core.building_rths.ServoActuatorTwin`, ``u = length[0]``).  An actuator
force beyond the capacity aborts the run (ABORT with the reason; no safe-pose ramp).
"""
from __future__ import annotations

import time

import numpy as np

from ..core import fastpath
from rclpy.lifecycle import LifecycleNodeMixin, TransitionCallbackReturn

from ..runtime.beat import BeatNode
from ..runtime.node import node_main, set_stamp, stamp_ns

from ..core.building import ActuatorCapacityExceeded
from ..core.safety import ProcessWatch, SafePoseRamp, leg_command_out_of_range, safe_pose_lengths
from ..runtime.topics import TOPICS

from rths_ros.msg import LegCommand, LegState, RawWrench, TestEvent  # noqa: E402


class SimPlantNode(LifecycleNodeMixin, BeatNode):
    role = "sim_plant"
    beat_inputs = ("/rths/leg_command",)
    PROCESS_WATCH_PERIOD_S = 0.1

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
        self.halted = False     # the plant refused a step (benchmark: actuator capacity): no more output
        self.refused = False    # a leg command failed the boundary check: nothing more is executed
        self.leg_limits = None  # (length min, length max, speed max) of the platform, once configured
        self.process_watch: ProcessWatch | None = None
        self.create_timer(self.PROCESS_WATCH_PERIOD_S, self._check_processes)
        if scenario.realtime.lifecycle_autostart:
            self.trigger_configure()
            self.trigger_activate()

    # lifecycle -------------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        self.plant = fastpath.build_plant(self.scenario)
        self.out = self.plant.reset(fastpath.plant_seed(self.scenario, 0))
        self.hold_length = np.array(self.plant.start_lengths, dtype=float)   # home, or the gait's start pose
        self.hold_ff = np.zeros(6)
        kin = self.plant.kinematics
        g = kin.params if kin is not None else None
        # the building benchmark's actuator command (length[0]) is no leg length: no stroke to check there
        self.leg_limits = None if g is None else (g.leg_length_min_m, g.leg_length_max_m,
                                                  g.leg_velocity_max_m_per_s)
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
        return self.active

    def on_start(self) -> None:
        if self.active:
            super().on_start()
            self._start_process_watch()

    def on_input(self, inp) -> None:
        if not self.active or self.done or self.refused:
            return
        if not self.leg_command_is_finite(inp) or not self.leg_command_is_in_range(inp):
            self.refused = True
            return
        super().on_input(inp)

    def leg_command_is_in_range(self, inp) -> bool:
        """The stroke and the leg speed (of the velocity feedforward) at the plant boundary: a command
        outside them is not executed and aborts the run (False)."""
        if self.leg_limits is None:
            return True
        lo, hi, vmax = self.leg_limits
        bad = leg_command_out_of_range(inp.length, inp.feedforward_velocity, lo, hi, vmax, int(inp.step))
        if bad:
            self.abort_reason = f"{self.role}: {bad}"
            self.get_logger().error(self.abort_reason)
            self.emit(TestEvent.ABORT, int(inp.step), self.abort_reason)
            return False
        return True

    # process watch -------------------------------------------------------------------------
    def _start_process_watch(self) -> None:
        if self.out_dir is None:
            return
        loop_nodes = {p for t in TOPICS if t.kind == "control" for p in t.producers}
        self.process_watch = ProcessWatch(str(self.out_dir), loop_nodes)
        found = self.process_watch.discover()
        if found:
            self.get_logger().info("process watch: " + ", ".join(f"{'+'.join(n)} (pid {pid})"
                                                                  for pid, n in sorted(found.items())))

    def _check_processes(self) -> None:
        w = self.process_watch
        if w is None or not w.watched or not self.started or self.done or self.abort_reason:
            return
        if not self._running_trial and self.trial >= self.scenario.loop.trials - 1:
            return      # the last trial is over: the other nodes end now, by design
        ended = w.first_ended()
        if ended is None:
            return
        pid, names = ended
        k = int(self.k)
        self.abort_reason = (f"{self.role}: process watch: node process {', '.join(names)} (pid {pid}) ended "
                             f"during the run at step {k}")
        self.get_logger().error(self.abort_reason)
        self.emit(TestEvent.ABORT, k, self.abort_reason)

    def reset_trial(self, trial: int) -> None:
        self.out = self.plant.reset(fastpath.plant_seed(self.scenario, trial))
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
        self.state_pub.publish(s)
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
        self.wrench_pub.publish(w)

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
        except ActuatorCapacityExceeded as exc:    # the building benchmark's capacity limit
            self.halted = True
            self.abort_reason = f"sim_plant: step {k_next}: {exc}"
            self.get_logger().error(self.abort_reason)
            self.emit(TestEvent.ABORT, k_next, self.abort_reason)


def main(argv=None) -> int:
    return node_main([SimPlantNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
