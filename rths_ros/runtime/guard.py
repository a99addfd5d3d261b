"""What a node lets through from a loop topic: only the run's own publishers, only sound messages.

Two checks sit in front of every loop callback (``RthsNode.control_subscription``; the recorder and the
stewart_platform's ILC feedforward use :meth:`LoopGuard.subscription` directly):

* **Publisher check** (:class:`~rths_ros.runtime.publisher_check.PublisherCheck`, DDS subscriptions only).  Every
  sample carries the gid of the publisher that wrote it (rclpy's MessageInfo ``publisher_gid``).  A node accepts a topic's samples only from
  the gids of the topic's producers in :data:`rths_ros.runtime.topics.TOPICS` that the scenario runs, found by
  node name and namespace in the ROS graph (``get_publishers_info_by_topic``): a node announces READY only once
  every such producer is there (so the table is complete when the handshake ends), looks again at START and
  once more for each gid not seen before.  A producer has exactly one publisher per topic: two publishers that
  claim the same producer's node name and namespace before START (an impostor started before the run, or a second
  rig's node of the same name in the same namespace) cannot be told apart, so the node refuses to announce READY
  and aborts the run before it starts, naming both gids (:meth:`PublisherCheck.duplicates`).  From START on the
  table is closed for a producer that already has a publisher: a second publisher under the same node name is
  foreign.  START tells each node which participant (DDS GUID prefix, one per process of nodes) every producer
  announced READY from (:func:`start_reason`; the supervisor reads it from the READY sample's publisher gid):
  from then on a producer's publisher is only one of that participant, so an impostor that a reader discovered
  late, or alone before the real producer's publisher, is foreign and reported, and the real one is taken.
  A foreign sample is dropped before anything reads it, counted (``foreign_messages`` in the node's timing
  summary, per topic under ``guard``) and reported once per publisher as an event on /rths/events
  (:data:`GUARD_EVENT`, whose reason starts with "rejected").  The run goes on.
  Where the client library gives no publisher with a sample (:data:`SAMPLE_PUBLISHER` false: rclpy 7 of Jazzy
  has no ``publisher_gid`` in its MessageInfo) a sample cannot be told apart from the run's own.  A node then takes
  a topic's samples only while its reader is matched with no more writers than the run has producers of the topic
  (the count costs about 0.6 us; Fast DDS 2 updates it a little after a new writer's first samples can arrive),
  each sample's writer sequence number is above the last one taken (a writer numbers its samples 1, 2, 3, ...:
  samples of a second writer break the order at once, unless it numbers above the run's producer and comes before
  the next sample of it) and the graph shows no foreign publisher of it.  Any other sample is dropped and counted, and so is every later sample of the topic (a
  foreign writer left alone once the run's has gone would pass the count), the graph is asked at once, and a foreign
  publisher found there (or at READY, at START, or by the sweep once a second) aborts the run, or keeps it from
  starting, naming the publisher (:meth:`LoopGuard._report`); one that never gets a name is reported as such
  after RECHECK_GIVE_UP_S.
* **The run's mark** (:func:`run_mark`, DDS subscriptions of the control topics).  Every producer writes the mark
  into ``header.frame_id`` of each control message.  With ``safety.mark_filter`` every reader subscribes with a
  DDS content filter that admits only that mark: a foreign sample without it is dropped inside the DDS reader,
  before any Python runs (the filter itself costs about 60 us of CPU per message and reader on a 2-core machine,
  hence off by default).  Every node also looks at the ROS graph once a second after START (:meth:`sweep`) and
  reports each publisher of its topics that is not the run's, whether or not its samples reach it.  A sample
  that carries the mark (a copy of the run's messages) still meets the publisher check.  On the local bus of a composed
  process (rths_ros.runtime.local_bus) the loop messages never pass through DDS, so no foreign sample can reach
  those callbacks; only the recorder reads the loop over DDS there, and it checks the publishers too.
* **Message validation** (:class:`MessageValidator`, every loop callback, DDS or local bus, whatever the
  publisher).  Per topic (:data:`SPECS`): the step index must be new (a step at or below the last one taken is
  stale, a duplicate or out of order: dropped and counted as ``late_messages``, as the lockstep flow counts a
  late message), and within the run (no step beyond the last one a run can reach, the ramp to the safe pose
  included); every array has its expected length (the message's fixed size, or the scenario's interface widths,
  :func:`rths_ros.app.factory.interface_widths`); every value is finite and within :data:`HUGE`.  Anything else
  is a corrupt message: the node drops it and every later one, aborts the run with a reason that names the topic,
  the field and the step (``invalid_messages``), and the plant ramps to its safe pose; the corrupt message never
  reaches the callback, so it never reaches the plant.

Cost per message: one set lookup of the gid, one comparison of the step, and per array one ``math.hypot`` (a
single C call over the values, exact for "all finite and within HUGE" except for a norm above HUGE, which is then
checked value by value).  docs/safety.md lists the cases and what happens.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter

from rclpy.logging import LoggingSeverity

from rths_ros.cdr import decoder
from rths_ros.msg import TestEvent
from rths_ros.runtime import loop_log
from rths_ros.runtime.publisher_check import (  # noqa: F401  (the check's names, also from here)
    _MSG_AND_INFO,
    RECHECK_GIVE_UP_S,
    RECHECK_S,
    SAMPLE_PUBLISHER,
    UNKNOWN_NAME,
    PublisherCheck,
    sample_participant,
)

#: no quantity of the loop comes near this magnitude in SI units (leg lengths ~1 m, forces below the sensor range
#: of at most 1e6 N, energies, coefficients): a value beyond it is corrupt
HUGE = 1e9
#: the event a rejected foreign publisher is reported with (no node acts on it: the run goes on); the reason says
#: which topic and which publisher ("rejected ...")
GUARD_EVENT = TestEvent.REJECTED
#: foreign publishers reported as events per node (every sample is counted)
MAX_REPORTS = 10

@dataclass(frozen=True)
class Field:
    """One checked array of a message: ``get(msg)`` its values; ``width`` the expected number (an int, a key of the
    widths table, or None: any); ``names`` names the entries of a group of scalars (else ``name[i]``)."""

    name: str
    get: Callable
    width: int | str | None
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Spec:
    """The checks of one topic: the message's index field (``step``; the ILC feedforward's ``trial``), its arrays,
    and an optional consistency check ``extra(msg) -> reason | None``."""

    index: str
    fields: tuple[Field, ...]
    extra: Callable | None = None


def _values(name: str) -> Callable:
    """The values of an array field as a list of floats (rclpy keeps a fixed-size array as a numpy array and a
    sequence as an array.array: both have ``tolist``, far cheaper to unpack than numpy scalars)."""
    get = attrgetter(name)
    return lambda m: get(m).tolist()


def _arrays(*names: str, width: int | str) -> tuple[Field, ...]:
    return tuple(Field(n, _values(n), width) for n in names)


def _wrench(m) -> tuple:
    f, t = m.wrench.force, m.wrench.torque
    return f.x, f.y, f.z, t.x, t.y, t.z


_PASSIVITY = ("p_error", "p_tot", "p_error_filtered", "p_tot_filtered", "alpha", "damping_force", "e_error", "e_diss")


def _passivity(m) -> tuple:
    return (m.p_error, m.p_tot, m.p_error_filtered, m.p_tot_filtered, m.alpha, m.damping_force, m.e_error, m.e_diss)


def _legs_times(count: str, data: str):
    """Consistency of a per-leg table: 6 legs, n_legs x ``count`` = len(``data``)."""
    def extra(m) -> str | None:
        n = len(getattr(m, data))
        if m.n_legs != 6 or m.n_legs * getattr(m, count) != n:
            return f"n_legs = {m.n_legs} x {count} = {getattr(m, count)} does not give the {n} entries of {data}"
        return None
    return extra


#: the loop topics and what is checked on each (see the module doc)
SPECS: dict[str, Spec] = {
    "/rths/leg_command": Spec("step", _arrays("length", "velocity", "feedforward_velocity", "feedforward_position",
                                              width=6)),
    "/rths/leg_state": Spec("step", _arrays("length", "velocity", "current", width=6)),
    "/rths/raw_wrench": Spec("step", (Field("wrench", _wrench, 6),)),
    "/rths/interface_force": Spec("step", (Field("force", _values("force"), "force"),
                                           Field("measured", _values("measured"), "measured"))),
    "/rths/interface_command": Spec("step", _arrays("position", "velocity", width="command")),
    "/rths/interface_state": Spec("step", _arrays("position", "velocity", width="state")),
    "/rths/passivity": Spec("step", (Field("passivity", _passivity, 8, _PASSIVITY),)),
    "/rths/aff_coefficients": Spec("step", (Field("coefficients", _values("coefficients"), "aff_coefficients"),),
                                   _legs_times("n_coefficients", "coefficients")),
    "/rths/ilc_feedforward": Spec("trial", (Field("data", _values("data"), "ilc_feedforward"),),
                                  _legs_times("n_samples", "data")),
}


def value_fault(values) -> tuple[int, float] | None:
    """(index, value) of the first entry that is NaN, inf or beyond :data:`HUGE` in magnitude, else None."""
    try:
        if math.hypot(*values) <= HUGE:      # one C call: all finite and the norm within HUGE
            return None
    except (TypeError, ValueError, OverflowError):
        pass
    for i, v in enumerate(values):
        if not -HUGE <= v <= HUGE:
            return i, float(v)
    return None


def describe_value_fault(field: Field, i: int, v: float, index: str, k: int, topic: str) -> str:
    entry = field.names[i] if field.names else f"{field.name}[{i}]"
    if not math.isfinite(v):
        return f"non-finite {entry} = {v!r} at {index} {k} on {topic}"
    return f"{entry} = {v:.6g} beyond the plausible magnitude {HUGE:g} at {index} {k} on {topic}"


class MessageValidator:
    """The message validation (module doc).  ``widths`` resolves the named widths (a dict, or a callable
    ``key -> int | None`` evaluated when a topic is first wrapped); ``last_index`` maps an index field to the
    largest value a run can reach; ``abort(index, reason)`` is called once for the first corrupt message, after
    which every message is dropped; ``timing`` counts (``late_messages``, ``invalid_messages``)."""

    def __init__(self, widths, last_index: dict[str, int], timing, abort: Callable[[int, str], None]):
        self._widths = widths
        self.last_index = last_index
        self.timing = timing
        self._abort = abort
        self.tripped = False
        self.stale: dict[str, list[int]] = {}
        self.invalid: dict[str, str] = {}

    def width(self, key) -> int | None:
        if key is None or isinstance(key, int):
            return key
        return self._widths(key) if callable(self._widths) else self._widths.get(key)

    def wrap(self, topic: str, callback: Callable) -> Callable:
        """``callback`` behind the validation of ``topic`` (unchanged for a topic without a spec)."""
        spec = SPECS.get(topic)
        if spec is None:
            return callback
        index, extra = spec.index, spec.extra
        checks = tuple((f, f.get, self.width(f.width)) for f in spec.fields)
        hi = self.last_index[index]
        stale = self.stale.setdefault(topic, [0])
        last = [-1]
        timing = self.timing

        def cb(msg) -> None:
            if self.tripped:
                return
            k = getattr(msg, index)
            if k <= last[0]:                 # stale, duplicate or out of order
                stale[0] += 1
                timing.late_messages += 1
                return
            if k > hi:                       # (the abort names the last sound index as its step)
                self._reject(topic, max(last[0], 0), f"{index} index {k} beyond the last one of the run ({hi}) on "
                                                     f"{topic}")
                return
            for f, get, n in checks:
                values = get(msg)
                if n is not None and len(values) != n:
                    self._reject(topic, k, f"{f.name} has {len(values)} entries where {n} are expected at {index} "
                                           f"{k} on {topic}")
                    return
                bad = value_fault(values)
                if bad is not None:
                    self._reject(topic, k, describe_value_fault(f, bad[0], bad[1], index, k, topic))
                    return
            if extra is not None:
                why = extra(msg)
                if why is not None:
                    self._reject(topic, k, f"{why} at {index} {k} on {topic}")
                    return
            last[0] = k
            callback(msg)
        return cb

    def _reject(self, topic: str, k: int, reason: str) -> None:
        self.timing.invalid_messages += 1
        self.invalid.setdefault(topic, reason)
        if not self.tripped:
            self.tripped = True
            self._abort(int(k), reason)


def run_mark(scenario) -> str:
    """The mark every producer of the run writes into ``header.frame_id`` of its control messages, and the only one
    the readers' content filter admits: the scenario's name (both hosts of a run load the same scenario; two runs
    in one namespace are told apart by the publisher check)."""
    return f"rths:{scenario.name}"


def mark_filter(mark: str):
    """The content filter options of a control topic's reader: ``header.frame_id`` equals ``mark``."""
    from rclpy.subscription_content_filter_options import ContentFilterOptions
    return ContentFilterOptions(filter_expression="header.frame_id = %0", expression_parameters=[f"'{mark}'"])


