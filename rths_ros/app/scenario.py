"""Scenarios: one YAML under config/scenarios/ describes one test.

A scenario names the nodes to run, the clock mode, the numerical model, the platform, the plant,
the sensor processing, the controllers, the QoS profile and the recording.  Every leaf value is a
declared parameter (type, unit, range; see :mod:`rths_ros.params`), so a wrong type, an
out-of-range value, a missing required value or an unknown key is refused at load time with a
message naming the key, the value and what is allowed.

``rths params`` prints the full table; docs/scenarios.md documents it.
"""
from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rths_ros.app.interfaces import StandardInterfacesParams
from rths_ros.app.live import LIVE_NODE, LiveParams
from rths_ros.core.learning.aff.params import AffParams
from rths_ros.core.learning.ilc.learner import IlcParams
from rths_ros.core.methods.passivity import PassivityParams
from rths_ros.core.models.building.tracking_controller import TrackingControllerParams
from rths_ros.core.models.gait.rths import GaitPlatformParams
from rths_ros.core.plant.sim_plant import SimPlantParams
from rths_ros.core.platform.commander import PlatformCommanderParams
from rths_ros.core.platform.force_processing import ForceProcessorParams
from rths_ros.core.platform.interface import InterfaceMapParams
from rths_ros.core.platform.safety import FaultParams, SafetyParams
from rths_ros.core.platform.stewart import StewartGeometryParams
from rths_ros.drivers.hardware import HardwareParams
from rths_ros.drivers.ros2_control import Ros2ControlParams
from rths_ros.families import registry
from rths_ros.params import ParameterError, build, describe, param
from rths_ros.params import to_dict as _params_to_dict
from rths_ros.resources import config_dir

#: Every node the runner knows, in start order (beat-setting plant last, so all consumers exist).
KNOWN_NODES = ("recorder", "supervisor", "numerical_substructure", "stewart_platform", "ft_sensor",
               "passivity_controller", "ilc_learner", "aff_learner", "live_view", "ros2_control_emulator", "sim_plant",
               "hardware_plant", "ros2_control_plant",
               "smoke_listener", "smoke_talker")
#: plant key -> the node that is the plant (the beat of the run)
PLANT_NODE_OF = {"sim": "sim_plant", "hardware": "hardware_plant", "ros2_control": "ros2_control_plant"}
QOS_PROFILES = ("lockstep", "realtime", "realtime_reliable")


@dataclass(frozen=True)
class LoopParams:
    mode: str = param("lockstep", "", doc="clock mode: simulated time (deterministic) or wall clock",
                      choices=("lockstep", "realtime"))
    dt_s: float = param(0.001, "s", 1e-4, 0.01, "synchronisation step ΔT")
    duration_s: float = param(4.0, "s", 0.001, 3600.0, "length of one trial (t_end = 1/f_d for the contact test)")
    trials: int = param(1, "", 1, 1000, "number of trials (ILC iterations) in the run")
    pause_s: float = param(1.0, "s", 0.0, 60.0, "pause between trials (t_pause)")
    seed: int = param(1, "", 0, 2**31 - 1, "seed of every random source (sensor noise, ...)")
    qos_profile: str = param("", "", doc="QoS profile of config/qos.yaml; empty = the mode's own",
                             choices=("",) + QOS_PROFILES)
    timeout_s: float = param(600.0, "s", 1.0, 86400.0, "abort the run if it has not ended after this wall time")
    start_timeout_s: float = param(60.0, "s", 1.0, 600.0, "give up if the nodes have not all connected by then")

    @property
    def steps(self) -> int:
        return int(round(self.duration_s / self.dt_s))

    @property
    def qos(self) -> str:
        return self.qos_profile or self.mode


