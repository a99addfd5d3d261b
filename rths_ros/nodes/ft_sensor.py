"""ft_sensor: raw sensor wrench -> interface force (bias/tare, frame, gravity compensation,
contact gating; Insam 2022 §4.2.4).

In:  /rths/raw_wrench (RawWrench, step k) from the simulated plant or the sensor driver
Out: /rths/interface_force (InterfaceForce, step k); the same force as geometry_msgs/WrenchStamped on
     ``standard_interfaces.wrench_topic`` (/rths/interface_wrench; :mod:`rths_ros.runtime.standard_interfaces`)

Any ROS 2 force/torque driver instead (``standard_interfaces.wrench_input_topic``, realtime mode): the node
reads that WrenchStamped topic (the driver's sensor frame, N and N m) and processes, at every /rths/leg_state
(step k, the beat of the run), the newest sample it has; no sample yet, or a repeated one, counts as a late
message; a driver silent for longer than the watchdog limit (``safety.watchdog_steps`` steps) aborts the run.

The work is the model family's :class:`~rths_ros.core.platform.paths.ForcePath`
(:func:`rths_ros.app.factory.build_force_path`); the node never asks which model runs.  A path that
``needs_leg_state`` also gets /rths/leg_state (step k), paired with the wrench of the same step (lockstep: waits
for both; realtime: the newest leg state): the gait test's
:class:`rths_ros.core.models.gait.rths.GaitForceProcessor` turns them into ``force = [F_par, F_perp, M]`` (the load
on the stump end along / across the achieved shank axis, about the interface point) and ``measured = [F_x, F_y,
M_O]`` (plate force and the moment about the plate reference point, from which the centre of pressure
``x_CoP = M_O / F_y`` follows); ``contact`` = the foot carries at least ``cop_min_force_n``.  A load beyond the
sensor range or a capacity the path checks aborts the run.
"""
from __future__ import annotations

import time

import numpy as np
from builtin_interfaces.msg import Time

from rths_ros.app import factory
from rths_ros.core.platform.commander import CommandRejected
from rths_ros.core.platform.safety import non_finite, wrench_out_of_range
from rths_ros.msg import InterfaceForce, LegState, RawWrench, TestEvent
from rths_ros.runtime.node import RthsNode, node_main
from rths_ros.runtime.standard_interfaces import driver_qos, wrench_out


