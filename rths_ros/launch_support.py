"""What the launch files start, computed without the ``launch`` package.

``launch/rths.launch.py`` and ``launch/plant.launch.py`` are thin: the scenario, the node set, the run
directory and the node environment come from here, the same code ``rths run`` uses, so a launched run
and a ``rths run`` of the same scenario start the same processes with the same resolved scenario.
The ``launch``-specific part (arguments, event handlers) is in :mod:`rths_ros.launch_actions`.
"""
from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.core.platform.safety import safe_ramp_bound_s
from rths_ros.params import ParameterError
from rths_ros.resources import config_dir
from rths_ros.runtime.fastdds import FASTDDS_PROFILES, fastdds_generation

#: Hardware driver nodes replacing the simulated plant when plant = hardware.
HARDWARE_NODES: dict[str, tuple[str, ...]] = {"sim_plant": ("hardware_plant",)}

#: Nodes that belong to the rig side (the plant and its sensor driver): launch/plant.launch.py starts
#: these, so swapping the simulated plant for the hardware drivers changes that one included file's
#: node set and nothing else.
PLANT_SIDE_NODES = ("ft_sensor", *scn.PLANT_NODE_OF.values(), "ros2_control_emulator")
#: the nodes on the rig's computer when a run is split over two hosts (launch argument ``side``, ``rths run
#: --two-hosts``): the plant side and the platform, which turns interface commands into leg commands; every other
#: node runs on the numerical host (docs/distributed.md)
RIG_HOST_NODES = (*PLANT_SIDE_NODES, "stewart_platform")
#: the values of the launch argument ``side``
SIDES = ("all", "rig", "numerical")


def on_side(node: str, side: str) -> bool:
    """Whether a launch with ``side:=SIDE`` starts ``node``."""
    return side == "all" or (node in RIG_HOST_NODES) == (side == "rig")

#: The executable of a process holding several nodes (lib/rths_ros/composed).
COMPOSED_EXECUTABLE = "composed"

#: Launch arguments: name -> (default, description).  ``ros2 launch rths_ros rths.launch.py --show-args``
#: prints these; docs/ros2.md lists them.
LAUNCH_ARGUMENTS: dict[str, tuple[str, str]] = {
    "scenario": ("contact_1d", "scenario name under config/scenarios/ (e.g. contact_1d, gait_vpp, "
                               "benchmark_building) or a path to a scenario YAML"),
    "plant": ("", "sim | hardware | ros2_control: the digital twin, the hardware driver nodes or a ros2_control "
                  "rig (empty: the scenario's 'plant' key)"),
    "mode": ("", "lockstep | realtime: simulated time driven by the loop, or the wall clock at loop.dt_s "
                 "(empty: the scenario's loop.mode)"),
    "composed": ("false", "true: every node except the recorder and the live view in one process (one executor); "
                          "false: one process per node"),
    "record": ("true", "true: record the run as a rosbag2 (MCAP) in OUT/bag and write metrics.json, "
                       "report.md and plots after it; false: no recorder, no analysis"),
    "out": ("", "run directory for bag, metrics, report, plots, events.json and timing/ (empty: "
                "runs/<scenario>-<date>-<time> under the current directory); must not hold a bag yet"),
    "overrides": ("", "scenario values to change, space-separated KEY=VALUE pairs as with `rths run --set`, "
                      "e.g. 'loop.duration_s=1.0 passivity.enabled=true'"),
    "side": ("all", "all | rig | numerical: the nodes this launch starts when one run is split over two computers "
                    "on one ROS domain (docs/distributed.md): rig = plant, force/torque sensor driver and platform; "
                    "numerical = every other node (recorder and analysis included); all = every node"),
    "live": ("false", "true: start the live view (node live_view): a Foxglove WebSocket server at "
                      "ws://<live.host>:<live.port> (default ws://127.0.0.1:8765) streaming the run, with the "
                      "operator e-stop (docs/live.md); false: as the scenario's live.enabled says (off by default)"),
}


@dataclass(frozen=True)
class NodeSpec:
    name: str          # node name (also the ROS node name); the process name for a composed process
    executable: str    # installed executable in lib/rths_ros (the venv console script is rths_<name>)
    arguments: tuple[str, ...]
    nodes: tuple[str, ...] = ()   # the nodes this process holds (one, or several when composed)