class MarkedPublisher:
    """A control topic's DDS publisher that writes the run's mark into every message (module doc)."""

    def __init__(self, dds_publisher, mark: str):
        self.dds, self.mark = dds_publisher, mark

    def publish(self, msg) -> None:
        msg.header.frame_id = self.mark
        self.dds.publish(msg)

    def __getattr__(self, name):      # get_subscription_count, wait_for_all_acked, topic_name, ...
        return getattr(self.dds, name)


def start_reason(participants: dict[str, str]) -> str:
    """The reason of the START event: the participant (hex GUID prefix) each node announced READY from."""
    return json.dumps({"participants": dict(sorted(participants.items()))}, separators=(",", ":"))


def start_participants(reason: str) -> dict[str, str]:
    """The participants a START event names ({} for a START without them: a supervisor on a client library that
    gives no publisher with a sample)."""
    try:
        got = json.loads(reason).get("participants", {}) if reason.startswith("{") else {}
    except (ValueError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in got.items()} if isinstance(got, dict) else {}


def events_callback(node, callback: Callable) -> Callable:
    """A /rths/events callback that also takes the sample's MessageInfo: ``node.event_participant`` is the
    participant that sent the event being handled ('' where the client library does not say)."""
    def cb(*args) -> None:
        msg, info = args if len(args) == 2 else args[0]
        node.event_participant = sample_participant(info)
        callback(msg)
    cb.__signature__ = _MSG_AND_INFO
    return cb


