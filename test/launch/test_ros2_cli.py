"""The ``ros2`` command line against a live run of ``ros2 launch rths_ros rths.launch.py``.

One contact_1d run is launched for the whole module, on a ROS domain of its own, with
``realtime.lifecycle_autostart=false``: the managed plant node (``/sim_plant``) stays unconfigured and
the loop waits, so the introspection commands (node list, topic list, param get, lifecycle get) see the
graph without any hurry.  The tests then drive the plant through ``ros2 lifecycle set`` (configure,
activate), watch the loop traffic with ``ros2 topic echo --once`` and ``ros2 topic hz``, and finally
require the launch to end with exit code 0 and a metrics.json.  Independently of the run,
``ros2 interface show`` is checked for every message of msg/ and ``ros2 run`` starts a node under a
remapped name (on a second domain, so it cannot disturb the run).

Every CLI call runs with ``--no-daemon`` (``ros2 topic hz`` has no daemon option: it always uses a
direct node), so no ROS 2 daemon is left behind.  A fresh CLI process needs a few seconds of discovery
under load, so the graph queries are retried with a growing ``--spin-time`` until a deadline.

The tests depend on each other's order (file order): they share the one run.
"""
from __future__ import annotations

import importlib
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.prefix) / "bin"
ROS2 = BIN / "ros2"


def _missing_tooling() -> list[str]:
    missing = [] if ROS2.is_file() and os.access(ROS2, os.X_OK) else [f"the ros2 command {ROS2}"]
    for module in ("ros2cli", "launch"):
        try:
            importlib.import_module(module)
        except Exception:    # ImportError, or a half-installed package failing on import
            missing.append(f"the Python module {module!r}")
    return missing


_MISSING = _missing_tooling()
if _MISSING:
    pytest.skip(f"ros2 command line not available, missing: {'; '.join(_MISSING)}. Source a ROS 2 "
                "distribution, or run scripts/setup_env.sh, which installs ros2cli and launch from the "
                "wheels of ../shared/ros2-tooling", allow_module_level=True)

pytestmark = pytest.mark.timeout(300)

SCENARIO = "contact_1d"
RUN_NODES = ("recorder", "supervisor", "numerical_substructure", "stewart_platform", "ft_sensor", "sim_plant")
# simulated time of the run.  Lockstep steps it at 300-1000 steps/s here (16-55 s of wall time): long
# enough for the end of the `ros2 lifecycle set ... activate` call and the `ros2 lifecycle get` after it
# (3-6 s each with --no-daemon discovery on a loaded machine; at 8 s the run was once over before the get),
# which has to see the plant before the run is over, and for several readings of `ros2 topic hz`
DURATION_S = 16.0
# the plant waits for `ros2 lifecycle set`; the supervisor's wait for READY (default 60 s) must outlast
# the introspection before the activation, also on a slow machine
OVERRIDES = ("realtime.lifecycle_autostart=false", f"loop.duration_s={DURATION_S}", "loop.start_timeout_s=240")
# (node, parameter, scenario attribute path) checked with `ros2 param get`
PARAMS = (
    ("/numerical_substructure", "numerical.contact_1d.d_num_kg_per_s", ("numerical", "contact_1d", "d_num_kg_per_s")),
    ("/sim_plant", "sim_plant.cascade.preset", ("sim_plant", "cascade", "preset")),
    ("/supervisor", "loop.duration_s", ("loop", "duration_s")),
)
PROBE_NODE = "cli_probe_supervisor"      # the remapped name of the `ros2 run` node

CMD_TIMEOUT_S = 40.0        # one CLI call
DISCOVERY_S = 45.0          # retrying a graph query
RUN_END_S = 120.0           # from the activation to the end of the launch (run + analysis)
SPIN_TIMES = (2, 3, 4, 5, 6, 8)


# ---------------------------------------------------------------------------------------------------
# helpers


