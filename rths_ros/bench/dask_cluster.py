"""A Dask cluster started from the command line, as a lab starts one on its machines: ``dask scheduler`` and
``dask worker`` processes, each its own command (docs/performance.md "FACE sweeps on a Dask cluster").

:class:`CommandLineCluster` starts the scheduler on a free port of 127.0.0.1 and adds workers one at a time
(``--nthreads 1``, no dashboard), each waited for until the scheduler lists it; leaving the ``with`` block stops
them all.  Every process starts with ``DASK_CONFIG`` naming ``config/dask`` (the settings of
``rths-sweeps.yaml``, as the recipe of docs/fidelity.md starts a lab's cluster).  ``rths bench`` runs the same FACE sweep on one worker, then on two (each after a short warm-up sweep:
a worker keeps numba's compiled kernels and the imported modules for every later task, as a long-running worker of
a lab's cluster does), and compares the points phase with the process pool's.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

#: the progress line of ``rths face`` when every point is done: "... N/N points done   T s"
_DONE = re.compile(r"(\d+)/(\d+) points done\s+([0-9.]+) s")


def points_phase_s(log_text: str) -> float | None:
    """The time ``rths face`` reported for running every point (its last progress line), None without one."""
    found = [m for m in _DONE.finditer(log_text) if m.group(1) == m.group(2)]
    return float(found[-1].group(3)) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_command(*args: str) -> list[str]:
    """``dask ARGS`` with this interpreter (the ``dask`` executable of the environment, as ``python -m dask``)."""
    return [sys.executable, "-m", "dask", *args]


class CommandLineCluster:
    """``dask scheduler`` plus ``dask worker`` processes on this machine; :attr:`address` is what
    ``rths face --cluster`` takes."""

    def __init__(self, log_dir: Path, timeout_s: float = 60.0):
        from rths_ros.resources import config_dir
        self.dask_config = config_dir() / "dask"
        self.log_dir = Path(log_dir)
        self.timeout_s = timeout_s
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.workers = 0

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_dir / f"{name}.log", "wb") as log:     # (the child keeps its own descriptor)
            p = subprocess.Popen(dask_command(*args), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=dict(os.environ, DASK_CONFIG=str(self.dask_config)))
        self.procs.append(p)
        return p

    def __enter__(self) -> CommandLineCluster:
        self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"])
        t_end = time.monotonic() + self.timeout_s
        while time.monotonic() < t_end:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                if self.procs[0].poll() is not None:
                    break
                time.sleep(0.2)
        self.close()
        raise RuntimeError(f"dask scheduler did not listen on {self.address} within {self.timeout_s:g} s "
                           f"(log: {self.log_dir / 'scheduler.log'})")

    def add_worker(self) -> int:
        """Start one more ``dask worker`` (one thread) and wait until the scheduler lists it; the worker count."""
        from distributed import Client
        self.workers += 1
        self._start(f"worker-{self.workers}", ["worker", self.address, "--nthreads", "1", "--no-dashboard",
                                               "--name", f"rths-bench-{self.workers}"])
        with Client(self.address, timeout=self.timeout_s) as client:
            client.wait_for_workers(self.workers, timeout=self.timeout_s)
        return self.workers

    def close(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()

    def __exit__(self, *exc) -> None:
        self.close()
