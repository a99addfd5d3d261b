"""The rclpy executor of a node process or an embedded rig: rclpy's EventsExecutor (callbacks dispatched from
rmw events: far less Python per message) where it exists and is asked for, else the classic wait-set
SingleThreadedExecutor (the run works the same on either)."""
from __future__ import annotations

import contextlib

from rclpy.executors import SingleThreadedExecutor


def make_executor(kind: str = "events", context=None):
    """``kind``: 'events' or 'single_threaded' (``realtime.executor``); ``context``: rclpy's default if None."""
    if kind == "events":
        with contextlib.suppress(ImportError):       # an rclpy without it: the classic one
            from rclpy.experimental import EventsExecutor
            return EventsExecutor(context=context)
    return SingleThreadedExecutor(context=context)