def cli_env(domain_id: int, log_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.pop("ROS_LOCALHOST_ONLY", None)
    env["ROS_LOG_DIR"] = str(log_dir)
    env["PYTHONUNBUFFERED"] = "1"          # hz/echo output reaches their files before they are stopped
    return env


def stop_group(proc: subprocess.Popen, grace_s: float = 15.0) -> None:
    """End the process group (its own session) that ``proc`` leads: SIGINT, then SIGTERM, then SIGKILL."""
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            pass
    try:            # members of the group that outlived its leader
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pass


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pids_mentioning(text: str) -> list[int]:
    """Our own processes whose command line holds ``text`` (a unique temporary path)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


class LiveRun:
    """The launched run and what the tests share about it."""

    def __init__(self, tmp: Path, domain_id: int):
        self.tmp = tmp
        self.out = tmp / "run"
        self.log = tmp / "launch.log"
        self.domain_id = domain_id
        self.env = cli_env(domain_id, tmp / "ros_log")
        self.proc: subprocess.Popen | None = None
        self._log_file = None
        self.activated = False

    # -- the launch ---------------------------------------------------------------------------
    def start(self) -> None:
        cmd = [str(ROS2), "launch", "rths_ros", "rths.launch.py", f"scenario:={SCENARIO}",
               f"out:={self.out}", f"overrides:={' '.join(OVERRIDES)}"]
        self._log_file = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, stdout=self._log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=self.env, cwd=str(self.tmp), start_new_session=True)

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc, grace_s=20.0)
        for pid in pids_mentioning(str(self.tmp)):     # node processes launch may have left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._log_file is not None:
            self._log_file.close()

    def launch_tail(self) -> str:
        state = "running" if self.proc.poll() is None else f"exited with code {self.proc.returncode}"
        return f"--- launch ({state}), tail of {self.log} ---\n{tail(self.log)}"

    def require_running(self, what: str) -> None:
        if self.proc.poll() is not None:
            hint = (" (the run was over before this check: a longer loop.duration_s, DURATION_S, gives the "
                    "CLI more time)" if self.activated else "")
            pytest.fail(f"the launch ended before {what}{hint}\n{self.launch_tail()}")

    # -- the CLI -------------------------------------------------------------------------------
    def ros2(self, *args: str, timeout: float = CMD_TIMEOUT_S, env: dict | None = None) -> subprocess.CompletedProcess:
        cmd = [str(ROS2), *args]
        t0 = time.monotonic()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or self.env,
                                  stdin=subprocess.DEVNULL, cwd=str(self.tmp), start_new_session=True)
            print(f"[{time.monotonic() - t0:5.1f} s] exit {res.returncode}: ros2 {' '.join(args)}")
            return res
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            return subprocess.CompletedProcess(cmd, -9, out, err + f"\n(timed out after {timeout:g} s)")

    def report(self, res: subprocess.CompletedProcess | None, note: str = "") -> str:
        parts = [note] if note else []
        if res is not None:
            parts.append(f"$ {' '.join(map(str, res.args))}\nexit code {res.returncode}\n"
                         f"--- stdout ---\n{res.stdout}\n--- stderr ---\n{res.stderr}")
        parts.append(self.launch_tail())
        return "\n".join(parts)

    def poll(self, args_for_spin, ok, what: str, deadline_s: float = DISCOVERY_S, env: dict | None = None,
             watch_launch: bool = True) -> subprocess.CompletedProcess:
        """Run ``args_for_spin(spin_time)`` until ``ok(result)``; fail with the last output after the deadline."""
        t_end = time.monotonic() + deadline_s
        attempt, res = 0, None
        while True:
            if watch_launch:
                self.require_running(what)
            spin = SPIN_TIMES[min(attempt, len(SPIN_TIMES) - 1)]
            res = self.ros2(*args_for_spin(spin), env=env)
            if ok(res):
                return res
            attempt += 1
            if time.monotonic() > t_end:
                pytest.fail(self.report(res, f"{what}: not seen within {deadline_s:g} s ({attempt} attempts)"))
            time.sleep(0.5)

    def lifecycle_state(self) -> str:
        res = self.poll(lambda s: ("lifecycle", "get", "/sim_plant", "--no-daemon", "--spin-time", str(s)),
                        lambda r: r.returncode == 0 and re.search(r"^\w+ \[\d+\]$", r.stdout.strip(), re.M),
                        "ros2 lifecycle get /sim_plant")
        return res.stdout.strip().split()[0]

    def lifecycle_set(self, transition: str) -> subprocess.CompletedProcess:
        """``ros2 lifecycle set /sim_plant TRANSITION``, retried only while the node is not discovered yet."""
        res = self.poll(lambda s: ("lifecycle", "set", "/sim_plant", transition, "--no-daemon", "--spin-time", str(s)),
                        lambda r: "Node not found" not in (r.stdout + r.stderr),
                        f"/sim_plant for `ros2 lifecycle set {transition}`")
        assert res.returncode == 0 and "Transitioning successful" in res.stdout, \
            self.report(res, f"ros2 lifecycle set /sim_plant {transition} failed")
        return res


def start_background(run: LiveRun, name: str, *args: str) -> tuple[subprocess.Popen, Path]:
    path = run.tmp / f"{name}.log"
    with open(path, "w") as fh:
        proc = subprocess.Popen([str(ROS2), *args], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=run.env, cwd=str(run.tmp), start_new_session=True)
    return proc, path


def msg_names(msg_file: Path) -> list[str]:
    """Field and constant names declared in a .msg file."""
    names = []
    for line in msg_file.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        tokens = line.replace("=", " = ").split()
        if len(tokens) >= 2:
            names.append(tokens[1])
    return names


# ---------------------------------------------------------------------------------------------------
# the run


@pytest.fixture(scope="module")
def live_run(tmp_path_factory):
    from rths_ros.runner import DomainLease

    lease = DomainLease()
    run = LiveRun(tmp_path_factory.mktemp("ros2_cli"), lease.domain_id)
    try:
        run.start()
        yield run
    finally:
        run.stop()
        lease.close()


# ---------------------------------------------------------------------------------------------------
# the checks, in order


def test_interface_show_every_message(live_run):
    """``ros2 interface show rths_ros/msg/<Name>`` for every msg/*.msg (the launch boots meanwhile)."""
    files = sorted((ROOT / "msg").glob("*.msg"))
    assert files, f"no message definitions in {ROOT / 'msg'}"

    def show(f: Path):
        return f, live_run.ros2("interface", "show", f"rths_ros/msg/{f.stem}", timeout=60.0)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(show, files))
    for f, res in results:
        names = msg_names(f)
        assert names, f"{f} declares no field"
        assert res.returncode == 0, live_run.report(res, f"ros2 interface show failed for {f.name}")
        shown = [n for n in names if re.search(rf"^\s*\S+\s+{re.escape(n)}\b", res.stdout, re.M)]
        assert shown, live_run.report(res, f"none of the names {names} of {f.name} in the output")
        assert shown == names, live_run.report(res, f"{f.name}: missing {sorted(set(names) - set(shown))}")


def test_node_list_shows_every_node(live_run):
    expected = {f"/{n}" for n in RUN_NODES}
    res = live_run.poll(lambda s: ("node", "list", "--no-daemon", "--spin-time", str(s)),
                        lambda r: r.returncode == 0 and expected <= set(r.stdout.split()),
                        f"ros2 node list: all of {sorted(expected)}")
    assert expected <= set(res.stdout.split())


def test_topic_list_shows_loop_topics(live_run):
    from rths_ros.runtime.topics import TOPICS

    expected = {t.name: t.type for t in TOPICS if set(t.producers) & set(RUN_NODES)}
    assert {"/rths/interface_command", "/rths/interface_force", "/rths/leg_state"} <= set(expected), expected
    wanted = {f"{name} [{typ}]" for name, typ in expected.items()}

    def lines(r):
        return {ln.strip() for ln in r.stdout.splitlines()}

    res = live_run.poll(lambda s: ("topic", "list", "-t", "--no-daemon", "--spin-time", str(s)),
                        lambda r: r.returncode == 0 and wanted <= lines(r),
                        f"ros2 topic list -t: all of {sorted(wanted)}")
    assert wanted <= lines(res)


def test_param_get_returns_scenario_values(live_run):
    import yaml

    from rths_ros.app import scenario as scn

    scenario = scn.load(SCENARIO, list(OVERRIDES))
    raw = yaml.safe_load((ROOT / "config" / "scenarios" / f"{SCENARIO}.yaml").read_text())
    assert raw["numerical"]["contact_1d"]["d_num_kg_per_s"] == 200.0     # d_NUM of the source-000 contact test

    def get(item):
        node, key, _ = item
        return live_run.poll(lambda s: ("param", "get", node, key, "--hide-type", "--no-daemon",
                                        "--spin-time", str(s), "--timeout", "10"),
                             lambda r: r.returncode == 0 or "Node not found" not in (r.stdout + r.stderr),
                             f"ros2 param get {node} {key}")

    with ThreadPoolExecutor(max_workers=len(PARAMS)) as pool:      # three discoveries at once
        results = list(pool.map(get, PARAMS))
    for (node, key, path), res in zip(PARAMS, results):
        want = scenario
        for part in path:
            want = getattr(want, part)
        assert res.returncode == 0, live_run.report(res, f"ros2 param get {node} {key} failed")
        got = res.stdout.strip()
        if isinstance(want, float):
            assert float(got) == pytest.approx(want), live_run.report(res, f"{node} {key}: {got} != {want}")
        else:
            assert got == str(want), live_run.report(res, f"{node} {key}: {got!r} != {want!r}")
    # the value from the YAML file, and the launch override, arrived as such
    assert scenario.numerical.contact_1d.d_num_kg_per_s == raw["numerical"]["contact_1d"]["d_num_kg_per_s"]
    assert scenario.loop.duration_s == DURATION_S


def test_ros2_run_remapped_node(live_run):
    """``ros2 run rths_ros supervisor ... --ros-args -r __node:=NAME`` on a domain of its own."""
    from rths_ros.runner import DomainLease

    lease = DomainLease()
    env = cli_env(lease.domain_id, live_run.tmp / "ros_log")
    log = live_run.tmp / "ros2_run.log"
    cmd = [str(ROS2), "run", "rths_ros", "supervisor", "--scenario", SCENARIO, "--set", "loop.start_timeout_s=300",
           "--ros-args", "-r", f"__node:={PROBE_NODE}"]
    proc = None
    try:
        with open(log, "w") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    cwd=str(live_run.tmp), start_new_session=True)

        def seen(r):
            assert proc.poll() is None, f"`{' '.join(cmd)}` exited with {proc.returncode}:\n{tail(log)}"
            return r.returncode == 0 and f"/{PROBE_NODE}" in r.stdout.split()

        res = live_run.poll(lambda s: ("node", "list", "--no-daemon", "--spin-time", str(s)), seen,
                            f"/{PROBE_NODE} (started by ros2 run) in ros2 node list", env=env, watch_launch=False)
        assert "/supervisor" not in res.stdout.split(), f"the node kept its own name:\n{res.stdout}"
        assert proc.poll() is None, f"`ros2 run` exited with {proc.returncode}:\n{tail(log)}"

        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20.0)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`ros2 run` did not exit within 20 s of SIGINT:\n{tail(log)}")
        deadline = time.monotonic() + 10.0
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not group_alive(proc.pid), f"a process of `ros2 run` outlived it:\n{tail(log)}"
    finally:
        if proc is not None:
            stop_group(proc, grace_s=5.0)
        lease.close()


def test_lifecycle_activation_and_loop_traffic(live_run):
    run = live_run
    state = run.lifecycle_state()
    assert state == "unconfigured", f"/sim_plant is {state!r} before any `ros2 lifecycle set`\n{run.launch_tail()}"

    # listeners first, so they are matched before the loop steps
    topic = "/rths/interface_command"
    echo, echo_log = start_background(run, "echo", "topic", "echo", "--once", "--no-daemon", topic,
                                      "rths_ros/msg/InterfaceCommand")
    hz, hz_log = start_background(run, "hz", "topic", "hz", topic)
    try:
        run.lifecycle_set("configure")
        assert "step:" not in echo_log.read_text(), "a command was published before the plant was active"

        run.lifecycle_set("activate")
        run.activated = True
        state = run.lifecycle_state()
        assert state == "active", f"/sim_plant is {state!r} after activate\n{run.launch_tail()}"

        # echo --once: one message, then it exits by itself
        try:
            echo.wait(timeout=60.0)
        except subprocess.TimeoutExpired:
            pytest.fail(f"ros2 topic echo --once {topic}: no message within 60 s of the activation\n"
                        f"--- echo output ---\n{echo_log.read_text()}\n{run.launch_tail()}")
        text = echo_log.read_text()
        assert echo.returncode == 0 and re.search(r"^step: \d+$", text, re.M), \
            f"ros2 topic echo --once {topic} (exit {echo.returncode}):\n{text}\n{run.launch_tail()}"

        # hz: readings once a second while the loop runs; stop it after three, or when the run is over
        t_end = time.monotonic() + RUN_END_S
        while time.monotonic() < t_end:
            if len(re.findall(r"average rate:", hz_log.read_text())) >= 3 or run.proc.poll() is not None:
                break
            time.sleep(0.5)
    finally:
        stop_group(hz, grace_s=10.0)
        stop_group(echo, grace_s=5.0)
    text = hz_log.read_text()
    rates = [float(x) for x in re.findall(r"average rate:\s*([0-9.]+)", text)]
    assert rates, f"ros2 topic hz {topic} printed no average rate:\n{text}\n{run.launch_tail()}"
    assert rates[-1] > 0.0, f"ros2 topic hz {topic}: rate {rates[-1]}\n{text}"


def test_launch_finishes_with_metrics(live_run):
    run = live_run
    if not run.activated:      # the activation test did not get there (deselected or failed early)
        if run.proc.poll() is None and run.lifecycle_state() == "unconfigured":
            run.lifecycle_set("configure")
        if run.proc.poll() is None and run.lifecycle_state() == "inactive":
            run.lifecycle_set("activate")
        run.activated = True
    try:
        rc = run.proc.wait(timeout=RUN_END_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the launch did not end within {RUN_END_S:g} s of the activation\n{run.launch_tail()}")
    assert rc == 0, f"ros2 launch exited with {rc}\n{run.launch_tail()}"
    metrics = run.out / "metrics.json"
    assert metrics.is_file(), f"no {metrics}\n{run.launch_tail()}"
