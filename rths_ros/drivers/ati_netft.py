"""ATI Net F/T (and Ethernet Axia) Raw Data Transfer (RDT) client.

The sensor's RDT interface is plain UDP on port 49152 (public ATI manuals, "RDT request / RDT record"):

* request, 8 bytes, big-endian ``>HHI``: ``command_header = 0x1234``, ``command``, ``sample_count``
  (0 = stream until a stop request).  Commands used here: ``0x0000`` stop streaming, ``0x0002`` start
  real-time (high speed) streaming, one record per datagram, ``0x0003`` start buffered streaming (several
  records per datagram, as many as the sensor's RDT buffer size setting), ``0x0042`` set software bias;
* record, 36 bytes, big-endian ``>III6i``: ``rdt_sequence`` (position of the record in this output stream,
  starts at 1 after each start request, wraps after 2**32 - 1), ``ft_sequence`` (the sensor's internal sample
  counter), ``status`` (system status word, 0 = healthy), ``Fx, Fy, Fz, Tx, Ty, Tz`` in counts.  A datagram
  carries one or more records.

Engineering units: ``F = counts / counts_per_force`` [N], ``T = counts / counts_per_torque`` [N m]; the two
factors belong to the sensor's active calibration (its web page / configuration).  The defaults
(1 000 000 counts per N and per N m) are the common factory setting of the Net F/T; set them from the
calibration of the sensor in use.

Design (no threads on the fast path): :meth:`NetFtClient.read_latest` drains every datagram already queued
on the socket (non-blocking), accounts for each record's ``rdt_sequence`` with
:class:`~rths_ros.drivers.ft_sensor_base.SequenceTracker` (lost / out-of-order / duplicate), keeps the newest
record and returns it.  When nothing new has arrived since the previous call it waits up to ``timeout_s``
for the next datagram and raises :class:`~rths_ros.drivers.ft_sensor_base.SensorTimeout` naming the sensor
address if none comes.  The receive buffer is enlarged so that a 7 kHz stream survives a few ms without a
read.
"""
from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass

import numpy as np

from rths_ros.drivers.ft_sensor_base import (
    FtSample,
    FtSensor,
    SensorError,
    SensorTimeout,
    SequenceStatistics,
    SequenceTracker,
)
from rths_ros.params import param

__all__ = ["RDT_PORT", "RDT_HEADER", "CMD_STOP", "CMD_START_REALTIME", "CMD_START_BUFFERED", "CMD_SET_BIAS",
           "REQUEST", "RECORD", "NetFtParams", "NetFtClient", "pack_request", "unpack_records"]

RDT_PORT = 49152
RDT_HEADER = 0x1234
CMD_STOP = 0x0000
CMD_START_REALTIME = 0x0002
CMD_START_BUFFERED = 0x0003
CMD_SET_BIAS = 0x0042
REQUEST = struct.Struct(">HHI")
RECORD = struct.Struct(">III6i")

_START = {"realtime": CMD_START_REALTIME, "buffered": CMD_START_BUFFERED}


@dataclass(frozen=True)
class NetFtParams:
    """Connection and calibration of an ATI Net F/T sensor."""

    host: str = param("192.168.1.1", "", doc="IP address of the Net F/T box")
    port: int = param(RDT_PORT, "", 1, 65535, "RDT UDP port of the sensor")
    counts_per_force: float = param(1.0e6, "counts/N", 1e-6, 1e12, "force scaling of the active calibration")
    counts_per_torque: float = param(1.0e6, "counts/(N m)", 1e-6, 1e12, "torque scaling of the active calibration")
    mode: str = param("realtime", "", doc="RDT streaming: one record per datagram, or buffered records",
                      choices=("realtime", "buffered"))
    sample_count: int = param(0, "", 0, 2**32 - 1, "records requested per start (0 = until stopped)")
    timeout_s: float = param(0.05, "s", 1e-4, 60.0, "read_latest waits at most this long for a new record")
    receive_buffer_bytes: int = param(1 << 21, "B", 4096, 1 << 28, "requested socket receive buffer")


def pack_request(command: int, sample_count: int = 0) -> bytes:
    """An 8-byte RDT request."""
    return REQUEST.pack(RDT_HEADER, command & 0xFFFF, sample_count & 0xFFFFFFFF)


def unpack_records(data: bytes) -> list[tuple[int, ...]]:
    """All 36-byte records of one datagram as (rdt_sequence, ft_sequence, status, Fx, Fy, Fz, Tx, Ty, Tz)."""
    n, rest = divmod(len(data), RECORD.size)
    if n == 0 or rest:
        raise SensorError(f"RDT datagram of {len(data)} bytes is not a whole number of {RECORD.size}-byte records")
    return [RECORD.unpack_from(data, j * RECORD.size) for j in range(n)]


