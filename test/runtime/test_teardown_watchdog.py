"""A node whose teardown hangs in C while holding the GIL still exits within the stated bound
(rths_ros.runtime.teardown.TEARDOWN_S): faulthandler's C watchdog writes every thread's stack to the node's log and
a native timer ends the process: with exit 1 while its files are not written, with its own result code once they
are (the runner then reports a warning, not a failure).  A Python timer thread cannot run in that state."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rths_ros.app import scenario as scn
from rths_ros.runner import run_scenario
from rths_ros.runtime.teardown import FILES_WRITTEN_MARK, TEARDOWN_MARK, TEARDOWN_S, hang_in_c, hang_in_log

#: far longer than the bound: a run that waited for the hang to end would take this long
HANG_S = 60.0
NODE = "numerical_substructure"


def test_the_injected_hang_holds_the_gil():
    """The fault injection is honest: no other Python thread runs while hang_in_c blocks."""
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)
    t = threading.Thread(target=tick, daemon=True)
    t.start()
    time.sleep(0.1)
    t0 = time.monotonic()
    hang_in_c(0.5)
    t1 = time.monotonic()
    stop.set()
    t.join()
    assert t1 - t0 >= 0.5
    assert [x for x in ticks if t0 + 0.05 < x < t1 - 0.05] == []


def _hang_child(written_code: int | None, bound_s: float = 0.5) -> subprocess.CompletedProcess:
    """A process that arms the watchdog, optionally declares its files written with ``written_code``, then hangs
    in C holding the GIL for far longer than the bound."""
    code = textwrap.dedent(f"""
        from rths_ros.runtime.teardown import arm_watchdog, files_written, hang_in_c
        timer = arm_watchdog("child", 0, bound_s={bound_s})
        assert timer.ok
        if {written_code!r} is not None:
            files_written("child", timer, {written_code!r})
        hang_in_c(30.0)
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20)


@pytest.mark.parametrize("written_code, expected", [(None, 1), (0, 0), (3, 3)])
def test_the_watchdog_exit_code_says_whether_the_files_were_written(written_code, expected):
    t0 = time.monotonic()
    p = _hang_child(written_code)
    took = time.monotonic() - t0
    assert p.returncode == expected, p.stderr
    assert took < 10.0, took           # ended at the bound (0.5 s + grace), not after the 30 s hang
    assert "Timeout (" in p.stderr and "in hang_in_c" in p.stderr, p.stderr
    hang = hang_in_log(p.stderr)
    assert hang == ((False, None) if written_code is None else (True, written_code)), p.stderr


def test_a_log_without_a_dump_after_the_armed_line_is_no_hang():
    assert hang_in_log("") is None
    assert hang_in_log(f"x: {TEARDOWN_MARK} (result code 0): ...\nx: {FILES_WRITTEN_MARK}0); ...\n") is None
    # a dump before the last armed line belongs to an earlier life of the log, not to this teardown
    assert hang_in_log(f"Timeout (0:00:10)!\nx: {TEARDOWN_MARK} (result code 0)\n") is None


def test_a_dds_teardown_hung_in_c_after_the_files_are_written_is_a_warning(tmp_path):
    """The injected hang sits where the real ones were seen: after finalize wrote the node's files, in the executor
    and DDS teardown.  The node ends within the bound with its own result code 0; the run stays a success, and
    the runner says what happened."""
    s = scn.load("contact_1d", ["loop.duration_s=0.5", f"faults.teardown_hang_s={HANG_S:g}",
                                f"faults.teardown_hang_node={NODE}"])
    out = tmp_path / "run"
    lines = []
    r = run_scenario(s, out, progress=False, log=lines.append)
    assert r.code == 0 and r.failed_node is None, r.message
    assert "did not end within" not in r.message, r.message
    assert r.exit_codes[NODE] == 0 and all(c == 0 for c in r.exit_codes.values()), r.exit_codes
    assert r.wall_s < HANG_S
    assert len(r.warnings) == 1, r.warnings
    assert r.warnings[0].startswith(f"{NODE}: teardown (DDS shutdown) did not finish within {TEARDOWN_S:g} s after "
                                    "its files were written; its watchdog ended the process with its result code 0")
    events = json.loads((out / "events.json").read_text())
    assert events["status"] == "completed" and events["first_fault"] is None, events
    assert list(events["teardown_warnings"]) == [NODE]
    # the log names the teardown, its bound and the moment the files were written, then faulthandler's dump
    log_path = out / "logs" / f"{NODE}.log"
    log = log_path.read_text()
    mark = log.index(f"{NODE}: {TEARDOWN_MARK} (result code 0)")
    assert f"does not finish within {TEARDOWN_S:g} s" in log[mark:]
    written = log.index(f"{NODE}: {FILES_WRITTEN_MARK}0)")
    dump = log.index(f"Timeout (0:00:{TEARDOWN_S:02.0f})!")
    assert mark < written < dump
    stack = log[dump:]
    assert "Thread 0x" in stack and 'File "' in stack
    assert "in hang_in_c" in stack and "in teardown" in stack and "in node_main" in stack
    # within the bound: the dump came TEARDOWN_S after the teardown began (finalize wrote the timing file right
    # after arming); the process ended right after it
    began = (out / "timing" / f"{NODE}.json").stat().st_mtime
    took = log_path.stat().st_mtime - began
    assert TEARDOWN_S - 0.5 <= took <= TEARDOWN_S + 3.0, took
    # the runner kept the hung process's native stacks before its watchdog ended it: the thread that holds the
    # GIL sits in the C call (nanosleep), which Python's dump cannot show
    native = (out / "logs" / f"{NODE}.native-stacks.txt")
    if shutil.which("gdb"):
        text = native.read_text()
        assert "Thread 1" in text and "nanosleep" in text, text[-3000:]
    # the hung process never deleted its DDS participant: the runner removed the segment it left in /dev/shm
    assert "shared-memory segment(s) of DDS participants that had ended without deleting them" in r.message, \
        r.message
    # every other node tore down normally, under the same watchdog
    for other in r.exit_codes:
        if other != NODE:
            text = (out / "logs" / f"{other}.log").read_text()
            assert TEARDOWN_MARK in text and FILES_WRITTEN_MARK in text and "Timeout (" not in text, other
