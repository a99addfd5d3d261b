"""One `rths run` for every test of a test session that looks at the same run.

A lockstep run is deterministic: the same scenario with the same overrides and the same process layout gives the
same bag and metrics, so the tests that only read a run's directory (its bag, metrics.json, report, timing) may all
read the one the first of them made, instead of each starting the same ROS graph again.  The runs live in the
directory named by ``RTHS_SHARED_RUNS``: ``scripts/run_tests.sh`` sets it for all its tiers, and test/conftest.py
sets it for a pytest session started by hand (its xdist workers inherit it).  A file lock per run makes the first
caller run it and the others wait for it, across xdist workers and tiers.

A test that changes what it reads (cuts a bag, analyses into the run directory) copies the run first
(:func:`copy_run`): the shared directory is never written after its run.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = "RTHS_SHARED_RUNS"


@dataclass(frozen=True)
class SharedRun:
    out: Path               #: the run directory (read only)
    returncode: int
    stdout: str
    stderr: str


def _base() -> Path:
    base = os.environ.get(ENV)
    if not base:            # a module imported outside a pytest session (conftest.py sets it in every session)
        base = os.environ[ENV] = tempfile.mkdtemp(prefix="rths-shared-runs-")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def shared_run(name: str, *sets: str, composed: bool = False, args: tuple[str, ...] = (),
               codes: tuple[int, ...] = (0,), timeout: float = 900) -> SharedRun:
    """`rths run NAME [--composed] [ARGS] --set SETS...` once per test session; every later call with the same
    arguments returns the same run.  Asserts that it exited with one of ``codes``."""
    cmd = ["run", name, *(["--composed"] if composed else []), *args]
    for s in sets:
        cmd += ["--set", s]
    key = hashlib.sha1(json.dumps(cmd).encode()).hexdigest()[:16]
    home = _base() / f"{Path(name).name}-{key}"          # (a scenario given as a file: its name, not its path)
    home.mkdir(exist_ok=True)
    result = home / "result.json"
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            earlier = json.loads(result.read_text()) if result.exists() else None
            # a run that ended with a code its caller does not accept is run once more for the next caller (a
            # rerun of a failed test must not read the same failed run again); a second such end is the answer
            if earlier is None or (earlier["returncode"] not in codes and earlier.get("attempts", 1) < 2):
                out = home / "run"
                if out.exists():            # an earlier attempt that did not finish
                    shutil.rmtree(out)
                env = dict(os.environ)
                env.pop("ROS_DOMAIN_ID", None)
                p = subprocess.run([sys.executable, "-m", "rths_ros.cli", *cmd, "--out", str(out)],
                                   capture_output=True, text=True, timeout=timeout, cwd=str(ROOT), env=env,
                                   stdin=subprocess.DEVNULL)
                attempts = 1 if earlier is None else earlier.get("attempts", 1) + 1
                result.write_text(json.dumps({"cmd": cmd, "returncode": p.returncode, "stdout": p.stdout,
                                              "stderr": p.stderr, "attempts": attempts}))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    r = json.loads(result.read_text())
    run = SharedRun(home / "run", r["returncode"], r["stdout"], r["stderr"])
    assert run.returncode in codes, f"rths {' '.join(cmd)} exited {run.returncode}:\n{run.stdout}\n{run.stderr}"
    return run


def copy_run(run: SharedRun | Path, dest: Path) -> Path:
    """A copy of a shared run's directory to change."""
    shutil.copytree(run.out if isinstance(run, SharedRun) else run, dest)
    return dest
