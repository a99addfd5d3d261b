"""Injected corrupt loop messages (``faults.corrupt_topic``, ``corrupt_kind``, ``corrupt_at_step``).

The node that publishes ``corrupt_topic`` changes what it sends for step ``corrupt_at_step``, once, as a faulty
node of the run would (tests and drills of the loop's message validation, rths_ros.runtime.guard):

``nan`` / ``inf`` / ``huge``   the first value of the message (see :data:`TARGET`) becomes NaN / inf / 1e300;
``length``                     the first array gets one entry more (topics with variable-length arrays only);
``step``                       the step index jumps beyond the run (2**62);
``duplicate``                  the message is sent twice;
``stale``                      the previous step's message is sent again after this one (out of order).

Only the copy sent is changed, never the node's own state, so the run is otherwise the run without the fault.
"""
from __future__ import annotations

from rclpy.serialization import deserialize_message, serialize_message

#: the value each kind puts in
VALUES = {"nan": float("nan"), "inf": float("inf"), "huge": 1e300}
#: per topic: the array whose first entry a nan / inf / huge fault changes (the wrench and the passivity state:
#: a scalar, set by :func:`_set_first`)
TARGET = {"/rths/leg_command": "length", "/rths/leg_state": "length", "/rths/raw_wrench": "wrench.force.x",
          "/rths/interface_force": "force", "/rths/interface_command": "position",
          "/rths/interface_state": "position", "/rths/passivity": "damping_force",
          "/rths/aff_coefficients": "coefficients"}


#: the environment of a two-host run's plant process whose link is cut at a step: "RELAY_PID:STEP"
#: (rths_ros.runtime.two_hosts.TwoHosts.cut_env)
LINK_CUT_ENV = "RTHS_LINK_CUT"
#: the topic whose message of the step cuts the link: the plant's leg state, the first thing of a step it sends
LINK_CUT_TOPIC = "/rths/leg_state"


def corrupting(scenario, topic: str, publisher):
    """``publisher``, or a :class:`CorruptingPublisher` around it when the scenario injects a fault on ``topic``
    (and, in a two-host run whose link is cut at a step, a :class:`LinkCutter` around the plant's leg state)."""
    import os
    cut = os.environ.get(LINK_CUT_ENV, "") if topic == LINK_CUT_TOPIC else ""
    if cut:
        pid, _, step = cut.partition(":")
        publisher = LinkCutter(publisher, int(pid), int(step))
    f = scenario.faults
    if f.corrupt_at_step < 0 or f.corrupt_topic != topic:
        return publisher
    return CorruptingPublisher(publisher, topic, f.corrupt_kind, f.corrupt_at_step)


class LinkCutter:
    """The plant's publisher of a two-host run that cuts the emulated link (SIGUSR1 to the relay) right before it
    sends the message of step ``at``: the cut falls exactly on that step (rths_ros.runtime.link_relay)."""

    def __init__(self, inner, relay_pid: int, at: int):
        self.inner, self.relay_pid, self.at = inner, relay_pid, at

    def publish(self, msg) -> None:
        if self.at >= 0 and int(msg.step) >= self.at:
            import signal
            self.at = -1
            try:
                import os
                os.kill(self.relay_pid, signal.SIGUSR1)
            except OSError:
                pass
        self.inner.publish(msg)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _copy(msg):
    return deserialize_message(serialize_message(msg), type(msg))


def _set_first(msg, path: str, value: float) -> None:
    *owners, last = path.split(".")
    obj = msg
    for name in owners:
        obj = getattr(obj, name)
    current = getattr(obj, last)
    if isinstance(current, float):
        setattr(obj, last, value)
    else:
        current[0] = value


def corrupt(msg, topic: str, kind: str):
    """A corrupted copy of ``msg`` (kinds nan, inf, huge, length, step)."""
    bad = _copy(msg)
    if kind in VALUES:
        _set_first(bad, TARGET[topic], VALUES[kind])
    elif kind == "length":
        name = TARGET[topic]
        setattr(bad, name, [float(x) for x in getattr(bad, name)] + [0.0])
    elif kind == "step":
        bad.step = 2 ** 62
    else:
        raise ValueError(f"faults.corrupt_kind: {kind!r} is no change of a message")
    return bad


class CorruptingPublisher:
    """A publisher (DDS or local bus) that sends its message of step ``at`` corrupted (module doc)."""

    def __init__(self, inner, topic: str, kind: str, at: int):
        self.inner, self.topic, self.kind, self.at = inner, topic, kind, int(at)
        self.injected = False
        self._previous = None

    def publish(self, msg) -> None:
        k = int(msg.step)
        if self.injected or k != self.at:
            if self.kind == "stale" and k == self.at - 1:
                self._previous = _copy(msg)
            self.inner.publish(msg)
            return
        self.injected = True
        if self.kind == "duplicate":
            self.inner.publish(msg)
            self.inner.publish(_copy(msg))
        elif self.kind == "stale":
            self.inner.publish(msg)
            if self._previous is not None:
                self.inner.publish(self._previous)
        else:
            self.inner.publish(corrupt(msg, self.topic, self.kind))

    def __getattr__(self, name):      # get_subscription_count, wait_for_all_acked, topic_name, ...
        return getattr(self.inner, name)
