"""smoke_listener: answers each InterfaceCommand of step k with InterfaceForce for step k+1
(force = -k_spring * position), the way the plant + sensor answer the real fast path."""
from __future__ import annotations

from rths_ros.msg import InterfaceCommand, InterfaceForce
from rths_ros.runtime.node import RthsNode, node_main


class SmokeListener(RthsNode):
    role = "smoke_listener"
    fast_path = False

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.k_spring = scenario.smoke.stiffness_n_per_m
        self.pub = self.control_publisher(InterfaceForce, "/rths/interface_force")
        self.control_subscription(InterfaceCommand, "/rths/interface_command", self.on_command)
        self.msg = InterfaceForce()

    def on_command(self, cmd: InterfaceCommand) -> None:
        self.timing.tick()
        f = -self.k_spring * cmd.position[0]
        m = self.msg
        m.header.stamp = cmd.header.stamp
        m.step = cmd.step + 1
        m.force = [f]
        m.measured = [f]
        m.contact = False
        m.origin_stamp = cmd.origin_stamp
        self.pub.publish(m)
        self.sync_readers(cmd.step)


def main(argv=None) -> int:
    return node_main([SmokeListener], argv)


if __name__ == "__main__":
    raise SystemExit(main())