@dataclass(frozen=True)
class RealtimeParams:
    priority: int = param(0, "", 0, 99, "SCHED_FIFO priority of the processes that step the loop (plant, sensor, "
                          "numerical, platform, learners; a composed process) in realtime runs (0 = normal "
                          "scheduling); such a process runs one BLAS thread")
    observer_priority: int = param(0, "", 0, 99, "SCHED_FIFO priority of the node processes off the loop's path "
                                   "(recorder, supervisor, live view) in realtime runs (0 = normal scheduling: they "
                                   "use what the loop leaves)")
    lockstep_observers_batch: bool = param(True, "", doc="in lockstep runs, the node processes off the loop's path "
                                           "(recorder, supervisor, live view) run at SCHED_BATCH from START: their "
                                           "wake-ups do not preempt a loop process, and they keep their share of "
                                           "the CPU")
    fast_decode: bool = param(True, "", doc="the loop topics' subscriptions take each message as CDR bytes and "
                              "decode it with the package's own decoder (rths_ros/cdr.py: the same message object, "
                              "in 1-3 us instead of rclpy's 7-13 us); false: rclpy's conversion")
    cpu_affinity: tuple[int, ...] = param([], "", 0, 1023, "CPUs the node processes may run on (empty = all)")
    mlockall: bool = param(False, "", doc="lock all pages in memory (no page faults on the fast path)")
    gc_freeze: bool = param(True, "", doc="freeze the objects created during start-up out of the garbage collector")
    busy_wait_s: float = param(2e-4, "s", 0.0, 1e-3, "busy-wait tail before each realtime deadline (0 with "
                               "SCHED_FIFO on fewer cores than loop processes: a busy-waiting FIFO process holds a "
                               "core the others wait for)")
    executor: str = param("events", "", doc="rclpy executor of every node process",
                          choices=("events", "single_threaded"))
    local_bus: bool = param(True, "", doc="composed runs: hand the loop messages between the nodes in the "
                            "process directly (DDS only for a recorder of its own process and outside observers); false: every hop "
                            "over DDS")
    dds_teardown: str = param("exit", "", doc="how a node process ends after its files are written: exit = "
                              "without deleting its DDS entities (no peer processes their removal, where Fast DDS "
                              "can deadlock; observers see the nodes until their lease ends); destroy = every "
                              "entity deleted, then rclpy shut down", choices=("exit", "destroy"))
    lifecycle_autostart: bool = param(True, "", doc="managed nodes (the plant, drivers) configure and activate "
                                      "themselves; false: wait for a lifecycle manager")


@dataclass(frozen=True)
class RecordingParams:
    enabled: bool = param(True, "", doc="record the run as a rosbag2 (false: the recorder node is not started)")
    storage: str = param("mcap", "", doc="rosbag2 storage plugin", choices=("mcap", "sqlite3"))
    in_process: str = param("auto", "", doc="composed runs: the recorder in the composed process, taking each loop "
                            "message from the local bus and writing it to the bag itself (no DDS copy per hop); "
                            "auto = in lockstep, in its own process in realtime (its disk writes off the loop's "
                            "interpreter); always; never (its own process, reading over DDS)",
                            choices=("auto", "always", "never"))

    hop_log: bool = param(False, "", doc="each node logs when it published and when it took each loop message "
                          "(OUT/timing/<node>.hops.npz): the step split into its hops and each node's own work, "
                          "`rths bench hops OUT` (docs/performance.md); about 0.3 µs per message")

    def composed_in_process(self, mode: str) -> bool:
        """Whether a composed run of loop mode ``mode`` keeps the recorder in the composed process."""
        return self.in_process == "always" or (self.in_process == "auto" and mode == "lockstep")


@dataclass(frozen=True)
class SmokeParams:
    amplitude_m: float = param(0.01, "m", 0.0, 1.0, "amplitude of the talker's sine command")
    frequency_hz: float = param(1.0, "Hz", 0.0, 100.0, "frequency of the talker's sine command")
    stiffness_n_per_m: float = param(1000.0, "N/m", 0.0, 1e9, "listener's spring: force = -k * position")
    feedback_gain: float = param(1e-6, "m/N", 0.0, 1.0, "talker adds gain * last force to its command")


MODELS = registry.models()


@dataclass(frozen=True)
class _NumericalSections:
    model: str = param("contact_1d", "", doc="numerical substructure model (the registered models, "
                       "rths_ros.families): " + "; ".join(f"{k} = {e.doc}" for k, e in MODELS.items()),
                       choices=tuple(MODELS))

    @property
    def family(self) -> str:
        """The model's family (rths_ros.families.registry)."""
        return registry.family_of(self.model)


