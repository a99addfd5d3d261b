"""The topic table of the node graph: name, type, producer, consumers.

Nodes create their publishers and subscriptions from this table, wait at start until every
consumer that the scenario runs is connected, and the recorder subscribes to all of it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    name: str
    type: str              # "pkg/msg/Name"
    producers: tuple[str, ...]
    consumers: tuple[str, ...]
    kind: str = "control"  # control | event | diagnostics | learner


PLANT_PRODUCERS = ("sim_plant", "hardware_plant")

TOPICS: tuple[Topic, ...] = (
    Topic("/rths/leg_state", "rths_ros/msg/LegState", PLANT_PRODUCERS,
          ("stewart_platform", "ilc_learner", "aff_learner")),
    Topic("/rths/raw_wrench", "rths_ros/msg/RawWrench", PLANT_PRODUCERS, ("ft_sensor",)),
    Topic("/rths/interface_force", "rths_ros/msg/InterfaceForce", ("ft_sensor", "smoke_listener"),
          ("numerical_substructure", "smoke_talker", "passivity_controller")),
    Topic("/rths/interface_command", "rths_ros/msg/InterfaceCommand", ("numerical_substructure", "smoke_talker"),
          ("stewart_platform", "smoke_listener", "passivity_controller", "ilc_learner")),
    Topic("/rths/interface_state", "rths_ros/msg/InterfaceState", ("stewart_platform",),
          ("passivity_controller", "ilc_learner")),
    Topic("/rths/leg_command", "rths_ros/msg/LegCommand", ("stewart_platform",),
          PLANT_PRODUCERS + ("ilc_learner", "aff_learner")),
    Topic("/rths/passivity", "rths_ros/msg/PassivityState", ("passivity_controller",), ("numerical_substructure",)),
    Topic("/rths/aff_coefficients", "rths_ros/msg/AdaptiveFilter", ("aff_learner",), ("stewart_platform",)),
    Topic("/rths/ilc_feedforward", "rths_ros/msg/IlcFeedforward", ("ilc_learner",), ("stewart_platform",), "event"),
    Topic("/rths/events", "rths_ros/msg/TestEvent", (), (), "event"),
    Topic("/rths/timing", "rths_ros/msg/LoopTiming", (), (), "diagnostics"),
)

BY_NAME = {t.name: t for t in TOPICS}


def expected_consumers(topic: str, running: tuple[str, ...] | list[str]) -> int:
    """How many of the topic's consumers (plus the recorder, if running) the scenario starts."""
    t = BY_NAME[topic]
    n = sum(1 for c in t.consumers if c in running)
    if "recorder" in running and t.kind in ("control", "learner"):
        n += 1
    return n
