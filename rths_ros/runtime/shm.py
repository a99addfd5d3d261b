"""Fast DDS's shared-memory files of participants that are gone.

Each DDS participant of Fast DDS's shared-memory transport owns one segment, ``/dev/shm/fastdds_<16 hex>``, and
holds an exclusive ``flock`` on its companion ``fastdds_<16 hex>_el`` for as long as it lives: it takes the lock
before it creates the segment, and deletes both when the participant is deleted.  A process that ends without
deleting its participant (a node whose DDS teardown hung and was ended by its watchdog, a killed process) leaves
both behind, 0.55 MB each time, and nothing removes them.

:func:`remove_dead_segments` removes exactly those: a segment whose lock file it can lock is one no living process
owns (the owner took the lock first, so a segment being created is never taken for dead).  A run removes only the
segments of its own processes (:func:`segments_held_by`, read while they live): one left by another process on
the machine, e.g. by a run beside it, is not this run's to report.  The port segments
(``fastdds_port<N>``) are shared by the readers of a port; Fast DDS reclaims a dead one itself when a later
participant opens that port, so they are left alone.  Fast DDS 2 (ROS 2 Jazzy) names the same files
``fastrtps_<16 hex>`` and ``fastrtps_<16 hex>_el`` and locks them the same way.

:func:`release_own_files` is for a process that ends without deleting its participant on purpose (a node's exit
without DDS teardown, :mod:`rths_ros.runtime.teardown`): right before it ends, it deletes the files whose lock it
holds itself (its participant's segment and the two ports it listens on, ``fastdds_port<N>`` with ``_el`` and
``sem.fastdds_port<N>_mutex``), found by its own process id in ``/proc/locks``.  A file another process also
holds a lock on is left alone.
"""
from __future__ import annotations

import fcntl
import os
import re

SHM_DIR = "/dev/shm"
_SEGMENT = re.compile(r"^fast(dds|rtps)_[0-9a-f]{16}$")
_OWNED_LOCK = re.compile(r"^fast(dds|rtps)_(port\d{1,5}|[0-9a-f]{16})_el$")


def lock_holders(locks_text: str) -> dict[int, set[int]]:
    """Inode -> process ids holding a flock on it, from the text of ``/proc/locks``
    (``1: FLOCK  ADVISORY  WRITE 4242 00:1a:1234 0 EOF``; blocked waiters, ``->``, are not holders)."""
    holders: dict[int, set[int]] = {}
    for line in locks_text.splitlines():
        f = line.split()
        if len(f) < 6 or f[1] != "FLOCK" or not f[4].lstrip("-").isdigit():
            continue
        try:
            inode = int(f[5].rsplit(":", 1)[1])
        except (IndexError, ValueError):
            continue
        holders.setdefault(inode, set()).add(int(f[4]))
    return holders


def _lock_files(shm_dir: str, locks_path: str):
    """(segment or port name without ``_el``, the process ids holding a flock on its lock file) for every lock file
    of a participant's segment or a port in ``shm_dir``; nothing if /proc/locks or the directory cannot be read."""
    try:
        with open(locks_path) as fh:
            holders = lock_holders(fh.read())
        names = os.listdir(shm_dir)
    except OSError:
        return
    for name in names:
        if not _OWNED_LOCK.match(name):
            continue
        try:
            inode = os.stat(os.path.join(shm_dir, name)).st_ino
        except OSError:
            continue
        yield name[:-3], holders.get(inode, set())


def release_own_files(pid: int | None = None, shm_dir: str = SHM_DIR, locks_path: str = "/proc/locks") -> list[str]:
    """Delete the shared-memory files of the participant of process ``pid`` (default: this one): every
    ``fastdds_<16 hex>`` segment and ``fastdds_port<N>`` port whose ``_el`` lock only ``pid`` holds, with the
    lock file and a port's semaphore.  Returns the names of the segments and ports removed."""
    pid = os.getpid() if pid is None else pid
    removed = []
    for base, holders in _lock_files(shm_dir, locks_path):
        if holders != {pid}:
            continue
        files = [base, f"{base}_el"] + ([f"sem.{base}_mutex"] if "_port" in base else [])
        for f in files:
            try:
                os.unlink(os.path.join(shm_dir, f))
            except FileNotFoundError:
                pass
        removed.append(base)
    return sorted(removed)


def segments_held_by(pids, shm_dir: str = SHM_DIR, locks_path: str = "/proc/locks") -> set[str]:
    """The participant segments (``fastdds_<16 hex>``) whose lock file one of ``pids`` holds now: the segments of
    those processes' DDS participants."""
    pids = set(pids)
    return {base for base, holders in _lock_files(shm_dir, locks_path) if _SEGMENT.match(base) and holders & pids}


def remove_dead_segments(shm_dir: str = SHM_DIR, only=None) -> list[str]:
    """Delete every participant segment (and its lock file) that no living process holds; returns their names.
    ``only``: the names of the segments that may be removed (a run's own, :func:`segments_held_by` while its
    processes lived); the dead segments of other processes, e.g. of a run beside it, are left to their owners."""
    removed = []
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return removed
    for name in names:
        if not _SEGMENT.match(name) or f"{name}_el" not in names:
            continue
        if only is not None and name not in only:
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


__all__ = ["remove_dead_segments", "release_own_files", "lock_holders", "SHM_DIR"]
