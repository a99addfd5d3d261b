"""A client of a hexapod run by ros2_control, for the tools that move the legs outside a run: ``rths commission``
(docs/commissioning.md), ``rths identify --ros2-control`` (docs/identify.md) and ``rths qualify``.

:class:`Ros2ControlRig` speaks the two topics of ``plant = ros2_control`` (docs/hardware.md): leg-length
commands go out as ``std_msgs/Float64MultiArray`` on ``ros2_control.command_topic`` (the forward_command_controller,
one joint position per joint of ``joint_names``), the feedback comes from ``ros2_control.joint_state_topic`` (the
joint_state_broadcaster, joints matched by name).  Joint positions and leg lengths are converted with the
scenario's joint mapping (:func:`~rths_ros.drivers.ros2_control.positions_from_lengths`, ``joint_offsets_m``,
``joint_scales``, ``joint_signs``).

* Own ROS context and node.  With ``ros2_control.emulate: true`` the rig is the emulator
  (:class:`~rths_ros.runtime.ros2_control_emulator.Ros2ControlEmulatorNode`, the scenario's twin with its wiring
  faults) in this process, on the same executor, and the context gets a ROS domain of its own (the lock files
  of ``rths run``, so runs and tools never hear each other) with localhost discovery; against a real rig the
  context joins the caller's domain (``ROS_DOMAIN_ID``) unless ``domain_id`` names one.
* :meth:`Ros2ControlRig.play` streams a leg-length trajectory at ``dt_s`` on absolute deadlines and records the
  newest joint state at every tick.  Every command is checked before it leaves: finite, inside the stroke
  ``[platform.geometry.leg_length_min_m, leg_length_max_m]``, and no leg faster than
  ``leg_velocity_max_m_per_s`` from one command to the next (the first one against the previous command, or
  the measured lengths).  The whole trajectory is checked before its first command is sent, so a refused
  trajectory moves nothing: :class:`RigCommandRefused` names the leg, the row, the value and the limits.  A joint
  state older than ``ros2_control.state_timeout_s`` stops the trajectory (:class:`RigError`); towards the
  emulator (a Python thread on a possibly busy host) the limit is at least 0.5 s.
* :func:`load_rig_scenario` loads a scenario for it (``plant = ros2_control``, realtime, a wrench topic for the
  emulator when none is named).
"""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import rclpy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from rths_ros.app import scenario as scn
from rths_ros.drivers.ros2_control import (
    joint_order,
    lengths_from_positions,
    positions_from_lengths,
    velocities_from_joint_velocities,
)
from rths_ros.params import ParameterError
from rths_ros.runtime.clock import RealtimeClock
from rths_ros.runtime.domain import DomainLease
from rths_ros.runtime.executors import make_executor
from rths_ros.runtime.node import stamp_ns
from rths_ros.runtime.standard_interfaces import driver_qos, standard_qos

__all__ = ["Ros2ControlRig", "RigError", "RigCommandRefused", "load_rig_scenario", "command_refusal"]

#: the lock files of ``rths run``'s domain leases (rths_ros.runner.DomainLease): one flock'ed file per id
#: towards the in-process emulator (a Python thread on a possibly busy host, not a real-time controller) the joint
#: state timeout is at least this (as the hardware path's emulator_timeout_s)
EMULATOR_STATE_TIMEOUT_S = 0.5
#: the wrench topic the emulator publishes on when a scenario names none (the rig client does not read it)
DEFAULT_WRENCH_TOPIC = "/ft_sensor/wrench"


class RigError(RuntimeError):
    """The rig does not answer as expected (no joint state, a joint missing, no controller listening)."""


class RigCommandRefused(RigError):
    """A leg-length command that would leave the stroke or the leg speed: nothing of its trajectory was sent."""


