"""Node processes forked from a warm parent: the start-up of ``rths run`` without re-importing per node.

Each node process of a run is its own process, as always: own interpreter state, own DDS participant, own
process group, own log file.  Started with ``python -m rths_ros.nodes.<node>``, every one of them imports
numpy, numba, scipy, rclpy and the core modules again and loads its compiled kernels from numba's cache:
about 1.2 s of CPU each, all at once on a small machine.  :func:`fork_node` starts the same node from a
parent that has imported and warmed all of this once (:func:`warm`), so a node process begins with the
modules and the compiled kernels in place and only creates its ROS context, nodes and participant.

The parent must not have initialised rclpy (no DDS participant, no executor threads) and should have no
other threads running: :func:`fork_node` refuses to fork then and the runner starts the node with
``python -m`` instead.  The child shows the same command line as ``python -m`` would (setproctitle), so
:mod:`rths_ros.runtime.processes` finds it like any other node process.
"""
from __future__ import annotations

import gc
import importlib
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import traceback

__all__ = ["ForkedProcess", "can_fork", "fork_node", "load_type_supports", "warm"]


def dds_threads() -> list[str]:
    """Native threads of the DDS library in this process (Fast DDS names them dds.*).  One outlives the ROS
    context that started it (the shared-memory watchdog), and a fork copies the locks such a thread holds, not the
    thread: a forked node could then hang in its first DDS call."""
    names = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/comm") as fh:
                name = fh.read().strip()
            if name.startswith("dds."):
                names.append(name)
    except OSError:
        pass
    return names


def can_fork() -> bool:
    """True where a node may be forked from this process: Linux, one Python thread, no ROS context now or
    earlier (no DDS thread)."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return False
    if threading.active_count() != 1:
        return False
    rclpy = sys.modules.get("rclpy")
    if rclpy is not None and rclpy.ok():
        return False
    return not dds_threads()


def load_type_supports() -> int:
    """Load the C type support of every ROS message and service class imported so far (the node modules import
    rclpy's and the package's), here, so that a forked node does not load these shared libraries after the fork:
    the parent has native threads (the BLAS pool), and a library loaded in the child of a threaded parent can
    crash it at start-up.  Returns the number of classes loaded now."""
    total = 0
    for _ in range(10):              # a type support imports the modules of its nested types: until none is left
        n = 0
        for name, module in list(sys.modules.items()):
            if module is None or not re.search(r"\.(msg|srv|action)\._", name):
                continue
            for obj in list(vars(module).values()):
                meta = type(obj) if isinstance(obj, type) else None
                if meta is not None and hasattr(meta, "__import_type_support__") \
                        and getattr(meta, "_TYPE_SUPPORT", 0) is None:
                    meta.__import_type_support__()
                    n += 1
        total += n
        if n == 0:
            break
    return total


def warm(scenario, node_modules: list[str]) -> None:
    """Import the node modules of a run, load their message type supports and every compiled kernel of the
    scenario's core objects (the objects the nodes will build), so forked node processes start with them in
    place."""
    for module in node_modules:
        importlib.import_module(module)
    load_type_supports()
    from rths_ros.app.vrths import VirtualRun
    VirtualRun(scenario)
    from rths_ros.runtime import startup
    problem = startup.warm_fast_path(scenario)      # the forked nodes skip their own warm-up (runtime.startup)
    if problem:
        print(f"rths run: warning: {problem}", file=sys.stderr)
    # what each node would otherwise do while it is built, six processes at once on a small machine: the module map
    # of rclpy's logger (75 ms) and, for the recorder, the bag's type store (50-90 ms)
    from rths_ros.runtime.loop_log import warm_up
    if any(m.rsplit(".", 1)[-1] == "recorder" for m in node_modules):
        from rths_ros.bag import typestore
        typestore()
    warm_up()
    # the heap as it is now goes to the permanent generation before the forks: a node's own collect-and-freeze
    # before its loop (realtime.gc_freeze) then walks only what it made itself (80 ms -> a few ms in each of six
    # processes at once), and the pages stay shared; the runner unfreezes its own after the forks (thaw()); a fork
    # server, which warms before each run, first takes the last run's frozen heap back under the collector
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def thaw() -> None:
    """In the runner, once its node processes are forked: its own heap back under the collector (warm froze it)."""
    gc.unfreeze()


class ForkedProcess:
    """The parent's handle of a forked node process, with the part of :class:`subprocess.Popen`'s interface the
    runner uses (``pid``, ``returncode``, ``poll``, ``wait``, ``send_signal``, ``terminate``, ``kill``)."""

    def __init__(self, pid: int, args: list[str]):
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def _reap(self, flags: int) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:      # already collected elsewhere: treat as ended without a code
            self.returncode = -1
            return self.returncode
        if pid == 0:
            return None
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            return self._reap(0)
        import time
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_node(module: str, argv: list[str], log_path, env: dict, cwd: str, preexec=None) -> ForkedProcess:
    """Fork a node process that runs ``module``'s ``main(argv)`` as ``python -m module *argv`` would: in its own
    process group, stdout and stderr into ``log_path``, stdin from /dev/null, environment ``env``, working
    directory ``cwd``; ``preexec`` runs first in the child (as Popen's ``preexec_fn``)."""
    args = [sys.executable, "-m", module, *argv]
    log_fd = os.open(str(log_path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()      # nothing the parent buffered may be written twice
        except (OSError, ValueError, AttributeError):
            pass
    pid = os.fork()
    if pid:
        os.close(log_fd)
        return ForkedProcess(pid, args)
    _child(module, argv, log_fd, env, cwd, preexec)


def _child(module: str, argv: list[str], log_fd: int, env: dict, cwd: str, preexec=None) -> None:
    """The node process after the fork: set itself up as ``python -m module *argv`` would be, run the node's
    ``main`` and end with its exit code; never returns."""
    args = [sys.executable, "-m", module, *argv]
    code = 1
    try:
        os.setpgid(0, 0)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        if preexec is not None:
            preexec()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(null)
        os.close(log_fd)
        # new streams on the descriptors: the parent's sys.stdout may be something else (a test harness's capture)
        sys.stdin = sys.__stdin__ = open(0, closefd=False)
        sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, closefd=False)
        sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, closefd=False)
        try:    # (before the environment changes: setproctitle takes over the memory the original one is in)
            import setproctitle
            setproctitle.setproctitle(shlex.join(args))
        except ImportError:
            pass
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [module, *argv]
        code = importlib.import_module(module).main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(int(code or 0) & 0xFF)
