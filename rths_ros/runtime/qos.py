"""QoS profiles from config/qos.yaml."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml
from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from rths_ros.params import ParameterError
from rths_ros.resources import config_dir

_REL = {"reliable": ReliabilityPolicy.RELIABLE, "best_effort": ReliabilityPolicy.BEST_EFFORT}
_DUR = {"volatile": DurabilityPolicy.VOLATILE, "transient_local": DurabilityPolicy.TRANSIENT_LOCAL}


@dataclass(frozen=True)
class ControlQos:
    profile: QoSProfile          # the publishers' (and, without reader_depth, the readers') profile
    ack_every_steps: int
    deadline_s: float
    reader: QoSProfile | None = None    # the readers' profile: the same with history depth reader_depth

    @property
    def reader_profile(self) -> QoSProfile:
        return self.reader or self.profile


#: the samples a KEEP_ALL writer of Fast DDS holds (its default resource limits): the next write blocks for the
#: writer's max_blocking_time, then fails.  The lockstep acknowledgement waits (``ack_every_steps``) keep a slow
#: reader's backlog under half of it.
KEEP_ALL_SAMPLES = 5000
ACK_EVERY_STEPS_MAX = KEEP_ALL_SAMPLES // 2


def check_ack_every_steps(value, where: str) -> int:
    """``ack_every_steps`` of a control profile: 0 (never wait) to :data:`ACK_EVERY_STEPS_MAX`."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = None
    if n is None or n != value or not 0 <= n <= ACK_EVERY_STEPS_MAX:
        raise ParameterError(f"{where}.ack_every_steps: {value!r} is out of range; expected an integer from 0 to "
                             f"{ACK_EVERY_STEPS_MAX} (half of the {KEEP_ALL_SAMPLES} samples a KEEP_ALL writer "
                             "holds; 0 = never wait)")
    return n


@lru_cache(maxsize=4)
def _load(path: str) -> dict:
    return yaml.safe_load(Path(path).read_text())


def _profile(section: dict, where: str) -> QoSProfile:
    try:
        rel = _REL[section.get("reliability", "reliable")]
        dur = _DUR[section.get("durability", "volatile")]
        depth = int(section.get("history_depth", 1))
        hist = {"keep_last": HistoryPolicy.KEEP_LAST, "keep_all": HistoryPolicy.KEEP_ALL}[
            section.get("history", "keep_last")]
    except KeyError as exc:
        raise ParameterError(f"{where}: {exc.args[0]!r} is not allowed; expected one of "
                             f"{sorted(_REL)} / {sorted(_DUR)}") from None
    if depth < 1:
        raise ParameterError(f"{where}.history_depth: {depth} is out of range; expected an integer >= 1")
    return QoSProfile(history=hist, depth=depth, reliability=rel, durability=dur)


def qos_config(path: Path | None = None) -> dict:
    return _load(str(path or (config_dir() / "qos.yaml")))


def control_qos(profile_name: str, dt_s: float) -> ControlQos:
    cfg = qos_config()
    try:
        sec = cfg["profiles"][profile_name]["control"]
    except KeyError:
        raise ParameterError(f"loop.qos_profile: {profile_name!r} is not a profile of qos.yaml; expected one of "
                             + ", ".join(cfg["profiles"])) from None
    prof = _profile(sec, f"qos.profiles.{profile_name}.control")
    periods = float(sec.get("deadline_periods", 0))
    deadline_s = periods * dt_s
    if deadline_s > 0:
        prof.deadline = Duration(nanoseconds=int(round(deadline_s * 1e9)))
    reader = None
    if "reader_depth" in sec:
        depth = int(sec["reader_depth"])
        if depth < 1:
            raise ParameterError(f"qos.profiles.{profile_name}.control.reader_depth: {depth} is out of range; "
                                 "expected an integer >= 1")
        reader = _profile(dict(sec, history_depth=depth), f"qos.profiles.{profile_name}.control")
        if deadline_s > 0:
            reader.deadline = prof.deadline
    return ControlQos(prof, check_ack_every_steps(sec.get("ack_every_steps", 0), f"qos.profiles.{profile_name}.control"),
                      deadline_s, reader)


def record_qos(profile_name: str) -> QoSProfile:
    cfg = qos_config()
    return _profile(cfg["profiles"][profile_name]["record"], f"qos.profiles.{profile_name}.record")


def events_qos() -> QoSProfile:
    return _profile(qos_config()["events"], "qos.events")


def diagnostics_qos() -> QoSProfile:
    return _profile(qos_config()["diagnostics"], "qos.diagnostics")
