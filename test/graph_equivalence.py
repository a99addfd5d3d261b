"""Shared check of the 1-D loop's scenarios (the contact-test variants and the single-actuator rigs): a lockstep
graph run reproduces the in-process virtual run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from rths_ros.analysis.run_analysis import record_from_bag
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual


def assert_graph_matches_virtual(bag: Path, name: str, rtol: float = 1e-9, overrides: list[str] | None = None):
    """Read the bag, compare every interface channel with the virtual run of the same scenario (``name`` with
    ``overrides``; relative to each channel's peak), and return (record, scenario, virtual record)."""
    rec, s, _ = record_from_bag(bag)
    expected = scn.load(name, overrides or [])
    # `rths run --set` notes the overrides in the description; everything else is the scenario as loaded
    assert scn.replace(s, description=expected.description) == expected
    assert rec["missing_samples"] == {"cmd": 0, "state": 0, "force": 0, "legs": 0, "wrench": 0}
    v = run_virtual(s)
    assert not v["aborted"], v["abort_reason"]
    assert rec["k"].size == v["k"].size == s.steps + 1
    for key in ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas"):
        a, b = rec[key], v[key]
        scale = max(np.max(np.abs(b)), 1e-12)
        err = np.max(np.abs(a - b)) / scale
        assert err < rtol, f"{key}: relative deviation {err:.3g}"
    assert np.array_equal(rec["contact"], v["contact"])
    return rec, s, v


def run_scenario(name: str, out: Path, *sets: str, composed: bool = False,
                 codes: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    """`rths run NAME --out OUT [--composed] [--set ...]` as a subprocess; asserts that it exits with one of
    ``codes`` (0; a realtime run through separate processes may also end incomplete, 3: steps missing from its
    record)."""
    root = Path(__file__).resolve().parents[1]
    cmd = [sys.executable, "-m", "rths_ros.cli", "run", name, "--out", str(out)] + (["--composed"] if composed else [])
    for o in sets:
        cmd += ["--set", o]
    p = run_or_dump_stacks(cmd, out, cwd=root)
    assert p.returncode in codes, p.stdout + p.stderr
    return p


#: below pytest's limit of a test (300 s), so that a hung run is diagnosed here rather than cut by pytest-timeout
HUNG_RUN_S = 240.0


def run_or_dump_stacks(cmd: list[str], out: Path, cwd: Path, timeout_s: float = HUNG_RUN_S) -> subprocess.CompletedProcess:
    """``rths run`` as a subprocess, its output captured.  A run that has not ended within ``timeout_s`` is asked for
    the Python stacks of every thread of the runner and of each node process (``kill -USR1``, docs/reliability.md),
    then stopped with its process group, and the test fails with the stacks and the end of every node's log."""
    import os
    import signal
    import time

    from rths_ros.runtime.processes import node_pids
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(cwd),
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
        return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        pids = [proc.pid, *node_pids(str(out))]
        for pid in pids:
            try:
                os.kill(pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass
        time.sleep(2.0)
        os.killpg(proc.pid, signal.SIGKILL)
        for pid in pids[1:]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        stdout, stderr = proc.communicate()
        logs = "\n".join(f"--- {log.name}, last 60 lines:\n" + "\n".join(log.read_text(errors="replace").splitlines()[-60:])
                         for log in sorted((Path(out) / "logs").glob("*.log")))
        raise AssertionError(f"the run did not end within {timeout_s:g} s: {' '.join(cmd)}\n--- the runner's output "
                             f"and its stacks:\n{stdout[-3000:]}\n{stderr[-12000:]}\n{logs}") from None
