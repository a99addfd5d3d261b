"""A bug in a node: an uncaught error in a callback aborts the run with its text instead of killing the loop.

The process's spin loop (:func:`rths_ros.runtime.node.spin_nodes`) catches the error, the crashed node (or, if it
cannot, another node of the process) sends one ABORT ``<node>: uncaught <Error>: <text>``, and the spinning goes on,
so that the plant, when it shares the process (composed), still ramps to its safe pose; the process then exits 1.
"""
from __future__ import annotations

import signal

from rths_ros.msg import TestEvent


def stacks_on_sigusr1() -> None:
    """``kill -USR1 PID``: this process prints the Python stack of every thread to its standard error (a node
    process: its log) and goes on.  Where a run or a node that seems stuck is waiting (docs/reliability.md); a node
    process forked from ``rths run`` has it from the runner."""
    import faulthandler
    faulthandler.register(signal.SIGUSR1, all_threads=True)


def abort_on_crash(nodes: list, prog: str, exc: BaseException) -> None:
    """A node process that ends on an uncaught exception first aborts the run with it as the reason (the plant
    ramps to its safe pose, the run is reported aborted, naming the node and the error), unless the run is over."""
    live = [n for n in nodes if not n.done and not n.abort_reason and n.stop_step is None]
    if not live:
        return
    n = next((x for x in live if x.role == prog), live[0])     # the crashed node itself sends it, if it can
    reason = f"{prog}: uncaught {type(exc).__name__}: {exc}"
    try:
        n.abort_reason = reason
        n.get_logger().fatal(reason)
        n.emit(TestEvent.ABORT, n.progress_step(), reason)
    except Exception:      # the context may be gone already: the runner names the node from its exit code
        pass


def fail_if_injected(faults, role: str) -> None:
    """``faults.start_failure_node``: this node's process fails while its node is built (before READY), as a missing
    device or an unreadable file would; the runner and the launch then stop the others at once."""
    if faults.start_failure_node == role:
        raise RuntimeError(f"injected failure of {role} while it is built (faults.start_failure_node)")


class CallbackCrash(RuntimeError):
    """A callback raised; the run was aborted with its text and the nodes ended: the process exits 1."""


def node_of(exc: BaseException, nodes: list) -> str:
    """The role of the node whose method raised ``exc`` (innermost frame of one of ``nodes``), else the first's."""
    tb = exc.__traceback__
    role = None
    while tb is not None:
        for obj in tb.tb_frame.f_locals.values():       # (innermost wins: a callback inside another's publish)
            if any(obj is n for n in nodes):
                role = obj.role
        tb = tb.tb_next
    return role or (nodes[0].role if nodes else "node")


__all__ = ["CallbackCrash", "abort_on_crash", "node_of"]