def load_rig_scenario(name_or_path: str, overrides=()) -> scn.Scenario:
    """A scenario for the rig client: ``plant = ros2_control`` in realtime mode; when neither the scenario nor
    ``overrides`` name a sensor topic, ``standard_interfaces.wrench_input_topic`` = /ft_sensor/wrench (the
    emulator publishes the twin's wrench there; the rig client reads no wrench)."""
    overrides = list(overrides)
    data = scn.load_data(name_or_path)
    named = (data.get("standard_interfaces") or {}).get("wrench_input_topic") if isinstance(data, dict) else None
    if not named and not any(o.split("=", 1)[0].strip() == "standard_interfaces.wrench_input_topic"
                             for o in overrides):
        overrides.append(f"standard_interfaces.wrench_input_topic={DEFAULT_WRENCH_TOPIC}")
    return scn.load(name_or_path, overrides, "realtime", "ros2_control")


class _DomainLock(DomainLease):
    """A free ROS domain id held for the rig's lifetime (the same leases as ``rths run``'s)."""

    error = RigError


def command_refusal(lengths, previous, limits: tuple[float, float, float], dt_s: float) -> str | None:
    """Why the leg-length trajectory ``lengths`` (n, 6) [m] must not be sent, or None: a value not finite, outside
    the stroke ``limits[0:2]``, or a leg faster than ``limits[2]`` [m/s] from the row before (the first row from
    ``previous``, if given).  The reason names the leg, the row, the value and the limit."""
    lo, hi, vmax = limits
    b = np.asarray(lengths, dtype=float)
    if b.ndim != 2 or b.shape[1] != 6:
        return f"leg-length commands of shape {b.shape} refused: expected (n, 6)"
    bad = ~np.isfinite(b)
    if bad.any():
        k, i = np.argwhere(bad)[0]
        return f"leg {i + 1}: command {b[k, i]!r} (row {k}) is not a finite length: nothing sent"
    out = (b < lo) | (b > hi)
    if out.any():
        k, i = np.argwhere(out)[0]
        return (f"leg {i + 1}: command {b[k, i]:.6f} m (row {k}) outside the stroke [{lo:.6f}, {hi:.6f}] m "
                "(platform.geometry.leg_length_min_m, leg_length_max_m): nothing sent")
    steps = np.diff(b, axis=0)
    if previous is not None:
        steps = np.vstack([b[:1] - np.asarray(previous, dtype=float), steps])
    first_row = 0 if previous is not None else 1
    if len(steps):
        speed = np.abs(steps) / dt_s
        fast = speed > vmax * (1.0 + 1e-9)
        if fast.any():
            k, i = np.argwhere(fast)[0]
            row = int(k) + first_row
            frm = "the previous command (or the measured length)" if row == 0 else f"row {row - 1}"
            return (f"leg {i + 1}: command {b[row, i]:.6f} m (row {row}) moves the leg at {speed[k, i]:.4f} m/s "
                    f"from {frm}, beyond the leg speed limit {vmax:.4f} m/s "
                    "(platform.geometry.leg_velocity_max_m_per_s): nothing sent")
    return None


