"""The loop guard at unit level (rths_ros.runtime.guard): every hostile message case on every loop topic, through the
shared validation, with the real message classes; the publisher check with a stand-in ROS graph.

The downstream callback stands for the node (and so for the plant): a corrupt message must never reach it, the
validation aborts once with a reason naming topic, field and step; stale, duplicate and out-of-order messages
are dropped and counted as late, without an abort."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.platform.safety import VARIABLE_LENGTH_TOPICS
from rths_ros.msg import (
    AdaptiveFilter,
    IlcFeedforward,
    InterfaceCommand,
    InterfaceForce,
    InterfaceState,
    LegCommand,
    LegState,
    PassivityState,
    RawWrench,
)
from rths_ros.runtime.fault_injection import corrupt
from rths_ros.runtime.guard import (
    HUGE,
    SPECS,
    MessageValidator,
    PublisherCheck,
    sample_participant,
    start_participants,
    start_reason,
    value_fault,
)
from rths_ros.runtime.timing import TimingStats

WIDTHS = {"command": 3, "force": 3, "measured": 3, "state": 3, "aff_coefficients": 6 * 4, "ilc_feedforward": 6 * 5}
LAST = {"step": 1000, "trial": 10}


def _valid(topic: str, k: int):
    """A sound message of ``topic`` for step (trial) k."""
    if topic == "/rths/leg_command":
        m = LegCommand()
        m.length = [0.7] * 6
        m.velocity = [0.01] * 6
        m.feedforward_velocity = [0.01] * 6
        m.feedforward_position = [0.0] * 6
    elif topic == "/rths/leg_state":
        m = LegState()
        m.length, m.velocity, m.current = [0.7] * 6, [0.0] * 6, [1.5] * 6
    elif topic == "/rths/raw_wrench":
        m = RawWrench()
        m.wrench.force.z = -120.0
        m.wrench.torque.x = 0.5
    elif topic == "/rths/interface_force":
        m = InterfaceForce()
        m.force, m.measured = [10.0, 2.0, 0.1], [10.0, 2.0, 0.3]
    elif topic == "/rths/interface_command":
        m = InterfaceCommand()
        m.position, m.velocity = [0.001, 0.0, 0.01], [0.01, 0.0, 0.0]
    elif topic == "/rths/interface_state":
        m = InterfaceState()
        m.position, m.velocity = [0.001, 0.0, 0.01], [0.01, 0.0, 0.0]
    elif topic == "/rths/passivity":
        m = PassivityState()
        m.alpha, m.damping_force, m.p_tot = 50.0, 0.5, 3.0
    elif topic == "/rths/aff_coefficients":
        m = AdaptiveFilter()
        m.kind, m.n_legs, m.n_coefficients = "fir", 6, 4
        m.coefficients = list(np.linspace(-0.1, 0.1, 24))
    elif topic == "/rths/ilc_feedforward":
        m = IlcFeedforward()
        m.n_legs, m.n_samples, m.dt = 6, 5, 1e-3
        m.data = list(np.linspace(-1e-3, 1e-3, 30))
        m.trial = k
        return m
    else:
        raise KeyError(topic)
    m.step = k
    return m


class Probe:
    """A validator around a recording callback (the node) and a recording abort."""

    def __init__(self, topic: str):
        self.timing = TimingStats()
        self.taken: list[int] = []
        self.aborts: list[tuple[int, str]] = []
        self.validator = MessageValidator(WIDTHS, LAST, self.timing, lambda k, why: self.aborts.append((k, why)))
        self.index = SPECS[topic].index
        self.cb = self.validator.wrap(topic, lambda m: self.taken.append(int(getattr(m, self.index))))


def _set(msg, field: str, i: int, value: float) -> None:
    if field == "wrench":
        f, t = msg.wrench.force, msg.wrench.torque
        setattr(f if i < 3 else t, "xyz"[i % 3], value)
    elif field == "passivity":
        msg.damping_force = value
    else:
        getattr(msg, field)[i] = value


TOPICS = sorted(SPECS)
VALUE_CASES = [("nan", float("nan"), "non-finite"), ("inf", float("inf"), "non-finite"),
               ("-inf", float("-inf"), "non-finite"), ("huge", 1e300, "beyond the plausible magnitude"),
               ("just-beyond", 1.0001 * HUGE, "beyond the plausible magnitude")]


@pytest.mark.parametrize("topic", TOPICS)
@pytest.mark.parametrize("case,value,words", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_a_non_finite_or_huge_value_in_any_field_aborts_and_never_reaches_the_node(topic, case, value, words):
    spec = SPECS[topic]
    for field in spec.fields:
        n = len(field.get(_valid(topic, 1)))
        for i in sorted({0, n - 1}):
            p = Probe(topic)
            p.cb(_valid(topic, 1))
            bad = _valid(topic, 2)
            _set(bad, field.name, i, value)
            p.cb(bad)
            p.cb(_valid(topic, 3))                   # after the trip nothing more is taken
            assert p.taken == [1], (topic, field.name, i)
            assert len(p.aborts) == 1 and p.aborts[0][0] == 2
            why = p.aborts[0][1]
            entry = "damping_force" if field.name == "passivity" else f"{field.name}[{i}]"
            assert words in why and entry in why and f"{spec.index} 2 on {topic}" in why, why
            assert p.timing.invalid_messages == 2 - 1 and p.timing.late_messages == 0


def test_the_wrench_reason_keeps_the_sensor_nodes_wording():
    p = Probe("/rths/raw_wrench")
    m = _valid("/rths/raw_wrench", 150)
    m.wrench.force.x = float("nan")
    p.cb(m)
    assert p.aborts == [(150, "non-finite wrench[0] = nan at step 150 on /rths/raw_wrench")]


LENGTH_TOPICS = [t for t in TOPICS if any(f.width in WIDTHS for f in SPECS[t].fields)]


@pytest.mark.parametrize("topic", LENGTH_TOPICS)
@pytest.mark.parametrize("delta", [-1, 1])
def test_an_array_of_the_wrong_length_aborts(topic, delta):
    for field in SPECS[topic].fields:
        p = Probe(topic)
        bad = _valid(topic, 2)
        values = [float(x) for x in getattr(bad, field.name)]
        setattr(bad, field.name, values[:-1] if delta < 0 else values + [0.0])
        p.cb(bad)
        assert p.taken == [] and len(p.aborts) == 1
        n = WIDTHS[field.width]
        assert f"{field.name} has {n + delta} entries where {n} are expected" in p.aborts[0][1], p.aborts[0][1]


@pytest.mark.parametrize("topic", ["/rths/aff_coefficients", "/rths/ilc_feedforward"])
def test_a_per_leg_table_whose_shape_does_not_fit_its_data_aborts(topic):
    p = Probe(topic)
    bad = _valid(topic, 1)
    bad.n_legs = 3                                   # 3 x 8 = 24 entries, but the platform has 6 legs
    if topic == "/rths/aff_coefficients":
        bad.n_coefficients = 8
    else:
        bad.n_samples = 10
    p.cb(bad)
    assert p.taken == [] and len(p.aborts) == 1 and "n_legs = 3" in p.aborts[0][1]


@pytest.mark.parametrize("topic", TOPICS)
def test_a_step_index_beyond_the_run_aborts(topic):
    p = Probe(topic)
    index = SPECS[topic].index
    p.cb(_valid(topic, 1))
    p.cb(_valid(topic, LAST[index] + 1))
    assert p.taken == [1] and len(p.aborts) == 1
    assert f"{index} index {LAST[index] + 1} beyond the last one of the run ({LAST[index]}) on {topic}" in \
        p.aborts[0][1]
    p.cb(_valid(topic, 2))                           # a corrupt index never poisons the order of later messages:
    assert p.taken == [1]                            # the node has aborted and takes nothing more


@pytest.mark.parametrize("topic", TOPICS)
def test_stale_duplicate_and_out_of_order_messages_are_dropped_and_counted(topic):
    p = Probe(topic)
    for k in (1, 2, 2, 3, 1, 3, 5, 4, 6):        # a duplicate of 2, a stale 1, a duplicate of 3, 4 after 5
        p.cb(_valid(topic, k))
    assert p.taken == [1, 2, 3, 5, 6]
    assert p.timing.late_messages == 4 and p.validator.stale[topic] == [4]
    assert p.aborts == [] and p.timing.invalid_messages == 0


def test_sound_messages_pass_unchanged_even_with_a_large_norm():
    p = Probe("/rths/leg_command")
    m = _valid("/rths/leg_command", 1)
    m.length = [0.9 * HUGE] * 6                     # each entry within HUGE, the norm beyond it: still sound
    p.cb(m)
    assert p.taken == [1] and p.aborts == []


def test_value_fault_finds_the_first_bad_entry():
    assert value_fault([0.0, 1.0, -2.0]) is None
    assert value_fault([]) is None
    assert value_fault([0.0, float("nan"), float("inf")])[0] == 1
    assert value_fault([1.0, float("inf"), float("nan")])[0] == 1
    assert value_fault(np.array([1.0, -2 * HUGE]))[0] == 1
    i, v = value_fault((0.0, 0.0, -math.inf))
    assert i == 2 and v == -math.inf


_CORRUPTED_TOPICS = ["/rths/leg_command", "/rths/interface_command", "/rths/raw_wrench", "/rths/passivity",
                     "/rths/aff_coefficients"]
#: every (topic, kind) the scenario accepts: a wrong length only on the variable-length topics (the scenario refuses
#: corrupt_kind = length on a fixed-size message, test_the_length_fault_is_refused_on_fixed_size_messages)
_CORRUPTIONS = [(t, k) for t in _CORRUPTED_TOPICS for k in ("nan", "inf", "huge", "length", "step")
                if k != "length" or t in VARIABLE_LENGTH_TOPICS]


@pytest.mark.parametrize("topic, kind", _CORRUPTIONS)
def test_every_injected_corruption_is_caught_by_the_validation(topic, kind):
    """The fault injection (faults.corrupt_*) makes what its name says, and the validation rejects each."""
    good = _valid(topic, 7)
    bad = corrupt(good, topic, kind)
    assert good.step == 7 and value_fault(SPECS[topic].fields[0].get(good)) is None      # the original is untouched
    p = Probe(topic)
    p.cb(bad)
    assert p.taken == [] and len(p.aborts) == 1, p.aborts


# ------------------------------------------------------------------------------------------------
# the publisher check


class Graph:
    """Stand-in for the ROS graph: topic -> [(node name, namespace, gid)]."""

    def __init__(self):
        self.publishers: dict[str, list] = {}

    def lookup(self, topic):
        return list(self.publishers.get(topic, []))


def _gid(i: int) -> bytes:
    return bytes([1, 15, 0, i]) + bytes(8) + bytes([0, 0, i, 3])


def _check(graph: Graph, topic="/rths/leg_command", producers=("stewart_platform",)):
    timing, reports, taken = TimingStats(), [], []
    check = PublisherCheck("/", {topic: producers}, graph.lookup, lambda *a: reports.append(a), timing)
    cb = check.wrap(topic, taken.append)
    return check, cb, timing, reports, taken


def _info(gid):
    return {"source_timestamp": 0, "received_timestamp": 0, "publication_sequence_number": 1,
            "reception_sequence_number": None,
            "publisher_gid": None if gid is None else {"implementation_identifier": "rmw_fastrtps_cpp", "data": gid}}


def test_only_the_runs_producer_is_taken_in_both_calling_conventions():
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1)), ("intruder", "/", _gid(2))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot()
    cb("own-1", _info(_gid(1)))                 # SingleThreadedExecutor: (msg, info)
    cb(("own-2", _info(_gid(1))))               # rclpy 9's EventsExecutor: one (msg, info) tuple
    for i in range(5):
        cb(f"foreign-{i}", _info(_gid(2)))
    assert taken == []                          # before START the producer's samples wait for START
    check.snapshot(freeze=True)
    assert taken == ["own-1", "own-2"]
    cb("own-3", _info(_gid(1)))
    assert taken == ["own-1", "own-2", "own-3"]
    assert timing.foreign_messages == 5
    assert reports == [("/rths/leg_command", "/intruder", _gid(2).hex())]      # reported once per publisher
    s = check.summary()
    assert s["foreign"] == {"/rths/leg_command": 5} and s["foreign_publishers"][0]["publisher"] == "/intruder"


def test_a_raw_subscription_hands_the_decoded_message_of_the_runs_producer_only():
    """realtime.fast_decode: the subscription takes CDR bytes; the run's producer's samples reach the callback as the
    message rclpy would have built, in both calling conventions; a foreign publisher's are dropped as before."""
    from rclpy.serialization import serialize_message

    from rths_ros.cdr import decoder
    from rths_ros.msg import LegCommand
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1)), ("intruder", "/", _gid(2))]
    timing, reports, taken = TimingStats(), [], []
    check = PublisherCheck("/", {"/rths/leg_command": ("stewart_platform",)}, g.lookup,
                           lambda *a: reports.append(a), timing)
    cb = check.wrap("/rths/leg_command", taken.append, decoder("rths_ros/msg/LegCommand"))
    check.snapshot(freeze=True)
    sent = []
    for k in (1, 2):
        m = LegCommand()
        m.step, m.header.frame_id = k, "rths:contact_1d"
        m.length[:] = [0.5 + k] * 6
        sent.append(m)
    cb(serialize_message(sent[0]), _info(_gid(1)))
    cb((serialize_message(sent[1]), _info(_gid(1))))
    cb(serialize_message(sent[0]), _info(_gid(2)))
    assert taken == sent and all(type(m) is LegCommand for m in taken)
    assert timing.foreign_messages == 1


