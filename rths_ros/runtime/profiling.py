"""A node process's spinning under cProfile, for finding where a step's time goes (docs/performance.md).

``RTHS_PROFILE_DIR=DIR rths run ...``: every node process (or the composed process) writes the statistics of its
spinning to ``DIR/<process>-<pid>.prof``; read them with ``python -m pstats FILE`` (``sort tottime``, ``stats
30``).  cProfile roughly doubles the Python part of a step, so the ratios between functions count, not the times.
Unset: nothing is profiled and nothing is written.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path


@contextlib.contextmanager
def profiled(prog: str):
    where = os.environ.get("RTHS_PROFILE_DIR")
    if not where:
        yield
        return
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        Path(where).mkdir(parents=True, exist_ok=True)
        prof.dump_stats(str(Path(where) / f"{prog}-{os.getpid()}.prof"))