def _numerical_fields() -> list:
    """numerical.<section>: the sections each registered family brings, then each model's own section."""
    fields, seen = [], set()
    for fam in registry.families().values():
        for name, (cls, doc) in fam.sections.items():
            if name not in seen:
                seen.add(name)
                fields.append((name, cls, param(cls(), doc=doc)))
    for e in MODELS.values():
        if e.section and e.section not in seen:
            seen.add(e.section)
            fields.append((e.section, e.params, param(e.params(), doc=e.doc)))
    return fields


#: numerical.<section> of every registered family and model
NumericalParams = dataclasses.make_dataclass("NumericalParams", _numerical_fields(), bases=(_NumericalSections,),
                                             frozen=True)
NumericalParams.__module__ = __name__
NumericalParams.__doc__ = "The numerical substructure: the model and the parameter sections of the models."


@dataclass(frozen=True)
class PlatformParams:
    geometry: StewartGeometryParams = param(StewartGeometryParams(), doc="hexapod geometry and limits")
    interface: InterfaceMapParams = param(InterfaceMapParams(), doc="interface DoFs and specimen mounting")
    commander: PlatformCommanderParams = param(PlatformCommanderParams(), doc="feedforward and limit switches")
    gait: GaitPlatformParams = param(GaitPlatformParams(), doc="prosthetic foot mounting and leg-speed policy "
                                     "(numerical.model = vpp)")