def test_the_signature_asks_rclpy_for_the_message_info():
    import inspect
    _, cb, *_ = _check(Graph())
    with pytest.raises(TypeError):
        inspect.signature(cb).bind(object())
    inspect.signature(cb).bind(object(), object())


def test_a_producer_discovered_late_is_taken_but_no_second_one_after_start():
    g = Graph()
    check, cb, timing, reports, taken = _check(g)
    check.snapshot()
    check.snapshot(freeze=True)                      # START: the producer was not discovered yet
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    cb("own", _info(_gid(1)))                        # an unknown gid: the graph is asked again
    assert taken == ["own"]
    # a node that takes the producer's name after START is foreign
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/", _gid(9)))
    cb("impostor", _info(_gid(9)))
    cb("own-2", _info(_gid(1)))
    assert taken == ["own", "own-2"] and timing.foreign_messages == 1
    assert reports[0][1] == "/stewart_platform"
    # another namespace is another node
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/other", _gid(10)))
    cb("elsewhere", _info(_gid(10)))
    assert taken == ["own", "own-2"] and timing.foreign_messages == 2


def test_two_publishers_under_the_producers_name_before_start_are_not_ready_and_named():
    """An impostor named like the run's producer, in the same namespace, started before the run: the run cannot
    tell which publisher is its own, so the check is never ready and names both gids; the same name in another
    namespace is another node and changes nothing."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1)), ("stewart_platform", "/rig_b", _gid(3))]
    check, *_ = _check(g)
    assert check.ready() and check.duplicates() == []
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/", _gid(2)))
    assert not check.ready()
    assert check.duplicates() == [("/rths/leg_command", "stewart_platform", sorted([_gid(1).hex(), _gid(2).hex()]))]
    assert check.allowed["/rths/leg_command"] == set()         # neither publisher's samples are taken
    # after START a second one is no longer ambiguous: the first is the producer, a newcomer is foreign
    g2 = Graph()
    g2.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check2, cb, timing, reports, taken = _check(g2)
    check2.snapshot(freeze=True)
    g2.publishers["/rths/leg_command"].append(("stewart_platform", "/", _gid(2)))
    cb("impostor", _info(_gid(2)))
    assert check2.duplicates() == [] and taken == [] and reports[0][1] == "/stewart_platform"


def _home(i: int) -> str:
    """The participant (hex GUID prefix) of _gid(i)."""
    return _gid(i)[:12].hex()


def test_an_impostor_a_reader_saw_alone_at_ready_is_dropped_at_start_and_the_real_producer_taken():
    """The reader discovered only the impostor's publisher (gid 2) before READY and the run's stewart_platform
    (gid 1) not yet: its table looked complete.  START says stewart_platform announced READY from gid 1's
    participant: the impostor's gid leaves the table, its samples are dropped and reported as an impostor, and the
    real publisher is taken as soon as the graph shows it, though the table is closed."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(2))]
    check, cb, timing, reports, taken = _check(g)
    assert check.ready()
    check.snapshot(freeze=True, participants={"stewart_platform": _home(1)})
    assert check.allowed["/rths/leg_command"] == set()
    cb("impostor", _info(_gid(2)))
    assert taken == [] and timing.foreign_messages == 1
    assert len(reports) == 1 and reports[0][0] == "/rths/leg_command" and reports[0][2] == _gid(2).hex()
    assert "an impostor" in reports[0][1] and "stewart_platform" in reports[0][1], reports[0][1]
    assert check.summary()["foreign_publishers"] == [{"topic": "/rths/leg_command", "publisher": "/stewart_platform",
                                                      "gid": _gid(2).hex(), "impostor_of": "stewart_platform"}]
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/", _gid(1)))
    cb("own", _info(_gid(1)))
    cb("impostor-again", _info(_gid(2)))
    assert taken == ["own"] and timing.foreign_messages == 2 and len(reports) == 1


