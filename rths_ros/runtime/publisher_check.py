"""The publisher check of a node's loop topics (docs/safety.md, "A shared network"): a sample is taken only from
the publisher of one of the run's producers of its topic, known by its gid in the ROS graph.  The rules, and the
stricter ones where the client library hands no publisher with a sample (rclpy of ROS 2 Jazzy), are in the module
doc of :mod:`rths_ros.runtime.guard`, whose :class:`~rths_ros.runtime.guard.LoopGuard` puts this check in front of
every loop callback and decides what a foreign publisher does to the run.
"""
from __future__ import annotations

import inspect
import time
from collections.abc import Callable

#: a gid whose node is not named in the ROS graph yet is looked up again at most this often, and reported under
#: no name after RECHECK_GIVE_UP_S (its samples are dropped meanwhile)
RECHECK_S = 0.05
RECHECK_GIVE_UP_S = 2.0
#: what rclpy reports for an endpoint whose node's name has not arrived yet
UNKNOWN_NAME = "_NODE_NAME_UNKNOWN_"
#: samples of a producer's publisher held until START (module doc of rths_ros.runtime.guard); more are dropped
HELD_MAX = 10000


def _sample_publisher() -> bool:
    """Whether rclpy hands the publisher's gid with every sample (its MessageInfo declares ``publisher_gid``:
    rclpy 9 of Kilted does, rclpy 7 of Jazzy does not).  A capability, read from the library itself."""
    try:
        from rclpy.subscription import MessageInfo
    except ImportError:
        return False
    return "publisher_gid" in getattr(MessageInfo, "__annotations__", {})


#: rclpy gives each sample's publisher (module doc); a sample without one switches a check to the same mode
SAMPLE_PUBLISHER = _sample_publisher()


_MSG_AND_INFO = inspect.Signature([inspect.Parameter("msg", inspect.Parameter.POSITIONAL_ONLY),
                                   inspect.Parameter("info", inspect.Parameter.POSITIONAL_ONLY)])


def _gid16(gid) -> bytes:
    return bytes(gid)[:16]


#: a DDS gid is its participant's GUID prefix (12 bytes) and the endpoint's entity id: every endpoint of one
#: participant (one ROS context, so one process of nodes) shares the prefix
PARTICIPANT_BYTES = 12


def sample_participant(info) -> str:
    """The hex GUID prefix of the participant that published a sample, from its MessageInfo ('' where the client
    library hands no publisher, as rclpy of Jazzy)."""
    gid = info.get("publisher_gid") if info else None
    return bytes(gid["data"])[:PARTICIPANT_BYTES].hex() if gid else ""


