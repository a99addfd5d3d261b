"""``rths run``: start a scenario's nodes, show progress, wait for the end, tear everything down.

* Each node is its own process (or all of them in one process with ``composed=True``), with its
  output in OUT/logs/<node>.log.
* Every run gets its own ROS domain id (held by a lock file for the run's lifetime) and
  localhost-only discovery, so parallel runs and parallel tests never hear each other.
* If a node aborts or dies, the others get time to react (the watchdogs fire, the plant ramps to its
  safe pose, the recorder closes the bag; ``safety.watchdog_s`` + the ramp + 5 s), then whatever is
  left is stopped and the run fails naming the node; on Ctrl-C or SIGTERM every node is stopped.  Node processes also die with the runner (PR_SET_PDEATHSIG), so no orphan
  is left even if the runner is killed.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import first_fault_of, record_run_end
from rths_ros.app.scenario import PLANT_NODE_OF
from rths_ros.launch_support import (
    COMPOSED_EXECUTABLE,
    RIG_HOST_NODES,
    NodeSpec,
    RunPolicy,
    node_env_overrides,
    prepare_run_dir,
    process_specs,
    start_failure,
)
from rths_ros.nodes.registry import module_name
from rths_ros.params import ParameterError
from rths_ros.runtime import fork_server, forked, startup
from rths_ros.runtime.domain import DOMAIN_RANGE  # noqa: F401  (re-exported)
from rths_ros.runtime.domain import DomainLease as _DomainLease
from rths_ros.runtime.processes import node_pids
from rths_ros.runtime.teardown import NATIVE_STACKS_AFTER_S
from rths_ros.runtime.two_hosts import Link, TwoHosts, crossing_note

PR_SET_PDEATHSIG = 1
#: how node processes start: forked from the warm runner (or its fork server), or each as ``python -m``
#: (run_scenario)
NODE_STARTS = ("fork", "server", "exec")


class RunError(RuntimeError):
    pass


@dataclass
class RunResult:
    code: int
    out_dir: Path
    message: str = ""
    failed_node: str | None = None
    wall_s: float = 0.0
    domain_id: int = -1
    exit_codes: dict = field(default_factory=dict)
    #: what went wrong without costing data (e.g. a teardown hang after a node's files were written)
    warnings: list = field(default_factory=list)


class DomainLease(_DomainLease):
    """Exclusive ROS domain id for one run (:class:`rths_ros.runtime.domain.DomainLease`)."""

    error = RunError


def run_env(domain_id: int) -> dict:
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = env.get("RTHS_DISCOVERY_RANGE", "LOCALHOST")
    env.pop("ROS_LOCALHOST_ONLY", None)
    env.update(node_env_overrides(env))
    return env


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def node_command(spec: NodeSpec) -> list[str]:
    """The process as ``python -m`` of its module (the venv route needs no installed executables)."""
    module = "rths_ros.nodes.composed" if spec.executable == COMPOSED_EXECUTABLE else module_name(spec.name)
    return [sys.executable, "-m", module, *spec.arguments]


def _progress_line(out: Path, total: int, t0: float) -> str | None:
    try:
        data = json.loads((out / "progress.json").read_text())
    except (OSError, ValueError):
        return None
    steps = min(max(data.get("nodes", {}).values(), default=0), total)
    if data.get("state") == "starting":
        return f"  waiting for nodes: {len(data['ready'])}/{len(data['expected'])} ready"
    frac = min(1.0, steps / total) if total else 0.0
    bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
    return f"  [{bar}] step {steps}/{total} ({100 * frac:5.1f} %)  {time.monotonic() - t0:6.1f} s"


def _stop_all(procs: dict[str, subprocess.Popen], grace_s: float = 3.0) -> None:
    for p in procs.values():
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    t_end = time.monotonic() + grace_s
    for p in procs.values():
        try:
            p.wait(timeout=max(0.0, t_end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _tail(path: Path, n: int = 8) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in lines[-n:])


def run_scenario(scenario: scn.Scenario, out: Path, composed: bool = False, progress: bool = True,
                 log=print, domain_id: int | None = None, lease: DomainLease | None = None,
                 node_start: str | None = None, after_spawn=None, link: Link | None = None) -> RunResult:
    """Run an already validated scenario.  Never leaves a node process behind.

    ``domain_id`` asks for a particular ROS domain; ``lease`` hands over one already held (the run
    closes it at the end), so a caller can reserve the domain it will join before the run starts.
    ``node_start``: ``fork`` (the default: node processes forked from this warm process where that is safe, see
    :mod:`rths_ros.runtime.forked`, else from this process's fork server, :mod:`rths_ros.runtime.fork_server`),
    ``server`` (always from the fork server) or ``exec`` (each node process started as ``python -m``);
    the environment variable RTHS_NODE_START sets the default.  ``after_spawn()`` is called once every node
    process is started (e.g. to prepare the analysis while the run goes on).  ``link``: split the run over two
    hosts on this machine, the rig side and the numerical side, joined by this emulated link
    (:mod:`rths_ros.runtime.two_hosts`; the relay's statistics go to OUT/link.json)."""
    node_start = node_start or os.environ.get("RTHS_NODE_START", "fork")
    if node_start not in NODE_STARTS:
        raise RunError(f"node start {node_start!r} (RTHS_NODE_START) is not one of {', '.join(NODE_STARTS)}")
    out = Path(out).resolve()
    if (out / "bag").exists():      # (the recorder would fail on it, after every other node had started)
        raise RunError(f"out: {out} already holds a recorded run (bag/); a run never writes into an earlier one: "
                       "choose another folder or remove that one")
    scenario_path = prepare_run_dir(scenario, out)
    nodes = list(scenario.run_nodes)
    specs = process_specs(scenario_path, nodes, out, composed,
                          composed and scenario.recording.composed_in_process(scenario.loop.mode))
    hosts = None
    if link is not None:
        if composed:
            raise RunError("a run over two hosts needs one process per node (not composed)")
        hosts = TwoHosts(link, tuple(n for n in RIG_HOST_NODES if n in nodes), out / "link.json")
        for spec in specs:
            hosts.side_of_process(spec.nodes or (spec.name,))
    lease = lease if lease is not None else DomainLease(domain_id)
    base_env = run_env(lease.domain_id)
    procs: dict[str, subprocess.Popen] = {}
    own_segments: set[str] = set()     # the DDS shared-memory segments of the run's own processes
    stopped_here: set[str] = set()     # the nodes the runner stopped after a start failure: never the run's fault
    logs = {}
    t0 = time.monotonic()
    result = RunResult(0, out, domain_id=lease.domain_id)
    interrupted = {"sig": None, "count": 0}

    def _on_signal(signum, _frame):
        interrupted["sig"] = signum
        interrupted["count"] += 1

    import threading
    old = {}
    if threading.current_thread() is threading.main_thread():
        old = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    policy = RunPolicy.of(scenario)
    drain_s = policy.drain_s
    fork = node_start == "fork" and forked.can_fork()
    server = None
    spawned = None
    try:
        if hosts is not None:
            try:
                hosts.start()
            except RuntimeError as exc:
                raise RunError(str(exc)) from None
            log(f"rths run: {hosts.describe()}")
        if fork:    # import and warm once here; every node process starts from this state (runtime.forked)
            forked.warm(scenario, [node_command(spec)[2] for spec in specs])
        elif node_start in ("fork", "server"):      # threads here: the same from this process's fork server
            server = fork_server.server()
            server.warm(scenario_path)
        spawned = time.time()
        for spec in specs:
            name, cmd = spec.name, node_command(spec)
            env = base_env if hosts is None else {
                **base_env, **hosts.env(hosts.side_of_process(spec.nodes or (spec.name,))),
                **(hosts.cut_env() if set(spec.nodes or (spec.name,)) & set(PLANT_NODE_OF.values()) else {})}
            logs[name] = out / "logs" / f"{name}.log"
            # each node in its own process group: a Ctrl-C in the terminal reaches the runner only, which
            # hands exactly one SIGINT to every node (the orderly stop: ramp to the safe pose, then end)
            if fork:
                procs[name] = forked.fork_node(cmd[2], cmd[3:], logs[name], env, str(out), _die_with_parent)
                continue
            if server is not None:
                procs[name] = server.spawn(cmd[2], cmd[3:], logs[name], env, str(out))
                continue
            fh = open(logs[name], "wb")
            procs[name] = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=env, preexec_fn=_die_with_parent, cwd=str(out), process_group=0)
            fh.close()
        if fork:
            forked.thaw()
        if after_spawn is not None:
            after_spawn()
        last_print = 0.0
        drain_until = None
        # the run's time limit counts from the spawn (the warm-up before it can take long on a loaded machine)
        t_spawned = time.monotonic()
        limit = policy.limit_s
        interactive = sys.stdout.isatty()
        sup = next((spec.name for spec in specs if "supervisor" in spec.nodes), None)
        sup_ended = None
        dumped: set = set()
        forwarded = 0
        stuck_s = policy.stuck_s
        from rths_ros.runtime.shm import segments_held_by
        last_scan = 0.0
        failed_order: list[str] = []     # the nodes that failed, in the order the runner saw them end
        while True:
            codes = {n: p.poll() for n, p in procs.items()}
            if time.monotonic() - last_scan > 0.5:       # the DDS segments of the run's own processes
                last_scan = time.monotonic()
                own_segments |= segments_held_by(p.pid for n, p in procs.items() if codes[n] is None)
            if interrupted["count"] > forwarded:
                forwarded = interrupted["count"]
                signame = signal.Signals(interrupted["sig"]).name
                if forwarded == 1:
                    log(f"\nrths run: {signame}: stopping the run; the platform ramps to its safe pose "
                        f"(at most {drain_s:.0f} s; press Ctrl-C again to stop at once)")
                    _signal_all(procs, signal.SIGINT)
                    drain_until = time.monotonic() + drain_s
                else:
                    log(f"rths run: {signame} again: stopping every node now")
                    break
            if interrupted["sig"] is not None:
                if all(c is not None for c in codes.values()) or time.monotonic() > drain_until:
                    break
                time.sleep(0.05)
                continue
            failed = [n for n, c in codes.items() if c not in (None, 0)]
            failed_order += [n for n in failed if n not in failed_order]
            if failed and drain_until is None:
                # a node aborted (exit 3) or died: give the others time to see the abort, ramp the platform
                # to its safe pose, flush the bag and exit by themselves; then stop what is left
                drain_until = time.monotonic() + drain_s
                early = start_failure(codes, out)
                if early is not None:
                    # the others get the orderly stop of a Ctrl-C now (a plant on its way to the start pose ramps
                    # to its safe pose first)
                    stopped_here = {n for n, c in codes.items() if c is None}
                    log(f"rths run: node {early} ended with code {codes[early]} before the run started; "
                        "stopping the others")
                    _signal_all(procs, signal.SIGINT)
            if drain_until is not None and (all(c is not None for c in codes.values())
                                            or time.monotonic() > drain_until):
                # what still runs after the drain is stopped here (SIGTERM, then SIGKILL): a consequence of the
                # failure (a node that never heard the abort), never the run's first fault
                late = sorted(n for n, c in codes.items() if c is None)
                stopped_here |= set(late)
                if late:
                    log(f"rths run: stopping {', '.join(late)} (still running {drain_s:.0f} s after the first "
                        "failure)")
                name = RunPolicy.first_failure({n: codes[n] for n in failed_order if n not in stopped_here}
                                               or {n: codes[n] for n in failed_order})
                result.code = 1
                result.failed_node = name
                result.message = (f"node {name} exited with code {codes[name]} "
                                  f"(log: {logs[name]})\n{_tail(logs[name])}")
                for n in late:      # where a node that never heard the abort was (e.g. never joined the graph)
                    result.message += f"\nnode {n} still ran after the drain (log: {logs[n]})\n{_tail(logs[n], 4)}"
                break
            if all(c == 0 for c in codes.values()):
                break
            now = time.monotonic()
            if sup is not None and codes.get(sup) == 0 and drain_until is None:
                # the supervisor ended the run (STOP sent, every node had time to see it): a node still
                # running after the drain time missed the end or hangs in its teardown
                sup_ended = sup_ended or now
                if now - sup_ended > NATIVE_STACKS_AFTER_S:
                    _native_stacks_of_hung(procs, codes, logs, dumped)
                if now - sup_ended > stuck_s:
                    stuck = [n for n, c in codes.items() if c is None]
                    result.code = 1
                    result.failed_node = stuck[0]
                    result.message = (f"node {stuck[0]} did not end within {stuck_s:g} s after the supervisor "
                                      f"ended the run; stopped it (log: {logs[stuck[0]]})\n{_tail(logs[stuck[0]])}")
                    break
            if now - t_spawned > limit:
                result.code = 1
                running = [n for n, c in codes.items() if c is None]
                result.message = f"run did not end within {limit:g} s; still running: {', '.join(running)}"
                break
            if progress and now - last_print > (0.5 if interactive else 5.0):
                line = _progress_line(out, scenario.steps * scenario.loop.trials, t0)
                if line:
                    if interactive:
                        sys.stdout.write("\r" + line)
                        sys.stdout.flush()
                    else:
                        log(line)
                last_print = now
            time.sleep(0.05)
        if progress and sys.stdout.isatty():
            sys.stdout.write("\n")
    finally:
        if fork:
            forked.thaw()       # (also where the spawn failed half-way)
        _stop_all(procs)
        link_stats = hosts.close() if hosts is not None else None
        for s, h in old.items():
            signal.signal(s, h)
        lease.close()
    result.exit_codes = {n: p.returncode for n, p in procs.items()}
    startup.update_run_timing(out, cli_start=startup.process_start_epoch(), spawn=spawned, nodes_ended=time.time())
    from rths_ros.bag import needs_recovery, recover
    notes = []
    if needs_recovery(out / "bag"):     # the recorder did not close its bag (killed): keep what was flushed
        try:
            info = recover(out / "bag", scn.dump(scenario))
            notes.append(f"bag recovered: {info['messages']} messages from {info['chunks']} complete chunks "
                         f"({info['damage']})")
        except Exception as exc:
            notes.append(f"bag could not be recovered: {exc}")
    conclude_run(result, out, interrupted["sig"], logs, scenario.loop.trials, stopped_here)
    from rths_ros.runtime.shm import remove_dead_segments
    # a node ended without deleting its DDS participant (a hung teardown, a kill): only the run's own segments
    dead = remove_dead_segments(only=own_segments)
    if dead:
        notes.append(f"removed {len(dead)} shared-memory segment(s) of DDS participants that had ended without "
                     f"deleting them: {', '.join(sorted(dead))}")
    if hosts is not None:
        notes.append(_link_note(hosts, link_stats, out, scenario))
    result.message = "\n".join(m for m in [result.message, *notes] if m).strip()
    result.wall_s = time.monotonic() - t0
    return result


def _native_stacks_of_hung(procs: dict, codes: dict, logs: dict, dumped: set) -> None:
    """A node that wrote its files but still runs long after the run ended hangs in its DDS teardown: keep the
    native stacks of its threads in OUT/logs/<node>.native-stacks.txt, once, before its watchdog ends it."""
    from rths_ros.runtime.teardown import FILES_WRITTEN_MARK, native_stacks
    for name, code in codes.items():
        if code is not None or name in dumped:
            continue
        try:
            written = FILES_WRITTEN_MARK in Path(logs[name]).read_text(errors="replace")
        except OSError:
            continue
        if written:
            dumped.add(name)
            native_stacks(procs[name].pid, Path(logs[name]).with_suffix(".native-stacks.txt"))


def _link_note(hosts: TwoHosts, stats: dict | None, out: Path, scenario: scn.Scenario) -> str:
    """What the link did (from the relay's statistics, OUT/link.json) and, when the run's first fault names a
    topic that came over the link, that it did."""
    from rths_ros.app.run_status import read_events
    from rths_ros.runtime.topics import BY_NAME
    lines = [f"link: {hosts.describe()}"]
    if stats is None:
        return lines[0] + "; the relay left no statistics"
    for name, d in zip(("rig -> numerical", "numerical -> rig"), stats["directions"]):
        hold = d.get("hold_ms")
        held = f", held {hold['p50']:.3f} ms median, {hold['p99']:.3f} ms p99" if hold else ""
        lines.append(f"  {name}: {d['packets']} packets, {d['forwarded']} forwarded{held}, {d['lost']} lost, "
                     f"{d['cut']} dropped by the cut")
    cuts = [c for c in stats.get("cuts", []) if c.get("cut")]
    if hosts.link.cut_at_step >= 0:
        lines.append(f"  the link was cut by the plant right before it sent step {hosts.link.cut_at_step}"
                     if cuts else f"  the link was not cut: the run never reached step {hosts.link.cut_at_step}")
    for node in hosts.rig_nodes:       # what the rig host did by itself (its events may not have crossed the link)
        try:
            timing = json.loads((out / "timing" / f"{node}.json").read_text())
        except (OSError, ValueError):
            continue
        safe = timing.get("safe_pose")
        if timing.get("abort_reason") or safe:
            what = (f"safe pose reached {safe['ramp_steps']} steps after its abort at its step {safe['abort_step']}"
                    if safe else "")
            lines.append(f"  rig host: {node}: {'; '.join(x for x in (timing.get('abort_reason'), what) if x)}")
    try:
        fault = read_events(out).get("first_fault")
    except (OSError, ValueError):
        fault = None
    if fault:
        note = crossing_note(fault.get("reason", ""), fault.get("node", ""),
                             lambda t: [p for p in (BY_NAME[t].producers if t in BY_NAME else ())
                                        if p in scenario.run_nodes], hosts.side_of)
        if note:
            lines.append(f"  the first fault is about the link: {note}")
    return "\n".join(lines)


def wait_until_running(out: Path, timeout_s: float = 120.0, poll_s: float = 0.05) -> bool:
    """Wait until the run writing to ``out`` has started (its supervisor sent START and reports "running" in
    OUT/progress.json); False if it has not within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    prog = Path(out) / "progress.json"
    while time.monotonic() < deadline:
        try:
            if '"running"' in prog.read_text():
                return True
        except OSError:
            pass
        time.sleep(poll_s)
    return False


def _signal_all(procs: dict[str, subprocess.Popen], sig: int) -> None:
    for p in procs.values():
        if p.poll() is None:
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                pass


def _exit_notes(codes: dict, logs: dict) -> tuple[dict, dict]:
    """Node processes whose teardown watchdog fired (the log has the armed line, then faulthandler's "Timeout ("
    and the stacks): {node: note} for those that exited 1 before their files were written (a fault), and
    {node: warning} for those that had written them and exited with their own result code (their data are
    whole; the run's result stands)."""
    from rths_ros.runtime.teardown import TEARDOWN_S, hang_in_log
    notes, warnings = {}, {}
    for name, code in codes.items():
        if code is None or name not in logs:
            continue
        try:
            hang = hang_in_log(Path(logs[name]).read_text(errors="replace"))
        except OSError:
            continue
        if hang is None:
            continue
        if not hang[0] and code == 1:
            notes[name] = (f"teardown did not finish within {TEARDOWN_S:g} s, before its files were written; its "
                           f"watchdog ended the process (every thread's stack in {logs[name]})")
        elif hang[0]:
            warnings[name] = (f"{name}: teardown (DDS shutdown) did not finish within {TEARDOWN_S:g} s after its "
                              f"files were written; its watchdog ended the process with its result code {code} "
                              f"(every thread's stack in {logs[name]})")
    return notes, warnings


def conclude_run(result: RunResult, out: Path, signum: int | None, logs: dict, trials: int = 1,
                 stopped: frozenset | set = frozenset()) -> None:
    """The run's status and first fault (:func:`rths_ros.app.run_status.record_run_end`, into events.json) and the
    result: code, message and failed node.  An interrupted run says whether the platform reached its safe pose."""
    signame = signal.Signals(signum).name if signum is not None else None
    failure = (result.message.splitlines()[0] if result.message else f"exit {result.code}") if result.code else None
    notes, warnings = _exit_notes(result.exit_codes, logs)
    result.warnings.extend(warnings.values())
    status, fault, events = record_run_end(out, result.exit_codes, trials, signame, failure, result.failed_node,
                                           {n: str(p) for n, p in logs.items()}, notes, warnings, stopped)
    if signum is not None:
        result.code = 130 if signum == signal.SIGINT else 143
        safe = [e for e in events if e.get("type") == "SAFE"]
        where = (f"the platform was ramped to its safe pose (SAFE from {safe[0]['source']} at step {safe[0]['step']})"
                 if safe else "no SAFE event: the plant had not started or did not finish its ramp")
        result.message = f"interrupted by {signame}; {where}; every node stopped"
    elif fault is not None and result.code != 0:
        result.failed_node = fault["node"] if fault["node"] in result.exit_codes else result.failed_node
        where = f" (first fault, step {fault['step']})" if fault["step"] >= 0 else " (first fault)"
        first_abort = first_fault_of(events)
        then = (f"; then {first_abort['node']}: {first_abort['reason']}"
                if first_abort is not None and first_abort != fault else "")
        result.message = f"run {status}: {fault['node']}: {fault['reason']}{where}{then}\n" + result.message


__all__ = ["run_scenario", "RunResult", "RunError", "DomainLease", "ParameterError", "wait_until_running",
           "node_pids"]