class Ros2ControlRig:
    """A ros2_control hexapod (or its emulator) as a context manager (module doc).

    ``dt_s``: the command period (``loop.dt_s``); ``joint_names``; ``limits`` = (shortest, longest leg [m],
    leg speed [m/s]); ``emulator``: the in-process emulator node or None; ``domain_id``: the ROS domain used."""

    def __init__(self, scenario: scn.Scenario, domain_id: int | None = None, ready_timeout_s: float | None = None):
        if scenario.plant != "ros2_control":
            raise ParameterError(f"plant: {scenario.plant!r} is not allowed for the ros2_control rig client; "
                                 "expected 'ros2_control' (rths_ros.runtime.ros2_control_rig.load_rig_scenario)")
        self.scenario = scenario
        self.p = p = scenario.ros2_control
        self.dt_s = float(scenario.loop.dt_s)
        self.joint_names = tuple(p.joint_names)
        g = scenario.platform.geometry
        self.limits = (float(g.leg_length_min_m), float(g.leg_length_max_m), float(g.leg_velocity_max_m_per_s))
        self.ready_timeout_s = float(p.ready_timeout_s if ready_timeout_s is None else ready_timeout_s)
        self.state_timeout_s = max(p.state_timeout_s, EMULATOR_STATE_TIMEOUT_S) if p.emulate else p.state_timeout_s
        self._requested_domain = domain_id
        self.domain_id: int | None = None
        self.emulator = None
        self._lease: _DomainLock | None = None
        self._ctx = None
        self._node = None
        self._executor = None
        self._spin: threading.Thread | None = None
        self._closing = False
        self._cond = threading.Condition()
        # (lengths, velocities, efforts, header stamp ns, receive time monotonic ns, raw positions, raw velocities)
        self._state: tuple | None = None
        self._states = 0
        self._stream: list | None = None      # every state received during play()
        self._order: list[int] | None = None
        self._order_names: tuple = ()
        self.bad_names = ""
        self._last_command: np.ndarray | None = None
        self._msg = Float64MultiArray()
        self.commands_sent = 0
        self.last_play: dict = {}

    # -- life cycle ------------------------------------------------------------------------------------------------
    def __enter__(self) -> Ros2ControlRig:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Create the context and the node (and the emulator), and spin them in a background thread."""
        if self._ctx is not None:
            return
        domain = self._requested_domain
        saved = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
        if self.p.emulate and domain is None:
            self._lease = _DomainLock()
            domain = self._lease.domain_id
            os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = os.environ.get("RTHS_DISCOVERY_RANGE", "LOCALHOST")
        try:
            self._ctx = rclpy.Context()
            rclpy.init(context=self._ctx, domain_id=domain,
                       signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
            self.domain_id = self._ctx.get_domain_id()
            self._node = rclpy.create_node("rths_ros2_control_rig", context=self._ctx)
            self._pub = self._node.create_publisher(Float64MultiArray, self.p.command_topic, standard_qos(10))
            self._node.create_subscription(JointState, self.p.joint_state_topic, self._on_joint_state,
                                           driver_qos(1000))
            self._executor = make_executor("events", self._ctx)
            self._executor.add_node(self._node)
            if self.p.emulate:
                from rths_ros.runtime.ros2_control_emulator import Ros2ControlEmulatorNode
                self.emulator = Ros2ControlEmulatorNode(self.scenario, None, context=self._ctx)
                self._executor.add_node(self.emulator)
        except BaseException:
            self.close()
            raise
        finally:
            if saved is None:
                os.environ.pop("ROS_AUTOMATIC_DISCOVERY_RANGE", None)
            else:
                os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = saved
        self._spin = threading.Thread(target=self._spin_loop, name="ros2_control_rig", daemon=True)
        self._spin.start()

    def _spin_loop(self) -> None:
        while not self._closing and self._ctx.ok():
            try:
                self._executor.spin_once(timeout_sec=0.05)
            except Exception:       # a shut-down context while closing
                if self._closing:
                    return
                raise

    def close(self) -> None:
        """Stop spinning, stop the emulator, release the context and the domain (the rig's own controller holds
        the last command)."""
        self._closing = True
        if self._spin is not None:
            self._spin.join(timeout=5.0)
            self._spin = None
        if self.emulator is not None:
            self.emulator.finalize()
        for n in (self.emulator, self._node):
            if n is not None:
                try:
                    n.destroy_node()
                except Exception:
                    pass
        if self._executor is not None:
            self._executor.shutdown(timeout_sec=1.0)
            self._executor = None
        if self._ctx is not None:
            try:
                rclpy.shutdown(context=self._ctx)
            except Exception:
                pass
            self._ctx = None
        if self._lease is not None:
            self._lease.close()
            self._lease = None

    def emulator_summary(self) -> dict:
        """The emulator's counts (commands, refused_commands, clipped_commands, ticks), {} without one."""
        if self.emulator is None:
            return {}
        e = self.emulator
        return {"commands": e.commands, "refused_commands": e.refused_commands, "ticks": e.ticks,
                "clipped_commands": e.twin.clipped_commands}

    # -- mapping ---------------------------------------------------------------------------------------------------
    def positions_to_lengths(self, positions) -> np.ndarray:
        """Leg lengths [m] of joint positions (legs 1..6), by the scenario's joint mapping."""
        return lengths_from_positions(positions, self.p)

    def lengths_to_positions(self, lengths) -> np.ndarray:
        """Joint positions of leg lengths [m], by the scenario's joint mapping."""
        return positions_from_lengths(lengths, self.p)

    # -- the rig's side --------------------------------------------------------------------------------------------
    def _on_joint_state(self, msg) -> None:
        names = tuple(msg.name)
        if names != self._order_names:
            self._order_names = names
            self._order = joint_order(names, self.joint_names)
            if self._order is None:
                missing = [n for n in self.joint_names if n not in names]
                self.bad_names = (f"the joint state on {self.p.joint_state_topic} lacks {', '.join(missing)} "
                                  f"(has {', '.join(names) or 'no names'})")
        o = self._order
        if o is None or len(msg.position) != len(names):
            return
        pos = np.array([msg.position[i] for i in o], dtype=float)
        vel = np.array([msg.velocity[i] for i in o], dtype=float) if len(msg.velocity) == len(names) else np.zeros(6)
        eff = np.array([msg.effort[i] for i in o], dtype=float) if len(msg.effort) == len(names) else np.zeros(6)
        state = (self.positions_to_lengths(pos), velocities_from_joint_velocities(vel, self.p), eff,
                 stamp_ns(msg.header.stamp), time.monotonic_ns(), pos, vel)
        with self._cond:
            self._state = state
            self._states += 1
            if self._stream is not None:
                self._stream.append(state)
            self._cond.notify_all()

    def _why_no_state(self) -> str:
        return self.bad_names or f"nothing arrived on {self.p.joint_state_topic}"

    def read_state(self, timeout_s: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The first joint state that arrives after the call: (lengths [m], rates [m/s], efforts), legs 1..6.
        Raises :class:`RigError` naming the topic (or the missing joints) after ``timeout_s``."""
        with self._cond:
            n0 = self._states
            if not self._cond.wait_for(lambda: self._states > n0, timeout=timeout_s):
                raise RigError(f"ros2_control rig: no usable joint state within {timeout_s:g} s: "
                               f"{self._why_no_state()}")
            lengths, velocities, efforts = self._state[:3]
        return lengths.copy(), velocities.copy(), efforts.copy()

    def read_lengths(self, timeout_s: float = 1.0) -> np.ndarray:
        """The measured leg lengths [m] (6,) of the first joint state after the call (see :meth:`read_state`)."""
        return self.read_state(timeout_s)[0]

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Wait until joint states arrive and the controller's command topic has a reader; raise
        :class:`RigError` naming what is missing after ``timeout_s`` (default ``ros2_control.ready_timeout_s``)."""
        t_end = time.monotonic() + (self.ready_timeout_s if timeout_s is None else timeout_s)
        while time.monotonic() < t_end:
            if self._state is not None and self._pub.get_subscription_count() > 0:
                return
            time.sleep(0.02)
        if self._state is None:
            raise RigError(f"ros2_control rig: no usable joint state within {timeout_s or self.ready_timeout_s:g} s: "
                           f"{self._why_no_state()}")
        raise RigError(f"ros2_control rig: nothing reads {self.p.command_topic} (is the forward_command_controller "
                       "active?)")

    # -- commands --------------------------------------------------------------------------------------------------
    def check_commands(self, lengths, previous=None) -> None:
        """Refuse (:class:`RigCommandRefused`) a trajectory (n, 6) [m] of which a row is not finite, leaves the
        stroke, or moves a leg faster than the leg speed from the row before (the first row from ``previous``):
        :func:`command_refusal`."""
        why = command_refusal(lengths, previous, self.limits, self.dt_s)
        if why is not None:
            raise RigCommandRefused(why)

    def _send(self, lengths: np.ndarray) -> None:
        lo, hi, _ = self.limits
        if not np.all((lengths >= lo) & (lengths <= hi)):      # (checked already: never send it)
            raise RigCommandRefused(f"leg-length command {lengths.tolist()} outside [{lo}, {hi}] m: not sent")
        self._msg.data = [float(v) for v in self.lengths_to_positions(lengths)]
        self._pub.publish(self._msg)
        self._last_command = lengths.copy()
        self.commands_sent += 1

    def play(self, lengths) -> dict:
        """Stream the leg lengths ``lengths`` (n, 6) [m], one row per ``dt_s`` on absolute deadlines, and record
        the newest joint state at every tick (after that tick's command went out).

        Returns ``lengths``, ``velocities``, ``efforts`` (n, 6) of the recorded states (legs 1..6, lengths and
        rates through the joint mapping), ``commanded`` (n, 6), ``stamps_ns`` (n,) (the recorded states'
        header stamps), the states as the rig sent them, ``positions`` and ``joint_velocities`` (n, 6),
        ``sent_ns`` and ``sent_mono_ns`` (n,) (wall and monotonic time [ns] each command went out) and ``stream``:
        every joint state received from the first command to two periods after the last (a dict of ``stamps_ns``
        and ``received_mono_ns`` (m,) and the arrays above, (m, 6)), for an analysis on the rig's own ticks
        (identification).

        Raises :class:`RigCommandRefused` before anything is sent if a row fails the checks (module doc), and
        :class:`RigError` when no joint state is newer than ``ros2_control.state_timeout_s`` (towards the
        emulator at least 0.5 s) (nothing more is sent; the controller holds the last command)."""
        b = np.array(lengths, dtype=float)
        if self._state is None:
            self.wait_ready()
        previous = self._last_command if self._last_command is not None else self.read_lengths()
        self.check_commands(b, previous)
        if self._pub.get_subscription_count() == 0:
            self.wait_ready()
        n = len(b)
        rec = {k: np.empty((n, 6)) for k in ("lengths", "velocities", "efforts", "positions", "joint_velocities")}
        stamps = np.zeros(n, dtype=np.int64)
        sent = np.zeros(n, dtype=np.int64)
        sent_mono = np.zeros(n, dtype=np.int64)
        limit_ns = int(self.state_timeout_s * 1e9)
        clock = RealtimeClock(self.dt_s, busy_wait_s=0.0)
        repeated = 0
        last_stamp = -1
        self._stream = []
        try:
            clock.start()
            for k in range(n):
                sent[k] = time.time_ns()
                sent_mono[k] = time.monotonic_ns()
                self._send(b[k])
                st = self._state
                if time.monotonic_ns() - st[4] > limit_ns:
                    raise RigError(f"ros2_control rig: the newest joint state on {self.p.joint_state_topic} is "
                                   f"{(time.monotonic_ns() - st[4]) * 1e-6:.1f} ms old at command {k} of {n} "
                                   f"(limit {self.state_timeout_s * 1e3:g} ms: ros2_control.state_timeout_s"
                                   + (", at least 500 ms towards the emulator)" if self.p.emulate else ")"))
                rec["lengths"][k], rec["velocities"][k], rec["efforts"][k] = st[0], st[1], st[2]
                rec["positions"][k], rec["joint_velocities"][k] = st[5], st[6]
                stamps[k] = st[3]
                repeated += st[3] == last_stamp
                last_stamp = st[3]
                if k < n - 1:
                    clock.wait_next()
            time.sleep(2 * self.dt_s)      # the states of the last commands' ticks
        finally:
            with self._cond:
                stream, self._stream = self._stream, None
        self.last_play = {"commands": n, "overruns": clock.overruns, "repeated_states": int(repeated),
                          "states_received": len(stream)}
        rows = list(zip(*stream)) if stream else [()] * 7
        stream_rec = {"stamps_ns": np.array(rows[3], dtype=np.int64),
                      "received_mono_ns": np.array(rows[4], dtype=np.int64)}
        for i, key in ((0, "lengths"), (1, "velocities"), (2, "efforts"), (5, "positions"), (6, "joint_velocities")):
            stream_rec[key] = np.array(rows[i], dtype=float).reshape(-1, 6)
        return {**rec, "commanded": b, "stamps_ns": stamps, "sent_ns": sent, "sent_mono_ns": sent_mono,
                "stream": stream_rec}
