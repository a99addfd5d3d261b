"""Safety: limits, watchdogs, the safe-pose ramp, and the checks at the node boundaries.

* Non-finite values never enter the fast path.  Every node validates every loop message it reads
  (rths_ros.runtime.guard: finite, within 1e9, arrays of the expected length, a step index within the run) and
  checks what it computes (the numerical part its force, the plant its leg command); a NaN or inf aborts the run
  with the node, the quantity and the step named.  The in-process virtual run applies the same checks.
* The sensor's rated range (:attr:`SafetyParams.force_limit_n`, ``torque_limit_nm``) and the interface
  displacement (``interface_limit_m``) are limits like the leg stroke, speed and joint angle of the
  platform commander: exceeding one aborts the run.
* Watchdogs: a fast-path topic that falls ``watchdog_steps`` steps behind the newest step (realtime), or a
  loop that makes no progress for ``watchdog_s`` of wall time (lockstep), aborts the run.
* The plant checks every leg command it receives against the platform's stroke and leg speed
  (:func:`leg_command_out_of_range`: the length and the velocity feedforward it would execute), whatever
  the commander and the learners did before; a command outside them is not executed and aborts the run.
* Process watch (:class:`rths_ros.runtime.processes.ProcessWatch`): a node process no watchdog covers (it
  publishes no fast-path topic: the recorder, the supervisor, the ILC learner) that ends during the run aborts it.
* Abort = the plant (the platform controller on a rig) stops following the loop's commands and ramps the
  legs to the safe pose (home, retracted away from the plate) with a bounded leg speed (:class:`SafePoseRamp`), then holds it.

docs/safety.md lists every limit, what triggers an abort and the measured reaction times.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from rths_ros.params import ParameterError, param

#: the loop topics a fault can corrupt (faults.corrupt_topic; rths_ros.runtime.fault_injection) and the kinds
CORRUPTIBLE_TOPICS = ("/rths/leg_command", "/rths/leg_state", "/rths/raw_wrench", "/rths/interface_force",
                      "/rths/interface_command", "/rths/interface_state", "/rths/passivity", "/rths/aff_coefficients")
VARIABLE_LENGTH_TOPICS = ("/rths/interface_force", "/rths/interface_command", "/rths/interface_state",
                          "/rths/aff_coefficients")
CORRUPT_KINDS = ("nan", "inf", "huge", "length", "step", "duplicate", "stale")


@dataclass(frozen=True)
class FaultParams:
    """Fault injection for tests and drills (the simulated plant and the node processes)."""

    nan_wrench_at_step: int = param(-1, "", -1, 10**9, "the plant reports a NaN wrench at this global step "
                                    "(-1 = never)")
    saturate_wrench_at_step: int = param(-1, "", -1, 10**9, "the plant reports a wrench beyond the sensor's "
                                         "rated range (2 x safety.force_limit_n along z) from this global step "
                                         "on (-1 = never)")
    leg_command_offset_at_step: int = param(-1, "", -1, 10**9, "the platform adds leg_command_offset_m to "
                                            "leg 1's command from this global step on (-1 = never)")
    leg_command_offset_m: float = param(0.5, "m", -1.0, 1.0, "size of the injected leg-command error")
    drop_force_fraction: float = param(0.0, "", 0.0, 1.0, "the force sensor node drops this fraction of its "
                                       "force messages (seeded by loop.seed)")
    delay_spike_s: float = param(0.0, "s", 0.0, 0.1, "the force sensor node sleeps this long before "
                                 "publishing, every delay_every_steps steps")
    delay_every_steps: int = param(100, "", 1, 10**9, "period of the injected delay spikes [steps]")
    teardown_hang_s: float = param(0.0, "s", 0.0, 3600.0, "every node process (or teardown_hang_node's) blocks "
                                   "this long in its teardown, in C holding the GIL, to prove the teardown "
                                   "watchdog (docs/reliability.md; 0 = off)")
    teardown_hang_node: str = param("", "", doc="the node whose process hangs with teardown_hang_s (a name of "
                                    "`nodes`; empty = every node)")
    crash_node: str = param("", "", doc="this node raises an uncaught error in its loop callback from "
                            "crash_at_step on, as a bug would (node graph only; empty = never)")
    crash_at_step: int = param(-1, "", -1, 10**9, "global step of the injected crash (-1 = never)")
    start_failure_node: str = param("", "", doc="this node's process fails while its node is built, before it is "
                                    "ready, as a missing device or an unreadable file would (node graph only; "
                                    "empty = never)")
    corrupt_topic: str = param("", "", doc="the node that publishes this loop topic sends its message of "
                               "corrupt_at_step corrupted as corrupt_kind says, once (node graph only; empty = never)",
                               choices=("",) + CORRUPTIBLE_TOPICS)
    corrupt_kind: str = param("nan", "", doc="nan, inf, huge (1e300): the message's first value; length: its first "
                              "array one entry longer (interface and AFF topics); step: a step index beyond the run; "
                              "duplicate: sent twice; stale: the previous step's message sent again after it",
                              choices=CORRUPT_KINDS)
    corrupt_at_step: int = param(-1, "", -1, 10**9, "global step of the corrupted message (-1 = never)")

    def validate(self) -> None:
        if self.corrupt_kind == "length" and self.corrupt_topic and self.corrupt_topic not in VARIABLE_LENGTH_TOPICS:
            raise ParameterError(f"corrupt_kind: 'length' is not allowed with corrupt_topic = {self.corrupt_topic!r} "
                                 "(fixed-size arrays); expected a topic of " + ", ".join(VARIABLE_LENGTH_TOPICS))


@dataclass(frozen=True)
class SafetyParams:
    """Limits, watchdogs and the safe pose (see docs/safety.md)."""

    force_limit_n: float = param(1e4, "N", 1.0, 1e6, "rated force range of the force/torque sensor: any "
                                 "|F_x|, |F_y|, |F_z| above it aborts (Insam 2022 §16.2: 1e4 N)")
    torque_limit_nm: float = param(500.0, "N m", 0.01, 1e5, "rated torque range of the sensor: any |T_x|, "
                                   "|T_y|, |T_z| above it aborts (Insam 2022 §16.2: 500 N m)")
    interface_limit_m: float = param(0.05, "m", 1e-4, 1.0, "largest interface displacement from the home pose "
                                     "the platform accepts as a command")
    watchdog_steps: int = param(100, "", 2, 100000, "realtime: a fast-path topic this many steps behind the "
                                "newest step aborts the run (isolated lost samples are held and counted)")
    watchdog_s: float = param(5.0, "s", 0.05, 600.0, "lockstep: no progress of the loop for this wall time "
                              "after START aborts the run")
    safe_retract_m: float = param(0.005, "m", 0.0, 0.05, "safe pose = the home pose moved this far down (-z of the "
                                  "platform frame), away from the fixed ground plate above the platform")
    ramp_speed_m_per_s: float = param(0.05, "m/s", 1e-4, 0.5, "largest leg speed of the ramp to the safe pose")
    hold_s: float = param(0.5, "s", 0.0, 10.0, "time the plant holds the safe pose before it reports SAFE "
                          "(about 10 time constants of the PPI1 leg loop: the legs have settled)")
    preflight_tolerance_m: float = param(1e-3, "m", 1e-6, 0.05, "pre-flight before START: largest distance of a "
                                         "measured leg length from the trial's start pose once the plant has ramped "
                                         "there and held it (the ramp is confirmed by the measurements)")
    mark_filter: bool = param(False, "", doc="the control topics' readers admit only messages that carry the "
                              "run's mark (header.frame_id), with a DDS content filter: a foreign flood never reaches "
                              "the nodes' Python, at a cost of about 60 us of CPU per message and reader on a 2-core "
                              "machine (docs/safety.md)")
    partition: str = param("", "", doc="DDS partition of the run's loop topics (letters, digits, '_', '-', '.'; "
                           "empty = the default partition, which every node of the ROS domain writes in): a foreign "
                           "node's samples of a loop topic are never matched with the run's readers and cost the "
                           "loop nothing; an outside tool reads the loop through the profile file OUT/dds/<process>.xml "
                           "(docs/safety.md)")

    def validate(self) -> None:
        if self.partition and not re.fullmatch(r"[A-Za-z0-9_.\-]{1,64}", self.partition):
            raise ParameterError(f"partition: {self.partition!r} is not a partition name; expected 1 to 64 "
                                 "letters, digits, '_', '-' or '.' (no DDS wildcard), or empty for the default "
                                 "partition")


def non_finite(what: str, values, step: int) -> str | None:
    """A reason string if any value is NaN or inf, else None."""
    for i, v in enumerate(values):
        if not math.isfinite(v):
            return f"non-finite {what}[{i}] = {float(v)!r} at step {step}"
    return None


def wrench_out_of_range(wrench, force_limit: float, torque_limit: float, step: int) -> str | None:
    """A reason string if a force or torque component exceeds the sensor's rated range, else None."""
    for i in range(3):
        if abs(wrench[i]) > force_limit:
            return (f"force/torque sensor saturated: F{'xyz'[i]} = {float(wrench[i]):.6g} N beyond the rated "
                    f"{force_limit:g} N (safety.force_limit_n) at step {step}")
    for i in range(3, 6):
        if abs(wrench[i]) > torque_limit:
            return (f"force/torque sensor saturated: T{'xyz'[i - 3]} = {float(wrench[i]):.6g} N m beyond the "
                    f"rated {torque_limit:g} N m (safety.torque_limit_nm) at step {step}")
    return None