@dataclass(frozen=True)
class Scenario:
    name: str = param("unnamed", "", doc="scenario name")
    description: str = param("", "", doc="one-line description")
    deliberate_mismatches: tuple[str, ...] = param([], "", doc="keys whose physical quantity may differ from the "
                                                   "same quantity in another section (a mis-identification study); "
                                                   "any other disagreement is refused at load (the family's same_quantities)")
    nodes: tuple[str, ...] = param(list(KNOWN_NODES[:5]) + ["sim_plant"], "", doc="nodes to start",
                                   choices=KNOWN_NODES)
    plant: str = param("sim", "", doc="simulated plant, the hardware drivers or a ros2_control rig",
                       choices=tuple(PLANT_NODE_OF))
    loop: LoopParams = param(LoopParams(), doc="clock mode, step, duration, trials")
    realtime: RealtimeParams = param(RealtimeParams(), doc="process real-time settings")
    recording: RecordingParams = param(RecordingParams(), doc="rosbag2 recording")
    live: LiveParams = param(LiveParams(), doc="the live view: a Foxglove WebSocket server streaming the run, "
                             "with the operator e-stop (node live_view, docs/live.md)")
    numerical: NumericalParams = param(NumericalParams(), doc="numerical substructure")
    platform: PlatformParams = param(PlatformParams(), doc="Stewart platform")
    sim_plant: SimPlantParams = param(SimPlantParams(), doc="digital twin of platform and specimen")
    ft_sensor: ForceProcessorParams = param(ForceProcessorParams(), doc="force/torque sensor processing")
    passivity: PassivityParams = param(PassivityParams(), doc="Normalized Passivity Control (passivity_controller)")
    ilc: IlcParams = param(IlcParams(), doc="iterative learning control between trials (ilc_learner)")
    aff: AffParams = param(AffParams(), doc="adaptive feedforward FIR filters (aff_learner)")
    safety: SafetyParams = param(SafetyParams(), doc="limits, watchdogs and the safe pose after an abort")
    faults: FaultParams = param(FaultParams(), doc="fault injection (tests and drills)")
    smoke: SmokeParams = param(SmokeParams(), doc="the smoke test's two nodes")
    hardware: HardwareParams = param(HardwareParams(), doc="plant = hardware: platform link, Net F/T, emulation")
    ros2_control: Ros2ControlParams = param(Ros2ControlParams(), doc="plant = ros2_control: controller topics, "
                                            "joint names, emulation")
    standard_interfaces: StandardInterfacesParams = param(StandardInterfacesParams(), doc="the run's data in "
                                                          "standard ROS 2 messages; a third-party F/T driver")
    tracking_controller: TrackingControllerParams = param(TrackingControllerParams(), doc="tracking controller of "
                                                          "the building benchmark (numerical.model = building)")

    def validate(self) -> None:
        for key in ("teardown_hang_node", "crash_node", "start_failure_node"):
            name = getattr(self.faults, key)
            if name and name not in KNOWN_NODES:
                raise ParameterError(f"faults.{key}: {name!r} is not allowed; expected '' or one of "
                                     + ", ".join(repr(n) for n in KNOWN_NODES))
        if len(set(self.nodes)) != len(self.nodes):
            raise ParameterError(f"nodes: {list(self.nodes)!r} names a node twice")
        if not self.nodes:
            raise ParameterError("nodes: [] is not allowed; expected at least one node")
        self._validate_node_set()
        self._validate_same_quantities()
        self._validate_rig()
        fam = registry.family(self.numerical.family)
        if self.platform.commander.added_delay_steps and not fam.added_delay:
            raise ParameterError(f"platform.commander.added_delay_steps: {self.platform.commander.added_delay_steps!r} "
                                 f"is not allowed with numerical.model = {self.numerical.model!r}; expected 0 (the "
                                 "added delay acts in the leg commander of the 1-D interface)")
        if fam.validate is not None:
            fam.validate(self)                  # the family's own rules (its rig, its controllers, its sample times)
        if fam.stewart:                         # the Stewart commander and the passivity controller share the step
            checks = (("passivity.dt_s", self.passivity.dt_s),
                      ("platform.commander.coupling.dt_s", self.platform.commander.coupling.dt_s))
        else:                                   # an enabled passivity controller shares the step
            checks = (("passivity.dt_s", self.passivity.dt_s),) if self.passivity.enabled else ()
        if "contact_1d" in fam.sections:        # and so does the contact test's model where the family has it
            checks = (("numerical.contact_1d.dt_s", self.numerical.contact_1d.dt_s),) + checks
        for key, value in checks:
            if abs(value - self.loop.dt_s) > 1e-15:
                raise ParameterError(f"{key}: {value!r} differs from loop.dt_s = {self.loop.dt_s!r}; they must be "
                                     "equal (one update per synchronisation step)")

    def _validate_same_quantities(self) -> None:
        """One physical quantity, one value: the keys of the family's ``same_quantities`` that this scenario uses must agree
        (relative 1e-9), unless the differing key is named in ``deliberate_mismatches``."""
        every = [q for fam in registry.families().values() for q in fam.same_quantities]
        for key in self.deliberate_mismatches:
            if not any(key in keys for _, keys in every):
                raise ParameterError(f"deliberate_mismatches: {key!r} is not allowed; expected keys of "
                                     + "; ".join(f"{what}: {', '.join(keys)}" for what, keys in every))
        fam = registry.family(self.numerical.family)
        for what, keys in fam.same_quantities:
            used = [(k, float(_get_key(self, k))) for k in keys if fam.key_in_use is None or fam.key_in_use(self, k)]
            if len(used) < 2:
                continue
            k0, v0 = used[0]
            for k, v in used[1:]:
                if abs(v - v0) <= 1e-9 * max(abs(v), abs(v0)) or k in self.deliberate_mismatches \
                        or k0 in self.deliberate_mismatches:
                    continue
                raise ParameterError(f"{k}: {v!r} differs from {k0} = {v0!r}; both are the {what} and must agree "
                                     f"(set both), or name {k!r} in deliberate_mismatches for a deliberate "
                                     "mis-identification study")

    def _validate_node_set(self) -> None:
        """The plant's node comes from ``plant``: ``nodes`` lists 'sim_plant' (replaced by the rig's node) or the node
        of the chosen plant, never another plant's node or two of them; the ros2_control emulator is started by
        ``ros2_control.emulate``, not listed."""
        listed = [n for n in self.nodes if n in PLANT_NODE_OF.values()]
        ours = PLANT_NODE_OF[self.plant]
        if len(listed) > 1:
            raise ParameterError(f"nodes: {list(self.nodes)!r} lists {len(listed)} plant nodes "
                                 f"({', '.join(listed)}); expected one: 'sim_plant' (replaced by the node of plant = "
                                 f"{self.plant!r}) or {ours!r}")
        if listed and listed[0] not in ("sim_plant", ours):
            raise ParameterError(f"nodes: {listed[0]!r} is not allowed with plant = {self.plant!r}; expected "
                                 f"'sim_plant' (replaced by the plant's node) or {ours!r}")
        if "ros2_control_emulator" in self.nodes:
            raise ParameterError("nodes: 'ros2_control_emulator' is not allowed in the node list; expected "
                                 "ros2_control.emulate: true with plant = 'ros2_control' (the emulator is started "
                                 "with the run's plant, in its own process)")

    def _validate_rig(self) -> None:
        """A ros2_control rig and a third-party sensor driver run on their own clocks: realtime mode only."""
        wanted = self.standard_interfaces.wrench_input_topic
        if self.plant == "ros2_control":
            if self.loop.mode != "realtime":
                raise ParameterError(f"plant: 'ros2_control' is not allowed with loop.mode = {self.loop.mode!r}; "
                                     "expected loop.mode = 'realtime' (the rig runs on its own clock)")
            if not wanted:
                raise ParameterError("standard_interfaces.wrench_input_topic: '' is not allowed with plant = "
                                     "'ros2_control'; expected the WrenchStamped topic of the rig's force/torque "
                                     "sensor driver, e.g. '/ft_sensor/wrench'")
            if not registry.family(self.numerical.family).stewart:
                raise ParameterError(f"plant: 'ros2_control' is not allowed with numerical.model = "
                                     f"{self.numerical.model!r} (the ros2_control rig is a Stewart platform; the "
                                     "model's rig has none); expected 'sim'")
        if wanted and self.loop.mode != "realtime":
            raise ParameterError(f"standard_interfaces.wrench_input_topic: {wanted!r} is not allowed with "
                                 f"loop.mode = {self.loop.mode!r}; expected loop.mode = 'realtime' (a sensor "
                                 "driver streams on its own clock) or ''")
        if wanted and wanted in (self.standard_interfaces.wrench_topic, self.standard_interfaces.joint_state_topic):
            raise ParameterError(f"standard_interfaces.wrench_input_topic: {wanted!r} is one of the node's own "
                                 "output topics; expected the sensor driver's topic")

    @property
    def steps(self) -> int:
        """Steps per trial."""
        return self.loop.steps

    @property
    def run_nodes(self) -> tuple[str, ...]:
        """The nodes to start: ``nodes`` plus the controllers the scenario enables, in start order."""
        wanted = set(self.nodes)
        if not self.recording.enabled:
            wanted.discard("recorder")
        for section, node in CONTROLLER_NODES.items():
            sec = getattr(self, section, None)
            if sec is not None and getattr(sec, "enabled", False):
                wanted.add(node)
        if self.live.enabled:
            wanted.add(LIVE_NODE)
        plants = set(PLANT_NODE_OF.values())
        if self.plant != "sim" and wanted & plants:   # the rig replaces the digital twin (listed or not)
            wanted -= plants
            wanted.add(PLANT_NODE_OF[self.plant])
            if self.plant == "ros2_control" and self.ros2_control.emulate:
                wanted.add("ros2_control_emulator")
        return tuple(n for n in KNOWN_NODES if n in wanted)


