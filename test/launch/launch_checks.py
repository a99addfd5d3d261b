"""Shared pieces of the launch_testing tests: the launch description of one scenario run through the
installed ``rths.launch.py``, and the checks every scenario family must pass.

These tests need ``launch``, ``launch_ros`` and ``launch_testing`` (a ROS 2 distribution, or the wheels
scripts/setup_env.sh installs from ../shared/ros2-tooling).  Without them every module here is
reported as skipped with :data:`SKIP_REASON`.
"""
from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rths_ros.app.run_status import read_events

_MISSING = [m for m in ("launch", "launch_ros", "launch_testing", "ros2launch") if importlib.util.find_spec(m) is None]
SKIP_REASON = (f"ROS 2 launch tooling not installed ({', '.join(_MISSING)} missing): source a ROS 2 "
               "distribution, or let scripts/setup_env.sh install the wheels of ../shared/ros2-tooling"
               if _MISSING else "")

ANALYSIS_TIMEOUT_S = 60.0


def require_launch_testing():
    """Skip the calling test module (reported as skipped, with the reason) without the launch tooling;
    else return the launch_testing module."""
    import pytest
    if SKIP_REASON:
        pytest.skip(SKIP_REASON, allow_module_level=True)
    import launch_testing
    return launch_testing


@dataclass
class LaunchedRun:
    """What a test needs to know about the run its launch description starts."""
    scenario: str
    out: Path
    overrides: tuple[str, ...] = ()
    args: dict = field(default_factory=dict)      # other launch arguments (plant, mode, composed, ...)
    domain_id: int = -1
    lease: object = None
    timeout_s: float = 120.0                      # how long the run may take (wall clock) before a test fails

    def resolved(self):
        from rths_ros.app import scenario as scn
        return scn.load(str(self.out / "scenario.yaml"))

    def close(self, remove: bool) -> None:
        if self.lease is not None:
            self.lease.close()
            self.lease = None
        if remove:
            shutil.rmtree(self.out.parent, ignore_errors=True)


def scenario_launch(scenario: str, overrides: tuple[str, ...] = (), timeout_s: float = 120.0, **args):
    """(LaunchDescription, {'run': LaunchedRun}) for launch_testing: the installed rths.launch.py with the
    given arguments, on a ROS domain of its own, writing to a fresh temporary run directory."""
    from ament_index_python.packages import get_package_share_directory
    from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch_testing.actions import ReadyToTest
    from launch_testing.util import KeepAliveProc

    from launch import LaunchDescription
    from rths_ros.runner import DomainLease

    lease = DomainLease()
    out = Path(tempfile.mkdtemp(prefix=f"rths_launch_{Path(scenario).stem}_")) / "run"
    run = LaunchedRun(scenario, out, tuple(overrides), dict(args), lease.domain_id, lease, timeout_s)
    atexit.register(run.close, remove=not os.environ.get("RTHS_KEEP_LAUNCH_RUNS"))
    launch_file = Path(get_package_share_directory("rths_ros")) / "launch" / "rths.launch.py"
    launch_args = {"scenario": scenario, "out": str(out), "overrides": " ".join(overrides),
                   **{k: str(v) for k, v in args.items()}}
    ld = LaunchDescription([
        SetEnvironmentVariable("ROS_DOMAIN_ID", str(lease.domain_id)),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(str(launch_file)),
                                 launch_arguments=launch_args.items()),
        # the run's processes all end by themselves: this one keeps the launch up until the active tests
        # have seen the end (launch_testing stops the launch when they return)
        KeepAliveProc(),
        ReadyToTest(),
    ])
    return ld, {"run": run}


# ---------------------------------------------------------------------------------------------
# checks while the launch runs
# ---------------------------------------------------------------------------------------------
def wait_for_run_end(proc_info, proc_output, run: LaunchedRun) -> None:
    """START is logged by the supervisor, every process of the run exits, and (when recording) the analysis
    that follows them ends.  launch_testing stops the launch when the active tests return, so this waits
    for the analysis process too."""
    timeout_s = run.timeout_s
    proc_output.assertWaitFor("nodes ready: START", timeout=min(timeout_s, 120.0), stream="stderr")
    t_end = time.monotonic() + timeout_s
    s = run.resolved()
    if s.recording.enabled:
        proc_info.assertWaitForShutdown(process="rths_analysis", timeout=timeout_s + ANALYSIS_TIMEOUT_S)
    else:
        while time.monotonic() < t_end and not all(_exited(proc_info, p) for p in _process_names(run)):
            time.sleep(0.2)
    assert time.monotonic() < t_end + ANALYSIS_TIMEOUT_S


