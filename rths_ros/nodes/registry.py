"""Node name -> module and class, for the runner, the composed process and the launch file."""
from __future__ import annotations

import importlib

NODES = {
    "recorder": "Recorder",
    "supervisor": "Supervisor",
    "live_view": "LiveView",
    "numerical_substructure": "NumericalSubstructureNode",
    "stewart_platform": "StewartPlatformNode",
    "ft_sensor": "FtSensorNode",
    "passivity_controller": "PassivityControllerNode",
    "ilc_learner": "IlcLearnerNode",
    "aff_learner": "AffLearnerNode",
    "sim_plant": "SimPlantNode",
    "hardware_plant": "HardwarePlantNode",
    "ros2_control_plant": "Ros2ControlPlantNode",
    "ros2_control_emulator": "Ros2ControlEmulatorNode",
    "smoke_talker": "SmokeTalker",
    "smoke_listener": "SmokeListener",
}


def module_name(node: str) -> str:
    return f"rths_ros.nodes.{node}"


def node_class(node: str):
    if node not in NODES:
        raise KeyError(f"unknown node {node!r}; known nodes: {', '.join(NODES)}")
    return getattr(importlib.import_module(module_name(node)), NODES[node])
