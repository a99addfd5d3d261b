"""Node processes forked from the warm runner (rths_ros.runtime.forked): what a ``python -m`` start gives them
(own process group, log file, environment, working directory, exit code, command line) they get here too,
and the process table finds them by that command line."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rths_ros.runtime import forked, processes

FAKE = textwrap.dedent("""
    import os, sys, time
    def main(argv):
        print("argv", argv, "env", os.environ.get("RTHS_FAKE"), "cwd", os.getcwd(), "pgid_is_pid",
              os.getpgid(0) == os.getpid(), flush=True)
        if "--wait" in argv:
            time.sleep(30)
        return 7
""")


@pytest.fixture
def fake_module(tmp_path, monkeypatch):
    pkg = tmp_path / "pkgs"
    pkg.mkdir()
    (pkg / "rths_fake_node.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(pkg))
    return "rths_fake_node"


def _wait(p, timeout=20.0):
    t_end = time.monotonic() + timeout
    while p.poll() is None and time.monotonic() < t_end:
        time.sleep(0.02)
    return p.returncode


def test_a_forked_node_gets_its_log_environment_directory_group_and_exit_code(tmp_path, fake_module):
    log = tmp_path / "node.log"
    cwd = tmp_path / "run"
    cwd.mkdir()
    p = forked.fork_node(fake_module, ["--out", str(cwd)], log, {"RTHS_FAKE": "yes", "PATH": os.environ["PATH"]},
                         str(cwd))
    assert _wait(p) == 7
    text = log.read_text()
    assert f"argv ['--out', '{cwd}']" in text
    assert "env yes" in text and f"cwd {cwd}" in text and "pgid_is_pid True" in text
    assert "RTHS_FAKE" not in os.environ          # the parent's environment is untouched


def test_a_forked_node_shows_its_python_m_command_line_and_takes_signals(tmp_path, fake_module):
    out = tmp_path / "my run"          # a space in the path survives the title
    out.mkdir()
    argv = ["--scenario", "x.yaml", "--out", str(out), "--wait"]
    p = forked.fork_node(fake_module, argv, tmp_path / "node.log", dict(os.environ), str(out))
    try:
        deadline = time.monotonic() + 10
        while "--wait" not in processes._cmdline(p.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert processes._cmdline(p.pid) == [sys.executable, "-m", fake_module, *argv]
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=0.2)
        p.send_signal(signal.SIGTERM)
        assert _wait(p) == -signal.SIGTERM
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_the_process_table_finds_a_node_by_its_title(tmp_path):
    """A forked node's title is its command line in one quoted string; it names its node and run directory."""
    out = tmp_path / "a run"
    out.mkdir()
    p = forked.fork_node("rths_ros.nodes.recorder", ["--scenario", "missing.yaml", "--out", str(out)],
                         tmp_path / "rec.log", dict(os.environ), str(out))
    try:
        deadline = time.monotonic() + 10
        found = []
        while not found and p.poll() is None and time.monotonic() < deadline:
            found = processes.node_pids(str(out), "recorder")
            time.sleep(0.01)
        assert found == [p.pid] or p.returncode == 2, "the recorder ended before it was seen"
    finally:
        _wait(p)
    assert p.returncode == 2        # the node itself refused the missing scenario, as `python -m` would
    assert "missing.yaml" in (tmp_path / "rec.log").read_text()


def test_no_fork_from_a_process_with_threads():
    import threading
    before = forked.can_fork()
    ev = threading.Event()
    t = threading.Thread(target=ev.wait, daemon=True)
    t.start()
    try:
        assert not forked.can_fork()
    finally:
        ev.set()
        t.join()
    assert forked.can_fork() == before


