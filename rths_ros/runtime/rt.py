"""Optional real-time process setup: SCHED_FIFO priority, CPU affinity, mlockall, gc freeze.

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


def apply_realtime(priority: int = 0, cpu_affinity: tuple[int, ...] = (), mlockall: bool = False,
                   gc_freeze: bool = True) -> tuple[list[str], str | None]:
    """Apply the requested settings.  Returns (applied, warning or None)."""
    applied: list[str] = []
    refused: list[str] = []
    if priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))
            applied.append(f"SCHED_FIFO {priority}")
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
    warning = None
    if refused:
        warning = ("real-time setup not permitted by the OS, continuing without: " + "; ".join(refused)
                   + " (grant CAP_SYS_NICE / raise RLIMIT_RTPRIO and RLIMIT_MEMLOCK to enable)")
    return applied, warning
