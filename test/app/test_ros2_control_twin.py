"""The rig behind the ros2_control emulator: the twin through a rig's joints, with the wiring faults of a lab's own
hexapod (position offset, two legs swapped, a sign flipped, a leg that does not move) and the stroke clip."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.app.ros2_control_twin import Ros2ControlTwin
from rths_ros.runtime.ros2_control_rig import load_rig_scenario

RIG = ["ros2_control.emulate=true"]


def _twin(*sets) -> Ros2ControlTwin:
    return Ros2ControlTwin(load_rig_scenario("contact_1d", RIG + list(sets)))


def _commands(ref, n=300, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None] * 1e-3
    return ref + 1e-3 * np.sin(2 * np.pi * (1.0 + rng.random(6)) * t)


def test_without_faults_the_rig_is_the_plain_twin_bit_for_bit():
    s = load_rig_scenario("contact_1d", RIG)
    plant = factory.build_plant(s)
    plant.reset(factory.plant_seed(s, 0))
    twin = Ros2ControlTwin(s)
    for cmd in _commands(twin.start_command()):
        out = plant.step(cmd, np.zeros(6))
        pos, vel, eff, wrench = twin.step(twin.lengths_of(cmd), np.zeros(6))
        assert np.array_equal(pos, out.lengths) and np.array_equal(vel, out.velocities)
        assert np.array_equal(eff, out.currents) and np.array_equal(wrench, out.wrench)
    assert twin.clipped_commands == 0


def test_a_rig_reporting_the_stroke_takes_and_reports_length_minus_the_offset():
    twin = _twin("ros2_control.emulator_position_offset_m=0.46")
    ref = twin.start_command()
    assert np.allclose(twin.lengths_of(ref - 0.46), ref, atol=1e-15)
    pos, *_ = twin.step(ref, np.zeros(6))
    assert np.allclose(pos, ref - 0.46, atol=3e-6)          # (quantised by the resolver)


def test_swapped_legs_take_each_others_commands_and_keep_their_names_in_the_state():
    twin = _twin("ros2_control.emulator_swap_legs=[2, 3]")
    ref = twin.start_command()
    q = ref.copy()
    q[1] += 0.002                                            # slot 2 (leg_2) commanded 2 mm up
    phys = twin.lengths_of(q)
    assert phys[2] == pytest.approx(ref[2] + 0.002) and phys[1] == ref[1]      # physical leg 3 goes
    for _ in range(400):
        pos, *_ = twin.step(phys, np.zeros(6))
    assert pos[2] - ref[2] == pytest.approx(0.002, abs=5e-5) and abs(pos[1] - ref[1]) < 5e-6


def test_a_flipped_leg_moves_the_other_way_about_its_start_and_reports_the_true_length():
    twin = _twin("ros2_control.emulator_sign_flip_legs=[5]")
    ref = twin.start_command()
    q = ref.copy()
    q[4] += 0.002
    phys = twin.lengths_of(q)
    assert phys[4] == pytest.approx(ref[4] - 0.002) and np.array_equal(np.delete(phys, 4), np.delete(ref, 4))
    for _ in range(400):
        pos, *_ = twin.step(phys, np.zeros(6))
    assert pos[4] - ref[4] == pytest.approx(-0.002, abs=5e-5)   # the joint state shows the leg went down
    assert np.array_equal(twin.lengths_of(ref), ref)            # at its start nothing shows


def test_a_stuck_leg_stays_whatever_is_commanded():
    twin = _twin("ros2_control.emulator_stuck_legs=[4]")
    ref = twin.start_command()
    for cmd in _commands(ref):
        pos, *_ = twin.step(twin.lengths_of(cmd), np.zeros(6))
    assert abs(pos[3] - ref[3]) < 3e-6 and abs(pos[0] - ref[0]) > 1e-4


def test_the_twin_is_never_driven_beyond_its_stroke_and_clipped_commands_are_counted():
    s = load_rig_scenario("contact_1d", RIG + ["ros2_control.emulator_sign_flip_legs=[1]"])
    twin = Ros2ControlTwin(s)
    g = s.platform.geometry
    ref = twin.start_command()
    q = ref.copy()
    q[0] = g.leg_length_min_m - 0.01        # flipped about the start: far above the longest leg
    phys = twin.lengths_of(q)
    assert phys[0] == g.leg_length_max_m and twin.clipped_commands == 1
    q[0] = ref[0]
    twin.lengths_of(q)
    assert twin.clipped_commands == 1
    offset = _twin("ros2_control.emulator_position_offset_m=0.46")
    assert np.all(offset.lengths_of(ref) <= g.leg_length_max_m) and offset.clipped_commands == 1   # 0.70 + 0.46


def test_the_mean_effort_is_the_step_mean_current_and_leaves_lengths_as_they_were():
    last, mean = _twin(), _twin("ros2_control.emulator_effort=mean")
    ref = last.start_command()
    differs = False
    for cmd in _commands(ref):
        p1, _, e1, _ = last.step(last.lengths_of(cmd), np.zeros(6))
        p2, _, e2, _ = mean.step(mean.lengths_of(cmd), np.zeros(6))
        assert np.array_equal(p1, p2)
        assert np.array_equal(e2, mean.plant.legs.current_mean)
        differs = differs or not np.allclose(e1, e2)
    assert differs
