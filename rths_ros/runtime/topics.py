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


#: the plant nodes: exactly one of them is the beat of a run (scenario key ``plant``)
PLANT_PRODUCERS = ("sim_plant", "hardware_plant", "ros2_control_plant")
#: the plants with their own sensor interface (a ros2_control rig's sensor is a WrenchStamped driver)
RAW_WRENCH_PRODUCERS = ("sim_plant", "hardware_plant")

TOPICS: tuple[Topic, ...] = (
    Topic("/rths/leg_state", "rths_ros/msg/LegState", PLANT_PRODUCERS,
          ("stewart_platform", "ilc_learner", "aff_learner")),
    Topic("/rths/raw_wrench", "rths_ros/msg/RawWrench", RAW_WRENCH_PRODUCERS, ("ft_sensor",)),
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


#: the leg topics an adaptive filter's learner reads when it adapts with the leg gap
LEG_GAP_TOPICS = ("/rths/leg_state", "/rths/leg_command")


def consumers(topic: str, scenario) -> tuple[str, ...]:
    """The nodes that read ``topic`` in this scenario: the table's consumers, except that the ft_sensor reads a
    sensor driver's WrenchStamped instead of /rths/raw_wrench when ``standard_interfaces.wrench_input_topic`` is
    set, and that an aff_learner adapting with the interface gap (the family's ``aff_gap``) reads no leg topic."""
    if topic == "/rths/raw_wrench" and scenario.standard_interfaces.wrench_input_topic:
        return ()
    if topic in LEG_GAP_TOPICS:
        from rths_ros.app.factory import parts
        if parts(scenario).aff_gap != "legs":
            return tuple(c for c in BY_NAME[topic].consumers if c != "aff_learner")
    return BY_NAME[topic].consumers


def expected_consumers(topic: str, scenario) -> int:
    """How many of the topic's consumers (plus the recorder, if running) the scenario starts.

    The live view (node live_view) is never one of them: it reads best effort and creates its readers only after
    every other node announced READY, so it neither counts here nor is waited for (docs/live.md)."""
    t = BY_NAME[topic]
    running = scenario.run_nodes
    n = sum(1 for c in consumers(topic, scenario) if c in running)
    if "recorder" in running and t.kind in ("control", "learner"):
        n += 1
    return n
