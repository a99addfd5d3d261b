"""In-process delivery of the fast-path topics between nodes composed in one process.

With ``rths run --composed`` every node lives in one process.  Passing each loop message through
DDS there costs a serialisation, a transport and an executor wake-up per hop.  The local bus
hands the message object straight to the subscribers' callbacks instead, like intra-process
communication in rclcpp.  The DDS publisher still publishes when a reader is matched: the recorder
in its own process (realtime), any outside observer.  A lockstep composed run's recorder is a node of
the same process and takes the messages from the bus too (``recording.in_process``).

Delivery is synchronous: the subscriber has processed the message before ``publish`` returns, so
publishers may reuse their message objects.  The one exception closes the loop: in lockstep mode,
the input of the beat-setting node (the plant's leg command) is queued and processed by a drain
loop.  Otherwise every step would nest one level deeper.  The drain yields to the executor
every ``BATCH`` steps and resumes from a timer, so events and timers keep running.  In realtime
mode the beat node's input only stores the newest command, so it is delivered synchronously too.

A subscriber whose callback raises (a bug) is taken off the bus and its error kept in :attr:`LocalBus.crashed`; the
publisher goes on (the plant's ramp to the safe pose must not die with a crashed consumer), and the process's spin
loop aborts the run with the error (rths_ros.runtime.node.spin_nodes).

No DDS sample reaches a local-bus callback, so a foreign publisher cannot reach the loop of a composed process;
the loop guard's message validation still applies to every message (rths_ros.runtime.guard).
"""
from __future__ import annotations

import collections
import threading


class LocalBus:
    BATCH = 100

    def __init__(self, lockstep: bool, recorder_local: bool = False):
        self.lockstep = lockstep
        #: the recorder is a node of this process and takes the loop topics from the bus (nodes/recorder.py): the
        #: DDS publishers then have no reader of the run and publish nothing (but for an outside observer)
        self.recorder_local = recorder_local
        self.subscribers: dict[str, list] = collections.defaultdict(list)
        #: per topic, a snapshot of its subscribers that delivery iterates (rebuilt when one joins or crashes)
        self._snapshot: dict[str, tuple] = {}
        self.deferred_topics: set[str] = set()
        self._queue: collections.deque = collections.deque()
        self._depth = 0
        self._lock = threading.RLock()
        #: held while a message is handed to the subscribers (on the publishing thread, which may be a plant's safe
        #: ramp thread): what a subscriber shares with its executor's callbacks goes under it too (nodes/recorder.py)
        self.lock = self._lock
        self._guard = None
        self.delivered = 0
        #: the first error a subscriber's callback raised (that subscriber is off the bus since), or None
        self.crashed: BaseException | None = None

    def attach(self, node) -> None:
        """Give the bus a timer on one of the process's nodes, for resuming the drain (guard conditions
        are not supported by the events executor)."""
        if self._guard is None:
            self._guard = node.create_timer(1e-5, self.drain)
            self._guard.cancel()

    def subscribe(self, topic: str, callback, deferred: bool = False) -> None:
        self.subscribers[topic].append((callback, deferred and self.lockstep))
        self._snapshot[topic] = tuple(self.subscribers[topic])

    def has_subscribers(self, topic: str) -> bool:
        return bool(self.subscribers.get(topic))

    def deliver(self, topic: str, msg, drain: bool = True) -> None:
        """Hand ``msg`` to the topic's subscribers.  ``drain=False``: leave queued beat inputs for the
        caller to drain (after it has finished with ``msg``, see LocalPublisher)."""
        with self._lock:
            self._depth += 1
            try:
                for cb, deferred in self._snapshot.get(topic, ()):
                    if deferred:
                        self._queue.append((cb, msg))
                        continue
                    try:
                        cb(msg)
                    except Exception as exc:        # the subscriber crashed: off the bus (_crashed)
                        self._crashed(cb, exc)
                        continue
                    self.delivered += 1
            finally:
                self._depth -= 1
            if drain and self._depth == 0 and self._queue:
                self.drain()

    def _call(self, cb, msg) -> None:
        try:
            cb(msg)
            self.delivered += 1
        except Exception as exc:        # the subscriber crashed: off the bus; the publisher goes on
            self._crashed(cb, exc)

    def _crashed(self, cb, exc: BaseException) -> None:
        if self.crashed is None:
            self.crashed = exc
        for topic, subs in self.subscribers.items():
            subs[:] = [(c, d) for c, d in subs if c is not cb]
            self._snapshot[topic] = tuple(subs)
        self._queue = collections.deque((c, m) for c, m in self._queue if c is not cb)

    def drain_if_idle(self) -> None:
        with self._lock:
            if self._depth == 0 and self._queue:
                self.drain()

    def drain(self) -> None:
        with self._lock:
            if self._depth:
                return
            n = 0
            while self._queue and n < self.BATCH:
                cb, msg = self._queue.popleft()
                self._depth += 1
                try:
                    self._call(cb, msg)
                finally:
                    self._depth -= 1
                n += 1
            if self._guard is not None:
                if self._queue:
                    self._guard.reset()
                else:
                    self._guard.cancel()


class ReaderGate:
    """Whether a DDS publisher has a reader: asked every ``every`` calls until one is matched, then never again (a
    reader once matched is published to from then on).  Publishing to no reader still costs rclpy's conversion
    and Fast DDS's write (35-77 µs for a WrenchStamped in a composed lockstep run, against 0.7 µs for asking);
    an observer that joins mid-run (the live view, ``ros2 topic echo``, a tool on a standard interface) misses at
    most the first ``every`` calls' messages."""

    __slots__ = ("pub", "every", "_left", "matched")

    def __init__(self, pub, every: int):
        self.pub, self.every = pub, max(1, int(every))
        self._left = 0
        self.matched = False

    def __call__(self) -> bool:
        if not self.matched:
            self._left -= 1
            if self._left <= 0:
                self._left = self.every
                self.matched = bool(self.pub.get_subscription_count())
        return self.matched


class LocalPublisher:
    """A DDS publisher whose messages are also handed to the in-process subscribers."""

    __slots__ = ("dds", "bus", "topic", "_readers", "_mark")

    #: with no DDS reader matched, the count is asked again every this many publishes (:class:`ReaderGate`; asking
    #: costs about 0.7 µs, a sixth of a composed step's own work per topic).  The recorder of its own process is
    #: matched before START
    RECHECK = 50

    def __init__(self, dds_publisher, bus: LocalBus, topic: str):
        self.dds, self.bus, self.topic = dds_publisher, bus, topic
        self._readers = ReaderGate(dds_publisher, self.RECHECK)
        #: the run's mark of a control topic (rths_ros.runtime.guard.MarkedPublisher): written before the local
        #: delivery too, so a message is the same whether it went over DDS or not (the in-process recorder's bag)
        self._mark = getattr(dds_publisher, "mark", None)

    def publish(self, msg) -> None:
        # local consumers first: the fast path completes before the copies for the recorder are
        # serialised (safe: no node changes a message it published until its next input arrives)
        if self._mark is not None:
            msg.header.frame_id = self._mark
        self.bus.deliver(self.topic, msg, drain=False)
        if self._readers():
            self.dds.publish(msg)
        self.bus.drain_if_idle()   # only now may the next step (which reuses msg) run

    def get_subscription_count(self) -> int:
        return self.dds.get_subscription_count()

    def wait_for_all_acked(self, timeout):
        return self.dds.wait_for_all_acked(timeout)

    @property
    def topic_name(self) -> str:
        return self.dds.topic_name