class FtSensorNode(RthsNode):
    role = "ft_sensor"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.path = factory.build_force_path(scenario)
        self.path.reset()
        self.pub = self.control_publisher(InterfaceForce, "/rths/interface_force")
        self.std_out = wrench_out(self, scenario)
        self.driver_topic = scenario.standard_interfaces.wrench_input_topic
        self.driver_sample = None       # (wrench, stamp) of the newest WrenchStamped of the sensor driver
        self._driver_rx_ns = 0
        self._driver_used = None
        if self.driver_topic:
            from geometry_msgs.msg import WrenchStamped
            self.create_subscription(WrenchStamped, self.driver_topic, self.on_driver_wrench,
                                     driver_qos(scenario.standard_interfaces.depth))
        else:
            self.control_subscription(RawWrench, "/rths/raw_wrench", self.on_wrench)
        self.msg = InterfaceForce()
        self._w = [0.0] * 6
        sp, fp = scenario.safety, scenario.faults
        self._f_lim, self._t_lim = sp.force_limit_n, sp.torque_limit_nm
        # injected faults (tests and drills): dropped messages and delay spikes
        self._drop = fp.drop_force_fraction
        self._drop_rng = np.random.default_rng([scenario.loop.seed, 0xD209])
        self._spike_s, self._spike_every = fp.delay_spike_s, fp.delay_every_steps
        self.dropped = 0
        self.needs_legs = bool(self.path.needs_leg_state)
        self.legs_by_step: dict[int, np.ndarray] = {}
        self.legs_latest = None
        self.pending: dict[int, tuple] = {}
        if self.driver_topic:           # the leg state is the step clock for the driver's samples
            self.control_subscription(LegState, "/rths/leg_state", self.on_step_of_driver)
        elif self.needs_legs:
            self.control_subscription(LegState, "/rths/leg_state", self.on_leg_state)

    def serving(self) -> bool:
        """With a sensor driver: ready once its first sample arrived."""
        return not self.driver_topic or self.driver_sample is not None

    def on_driver_wrench(self, msg) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        self.driver_sample = ([f.x, f.y, f.z, t.x, t.y, t.z], msg.header.stamp)
        self._driver_rx_ns = time.monotonic_ns()

    def on_step_of_driver(self, msg) -> None:
        """Step k of the run: process the newest sample of the sensor driver with this step's leg state."""
        if self.done or not self.enter_trial(msg.step):
            return
        sample = self.driver_sample
        if sample is None:
            self.timing.late_messages += 1
            return
        if sample is self._driver_used:
            self.timing.late_messages += 1      # no new sample since the previous step: the same one again
            silent_ns = time.monotonic_ns() - self._driver_rx_ns
            if silent_ns > self._watch_limit_ns:
                self.abort_reason = (f"ft_sensor: the sensor driver on {self.driver_topic} sent nothing for "
                                     f"{silent_ns * 1e-9:.3f} s (limit {self._watch_limit_ns * 1e-9:g} s)")
                self.get_logger().error(self.abort_reason)
                self.emit(TestEvent.ABORT, int(msg.step), self.abort_reason)
                self.finish(3)
                return
        self._driver_used = sample
        w, stamp = sample
        self.on_raw(int(msg.step), list(w), stamp, np.array(msg.length, dtype=float) if self.needs_legs else None)

    def reset_for_trial(self, trial: int) -> None:
        self.path.reset()
        start = trial * self.trial_len
        self.legs_by_step = {k: v for k, v in self.legs_by_step.items() if k >= start}
        self.pending = {k: v for k, v in self.pending.items() if k >= start}

    def on_leg_state(self, msg) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        k = int(msg.step)
        lengths = np.array(msg.length, dtype=float)
        self.legs_latest = lengths
        p = self.pending.pop(k, None)
        if p is not None:
            self.process(k, p[0], lengths, p[1], p[2])
        else:
            self.legs_by_step[k] = lengths

    def on_wrench(self, msg: RawWrench) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        f, t = msg.wrench.force, msg.wrench.torque
        w = self._w
        w[0], w[1], w[2], w[3], w[4], w[5] = f.x, f.y, f.z, t.x, t.y, t.z
        self.on_raw(int(msg.step), w, msg.header.stamp)

    def on_raw(self, k: int, w, stamp, driver_legs=None) -> None:
        """The raw wrench of step k (sensor frame): check, pair with the leg state if needed, process."""
        t0 = time.perf_counter_ns()
        self.timing.tick()
        bad = non_finite("wrench", w, k) or wrench_out_of_range(w, self._f_lim, self._t_lim, k)
        if bad:
            self.abort_reason = f"ft_sensor: {bad}"
            self.emit(TestEvent.ABORT, k, self.abort_reason)
            self.finish(3)
            return
        lengths = driver_legs
        if self.needs_legs and not self.driver_topic:
            lengths = self.legs_by_step.pop(k, None)
            if lengths is None and self.mode == "realtime":
                lengths = self.legs_latest
            if lengths is None:          # lockstep: the leg state of this step is still on its way
                self.pending[k] = (list(w), Time(sec=stamp.sec, nanosec=stamp.nanosec), t0)
                return
        self.process(k, w, lengths, stamp, t0)

    def process(self, k: int, w, lengths, stamp, t0: int) -> None:
        try:
            force, measured, contact = self.path.process(w, lengths)
        except CommandRejected as exc:
            self.abort_reason = f"ft_sensor: step {k}: {exc}"
            self.emit(TestEvent.ABORT, k, self.abort_reason)
            self.finish(3)
            return
        m = self.msg
        m.header.stamp = stamp
        m.step = k
        m.force = [float(x) for x in force]
        m.measured = [float(x) for x in measured]
        m.contact = bool(contact)
        m.origin_stamp = stamp
        if self._drop > 0.0 and self._drop_rng.random() < self._drop:
            self.dropped += 1            # injected fault: this sample is lost
            return
        if self._spike_s > 0.0 and k % self._spike_every == self._spike_every - 1:
            time.sleep(self._spike_s)    # injected fault: a delay spike
        self.pub.publish(m)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(k)
        if self.std_out is not None:    # after the loop message: off the fast path
            self.std_out.publish(k, stamp, force)

    def timing_summary(self) -> dict:
        s = super().timing_summary()
        s["injected_drops"] = self.dropped
        return s


def main(argv=None) -> int:
    return node_main([FtSensorNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