def _get_key(s, key: str):
    obj = s
    for part in key.split("."):
        obj = getattr(obj, part)
    return obj


#: scenario section -> the node that runs it when the section is enabled
CONTROLLER_NODES = {"passivity": "passivity_controller", "ilc": "ilc_learner", "aff": "aff_learner"}


# ---------------------------------------------------------------------------------------------
def scenario_folders(plugins: bool = True) -> list[Path]:
    """Where scenarios are found by name: config/scenarios/ of this package, then the folders installed packages
    add (entry-point group rths_ros.scenarios; ``plugins=False``: this package's only)."""
    return [config_dir() / "scenarios"] + ([d for _, d in registry.scenario_dirs()] if plugins else [])


def scenario_names(plugins: bool = True) -> list[str]:
    """The names of the scenarios of :func:`scenario_folders` (the first folder wins a name found twice)."""
    return sorted({p.stem for d in scenario_folders(plugins) for p in d.glob("*.yaml")})


def resolve_path(name_or_path: str) -> Path:
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.exists():
            raise ParameterError(f"scenario: file {name_or_path!r} does not exist")
        return p
    for folder in scenario_folders():
        cand = folder / f"{name_or_path}.yaml"
        if cand.exists():
            return cand
    raise ParameterError(f"scenario: {name_or_path!r} is neither a file nor one of the scenarios "
                         + ", ".join(scenario_names()))


