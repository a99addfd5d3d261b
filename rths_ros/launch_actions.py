"""The ``launch`` side of the launch files: arguments, node actions and the run's supervision.

Imported only by ``launch/*.launch.py`` (it needs the ``launch`` and ``launch_ros`` packages). What to
start comes from :mod:`rths_ros.launch_support`, the code ``rths run`` uses too. :class:`RunWatch`
gives a launched run the runner's end-of-run rules:

* the end of the run ends the launch: when every node process has exited, the analysis writes
  metrics.json, report.md and the plots from the bag, and the launch exits;
* a node that dies or aborts: the others get the runner's drain time (watchdog, ramp to the safe pose,
  bag flushed), whatever still runs is stopped, the analysis keeps what was recorded, and the launch
  exits 1 with a message naming the node (and the abort reason from events.json);
* a node still running long after the supervisor ended the run, or a run past its time limit, is
  stopped and named the same way.

Several rigs in one launch (a user's launch file that includes rths.launch.py under PushRosNamespace('rig_a')
and PushRosNamespace('rig_b'), each with its own ``out:=``): every node uses the run's names relative to its
namespace (rths_ros.runtime.node), and each included run has its own RunWatch, which follows only its own
processes (those started with its run directory) and prints its own lines, tagged with the namespace.  A rig
that fails prints its failure as its last line and does not stop the others; the launch exits 1 once every rig
has ended (the runs of a launch are listed in its context, :func:`runs_of`).
"""
from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    IncludeLaunchDescription,
    LogInfo,
    OpaqueFunction,
    RegisterEventHandler,
    TimerAction,
)
from launch.event_handlers import OnProcessExit, OnProcessStart
from launch.events import matches_action
from launch.events.process import SignalProcess
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import read_events, record_run_end
from rths_ros.launch_support import (
    LAUNCH_ARGUMENTS,
    PLANT_SIDE_NODES,
    SIDES,
    NodeSpec,
    RunPolicy,
    analysis_command,
    check_live_port,
    default_out,
    live_note,
    load_for_launch,
    node_env_overrides,
    node_specs,
    on_side,
    orderly_stop_s,
    parse_bool,
    parse_overrides,
    prepare_run_dir,
    process_specs,
    start_failure,
)
from rths_ros.params import ParameterError

#: the process that runs the analysis after the nodes (named in the launch's output)
ANALYSIS_PROCESS = "rths_analysis"
PROGRESS_PERIOD_S = 5.0


class RunFailed(RuntimeError):
    """Raised at the end of a failed run: launch logs the message and exits with code 1."""


def runs_of(context) -> list:
    """The runs of this launch (one RunWatch per included rths.launch.py), kept in the launch context: a failed
    run raises RunFailed only once every run has ended, so one rig's failure never stops another's run or its
    analysis."""
    runs = context.get_locals_as_dict().get("rths_runs")
    if runs is None:
        runs = []
        context.extend_globals({"rths_runs": runs})
    return runs


def declare_arguments(names: tuple[str, ...] | None = None) -> list[DeclareLaunchArgument]:
    return [DeclareLaunchArgument(k, default_value=d, description=desc)
            for k, (d, desc) in LAUNCH_ARGUMENTS.items() if names is None or k in names]


def _get(context, key: str) -> str:
    return LaunchConfiguration(key).perform(context)


def node_action(spec: NodeSpec, env: dict[str, str], scenario: scn.Scenario) -> Node:
    """A launch_ros Node for one process.  A single node is started under its own name; a composed process
    holds several nodes, so it gets no name remapping (that would rename all of them).

    Shutdown of the launch (Ctrl-C) sends each node SIGINT: the run aborts as "interrupted", the plant ramps to
    its safe pose and every node ends by itself.  The launch escalates to SIGTERM only after the time that
    takes (:func:`~rths_ros.launch_support.orderly_stop_s`), not launch's default 5 s."""
    kw = {"name": spec.name} if len(spec.nodes) == 1 else {}
    return Node(package="rths_ros", executable=spec.executable, arguments=list(spec.arguments),
                output="screen", additional_env=env, sigterm_timeout=f"{orderly_stop_s(scenario):.1f}", **kw)


