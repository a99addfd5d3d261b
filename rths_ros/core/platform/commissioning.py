"""Commissioning of a hexapod's leg wiring: which leg each command moves, in which direction and by how much
(ROS-free; ``rths commission`` runs it on a rig, docs/commissioning.md).

A lab that brings its own hexapod up (under ros2_control, over the platform link) has to establish that the leg
numbers, the joint mapping (offset, unit, direction) and the drives agree with the platform model before the
first loaded test: a rig that reports the actuator stroke instead of the joint-to-joint length, two legs wired
in each other's place, a drive that runs the wrong way or one that does not enable all make the inverse
kinematics command the wrong motion, and the boundary checks of a run (stroke, speed) do not see it.

The check, in two parts:

1. **Initial** (:func:`initial_check`): the measured leg lengths at rest, before anything moves, must lie inside
   the stroke and near the expected pose (home, or the scenario's start pose).  All legs off by nearly the same
   amount point to a length offset (a rig reporting the stroke, a wrong zero: ``ros2_control.joint_offsets_m``),
   all by the same ratio to a unit or scale (``joint_scales``).  Legs outside the stroke stop the check here:
   nothing is commanded.
2. **Jogs** (:func:`jog_plan`, :func:`analyse_jog`): each leg alone is moved by a small ``amplitude_m`` (2 mm)
   with a cosine ramp at ``speed_m_per_s`` from where the legs stand, held ``hold_s``, ramped back and held
   again; the other legs hold their lengths.  From the measured lengths averaged over the last ``window_s`` of
   each hold: the displacement of every measured leg.  For the commanded leg ``i``: the measured leg that moved
   most is the one its command reaches (order), the sign and the ratio of its displacement to the commanded
   one are the direction and the gain; a leg moving less than ``moved_fraction`` of the command has not moved.

Verdict (:func:`verdict`): every commanded leg moves its own leg, in the commanded direction, by a gain within
``1 +- gain_tolerance``, no other leg moves by more than ``moved_fraction`` of the command, and each leg returns
within ``moved_fraction`` of the command; otherwise a fault named as the operator needs it: "legs 2 and 3
swapped", "leg 5: sign flipped", "leg 4 does not move", "leg 6 moves 0.001 x the command".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from rths_ros.params import ParameterError, param

__all__ = ["CommissioningParams", "JogPlan", "JogRecord", "JogResult", "CommissioningResult", "initial_check",
           "jog_plan", "window_mean", "settled", "analyse_jog", "verdict", "commission"]


@dataclass(frozen=True)
class CommissioningParams:
    """The jogs of ``rths commission`` and the rules of its verdict (module doc)."""

    amplitude_m: float = param(0.002, "m", 1e-5, 0.02, "how far each leg is jogged")
    speed_m_per_s: float = param(0.01, "m/s", 1e-4, 0.1, "peak leg speed of the cosine ramps")
    hold_s: float = param(0.3, "s", 0.02, 10.0, "hold before, at and after the jog (the legs settle)")
    window_s: float = param(0.1, "s", 0.001, 5.0, "the lengths are averaged over the last window_s of each hold")
    home_tolerance_m: float = param(0.005, "m", 1e-5, 0.1, "initial check: largest distance of a measured leg "
                                    "from the expected pose")
    moved_fraction: float = param(0.25, "", 0.01, 0.9, "a leg moved when its displacement reaches this fraction "
                                  "of the commanded one; other legs must stay below it, and each leg must return "
                                  "within it")
    gain_tolerance: float = param(0.2, "", 0.01, 0.9, "the measured/commanded displacement of a leg must lie "
                                  "within 1 +- this")
    legs: tuple[int, ...] = param([1, 2, 3, 4, 5, 6], "", 1, 6, "the legs to jog, one after another")

    def validate(self) -> None:
        if self.window_s > self.hold_s:
            raise ParameterError(f"window_s: {self.window_s!r} is not allowed; expected at most hold_s = "
                                 f"{self.hold_s!r} s")


# ------------------------------------------------------------------------------------------------ initial check
def initial_check(measured, expected, length_min: float, length_max: float, tolerance_m: float) -> tuple[list, bool]:
    """The legs at rest: ``(faults, may_jog)``.  ``faults`` are sentences naming the leg, the values and the likely
    cause; ``may_jog`` is False when a leg is outside the stroke or not finite (nothing must move then)."""
    m = np.asarray(measured, dtype=float)
    e = np.asarray(expected, dtype=float)
    if m.shape != (6,) or not np.all(np.isfinite(m)):
        return [f"the measured leg lengths {m.tolist()!r} are not 6 finite values"], False
    faults = []
    d = m - e
    off = np.abs(d) > tolerance_m
    outside = [i for i in range(6) if not length_min <= m[i] <= length_max]
    cause = ""
    if off.all():
        mean = float(np.mean(d))
        ratio = m / e
        r_mean = float(np.mean(ratio))
        off_fit = float(np.ptp(d)) <= max(2.0 * tolerance_m, 0.02 * abs(mean))
        scale_fit = float(np.ptp(ratio)) <= 0.02 * abs(r_mean)
        offset_text = (f"an offset: ros2_control.joint_offsets_m about {-mean:+.4f} m from the present ones, as for a "
                       "rig reporting the actuator stroke or with a wrong zero")
        scale_text = f"a unit or scale: ros2_control.joint_scales about {1.0 / r_mean:.4g} x the present ones"
        if off_fit and scale_fit:       # the better fit of the two, both when the legs cannot tell them apart
            r_off, r_scale = float(np.ptp(d)), float(np.ptp(ratio)) * float(np.mean(np.abs(e)))
            if abs(r_off - r_scale) > 1e-4:       # (0.1 mm: more than a few resolver steps apart)
                off_fit, scale_fit = r_off < r_scale, r_scale < r_off
        if off_fit or scale_fit:
            what = "; or ".join(x for x, ok in ((offset_text, off_fit), (scale_text, scale_fit)) if ok)
            cause = (f"all legs read {abs(mean) * 1e3:.1f} mm {'below' if mean < 0 else 'above'} the expected pose "
                     f"alike ({r_mean:.4g} x): unit/offset mismatch suspected ({what})")
    if outside:
        groups: dict = {}            # legs reading alike are named together
        for i in outside:
            groups.setdefault((round(float(m[i]), 6), round(float(e[i]), 6)), []).append(i + 1)
        faults.append(f"measured lengths outside the stroke [{length_min:.6f}, {length_max:.6f}] m: " + ", ".join(
            f"{'legs' if len(legs) > 1 else 'leg'} {', '.join(map(str, legs))} {mv:.6f} m (expected {ev:.6f} m)"
            for (mv, ev), legs in groups.items()))
    for i in range(6):
        if off[i] and i not in outside:
            faults.append(f"leg {i + 1}: measured {m[i]:.6f} m, {d[i] * 1e3:+.2f} mm from the expected "
                          f"{e[i]:.6f} m (tolerance {tolerance_m * 1e3:g} mm)")
    if cause:
        faults.insert(0, cause)
    return faults, not outside


# ------------------------------------------------------------------------------------------------ jogs
@dataclass
class JogPlan:
    """One leg's jog in three phases, each ending in a hold: ``phases`` = [hold at the start, ramp to the jogged
    length and hold, ramp back and hold] (each (n, 6) commanded lengths)."""

    leg: int                 # 1-based
    commanded_m: float       # signed displacement
    phases: list

    @property
    def lengths(self) -> np.ndarray:
        return np.vstack(self.phases)


@dataclass
class JogRecord:
    """The measured leg lengths (6,) averaged over the end of each hold of one leg's jog."""

    leg: int
    commanded_m: float
    before: np.ndarray
    at: np.ndarray
    after: np.ndarray


