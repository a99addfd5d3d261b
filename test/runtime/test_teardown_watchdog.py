"""A node whose teardown hangs in C while holding the GIL still exits within the stated bound
(rths_ros.runtime.teardown.TEARDOWN_S): faulthandler's C watchdog writes every thread's stack to the node's log and
exits 1, and the runner names the node.  A Python timer thread (the former bail-out) cannot run in that state."""
from __future__ import annotations

import threading
import time

from rths_ros.app import scenario as scn
from rths_ros.runner import run_scenario
from rths_ros.runtime.teardown import TEARDOWN_MARK, TEARDOWN_S, hang_in_c

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


def test_a_teardown_hung_in_c_is_ended_by_the_watchdog(tmp_path):
    s = scn.load("contact_1d", ["loop.duration_s=0.5", f"faults.teardown_hang_s={HANG_S:g}",
                                f"faults.teardown_hang_node={NODE}"])
    out = tmp_path / "run"
    lines = []
    r = run_scenario(s, out, progress=False, log=lines.append)
    # the runner names the node, from its exit code, without waiting for the hang or taking its stuck path
    assert r.code == 1 and r.failed_node == NODE, r.message
    assert f"{NODE}" in r.message and "exited with code 1" in r.message, r.message
    assert f"teardown did not finish within {TEARDOWN_S:g} s; its watchdog ended the process" in r.message, r.message
    assert "did not end within" not in r.message, r.message
    assert r.exit_codes[NODE] == 1
    assert all(c == 0 for n, c in r.exit_codes.items() if n != NODE), r.exit_codes
    assert r.wall_s < HANG_S
    # the log names the teardown and its bound, then faulthandler's dump with the Python stack of the hang
    log_path = out / "logs" / f"{NODE}.log"
    log = log_path.read_text()
    mark = log.index(f"{NODE}: {TEARDOWN_MARK} (result code 0)")
    assert f"does not finish within {TEARDOWN_S:g} s" in log[mark:]
    dump = log.index(f"Timeout (0:00:{TEARDOWN_S:02.0f})!")
    assert mark < dump
    stack = log[dump:]
    assert "Thread 0x" in stack and 'File "' in stack
    assert "in hang_in_c" in stack and "in teardown" in stack and "in node_main" in stack
    # within the bound: the dump (the log's last write, right before the exit) came TEARDOWN_S after the teardown
    # began (finalize wrote the timing file right after arming)
    began = (out / "timing" / f"{NODE}.json").stat().st_mtime
    took = log_path.stat().st_mtime - began
    assert TEARDOWN_S - 0.5 <= took <= TEARDOWN_S + 3.0, took
    # every other node tore down normally, under the same watchdog
    for other in r.exit_codes:
        if other != NODE:
            text = (out / "logs" / f"{other}.log").read_text()
            assert TEARDOWN_MARK in text and "Timeout (" not in text, other
