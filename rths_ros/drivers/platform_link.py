"""Binary UDP link to the Stewart platform's own (leg-level) controller.

The platform's controller runs the per-leg cascades (Insam 2022 Fig. 4.4) on its own hardware; the RTHS
fast path sends it, every synchronisation step, the six leg commands and receives the measured leg states.
This module defines the wire format (version 1) and the client.  docs/protocols.md has the same tables.

Every datagram is one message, all fields big-endian (network order), no padding::

    header  ">4sHHIQ"  (20 bytes)
        magic     4 bytes  b"RTSP"
        version   uint16   PROTOCOL_VERSION (1)
        type      uint16   message type (below)
        sequence  uint32   per-sender packet counter, +1 per datagram, wraps
        step      uint64   synchronisation step index k the message refers to

    COMMAND   (1, client -> controller)  body ">6d6d6d"  (144 bytes)
        length[6]              desired leg lengths b_i incl. position-level feedforward   [m]
        feedforward_velocity[6] velocity-level feedforward added after the position loop   [m/s]
        current_injection[6]   current added behind the velocity controller (identification) [A]
    STATE     (2, controller -> client)  body ">6d6d6dII" (152 bytes)
        length[6], velocity[6] measured leg lengths [m] and rates [m/s]
        current[6]             motor current (controller output + injection)               [A]
        status                 status bits (below)
        ack_sequence           sequence number of the COMMAND that produced this state (0xFFFFFFFF: none)
    HEARTBEAT (3, both ways)                body ">ddI" (20 bytes)
        t_send, t_echo         sender's clock [s]; the reply echoes the request's t_send (round trip)
        status                 sender's status bits
    RESET     (4, client -> controller)  no body: legs back to the initial state, step 0, watchdog cleared;
                                          answered by STATE with step 0
    ERROR     (5, controller -> client)  body ">I64s": code, UTF-8 text padded with NUL

Status bits (bits 0-2 as in the LegState message): 0 stroke limit, 1 velocity limit, 2 drive fault,
3 watchdog (the client was silent longer than the controller's heartbeat timeout: the legs hold position
and commands are refused until RESET), 4 command rejected (wrong step index).

Stepping semantics.  *Lockstep*: a COMMAND for step ``k`` (computed from the state of step ``k``) is applied
over ``[t_k, t_k+1]`` and answered by the STATE of step ``k + 1``.  A repeated COMMAND for the step just
applied is answered with the stored STATE again (so a client may retransmit after a timeout without the
plant stepping twice); any other step index is answered with the current STATE and the *rejected* bit.
*Realtime*: the controller steps on its own clock with the newest COMMAND and sends a STATE every step.

Client checks: magic (foreign datagrams are counted and ignored), version (a mismatch raises
:class:`PlatformLinkError` naming both versions), the controller's packet sequence numbers (lost /
out-of-order counters, :class:`~rths_ros.drivers.ft_sensor_base.SequenceTracker`), the step index of every
STATE (stale ones are counted and skipped), and the time since the controller was last heard of
(:meth:`PlatformLinkClient.check_alive` raises :class:`PlatformLinkTimeout`).
"""
from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass, field

import numpy as np

from rths_ros.drivers.ft_sensor_base import SequenceStatistics, SequenceTracker
from rths_ros.params import param

__all__ = ["MAGIC", "PROTOCOL_VERSION", "HEADER", "COMMAND_BODY", "STATE_BODY", "HEARTBEAT_BODY", "ERROR_BODY",
           "MSG_COMMAND", "MSG_STATE", "MSG_HEARTBEAT", "MSG_RESET", "MSG_ERROR", "STATUS_STROKE",
           "STATUS_VELOCITY", "STATUS_FAULT", "STATUS_WATCHDOG", "STATUS_REJECTED", "NO_ACK",
           "PlatformLinkError", "PlatformLinkTimeout", "PlatformLinkParams", "PlatformState",
           "PlatformLinkClient", "pack", "unpack"]

