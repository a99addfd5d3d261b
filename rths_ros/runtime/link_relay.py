"""An emulated network link between two network namespaces: a TUN device in each, joined by this process.

Every IP packet that leaves one namespace through its TUN device is read here and written to the other
namespace's device after the configured one-way delay (``delay_ms`` plus a uniform jitter of ``+- jitter_ms``,
never less than zero, so packets may be reordered as on a real switched link with jitter), unless it is lost
(probability ``loss``) or the link is cut.  It is what ``tc netem`` does on a veth pair, in user space, for kernels
built without the netem queueing discipline (the development machine's is one of them).

Control while it runs: SIGUSR1 cuts the link (every packet in both directions is dropped, as a pulled cable),
SIGUSR2 restores it, SIGTERM ends the relay.  At the end it writes a JSON file of what it did: packets and bytes
per direction, drops by cause, the hold time of each forwarded packet (read to write, in ms: percentiles and
minimum) and the times of every cut and restore.

    python -m rths_ros.runtime.link_relay --side /run/netns/A:rthslink --side /run/netns/B:rthslink \\
        --delay-ms 0.2 --jitter-ms 0.1 --loss 0.02 --stats link.json

It prints ``ready`` on stdout once both devices exist (their addresses are set by the caller,
:class:`rths_ros.runtime.two_hosts.TwoHosts`).
"""
from __future__ import annotations

import argparse
import array
import ctypes
import fcntl
import heapq
import json
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000
PR_SET_TIMERSLACK = 29
#: packets read from one device per wake-up before the other is served
BURST = 64


def setns(path: str) -> None:
    """Move the calling thread into the network namespace at ``path`` (e.g. /run/netns/NAME)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


def open_tun(name: str) -> int:
    """Create (or attach to) the TUN device ``name`` in the calling thread's network namespace."""
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    ifr = struct.pack("16sH22x", name.encode(), IFF_TUN | IFF_NO_PI)
    try:
        fcntl.ioctl(fd, TUNSETIFF, ifr)
    except OSError:
        os.close(fd)
        raise
    return fd


class Relay:
    """The link's state: two device descriptors, the packets in flight, the counters."""

    def __init__(self, fds: tuple[int, int], delay_ms: float, jitter_ms: float, loss: float, seed: int = 0):
        self.fds = fds
        self.delay_s, self.jitter_s, self.loss = delay_ms * 1e-3, jitter_ms * 1e-3, loss
        self.rng = random.Random(seed)
        self.cut = False
        self.running = True
        self.heap: list = []            # (due, seq, direction, read_time, packet)
        self.seq = 0
        self.counts = [dict(packets=0, bytes=0, forwarded=0, lost=0, cut=0, failed=0) for _ in fds]
        self.holds = [array.array("d") for _ in fds]
        self.cuts: list[dict] = []

    def set_cut(self, on: bool) -> None:
        if on != self.cut:
            self.cut = on
            self.cuts.append({"cut": on, "monotonic_s": time.monotonic(), "time": time.time()})

    def _take(self, direction: int, now: float) -> None:
        fd = self.fds[direction]
        c = self.counts[direction]
        for _ in range(BURST):
            try:
                pkt = os.read(fd, 65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            c["packets"] += 1
            c["bytes"] += len(pkt)
            if self.cut:
                c["cut"] += 1
                continue
            if self.loss > 0 and self.rng.random() < self.loss:
                c["lost"] += 1
                continue
            hold = self.delay_s + (self.rng.uniform(-self.jitter_s, self.jitter_s) if self.jitter_s > 0 else 0.0)
            self.seq += 1
            heapq.heappush(self.heap, (now + max(0.0, hold), self.seq, direction, now, pkt))

    def _send_due(self) -> None:
        now = time.monotonic()
        while self.heap and self.heap[0][0] <= now:
            _, _, direction, t_read, pkt = heapq.heappop(self.heap)
            if self.cut:            # a packet in flight when the cable is pulled is gone too
                self.counts[direction]["cut"] += 1
                continue
            try:
                os.write(self.fds[1 - direction], pkt)
            except OSError:         # the device went down (the end of the run)
                self.counts[direction]["failed"] += 1
                continue
            self.counts[direction]["forwarded"] += 1
            self.holds[direction].append((time.monotonic() - t_read) * 1e3)

    def run(self) -> None:
        fds = list(self.fds)
        while self.running:
            timeout = 0.2
            if self.heap:
                timeout = max(0.0, self.heap[0][0] - time.monotonic())
            try:
                ready, _, _ = select.select(fds, [], [], timeout)
            except InterruptedError:
                continue
            now = time.monotonic()
            for fd in ready:
                self._take(self.fds.index(fd), now)
            self._send_due()

    def summary(self) -> dict:
        out = {"delay_ms": self.delay_s * 1e3, "jitter_ms": self.jitter_s * 1e3, "loss": self.loss, "cuts": self.cuts,
               "directions": []}
        for c, holds in zip(self.counts, self.holds):
            d = dict(c)
            if len(holds):
                h = sorted(holds)
                d["hold_ms"] = {"min": h[0], "p50": h[len(h) // 2], "p99": h[min(len(h) - 1, int(0.99 * len(h)))],
                                "max": h[-1], "mean": sum(h) / len(h)}
            out["directions"].append(d)
        return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rths_ros.runtime.link_relay", description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", action="append", required=True, help="NETNS_PATH:DEVICE (twice: the two ends)")
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--jitter-ms", type=float, default=0.0)
    ap.add_argument("--loss", type=float, default=0.0, help="probability that a packet is lost (0..1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", help="JSON file written at the end")
    a = ap.parse_args(argv)
    if len(a.side) != 2:
        ap.error("--side must be given twice")
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    fds = []
    for spec in a.side:
        path, _, dev = spec.rpartition(":")
        setns(path)
        fds.append(open_tun(dev))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(home, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns back")
    libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)     # sub-millisecond holds: wake as close to the due time as it can
    relay = Relay((fds[0], fds[1]), a.delay_ms, a.jitter_ms, a.loss, a.seed)

    def _stop(*_):
        relay.running = False

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGUSR1, lambda *_: relay.set_cut(True))
    signal.signal(signal.SIGUSR2, lambda *_: relay.set_cut(False))
    print("ready", flush=True)
    try:
        relay.run()
    finally:
        if a.stats:
            tmp = a.stats + ".tmp"
            with open(tmp, "w") as fh:
                json.dump(relay.summary(), fh, indent=1)
            os.replace(tmp, a.stats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