def test_two_publishers_a_reader_sees_at_start_are_told_apart_by_starts_participant():
    """The supervisor counted stewart_platform's READY from gid 1's participant and sent START before it saw the
    impostor (gid 2); this reader saw both publishers by then.  START's participant decides: nothing is ambiguous
    (no abort at START), the real publisher is taken, the impostor's samples are dropped and reported as such."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1)), ("stewart_platform", "/", _gid(2))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot()
    assert check.duplicates() != []                    # before START: ambiguous
    check.snapshot(freeze=True, participants={"stewart_platform": _home(1)})
    assert check.duplicates() == []
    assert check.allowed["/rths/leg_command"] == {_gid(1)}
    cb("own", _info(_gid(1)))
    cb("impostor", _info(_gid(2)))
    assert taken == ["own"] and timing.foreign_messages == 1
    assert len(reports) == 1 and "an impostor" in reports[0][1] and reports[0][2] == _gid(2).hex()


def test_an_impostor_discovered_after_start_is_foreign_and_a_second_publisher_of_the_real_participant_is_taken():
    """After START a publisher under the producer's name from another participant is an impostor (reported as such
    by the sweep and by its samples); one from the READY participant (the same process of nodes) is the
    producer's, even when the table had one publisher of it already."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check, cb, timing, reports, taken = _check(g)
    assert check.ready()
    check.snapshot(freeze=True, participants={"stewart_platform": _home(1)})
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/", _gid(2)))
    check.sweep()
    assert [r[2] for r in reports] == [_gid(2).hex()] and "an impostor" in reports[0][1]
    cb("impostor", _info(_gid(2)))
    sibling = _gid(1)[:12] + bytes([0, 0, 9, 3])            # another writer of the producer's own participant
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/", sibling))
    cb("own-2", _info(sibling))
    assert taken == ["own-2"] and timing.foreign_messages == 1 and len(reports) == 1