def parse_bool(key: str, text: str) -> bool:
    t = str(text).strip().lower()
    if t in ("true", "1", "yes", "on"):
        return True
    if t in ("false", "0", "no", "off"):
        return False
    raise ParameterError(f"{key}: {text!r} is not a boolean; expected true or false")


def parse_overrides(text: str) -> list[str]:
    """``'a.b=1 c=2'`` -> ``['a.b=1', 'c=2']`` (shell-style quoting keeps a value with spaces together)."""
    try:
        items = shlex.split(text or "")
    except ValueError as exc:
        raise ParameterError(f"overrides: {text!r} cannot be split into KEY=VALUE pairs ({exc})") from None
    for item in items:
        if "=" not in item:
            raise ParameterError(f"overrides: {item!r} is not KEY=VALUE (e.g. loop.duration_s=1.0)")
    return items


def load_for_launch(scenario: str, plant: str = "", mode: str = "", overrides: tuple[str, ...] | list[str] = (),
                    record: bool = True, live: bool = False) -> scn.Scenario:
    """Load and validate the scenario with the launch arguments applied (the same rules as ``rths run``)."""
    extra = list(overrides) + ([] if record else ["recording.enabled=false"]) + (["live.enabled=true"] if live else [])
    if mode and mode not in ("lockstep", "realtime"):
        raise ParameterError(f"mode: {mode!r} is not allowed; expected lockstep or realtime")
    s = scn.load(scenario, extra, mode or None, plant or None)
    check_node_set(s)
    if s.plant == "hardware":
        missing = [n for n in s.run_nodes if n in HARDWARE_NODES and not HARDWARE_NODES[n]]
        if missing:
            raise scn.ParameterError(f"plant: 'hardware' is not available yet for {', '.join(missing)}; "
                                     "expected 'sim'")
    return s


#: nodes that start, sequence and end every run (the supervisor sends START and STOP; a beat node sets the steps)
BEAT_NODES = (*scn.PLANT_NODE_OF.values(), "smoke_talker")


def check_node_set(s: scn.Scenario) -> None:
    """Refuse at start a node set that cannot run, naming what is missing (and a ``safety.mark_filter`` the
    installed rclpy cannot serve).

    Every run needs the supervisor (it starts and ends the run) and a node that sets the steps (the plant, or
    the smoke talker).  Every loop topic a started node reads needs its producer started as well (from the
    topic table, :data:`rths_ros.runtime.topics.TOPICS`); the controllers' outputs (passivity, ILC, AFF) are
    optional inputs.  What a missing producer itself needs is named too, so one error lists the whole gap."""
    from rths_ros.runtime.topics import TOPICS, consumers
    running = set(s.run_nodes)
    optional = set(scn.CONTROLLER_NODES.values())
    smoke = any(n.startswith("smoke_") for n in running)
    missing: dict[str, str] = {}
    if "supervisor" not in running:
        missing["supervisor"] = "every run needs it: it sends START and STOP"
    if not running & set(BEAT_NODES):
        plant = "smoke_talker" if smoke and s.plant == "sim" else scn.PLANT_NODE_OF[s.plant]
        missing[plant] = "every run needs the node that sets the steps"
    todo = sorted(running | set(missing))
    while todo:
        node = todo.pop(0)
        for t in TOPICS:
            if t.kind != "control" or node not in consumers(t.name, s) or not t.producers:
                continue
            if set(t.producers) & (running | set(missing)) or set(t.producers) <= optional:
                continue
            cands = [p for p in t.producers if p.startswith("smoke_") == smoke] or list(t.producers)
            if scn.PLANT_NODE_OF[s.plant] in cands:
                cands = [scn.PLANT_NODE_OF[s.plant]]
            elif "sim_plant" in cands:
                cands = ["sim_plant"]
            producer = cands[0]
            missing[producer] = f"{node} reads {t.name}"
            todo.append(producer)
    if missing:
        what = "; ".join(f"{n} ({why})" for n, why in missing.items())
        raise ParameterError(f"nodes: {sorted(running)} cannot run: missing {what}. Add "
                             f"{', '.join(missing)} to nodes")
    if s.safety.mark_filter and not content_filter_available():
        raise ParameterError("safety.mark_filter: true needs subscriptions with a DDS content filter, which this "
                             "rclpy does not offer (the rclpy of ROS 2 Jazzy has none, Kilted's has); expected false "
                             "with this ROS 2 (the publisher check still guards every loop topic, docs/safety.md)")


