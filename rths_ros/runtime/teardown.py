"""The end of a node process: persist, tear rclpy down, exit, all within a bound.

:func:`teardown` runs in :func:`rths_ros.runtime.node.node_main` after spinning ended (normal end, abort, signal,
error).  rclpy's teardown can hang in C while it holds the GIL (seen with the events executor and QoS event
handlers; once a node wrote its timing file and then did not exit for 42 s), so a Python timer thread cannot bound
it.  faulthandler's watchdog is a C thread that needs no GIL:

* right before the teardown the node prints ``<node>: teardown watchdog armed (result code N): ...`` to stderr
  (the node's log, OUT/logs/<node>.log, under ``rths run``) and arms
  ``faulthandler.dump_traceback_later(TEARDOWN_S, exit=True)``;
* the watchdog covers finalize (timing file, bag, events), executor shutdown, destroy_node, rclpy.shutdown and the
  interpreter's own exit after node_main returns (it is never cancelled: node_main is a process entry point);
* a process still alive TEARDOWN_S = 10 s after that line writes ``Timeout (0:00:10)!`` and the stack of every
  thread to its log and exits with code 1.  The runner then sees exit code 1: the node's own result code (0 done,
  3 aborted, 4 time limit, 130/143 signal) is lost to it, but the armed line and OUT/timing/<node>.json
  ("exit_code") keep it.

``faults.teardown_hang_s`` (with ``faults.teardown_hang_node``) injects such a hang: the node blocks in one C call
that keeps the GIL (ctypes.PyDLL) between finalize and the executor shutdown.
"""
from __future__ import annotations

import sys
import time
import traceback

import rclpy

#: bound on a node process's teardown [s] (module doc)
TEARDOWN_S = 10.0
#: the stderr line printed right before the teardown; "Timeout (0:00:10)!" and the stacks follow it in the log if
#: the teardown did not finish within TEARDOWN_S (rths stress looks for both)
TEARDOWN_MARK = "teardown watchdog armed"
#: faulthandler's header of a dump on its timeout
TIMEOUT_HEADER = "Timeout ("
#: a teardown slower than this (but within the bound) is reported in the log [s]
TEARDOWN_SLOW_S = 2.0


def arm_watchdog(names: str, code: int, bound_s: float = TEARDOWN_S) -> None:
    """Bound the rest of the process's life by ``bound_s``.  Past it faulthandler writes every thread's stack to
    stderr and exits with code 1; its header cannot be changed, so the line before says what it means."""
    import faulthandler
    print(f"{names}: {TEARDOWN_MARK} (result code {code}): a teardown that does not finish within {bound_s:g} s "
          "prints every thread's stack ('Timeout') and exits 1", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    faulthandler.dump_traceback_later(bound_s, exit=True)


def hang_in_c(seconds: float) -> None:
    """Block for ``seconds`` in one C call that keeps the GIL (ctypes.PyDLL does not release it), like an rclpy
    teardown stuck in C: no Python thread of the process runs meanwhile."""
    import ctypes

    class _Timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]
    libc = ctypes.PyDLL(None, use_errno=True)
    req = _Timespec(int(seconds), int((seconds % 1.0) * 1e9))
    rem = _Timespec()
    while libc.nanosleep(ctypes.byref(req), ctypes.byref(rem)) != 0:   # interrupted by a signal: sleep the rest
        req = _Timespec(rem.tv_sec, rem.tv_nsec)


def teardown(prog: str, nodes: list, executor, faults, code: int) -> int:
    """Finalize every node, shut the executor, the nodes and rclpy down, under the watchdog; returns the code
    (1 if a finalize failed and the code was 0)."""
    t0 = time.monotonic()
    roles = [n.role for n in nodes]
    arm_watchdog(", ".join(roles) or prog, code)
    for n in nodes:
        try:
            n.finalize()
        except Exception:
            traceback.print_exc()
            code = code or 1
        if n.abort_reason:
            print(f"{n.role}: {n.abort_reason}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    if faults.teardown_hang_s > 0 and (not faults.teardown_hang_node or faults.teardown_hang_node in roles):
        print(f"{prog}: faults.teardown_hang_s: blocking {faults.teardown_hang_s:g} s in C, holding the GIL",
              file=sys.stderr, flush=True)
        hang_in_c(faults.teardown_hang_s)
    try:
        executor.shutdown(timeout_sec=1.0)
    except Exception:
        pass
    for n in nodes:
        try:
            n.destroy_node()
        except Exception:
            pass
    if rclpy.ok():
        rclpy.shutdown()
    took = time.monotonic() - t0
    if took > TEARDOWN_SLOW_S:
        print(f"{prog}: teardown took {took:.1f} s (watchdog at {TEARDOWN_S:g} s)", file=sys.stderr, flush=True)
    return code