def test_without_participants_at_start_the_table_closes_as_before():
    """A START that names no participants (a supervisor on a client library without sample publishers) leaves the
    first publisher of a producer its own: a newcomer under its name is foreign."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(2))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot(freeze=True, participants=start_participants(""))
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/", _gid(1)))
    cb("first", _info(_gid(2)))
    cb("newcomer", _info(_gid(1)))
    assert taken == ["first"] and "impostor" not in reports[0][1]


def test_the_start_reason_carries_the_participants_and_anything_else_gives_none():
    got = start_participants(start_reason({"sim_plant": _home(3), "ft_sensor": _home(4)}))
    assert got == {"sim_plant": _home(3), "ft_sensor": _home(4)}
    for reason in ("", "started", "{", "[1, 2]", '{"participants": [1]}', '{"participants": "x"}'):
        assert start_participants(reason) == {}, reason
    assert sample_participant(_info(_gid(7))) == _home(7)
    assert sample_participant(_info(None)) == "" and sample_participant(None) == ""


def test_the_sweep_reports_a_foreign_publisher_seen_only_in_the_graph_once():
    """With the content filter a foreign publisher's samples (without the run's mark) never reach the node: the
    sweep after START finds it in the graph and reports it once; the run's producer is never reported, and a
    publisher already reported for its samples is not reported again."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot(freeze=True)
    check.sweep()
    assert reports == []
    g.publishers["/rths/leg_command"].append(("intruder", "/", _gid(5)))
    check.sweep()
    check.sweep()
    assert reports == [("/rths/leg_command", "/intruder", _gid(5).hex())] and timing.foreign_messages == 0
    g.publishers["/rths/leg_command"].append(("copycat", "/", _gid(6)))
    cb("copy", _info(_gid(6)))                   # a sample with the mark: the publisher check drops and reports it
    check.sweep()
    assert [r[1] for r in reports] == ["/intruder", "/copycat"] and taken == [] and timing.foreign_messages == 1
    cb("intruder-sample", _info(_gid(5)))        # its samples, if they come: counted, not reported again
    assert len(reports) == 2 and timing.foreign_messages == 2