def content_filter_available() -> bool:
    """Whether rclpy offers content-filtered subscriptions (``safety.mark_filter``): its module for the filter
    options exists (rclpy of Kilted; not that of Jazzy)."""
    import importlib.util
    return importlib.util.find_spec("rclpy.subscription_content_filter_options") is not None


def live_note(scenario: scn.Scenario, out: Path | str) -> str | None:
    """Where the run's live view serves and how to use it (None when the run has none); docs/live.md."""
    if "live_view" not in scenario.run_nodes:
        return None
    from rths_ros.app.live import E_STOP_TOPIC
    lp = scenario.live
    host = f"[{lp.host}]" if ":" in lp.host else lp.host
    url = f"ws://{host}:{lp.port}" if lp.port else f"ws://{host}:<port> (a free port, see {Path(out) / 'live.json'})"
    stop = f"; operator e-stop: publish on {E_STOP_TOPIC}" if lp.client_e_stop else ""
    return (f"live view: {url}; in Foxglove: Open connection, Foxglove WebSocket; layout "
            f"config/foxglove/rths_live.json{stop} (docs/live.md)")


def check_live_port(scenario: scn.Scenario) -> None:
    """Refuse at start a live view whose port is taken (another run's live view, another server), naming the key,
    the value and the way out; the node itself would only fail after every other node had started."""
    if "live_view" not in scenario.run_nodes:
        return
    import socket
    lp = scenario.live
    for key, port in (("live.port", lp.port), ("live.v1_port", lp.v1_port)):
        if port <= 0:
            continue
        try:
            info = socket.getaddrinfo(lp.host.strip(), port, type=socket.SOCK_STREAM)[0]
            with socket.socket(info[0], socket.SOCK_STREAM) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(info[4])
        except OSError as exc:
            raise ParameterError(f"{key}: {port} cannot be used on {lp.host} ({exc.strerror or exc}); expected a "
                                 f"free port: choose another {key}, or 0 for any free one") from None


#: nodes that keep a process of their own in a composed run
OWN_PROCESS_NODES = ("recorder", "live_view", "ros2_control_emulator")


def process_groups(nodes: list[str] | tuple[str, ...], composed: bool, recorder_in_process: bool = False
                   ) -> list[tuple[str, list[str]]]:
    """(process name, nodes) per process.  Composed: the fast path and the other nodes share one
    process; the recorder, the live view and the emulated ros2_control rig keep their own
    (:data:`OWN_PROCESS_NODES`), so the recorder's disk writes and the live view's WebSocket clients never hold the
    fast path's interpreter lock, and the emulated rig runs beside the graph as a real one would.
    ``recorder_in_process`` (``recording.in_process``, :meth:`RecordingParams.composed_in_process`): the recorder
    joins the composed process and takes the loop messages from its local bus (a lockstep run's default)."""
    if not composed:
        return [(n, [n]) for n in nodes]
    own = tuple(n for n in OWN_PROCESS_NODES if not (recorder_in_process and n == "recorder"))
    rest = [n for n in nodes if n not in own]
    groups = [(COMPOSED_EXECUTABLE, rest)] if rest else []
    groups += [(n, [n]) for n in nodes if n in own]
    return groups


def process_specs(scenario_path: Path | str, nodes: list[str] | tuple[str, ...], out: Path | str,
                  composed: bool = False, recorder_in_process: bool = False) -> list[NodeSpec]:
    """One spec per process: the executable in lib/rths_ros and its arguments (the resolved scenario file
    and the run directory, as ``rths run`` passes them)."""
    base = ("--scenario", str(scenario_path), "--out", str(out))
    specs = []
    for name, group in process_groups(list(nodes), composed, recorder_in_process):
        if len(group) > 1:
            specs.append(NodeSpec(name, COMPOSED_EXECUTABLE, ("--nodes", ",".join(group), *base), tuple(group)))
        else:
            specs.append(NodeSpec(name, name, base, (name,)))
    return specs


def node_specs(scenario: str, plant: str = "", mode: str = "", out: str = "", overrides: tuple[str, ...] = ()
               ) -> tuple[scn.Scenario, list[NodeSpec]]:
    """Validate the scenario with the launch arguments applied and list the nodes to start, each with the
    arguments that load the same scenario (name or path plus the overrides) without a run directory's
    resolved copy."""
    s = load_for_launch(scenario, plant, mode, overrides)
    extra = list(overrides) + ([f"plant={plant}"] if plant else [])
    args = ["--scenario", str(scn.resolve_path(scenario))]
    for o in extra:
        args += ["--set", o]
    if mode:
        args += ["--mode", mode]
    if out:
        args += ["--out", str(Path(out))]
    specs = [NodeSpec(n, n, tuple(args), (n,)) for n in s.run_nodes]   # lib/rths_ros/<node> (CMakeLists.txt)
    return s, specs