MAGIC = b"RTSP"
PROTOCOL_VERSION = 1
HEADER = struct.Struct(">4sHHIQ")
COMMAND_BODY = struct.Struct(">6d6d6d")
STATE_BODY = struct.Struct(">6d6d6dII")
HEARTBEAT_BODY = struct.Struct(">ddI")
ERROR_BODY = struct.Struct(">I64s")

MSG_COMMAND, MSG_STATE, MSG_HEARTBEAT, MSG_RESET, MSG_ERROR = 1, 2, 3, 4, 5
BODIES = {MSG_COMMAND: COMMAND_BODY, MSG_STATE: STATE_BODY, MSG_HEARTBEAT: HEARTBEAT_BODY, MSG_RESET: None,
          MSG_ERROR: ERROR_BODY}

STATUS_STROKE = 1 << 0
STATUS_VELOCITY = 1 << 1
STATUS_FAULT = 1 << 2
STATUS_WATCHDOG = 1 << 3
STATUS_REJECTED = 1 << 4
NO_ACK = 0xFFFFFFFF

ERR_VERSION, ERR_MALFORMED, ERR_TYPE = 1, 2, 3


class PlatformLinkError(RuntimeError):
    """Malformed or incompatible traffic, or an ERROR message from the controller."""


class PlatformLinkTimeout(PlatformLinkError):
    """The controller did not answer in time (or has been silent longer than the heartbeat timeout)."""


def pack(msg_type: int, sequence: int, step: int, *body, version: int = PROTOCOL_VERSION) -> bytes:
    """One datagram: header + body of ``msg_type``."""
    head = HEADER.pack(MAGIC, version, msg_type, sequence & 0xFFFFFFFF, step)
    st = BODIES[msg_type]
    return head if st is None else head + st.pack(*body)


def unpack(data: bytes) -> tuple[int, int, int, int, tuple]:
    """``(version, type, sequence, step, body_fields)``; raises PlatformLinkError on a malformed datagram."""
    if len(data) < HEADER.size:
        raise PlatformLinkError(f"datagram of {len(data)} bytes is shorter than the {HEADER.size}-byte header")
    magic, version, mtype, seq, step = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise PlatformLinkError(f"bad magic {magic!r} (expected {MAGIC!r})")
    if version != PROTOCOL_VERSION:
        return version, mtype, seq, step, ()
    st = BODIES.get(mtype, False)
    if st is False:
        raise PlatformLinkError(f"unknown message type {mtype}")
    size = HEADER.size + (0 if st is None else st.size)
    if len(data) != size:
        raise PlatformLinkError(f"message type {mtype}: {len(data)} bytes, expected {size}")
    return version, mtype, seq, step, (() if st is None else st.unpack_from(data, HEADER.size))


@dataclass(frozen=True)
class PlatformLinkParams:
    """Address and timing of the link to the platform controller."""

    host: str = param("192.168.1.10", "", doc="IP address of the platform controller")
    port: int = param(50210, "", 1, 65535, "UDP port of the platform controller")
    reply_timeout_s: float = param(0.005, "s", 1e-4, 60.0, "wait for the STATE answering a COMMAND this long")
    retries: int = param(2, "", 0, 100, "retransmissions of a COMMAND before giving up")
    heartbeat_timeout_s: float = param(0.1, "s", 1e-3, 60.0, "the controller counts as lost after this long "
                                       "without any datagram from it")


@dataclass
class PlatformState:
    """One STATE message (arrays (6,) in leg order 1..6); ``stamp`` = host monotonic time of arrival [s]."""

    step: int
    length: np.ndarray
    velocity: np.ndarray
    current: np.ndarray
    status: int
    ack_sequence: int
    stamp: float


@dataclass
class LinkStatistics:
    """Controller packets: sequence counters plus stale STATEs (wrong step), retransmissions, foreign datagrams."""

    packets: SequenceStatistics = field(default_factory=SequenceStatistics)
    stale_states: int = 0          # STATEs of an older step than one already received (dropped)
    retransmissions: int = 0
    foreign: int = 0


