"""smoke_talker: the beat-setting half of the ``smoke`` scenario.

Publishes InterfaceCommand for step k: a sine plus a feedback term from the force the listener
answered for step k-1, so the two nodes form a closed loop like the real fast path.  Writes its
log (step, position, force) to OUT/smoke_talker.csv at the end; two lockstep runs give identical
logs.
"""
from __future__ import annotations

import math
import time

import numpy as np

from rths_ros.msg import InterfaceCommand, InterfaceForce
from rths_ros.runtime.beat import BeatNode
from rths_ros.runtime.node import node_main, set_stamp, stamp_ns


class SmokeTalker(BeatNode):
    role = "smoke_talker"
    fast_path = False
    beat_inputs = ("/rths/interface_force",)

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        p = scenario.smoke
        self.a, self.w, self.gain = p.amplitude_m, 2 * math.pi * p.frequency_hz, p.feedback_gain
        self.pub = self.control_publisher(InterfaceCommand, "/rths/interface_command")
        self.control_subscription(InterfaceForce, "/rths/interface_force", self.on_input)
        self.msg = InterfaceCommand()
        self.log = np.zeros((self.n_steps + 1, 3))
        self.force = 0.0

    def emit_output(self, k, origin_ns):
        t = self.local_step(k) * self.dt
        pos = self.a * math.sin(self.w * t) + self.gain * self.force
        vel = self.a * self.w * math.cos(self.w * t)
        self.log[self.local_step(k)] = (k, pos, self.force)
        m = self.msg
        m.header.stamp = self.get_clock().now().to_msg()
        m.step = k
        m.position = [pos]
        m.velocity = [vel]
        m.origin_step = k
        set_stamp(m.origin_stamp, origin_ns)
        self.pub.publish(m)

    def on_arrival(self, inp):
        self.timing.latency((time.time_ns() - stamp_ns(inp.origin_stamp)) * 1e-9)

    def advance(self, k_next, inp):
        if inp is not None:
            self.force = float(inp.force[0])

    def on_last_step(self):
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            np.savetxt(self.out_dir / "smoke_talker.csv", self.log[: self.local_step(self.k) + 1], delimiter=",",
                       header="step,position_m,force_n", fmt=["%d", "%.17g", "%.17g"])


def main(argv=None) -> int:
    return node_main([SmokeTalker], argv)


if __name__ == "__main__":
    raise SystemExit(main())
