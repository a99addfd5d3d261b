"""ft_sensor: raw sensor wrench -> interface force (bias/tare, frame, gravity compensation,
contact gating; seed 000 §4.2.4).

In:  /rths/raw_wrench (RawWrench, step k) from the simulated plant or the sensor driver
Out: /rths/interface_force (InterfaceForce, step k)
"""
from __future__ import annotations

import time

from ..core import fastpath
from ..runtime.node import RthsNode, node_main

from ..core.safety import non_finite

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
        bad = non_finite("wrench", w, msg.step)
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
        self.pub.publish(m)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(msg.step)


def main(argv=None) -> int:
    return node_main([FtSensorNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
