"""Force/torque sensor interface and sequence-number bookkeeping for UDP streams.

A sensor driver implements :class:`FtSensor`::

    start()                -> begin streaming
    read_latest(timeout_s) -> FtSample(wrench[6], sequence, timestamp, status)
    stop()                 -> end streaming
    statistics()           -> SequenceStatistics (received, lost, out of order, duplicates, timeouts)

``wrench`` is [Fx, Fy, Fz, Tx, Ty, Tz] in the sensor frame [N, N m]; ``sequence`` is the sensor's packet
sequence number; ``timestamp`` is the host's monotonic clock [s] when the sample arrived; ``status`` is the
sensor's status word (0 = healthy).  A sample that does not arrive in time raises :class:`SensorTimeout`.

:class:`SequenceTracker` counts lost and out-of-order packets of a stream numbered by an unsigned 32-bit
counter that wraps.  Counting rules (the protocols say nothing about them; chosen here and tested):

* a packet ``d`` ahead of the newest one seen (``0 < d < 2**31`` modulo ``2**32``) is *new*; the ``d - 1``
  numbers skipped are provisionally *lost* and remembered (up to ``window`` of them);
* a packet behind the newest one whose number is in the remembered gap arrived *out of order*: it is
  removed from the gap and ``lost`` is decremented, so at the end ``lost`` counts the packets that never
  arrived and ``out_of_order`` the ones that arrived late;
* when the first number of a stream is known (RDT streams start at 1) the tracker is reset to it, so packets
  lost at the head of the stream count too; packets lost at its tail cannot be seen;
* a packet equal to the newest one, or behind it but not in the gap, is a *duplicate*.

Only new packets update the latest sample; a late packet is counted but never replaces newer data.
"""
from __future__ import annotations

import abc
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = ["FtSample", "SequenceStatistics", "SequenceTracker", "SensorError", "SensorTimeout", "FtSensor"]

_MOD = 1 << 32
_HALF = 1 << 31


class SensorError(RuntimeError):
    """A sensor that cannot be reached, refuses a request or sends malformed data."""


class SensorTimeout(SensorError):
    """No new sample arrived within the timeout."""


class FtSample(NamedTuple):
    """One wrench sample: ``wrench`` (6,) [N, N m], ``sequence``, ``timestamp`` [s, monotonic], ``status``."""

    wrench: np.ndarray
    sequence: int
    timestamp: float
    status: int


@dataclass
class SequenceStatistics:
    """Counters of one stream (see the module doc for the rules)."""

    received: int = 0
    lost: int = 0
    out_of_order: int = 0
    duplicates: int = 0
    timeouts: int = 0
    malformed: int = 0


class SequenceTracker:
    """Classify the sequence numbers of a UDP stream as new, late (out of order) or duplicate."""

    NEW, LATE, DUPLICATE = 0, 1, 2

    def __init__(self, window: int = 4096):
        self.window = int(window)
        self.stats = SequenceStatistics()
        self.newest: int | None = None
        self._gap: OrderedDict[int, None] = OrderedDict()

    def reset(self, first: int | None = None) -> None:
        """Forget the stream (a new stream starts, e.g. after a new start request).  With ``first`` the
        number of the stream's first packet is known (RDT: 1), so packets missing at its head count as lost."""
        self._gap.clear()
        self.newest = None if first is None else (int(first) - 1) % _MOD

    def clear_statistics(self) -> None:
        self.stats = SequenceStatistics()

    def update(self, seq: int) -> int:
        """Account for packet ``seq``; returns NEW, LATE or DUPLICATE."""
        seq &= 0xFFFFFFFF
        st = self.stats
        st.received += 1
        if self.newest is None:
            self.newest = seq
            return self.NEW
        d = (seq - self.newest) % _MOD
        if d == 0:
            st.duplicates += 1
            return self.DUPLICATE
        if d < _HALF:
            if d > 1:
                st.lost += d - 1
                gap = self._gap
                # remember at most `window` skipped numbers (the newest ones)
                first = max(1, d - self.window)
                for j in range(first, d):
                    gap[(self.newest + j) % _MOD] = None
                while len(gap) > self.window:
                    gap.popitem(last=False)
            self.newest = seq
            return self.NEW
        if seq in self._gap:
            del self._gap[seq]
            st.lost -= 1
            st.out_of_order += 1
            return self.LATE
        st.duplicates += 1
        return self.DUPLICATE


class FtSensor(abc.ABC):
    """A six-axis force/torque sensor that streams samples (see the module doc)."""

    @abc.abstractmethod
    def start(self) -> None:
        """Begin streaming."""

    @abc.abstractmethod
    def read_latest(self, timeout_s: float | None = None) -> FtSample:
        """The newest sample; waits up to ``timeout_s`` for one that was not returned before, else raises
        :class:`SensorTimeout`."""

    @abc.abstractmethod
    def stop(self) -> None:
        """End streaming."""

    @abc.abstractmethod
    def statistics(self) -> SequenceStatistics:
        """Counters of the current stream."""

    def close(self) -> None:
        """Release the connection (stops streaming first)."""
        self.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