def _cosine(n: int, a: float) -> np.ndarray:
    return a * 0.5 * (1.0 - np.cos(np.pi * np.arange(1, n + 1) / n))


def jog_plan(start, leg: int, p: CommissioningParams, dt_s: float, length_max: float | None = None) -> JogPlan:
    """The jog of ``leg`` (1-based) from the lengths ``start``: hold, cosine ramp by ``amplitude_m`` (peak speed
    ``speed_m_per_s``), hold, ramp back, hold.  The jog goes up unless that would pass ``length_max``."""
    b0 = np.asarray(start, dtype=float)
    i = leg - 1
    a = p.amplitude_m
    if length_max is not None and b0[i] + a > length_max:
        a = -a
    n_ramp = max(2, int(math.ceil(math.pi * abs(a) / (2.0 * p.speed_m_per_s) / dt_s)))
    n_hold = max(1, int(round(p.hold_s / dt_s)))
    up = _cosine(n_ramp, a)
    phases = []
    for disp in (np.zeros(n_hold), np.concatenate([up, np.full(n_hold, a)]),
                 np.concatenate([a - up, np.zeros(n_hold)])):
        rows = np.tile(b0, (len(disp), 1))
        rows[:, i] += disp
        phases.append(rows)
    return JogPlan(leg, a, phases)


