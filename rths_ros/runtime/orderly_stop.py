"""SIGINT / SIGTERM to a node process: the orderly stop of a run (docs/reliability.md).

The first signal is an orderly stop: the node that sets the steps (the plant) sends ABORT "interrupted by SIG..."
at its exact step (any other node does so only if no ABORT or STOP has arrived a moment later, e.g. when the
plant's process is gone), the plant ramps to its
safe pose and reports SAFE, and every node ends by itself, within the bound ``node_main`` gives
(``safety.watchdog_s`` + 5 s + the ramp bound).  A second signal stops the process's nodes at once.  Signals
within :attr:`OrderlyStop.SAME_REQUEST_S` of the first are the same request.
"""
from __future__ import annotations

import signal
import time


class OrderlyStop:
    """SIGINT / SIGTERM to a node process: the first one is an orderly stop (the run aborts as "interrupted",
    the plant ramps to the safe pose, every node ends by itself, at most ``bound_s`` later); a second one
    stops the process's nodes at once."""

    #: a node that does not set the steps waits this long for the plant's ABORT before it sends its own (every
    #: node process gets the signal; one ABORT is enough)
    ABORT_WAIT_S = 1.0

    def __init__(self) -> None:
        self.signum: int | None = None
        self.count = 0
        self.at = 0.0
        self.handled = 0

    #: signals within this time of the first one are the same request: a terminal's Ctrl-C reaches the whole
    #: process group, and a non-interactive ``ros2 launch`` forwards its own SIGINT to every node as well
    SAME_REQUEST_S = 1.0

    def __call__(self, signum, _frame) -> None:      # the signal handler: flags only, the spin loop acts
        now = time.monotonic()
        if self.count and now - self.at < self.SAME_REQUEST_S:
            return
        self.signum = signum
        self.count += 1
        if self.count == 1:
            self.at = now

    def service(self, nodes: list, bound_s: float) -> None:
        """Act on a signal from the spin loop: ``nodes`` are the process's RthsNodes."""
        if self.signum is None:
            return
        name = signal.Signals(self.signum).name
        code = 130 if self.signum == signal.SIGINT else 143
        now = time.monotonic()
        if self.count > 1 or now - self.at > bound_s:
            for n in nodes:
                if not n.done:
                    n.abort_reason = n.abort_reason or f"stopped by signal {name}"
                    n.finish(code)
            return
        if self.handled == 0:
            self.handled = 1
            for n in nodes:
                n.request_stop(name, code, first=True)
        elif self.handled == 1 and now - self.at > self.ABORT_WAIT_S:
            self.handled = 2
            for n in nodes:
                n.request_stop(name, code, first=False)
