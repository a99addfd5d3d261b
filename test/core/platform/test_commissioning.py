"""The commissioning analysis on synthetic rigs: leg order, signs, gains, legs that do not move, and the initial
check that finds a rig reporting the actuator stroke instead of the leg length."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.core.platform.commissioning import (
    CommissioningParams,
    JogRecord,
    analyse_jog,
    commission,
    initial_check,
    jog_plan,
    settled,
    verdict,
)

HOME = np.array([0.70, 0.701, 0.702, 0.699, 0.7005, 0.6995])
LO, HI, VMAX = 0.6113, 0.7913, 0.25
DT = 1e-3


class SyntheticRig:
    """A hexapod as numbers: each physical leg follows its command with a first-order lag (time constant tau);
    the wiring maps command slot i to physical leg ``perm[i]`` with sign ``sign[i]`` about the start; stuck legs
    stay; the reported joint state is the physical length minus ``offset`` (with resolver quantisation)."""

    def __init__(self, perm=(0, 1, 2, 3, 4, 5), sign=(1,) * 6, stuck=(), gain=(1.0,) * 6, offset=0.0, scale=1.0,
                 tau=0.01):
        self.dt_s = DT
        self.perm, self.sign, self.stuck, self.gain = list(perm), np.array(sign, float), set(stuck), np.array(gain)
        self.offset, self.scale, self.tau = offset, scale, tau
        self.ref = HOME.copy()
        self.x = HOME.copy()
        self.plays = 0
        self.max_speed = 0.0
        self.prev = None

    def _measure(self):
        return np.round((self.x - self.offset) * self.scale / 2.4e-6) * 2.4e-6

    def read_lengths(self):
        return self._measure()

    def play(self, lengths):
        b = np.asarray(lengths, float)
        assert b.min() >= LO and b.max() <= HI
        prev = self.prev if self.prev is not None else self.read_lengths()
        self.max_speed = max(self.max_speed, float(np.abs(np.diff(np.vstack([prev, b]), axis=0)).max()) / DT)
        self.prev = b[-1]
        self.plays += 1
        out = np.empty_like(b)
        a = DT / self.tau
        for k, row in enumerate(b):
            target = self.x.copy()
            for slot in range(6):
                leg = self.perm[slot]
                if leg not in self.stuck:
                    target[leg] = self.ref[leg] + self.sign[slot] * self.gain[slot] * (row[slot] - self.ref[slot])
            self.x += a * (target - self.x)
            out[k] = self._measure()
        return {"lengths": out}


P = CommissioningParams(hold_s=0.15, window_s=0.05)


def _run(rig, p=P):
    return commission(rig, HOME, LO, HI, p)


def test_a_correct_rig_passes_with_unit_gains():
    rig = SyntheticRig()
    res = _run(rig)
    assert res.passed and res.faults == [], res.faults
    assert [j.moved for j in res.jogs] == [1, 2, 3, 4, 5, 6]
    assert all(j.gain == pytest.approx(1.0, abs=0.01) for j in res.jogs)
    assert rig.max_speed <= P.speed_m_per_s * 1.01          # the jogs keep to their speed
    assert "ok" in res.table() and res.to_dict()["passed"] is True


def test_swapped_legs_2_and_3_are_named():
    res = _run(SyntheticRig(perm=(0, 2, 1, 3, 4, 5)))
    assert res.faults == ["legs 2 and 3 swapped"], res.faults
    assert [j.moved for j in res.jogs] == [1, 3, 2, 4, 5, 6]
    assert "moves leg 3" in res.table()


def test_a_sign_flip_on_leg_5_is_named():
    res = _run(SyntheticRig(sign=(1, 1, 1, 1, -1, 1)))
    assert res.faults == ["leg 5: sign flipped"], res.faults
    assert res.jogs[4].gain == pytest.approx(-1.0, abs=0.01)


def test_a_leg_that_does_not_move_is_named():
    res = _run(SyntheticRig(stuck=(3,)))
    assert res.faults == ["leg 4 does not move"], res.faults
    assert res.jogs[3].moved == 0


def test_a_rig_reporting_the_stroke_instead_of_the_length_fails_before_anything_moves():
    rig = SyntheticRig(offset=0.46)
    res = _run(rig)
    assert not res.passed and not res.jogged and rig.plays == 0
    assert "all legs read 460.0 mm below the expected pose alike" in res.faults[0], res.faults
    assert "unit/offset mismatch suspected (an offset: ros2_control.joint_offsets_m about +0.4600 m" in res.faults[0]
    assert "joint_scales" not in res.faults[0]         # the legs' different lengths tell an offset from a scale
    assert "outside the stroke" in res.faults[1] and "leg 6 0.2395" in res.faults[1], res.faults


def test_millimetres_read_as_metres_is_named_a_scale_mismatch():
    faults, may_jog = initial_check(HOME * 1e-3, HOME, LO, HI, 0.005)
    assert not may_jog and "alike (0.001 x): unit/offset mismatch suspected (a unit or scale: " \
        "ros2_control.joint_scales about 1000 x" in faults[0], faults
    assert "joint_offsets_m" not in faults[0]


def test_a_rig_away_from_home_but_inside_the_stroke_is_jogged_and_named():
    rig = SyntheticRig()
    rig.x[2] += 0.012
    res = _run(rig)
    assert res.jogged and res.faults == ["leg 3: measured 0.714000 m, +12.00 mm from the expected 0.702000 m "
                                         "(tolerance 5 mm)"], res.faults


def test_other_wirings_gains_and_cross_talk_are_named():
    res = _run(SyntheticRig(perm=(1, 2, 0, 3, 4, 5)))      # a cycle, not a swap
    assert res.faults[:3] == ["leg 1's command moves leg 2", "leg 2's command moves leg 3",
                              "leg 3's command moves leg 1"], res.faults
    res = _run(SyntheticRig(gain=(1, 1, 1, 1, 1, 0.5)))
    assert res.faults == ["leg 6: moves 0.5 x the command (joint_scales?)"], res.faults
    rec = JogRecord(2, 0.002, HOME, HOME + np.array([0, 0.002, 0.001, 0, 0, 0]), HOME)
    assert analyse_jog(rec, P).faults == ["leg 2: its command also moves leg 3 (+1.00 mm)"]
    rec = JogRecord(2, 0.002, HOME, HOME + np.array([0, 0.002, 0, 0, 0, 0]), HOME + np.array([0, 0.001, 0, 0, 0, 0]))
    assert analyse_jog(rec, P).faults == ["leg 2: does not return (+1.00 mm off after the jog)"]
    assert verdict(["x"], []) == ["x"]


def test_the_jog_stays_inside_the_stroke_and_goes_down_near_the_top():
    p = CommissioningParams()
    start = HOME.copy()
    start[0] = HI - 0.001
    plan = jog_plan(start, 1, p, DT, HI)
    assert plan.commanded_m == -p.amplitude_m
    b = plan.lengths
    assert b.max() <= HI and b[:, 0].min() == pytest.approx(start[0] - p.amplitude_m)
    assert np.abs(np.diff(b, axis=0)).max() / DT <= p.speed_m_per_s * 1.001
    assert np.array_equal(b[:, 1:], np.tile(start[1:], (len(b), 1)))      # the other legs hold


def test_settled_needs_legs_at_rest_and_fresh_states():
    p = CommissioningParams(window_s=0.1)
    n = 100
    rest = np.tile(HOME, (n, 1))
    assert settled(rest, p, DT)
    drift = rest.copy()
    drift[:, 2] += np.linspace(0, 1e-4, n)                # 0.1 mm in the window: still moving
    assert not settled(drift, p, DT)
    stamps = np.full(n, 5, dtype=np.int64)                # one state repeated: the feedback stalled
    assert not settled(rest, p, DT, stamps)
    assert settled(rest, p, DT, np.arange(n) * 1_000_000)