# ---------------------------------------------------------------------------------------------
# rths.launch.py
# ---------------------------------------------------------------------------------------------
def run_actions(context, plant_launch_file: str) -> list:
    """Validate the arguments, create the run directory, and start the nodes: the rig-side nodes through
    ``plant_launch_file`` (one process per node), everything in one process when composed."""
    overrides = parse_overrides(_get(context, "overrides"))
    record = parse_bool("record", _get(context, "record"))
    live = parse_bool("live", _get(context, "live"))
    composed = parse_bool("composed", _get(context, "composed"))
    side = _get(context, "side").strip() or "all"
    if side not in SIDES:
        raise ParameterError(f"side: {side!r} is not one of {', '.join(SIDES)}")
    if side != "all" and composed:
        raise ParameterError("side: a run split over two computers runs its nodes as processes; composed:=true "
                             "is for side:=all only")
    s = load_for_launch(_get(context, "scenario"), _get(context, "plant"), _get(context, "mode"), overrides, record,
                        live)
    check_live_port(s)
    out = Path(_get(context, "out") or default_out(s.name)).resolve()
    scenario_path = prepare_run_dir(s, out, refuse_existing_bag=True)
    nodes = [n for n in s.run_nodes if on_side(n, side)]
    env = node_env_overrides()
    here = "" if side == "all" else f" on the {side} host ({len(s.run_nodes) - len(nodes)} on the other)"
    actions: list = [LogInfo(msg=f"rths: {s.name}: {len(nodes)} nodes{here} "
                                 f"{'in one process' if composed else 'as processes'}"
                                 f", {s.loop.mode}, plant {s.plant}, {s.steps} steps x {s.loop.trials} trial(s) "
                                 f"-> {out}")]
    note = live_note(s, out)
    if note:
        actions.append(LogInfo(msg=f"rths: {note}"))
    if composed:
        specs = process_specs(scenario_path, nodes, out, composed=True,
                              recorder_in_process=s.recording.composed_in_process(s.loop.mode))
        actions += [node_action(sp, env, s) for sp in specs]
    else:
        specs = process_specs(scenario_path, nodes, out)
        actions += [node_action(sp, env, s) for sp in specs if sp.name not in PLANT_SIDE_NODES]
        if any(sp.name in PLANT_SIDE_NODES for sp in specs):
            actions.append(IncludeLaunchDescription(
                PythonLaunchDescriptionSource(plant_launch_file),
                launch_arguments={"scenario": str(scenario_path), "plant": s.plant, "mode": s.loop.mode,
                                  "out": str(out), "overrides": ""}.items()))
    ns = context.launch_configurations.get("ros_namespace", "") or ""
    watch = RunWatch(s, out, [sp.name for sp in specs], record and "recorder" in nodes, ns, runs_of(context))
    return actions + watch.actions()


# ---------------------------------------------------------------------------------------------
# plant.launch.py
# ---------------------------------------------------------------------------------------------
def plant_actions(context) -> list:
    """The rig side of a scenario: the plant (sim_plant, or hardware_plant with plant:=hardware) and the
    force/torque sensor driver, each in its own process."""
    overrides = parse_overrides(_get(context, "overrides"))
    s, specs = node_specs(_get(context, "scenario"), _get(context, "plant"), _get(context, "mode"),
                          _get(context, "out"), tuple(overrides))
    env = node_env_overrides()
    chosen = [sp for sp in specs if sp.name in PLANT_SIDE_NODES]
    return [LogInfo(msg=f"rths: plant side ({s.plant}): {', '.join(sp.name for sp in chosen)}")] + \
        [node_action(sp, env, s) for sp in chosen]