def _process_names(run: LaunchedRun) -> list[str]:
    from rths_ros.launch_support import process_groups
    composed = str(run.args.get("composed", "false")).lower() == "true"
    s = run.resolved()
    return [name for name, _ in process_groups(s.run_nodes, composed,
                                               composed and s.recording.composed_in_process(s.loop.mode))]


def ros2_launch(args: list[str], timeout_s: float = 180.0) -> tuple[int, str, float]:
    """`ros2 launch ARGS` as a user runs it (the `ros2` command of this environment), on a ROS domain of its own
    with localhost discovery: (exit code, its output, wall time).  A launch that does not end in time is killed
    with its process group and fails the test with the end of its output."""
    import signal

    from rths_ros.runner import DomainLease
    lease = DomainLease()
    env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    cmd = [str(Path(sys.prefix) / "bin" / "ros2"), "launch", *args]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    try:
        text, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        text, _ = proc.communicate()
        raise AssertionError(f"the launch did not end within {timeout_s:g} s:\n"
                             f"{text.decode(errors='replace')[-3000:]}") from None
    finally:
        lease.close()
    return proc.returncode, text.decode(errors="replace"), time.monotonic() - t0


def process_name(action) -> str:
    """'sim_plant' for the launch's process 'sim_plant-6'."""
    return action.process_details["name"].rsplit("-", 1)[0]


def launched_names(proc_info) -> list[str]:
    return sorted(process_name(a) for a in proc_info.processes())


def _exited(proc_info, name: str) -> bool:
    from launch.events.process import ProcessExited
    return any(process_name(a) == name and isinstance(proc_info[a], ProcessExited) for a in proc_info.processes())


# ---------------------------------------------------------------------------------------------
# checks after the launch ended
# ---------------------------------------------------------------------------------------------
def assert_processes_exited_cleanly(proc_info, run: LaunchedRun) -> None:
    """Every process of the run (and the analysis) exited by itself with code 0 (the keep-alive process
    that launch_testing stops is not one of them)."""
    names = set(launched_names(proc_info))
    expected = set(_process_names(run)) | ({"rths_analysis"} if run.resolved().recording.enabled else set())
    assert expected <= names, f"processes never started: {sorted(expected - names)}"
    codes = {process_name(a): proc_info[a].returncode for a in proc_info.processes()
             if process_name(a) in expected}
    assert all(c == 0 for c in codes.values()), codes


def events(run: LaunchedRun) -> list[dict]:
    return read_events(run.out)["events"]


def assert_ready_start_stop(run: LaunchedRun) -> None:
    """Every node announced READY, then START and STOP came, and nothing aborted."""
    ev = events(run)
    types = [e["type"] for e in ev]
    s = run.resolved()
    ready = {e["source"] for e in ev if e["type"] == "READY"}
    assert ready >= set(s.run_nodes), f"nodes that never became ready: {sorted(set(s.run_nodes) - ready)}"
    assert "START" in types and "STOP" in types, types
    assert types.index("START") < types.index("STOP")
    assert "ABORT" not in types, [e for e in ev if e["type"] == "ABORT"]


def loop_topics(run: LaunchedRun) -> list[str]:
    """The control topics whose producer this run starts (one message per synchronisation step each)."""
    from rths_ros.runtime.topics import TOPICS
    nodes = set(run.resolved().run_nodes)
    return [t.name for t in TOPICS if t.kind == "control" and nodes & set(t.producers)]