def default_out(name: str, root: Path | None = None) -> Path:
    """runs/<name>-<date>-<time> (a second run never lands in the first one's folder)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = (Path(root) if root else Path()) / "runs" / f"{name}-{stamp}"
    out, i = base, 1
    while out.exists():
        i += 1
        out = base.with_name(f"{base.name}-{i}")
    return out


#: files and folders that mark a directory as a run folder (only those are ever cleared by --overwrite)
RUN_FOLDER_MARKS = ("scenario.yaml", "bag", "events.json", "logs", "timing", "progress.json", "metrics.json")


def refuse_recorded_run(out: Path, option: str, overwrite: bool = False, overwrite_option: str = "--overwrite") -> None:
    """A run directory is never written into again: an existing ``out`` that is not an empty folder is refused at
    start, naming the path and the choices (another ``option``, ``overwrite_option``, or a new timestamped folder).
    With ``overwrite`` an earlier run folder is cleared first; a folder that holds no run is never cleared.  Every
    problem is one line naming the path and the reason."""
    out = Path(out).resolve()
    if not out.exists():
        return
    if not out.is_dir():
        raise ParameterError(f"out: {out} exists and is not a folder; choose another {option}")
    try:
        entries = list(out.iterdir())
    except OSError as exc:
        raise ParameterError(f"out: cannot read {out}: {exc.strerror or exc}") from None
    if not entries:
        return
    is_run = any((out / m).exists() for m in RUN_FOLDER_MARKS)
    if not overwrite:
        what = ("a recorded run (bag/)" if (out / "bag").exists() else "an earlier run") if is_run else "files"
        choices = f"choose another {option}" + (f", pass {overwrite_option} to replace it" if is_run and
                                                  overwrite_option else "")
        raise ParameterError(f"out: {out} already holds {what}; {choices}, or leave {option} out for a new "
                             "timestamped folder under runs/")
    if not is_run:
        raise ParameterError(f"out: {out} is not empty and holds no run (none of {', '.join(RUN_FOLDER_MARKS)}); "
                             f"{overwrite_option} only replaces an earlier run folder")
    import shutil
    try:
        for e in entries:
            if e.is_dir() and not e.is_symlink():
                shutil.rmtree(e)
            else:
                e.unlink()
    except OSError as exc:
        raise ParameterError(f"out: cannot clear {out} for {overwrite_option}: {exc.strerror or exc} "
                             f"({getattr(exc, 'filename', '')})") from None


def prepare_run_dir(scenario: scn.Scenario, out: Path, refuse_existing_bag: bool = False) -> Path:
    """Create the run directory (and logs/), clear a previous run's progress and events, write the resolved
    scenario the nodes load; returns the scenario file's path.  Path problems are one-line errors."""
    out = Path(out).resolve()
    if refuse_existing_bag:
        refuse_recorded_run(out, "out:=", overwrite_option="")
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "logs").mkdir(exist_ok=True)
        for stale in ("progress.json", "events.json"):
            (out / stale).unlink(missing_ok=True)
        path = out / "scenario.yaml"
        path.write_text(scn.dump(scenario))
    except OSError as exc:
        raise ParameterError(f"out: cannot use {out} as the run directory: {exc.strerror or exc}") from None
    return path


def run_started(out: Path) -> bool:
    """Whether the run writing to ``out`` has started: its supervisor's OUT/progress.json (written every 0.5 s)
    says "running" or "stopping", not "starting" (or is not there yet)."""
    try:
        text = (Path(out) / "progress.json").read_text()
    except OSError:
        return False
    return '"running"' in text or '"stopping"' in text


def start_failure(codes: dict, out: Path) -> str | None:
    """The node whose process failed before the run started (a code other than 0 and 3; 3 = it aborted the
    start on purpose, and its ABORT told the others), or None.  No ABORT tells the others of such a failure (the
    plant's process watch covers the run): ``rths run`` and the launch then give them the orderly stop of a Ctrl-C
    at once instead of letting them wait for a START that never comes."""
    crashed = [n for n, c in codes.items() if c not in (None, 0, 3)]
    return crashed[0] if crashed and not run_started(out) else None