def test_no_fork_from_a_process_that_once_had_a_ros_context():
    """The DDS library's shared-memory watchdog thread outlives the context that started it; a node forked from
    such a process could hang in its first DDS call.  Checked in a fresh interpreter (this one may have had a
    context already)."""
    code = textwrap.dedent("""
        import rclpy
        from rths_ros.runtime import forked
        first = forked.can_fork()
        ctx = rclpy.Context()
        rclpy.init(context=ctx, domain_id=101)
        node = rclpy.create_node("once", context=ctx)
        node.destroy_node()
        rclpy.shutdown(context=ctx)
        print(first, forked.can_fork(), rclpy.ok(context=ctx))
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"})
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "False", "False"], p.stdout


def test_the_fork_server_starts_nodes_like_the_runner_does(tmp_path, fake_module):
    """A parent with threads gets its node processes from the fork server: same log, environment, directory,
    process group, title and exit code; a signal reaches the node; the server's end takes its nodes along."""
    from rths_ros.runtime.fork_server import ForkServer
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    srv = ForkServer(env)
    try:
        cwd = tmp_path / "run dir"
        cwd.mkdir()
        p = srv.spawn(fake_module, ["--out", str(cwd)], tmp_path / "a.log", {"RTHS_FAKE": "srv", **env}, str(cwd))
        assert _wait(p) == 7
        text = (tmp_path / "a.log").read_text()
        assert f"argv ['--out', '{cwd}']" in text and "env srv" in text and "pgid_is_pid True" in text
        q = srv.spawn(fake_module, ["--out", str(cwd), "--wait"], tmp_path / "b.log", env, str(cwd))
        deadline = time.monotonic() + 10
        while "--wait" not in processes._cmdline(q.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert processes._cmdline(q.pid) == [sys.executable, "-m", fake_module, "--out", str(cwd), "--wait"]
        assert q.poll() is None
        q.send_signal(signal.SIGINT)
        assert _wait(q) == -signal.SIGINT
        r = srv.spawn(fake_module, ["--wait"], tmp_path / "c.log", env, str(cwd))
        srv.close()
        assert _wait(r) == -signal.SIGTERM       # it ended with the server
    finally:
        srv.close()


def test_the_fork_server_outlives_the_thread_that_started_it(tmp_path, fake_module):
    """The server is shared by every thread of its parent: when the thread that started it (and used it) ends, the
    server and the nodes it forked go on (the kernel's parent-death signal follows the starting thread: two runs in
    two threads once lost the second run's nodes when the first run's thread ended)."""
    import threading

    from rths_ros.runtime.fork_server import ForkServer
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    held = {}

    def start_and_use() -> None:
        held["srv"] = srv = ForkServer(env)
        held["first"] = _wait(srv.spawn(fake_module, ["--out", str(tmp_path)], tmp_path / "a.log", env,
                                        str(tmp_path)))
        held["long"] = srv.spawn(fake_module, ["--wait"], tmp_path / "b.log", env, str(tmp_path))

    t = threading.Thread(target=start_and_use)
    t.start()
    t.join(120)
    srv = held["srv"]
    try:
        assert held["first"] == 7
        time.sleep(1.0)                            # a parent-death signal would have arrived by now
        assert srv.alive() and held["long"].poll() is None, "the server or its node ended with the thread"
        assert _wait(srv.spawn(fake_module, ["--out", str(tmp_path)], tmp_path / "c.log", env, str(tmp_path))) == 7
        held["long"].send_signal(signal.SIGINT)
        assert _wait(held["long"]) == -signal.SIGINT
    finally:
        srv.close()


def test_the_parent_loads_every_type_support_a_node_needs_before_the_fork():
    """A forked node must not load a type-support library after the fork (the parent has native BLAS threads;
    such a load crashed a node at start-up).  In a fresh process with the node modules imported, loading leaves
    no imported message or service class without its type support, starts no DDS thread, and keeps the process
    forkable."""
    code = textwrap.dedent("""
        import importlib, re, sys
        from rths_ros.runtime import forked
        from rths_ros.runtime.fork_server import PRELOAD
        for m in PRELOAD:
            importlib.import_module(m)
        n = forked.load_type_supports()
        missing = [name for name, mod in list(sys.modules.items()) if mod is not None
                   and re.search(r"\\.(msg|srv|action)\\._", name)
                   for obj in vars(mod).values() if isinstance(obj, type)
                   and getattr(type(obj), "_TYPE_SUPPORT", 0) is None]
        from rcl_interfaces.msg import ParameterEvent
        print(n, len(missing), type(ParameterEvent)._TYPE_SUPPORT is not None, forked.can_fork())
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    n, missing, parameter_event, can_fork = p.stdout.split()
    assert int(n) > 50 and missing == "0" and parameter_event == "True" and can_fork == "True", p.stdout


def test_the_runner_freezes_its_heap_for_the_forks_and_thaws_it_after():
    """forked.warm puts the heap in gc's permanent generation before the nodes are forked (each node's own
    collect-and-freeze then walks only what it made itself); the runner's own heap is back under the collector once
    they are forked, whether the run completed or failed."""
    code = textwrap.dedent("""
        import gc, sys, tempfile
        from pathlib import Path
        from rths_ros.app import scenario as scn
        from rths_ros.runner import run_scenario
        from rths_ros.runtime import forked
        s = scn.load("contact_1d", ["loop.duration_s=0.05"])
        forked.warm(s, ["rths_ros.nodes.sim_plant"])
        frozen = gc.get_freeze_count()
        forked.thaw()
        at_thaw, thaw = [], forked.thaw
        forked.thaw = lambda: (at_thaw.append(gc.get_freeze_count()), thaw())
        r = run_scenario(s, Path(tempfile.mkdtemp()) / "run", progress=False, node_start="fork")
        print(frozen, at_thaw[0], gc.get_freeze_count(), r.code)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-3000:]
    frozen, in_run, after_run, code = (int(x) for x in p.stdout.split()[-4:])
    assert frozen > 10_000 and in_run > 10_000 and after_run == 0 and code == 0, p.stdout