class NetFtClient(FtSensor):
    """Client of one Net F/T sensor (see the module doc)."""

    def __init__(self, params: NetFtParams | None = None):
        self.params = params or NetFtParams()
        p = self.params
        self.address = (p.host, p.port)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, p.receive_buffer_bytes)
        except OSError:       # pragma: no cover - the kernel caps the size instead of refusing it
            pass
        self._sock.connect(self.address)
        self._sock.setblocking(False)
        self._buf = bytearray(65536)
        self._scale = np.array([1.0 / p.counts_per_force] * 3 + [1.0 / p.counts_per_torque] * 3)
        self.tracker = SequenceTracker()
        self.streaming = False
        self._counts = np.zeros(6)
        self._seq = 0
        self._ft_seq = 0
        self._status = 0
        self._stamp = 0.0
        self._fresh = False
        self._have = False

    # ------------------------------------------------------------------------------------------- requests
    def _send(self, command: int, count: int = 0) -> None:
        try:
            self._sock.send(pack_request(command, count))
        except OSError as exc:
            raise SensorError(f"Net F/T at {self.address[0]}:{self.address[1]}: cannot send RDT request "
                              f"0x{command:04x}: {exc}") from exc

    def start(self) -> None:
        """Send the start request of the configured mode; the sequence bookkeeping starts over."""
        self._drain_discard()
        self.tracker.reset(first=1)
        self._fresh = False
        self._have = False
        self._send(_START[self.params.mode], self.params.sample_count)
        self.streaming = True

    def stop(self) -> None:
        """Send the stop request (records already in flight are discarded by the next start)."""
        if self._sock.fileno() < 0:
            return
        self._send(CMD_STOP)
        self.streaming = False

    def set_software_bias(self) -> None:
        """Ask the sensor to zero its readings at the current load (RDT command 0x0042)."""
        self._send(CMD_SET_BIAS)

    def close(self) -> None:
        if self._sock.fileno() >= 0:
            try:
                self.stop()
            except SensorError:
                pass
            self._sock.close()

    # ------------------------------------------------------------------------------------------- reading
    def _drain_discard(self) -> None:
        while True:
            try:
                self._sock.recv_into(self._buf)
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionRefusedError:
                continue

    def poll(self) -> int:
        """Process every queued datagram; returns the number of new records."""
        n_new = 0
        tr = self.tracker
        while True:
            try:
                n = self._sock.recv_into(self._buf)
            except (BlockingIOError, InterruptedError):
                return n_new
            except ConnectionRefusedError as exc:
                raise SensorError(f"Net F/T at {self.address[0]}:{self.address[1]} refused the RDT request "
                                  "(nothing listens on that port)") from exc
            now = time.monotonic()
            nrec, rest = divmod(n, RECORD.size)
            if nrec == 0 or rest:
                tr.stats.malformed += 1
                continue
            for j in range(nrec):
                rec = RECORD.unpack_from(self._buf, j * RECORD.size)
                if tr.update(rec[0]) == SequenceTracker.NEW:
                    self._seq, self._ft_seq, self._status = rec[0], rec[1], rec[2]
                    self._counts[:] = rec[3:]
                    self._stamp = now
                    self._fresh = True
                    self._have = True
                    n_new += 1

    def read_latest(self, timeout_s: float | None = None) -> FtSample:
        """The newest record in engineering units; waits up to ``timeout_s`` (default ``params.timeout_s``)
        when nothing new arrived since the previous call."""
        self.poll()
        if not self._fresh:
            timeout = self.params.timeout_s if timeout_s is None else float(timeout_s)
            deadline = time.monotonic() + timeout
            while not self._fresh:
                left = deadline - time.monotonic()
                if left <= 0.0:
                    self.tracker.stats.timeouts += 1
                    state = "streaming" if self.streaming else "not streaming (start() not called or stopped)"
                    raise SensorTimeout(f"Net F/T at {self.address[0]}:{self.address[1]}: no RDT record for "
                                        f"{timeout * 1e3:.1f} ms; client {state}; last rdt_sequence "
                                        f"{self._seq if self._have else 'none'}")
                select.select([self._sock], [], [], left)
                self.poll()
        self._fresh = False
        return FtSample(self._counts * self._scale, self._seq, self._stamp, self._status)

    @property
    def ft_sequence(self) -> int:
        """The sensor's internal sample number of the newest record."""
        return self._ft_seq

    def statistics(self) -> SequenceStatistics:
        return self.tracker.stats
