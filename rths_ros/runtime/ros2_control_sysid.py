"""Closed-loop leg identification over a ros2_control rig, and again from the bag it recorded (docs/identify.md,
"Over ros2_control and from a bag").

A forward_command_controller on the position interface takes positions only; no current can be injected behind
the drives' velocity controllers as over the platform link.  The excitation is therefore the segmented multisine
``r`` [m] *added to the held position command* of one leg.  The closed-loop joint input-output estimator of
:func:`rths_ros.core.sysid.legs.estimate_frf`, ``P^ = sum_p Y_p R_p* / sum_p U_p R_p*``, still gives the plant
``P`` from the drive current ``u`` (the joint state's effort) to the leg length ``y`` (the joint state's position
through the joint mapping): ``r`` is external and uncorrelated with the loop's noise wherever it enters the loop
(Pintelon and Schoukens 2012), and the ratio of ``y/r`` and ``u/r`` is the ``u -> y`` path.

* :class:`PositionExcitationRig` is a rig of :func:`~rths_ros.core.sysid.legs.identify` (``dt_s``, ``reset``,
  ``run``) around a :class:`~rths_ros.runtime.ros2_control_rig.Ros2ControlRig` (or anything with its ``dt_s``,
  ``read_lengths`` and ``play``).  The other legs hold their lengths; every band starts from the held pose after
  ``settle_s``; the first half period of a band (inside the discarded settling period) fades the multisine in, so
  the first command is the held length, and after the band the leg is ramped back in ``ramp_s``.  All commands
  pass the rig's stroke and speed checks.  It keeps every band's commands and joint states for the bag.
* :func:`write_excitation_bag` writes them as a rosbag2 (MCAP): the scenario (``/rths/scenario``), the
  experiment (``/rths/identify/excitation``, JSON: parameters, held pose, joint mapping, the bands in order), the
  commands as sent (``std_msgs/Float64MultiArray`` on the controller's topic) and the joint state recorded at each
  command (``sensor_msgs/JointState`` on the broadcaster's topic, the rig's own stamps and joint order).
* :class:`BagExcitationReplay` is an identification rig that answers from such a bag: ``identify`` on it
  estimates from the recorded data alone (the leg lengths and rates through the joint mapping recorded with it),
  after checking that the recorded commands are the multisine of the recorded parameters.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from rths_ros.bag import SCENARIO_TOPIC, BagWriter, read_bag, string_msg
from rths_ros.drivers.ros2_control import (
    Ros2ControlParams,
    joint_order,
    lengths_from_positions,
    positions_from_lengths,
)
from rths_ros.params import build, to_dict
from rths_ros.runtime.rig_record import RigWire

__all__ = ["EXCITATION_TOPIC", "PositionExcitationRig", "write_excitation_bag", "BagExcitationReplay",
           "find_excitation_bag"]

EXCITATION_TOPIC = "/rths/identify/excitation"


class PositionExcitationRig:
    """Position-command excitation over a ros2_control rig (module doc)."""

    def __init__(self, rig, params, settle_s: float = 0.2, ramp_s: float = 0.05, tail_s: float = 0.2,
                 max_repeats: int = 2, max_stall_s: float = 0.02):
        if params.settle_periods < 1:
            raise ValueError("settle_periods: 0 is not allowed over ros2_control; expected at least 1 (the "
                             "multisine fades in during the first, discarded period)")
        self.rig = rig
        self.params = params
        self.dt_s = float(rig.dt_s)
        #: the effort is the drive current averaged over the step (emulator: emulator_effort = mean); the length
        #: is sampled at the step's end: the current represents half a step earlier
        self.current_lead_s = 0.5 * self.dt_s
        self.n_period = int(round(1.0 / (params.spacing_hz * self.dt_s)))
        self.settle_n = max(1, int(round(settle_s / self.dt_s)))
        self.ramp_n = max(2, int(round(ramp_s / self.dt_s)))
        self.tail_n = max(0, int(round(tail_s / self.dt_s)))
        self.max_repeats = int(max_repeats)
        self.max_stall_s = float(max_stall_s)
        self.hold: np.ndarray | None = None
        self.bands: list[dict] = []
        self._band_of_leg: dict[int, int] = {}

    def reset(self) -> None:
        """Hold the pose for ``settle_s`` (the previous band's transient decays); the first call takes the
        measured lengths as the held pose."""
        if self.hold is None:
            self.hold = np.array(self.rig.read_lengths(), dtype=float)
        self.rig.play(np.tile(self.hold, (self.settle_n, 1)))

    def trajectory(self, leg: int, r: np.ndarray) -> np.ndarray:
        """The leg lengths played for one band: the held pose, ``r`` added on ``leg`` (0-based), faded in over
        the first half period, then a cosine ramp back to the held pose."""
        n = len(r)
        m = min(n, max(2, self.n_period // 2))
        fade = np.ones(n)
        fade[:m] = 0.5 * (1.0 - np.cos(np.pi * np.arange(m) / m))
        back = r[-1] * 0.5 * (1.0 + np.cos(np.pi * np.arange(1, self.ramp_n + 1) / self.ramp_n))
        traj = np.tile(self.hold, (n + self.ramp_n, 1))
        traj[:n, leg] += r * fade
        traj[n:, leg] += back
        return traj

    def stalled_periods(self, sent_ns, stamps_ns, n: int) -> list[int]:
        """The periods of a band (0-based) that a stall disturbed: the commands or the joint states paused for more
        than ``max_stall_s`` inside it (the excitation the drives got was then no longer periodic), and the period
        after each (the transient)."""
        m = self.n_period
        n_periods = n // m
        limit = (self.dt_s + self.max_stall_s) * 1e9
        bad = set()
        for x in (sent_ns, stamps_ns):
            gaps = np.diff(np.asarray(x[:n], dtype=np.int64))
            for i in np.flatnonzero(gaps > limit):
                j = (int(i) + 1) // m
                bad.update(k for k in (j, j + 1) if k < n_periods)
        return sorted(bad)

    def run(self, leg: int, r) -> tuple[np.ndarray, np.ndarray]:
        """One band on ``leg`` (0-based): returns the effort and the length of that leg, one sample per joint state
        the rig published from the first command on (its own ticks, not resampled at the commands: a state read
        twice or skipped by the client would put ``u`` and ``y`` on a warped time base).  The played trajectory
        ends with ``tail_s`` of hold so that a rig lagging behind the commands still delivers the band's states.
        The periods a stall disturbed (:meth:`stalled_periods`, a busy host) are returned as NaN, which the
        estimator leaves out of its averages; a band with fewer than two undisturbed periods after the settling
        ones, or of which fewer states than commands arrived, is played again, up to ``max_repeats`` times, and the
        last attempt kept (all NaN when incomplete: its lines get no coherence and stay out of the fit).  The band
        record (``source``, ``repeats``, ``stalled_periods``) goes into the bag."""
        if self.hold is None:
            self.reset()
        r = np.asarray(r, dtype=float)
        n = len(r)
        n_periods = n // self.n_period
        need = min(2, n_periods - self.params.settle_periods)
        traj = self.trajectory(leg, r)
        traj = np.vstack([traj, np.tile(traj[-1], (self.tail_n, 1))])
        complete, stalled = False, []
        for attempt in range(self.max_repeats + 1):
            if attempt:
                self.reset()
            res = self.rig.play(traj)
            st = res.get("stream")
            if st is None:
                break
            # the first state received after the first command (receive times: the rig's clock may differ)
            i0 = int(np.searchsorted(st["received_mono_ns"], res["sent_mono_ns"][0], side="right"))
            complete = len(st["stamps_ns"]) - i0 >= n
            if not complete:
                continue
            stalled = self.stalled_periods(res["sent_ns"], st["stamps_ns"][i0:i0 + n], n)
            if sum(1 for j in range(self.params.settle_periods, n_periods) if j not in stalled) >= need:
                break
        if complete:
            states = {k: np.asarray(st[k][i0:i0 + n]) for k in _STATE_KEYS}
            source = "stream"
        else:
            states = {k: np.asarray(res[k][:n]) for k in _STATE_KEYS}
            source, stalled = "incomplete", list(range(n_periods))
        band = self._band_of_leg.get(leg, 0)
        self._band_of_leg[leg] = band + 1
        self.bands.append({"leg": leg + 1, "band": band, "n": n, "source": source, "repeats": attempt,
                           "stalled_periods": stalled, "commanded": np.asarray(res["commanded"][:n]),
                           "sent_ns": np.asarray(res["sent_ns"][:n]), **states})
        return (_without(states["efforts"][:, leg], stalled, self.n_period),
                _without(states["lengths"][:, leg], stalled, self.n_period))


def _without(x, periods, m: int) -> np.ndarray:
    """``x`` with the samples of ``periods`` (of ``m`` samples each) set to NaN."""
    x = np.array(x, dtype=float)
    for j in periods:
        x[j * m:(j + 1) * m] = np.nan
    return x


_STATE_KEYS = ("stamps_ns", "positions", "joint_velocities", "efforts", "lengths")


def write_excitation_bag(path, scenario, params, excitation: PositionExcitationRig, scenario_yaml: str) -> Path:
    """Write the bands ``excitation`` ran as a rosbag2 (MCAP) at ``path`` (a new directory; module doc)."""
    path = Path(path)
    p = scenario.ros2_control
    wire = RigWire()
    meta = {"kind": "rths identify --ros2-control", "dt_s": excitation.dt_s,
            "current_lead_s": excitation.current_lead_s, "params": to_dict(params),
            "hold_lengths_m": [float(v) for v in excitation.hold], "ros2_control": to_dict(p),
            "bands": []}
    w = BagWriter(path)
    try:
        t = 1
        w.write_msg(SCENARIO_TOPIC, "std_msgs/msg/String", t, string_msg(scenario_yaml))
        w.add_topic(p.command_topic, "std_msgs/msg/Float64MultiArray")
        w.add_topic(p.joint_state_topic, "sensor_msgs/msg/JointState")
        names = list(p.joint_names)
        index = 0
        for b in excitation.bands:
            meta["bands"].append({"leg": b["leg"], "band": b["band"], "first": index, "n": b["n"],
                                  "source": b["source"], "repeats": b["repeats"],
                                  "stalled_periods": b["stalled_periods"]})
            qpos = positions_from_lengths(b["commanded"], p)
            for k in range(b["n"]):
                w.write_raw(p.command_topic, int(b["sent_ns"][k]), wire.command(qpos[k]))
                stamp = int(b["stamps_ns"][k])
                w.write_raw(p.joint_state_topic, stamp, wire.joint_state(stamp, names, b["positions"][k],
                                                                         b["joint_velocities"][k], b["efforts"][k]))
                t = max(t, stamp, int(b["sent_ns"][k]))
            index += b["n"]
        w.write_msg(EXCITATION_TOPIC, "std_msgs/msg/String", t + 2, string_msg(json.dumps(meta)))
    finally:
        w.close()
    return path


def find_excitation_bag(path) -> Path:
    """The bag of an identification run: ``path`` itself (a rosbag2 directory) or the one bag directory below it
    that holds an excitation record.  Raises FileNotFoundError naming what was looked for."""
    path = Path(path)
    if (path / "metadata.yaml").exists():
        return path
    found = sorted(d.parent for d in path.glob("*/metadata.yaml")) if path.is_dir() else []
    found = [d for d in found if EXCITATION_TOPIC in (d / "metadata.yaml").read_text()]
    if len(found) == 1:
        return found[0]
    raise FileNotFoundError(f"{path}: no rosbag2 with {EXCITATION_TOPIC} (the bag `rths identify --ros2-control` "
                            f"records)" + (f"; several: {', '.join(map(str, found))}" if found else ""))


class BagExcitationReplay:
    """An identification rig that answers from the bag of an excitation run (module doc).  ``params``: the
    recorded :class:`~rths_ros.core.sysid.legs.SysIdParams`; ``legs``: the recorded legs in order."""

    def __init__(self, bag_dir):
        from rths_ros.core.sysid.legs import sysid_params
        self.path = find_excitation_bag(bag_dir)
        meta_msgs = read_bag(self.path, [EXCITATION_TOPIC]).get(EXCITATION_TOPIC)
        if not meta_msgs:
            raise FileNotFoundError(f"{self.path}: no {EXCITATION_TOPIC} message")
        self.meta = meta = json.loads(meta_msgs[0][1].data)
        self.dt_s = float(meta["dt_s"])
        self.current_lead_s = float(meta["current_lead_s"])
        self.mapping = build(Ros2ControlParams, meta["ros2_control"], section="ros2_control")
        self.params = sysid_params(self.dt_s, **{k: v for k, v in meta["params"].items() if k != "legs"},
                                   legs=tuple(meta["params"]["legs"]))
        self.hold = np.array(meta["hold_lengths_m"], dtype=float)
        topics = read_bag(self.path, [self.mapping.command_topic, self.mapping.joint_state_topic])
        cmds = topics.get(self.mapping.command_topic, [])
        states = topics.get(self.mapping.joint_state_topic, [])
        total = sum(b["n"] for b in meta["bands"])
        if len(cmds) != total or len(states) != total:
            raise ValueError(f"{self.path}: {len(cmds)} commands and {len(states)} joint states recorded; the "
                             f"excitation record lists {total}")
        names = tuple(self.mapping.joint_names)
        q_cmd = np.array([np.asarray(m.data, dtype=float) for _, m in cmds])
        pos = np.empty((total, 6))
        eff = np.empty((total, 6))
        for k, (_, m) in enumerate(states):
            o = joint_order(list(m.name), names)
            if o is None:
                raise ValueError(f"{self.path}: joint state {k} lacks one of {', '.join(names)}")
            pos[k] = np.asarray(m.position, dtype=float)[o]
            eff[k] = np.asarray(m.effort, dtype=float)[o]
        self.commanded = lengths_from_positions(q_cmd, self.mapping)
        self.lengths = lengths_from_positions(pos, self.mapping)
        self.efforts = eff
        self.segments = {(b["leg"], b["band"]): (b["first"], b["n"]) for b in meta["bands"]}
        self.sources = {(b["leg"], b["band"]): b.get("source", "stream") for b in meta["bands"]}
        self.stalled = {(b["leg"], b["band"]): list(b.get("stalled_periods", [])) for b in meta["bands"]}
        self.legs = tuple(dict.fromkeys(b["leg"] for b in meta["bands"]))
        self._band_of_leg: dict[int, int] = {}

    def selected_params(self, changes: dict):
        """The recorded parameters with ``changes`` of ``legs`` (a subset of the recorded legs) and ``fit_delay``
        (the fit); raises :class:`~rths_ros.params.ParameterError` naming the field."""
        from rths_ros.core.sysid.legs import sysid_params
        from rths_ros.params import ParameterError
        legs = tuple(changes.get("legs") or self.params.legs)
        missing = [v for v in legs if v not in self.legs]
        if missing:
            raise ParameterError(f"legs: {list(legs)!r} is not allowed; the bag holds legs "
                                 f"{', '.join(map(str, self.legs))}")
        extra = {"fit_delay": True} if changes.get("fit_delay") else {}
        return sysid_params(self.dt_s, self.params, legs=legs, **extra)

    def reset(self) -> None:
        """(Nothing to do: the bands were recorded from rest.)"""

    def run(self, leg: int, r) -> tuple[np.ndarray, np.ndarray]:
        """The recorded effort and length of ``leg`` (0-based) in its next band, after checking that the recorded
        commands are ``r`` added to the held length (the faded-in settling period aside)."""
        band = self._band_of_leg.get(leg, 0)
        self._band_of_leg[leg] = band + 1
        key = (leg + 1, band)
        if key not in self.segments:
            raise ValueError(f"{self.path}: no band {band + 1} of leg {leg + 1} recorded (legs recorded: "
                             f"{', '.join(map(str, self.legs))})")
        first, n = self.segments[key]
        r = np.asarray(r, dtype=float)
        if self.sources[key] != "stream":       # left out when it was recorded (PositionExcitationRig.run)
            return np.full(n, np.nan), np.full(n, np.nan)
        m = int(round(1.0 / (self.params.spacing_hz * self.dt_s)))
        stalled = self.stalled[key]
        if len(r) != n:
            raise ValueError(f"{self.path}: band {band + 1} of leg {leg + 1} has {n} samples recorded, the "
                             f"multisine of the recorded parameters {len(r)}")
        sl = slice(first, first + n)
        skip = self.params.settle_periods * int(round(1.0 / (self.params.spacing_hz * self.dt_s)))
        sent = self.commanded[sl, leg] - self.hold[leg]
        err = float(np.max(np.abs(sent[skip:] - r[skip:]))) if n > skip else 0.0
        if not err <= 1e-9 + 1e-9 * float(np.max(np.abs(r))):
            raise ValueError(f"{self.path}: the commands recorded for leg {leg + 1}, band {band + 1} differ from "
                             f"the multisine of the recorded parameters by up to {err:.3g} m")
        if not math.isfinite(float(np.sum(self.lengths[sl, leg]))):
            raise ValueError(f"{self.path}: non-finite joint states in leg {leg + 1}, band {band + 1}")
        return _without(self.efforts[sl, leg], stalled, m), _without(self.lengths[sl, leg], stalled, m)
