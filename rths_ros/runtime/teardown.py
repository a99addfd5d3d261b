"""The end of a node process: persist, tear rclpy down, exit, all within a bound.

:func:`teardown` runs in :func:`rths_ros.runtime.node.node_main` after spinning ended (normal end, abort, signal,
error).  rclpy's teardown can hang in C while it holds the GIL (seen with the events executor and QoS event
handlers; once a node wrote its timing file and then did not exit for 42 s; and, rarely, a Fast DDS participant
that did not finish ``destroy_node`` in 10 s after a completed run), so a Python timer thread cannot bound it.
Two native timers need no GIL:

* right before the teardown the node prints ``<node>: teardown watchdog armed (result code N): ...`` to stderr
  (the node's log, OUT/logs/<node>.log, under ``rths run``);
* at TEARDOWN_S = 10 s after that line, faulthandler writes ``Timeout (0:00:10)!`` and the stack of every thread
  to the log (``faulthandler.dump_traceback_later``);
* EXIT_GRACE_S later a POSIX timer (``timer_create`` with ``SIGEV_THREAD``, whose thread calls libc ``_exit``)
  ends the process.  Its exit code says whether the node's files were written: 1 while ``finalize`` (timing
  file, bag, events) has not returned, and the node's own result code (0 done, 3 aborted, 4 time limit, 130/143
  signal) once it has: the line ``<node>: files written (result code N)`` marks that moment.  A hang in the DDS
  teardown after that line loses nothing, so it does not turn a good run into a failed one; the runner reports
  it as a warning (:func:`hang_notes`);
* the timers cover finalize, executor shutdown, destroy_node, rclpy.shutdown and the interpreter's own exit
  after node_main returns (they are never cancelled: node_main is a process entry point).  Where
  ``timer_create`` is missing, faulthandler itself exits 1 at the bound.

How the DDS entities end (``realtime.dds_teardown``):

* ``exit`` (the default): once the node's files are written, the reliable publishers may take up to
  SETTLE_S (0.25 s) in all to have their last samples acknowledged, the process deletes its own shared-memory files
  (:func:`rths_ros.runtime.shm.release_own_files`) and ends with ``os._exit``, without deleting a single DDS
  entity.  The peers of the run then never process the removal of a writer or reader: that processing is where
  Fast DDS 3.2 deadlocks (a receive thread holds the discovery mutex in ``PDP::removeWriterProxyData`` and waits
  for the timer thread, which waits for that mutex in the participant-announcement timer; docs/reliability.md).
  The price: a long-lived observer in the same domain (``ros2 node list`` through the daemon, a viewer) shows the
  run's nodes until their lease ends (Fast DDS's 20 s); a later run never sees them (a participant that is gone
  announces nothing).
* ``destroy``: every entity is deleted in a fixed order (:func:`release_dds`), then rclpy shuts down: observers
  see the nodes leave at once; the rare Fast DDS deadlock above is then bounded by the watchdog.

``faults.teardown_hang_s`` (with ``faults.teardown_hang_node``) injects such a hang: the node blocks in one C call
that keeps the GIL (ctypes.PyDLL) between finalize and the executor shutdown, where the DDS hangs were seen.
"""
from __future__ import annotations

import ctypes
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
#: the process exits this long after faulthandler's dump [s]
EXIT_GRACE_S = 0.5
#: bound on waiting for the acknowledgement of every reliable publisher's last samples before an exit without
#: DDS teardown [s]: a living reader acknowledges within a heartbeat period (20 ms, config/fastdds.xml); a reader
#: whose process ended first (without DDS teardown too) never does, and its writer would wait the whole bound
SETTLE_S = 0.25
#: the stderr line of a node that ends without DDS teardown
EXIT_MARK = "ends without DDS teardown"
#: the stderr line printed when finalize returned: a hang after it exits with the code it names
FILES_WRITTEN_MARK = "files written (result code "


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _ITimerSpec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _SigEvent(ctypes.Structure):
    """struct sigevent of Linux (64 bytes): value, signo, notify, then the SIGEV_THREAD function and attributes."""
    _fields_ = [("sigev_value", ctypes.c_void_p), ("sigev_signo", ctypes.c_int), ("sigev_notify", ctypes.c_int),
                ("function", ctypes.c_void_p), ("attributes", ctypes.c_void_p), ("pad", ctypes.c_int * 8)]


_SIGEV_THREAD = 2
_CLOCK_MONOTONIC = 1
_TIMER_ABSTIME = 1