def window_mean(measured, p: CommissioningParams, dt_s: float) -> np.ndarray:
    """The mean of the last ``window_s`` of measured lengths (n, 6)."""
    m = np.asarray(measured, dtype=float)
    n = max(1, min(len(m), int(round(p.window_s / dt_s))))
    return m[-n:].mean(axis=0)


def settled(measured, p: CommissioningParams, dt_s: float, stamps=None) -> bool:
    """The last ``window_s`` of measured lengths (n, 6) shows the legs at rest: the means of its two halves differ
    by less than 2 % of ``amplitude_m`` on every leg, and (with the states' header ``stamps`` [ns]) the states in it
    span at least half the window (a stalled feedback repeats one state and would look at rest)."""
    m = np.asarray(measured, dtype=float)
    n = max(2, min(len(m), int(round(p.window_s / dt_s))))
    w = m[-n:]
    h = n // 2
    if float(np.max(np.abs(w[h:].mean(axis=0) - w[:h].mean(axis=0)))) > 0.02 * p.amplitude_m:
        return False
    if stamps is not None:
        s = np.asarray(stamps)[-n:]
        if float(s.max() - s.min()) < 0.5 * (n - 1) * dt_s * 1e9:
            return False
    return True


@dataclass
class JogResult:
    """What one leg's jog showed (displacements of every measured leg at the jog and after it, legs 1..6)."""

    leg: int
    commanded_m: float
    displacement_m: np.ndarray      # (6,) at the jog - before
    returned_m: np.ndarray          # (6,) after - before
    moved: int                      # the measured leg that moved most (1-based), 0 when none moved
    gain: float                     # its displacement / the commanded one (signed)
    faults: list = field(default_factory=list)

    def row(self) -> dict:
        d = self.displacement_m
        others = [abs(d[j]) for j in range(6) if j + 1 != (self.moved or self.leg)]
        return {"leg": self.leg, "commanded_mm": self.commanded_m * 1e3, "moved_leg": self.moved,
                "displacement_mm": float(d[(self.moved or self.leg) - 1]) * 1e3, "gain": self.gain,
                "sign": (0 if self.moved == 0 else int(np.sign(self.gain))),
                "others_max_mm": max(others) * 1e3, "returned_mm": float(self.returned_m[(self.moved or self.leg) - 1])
                * 1e3, "displacements_mm": [float(v) * 1e3 for v in d], "faults": list(self.faults)}


def analyse_jog(rec: JogRecord, p: CommissioningParams) -> JogResult:
    """The displacements of one leg's jog and the faults of this leg alone (sign, gain, no motion, other legs
    moving, no return); the leg order is judged over all jogs by :func:`verdict`."""
    d = np.asarray(rec.at, dtype=float) - np.asarray(rec.before, dtype=float)
    back = np.asarray(rec.after, dtype=float) - np.asarray(rec.before, dtype=float)
    a = rec.commanded_m
    thr = p.moved_fraction * abs(a)
    j = int(np.argmax(np.abs(d)))
    moved = j + 1 if abs(d[j]) >= thr else 0
    gain = float(d[j] / a) if moved else 0.0
    res = JogResult(rec.leg, a, d, back, moved, gain)
    if not moved:
        res.faults.append(f"leg {rec.leg} does not move")
        return res
    if gain < 0:
        res.faults.append(f"leg {rec.leg}: sign flipped")
    if abs(abs(gain) - 1.0) > p.gain_tolerance:
        res.faults.append(f"leg {rec.leg}: moves {abs(gain):.3g} x the command (joint_scales?)")
    others = [k for k in range(6) if k != j and abs(d[k]) >= thr]
    if others:
        res.faults.append(f"leg {rec.leg}: its command also moves " + ", ".join(
            f"leg {k + 1} ({d[k] * 1e3:+.2f} mm)" for k in others))
    if abs(back[j]) >= thr:
        res.faults.append(f"leg {rec.leg}: does not return ({back[j] * 1e3:+.2f} mm off after the jog)")
    return res