class PublisherCheck:
    """The publisher check (module doc).  ``expected``: topic -> the producer node names the run has;
    ``lookup(topic)`` -> [(node name, namespace, gid bytes)] of the topic's publishers in the ROS graph;
    ``report(topic, publisher, gid)`` is called once per foreign publisher; ``timing.foreign_messages`` counts."""

    def __init__(self, namespace: str, expected: dict[str, tuple[str, ...]], lookup: Callable, report: Callable,
                 timing, anonymous: bool = False, pre_start: tuple[str, ...] = ()):
        self.namespace = namespace
        #: topics whose samples are taken before START too (the ILC feedforward, sent before the run); any other
        #: topic's samples that come with their publisher are held until START binds each producer to the
        #: participant of its READY, then taken or dropped as an impostor's
        self.pre_start = frozenset(pre_start)
        self.held: list[tuple[str, object, bytes, Callable]] = []
        self.held_dropped = 0
        #: samples come without their publisher (module doc): a topic's samples are taken while the graph shows no
        #: foreign publisher of it, and every foreign publisher is fatal (the caller's ``report`` decides)
        self.anonymous = anonymous
        self.expected = expected
        self.lookup = lookup
        self.report = report
        self.timing = timing
        self.frozen = False
        self.allowed: dict[str, set[bytes]] = {}
        self.owners: dict[str, dict[str, set[bytes]]] = {}
        self.foreign: dict[str, set] = {}
        self.counts: dict[str, list[int]] = {}
        self.publishers: list[dict] = []
        self._graph: dict[bytes, str] = {}     # gid -> node of every publisher seen in the graph (for the reports)
        self.claims: dict[tuple[str, str], set[bytes]] = {}   # (topic, producer) -> gids under its name before START
        self.seen: dict[str, dict[bytes, str]] = {}            # topic -> {gid: node} of its publishers in the graph
        self.listed: dict[str, set[bytes]] = {}                # topic -> gids reported as foreign
        self.pending: dict[bytes, tuple[float, float]] = {}   # unknown gid -> (first seen, last looked up)
        self.readers: dict[str, object] = {}                   # topic -> its subscription (matched writer count)
        self.unattributed: dict[str, tuple[float, float]] = {}  # topic -> (first, last look) of dropped samples
        #: producer -> the GUID prefix of the participant its READY came from (from START, :meth:`bind`)
        self.participants: dict[str, bytes] = {}
        self.impostors: dict[bytes, str] = {}                   # gid -> the producer whose name it took

    def wrap(self, topic: str, callback: Callable, decode: Callable | None = None) -> Callable:
        """A subscription callback for ``topic`` that takes (message, MessageInfo) and hands ``callback`` the
        message of a run's publisher only.  Its signature says two arguments, so rclpy passes the MessageInfo; it
        also takes the pair as one tuple (the EventsExecutor of rclpy 9 passes it so).  ``decode``: the message
        comes as CDR bytes (a raw subscription) and this makes the message of them (rths_ros.cdr)."""
        allowed = self.allowed.setdefault(topic, set())
        self.owners.setdefault(topic, {})
        self.foreign.setdefault(topic, set())
        self.counts.setdefault(topic, [0])

        listed = self.listed.setdefault(topic, set())
        readers, unattributed = self.readers, self.unattributed
        writers = len(self.expected.get(topic, ()))
        last_seq = [0]              # the writer's sequence number of the last sample taken (one producer)

        def cb(*args) -> None:
            msg, info = args if len(args) == 2 else args[0]
            if decode is not None:
                msg = decode(msg)
            gid = info.get("publisher_gid") if info else None
            data = gid["data"] if gid else None
            if data in allowed:
                self._take(topic, msg, data, callback)
            elif data is None and info is not None and "publisher_gid" not in info:
                self.anonymous = True       # the client library gives no publisher (the module doc)
                reader = readers.get(topic)
                seq = info.get("publication_sequence_number") or 0
                if (not listed and topic not in unattributed and (writers != 1 or seq == 0 or seq > last_seq[0])
                        and (reader is None or reader.get_publisher_count() <= writers)):
                    last_seq[0] = seq
                    callback(msg)
                else:
                    self._count(topic)
                    self._unattributed(topic)
            else:
                self._unknown(topic, msg, data, callback)
        cb.__signature__ = _MSG_AND_INFO
        return cb

    def _unknown(self, topic: str, msg, data, callback) -> None:
        """A sample of a gid not (yet) allowed: ask the graph again (at most every RECHECK_S for a gid whose node is
        not named in the graph yet); a run's producer is taken, anything else is dropped and counted, and reported
        once its node is known (or RECHECK_GIVE_UP_S later)."""
        allowed, foreign = self.allowed[topic], self.foreign[topic]
        if data is not None and data not in foreign:
            now = time.monotonic()
            first, last = self.pending.get(data, (now, 0.0))
            if now - last >= RECHECK_S:
                self.refresh(topic)
                self.pending[data] = (first, now)
            if _gid16(data) in allowed:
                self.pending.pop(data, None)
                allowed.add(data)
                self._take(topic, msg, data, callback)
                return
            who = self._graph.get(_gid16(data))
            if who is None and now - first < RECHECK_GIVE_UP_S:     # its node is not in the graph yet
                self._count(topic)
                return
            self.pending.pop(data, None)
        self._count(topic)
        if data in foreign:
            return
        foreign.add(data)
        if data is None:
            who = "a publisher without a gid"
        else:
            who = self.who(_gid16(data))
        if data is not None:
            listed = self.listed.setdefault(topic, set())
            if _gid16(data) in listed:
                return          # reported already (found in the graph by the sweep)
            listed.add(_gid16(data))
        self._list(topic, who, None if data is None else _gid16(data))

    def _take(self, topic: str, msg, data, callback) -> None:
        """Hand a producer's sample to ``callback``; before START (not a ``pre_start`` topic) hold it instead."""
        if self.frozen or topic in self.pre_start or data is None:
            callback(msg)
        elif len(self.held) < HELD_MAX:
            self.held.append((topic, msg, data, callback))
        else:
            self.held_dropped += 1

    def _release_held(self) -> None:
        """At START: the held samples of a publisher still allowed (bound to its producer's participant) go to
        their callbacks in the order they came; an impostor's are dropped, counted and reported."""
        held, self.held = self.held, []
        for topic, msg, data, callback in held:
            if data in self.allowed.get(topic, ()):
                callback(msg)
            else:
                self._unknown(topic, msg, data, callback)

    def bind(self, topic: str, subscription) -> None:
        """The subscription of ``topic`` (its matched-writer count serves the check without sample publishers)."""
        self.readers[topic] = subscription

    def _unattributed(self, topic: str) -> None:
        """A sample dropped because a writer the run does not have is matched: name it from the graph now (at most
        every RECHECK_S), or report it unnamed once RECHECK_GIVE_UP_S passed without a name."""
        now = time.monotonic()
        first, last = self.unattributed.get(topic, (now, 0.0))
        if now - last < RECHECK_S:
            return
        self.unattributed[topic] = (first, now)
        before = len(self.publishers)
        self.sweep([topic])
        if len(self.publishers) == before and now - first >= RECHECK_GIVE_UP_S and not self.listed[topic]:
            self.listed[topic].add(b"")
            self.publishers.append({"topic": topic, "publisher": "a writer its node never named in the ROS graph",
                                    "gid": "-"})
            self.report(topic, "a writer its node never named in the ROS graph", "-")

    def sweep(self, topics=None) -> None:
        """Report (once) every publisher of a topic checked here that the graph shows and that is not one of the
        run's producers: its samples may never reach this node (the content filter drops those without the run's
        mark), so the graph is where it shows.  Called after START (and at READY where samples come without their
        publisher)."""
        for topic in list(self.allowed) if topics is None else topics:
            self.refresh(topic)
            allowed, listed = self.allowed[topic], self.listed.setdefault(topic, set())
            for gid, who in self.seen.get(topic, {}).items():
                if gid in allowed or gid in listed:
                    continue
                listed.add(gid)
                self._list(topic, who, gid)

    def _count(self, topic: str) -> None:
        self.counts[topic][0] += 1
        self.timing.foreign_messages += 1

    def refresh(self, topic: str) -> None:
        """Take the run's producers of ``topic`` from the ROS graph into the table (see the module doc)."""
        names = self.expected.get(topic, ())
        allowed, owners = self.allowed.setdefault(topic, set()), self.owners.setdefault(topic, {})
        graph = dict(self._graph)
        seen = {}
        for name, ns, gid in self.lookup(topic):
            if name == UNKNOWN_NAME:
                continue        # the endpoint is discovered, its node's name not yet: decided on a later look
            gid = _gid16(gid)
            graph[gid] = seen[gid] = f"{ns.rstrip('/')}/{name}"
            if name not in names or ns != self.namespace:
                continue
            if not self.frozen:
                self.claims.setdefault((topic, name), set()).add(gid)
            known = owners.setdefault(name, set())
            home = self.participants.get(name)
            if home is not None:    # after START: the producer's publisher is the one of its READY's participant
                if gid[:PARTICIPANT_BYTES] != home:
                    self.impostors[gid] = name
                    continue
                known.add(gid)
                allowed.add(gid)    # (also one that was ambiguous before START: START's participant says it is)
                continue
            if gid in known or (known and self.frozen):
                continue        # after START a producer that has its publisher gets no second one
            known.add(gid)
            allowed.add(gid)
        for (t, _name), gids in self.claims.items():
            if t == topic and len(gids) > 1:
                allowed.difference_update(gids)      # ambiguous before START: neither is taken
        self._graph = graph
        self.seen[topic] = seen

    def ready(self) -> bool:
        """Look the producers up; True when every producer the run has of every topic checked here has its
        publisher in the table, and no producer has two (a node announces READY only then, so the table is
        complete and unambiguous at START)."""
        self.snapshot()
        return not self.duplicates() and all(name in self.owners.get(topic, {}) for topic in self.allowed
                                             for name in self.expected.get(topic, ()))

    def duplicates(self) -> list[tuple[str, str, list[str]]]:
        """[(topic, producer, [gid hex, ...])] of every producer with more than one publisher of a topic before
        START: the run cannot tell its own publisher from an impostor's."""
        return [(topic, name, sorted(g.hex() for g in gids)) for (topic, name), gids in sorted(self.claims.items())
                if len(gids) > 1]

    def snapshot(self, freeze: bool = False, participants: dict[str, str] | None = None) -> None:
        """Look every topic's producers up; ``freeze`` at START, with ``participants`` (producer -> hex GUID prefix
        of the participant whose READY the supervisor counted, where it knows it): from then on a producer's
        publisher is only one of that participant, whatever took its name before."""
        for topic in self.allowed:
            self.refresh(topic)
        self.frozen = self.frozen or freeze
        if participants:
            self.participants.update({n: bytes.fromhex(p) for n, p in participants.items() if p})
            # two publishers under a producer's name seen here before START are no longer ambiguous once START names
            # the producer's participant: the other one is an impostor (the supervisor had not seen it, or it came
            # into this reader's view between its READY and START)
            for (_topic, name), gids in self.claims.items():
                home = self.participants.get(name)
                for gid in [g for g in gids if home is not None and g[:PARTICIPANT_BYTES] != home]:
                    gids.discard(gid)
                    self.impostors[gid] = name
            for topic, owners in self.owners.items():
                for name, gids in owners.items():
                    home = self.participants.get(name)
                    for gid in [g for g in gids if home is not None and g[:PARTICIPANT_BYTES] != home]:
                        gids.discard(gid)
                        self.allowed[topic].discard(gid)
                        self.impostors[gid] = name
                self.refresh(topic)
        if freeze:
            self._release_held()

    def who(self, gid: bytes) -> str:
        """The node a gid belongs to in the ROS graph."""
        return self._graph.get(gid) or "a publisher its node never named in the ROS graph"

    def _list(self, topic: str, who: str, gid: bytes | None) -> None:
        """Report a foreign publisher (once; the caller checks), said as an impostor where it took a producer's
        name."""
        gid_hex = "-" if gid is None else gid.hex()
        entry = {"topic": topic, "publisher": who, "gid": gid_hex}
        name = self.impostors.get(gid)
        if name is not None:
            entry["impostor_of"] = name
            who = (f"{who}, an impostor (the name of the run's {name}, but not the participant that announced "
                   f"{name}'s READY)")
        self.publishers.append(entry)
        self.report(topic, who, gid_hex)

    def summary(self) -> dict:
        return {"foreign": {t: c[0] for t, c in self.counts.items() if c[0]},
                "held_before_start_dropped": self.held_dropped,
                "foreign_publishers": list(self.publishers),
                "producers": {t: {n: sorted(g.hex() for g in gids) for n, gids in o.items()}
                              for t, o in self.owners.items()}}


__all__ = ["PublisherCheck", "SAMPLE_PUBLISHER", "PARTICIPANT_BYTES", "sample_participant", "RECHECK_S", "RECHECK_GIVE_UP_S", "UNKNOWN_NAME",
           "HELD_MAX"]