# ---------------------------------------------------------------------------------------------
class RunWatch:
    """End-of-run rules of a launched run (see the module docstring)."""

    def __init__(self, scenario: scn.Scenario, out: Path, processes: list[str], record: bool, namespace: str = "",
                 runs: list | None = None):
        self.s, self.out, self.record = scenario, out, record
        #: the prefix of this run's lines ("rths", or "rths /rig_a" for a run under a namespace)
        self.tag = f"rths {namespace}" if namespace.strip("/") else "rths"
        self.error: str | None = None
        self.runs = [] if runs is None else runs      # every run of the launch, this one included
        self.runs.append(self)
        self.expected = list(processes)
        self.actions_of: dict[str, object] = {}
        self.exit_codes: dict[str, int] = {}
        self.failure: str | None = None        # a failure found by the watch itself (stuck node, time limit)
        self.timers: list[TimerAction] = []
        self.t0 = time.monotonic()
        self.sup = "supervisor" if "supervisor" in processes else ("composed" if "composed" in processes else None)
        policy = RunPolicy.of(scenario)
        self.drain_s, self.stuck_s, self.limit_s = policy.drain_s, policy.stuck_s, policy.limit_s
        self.draining = False
        self.concluded = False
        self.failed_order: list[str] = []     # the nodes that failed, in the order their exits came in
        self.stopped_here: set[str] = set()   # the nodes this watch stopped itself: never the run's failure

    # -- helpers ----------------------------------------------------------------------------
    def _timer(self, period: float, fn) -> TimerAction:
        t = TimerAction(period=float(period), actions=[OpaqueFunction(function=fn)])
        self.timers.append(t)
        return t

    @staticmethod
    def _name(event) -> str:
        return Path(event.cmd[0]).name if event.cmd else event.action.name

    def _mine(self, event) -> bool:
        """A process of this run: started with this run's directory (``--out OUT``; every node process is)."""
        cmd = [str(c) for c in (event.cmd or [])]
        return any(a == "--out" and b == str(self.out) for a, b in zip(cmd, cmd[1:]))

    def _running(self) -> list[str]:
        return [n for n in self.expected if n in self.actions_of and n not in self.exit_codes]

    def _signal_running(self, sig) -> list:
        return [EmitEvent(event=SignalProcess(signal_number=sig, process_matcher=matches_action(self.actions_of[n])))
                for n in self._running()]

    def actions(self) -> list:
        return [RegisterEventHandler(OnProcessStart(on_start=self._on_start)),
                RegisterEventHandler(OnProcessExit(on_exit=self._on_exit)),
                self._timer(self.limit_s, self._time_limit),
                self._timer(PROGRESS_PERIOD_S, self._progress)]

    # -- events -----------------------------------------------------------------------------
    def _on_start(self, event, context):
        name = self._name(event)
        if name in self.expected and self._mine(event):
            self.actions_of[name] = event.action

    def _on_exit(self, event, context):
        name = self._name(event)
        if name not in self.expected or name in self.exit_codes or not self._mine(event):
            return None
        self.exit_codes[name] = event.returncode
        if event.returncode != 0:
            self.failed_order.append(name)
        if len(self.exit_codes) == len(self.expected):
            return self._finish(context)
        out: list = []
        if event.returncode != 0 and not self.draining:
            # a node aborted (exit 3) or died: give the others time to see it, ramp the platform to its safe
            # pose and close the bag by themselves; then stop whatever is left
            self.draining = True
            out.append(LogInfo(msg=f"{self.tag}: {name} exited with code {event.returncode}; waiting up to "
                                   f"{self.drain_s:.0f} s for the other nodes to end"))
            if start_failure({name: event.returncode}, self.out) is not None:
                # (before START no ABORT tells the others: the orderly stop of a Ctrl-C, now)
                self.stopped_here = set(self._running())
                out.append(LogInfo(msg=f"{self.tag}: {name} failed before the run started; stopping "
                                       f"{', '.join(sorted(self.stopped_here))}"))
                out.extend(self._signal_running(signal.SIGINT))
            out.append(self._timer(self.drain_s, self._drain_over))
        elif name == self.sup and event.returncode == 0 and not self.draining:
            out.append(self._timer(self.stuck_s, self._stuck))
        return out

    def _drain_over(self, context):
        running = self._running()
        if not running:
            return None
        self.stopped_here |= set(running)      # (a node that never heard the abort: a consequence, not the fault)
        return [LogInfo(msg=f"{self.tag}: stopping {', '.join(running)} (still running after the drain time)"),
                *self._signal_running(signal.SIGTERM), self._timer(5.0, self._kill)]

    def _kill(self, context):
        return self._signal_running("SIGKILL")

    def _stuck(self, context):
        running = self._running()
        if not running or self.failure:
            return None
        self.failure = (f"node {running[0]} did not end within {self.stuck_s:g} s after the supervisor ended the "
                        "run; stopped it")
        return [*self._signal_running(signal.SIGTERM), self._timer(5.0, self._kill)]

    def _time_limit(self, context):
        running = self._running()
        if not running or self.failure:
            return None
        self.failure = f"run did not end within {self.limit_s:g} s; still running: {', '.join(running)}"
        return [*self._signal_running(signal.SIGTERM), self._timer(5.0, self._kill)]

    def _progress(self, context):
        if self.concluded:
            return None
        try:
            data = json.loads((self.out / "progress.json").read_text())
        except (OSError, ValueError):
            data = None
        total = self.s.steps * self.s.loop.trials
        line = None
        if data and data.get("state") == "starting":
            line = f"{self.tag}: waiting for nodes: {len(data['ready'])}/{len(data['expected'])} ready"
        elif data:
            steps = min(max(data.get("nodes", {}).values(), default=0), total)
            line = (f"{self.tag}: step {steps}/{total} ({100.0 * steps / max(total, 1):5.1f} %), "
                    f"{time.monotonic() - self.t0:.0f} s")
        nxt = self._timer(PROGRESS_PERIOD_S, self._progress)
        return ([LogInfo(msg=line)] if line else []) + [nxt]

    # -- end of the run ---------------------------------------------------------------------
    def _finish(self, context):
        for t in self.timers:
            t.cancel()
        # the status and the first fault into events.json (as rths run does), before the analysis reads them
        failed = any(c != 0 for c in self.exit_codes.values())
        record_run_end(self.out, self.exit_codes, self.s.loop.trials, "SIGINT" if context.is_shutdown else None,
                       self.failure or ("a node failed" if failed else None), stopped=self.stopped_here)
        # a run that ended before START recorded no loop data: nothing to analyse (its cause is the last line)
        started = any(e.get("type") == "START" for e in read_events(self.out)["events"])
        if self.record and started and (self.out / "bag").exists() and not context.is_shutdown:
            proc = ExecuteProcess(cmd=analysis_command(self.out), name=ANALYSIS_PROCESS, output="screen",
                                  additional_env=node_env_overrides())
            return [proc, RegisterEventHandler(OnProcessExit(target_action=proc, on_exit=self._analysis_done))]
        self._conclude(context, None)
        return None

    def _analysis_done(self, event, context):
        self._conclude(context, event.returncode)

    def _failure_message(self, context) -> str | None:
        codes = self.exit_codes
        failed = [n for n in self.expected if codes.get(n, 0) != 0]
        if self.failure:
            msg = self.failure
        elif context.is_shutdown:
            # Ctrl-C or another shutdown of the launch: each node got SIGINT, the run aborted as "interrupted" and
            # the plant ramped to its safe pose before the nodes ended (OrderlyStop in rths_ros.runtime.node)
            safe = [e for e in read_events(self.out)["events"] if e.get("type") == "SAFE"]
            where = (f"the platform was ramped to its safe pose (SAFE from {safe[0]['source']} at step "
                     f"{safe[0]['step']})" if safe else "no SAFE event (the run had not started)")
            return (f"the launch was shut down before the run ended (interrupted); {where}; every node stopped; "
                    f"the recorded steps: rths analyze {self.out} --partial")
        elif failed:
            name = RunPolicy.first_failure({n: codes[n] for n in self.failed_order if n not in self.stopped_here}
                                           or {n: codes[n] for n in failed})
            how = (f"killed by {signal.Signals(-codes[name]).name}" if codes[name] < 0
                   else f"exited with code {codes[name]}")
            msg = f"node {name} {how}"
        else:
            return None
        fault = read_events(self.out)["first_fault"]
        if fault:
            msg = f"run aborted: {fault['node']}: {fault['reason']}; {msg}"
        return msg

    def _conclude(self, context, analysis_code: int | None):
        self.concluded = True
        self.error = self._outcome(context, analysis_code)
        pending = [w for w in self.runs if not w.concluded]
        if pending:             # other rigs of this launch still run: this one's last line now, the exit code later
            if self.error:
                print(f"[ERROR] [{self.tag}]: {self.error}", flush=True)
            return
        errors = [w.error for w in self.runs if w.error]
        if errors:
            raise RunFailed("; ".join(errors))

    def _outcome(self, context, analysis_code: int | None) -> str | None:
        """This run's failure message (None: it ended well, and its last line is printed here)."""
        msg = self._failure_message(context)
        if msg:
            return f"{self.tag}: FAILED: {msg} (run directory {self.out})"
        if analysis_code == 3:
            return (f"{self.tag}: the run ended but its record is incomplete (see {self.out / 'report.md'}); "
                    f"run directory {self.out}")
        if analysis_code not in (None, 0):
            return f"{self.tag}: the run ended but its analysis failed (exit {analysis_code}); run directory {self.out}"
        wall = time.monotonic() - self.t0
        what = "metrics.json, report.md and plots written" if analysis_code == 0 else "nothing recorded"
        print(f"[INFO] [{self.tag}]: run finished in {wall:.1f} s; {what} in {self.out}", flush=True)
        return None


__all__ = ["declare_arguments", "run_actions", "plant_actions", "RunWatch", "RunFailed", "node_action"]
