"""A rig session recorded as a bag, and replayed from it: ``rths qualify --ros2-control --bag-out`` / ``--bag``.

:class:`RecordingRig` wraps a leg-length rig client (:class:`~rths_ros.runtime.ros2_control_rig.Ros2ControlRig`:
``dt_s``, ``read_lengths()``, ``play(lengths (n, 6))``) and keeps every trajectory it plays and what came back;
:meth:`RecordingRig.write_bag` writes them as a rosbag2 (MCAP) the way they were on the wire: each command row as
``std_msgs/Float64MultiArray`` on the rig's command topic (joint positions, after the joint mapping), each
measurement as ``sensor_msgs/JointState`` on its joint-state topic (positions and velocities in joint units, named
by ``joint_names``), plus one JSON record on ``/rths/rig_record`` (the mapping, the sample time, where each
trajectory begins and ends, the lengths read between them).

:class:`ReplayRig` answers the same calls from such a bag, in the order they were made, after checking that each
trajectory asked for is the one recorded (to 1e-9 m): the analysis of a recorded session can be repeated, or changed
in what it computes from the data, without the rig.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rths_ros.bag import SCENARIO_TOPIC, BagWriter, read_bag, string_msg, typestore
from rths_ros.drivers.ros2_control import (
    Ros2ControlParams,
    joint_order,
    lengths_from_positions,
    positions_from_lengths,
    velocities_from_joint_velocities,
)
from rths_ros.params import build, to_dict

RECORD_TOPIC = "/rths/rig_record"

__all__ = ["RecordingRig", "ReplayRig", "RigWire", "RECORD_TOPIC"]


class RigWire:
    """The rig's wire messages as CDR bytes: a command row (``std_msgs/Float64MultiArray`` of joint positions) and a
    joint state (``sensor_msgs/JointState`` stamped ``t_ns``, named ``names``), for bags of rig sessions."""

    def __init__(self):
        ts = self.ts = typestore()
        self._fma = ts.types["std_msgs/msg/Float64MultiArray"]
        self._layout = ts.types["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
        self._js = ts.types["sensor_msgs/msg/JointState"]
        self._header = ts.types["std_msgs/msg/Header"]
        self._time = ts.types["builtin_interfaces/msg/Time"]

    def command(self, q) -> bytes:
        return self.ts.serialize_cdr(self._fma(layout=self._layout, data=np.array(q, dtype=float)),
                                     "std_msgs/msg/Float64MultiArray")

    def joint_state(self, t_ns: int, names, position, velocity, effort) -> bytes:
        sec, nsec = divmod(int(t_ns), 1_000_000_000)
        msg = self._js(header=self._header(stamp=self._time(sec=sec, nanosec=nsec), frame_id=""), name=list(names),
                       position=np.array(position, dtype=float), velocity=np.array(velocity, dtype=float),
                       effort=np.array(effort, dtype=float))
        return self.ts.serialize_cdr(msg, "sensor_msgs/msg/JointState")


class RecordingRig:
    """``rig`` with every ``read_lengths`` and ``play`` kept for :meth:`write_bag` (module doc)."""

    def __init__(self, rig, kind: str):
        self.rig = rig
        self.kind = kind
        self.dt_s = rig.dt_s
        self.calls: list[tuple[str, dict]] = []

    def read_lengths(self, timeout_s: float = 1.0) -> np.ndarray:
        b = self.rig.read_lengths(timeout_s)
        self.calls.append(("read", {"lengths": np.array(b, dtype=float)}))
        return b

    def play(self, lengths) -> dict:
        rec = self.rig.play(lengths)
        self.calls.append(("play", {"commanded": np.array(lengths, dtype=float),
                                    "lengths": np.array(rec["lengths"], dtype=float),
                                    "velocities": np.array(rec["velocities"], dtype=float)}))
        return rec

    def write_bag(self, path, scenario, scenario_yaml: str) -> Path:
        """The session as a new rosbag2 directory at ``path`` (module doc)."""
        path = Path(path)
        p = scenario.ros2_control
        wire = RigWire()
        gain = velocities_from_joint_velocities(np.ones(6), p)
        dt_ns = int(round(self.dt_s * 1e9))
        meta = {"kind": self.kind, "dt_s": self.dt_s, "ros2_control": to_dict(p), "calls": []}
        w = BagWriter(path)
        try:
            w.write_msg(SCENARIO_TOPIC, "std_msgs/msg/String", 1, string_msg(scenario_yaml))
            w.add_topic(p.command_topic, "std_msgs/msg/Float64MultiArray")
            w.add_topic(p.joint_state_topic, "sensor_msgs/msg/JointState")
            t = 2
            rows = 0
            for kind, data in self.calls:
                if kind == "read":
                    meta["calls"].append({"read": [float(v) for v in data["lengths"]]})
                    continue
                q = positions_from_lengths(data["commanded"], p)
                pos = positions_from_lengths(data["lengths"], p)
                vel = data["velocities"] / gain
                for k in range(len(q)):
                    t += dt_ns
                    w.write_raw(p.command_topic, t, wire.command(q[k]))
                    w.write_raw(p.joint_state_topic, t + 1,
                                wire.joint_state(t, p.joint_names, pos[k], vel[k], np.zeros(6)))
                meta["calls"].append({"play": [rows, rows + len(q)]})
                rows += len(q)
            w.write_msg(RECORD_TOPIC, "std_msgs/msg/String", t + dt_ns, string_msg(json.dumps(meta)))
        finally:
            w.close()
        return path


class ReplayRig:
    """The rig of a bag :class:`RecordingRig` wrote: the same calls, answered from the record (module doc)."""

    def __init__(self, bag_dir, kind: str):
        path = Path(bag_dir)
        if not (path / "metadata.yaml").exists():
            found = [d.parent for d in sorted(path.glob("*/metadata.yaml"))
                     if RECORD_TOPIC in (d.parent / "metadata.yaml").read_text()] if path.is_dir() else []
            if len(found) != 1:
                raise FileNotFoundError(f"{bag_dir}: no rosbag2 with {RECORD_TOPIC} (the bag `{kind} --bag-out` "
                                        "writes)")
            path = found[0]
        self.path = path
        msgs = read_bag(path, [RECORD_TOPIC]).get(RECORD_TOPIC)
        if not msgs:
            raise FileNotFoundError(f"{path}: no {RECORD_TOPIC} message")
        self.meta = meta = json.loads(msgs[0][1].data)
        if meta.get("kind") != kind:
            raise ValueError(f"{path}: recorded by {meta.get('kind')!r}, not by {kind!r}")
        self.dt_s = float(meta["dt_s"])
        p = self.mapping = build(Ros2ControlParams, meta["ros2_control"], section="ros2_control")
        topics = read_bag(path, [p.command_topic, p.joint_state_topic])
        cmds, states = topics.get(p.command_topic, []), topics.get(p.joint_state_topic, [])
        if len(cmds) != len(states):
            raise ValueError(f"{path}: {len(cmds)} commands but {len(states)} joint states")
        names = tuple(p.joint_names)
        pos = np.empty((len(states), 6))
        vel = np.empty((len(states), 6))
        for k, (_, m) in enumerate(states):
            o = joint_order(list(m.name), names)
            if o is None:
                raise ValueError(f"{path}: joint state {k} lacks one of {', '.join(names)}")
            pos[k] = np.asarray(m.position, dtype=float)[o]
            vel[k] = np.asarray(m.velocity, dtype=float)[o]
        self.commanded = lengths_from_positions(np.array([np.asarray(m.data, dtype=float) for _, m in cmds]), p)
        self.lengths = lengths_from_positions(pos, p)
        self.velocities = velocities_from_joint_velocities(vel, p)
        self._calls = list(meta["calls"])
        self._next = 0

    def _call(self, kind: str) -> dict:
        if self._next >= len(self._calls):
            raise ValueError(f"{self.path}: the record ends here; the analysis asks for more than was recorded "
                             "(other settings than the recorded session's?)")
        call = self._calls[self._next]
        self._next += 1
        if kind not in call:
            raise ValueError(f"{self.path}: call {self._next} of the record is {next(iter(call))!r}, the analysis "
                             f"asks for {kind!r} (other settings than the recorded session's?)")
        return call

    def read_lengths(self, timeout_s: float = 1.0) -> np.ndarray:
        return np.array(self._call("read")["read"], dtype=float)

    def play(self, lengths) -> dict:
        a, b = self._call("play")["play"]
        want = np.asarray(lengths, dtype=float)
        got = self.commanded[a:b]
        if want.shape != got.shape or not np.allclose(want, got, rtol=0.0, atol=1e-9):
            raise ValueError(f"{self.path}: trajectory {self._next} asked for differs from the recorded one "
                             f"(shape {want.shape} vs {got.shape}): other settings than the recorded session's?")
        return {"lengths": self.lengths[a:b].copy(), "velocities": self.velocities[a:b].copy(), "commanded": got}