class PlatformLinkClient:
    """Client side of the link (see the module doc)."""

    def __init__(self, params: PlatformLinkParams | None = None):
        self.params = params or PlatformLinkParams()
        p = self.params
        self.address = (p.host, p.port)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.connect(self.address)
        self._sock.setblocking(False)
        self._buf = bytearray(2048)
        self._seq = 0
        self.tracker = SequenceTracker()
        self.stats = LinkStatistics(packets=self.tracker.stats)
        self.latest: PlatformState | None = None
        self.last_rx = time.monotonic()
        self.last_heartbeat: tuple[float, float, int] | None = None   # (t_send, t_echo, status) of the controller
        self._zeros = np.zeros(6)
        self._awaited: int | None = None             # the step a wait is for (_wait_state)
        self.awaited: PlatformState | None = None    # its STATE, once seen

    def _name(self) -> str:
        return f"platform controller at {self.address[0]}:{self.address[1]}"

    def _send(self, msg_type: int, step: int, *body) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        try:
            self._sock.send(pack(msg_type, self._seq, step, *body))
        except OSError as exc:
            raise PlatformLinkError(f"{self._name()}: cannot send: {exc}") from exc
        return self._seq

    # ------------------------------------------------------------------------------------------- receive
    def poll(self) -> int:
        """Process every queued datagram; returns the number of new STATE messages."""
        n_states = 0
        while True:
            try:
                n = self._sock.recv_into(self._buf)
            except (BlockingIOError, InterruptedError):
                return n_states
            except ConnectionRefusedError as exc:
                raise PlatformLinkError(f"{self._name()}: port unreachable (controller not running?)") from exc
            data = bytes(self._buf[:n])
            try:
                version, mtype, seq, step, body = unpack(data)
            except PlatformLinkError:
                self.stats.foreign += 1
                continue
            if version != PROTOCOL_VERSION:
                raise PlatformLinkError(f"{self._name()} speaks protocol version {version}, this client "
                                        f"version {PROTOCOL_VERSION}")
            now = time.monotonic()
            self.last_rx = now
            kind = self.tracker.update(seq)
            if mtype == MSG_ERROR:
                code, text = body
                text = text.rstrip(b"\x00").decode("utf-8", "replace")
                raise PlatformLinkError(f"{self._name()} reports error {code}: {text}")
            if mtype == MSG_HEARTBEAT:
                self.last_heartbeat = (body[0], body[1], body[2])
                continue
            if mtype == MSG_STATE and kind == SequenceTracker.NEW:
                state = PlatformState(step, np.array(body[0:6]), np.array(body[6:12]), np.array(body[12:18]),
                                      body[18], body[19], now)
                if step == self._awaited:   # the answer a wait is for, even if newer ones follow in this poll
                    self.awaited = state
                if self.latest is not None and step < self.latest.step:
                    self.stats.stale_states += 1          # older step than already seen: never used
                    continue
                self.latest = state
                n_states += 1

    def _wait_state(self, want_step: int | None, deadline: float) -> PlatformState | None:
        """The next new STATE of step ``want_step`` (any step if None) or a rejecting one; None at the deadline.
        A STATE of ``want_step`` counts even when newer ones came in the same poll (a realtime controller streams
        on after its answer to RESET: a client that polls late must not miss the answer)."""
        self._awaited, self.awaited = want_step, None
        try:
            while True:
                before = self.latest
                self.poll()
                if self.awaited is not None:
                    return self.awaited
                st = self.latest
                if st is not None and st is not before:
                    if want_step is None or st.step == want_step or st.status & STATUS_REJECTED:
                        return st
                left = deadline - time.monotonic()
                if left <= 0.0:
                    return None
                select.select([self._sock], [], [], left)
        finally:
            self._awaited = None

    # ------------------------------------------------------------------------------------------- requests
    def reset(self, timeout_s: float = 1.0) -> PlatformState:
        """Legs to the initial state, step 0, watchdog cleared; returns the STATE of step 0."""
        deadline = time.monotonic() + timeout_s
        self.latest = None
        self._send(MSG_RESET, 0)
        st = self._wait_state(0, deadline)
        if st is None:
            raise PlatformLinkTimeout(f"{self._name()}: no answer to RESET within {timeout_s * 1e3:.1f} ms")
        return st

    def send_command(self, step: int, length, feedforward_velocity=None, current_injection=None) -> int:
        """Send a COMMAND (does not wait); returns its sequence number."""
        ff = self._zeros if feedforward_velocity is None else feedforward_velocity
        inj = self._zeros if current_injection is None else current_injection
        return self._send(MSG_COMMAND, step, *length, *ff, *inj)

    def step(self, step: int, length, feedforward_velocity=None, current_injection=None) -> PlatformState:
        """Lockstep: apply the command of step ``step`` and return the STATE of ``step + 1``; retransmits
        ``retries`` times after ``reply_timeout_s`` each, then raises :class:`PlatformLinkTimeout`."""
        p = self.params
        for attempt in range(p.retries + 1):
            if attempt:
                self.stats.retransmissions += 1
            self.send_command(step, length, feedforward_velocity, current_injection)
            st = self._wait_state(step + 1, time.monotonic() + p.reply_timeout_s)
            if st is None:
                continue
            if st.status & STATUS_REJECTED:
                why = " (watchdog tripped: RESET needed)" if st.status & STATUS_WATCHDOG else ""
                raise PlatformLinkError(f"{self._name()} refused the command of step {step}: status "
                                        f"0x{st.status:02x}, controller at step {st.step}{why}")
            return st
        raise PlatformLinkTimeout(f"{self._name()}: no STATE for step {step + 1} within "
                                  f"{p.retries + 1} x {p.reply_timeout_s * 1e3:.1f} ms")

    def read_state(self, timeout_s: float | None = None) -> PlatformState:
        """Realtime: the newest STATE; waits up to ``timeout_s`` (default ``reply_timeout_s``) for a new one."""
        t = self.params.reply_timeout_s if timeout_s is None else timeout_s
        st = self._wait_state(None, time.monotonic() + t)
        if st is None:
            raise PlatformLinkTimeout(f"{self._name()}: no STATE within {t * 1e3:.1f} ms")
        return st

    def heartbeat(self) -> None:
        """Send a HEARTBEAT (keeps the controller's watchdog quiet while no commands flow)."""
        self.poll()
        self._send(MSG_HEARTBEAT, self.latest.step if self.latest else 0, time.monotonic(), 0.0, 0)

    def ping(self, timeout_s: float = 0.1) -> tuple[float, int]:
        """HEARTBEAT round trip: returns (round-trip time [s], controller status); raises
        :class:`PlatformLinkTimeout` when no answer comes within ``timeout_s``."""
        t0 = time.monotonic()
        self._send(MSG_HEARTBEAT, self.latest.step if self.latest else 0, t0, 0.0, 0)
        deadline = t0 + timeout_s
        while True:
            self.poll()
            hb = self.last_heartbeat
            if hb is not None and hb[1] == t0:
                return time.monotonic() - t0, hb[2]
            left = deadline - time.monotonic()
            if left <= 0.0:
                raise PlatformLinkTimeout(f"{self._name()}: no heartbeat answer within {timeout_s * 1e3:.1f} ms")
            select.select([self._sock], [], [], left)

    def check_alive(self) -> float:
        """Seconds since the controller was last heard of; raises :class:`PlatformLinkTimeout` when that
        exceeds ``heartbeat_timeout_s``."""
        self.poll()
        silent = time.monotonic() - self.last_rx
        if silent > self.params.heartbeat_timeout_s:
            raise PlatformLinkTimeout(f"{self._name()}: silent for {silent * 1e3:.0f} ms (heartbeat timeout "
                                      f"{self.params.heartbeat_timeout_s * 1e3:.0f} ms)")
        return silent

    def statistics(self) -> LinkStatistics:
        return self.stats

    def close(self) -> None:
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