class LoopGuard:
    """Both checks of one node (module doc): ``validated(topic, cb)`` for every loop callback,
    ``subscription(...)`` = ``create_subscription`` behind the publisher check, ``snapshot`` at READY and START."""

    def __init__(self, node):
        from rths_ros.core.platform.safety import safe_ramp_bound_s
        from rths_ros.runtime.topics import TOPICS
        s = node.scenario
        self.node = node
        self.reports = 0
        self.refused = False
        self.pending_reports: list[tuple[int, str]] = []
        run = set(s.run_nodes)
        expected = {t.name: tuple(p for p in t.producers if p in run) for t in TOPICS if t.producers}
        #: widths by key; a node adds its own (stewart_platform: "aff_coefficients")
        self.widths: dict[str, int] = {"ilc_feedforward": 6 * s.steps}
        # the plant keeps counting steps while it ramps to the safe pose after an abort in the last trial's last step
        g = s.platform.geometry
        ramp_s = (math.pi * (g.leg_length_max_m - g.leg_length_min_m) / (2.0 * s.safety.ramp_speed_m_per_s)
                  + s.safety.hold_s)
        last_step = s.loop.trials * (s.steps + 1) + max(math.ceil(ramp_s / s.loop.dt_s),
                                                         math.ceil(safe_ramp_bound_s(s.safety) / s.loop.dt_s)) + 1
        self.validator = MessageValidator(self._width, {"step": last_step, "trial": s.loop.trials - 1}, node.timing,
                                          self._abort)
        self.publishers = PublisherCheck(node.get_namespace(), expected, self._lookup, self._report, node.timing,
                                         anonymous=not SAMPLE_PUBLISHER,
                                         pre_start=tuple(t.name for t in TOPICS if t.kind == "event"))
        #: the run's mark (module doc); the control topics' readers admit only it
        self.mark = run_mark(s)
        self._control = {t.name for t in TOPICS if t.kind == "control"}
        self._types = {t.name: t.type for t in TOPICS}
        node.create_timer(1.0, self._sweep)

    def _width(self, key: str) -> int | None:
        if key not in self.widths and key in ("command", "force", "measured", "state"):
            from rths_ros.app.factory import interface_widths  # imported only by the nodes that read them
            self.widths.update(interface_widths(self.node.scenario))
        return self.widths.get(key)

    def validated(self, topic: str, callback: Callable) -> Callable:
        wrapped = self.validator.wrap(topic, callback)
        f = self.node.scenario.faults
        if f.crash_node != self.node.role or f.crash_at_step < 0:
            return wrapped
        at, node = f.crash_at_step, self.node

        def crashing(msg):          # injected: an uncaught error in this node's loop callback (faults.crash_node)
            if msg.step >= at:
                raise RuntimeError(f"injected crash of {node.role} at step {int(msg.step)} (faults.crash_node)")
            wrapped(msg)
        return crashing

    def subscription(self, msg_type, topic: str, callback: Callable, qos, **kw):
        """``create_subscription`` whose ``callback`` only sees the samples of the run's producers of ``topic``
        (a control topic's reader also filters by the run's mark in DDS)."""
        if topic in self._control and self.node.scenario.safety.mark_filter:
            kw.setdefault("content_filter_options", mark_filter(self.mark))
        decode = decoder(self._types.get(topic, "")) if (self.node.scenario.realtime.fast_decode
                                                         and not kw.get("raw")) else None
        if decode is not None:      # taken as CDR bytes, decoded by the package's own decoder (rths_ros.cdr)
            kw["raw"] = True
        sub = self.node.create_subscription(msg_type, topic, self.publishers.wrap(topic, callback, decode), qos,
                                            **kw)
        self.publishers.bind(topic, sub)
        return sub

    def publisher(self, topic: str, dds_publisher):
        """A control topic's publisher that writes the run's mark (others as they are)."""
        return MarkedPublisher(dds_publisher, self.mark) if topic in self._control else dds_publisher

    def _sweep(self) -> None:
        node = self.node
        if node.started and not node.done:
            self.publishers.sweep()

    def snapshot(self, freeze: bool = False, start=None) -> None:
        """Look the producers up (at READY); at START (``freeze``, ``start`` the START event) close the table, bound
        to the participants START names."""
        self.publishers.snapshot(freeze, start_participants(start.reason) if start is not None else None)
        self._refuse_duplicates()
        if freeze:          # START: the supervisor hears this node now (its READY arrived); send what waited
            pending, self.pending_reports = self.pending_reports, []
            for step, reason in pending:
                self.node.emit(GUARD_EVENT, step, reason)

    def ready(self) -> bool:
        """Every producer of every topic this node reads over DDS is in the publisher table, with exactly one
        publisher (module doc)."""
        ok = self.publishers.ready()
        self._refuse_duplicates()
        if self.publishers.anonymous:       # a foreign publisher could not be told apart later: none may start
            self.publishers.sweep()
        return ok and not self.node.abort_reason

    def _refuse_duplicates(self) -> None:
        """Two publishers under one producer's name before START: abort the run before it starts, naming both
        (once; the ABORT reaches the supervisor, which then never sends START)."""
        dups = self.publishers.duplicates()
        node = self.node
        if not dups or self.refused:
            return
        self.refused = True
        what = "; ".join(f"{len(gids)} publishers of {topic} claim to be the run's {name} "
                         f"({', '.join('gid ' + g for g in gids)})" for topic, name, gids in dups)
        reason = (f"{node.role}: {what}: another node with that name in namespace "
                  f"{node.get_namespace()!r} of this ROS domain (an impostor, or a second rig without its own "
                  "namespace); the run cannot tell its own publisher, so it "
                  + ("is aborted at START" if node.started else "does not start"))
        node.get_logger().error(reason)
        node.abort_reason = node.abort_reason or reason
        node.emit(TestEvent.ABORT, self._step(), reason)

    def _lookup(self, topic: str) -> list[tuple[str, str, bytes]]:
        return [(i.node_name, i.node_namespace, bytes(i.endpoint_gid))
                for i in self.node.get_publishers_info_by_topic(topic)]

    def _report(self, topic: str, publisher: str, gid: str) -> None:
        node = self.node
        producers = ", ".join(self.publishers.expected.get(topic, ())) or "none"
        if self.publishers.anonymous:
            self._refuse_duplicates()       # a second publisher under a producer's name before START: say so
            self._abort(self._step(), f"{topic} has a publisher that is not the run's: {publisher} (gid {gid}); this "
                        "ROS 2 client library hands no publisher with a sample (rclpy's MessageInfo has no "
                        f"publisher_gid, as in Jazzy), so its samples cannot be told from those of the run's "
                        f"producer ({producers}): the run " + ("is aborted" if node.started else "does not start"))
            return
        reason = (f"{node.role}: rejected {topic} from {publisher} (gid {gid}): not the run's producer "
                  f"({producers}); its samples are dropped (without the run's mark by the content filter, else by "
                  "the publisher check, counted), the run goes on")
        loop_log.log(node, LoggingSeverity.WARN, reason)      # no caller lookup in the loop (loop_log)
        self.reports += 1
        if self.reports > MAX_REPORTS:
            return
        if node.started:
            node.emit(GUARD_EVENT, self._step(), reason)
        else:               # before START the supervisor may not hear this node yet: report at START
            self.pending_reports.append((self._step(), reason))

    def _step(self) -> int:
        try:
            return int(self.node.progress_step())
        except Exception:      # a node without a step counter
            return 0

    def _abort(self, k: int, reason: str) -> None:
        node = self.node
        if node.abort_reason or node.done:
            return
        node.abort_reason = f"{node.role}: {reason}"
        node.get_logger().error(node.abort_reason)
        node.emit(TestEvent.ABORT, k, node.abort_reason)

    def summary(self) -> dict:
        out = self.publishers.summary()
        out["stale"] = {t: c[0] for t, c in self.validator.stale.items() if c[0]}
        out["invalid"] = dict(self.validator.invalid)
        out["qos_incompatible"] = dict(getattr(self.node, "qos_incompatible", {}))
        return {"guard": out}