class ExitTimer:
    """A POSIX timer whose expiry calls libc ``_exit(code)`` on a thread of its own: it ends the process at a
    monotonic deadline even while another thread holds the GIL in C.  :meth:`set_code` changes the code and keeps
    the deadline.  ``ok`` is False where ``timer_create`` is missing (then nothing is armed)."""

    def __init__(self, deadline_s: float, code: int):
        self.deadline_s = deadline_s
        self.code = int(code) & 0xFF
        self._libc = None
        self._timer = None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.timer_create.argtypes = [ctypes.c_int, ctypes.POINTER(_SigEvent), ctypes.POINTER(ctypes.c_void_p)]
            libc.timer_settime.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_ITimerSpec),
                                           ctypes.c_void_p]
            libc.timer_delete.argtypes = [ctypes.c_void_p]
            self._libc = libc
            self._arm()
        except (OSError, AttributeError):
            self._timer = None

    @property
    def ok(self) -> bool:
        return self._timer is not None

    def _arm(self) -> None:
        exit_fn = ctypes.cast(self._libc._exit, ctypes.c_void_p).value
        ev = _SigEvent(sigev_value=self.code, sigev_signo=0, sigev_notify=_SIGEV_THREAD, function=exit_fn)
        timer = ctypes.c_void_p()
        if self._libc.timer_create(_CLOCK_MONOTONIC, ctypes.byref(ev), ctypes.byref(timer)) != 0:
            raise OSError(ctypes.get_errno(), "timer_create")
        sec = int(self.deadline_s)
        when = _ITimerSpec(_Timespec(0, 0), _Timespec(sec, int((self.deadline_s - sec) * 1e9)))
        if self._libc.timer_settime(timer, _TIMER_ABSTIME, ctypes.byref(when), None) != 0:
            self._libc.timer_delete(timer)
            raise OSError(ctypes.get_errno(), "timer_settime")
        self._timer = timer

    def set_code(self, code: int) -> None:
        """Exit with ``code`` at the same deadline (a new timer is armed before the old one is deleted)."""
        if self._timer is None:
            return
        old, self.code = self._timer, int(code) & 0xFF
        try:
            self._arm()
        except OSError:
            self._timer = old
            return
        self._libc.timer_delete(old)


def arm_watchdog(names: str, code: int, bound_s: float = TEARDOWN_S) -> ExitTimer:
    """Bound the rest of the process's life by ``bound_s`` (+ EXIT_GRACE_S).  Past ``bound_s`` faulthandler writes
    every thread's stack to stderr; its header cannot be changed, so the line before says what it means.  The
    returned timer then exits with code 1 until :func:`files_written` names the node's own code."""
    import faulthandler
    print(f"{names}: {TEARDOWN_MARK} (result code {code}): a teardown that does not finish within {bound_s:g} s "
          "prints every thread's stack ('Timeout') and exits (1 before its files are written, else its result "
          "code)", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    timer = ExitTimer(time.monotonic() + bound_s + EXIT_GRACE_S, 1)
    faulthandler.dump_traceback_later(bound_s, exit=not timer.ok)
    return timer


def files_written(names: str, timer: ExitTimer, code: int) -> None:
    """The node's files are written: from now on a hang ends the process with ``code``, not 1."""
    timer.set_code(code)
    print(f"{names}: {FILES_WRITTEN_MARK}{code}); the rest of the teardown is bounded by the same watchdog",
          file=sys.stderr, flush=True)


def hang_in_log(text: str) -> tuple[bool, int | None] | None:
    """What a node log says about a teardown hang: None if the watchdog did not fire after the last armed line;
    else (files_written, code): whether the node had written its files and the result code it exited with
    (None if its files were not written: it exited 1)."""
    i = text.rfind(TEARDOWN_MARK)
    if i < 0:
        return None
    j = text.find(TIMEOUT_HEADER, i)
    if j < 0:
        return None
    k = text.find(FILES_WRITTEN_MARK, i, j)
    if k < 0:
        return False, None
    digits = text[k + len(FILES_WRITTEN_MARK):].split(")", 1)[0]
    return True, int(digits) if digits.lstrip("-").isdigit() else None


#: a node still running this long after its files were written and the run ended is looked at with gdb [s]
NATIVE_STACKS_AFTER_S = 5.0


def native_stacks(pid: int, path, timeout_s: float = 30.0) -> bool:
    """Write every native thread's backtrace of process ``pid`` to ``path`` (gdb in batch mode: the Python dump
    of the teardown watchdog shows the interpreter's threads only, not where in C++ the DDS teardown waits);
    False where gdb is missing or cannot attach."""
    import shutil
    import subprocess
    gdb = shutil.which("gdb")
    if gdb is None:
        return False
    try:
        r = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                            "-ex", "info threads", "-ex", "thread apply all bt"],
                           capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    with open(path, "w") as fh:
        fh.write(f"native stacks of pid {pid} (gdb -batch, thread apply all bt)\n{r.stdout}\n{r.stderr}")
    return r.returncode == 0 and "Thread" in r.stdout


def hang_in_c(seconds: float) -> None:
    """Block for ``seconds`` in one C call that keeps the GIL (ctypes.PyDLL does not release it), like an rclpy
    teardown stuck in C: no Python thread of the process runs meanwhile."""
    libc = ctypes.PyDLL(None, use_errno=True)
    req = _Timespec(int(seconds), int((seconds % 1.0) * 1e9))
    rem = _Timespec()
    while libc.nanosleep(ctypes.byref(req), ctypes.byref(rem)) != 0:   # interrupted by a signal: sleep the rest
        req = _Timespec(rem.tv_sec, rem.tv_nsec)