# ------------------------------------------------------------------------------------------------ verdict
@dataclass
class CommissioningResult:
    """Initial check, jogs and verdict (``passed`` and the ``faults`` that fail it)."""

    initial_faults: list
    jogs: list
    faults: list
    measured_m: np.ndarray
    expected_m: np.ndarray
    jogged: bool

    @property
    def passed(self) -> bool:
        return not self.faults

    def table(self) -> str:
        head = (f"{'leg':>3}  {'commanded':>10}  {'moved leg':>9}  {'displacement':>12}  {'gain':>7}  "
                f"{'others max':>10}  {'back':>8}  result")
        lines = [head, f"{'':>3}  {'[mm]':>10}  {'':>9}  {'[mm]':>12}  {'':>7}  {'[mm]':>10}  {'[mm]':>8}"]
        for j in self.jogs:
            r = j.row()
            moved = str(r["moved_leg"]) if r["moved_leg"] else "none"
            notes = ([f"moves leg {j.moved}"] if j.moved and j.moved != j.leg else []) + r["faults"]
            lines.append(f"{r['leg']:>3}  {r['commanded_mm']:+10.3f}  {moved:>9}  {r['displacement_mm']:+12.3f}  "
                         f"{r['gain']:+7.3f}  {r['others_max_mm']:10.3f}  {r['returned_mm']:+8.3f}  "
                         + ("; ".join(notes) or "ok"))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"passed": self.passed, "faults": list(self.faults), "initial_faults": list(self.initial_faults),
                "measured_m": [float(v) for v in self.measured_m], "expected_m": [float(v) for v in self.expected_m],
                "jogged": self.jogged, "jogs": [j.row() for j in self.jogs]}


def verdict(initial_faults: list, jogs: list) -> list:
    """The faults of a commissioning: the initial check's, then per commanded leg the order ("legs 2 and 3
    swapped" when each one's command moves the other, "leg 2's command moves leg 4" otherwise) and the leg's own
    faults (:func:`analyse_jog`)."""
    faults = list(initial_faults)
    target = {j.leg: j.moved for j in jogs}
    named = set()
    for j in jogs:
        if j.moved and j.moved != j.leg and j.leg not in named:
            k = j.moved
            if target.get(k) == j.leg:
                faults.append(f"legs {min(j.leg, k)} and {max(j.leg, k)} swapped")
                named.update((j.leg, k))
            else:
                faults.append(f"leg {j.leg}'s command moves leg {k}")
                named.add(j.leg)
        faults.extend(j.faults)
    return faults


def commission(rig, expected, length_min: float, length_max: float, p: CommissioningParams | None = None,
               progress=None, max_extra_holds: int = 5) -> CommissioningResult:
    """Run the check on ``rig`` (anything with ``dt_s``, ``read_lengths()`` and ``play(lengths) -> {"lengths":
    (n, 6), ...}``, e.g. :class:`rths_ros.runtime.ros2_control_rig.Ros2ControlRig`): the initial check against
    ``expected``; if the legs are inside the stroke, the jogs of ``p.legs`` from the measured pose, one after
    another, each phase's hold extended (up to ``max_extra_holds`` times ``hold_s``) until :func:`settled`; then
    the verdict.  ``progress(jog_result)`` is called after each jog."""
    p = p or CommissioningParams()
    dt = float(rig.dt_s)
    measured = np.asarray(rig.read_lengths(), dtype=float)
    initial, may_jog = initial_check(measured, expected, length_min, length_max, p.home_tolerance_m)
    jogs = []
    if may_jog:
        start = measured.copy()
        n_hold = max(1, int(round(p.hold_s / dt)))
        for leg in p.legs:
            plan = jog_plan(start, leg, p, dt, length_max)
            means = []
            late = False
            for rows in plan.phases:
                rec = rig.play(rows)
                extra = 0
                while not settled(rec["lengths"], p, dt, rec.get("stamps_ns")) and extra < max_extra_holds:
                    rec = rig.play(np.tile(rows[-1], (n_hold, 1)))
                    extra += 1
                late = late or not settled(rec["lengths"], p, dt, rec.get("stamps_ns"))
                means.append(window_mean(rec["lengths"], p, dt))
            res = analyse_jog(JogRecord(leg, plan.commanded_m, *means), p)
            if late:
                res.faults.append(f"leg {leg}: the legs did not settle within {(1 + max_extra_holds) * p.hold_s:g} s "
                                  "of a hold")
            jogs.append(res)
            if progress is not None:
                progress(res)
    return CommissioningResult(initial, jogs, verdict(initial, jogs), measured, np.asarray(expected, dtype=float),
                               may_jog)
