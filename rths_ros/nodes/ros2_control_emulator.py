"""ros2_control_emulator: the node of a run that stands in for a hexapod under ros2_control and its force/torque
sensor driver (``plant = ros2_control`` with ``ros2_control.emulate: true``).

The node itself, :class:`~rths_ros.runtime.ros2_control_emulator.Ros2ControlEmulatorNode`, lives in the runtime
layer so that the rig client (:mod:`rths_ros.runtime.ros2_control_rig`, ``rths commission``, ``rths identify
--ros2-control``) can start it in
its own process; its rig, wiring faults included, is
:class:`~rths_ros.app.ros2_control_twin.Ros2ControlTwin`.  This module is its entry point as a node process.
"""
from __future__ import annotations

from rths_ros.runtime.node import node_main
from rths_ros.runtime.ros2_control_emulator import Ros2ControlEmulatorNode

__all__ = ["Ros2ControlEmulatorNode", "main"]


def main(argv=None) -> int:
    return node_main([Ros2ControlEmulatorNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
