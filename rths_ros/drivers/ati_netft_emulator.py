"""A small ATI Net F/T RDT server for tests and for running the driver chain without a sensor.

:class:`NetFtEmulator` listens on a UDP port (default: an ephemeral port on 127.0.0.1) in a background
thread and answers the RDT requests of :mod:`rths_ros.drivers.ati_netft`:

* ``0x0002`` start real-time streaming (one record per datagram), ``0x0003`` start buffered streaming
  (``buffer_records`` records per datagram), both with ``sample_count`` (0 = until stopped); the records are
  sent to the address the request came from, paced at ``rate_hz``; ``rdt_sequence`` restarts at 1 with each
  start request, ``ft_sequence`` counts the emulated internal samples since construction;
* ``0x0000`` stop streaming;
* ``0x0042`` software bias: the current wrench of the source becomes the zero.

The wrench comes from a callable ``source(ft_sequence) -> 6 numbers`` [N, N m] (e.g. the digital twin's
latest raw wrench), converted to counts with ``counts_per_force`` / ``counts_per_torque`` (rounded, saturated
to int32; a saturated channel sets status bit 0x1).

Faults for tests (seeded, reproducible): each datagram is dropped with probability ``drop_fraction``; a
datagram that is kept is, with probability ``reorder_fraction``, held back and sent right after the next one
(so it arrives out of order).  The rdt_sequence numbers of dropped and reordered records are kept in
``dropped`` and ``reordered``.  Requests with a wrong header are counted in ``bad_requests`` and ignored.
"""
from __future__ import annotations

import select
import time
from collections.abc import Callable, Sequence

import numpy as np

from rths_ros.drivers.ati_netft import (
    CMD_SET_BIAS,
    CMD_START_BUFFERED,
    CMD_START_REALTIME,
    CMD_STOP,
    RDT_HEADER,
    RECORD,
    REQUEST,
)
from rths_ros.drivers.udp_server import UdpServer

__all__ = ["NetFtEmulator"]

_I32 = 2**31 - 1


class NetFtEmulator(UdpServer):
    """RDT protocol emulator (see the module doc).  Use as a context manager or call :meth:`close`."""

    def __init__(self, source: Callable[[int], Sequence[float]], counts_per_force: float = 1.0e6,
                 counts_per_torque: float = 1.0e6, rate_hz: float = 1000.0, drop_fraction: float = 0.0,
                 reorder_fraction: float = 0.0, buffer_records: int = 4, seed: int = 0,
                 host: str = "127.0.0.1", port: int = 0, status_source: Callable[[int], int] | None = None):
        if not 0.0 <= drop_fraction < 1.0 or not 0.0 <= reorder_fraction < 1.0:
            raise ValueError("drop_fraction and reorder_fraction must be in [0, 1)")
        if rate_hz <= 0.0:
            raise ValueError("rate_hz must be > 0")
        self.source = source
        self.status_source = status_source
        self._scale = np.array([counts_per_force] * 3 + [counts_per_torque] * 3, dtype=float)
        self.period_s = 1.0 / rate_hz
        self.drop_fraction = float(drop_fraction)
        self.reorder_fraction = float(reorder_fraction)
        self.buffer_records = int(buffer_records)
        self._rng = np.random.default_rng(seed)
        self._bind(host, port)
        self.bias = np.zeros(6)
        self.streaming = False
        self.dropped: list[int] = []
        self.reordered: list[int] = []
        self.sent_records = 0          # records the emulated sensor put out (dropped ones included)
        self.bad_requests = 0
        self.requests: list[int] = []  # commands received, in order
        self._client = None
        self._per_packet = 1
        self._remaining = 0            # records still to send; -1 = unlimited
        self._rdt_seq = 0
        self._ft_seq = 0
        self._held: bytes | None = None
        self._held_seq = 0
        self._held_n = 0
        self._serve("netft-emulator")

    # ------------------------------------------------------------------------------------------- server
    def _record(self) -> tuple[bytes, int]:
        self._ft_seq = (self._ft_seq + 1) & 0xFFFFFFFF
        self._rdt_seq = (self._rdt_seq + 1) & 0xFFFFFFFF
        w = np.asarray(self.source(self._ft_seq), dtype=float) - self.bias
        counts = np.rint(w * self._scale)
        status = 0 if self.status_source is None else int(self.status_source(self._ft_seq))
        if np.any(np.abs(counts) > _I32):
            status |= 0x1
            counts = np.clip(counts, -_I32, _I32)
        return RECORD.pack(self._rdt_seq, self._ft_seq, status & 0xFFFFFFFF, *(int(c) for c in counts)), self._rdt_seq

    def _flush_held(self) -> None:
        if self._held is not None:
            self._sock.sendto(self._held, self._client)
            self._held = None

    def _send_packet(self) -> None:
        n = self._per_packet if self._remaining < 0 else min(self._per_packet, self._remaining)
        parts = []
        first = 0
        for j in range(n):
            rec, seq = self._record()
            parts.append(rec)
            if j == 0:
                first = seq
        self.sent_records += n
        if self._remaining > 0:
            self._remaining -= n
        data = b"".join(parts)
        if self.drop_fraction and self._rng.random() < self.drop_fraction:
            self.dropped.extend(range(first, first + n))
        elif self._held is None and self.reorder_fraction and self._rng.random() < self.reorder_fraction:
            self._held, self._held_seq, self._held_n = data, first, n
        else:
            self._sock.sendto(data, self._client)
            if self._held is not None:
                self.reordered.extend(range(self._held_seq, self._held_seq + self._held_n))
                self._flush_held()
        if self._remaining == 0:
            self._flush_held()
            self.streaming = False

    def _handle_request(self, data: bytes, addr) -> None:
        if len(data) != REQUEST.size:
            self.bad_requests += 1
            return
        header, command, count = REQUEST.unpack(data)
        if header != RDT_HEADER:
            self.bad_requests += 1
            return
        self.requests.append(command)
        if command in (CMD_START_REALTIME, CMD_START_BUFFERED):
            self._flush_held()
            self._client = addr
            self._per_packet = 1 if command == CMD_START_REALTIME else self.buffer_records
            self._remaining = -1 if count == 0 else count
            self._rdt_seq = 0
            self.streaming = True
        elif command == CMD_STOP:
            if self._client is not None:
                self._flush_held()
            self.streaming = False
        elif command == CMD_SET_BIAS:
            self.bias = np.asarray(self.source(self._ft_seq), dtype=float).copy()
        else:
            self.bad_requests += 1

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop_evt.is_set():
            wait = 0.05 if not self.streaming else max(0.0, next_t - time.monotonic())
            r, _, _ = select.select([self._sock], [], [], wait)
            with self._lock:
                if r:
                    try:
                        data, addr = self._sock.recvfrom(2048)
                    except (BlockingIOError, InterruptedError):
                        data = None
                    if data is not None:
                        was = self.streaming
                        self._handle_request(data, addr)
                        if self.streaming and not was:
                            next_t = time.monotonic()
                    continue
                if self.streaming:
                    now = time.monotonic()
                    if now >= next_t:
                        self._send_packet()
                        next_t += self.period_s * self._per_packet
                        if now - next_t > 0.05:      # fell far behind (machine busy): resynchronise
                            next_t = now

