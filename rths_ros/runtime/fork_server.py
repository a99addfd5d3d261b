"""A fork server for node processes: the fast start of :mod:`rths_ros.runtime.forked` for a parent that must not
fork itself (it runs other threads: a test harness, a notebook, a tool embedding the runner).

The server is a plain single-threaded process (``python -m rths_ros.runtime.fork_server``), started once per
parent and kept for its lifetime.  It imports the node modules once (:data:`PRELOAD`), loads the compiled
kernels of each scenario it is asked to warm, and forks every node process from that state, exactly as the
runner's own fork does (:func:`rths_ros.runtime.forked._child`).  Requests and answers are JSON lines on its
stdin and stdout:

* ``{"warm": SCENARIO_YAML}`` -> ``{"warmed": SCENARIO_YAML}``
* ``{"spawn": MODULE, "argv": [...], "log": PATH, "env": {...}, "cwd": DIR}`` -> ``{"pid": PID}``
* whenever a node process ends: ``{"exit": PID, "code": CODE}`` (negative: ended by that signal)

The server ends when its stdin closes (the parent ended, however); its node processes carry ``PR_SET_PDEATHSIG``
and end with it.  The server itself does not: the kernel sends that signal when the parent *thread* that started
the process ends, and the server is shared by every thread of the parent (two runs in two threads: the end of the
first run's thread stopped the second run's nodes at once, "interrupted by SIGTERM").
"""
from __future__ import annotations

import importlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from rths_ros.runtime import forked
from rths_ros.runtime.processes import process_ended

#: what the server imports once: the node processes' shared base and every node module
PRELOAD = ("rths_ros.runtime.node", "rths_ros.nodes.sim_plant", "rths_ros.nodes.stewart_platform",
           "rths_ros.nodes.ft_sensor", "rths_ros.nodes.numerical_substructure", "rths_ros.nodes.supervisor",
           "rths_ros.nodes.recorder", "rths_ros.nodes.passivity_controller", "rths_ros.nodes.aff_learner",
           "rths_ros.nodes.ilc_learner", "rths_ros.nodes.hardware_plant", "rths_ros.nodes.composed")


def _pdeathsig() -> None:
    import ctypes
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)     # PR_SET_PDEATHSIG
    except OSError:
        pass


def serve(stdin_fd: int = 0, stdout=None) -> int:
    """The server loop (in the server process)."""
    out = stdout or sys.stdout
    # (no PR_SET_PDEATHSIG here: see the module doc; the parent's end closes stdin, which ends the server)

    def say(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    for module in PRELOAD:
        importlib.import_module(module)
    forked.load_type_supports()
    buf = b""
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([stdin_fd], [], [], 0.05)
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                children.discard(pid)
                say({"exit": pid, "code": os.waitstatus_to_exitcode(status)})
        if not ready:
            continue
        chunk = os.read(stdin_fd, 65536)
        if not chunk:           # the parent is gone
            return 0
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            if "warm" in req:
                from rths_ros.app import scenario as scn
                try:
                    forked.warm(scn.load(req["warm"]), [])
                finally:
                    say({"warmed": req["warm"]})
                continue
            log_fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            out.flush()
            pid = os.fork()
            if pid == 0:
                forked._child(req["spawn"], req["argv"], log_fd, req["env"], req["cwd"], _pdeathsig)
            os.close(log_fd)
            children.add(pid)
            say({"pid": pid})


class ForkServer:
    """The parent's side: start the server, ask it for node processes, collect their exit codes."""

    def __init__(self, env: dict | None = None):
        self.proc = subprocess.Popen([sys.executable, "-m", "rths_ros.runtime.fork_server"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, env=env)
        self.codes: dict[int, int] = {}
        self._buf = b""
        self._lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """End the server (its node processes end with it)."""
        if self.alive():
            self.proc.stdin.close()
            self.proc.wait(timeout=10)

    def _request(self, obj: dict, answer: str, timeout_s: float = 120.0) -> dict:
        with self._lock:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
            deadline = time.monotonic() + timeout_s
            while True:
                for msg in self._drain(max(0.0, deadline - time.monotonic())):
                    if answer in msg:
                        return msg
                if time.monotonic() > deadline or not self.alive():
                    raise RuntimeError(f"the fork server did not answer {answer!r} (exit code {self.proc.poll()})")

    def _drain(self, wait_s: float = 0.0) -> list[dict]:
        """Read what the server said (waiting up to ``wait_s`` for something); note exit codes."""
        fd = self.proc.stdout.fileno()
        got = []
        ready, _, _ = select.select([fd], [], [], wait_s)
        while ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._buf += chunk
            ready, _, _ = select.select([fd], [], [], 0.0)
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            msg = json.loads(line)
            if "exit" in msg:
                self.codes[int(msg["exit"])] = int(msg["code"])
            got.append(msg)
        return got

    def warm(self, scenario_path: str) -> None:
        self._request({"warm": str(scenario_path)}, "warmed")

    def spawn(self, module: str, argv: list[str], log_path, env: dict, cwd: str) -> ServedProcess:
        msg = self._request({"spawn": module, "argv": list(argv), "log": str(log_path), "env": dict(env),
                             "cwd": str(cwd)}, "pid", 30.0)
        return ServedProcess(int(msg["pid"]), [sys.executable, "-m", module, *argv], self)

    def exit_code(self, pid: int) -> int | None:
        with self._lock:
            self._drain()
        if pid in self.codes:
            return self.codes[pid]
        if not self.alive() and process_ended(pid):     # the server is gone and took the process with it
            return -signal.SIGTERM
        return None


class ServedProcess(forked.ForkedProcess):
    """Handle of a node process started by the fork server (same interface as :class:`ForkedProcess`)."""

    def __init__(self, pid: int, args: list[str], server: ForkServer):
        super().__init__(pid, args)
        self._server = server

    def _reap(self, flags: int) -> int | None:
        while self.returncode is None:
            self.returncode = self._server.exit_code(self.pid)
            if flags == os.WNOHANG:
                break
            time.sleep(0.01)
        return self.returncode


_SERVER: list[ForkServer] = []


def server() -> ForkServer:
    """This process's fork server (started on first use, restarted if it ended)."""
    if not _SERVER or not _SERVER[0].alive():
        _SERVER[:] = [ForkServer()]
    return _SERVER[0]


if __name__ == "__main__":
    raise SystemExit(serve())