def assert_bag_has_every_step(run: LaunchedRun) -> dict:
    """The bag holds every loop topic, and in each trial one message per step: no gap, no duplicate, and
    the trial's last step.  Returns {topic: message count}."""
    from rths_ros.bag import read_bag
    s = run.resolved()
    topics = loop_topics(run)
    assert topics, "no loop topic in this run"
    bag = read_bag(run.out / "bag", topics)
    counts = {}
    for topic in topics:
        assert topic in bag, f"{topic} missing from the bag (has {sorted(bag)})"
        steps = [int(m.step) for _, m in bag[topic]]
        trials, cur = [], [steps[0]]
        for k in steps[1:]:
            if k <= cur[-1] - 1 and k <= 1:       # the step index starts again: next trial
                trials.append(cur)
                cur = [k]
            else:
                cur.append(k)
        trials.append(cur)
        assert len(trials) == s.loop.trials, f"{topic}: {len(trials)} trials in the bag, expected {s.loop.trials}"
        for j, ks in enumerate(trials):
            assert ks[0] in (0, 1), f"{topic} trial {j}: first step {ks[0]}"
            gaps = [(a, b) for a, b in zip(ks, ks[1:]) if b != a + 1]
            assert not gaps, f"{topic} trial {j}: steps not one per step, first irregularity {gaps[0]}"
            assert ks[-1] == s.steps, f"{topic} trial {j}: last step {ks[-1]}, expected {s.steps}"
        counts[topic] = len(steps)
    return counts


def assert_artefacts(run: LaunchedRun) -> dict:
    """The same artefacts as `rths run`: bag, metrics.json, report.md and at least one plot."""
    for name in ("metrics.json", "report.md", "scenario.yaml", "events.json"):
        assert (run.out / name).is_file(), f"{name} missing in {run.out}"
    assert (run.out / "bag" / "metadata.yaml").is_file()
    pngs = list(run.out.glob("*.png"))
    assert pngs, f"no plot in {run.out}"
    assert all(p.stat().st_size > 5_000 for p in pngs)
    return json.loads((run.out / "metrics.json").read_text())


#: metrics that depend on the wall clock or the machine, not on the simulated physics
TIMING_KEYS = ("loop",)


def physics(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in TIMING_KEYS}


def rths_run_metrics(run: LaunchedRun) -> dict:
    """metrics.json of `rths run` of the same scenario with the same arguments, through separate processes as the
    launch runs it (shared with the other tests of the session that read the same run: test/shared_runs.py)."""
    from shared_runs import shared_run
    args: tuple[str, ...] = ()
    if run.args.get("plant"):
        args += ("--plant", str(run.args["plant"]))
    if run.args.get("mode"):
        args += ("--mode", str(run.args["mode"]))
    ref = shared_run(run.scenario, *run.overrides, args=args, timeout=600)
    return json.loads((ref.out / "metrics.json").read_text())


def assert_metrics_equal_rths_run(run: LaunchedRun) -> None:
    """In lockstep a launched run and `rths run` of the same scenario give bit-identical physics metrics."""
    launched = physics(json.loads((run.out / "metrics.json").read_text()))
    ref = physics(rths_run_metrics(run))
    assert launched.keys() == ref.keys(), sorted(set(launched) ^ set(ref))
    diff = [k for k in ref if launched[k] != ref[k]]
    assert not diff, {k: (launched[k], ref[k]) for k in diff}


# ---------------------------------------------------------------------------------------------
# the test cases a launch test module imports (launch_testing collects TestCase classes from the
# module's namespace: active ones run while the launch runs, post-shutdown ones after it ended)
# ---------------------------------------------------------------------------------------------
if not SKIP_REASON:
    import unittest

    import launch_testing

    class RunEnds(unittest.TestCase):
        """Active test: the run starts and ends by itself (the launch is stopped when this returns)."""

        def test_run_ends(self, proc_info, proc_output, run):
            wait_for_run_end(proc_info, proc_output, run)

    @launch_testing.post_shutdown_test()
    class CompletedRun(unittest.TestCase):
        """Every process exited 0, every node was ready, START and STOP came, the bag has one message per
        step on every loop topic, and the run directory has the artefacts of `rths run`."""

        def test_every_process_exits_0(self, proc_info, run):
            assert_processes_exited_cleanly(proc_info, run)

        def test_ready_start_stop(self, run):
            assert_ready_start_stop(run)

        def test_bag_has_one_message_per_step(self, run):
            assert_bag_has_every_step(run)

        def test_artefacts(self, run):
            assert_artefacts(run)

    @launch_testing.post_shutdown_test()
    class SameMetricsAsRthsRun(unittest.TestCase):
        """Lockstep: the launched run's physics metrics equal those of `rths run`, bit for bit."""

        def test_metrics_equal_rths_run(self, run):
            assert_metrics_equal_rths_run(run)