def test_the_run_mark_and_the_marked_publisher():
    from rths_ros.app import scenario as scn
    from rths_ros.runtime.guard import MarkedPublisher, run_mark
    mark = run_mark(scn.load("contact_1d"))
    assert mark == "rths:contact_1d"
    sent = []

    class Dds:
        topic_name = "/rths/leg_command"

        def publish(self, msg):
            sent.append(msg.header.frame_id)

        def get_subscription_count(self):
            return 2
    pub = MarkedPublisher(Dds(), mark)
    pub.publish(LegCommand())
    assert sent == ["rths:contact_1d"] and pub.get_subscription_count() == 2 and pub.topic_name == "/rths/leg_command"


def test_a_message_without_a_publisher_gid_is_foreign():
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot(freeze=True)
    cb("who", _info(None))
    cb(("who", None))
    assert taken == [] and timing.foreign_messages == 2 and reports[0][1] == "a publisher without a gid"


def test_a_longer_gid_of_the_same_publisher_is_recognised():
    """rmw versions differ in the gid storage size (16 or 24 bytes, zero padded): the first 16 bytes count."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot(freeze=True)
    cb("padded", _info(_gid(1) + bytes(8)))
    cb("padded-again", _info(_gid(1) + bytes(8)))
    assert taken == ["padded", "padded-again"] and timing.foreign_messages == 0


def test_ready_waits_until_every_producer_is_named_in_the_graph():
    g = Graph()
    check, cb, *_ = _check(g)
    assert not check.ready()
    g.publishers["/rths/leg_command"] = [("_NODE_NAME_UNKNOWN_", "_NODE_NAMESPACE_UNKNOWN_", _gid(1))]
    assert not check.ready()                         # discovered, but its node's name has not arrived yet
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    assert check.ready()


def test_a_publisher_not_named_yet_is_dropped_and_reported_once_its_node_is_known(monkeypatch):
    import rths_ros.runtime.publisher_check as guard
    monkeypatch.setattr(guard, "RECHECK_S", 0.0)
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1)),
                                         ("_NODE_NAME_UNKNOWN_", "_NODE_NAMESPACE_UNKNOWN_", _gid(2))]
    check, cb, timing, reports, taken = _check(g)
    assert check.ready()
    check.snapshot(freeze=True)
    cb("early", _info(_gid(2)))
    assert taken == [] and timing.foreign_messages == 1 and reports == []     # dropped; not reported under no name
    g.publishers["/rths/leg_command"][1] = ("intruder", "/", _gid(2))
    cb("later", _info(_gid(2)))
    assert taken == [] and timing.foreign_messages == 2
    assert reports == [("/rths/leg_command", "/intruder", _gid(2).hex())]
    cb("own", _info(_gid(1)))
    assert taken == ["own"]


def test_a_publisher_that_never_gets_a_name_is_reported_after_a_while(monkeypatch):
    import rths_ros.runtime.publisher_check as guard
    monkeypatch.setattr(guard, "RECHECK_GIVE_UP_S", 0.0)
    g = Graph()
    g.publishers["/rths/leg_command"] = [("_NODE_NAME_UNKNOWN_", "_NODE_NAMESPACE_UNKNOWN_", _gid(2))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot(freeze=True)
    cb("x", _info(_gid(2)))
    assert taken == [] and reports and "never named" in reports[0][1]


@pytest.mark.parametrize("topic", sorted(set(_CORRUPTED_TOPICS) - set(VARIABLE_LENGTH_TOPICS)))
def test_the_length_fault_is_refused_on_fixed_size_messages(topic):
    from rths_ros.app import scenario as scn
    from rths_ros.params import ParameterError
    with pytest.raises(ParameterError, match="corrupt_kind: 'length' is not allowed"):
        scn.load("contact_1d", [f"faults.corrupt_topic={topic}", "faults.corrupt_kind=length"])


_SEQ = [0]


def _anonymous_info(seq: int | None = None):
    """The MessageInfo of a client library that gives no publisher (rclpy 7 of Jazzy); ``seq``: the writer's
    sequence number of the sample (default: the next of one writer)."""
    if seq is None:
        _SEQ[0] += 1
        seq = _SEQ[0]
    return {"source_timestamp": 0, "received_timestamp": 0, "publication_sequence_number": seq,
            "reception_sequence_number": None}


def test_without_a_publisher_in_the_message_info_samples_are_taken_only_while_no_foreign_publisher_is_seen():
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot(freeze=True)
    cb("own-1", _anonymous_info())
    cb(("own-2", _anonymous_info()))
    assert taken == ["own-1", "own-2"] and check.anonymous and reports == []
    g.publishers["/rths/leg_command"].append(("intruder", "/", _gid(5)))
    check.sweep()                               # found in the graph: reported (the node aborts the run, below)
    assert reports == [("/rths/leg_command", "/intruder", _gid(5).hex())]
    cb("either", _anonymous_info())              # its samples and the run's can no longer be told apart
    assert taken == ["own-1", "own-2"] and timing.foreign_messages == 1


class _Node:
    """What LoopGuard._report and _abort use of a node."""

    def __init__(self, started: bool):
        self.started, self.done, self.abort_reason, self.role, self.events = started, False, None, "sim_plant", []

    def get_logger(self):
        import logging
        return logging.getLogger("test")

    def emit(self, kind, step, reason):
        self.events.append((kind, step, reason))

    def progress_step(self):
        return 42


@pytest.mark.parametrize("started", [False, True])
def test_a_foreign_publisher_aborts_the_run_where_samples_come_without_their_publisher(started):
    from rths_ros.msg import TestEvent
    from rths_ros.runtime.guard import LoopGuard
    guard = LoopGuard.__new__(LoopGuard)          # the reporting half of a node's guard
    guard.node, guard.reports, guard.pending_reports = _Node(started), 0, []
    g = Graph()
    guard.publishers = PublisherCheck("/", {"/rths/leg_command": ("stewart_platform",)}, g.lookup, guard._report,
                                      TimingStats(), anonymous=True)
    guard._report("/rths/leg_command", "/intruder", "0a0b")
    (kind, step, reason), = guard.node.events
    assert kind == TestEvent.ABORT and step == 42 and guard.node.abort_reason == reason and reason.startswith("sim_plant: ")
    assert "/intruder (gid 0a0b)" in reason and "cannot be told from those of the run's producer (stewart_platform)" \
        in reason and reason.endswith("is aborted" if started else "does not start")
    guard.publishers.anonymous = False           # with the publisher in every sample: reported, the run goes on
    guard.node = _Node(started)
    guard._report("/rths/leg_command", "/intruder", "0a0b")
    assert guard.node.abort_reason is None
    assert [e[0] for e in guard.node.events] == ([TestEvent.REJECTED] if started else [])


def test_the_mark_filter_where_rclpy_has_content_filters_and_a_clear_refusal_where_not():
    from rths_ros.app import scenario as scn
    from rths_ros.launch_support import check_node_set, content_filter_available
    from rths_ros.params import ParameterError
    from rths_ros.runtime.guard import mark_filter
    s = scn.load("contact_1d", overrides=["safety.mark_filter=true"])
    if content_filter_available():
        f = mark_filter("rths:contact_1d")
        assert f.filter_expression == "header.frame_id = %0" and f.expression_parameters == ["'rths:contact_1d'"]
        check_node_set(s)
    else:
        with pytest.raises(ParameterError, match=r"safety.mark_filter: true needs subscriptions with a DDS content "
                                                  r"filter.*expected false"):
            check_node_set(s)


class _Reader:
    def __init__(self, writers: int):
        self.writers = writers

    def get_publisher_count(self):
        return self.writers


def _anonymous_check(writers: int):
    """A check of /rths/leg_command (producer stewart_platform, in the graph) after START, its reader matched with
    ``writers`` writers: (check, callback, timing, reports, taken, reader, graph)."""
    g = Graph()
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check, cb, timing, reports, taken = _check(g)
    reader = _Reader(writers)
    check.bind("/rths/leg_command", reader)
    check.snapshot(freeze=True)
    return check, cb, timing, reports, taken, reader, g


def test_without_a_publisher_in_the_message_info_a_second_matched_writer_stops_the_samples_at_once(monkeypatch):
    """Between two sweeps: a foreign writer matched with the reader (DDS matches before it delivers) makes every
    sample unattributable; they are dropped and counted, and the graph is asked at once, which names the writer
    (the node then aborts the run); a writer the graph never names is reported unnamed after a while."""
    clock = [1000.0]
    monkeypatch.setattr("rths_ros.runtime.publisher_check.time.monotonic", lambda: clock[0])
    check, cb, timing, reports, taken, reader, g = _anonymous_check(1)
    cb("own", _anonymous_info())
    reader.writers = 2                             # a second writer matched, not in the graph yet
    cb("either-1", _anonymous_info())
    assert taken == ["own"] and timing.foreign_messages == 1 and reports == []
    g.publishers["/rths/leg_command"].append(("intruder", "/", _gid(5)))
    clock[0] += 0.1
    cb("either-2", _anonymous_info())              # asked again (at most every RECHECK_S): named
    assert reports == [("/rths/leg_command", "/intruder", _gid(5).hex())] and taken == ["own"]
    # a writer that never gets a name in the graph
    check2, cb2, timing2, reports2, taken2, *_ = _anonymous_check(2)
    cb2("x", _anonymous_info())
    clock[0] += 1.0
    cb2("x", _anonymous_info())
    assert reports2 == [] and taken2 == []
    clock[0] += 2.0
    cb2("x", _anonymous_info())
    cb2("x", _anonymous_info())
    assert reports2 == [("/rths/leg_command", "a writer its node never named in the ROS graph", "-")]
    assert timing2.foreign_messages == 4 and taken2 == []


def test_without_a_publisher_in_the_message_info_a_topic_once_unattributable_stays_closed():
    """A foreign writer left alone on the topic (the run's producer gone at the end of an aborted run) passes the
    writer count: once a sample of the topic was unattributable, none is taken any more."""
    check, cb, timing, reports, taken, reader, _ = _anonymous_check(2)
    cb("either", _anonymous_info())
    reader.writers = 1
    cb("the intruder alone", _anonymous_info())
    assert taken == [] and timing.foreign_messages == 2


def test_without_a_publisher_in_the_message_info_a_second_writers_numbering_closes_the_topic():
    """Before its reader counts it, a new writer's samples are told by their sequence numbers: the run's producer
    numbers on (101, 102, ...), a writer that joins numbers from 1, so its first sample breaks the order; it is
    dropped, and so is everything after it on the topic."""
    check, cb, timing, reports, taken, reader, _ = _anonymous_check(1)
    cb("own-101", _anonymous_info(101))
    cb("own-102", _anonymous_info(102))
    cb("intruder-1", _anonymous_info(1))          # the reader still counts one writer
    cb("own-103", _anonymous_info(103))
    assert taken == ["own-101", "own-102"] and timing.foreign_messages == 2


def test_before_start_an_impostors_samples_are_held_and_dropped_at_start():
    """The window before START: a reader that knows only the impostor under the producer's name (the real
    publisher not discovered yet, or only after START) holds its samples; START binds the producer to its READY's participant: the
    impostor's held samples are dropped, counted and reported, and the real producer's are taken."""
    g = Graph()
    real, fake = bytes(12) + bytes([0, 0, 1, 3]), bytes([9] * 12) + bytes([0, 0, 1, 3])
    g.publishers["/rths/leg_command"] = [("stewart_platform", "/", fake)]
    check, cb, timing, reports, taken = _check(g)
    check.snapshot()                                  # READY: the impostor alone is known under the name
    cb("fake-1", _info(fake))
    cb("fake-2", _info(fake))
    assert taken == [] and timing.foreign_messages == 0 and reports == []
    check.snapshot(freeze=True, participants={"stewart_platform": bytes(12).hex()})
    assert taken == [] and timing.foreign_messages == 2
    g.publishers["/rths/leg_command"].append(("stewart_platform", "/", real))   # discovered after START
    assert [r[1] for r in reports] == ["/stewart_platform, an impostor (the name of the run's stewart_platform, "
                                       "but not the participant that announced stewart_platform's READY)"]
    cb("real-1", _info(real))
    cb("fake-3", _info(fake))
    cb("real-2", _info(real))
    assert taken == ["real-1", "real-2"] and timing.foreign_messages == 3 and len(reports) == 1


def test_before_start_the_feedforward_is_taken_and_a_flood_is_bounded():
    from rths_ros.runtime.publisher_check import HELD_MAX
    g = Graph()
    g.publishers["/rths/ilc_feedforward"] = [("ilc_learner", "/", _gid(1))]
    timing, taken = TimingStats(), []
    check = PublisherCheck("/", {"/rths/ilc_feedforward": ("ilc_learner",)}, g.lookup, lambda *a: None, timing,
                           pre_start=("/rths/ilc_feedforward",))
    cb = check.wrap("/rths/ilc_feedforward", taken.append)
    check.snapshot()
    cb("u_ff", _info(_gid(1)))
    assert taken == ["u_ff"]                            # sent before the run: taken at once
    g2 = Graph()
    g2.publishers["/rths/leg_command"] = [("stewart_platform", "/", _gid(1))]
    check2, cb2, timing2, _, taken2 = _check(g2)
    check2.snapshot()
    for i in range(HELD_MAX + 5):
        cb2(i, _info(_gid(1)))
    assert taken2 == [] and check2.summary()["held_before_start_dropped"] == 5
    check2.snapshot(freeze=True)
    assert taken2 == list(range(HELD_MAX))