def orderly_stop_s(scenario: scn.Scenario) -> float:
    """How long an orderly stop may take: the ABORT reaching every node (``safety.watchdog_s``), the plant's ramp
    to the safe pose and its hold (:func:`~rths_ros.core.platform.safety.safe_ramp_bound_s`), the bag closed, and
    the teardown (bounded by its watchdog, :data:`rths_ros.runtime.teardown.TEARDOWN_S`).  ``rths run`` waits
    this long after a Ctrl-C or a failed node; a launch waits this long before it escalates SIGINT to SIGTERM."""
    from rths_ros.runtime.teardown import TEARDOWN_S
    return scenario.safety.watchdog_s + TEARDOWN_S + safe_ramp_bound_s(scenario.safety)


@dataclass(frozen=True)
class RunPolicy:
    """The one policy of a run, for `rths run` (rths_ros.runner) and `ros2 launch` (rths_ros.launch_actions):
    ``drain_s`` (the orderly stop, :func:`orderly_stop_s`) after a Ctrl-C or a failed node before what is left is
    stopped; ``stuck_s`` after the supervisor ended the run, beyond which a node still running is stuck (after
    STOP a node flushes each publisher, up to ``safety.watchdog_s`` each, and tears down within its watchdog);
    ``limit_s`` for the whole run from the spawn of its nodes (``loop.timeout_s`` + ``loop.start_timeout_s`` +
    30 s: the warm-up of a loaded machine)."""

    drain_s: float
    stuck_s: float
    limit_s: float

    @classmethod
    def of(cls, scenario: scn.Scenario) -> RunPolicy:
        drain = orderly_stop_s(scenario)
        return cls(drain, drain + 4.0 * scenario.safety.watchdog_s + 10.0,
                   scenario.loop.timeout_s + scenario.loop.start_timeout_s + 30.0)

    @staticmethod
    def first_failure(codes: dict) -> str | None:
        """Which node the run's failure is named after: the first that crashed (a code other than 0 and 3,
        3 = the node aborted the run on purpose, after another cause), else the first that aborted; None when
        none failed."""
        failed = [n for n, c in codes.items() if c not in (None, 0)]
        crashed = [n for n in failed if codes[n] != 3]
        return (crashed or failed or [None])[0]


def node_env_overrides(env: dict | None = None) -> dict[str, str]:
    """Environment every node process gets on top of the caller's: the Fast DDS profile with the lockstep
    flow control (config/fastdds.xml, or config/fastdds-2.xml for Fast DDS 2: :data:`FASTDDS_PROFILES`) unless the
    caller set one, Fast DDS as the middleware unless chosen, unbuffered output.  A profile file the caller named
    by a relative path is named by its absolute path: the node processes run in the run's folder, where the
    relative path would name nothing, and a Fast DDS that finds no file runs on its defaults (a 3-s heartbeat:
    every lockstep acknowledgement wait then takes seconds)."""
    env = os.environ if env is None else env
    extra = {"PYTHONUNBUFFERED": "1"}
    for v, _ in FASTDDS_PROFILES.values():
        given = env.get(v)
        if given and not os.path.isabs(given):
            extra[v] = os.path.abspath(given)
    if "RMW_IMPLEMENTATION" not in env:
        extra["RMW_IMPLEMENTATION"] = "rmw_fastrtps_cpp"
    var, name = FASTDDS_PROFILES[fastdds_generation(env)]
    xml = config_dir() / name
    if xml.exists() and not any(v in env for v, _ in FASTDDS_PROFILES.values()):
        extra[var] = str(xml)
    return extra


def analysis_command(out: Path) -> list[str]:
    """The command that writes metrics.json, report.md and the plots from OUT/bag (recovering a bag its
    writer did not close first)."""
    return [sys.executable, "-m", "rths_ros.cli", "analyze", str(out)]


__all__ = ["NodeSpec", "LAUNCH_ARGUMENTS", "PLANT_SIDE_NODES", "RIG_HOST_NODES", "SIDES", "on_side", "HARDWARE_NODES", "node_specs", "process_specs",
           "process_groups", "load_for_launch", "prepare_run_dir", "default_out", "node_env_overrides",
           "analysis_command", "FASTDDS_PROFILES", "fastdds_generation", "content_filter_available", "parse_bool", "parse_overrides", "refuse_recorded_run", "orderly_stop_s",
           "check_node_set", "BEAT_NODES", "live_note", "check_live_port", "OWN_PROCESS_NODES"]
