"""ft_sensor: raw sensor wrench -> interface force (bias/tare, frame, gravity compensation,
contact gating; seed 000 §4.2.4).

In:  /rths/raw_wrench (RawWrench, step k) from the simulated plant or the sensor driver
Out: /rths/interface_force (InterfaceForce, step k)

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


class FtSensorNode(RthsNode):
    role = "ft_sensor"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.path = factory.build_force_path(scenario)
        self.path.reset()
        self.pub = self.control_publisher(InterfaceForce, "/rths/interface_force")
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
        if self.needs_legs:
            self.control_subscription(LegState, "/rths/leg_state", self.on_leg_state)

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
        t0 = time.perf_counter_ns()
        self.timing.tick()
        f, t = msg.wrench.force, msg.wrench.torque
        w = self._w
        w[0], w[1], w[2], w[3], w[4], w[5] = f.x, f.y, f.z, t.x, t.y, t.z
        k = int(msg.step)
        bad = non_finite("wrench", w, k) or wrench_out_of_range(w, self._f_lim, self._t_lim, k)
        if bad:
            self.abort_reason = f"ft_sensor: {bad}"
            self.emit(TestEvent.ABORT, k, self.abort_reason)
            self.finish(3)
            return
        stamp = msg.header.stamp
        lengths = None
        if self.needs_legs:
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

    def timing_summary(self) -> dict:
        s = super().timing_summary()
        s["injected_drops"] = self.dropped
        return s


def main(argv=None) -> int:
    return node_main([FtSensorNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
