"""The hop log of a node (``recording.hop_log``): when each loop message was published and when each arrived, by
topic and step, on the machine's monotonic clock (the same for every process of one machine).

With it, the time of a step splits into its hops (the transport of each topic from its producer to each reader)
and each node's own work between its input and its output (:mod:`rths_ros.analysis.hops`, ``rths bench hops``).
Off (the default), a node gets :data:`OFF`, whose ``publisher`` returns the publisher unchanged and whose
``arrival`` is None: the fast path pays one test per message.  On, each message costs a clock read and two array
stores (about 0.3 µs) and the node writes ``OUT/timing/<node>.hops.npz`` at its end.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np


class _Series:
    __slots__ = ("steps", "t_ns", "n")

    def __init__(self, capacity: int):
        self.steps = np.zeros(capacity, dtype=np.int64)
        self.t_ns = np.zeros(capacity, dtype=np.int64)
        self.n = 0

    def add(self, step: int, t_ns: int) -> None:
        n = self.n
        if n < self.steps.size:          # (beyond the capacity: not recorded; the analysis sees fewer steps)
            self.steps[n] = step
            self.t_ns[n] = t_ns
            self.n = n + 1


class _LoggedPublisher:
    """A loop publisher whose every ``publish`` is logged (its step, the moment it is handed over)."""

    __slots__ = ("_pub", "_add")

    def __init__(self, pub, series: _Series):
        self._pub, self._add = pub, series.add

    def publish(self, msg) -> None:
        self._add(int(msg.step), time.monotonic_ns())
        self._pub.publish(msg)

    def __getattr__(self, name):            # get_subscription_count, wait_for_all_acked, topic_name, ...
        return getattr(self._pub, name)


class HopLog:
    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.series: dict[str, _Series] = {}

    def _series(self, key: str) -> _Series:
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = _Series(self.capacity)
        return s

    def publisher(self, topic: str, pub):
        return _LoggedPublisher(pub, self._series(f"pub:{topic}"))

    def arrival(self, topic: str):
        """``add(step, t_ns)`` for each message of ``topic`` this node takes."""
        return self._series(f"sub:{topic}").add

    def save(self, timing_dir: Path, node: str) -> Path | None:
        if not self.series:
            return None
        path = Path(timing_dir) / f"{node}.hops.npz"
        arrays = {}
        for key, s in self.series.items():
            arrays[f"{key}|steps"] = s.steps[:s.n]
            arrays[f"{key}|t_ns"] = s.t_ns[:s.n]
        np.savez(path, **arrays)
        return path


class _Off:
    """No hop log: publishers as they are, no arrival recorded, nothing saved."""

    @staticmethod
    def publisher(topic: str, pub):
        return pub

    @staticmethod
    def arrival(topic: str):
        return None

    @staticmethod
    def save(timing_dir: Path, node: str) -> None:
        return None


OFF = _Off()


def for_node(scenario):
    """The node's hop log: :class:`HopLog` sized for every step of every trial (plus the ramp to the safe pose),
    or :data:`OFF`."""
    if not scenario.recording.hop_log:
        return OFF
    return HopLog(scenario.loop.trials * (scenario.steps + 1) + 20_000)


def load(timing_dir: Path) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """{node: {"pub:/topic" or "sub:/topic": (steps, t_ns)}} of every ``*.hops.npz`` in a run's timing folder."""
    out: dict[str, dict] = {}
    for p in sorted(Path(timing_dir).glob("*.hops.npz")):
        node = p.name[: -len(".hops.npz")]
        with np.load(p) as z:
            keys = {k.rsplit("|", 1)[0] for k in z.files}
            out[node] = {k: (z[f"{k}|steps"], z[f"{k}|t_ns"]) for k in keys}
    return out