class SafePoseRamp:
    """Leg commands from the lengths at the abort to the safe-pose lengths, then hold.

    Every leg follows ``b(t) = b0 + (b_safe - b0) (1 - cos(pi t / T)) / 2`` (zero velocity at both ends);
    ``T`` is the shortest duration (a whole number of steps) for which the fastest leg stays within
    ``speed`` (peak speed ``pi |db| / (2 T)``).  After the ramp the command holds ``b_safe`` for
    ``hold_steps`` steps.  :meth:`command` returns (length, velocity feedforward) for ramp step ``j``
    (j = 1 is the first command after the abort).
    """

    def __init__(self, b_start, b_safe, speed_m_per_s: float, dt_s: float, hold_s: float = 0.0):
        self.b0 = np.array(b_start, dtype=float)
        self.b1 = np.array(b_safe, dtype=float)
        self.delta = self.b1 - self.b0
        self.dt = float(dt_s)
        span = float(np.max(np.abs(self.delta))) if self.delta.size else 0.0
        t_min = np.pi * span / (2.0 * speed_m_per_s)
        self.ramp_steps = max(1, int(np.ceil(t_min / self.dt - 1e-9)))
        self.duration_s = self.ramp_steps * self.dt
        self.hold_steps = int(round(hold_s / self.dt))
        self.total_steps = self.ramp_steps + self.hold_steps

    def command(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        if j >= self.ramp_steps:
            return self.b1.copy(), np.zeros_like(self.b1)
        x = np.pi * j / self.ramp_steps
        length = self.b0 + self.delta * (1.0 - np.cos(x)) / 2.0
        velocity = self.delta * np.pi / (2.0 * self.duration_s) * np.sin(x)
        return length, velocity

    def done(self, j: int) -> bool:
        return j >= self.total_steps


#: legs farther than this from the start pose of a trial are ramped there first (a few resolver steps)
START_POSE_TOLERANCE_M = 1e-5


def start_pose_ramp(b_now, b_start, safety: SafetyParams, dt_s: float) -> SafePoseRamp | None:
    """A rig's ramp from the leg lengths ``b_now`` to a trial's start pose ``b_start`` (the safe-pose ramp's
    cosine profile and speed limit, then ``safety.hold_s``), or None when the legs are already there."""
    b_now = np.asarray(b_now, dtype=float)
    if float(np.max(np.abs(np.asarray(b_start, dtype=float) - b_now))) <= START_POSE_TOLERANCE_M:
        return None
    return SafePoseRamp(b_now, b_start, safety.ramp_speed_m_per_s, dt_s, safety.hold_s)


def safe_pose_lengths(kinematics, retract_m: float) -> np.ndarray:
    """Leg lengths of the safe pose: the home pose moved ``retract_m`` down along the platform frame's z.

    The ground plate is fixed above the platform and the specimen hangs upside down from it (the contact
    test and the gait test alike): the platform rises towards the plate, so it retracts downwards."""
    pose = kinematics.home_pose.copy()
    pose.translation = pose.translation - np.array([0.0, 0.0, float(retract_m)])
    return np.array(kinematics.inverse(pose), dtype=float)


def leg_command_out_of_range(length, feedforward_velocity, length_min: float, length_max: float,
                             speed_max: float, step: int) -> str | None:
    """The plant's boundary check of a leg command: a reason string if a commanded length leaves the stroke
    ``[length_min, length_max]`` or a velocity feedforward exceeds the leg speed limit, else None.

    These are the two quantities a plant executes (the desired rate ``velocity`` is informative only); the
    check applies to the command as received, i.e. after every feedforward (AFF, ILC at position or velocity
    level) the platform commander and the learners added."""
    for i, b in enumerate(length):
        if not length_min <= b <= length_max:
            side = "below the minimum" if b < length_min else "above the maximum"
            return (f"leg {i + 1}: commanded length {float(b):.6f} m is {side} of the stroke "
                    f"[{length_min:.6f}, {length_max:.6f}] m (platform.geometry.leg_length_min_m, "
                    f"leg_length_max_m) at step {step}")
    for i, v in enumerate(feedforward_velocity):
        if not abs(v) <= speed_max:
            return (f"leg {i + 1}: commanded velocity feedforward {float(v):.6f} m/s exceeds the leg speed limit "
                    f"{speed_max:.4f} m/s (platform.geometry.leg_velocity_max_m_per_s) at step {step}")
    return None


# -- pre-flight: the measured legs before START -------------------------------------------------------------------
def _likely_cause(measured: np.ndarray, expected: np.ndarray, before: np.ndarray | None, tol: float) -> str:
    """The likeliest cause of measured leg lengths that disagree with the expected ones (a sentence, or '')."""
    d = measured - expected
    off = np.abs(d) > tol
    if before is not None:        # after a ramp from ``before`` to ``expected``: which legs did not follow it
        cmd = expected - before
        moved = measured - before
        stuck = [i for i in range(6) if off[i] and abs(cmd[i]) > 2 * tol and abs(moved[i]) <= 0.2 * abs(cmd[i])]
        flipped = [i for i in range(6) if off[i] and abs(cmd[i]) > 2 * tol and moved[i] * cmd[i] < 0
                   and abs(abs(moved[i]) - abs(cmd[i])) <= 0.3 * abs(cmd[i])]
        parts = []
        if stuck:
            parts.append(", ".join(f"leg {i + 1}" for i in stuck) + " did not move although commanded "
                         + ", ".join(f"{cmd[i] * 1e3:+.2f} mm" for i in stuck) + " (a leg that does not move, or "
                         "commands that reach another joint)")
        if flipped:
            parts.append(", ".join(f"leg {i + 1}" for i in flipped) + " moved the opposite way (commanded "
                         + ", ".join(f"{cmd[i] * 1e3:+.2f} mm, moved {moved[i] * 1e3:+.2f} mm" for i in flipped)
                         + "): a sign flipped")
        if parts:
            return "likely cause: " + "; ".join(parts)
    if off.all():
        ratio = measured / np.where(expected == 0.0, np.nan, expected)
        if np.all(np.isfinite(ratio)) and float(np.ptp(ratio)) <= 0.02 * abs(float(np.mean(ratio))):
            r = float(np.mean(ratio))
            decade = 10.0 ** round(math.log10(abs(r))) if r else 0.0
            if decade not in (0.0, 1.0) and abs(r / decade - 1.0) <= 0.05:    # a power of ten: a unit
                unit = " (millimetres read as metres?)" if 500 < r < 2000 else (
                    " (metres read as millimetres?)" if 5e-4 < r < 2e-3 else "")
                return f"likely cause: a unit or scale: every leg reads {r:.4g} x the expected length{unit}"
        mean = float(np.mean(d))
        if float(np.ptp(d)) <= max(2 * tol, 0.02 * abs(mean)):
            return (f"likely cause: a length offset: every leg reads {abs(mean):.4f} m "
                    f"{'less' if mean < 0 else 'more'} than expected, alike (a rig that reports the actuator stroke "
                    "instead of the joint-to-joint length, or a wrong zero)")
    if off.sum() >= 2:
        idx = [i for i in range(6) if off[i]]
        for a in idx:
            for b in idx:
                if a < b and abs(measured[a] - expected[b]) <= tol and abs(measured[b] - expected[a]) <= tol:
                    return f"likely cause: legs {a + 1} and {b + 1} swapped (each reads the other's expected length)"
    if off.sum() == 1:
        i = int(np.argmax(off))
        return f"likely cause: leg {i + 1} alone is off by {d[i] * 1e3:+.2f} mm (its offset, scale or sign)"
    return ""


def preflight_problem(measured, expected, length_min: float, length_max: float, kinematics=None,
                      tolerance_m: float | None = None, before=None) -> str | None:
    """The pre-flight of a plant before START: a reason string, or None when the measured legs are fine.

    * every measured length is finite and inside the stroke ``[length_min, length_max]``;
    * with ``kinematics`` (a :class:`~rths_ros.core.platform.stewart.StewartKinematics`): the lengths belong to a
      pose of the platform (forward kinematics converges) whose joint angles are within the geometry's limit;
    * with ``tolerance_m``: every leg is within it of ``expected`` (the start pose, after the ramp there); with
      ``before`` (the lengths the ramp started from) a leg that did not move or moved the opposite way is named.

    The reason names the leg, the measured and the expected value and the likely cause (an offset, a unit, two
    legs swapped, a leg that does not move, a sign)."""
    m = np.asarray(measured, dtype=float)
    e = np.asarray(expected, dtype=float)
    b = None if before is None else np.asarray(before, dtype=float)
    tol = 1e-3 if tolerance_m is None else float(tolerance_m)
    if m.shape != (6,) or not np.all(np.isfinite(m)):
        return f"measured leg lengths {m.tolist()!r} are not 6 finite values"
    outside = [i for i in range(6) if not length_min <= m[i] <= length_max]
    if outside:
        i = outside[0]
        legs = ", ".join(f"leg {j + 1} {m[j]:.6f} m" for j in outside)
        cause = _likely_cause(m, e, None, tol)
        return (f"measured leg lengths outside the stroke [{length_min:.6f}, {length_max:.6f}] m "
                f"(platform.geometry.leg_length_min_m, leg_length_max_m): {legs}; expected about {e[i]:.6f} m "
                f"(the start pose)" + (f"; {cause}" if cause else ""))
    if kinematics is not None:
        from rths_ros.core.platform.stewart import KinematicsError
        try:
            pose = kinematics.forward(m, guess=kinematics.home_pose, tol=1e-9, max_iter=50)
        except KinematicsError as exc:
            cause = _likely_cause(m, e, None, tol)
            return (f"the measured leg lengths {np.round(m, 6).tolist()} m belong to no pose of the platform "
                    f"(forward kinematics: {exc})" + (f"; {cause}" if cause else ""))
        ang = np.degrees(kinematics.joint_angles(pose))
        lim = kinematics.params.joint_angle_max_deg
        if float(ang.max()) > lim:
            j = int(np.argmax(ang.max(axis=0)))
            return (f"the measured leg lengths give a pose whose joint angle at leg {j + 1} is "
                    f"{float(ang[:, j].max()):.2f} deg, beyond platform.geometry.joint_angle_max_deg = {lim:g} deg")
    if tolerance_m is not None:
        d = m - e
        off = [i for i in range(6) if abs(d[i]) > tol]
        if off:
            legs = "; ".join(f"leg {i + 1} measured {m[i]:.6f} m, expected {e[i]:.6f} m ({d[i] * 1e3:+.3f} mm)"
                             for i in off)
            cause = _likely_cause(m, e, b, tol)
            return (f"the legs are not at the start pose (tolerance {tol * 1e3:g} mm, "
                    f"safety.preflight_tolerance_m): {legs}" + (f"; {cause}" if cause else ""))
    return None


def commands_outside_stroke(length, length_min: float, length_max: float) -> str | None:
    """A reason string if a leg-length command to be sent lies outside the stroke (or is not finite), else None:
    the last check before a command leaves a plant (ramps included)."""
    for i, v in enumerate(length):
        if not (math.isfinite(v) and length_min <= v <= length_max):
            return (f"leg {i + 1}: command {float(v):.6f} m outside the stroke [{length_min:.6f}, {length_max:.6f}] m "
                    "(platform.geometry.leg_length_min_m, leg_length_max_m): not sent")
    return None


#: lockstep: the extra wait for SAFE after an abort (safe_wait_s)
LOCKSTEP_SAFE_EXTRA_S = 5.0


def safe_wait_s(sp: SafetyParams, mode: str) -> float:
    """How long the supervisor, the recorder and the live view wait for SAFE after an abort: the ramp's bound and
    3 s; in lockstep 5 s more, since a lockstep ramp runs as fast as the machine lets it, so on a loaded machine its
    wall time can exceed its simulated time (the runner's drain, launch_support.orderly_stop_s, still covers it:
    safety.watchdog_s + 10 s + the bound)."""
    return safe_ramp_bound_s(sp) + 3.0 + (LOCKSTEP_SAFE_EXTRA_S if mode == "lockstep" else 0.0)


def safe_ramp_bound_s(sp: SafetyParams) -> float:
    """Upper bound of the ramp to the safe pose and the hold: the longest leg travel is bounded by the
    interface limit plus the lift (cosine profile, peak speed ramp_speed_m_per_s)."""
    return math.pi * (sp.interface_limit_m + sp.safe_retract_m) / (2.0 * sp.ramp_speed_m_per_s) + sp.hold_s
