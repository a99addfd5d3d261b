"""Logging from a node's loop thread without stalling the loop, and quiet QoS-incompatibility events.

rclpy's logger finds its caller with :mod:`inspect` on every call: the first call of a process maps every
loaded module to its file (``inspect.getmodule``; 36 ms in a node process with about 1350 modules, measured on
this project's 2-core machine), and each call from a new source file reads that file.  A realtime loop at 1 kHz
stalled for 40 to 55 steps whenever a node logged its first line after START: rclpy's own warning when a foreign
node's publisher offered a QoS the run's reader cannot take (``New publisher discovered on topic ...,
offering incompatible QoS``, the default callback of every subscription), or the publisher check's report of a
foreign publisher.  A silent foreign node with publishers on the loop topics was enough to leave gaps in the
record (docs/safety.md, "A foreign flood").

So a node of this package

* maps the loaded modules once before its loop starts (:func:`warm_up`, from :class:`QuietQosEvents`), so an
  rclpy log call later costs tenths of a millisecond, not tens;
* logs from loop callbacks with :func:`log`, the rcutils call rclpy makes in the end (about 5 us), with this
  module as the caller;
* handles a reader's or writer's incompatible-QoS event itself (:class:`QuietQosEvents`): it counts the events
  per topic (``guard.qos_incompatible`` in the node's timing file) and logs one line per topic with :func:`log`.
"""
from __future__ import annotations

import inspect
import sys

from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.logging import LoggingSeverity

try:                                    # the C call behind rclpy's logger
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
    _direct = _rclpy.rclpy_logging_rcutils_log
except (ImportError, AttributeError):   # pragma: no cover - another rclpy: its logger serves
    _direct = None


_METHODS = {LoggingSeverity.DEBUG: "debug", LoggingSeverity.INFO: "info", LoggingSeverity.WARN: "warning",
            LoggingSeverity.ERROR: "error", LoggingSeverity.FATAL: "fatal"}


def warm_up() -> None:
    """Map every loaded module to its file now (what rclpy's first log call would do)."""
    inspect.getmodule(sys._getframe())


def log(node, severity: LoggingSeverity, message: str) -> None:
    """Log ``message`` under the node's logger (console, log file and /rosout as rclpy would), without the caller
    lookup."""
    logger = node.get_logger()
    enabled = getattr(logger, "is_enabled_for", None)
    if _direct is None or enabled is None:     # another logger (a test's, Python's logging): its own call
        getattr(logger, _METHODS.get(LoggingSeverity(severity), "warning"))(message)
        return
    if enabled(severity):
        _direct(severity, logger.name, message, "log", __file__, 0)


def _policy(event) -> str:
    try:
        from rclpy.qos import qos_policy_name_from_kind
        return qos_policy_name_from_kind(event.last_policy_kind)
    except Exception:
        return str(getattr(event, "last_policy_kind", "?"))


class QuietQosEvents:
    """Node mixin: every subscription and publisher gets an incompatible-QoS callback of this module (unless the
    caller gives one), and the caller lookup of rclpy's logger is warmed up when the node is built."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.qos_incompatible: dict[str, int] = {}
        warm_up()

    def _incompatible(self, topic: str, side: str):
        def cb(event) -> None:
            n = self.qos_incompatible.get(topic, 0)      # one event may stand for several (total_count_change)
            self.qos_incompatible[topic] = n + max(1, int(getattr(event, "total_count_change", 1) or 1))
            if n == 0:
                other = "publisher" if side == "reader" else "subscription"
                log(self, LoggingSeverity.WARN,
                    f"{self.get_name()}: a {other} of {topic} offers a QoS this node's {side} cannot match "
                    f"(policy {_policy(event)}): nothing passes between them (counted as qos_incompatible)")
        return cb

    def create_subscription(self, msg_type, topic, callback, qos_profile, *, event_callbacks=None, **kw):
        event_callbacks = event_callbacks or SubscriptionEventCallbacks()
        if event_callbacks.incompatible_qos is None:
            event_callbacks.incompatible_qos = self._incompatible(topic, "reader")
        return super().create_subscription(msg_type, topic, callback, qos_profile, event_callbacks=event_callbacks,
                                           **kw)

    def create_publisher(self, msg_type, topic, qos_profile, *, event_callbacks=None, **kw):
        event_callbacks = event_callbacks or PublisherEventCallbacks()
        if event_callbacks.incompatible_qos is None:
            event_callbacks.incompatible_qos = self._incompatible(topic, "writer")
        return super().create_publisher(msg_type, topic, qos_profile, event_callbacks=event_callbacks, **kw)


__all__ = ["QuietQosEvents", "log", "warm_up"]
