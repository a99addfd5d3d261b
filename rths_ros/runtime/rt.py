"""Optional real-time process setup: SCHED_FIFO priority (with one BLAS thread), CPU affinity, mlockall, gc freeze.

Each request is tried; if the OS refuses it (no CAP_SYS_NICE, container limits, ...) exactly one
warning naming everything that was refused is returned, and the run goes on without it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os

MCL_CURRENT = 1
MCL_FUTURE = 2


#: what this process's calls of :func:`apply_realtime` applied (SCHED_FIFO, affinity, mlockall, gc frozen), in order
_APPLIED: list[str] = []


def applied_settings() -> tuple[str, ...]:
    """The real-time settings this process got (a node writes them into OUT/timing/<node>.json)."""
    return tuple(_APPLIED)


_BLAS_LIMIT: list = []


def one_blas_thread() -> bool:
    """Limit this process's BLAS (OpenBLAS under numpy and scipy) to one thread; True once it is limited.

    A node's or a FACE point's matrices are small; extra BLAS threads only compete for the cores.  Under SCHED_FIFO
    they are a hazard: OpenBLAS's idle threads spin on this CPU (its yield is a few no-ops, not ``sched_yield``), so
    a FIFO process whose BLAS call handed work to a thread on the same CPU waits for it forever, and with
    ``realtime.cpu_affinity`` on one CPU the plant's ``expm`` at configure never returned (measured: the run stayed at
    "0/5 ready", the plant at 95 % of the CPU)."""
    if _BLAS_LIMIT:
        return True
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:     # pragma: no cover - in requirements/runtime.txt
        return False
    _BLAS_LIMIT.append(threadpool_limits(limits=1))
    return True


def fifo_priority(scenario, node_classes) -> int:
    """The SCHED_FIFO priority of a process of ``node_classes``: in realtime runs ``realtime.priority`` when one of
    them is on the loop's path, ``realtime.observer_priority`` when all are observers (recorder, supervisor, live
    view: their class sets ``observer``); 0 in lockstep."""
    if scenario.loop.mode != "realtime":
        return 0
    on_loop = not all(getattr(c, "observer", False) for c in node_classes)
    return int(scenario.realtime.priority if on_loop else scenario.realtime.observer_priority)


def batch_observer(scenario, node_classes) -> bool:
    """Whether a process of ``node_classes`` runs at SCHED_BATCH from START on: in lockstep runs with
    ``realtime.lockstep_observers_batch``, a process of observers only (recorder, supervisor, live view).  The
    loop's four processes pass the step along one after the other; at normal scheduling the observers' wake-ups (the
    recorder takes every loop message) preempted them.  A SCHED_BATCH thread does not preempt the running one when
    it wakes, and keeps its full share of the CPU.  SCHED_IDLE, tried first, was faster alone (1.98, 2.04, 1.94x
    against 1.78, 1.75, 1.74x) but starves the observers whenever anything else wants the CPU: beside other work
    the recorder fell so far behind that the loop's publishers ran out of history and the run aborted, and the
    supervisor's progress stood still for two minutes.  Not before START: an observer's checks at START (the
    guard's snapshot of the publishers) keep the timing they have at normal scheduling."""
    return (scenario.loop.mode == "lockstep" and scenario.realtime.lockstep_observers_batch
            and all(getattr(c, "observer", False) for c in node_classes))


#: whether this process goes to SCHED_BATCH at START (apply_realtime's ``batch_from_start``), and whether it has
_BATCH = {"requested": False, "entered": False}


def enter_batch() -> bool:
    """Every thread of this process (the scheduling policy is a thread's) to SCHED_BATCH, once, when
    :func:`apply_realtime` asked for it; threads started later inherit it.  A thread at SCHED_IDLE (a run started
    with ``chrt --idle``) stays there: batch would raise it to a normal share of the CPU.  True when it took effect
    now."""
    if not _BATCH["requested"] or _BATCH["entered"]:
        return False
    _BATCH["entered"] = True
    refused, moved, kept_idle = [], 0, 0
    for tid in os.listdir("/proc/self/task"):
        try:
            if os.sched_getscheduler(int(tid)) == os.SCHED_IDLE:
                kept_idle += 1
                continue
            os.sched_setscheduler(int(tid), os.SCHED_BATCH, os.sched_param(0))
            moved += 1
        except ProcessLookupError:       # a thread that has ended since the listing
            pass
        except OSError as exc:
            refused.append(exc.strerror or str(exc))
    if refused:
        return False
    if moved:
        _APPLIED.append("SCHED_BATCH from START")
    if kept_idle:
        _APPLIED.append("SCHED_IDLE kept at START (below SCHED_BATCH)")
    return moved > 0


def apply_realtime(priority: int = 0, cpu_affinity: tuple[int, ...] = (), mlockall: bool = False,
                   gc_freeze: bool = True, batch_from_start: bool = False) -> tuple[list[str], str | None]:
    """Apply the requested settings (``batch_from_start``: :func:`enter_batch` at START takes effect).  Returns
    (applied, warning or None)."""
    applied: list[str] = []
    refused: list[str] = []
    if batch_from_start:        # (a later call without it, node_main's gc freeze, keeps the request)
        _BATCH["requested"] = True
    if priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))
            applied.append(f"SCHED_FIFO {priority}")
            if one_blas_thread():       # a FIFO process's BLAS threads could hang it (one_blas_thread says why)
                applied.append("one BLAS thread")
        except (PermissionError, OSError) as exc:
            refused.append(f"SCHED_FIFO priority {priority} ({exc.strerror or exc})")
    if cpu_affinity:
        try:
            os.sched_setaffinity(0, set(int(c) for c in cpu_affinity))
            applied.append(f"affinity {sorted(cpu_affinity)}")
        except (PermissionError, OSError, ValueError) as exc:
            refused.append(f"CPU affinity {list(cpu_affinity)} ({exc})")
    if mlockall:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.mlockall(MCL_CURRENT | MCL_FUTURE) == 0:
            applied.append("mlockall")
        else:
            refused.append(f"mlockall ({os.strerror(ctypes.get_errno())})")
    if gc_freeze:
        gc.collect()
        gc.freeze()
        applied.append("gc frozen")
    _APPLIED.extend(a for a in applied if a not in _APPLIED)
    warning = None
    if refused:
        warning = ("real-time setup not permitted by the OS, continuing without: " + "; ".join(refused)
                   + " (grant CAP_SYS_NICE / raise RLIMIT_RTPRIO and RLIMIT_MEMLOCK to enable)")
    return applied, warning