def release_dds(nodes: list, executor) -> None:
    """Give the DDS entities back in a fixed order, each step on its own: first every node leaves the executor
    (the events executor detaches its callbacks from each reader, writer, timer and event handler, so no DDS
    listener thread calls into it any more), then the executor shuts down, then each node's timers,
    subscriptions, publishers, services and clients are destroyed one by one, then a lifecycle node's state
    machine (rclpy's ``destroy_node`` leaves it, and it holds the node's handle: the node, and with it the
    process's DDS participant, stayed alive, so a process forked by ``rths run`` left its participant's
    shared-memory segment in /dev/shm on every run), and last the node itself.  A failure of one step does not
    skip the rest."""
    for n in nodes:
        try:
            executor.remove_node(n)
        except Exception:
            pass
    try:
        executor.shutdown(timeout_sec=1.0)
    except Exception:
        pass
    for n in nodes:
        for kind in ("timers", "subscriptions", "publishers", "services", "clients"):
            for entity in list(getattr(n, kind, ())):
                try:
                    getattr(n, f"destroy_{kind[:-1]}")(entity)
                except Exception:
                    pass
        machine = getattr(n, "_state_machine", None)     # a lifecycle node's: it holds the node's handle
        if machine is not None:
            try:
                machine.destroy_when_not_in_use()
            except Exception:
                pass
        try:
            n.destroy_node()
        except Exception:
            pass


def settle_publishers(nodes: list, bound_s: float = SETTLE_S) -> list[str]:
    """Wait (``bound_s`` in all) until every reliable reader has acknowledged each publisher's samples; returns
    the topics whose samples were not all acknowledged in time."""
    from rclpy.duration import Duration
    from rclpy.qos import ReliabilityPolicy
    late = []
    deadline = time.monotonic() + bound_s
    for n in nodes:
        for pub in list(getattr(n, "publishers", ())):
            try:
                if pub.qos_profile.reliability != ReliabilityPolicy.RELIABLE:
                    continue
                left = max(deadline - time.monotonic(), 0.0)
                if not pub.wait_for_all_acked(Duration(nanoseconds=int(left * 1e9))):
                    late.append(pub.topic_name)
            except Exception:
                continue
    return late


def exit_without_dds_teardown(names: str, nodes: list, code: int) -> None:
    """End the process now with ``code``, its DDS entities left undeleted (module doc, ``exit``): the last samples
    acknowledged (bounded), the process's own shared-memory files deleted, output flushed."""
    import os

    from rths_ros.runtime.shm import release_own_files
    late = settle_publishers(nodes)
    removed = release_own_files()
    msg = f"{names}: {EXIT_MARK} (result code {code}; its own shared-memory segment and ports removed: {len(removed)}"
    if late:
        msg += (f"; not acknowledged within {SETTLE_S:g} s by every reader, some of which may have ended first: "
                f"{', '.join(sorted(set(late)))}")
    print(msg + ")", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(int(code) & 0xFF)


def teardown(prog: str, nodes: list, executor, faults, code: int, dds_teardown: str = "exit") -> int:
    """Finalize every node, then end the DDS side (``dds_teardown``: ``exit`` ends the process here without
    deleting an entity, ``destroy`` shuts the executor, the nodes and rclpy down), under the watchdog; returns
    the code (1 if a finalize failed and the code was 0) when the process goes on."""
    t0 = time.monotonic()
    roles = [n.role for n in nodes]
    names = ", ".join(roles) or prog
    timer = arm_watchdog(names, code)
    finalized = True
    for n in nodes:
        try:
            n.finalize()
        except Exception:
            traceback.print_exc()
            code = code or 1
            finalized = False
        if n.abort_reason:
            print(f"{n.role}: {n.abort_reason}", file=sys.stderr)
    sys.stdout.flush()
    if finalized:      # a failed finalize keeps the hang exit at 1: its files may be incomplete
        files_written(names, timer, code)
    if faults.teardown_hang_s > 0 and (not faults.teardown_hang_node or faults.teardown_hang_node in roles):
        print(f"{prog}: faults.teardown_hang_s: blocking {faults.teardown_hang_s:g} s in C, holding the GIL",
              file=sys.stderr, flush=True)
        hang_in_c(faults.teardown_hang_s)
    if dds_teardown == "exit" and nodes:
        exit_without_dds_teardown(names, nodes, code)
    release_dds(nodes, executor)
    if rclpy.ok():
        rclpy.shutdown()
    took = time.monotonic() - t0
    if took > TEARDOWN_SLOW_S:
        print(f"{prog}: teardown took {took:.1f} s (watchdog at {TEARDOWN_S:g} s)", file=sys.stderr, flush=True)
    return code
