"""The node processes of a run, found on the process table (Linux ``/proc``).

A run's node processes are started as ``python -m rths_ros.nodes.<node> ... --out DIR`` (or
``rths_ros.nodes.composed --nodes a,b,c``, or forked with that command line as its title) by ``rths run``, and as the installed executables
``lib/rths_ros/<node>`` (``lib/rths_ros/composed --nodes a,b,c``) by ``ros2 launch`` and ``ros2 run``, so
the run's output directory on their command line tells which run they belong to.  The runner and the tests use :func:`node_pids` (find a node to stop or kill),
the plant's process watch uses :class:`ProcessWatch` (notice that a node no watchdog covers has died).
"""
from __future__ import annotations

import os
import shlex

from rths_ros.app.scenario import KNOWN_NODES

__all__ = ["node_processes", "node_pids", "process_ended", "ProcessWatch"]


def _cmdline(pid: int) -> list[str]:
    """The command line of ``pid``.  A node process forked by the runner (rths_ros.runtime.forked) carries its
    ``python -m`` command line as its title: one shell-quoted string, split here into its arguments."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []
    if len(argv) == 1 and " -m " in argv[0]:
        try:
            return shlex.split(argv[0])
        except ValueError:
            return argv
    return argv


def _entry_point(argv: list[str]) -> str | None:
    """'sim_plant' or 'composed' for ``python -m rths_ros.nodes.sim_plant`` or an installed executable
    ``.../lib/rths_ros/sim_plant`` (run directly or through its interpreter); None for anything else."""
    if "-m" in argv:
        i = argv.index("-m")
        module = argv[i + 1] if i + 1 < len(argv) else ""
        return module.rsplit(".", 1)[1] if module.startswith("rths_ros.nodes.") else None
    for arg in argv[:2]:
        head, _, name = arg.rpartition("/")
        if head.endswith("/lib/rths_ros") and (name in KNOWN_NODES or name == "composed"):
            return name
    return None


def _node_names(argv: list[str]) -> tuple[str, ...]:
    """Node names of a node process (see :func:`_entry_point`); the composed process lists its nodes
    after ``--nodes a,b,c``; () for anything else."""
    entry = _entry_point(argv)
    if entry is None:
        return ()
    if entry == "composed":
        if "--nodes" in argv and argv.index("--nodes") + 1 < len(argv):
            return tuple(n for n in argv[argv.index("--nodes") + 1].split(",") if n)
        return ()
    return (entry,)


def _out_dir(argv: list[str]) -> str | None:
    if "--out" in argv and argv.index("--out") + 1 < len(argv):
        return argv[argv.index("--out") + 1]
    return None


def node_processes(exclude_pid: int | None = None) -> list[tuple[int, tuple[str, ...], str | None]]:
    """Every rths_ros node process on this machine: (pid, node names, output directory or None)."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for d in entries:
        if not d.isdigit() or int(d) == exclude_pid:
            continue
        argv = _cmdline(int(d))
        names = _node_names(argv)
        if names:
            out.append((int(d), names, _out_dir(argv)))
    return out


def node_pids(marker: str, node: str | None = None) -> list[int]:
    """PIDs of the node processes whose output directory contains ``marker`` (e.g. a run's output
    directory) and, if given, that run the node ``node``."""
    return sorted(pid for pid, names, out in node_processes()
                  if out is not None and marker in out and (node is None or node in names))


def _netns(pid: int) -> str:
    """The network namespace of a process ('' if unknown)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


def process_ended(pid: int) -> bool:
    """True once the process is gone or a zombie (it died; its parent has not collected it yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return True
    state = stat[stat.rfind(b")") + 2:][:1]
    return state in (b"Z", b"X")


class ProcessWatch:
    """The node processes of one run, and which of them ended.

    The watchdogs of the fast-path nodes notice when a producer of a fast-path topic falls silent, but only
    once it has sent a first message in the trial; a process can also die before that, or produce no fast-path
    topic at all (the recorder, the supervisor, the ILC learner), so :meth:`first_ended` reports any watched
    process that ended.  Processes whose nodes are all in ``loop_nodes`` (the caller's exclusions, e.g. a
    viewer) are not watched.  ``marker`` is the run's output directory exactly as on the command lines;
    ``own_pid`` (this process) is never watched."""

    def __init__(self, marker: str, loop_nodes, own_pid: int | None = None):
        self.marker = str(marker)
        self.loop_nodes = frozenset(loop_nodes)
        self.own_pid = os.getpid() if own_pid is None else int(own_pid)
        self.watched: dict[int, tuple[str, ...]] = {}

    def discover(self) -> dict[int, tuple[str, ...]]:
        """Find the run's node processes (pid -> node names) and keep those to watch: those of this host only (a
        process in another network namespace is the other computer's of a run split over two hosts, which a real
        computer could not see either; rths_ros.runtime.two_hosts)."""
        here = _netns(self.own_pid)
        self.watched = {pid: names for pid, names, out in node_processes(exclude_pid=self.own_pid)
                        if out == self.marker and not set(names) <= self.loop_nodes and _netns(pid) == here}
        return self.watched

    def first_ended(self) -> tuple[int, tuple[str, ...]] | None:
        """(pid, node names) of a watched process that ended, else None."""
        for pid, names in self.watched.items():
            if process_ended(pid):
                return pid, names
        return None
