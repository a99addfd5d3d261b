"""ft_sensor: raw sensor wrench -> interface force (bias/tare, frame, gravity compensation,
contact gating; seed 000 §4.2.4).

In:  /rths/raw_wrench (RawWrench, step k) from the simulated plant or the sensor driver
Out: /rths/interface_force (InterfaceForce, step k)
"""
from __future__ import annotations

import time

from ..core import fastpath
from ..runtime.node import RthsNode, node_main

import numpy as np

from ..core.safety import non_finite, wrench_out_of_range

from rths_ros.msg import InterfaceForce, RawWrench, TestEvent  # noqa: E402


class FtSensorNode(RthsNode):
    role = "ft_sensor"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.proc = fastpath.build_force_processor(scenario)
        self.proc.reset()
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

    def reset_for_trial(self, trial: int) -> None:
        self.proc.reset()

    def on_wrench(self, msg: RawWrench) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        t0 = time.perf_counter_ns()
        self.timing.tick()
        f, t = msg.wrench.force, msg.wrench.torque
        w = self._w
        w[0], w[1], w[2], w[3], w[4], w[5] = f.x, f.y, f.z, t.x, t.y, t.z
        bad = non_finite("wrench", w, msg.step) or wrench_out_of_range(w, self._f_lim, self._t_lim, msg.step)
        if bad:
            self.abort_reason = f"ft_sensor: {bad}"
            self.emit(TestEvent.ABORT, msg.step, self.abort_reason)
            self.finish(3)
            return
        f_int, f_meas, contact = self.proc.process(w)
        m = self.msg
        m.header.stamp = msg.header.stamp
        m.step = msg.step
        m.force = [f_int]
        m.measured = [f_meas]
        m.contact = bool(contact)
        m.origin_stamp = msg.header.stamp
        if self._drop > 0.0 and self._drop_rng.random() < self._drop:
            self.dropped += 1            # injected fault: this sample is lost
            return
        if self._spike_s > 0.0 and msg.step % self._spike_every == self._spike_every - 1:
            time.sleep(self._spike_s)    # injected fault: a delay spike
        self.pub.publish(m)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(msg.step)


    def timing_summary(self) -> dict:
        s = super().timing_summary()
        s["injected_drops"] = self.dropped
        return s


def main(argv=None) -> int:
    return node_main([FtSensorNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