def parse_override(text: str) -> tuple[list[str], Any]:
    """``a.b.c=value`` -> (["a","b","c"], YAML-parsed value)."""
    if "=" not in text:
        raise ParameterError(f"--set {text!r}: expected KEY=VALUE, e.g. numerical.contact_1d.d_num_kg_per_s=50")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key:
        raise ParameterError(f"--set {text!r}: empty key")
    value = safe_yaml(raw, f"--set {key}: value {raw!r}")
    return key.split("."), value


def apply_overrides(data: dict, overrides: list[str] | tuple[str, ...]) -> dict:
    data = copy.deepcopy(data)
    for text in overrides or ():
        path, value = parse_override(text)
        set_dotted(data, ".".join(path), value, what="--set ")
    return data


def set_dotted(data: dict, key: str, value: Any, what: str = "") -> None:
    """``data[a][b][c] = value`` for the key ``a.b.c``, creating missing sections; a value on the way that is no
    section raises ParameterError naming ``what`` + the key."""
    path = key.split(".")
    node = data
    for i, part in enumerate(path[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            raise ParameterError(f"{what}{key}: {'.'.join(path[:i + 1])} is not a section")
        node = nxt
    node[path[-1]] = value


class _ScenarioLoader(yaml.SafeLoader):
    """SafeLoader that also reads exponent floats without a dot (``1e-7``, YAML 1.2) as numbers;
    YAML 1.1 would make them strings."""


_ScenarioLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))

MAX_SCENARIO_BYTES = 1_000_000
MAX_YAML_ALIASES = 100
MAX_YAML_DEPTH = 20


def safe_yaml(text: str, where: str):
    """YAML -> data, refusing what no scenario needs and a hostile file could use: more than
    MAX_SCENARIO_BYTES, more than MAX_YAML_ALIASES aliases (the exponential 'billion laughs'
    expansion), nesting deeper than MAX_YAML_DEPTH."""
    if len(text) > MAX_SCENARIO_BYTES:
        raise ParameterError(f"{where}: {len(text)} bytes is too large; a scenario has at most "
                             f"{MAX_SCENARIO_BYTES} bytes")
    try:
        aliases = depth = 0
        for ev in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(ev, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_YAML_ALIASES:
                    raise ParameterError(f"{where}: more than {MAX_YAML_ALIASES} YAML aliases; not allowed")
            elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise ParameterError(f"{where}: nested deeper than {MAX_YAML_DEPTH} levels; not allowed")
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        return yaml.load(text, Loader=_ScenarioLoader)
    except yaml.YAMLError as exc:
        raise ParameterError(f"{where}: not valid YAML ({exc})") from None


def load_data(name_or_path: str, _chain: tuple[Path, ...] = ()) -> dict:
    """The scenario file's data.  ``extends: BASE`` (a scenario name, or a path relative to the file) starts from
    BASE's data and lays this file's keys over it, section by section (a lab's rig file shared by its tests);
    ``rths check`` shows the result."""
    path = resolve_path(name_or_path)
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ParameterError(f"scenario {path}: not UTF-8 text") from None
    data = safe_yaml(text, f"scenario {path}")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ParameterError(f"scenario {path}: top level must be a mapping of sections, got {type(data).__name__}")
    data.setdefault("name", path.stem)
    base = data.pop("extends", None)
    if base is None:
        return data
    if not isinstance(base, str) or not base:
        raise ParameterError(f"extends: {base!r} is not allowed in {path}; expected a scenario name or a YAML path")
    near = path.parent / base
    target = near if near.suffix in (".yaml", ".yml") and near.exists() else Path(base)
    chain = _chain + (path.resolve(),)
    try:
        resolved = resolve_path(str(target)).resolve()
    except ParameterError as exc:
        raise ParameterError(f"extends: {base!r} in {path}: {exc}") from None
    if resolved in chain:
        raise ParameterError(f"extends: {base!r} in {path} is not allowed: the scenarios extend each other "
                             f"({' -> '.join(str(c) for c in chain + (resolved,))})")
    merged = load_data(str(resolved), chain)
    merged.pop("name", None)
    return _laid_over(merged, data)


def _laid_over(base: dict, top: Mapping) -> dict:
    """``base`` with ``top``'s keys laid over it, mappings merged key by key."""
    out = dict(base)
    for key, value in top.items():
        out[key] = _laid_over(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), dict) \
            else value
    return out


