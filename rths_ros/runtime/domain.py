"""ROS domain ids for runs and rig sessions: one exclusive id per run, held by an flock'ed file for its lifetime.

Every run of ``rths run`` (and every rig session of ``rths commission`` / ``rths identify --ros2-control``) leases
its own id in 1..100 with localhost-only discovery, so parallel runs and tests never hear each other.  The lock
files live in the temporary directory, shared by all of them.
"""
from __future__ import annotations

import errno
import fcntl
import os
import random
import tempfile
from pathlib import Path

DOMAIN_RANGE = range(1, 101)
LOCK_DIR = Path(tempfile.gettempdir()) / "rths_ros_domains"


class DomainLease:
    """Exclusive ROS domain id: an flock'ed file per id, released on close.  ``error`` is the exception class
    raised when every id is taken (subclasses set their own)."""

    error: type[Exception] = RuntimeError

    def __init__(self, preferred: int | None = None):
        self._fd = None
        LOCK_DIR.mkdir(exist_ok=True)
        ids = list(DOMAIN_RANGE)
        random.shuffle(ids)
        if preferred is not None:
            ids = [preferred]
        for i in ids:
            fd = os.open(LOCK_DIR / f"{i}.lock", os.O_CREAT | os.O_RDWR, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EAGAIN, errno.EACCES):
                    continue
                raise
            self.domain_id, self._fd = i, fd
            return
        raise self.error(f"no free ROS domain id in {DOMAIN_RANGE.start}..{DOMAIN_RANGE.stop - 1} (too many runs at "
                         "once?)")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = ["DomainLease", "DOMAIN_RANGE", "LOCK_DIR"]
