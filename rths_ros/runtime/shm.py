"""Fast DDS's shared-memory files of participants that are gone.

Each DDS participant of Fast DDS's shared-memory transport owns one segment, ``/dev/shm/fastdds_<16 hex>``, and
holds an exclusive ``flock`` on its companion ``fastdds_<16 hex>_el`` for as long as it lives: it takes the lock
before it creates the segment, and deletes both when the participant is deleted.  A process that ends without
deleting its participant (a node whose DDS teardown hung and was ended by its watchdog, a killed process) leaves
both behind, 0.55 MB each time, and nothing removes them.

:func:`remove_dead_segments` removes exactly those: a segment whose lock file it can lock is one no living process
owns (the owner took the lock first, so a segment being created is never taken for dead).  The port segments
(``fastdds_port<N>``) are shared by the readers of a port; Fast DDS reclaims a dead one itself when a later
participant opens that port, so they are left alone.  Fast DDS 2 (ROS 2 Jazzy) names the same files
``fastrtps_<16 hex>`` and ``fastrtps_<16 hex>_el`` and locks them the same way.
"""
from __future__ import annotations

import fcntl
import os
import re

SHM_DIR = "/dev/shm"
_SEGMENT = re.compile(r"^fast(dds|rtps)_[0-9a-f]{16}$")


def remove_dead_segments(shm_dir: str = SHM_DIR) -> list[str]:
    """Delete every participant segment (and its lock file) that no living process holds; returns their names."""
    removed = []
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return removed
    for name in names:
        if not _SEGMENT.match(name) or f"{name}_el" not in names:
            continue
        lock = os.path.join(shm_dir, f"{name}_el")
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue                    # a living participant holds it
            for path in (os.path.join(shm_dir, name), lock):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
            removed.append(name)
        finally:
            os.close(fd)
    return removed


__all__ = ["remove_dead_segments", "SHM_DIR"]