def numerical_sections(model: str) -> tuple[str, ...]:
    """The ``numerical.<section>`` names a scenario of ``model`` uses: its family's sections and the model's own."""
    entry = registry.model(model)
    own = (entry.section,) if entry.section else ()
    return tuple(registry.family(entry.family).sections) + own


def section_owner(section: str) -> tuple[str, str]:
    """Who brings ``numerical.<section>``: (the family, 'family F' or 'model M of family F'); ('', '') for nobody."""
    for name, fam in registry.families().items():
        if section in fam.sections:
            return name, f"family {name}"
    for name, entry in MODELS.items():
        if entry.section == section:
            return entry.family, f"model {name} of family {entry.family}"
    return "", ""


def _refuse_foreign_sections(data: Mapping[str, Any]) -> None:
    """A ``numerical.<section>`` of another family is refused, naming who owns it.  (A section of another model of
    the same family is accepted, so a scenario can switch between its family's models with ``numerical.model``;
    a run carries only the sections its model uses, :func:`to_dict`.)"""
    num = data.get("numerical")
    if not isinstance(num, Mapping):
        return
    model = num.get("model", _NumericalSections.__dataclass_fields__["model"].default)
    if not isinstance(model, str) or model not in MODELS:
        return                                  # the parameter check names the allowed models
    family = registry.family_of(model)
    for key in num:
        owner_family, owner = section_owner(key) if isinstance(key, str) else ("", "")
        if owner_family and owner_family != family:
            raise ParameterError(f"numerical.{key}: not allowed with numerical.model = {model!r} (family {family}, "
                                 f"sections {', '.join(numerical_sections(model)) or 'none'}); it belongs to {owner}")


def from_data(data: Mapping[str, Any], overrides: list[str] | tuple[str, ...] = (),
              mode: str | None = None) -> Scenario:
    data = apply_overrides(dict(data), list(overrides))
    if mode is not None:
        data = apply_overrides(data, [f"loop.mode={mode}"])
    _refuse_foreign_sections(data)
    return build(Scenario, data)


def load(name_or_path: str, overrides: list[str] | tuple[str, ...] = (), mode: str | None = None,
         plant: str | None = None) -> Scenario:
    """Load, override and validate a scenario (name under config/scenarios/ or a path); ``mode`` and
    ``plant`` override loop.mode and plant."""
    overrides = list(overrides) + ([f"plant={plant}"] if plant else [])
    return from_data(load_data(name_or_path), overrides, mode)


def to_dict(scenario: Scenario) -> dict:
    """The scenario as a plain nested dict, with the numerical sections its model uses only (a run's bag carries
    what the run used, and reads back where other plugins are installed)."""
    d = _params_to_dict(scenario)
    keep = set(numerical_sections(scenario.numerical.model)) | {"model"}
    d["numerical"] = {k: v for k, v in d["numerical"].items() if k in keep}
    return d


def parameter_count(scenario: Scenario) -> int:
    """Leaf parameters of :func:`to_dict` (what the scenario carries)."""
    def leaves(v) -> int:
        return sum(leaves(x) for x in v.values()) if isinstance(v, dict) else 1
    return leaves(to_dict(scenario))


def dump(scenario: Scenario) -> str:
    """The fully resolved scenario (every default filled in, the numerical sections its model uses) as YAML."""
    return yaml.safe_dump(to_dict(scenario), sort_keys=False)


def replace(scenario: Scenario, **changes) -> Scenario:
    return dataclasses.replace(scenario, **changes)


def parameter_table(plugins: bool = True) -> list[dict]:
    """Every parameter (key, type, default, unit, allowed, doc); ``plugins=False``: without the numerical sections
    that installed packages other than this one add."""
    rows = describe(Scenario)
    if plugins:
        return rows

    def shipped(key: str) -> bool:
        parts = key.split(".")
        if parts[0] != "numerical" or len(parts) < 3:
            return True
        family, _ = section_owner(parts[1])
        owner = next((m for m, e in MODELS.items() if e.section == parts[1]), family)
        return registry.origin(owner) == registry.SHIPPED
    return [r for r in rows if shipped(r["key"])]
