"""The joint mapping of a ros2_control rig (leg_length = offset + sign * scale * joint_position) and its settings."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.drivers.ros2_control import (
    Ros2ControlParams,
    lengths_from_positions,
    positions_from_lengths,
    velocities_from_joint_velocities,
)
from rths_ros.params import ParameterError, build


def _p(**values) -> Ros2ControlParams:
    return build(Ros2ControlParams, values, section="ros2_control")


def test_the_defaults_leave_the_values_untouched_bit_for_bit():
    p = _p()
    rng = np.random.default_rng(3)
    q = 0.6 + 0.2 * rng.random((50, 6))
    assert np.array_equal(lengths_from_positions(q, p), q)
    assert np.array_equal(positions_from_lengths(q, p), q)
    assert np.array_equal(velocities_from_joint_velocities(q - 0.7, p), q - 0.7)


def test_a_rig_reporting_the_stroke_from_0_at_0_46_m():
    p = _p(joint_offsets_m=[0.46] * 6)
    assert lengths_from_positions([0.24] * 6, p) == pytest.approx([0.70] * 6, abs=1e-15)
    assert positions_from_lengths([0.70] * 6, p) == pytest.approx([0.24] * 6, abs=1e-15)


def test_offset_scale_and_sign_per_joint_round_trip():
    p = _p(joint_offsets_m=[0.46, 0.5, 0.0, -0.1, 0.9, 0.46], joint_scales=[1.0, 1e-3, 1.0, 2.5e-6, 1.0, 0.5],
           joint_signs=[1, 1, -1, 1, -1, 1])
    lengths = np.array([[0.70, 0.71, 0.72, 0.69, 0.70, 0.65], [0.62, 0.78, 0.70, 0.70, 0.61, 0.79]])
    q = positions_from_lengths(lengths, p)
    # the rule itself, joint by joint: leg 2 counts millimetres from 0.5 m, leg 3 runs the other way from 0,
    # leg 5 shortens from 0.9 m as its position grows
    assert q[0, 1] == pytest.approx(210.0) and q[0, 2] == pytest.approx(-0.72) and q[0, 4] == pytest.approx(0.2)
    assert np.allclose(lengths_from_positions(q, p), lengths, rtol=0, atol=1e-12)
    # rates: the offset drops out, sign and scale stay
    assert velocities_from_joint_velocities([1.0] * 6, p) == pytest.approx([1.0, 1e-3, -1.0, 2.5e-6, -1.0, 0.5])


def test_the_mapping_is_a_scenario_section_with_its_example_value():
    s = scn.load("contact_1d", ["ros2_control.joint_offsets_m=[0.46, 0.46, 0.46, 0.46, 0.46, 0.46]",
                                "ros2_control.joint_signs=[1, 1, 1, 1, -1, 1]"])
    assert s.ros2_control.joint_offsets_m == (0.46,) * 6 and s.ros2_control.joint_signs[4] == -1


@pytest.mark.parametrize("override, words", [
    ("ros2_control.joint_signs=[1, 1, 0, 1, 1, 1]", ["joint_signs[2]", "0", "-1 or 1"]),
    ("ros2_control.joint_signs=[1, 1, 2, 1, 1, 1]", ["joint_signs[2]", "2", "[-1, 1]"]),
    ("ros2_control.joint_scales=[1, 1, 0, 1, 1, 1]", ["joint_scales[2]", "0.0", "[1e-07, 1000]"]),
    ("ros2_control.joint_scales=[1, 1, -0.001, 1, 1, 1]", ["joint_scales[2]", "-0.001", "[1e-07, 1000]"]),
    ("ros2_control.joint_offsets_m=[0.46, 0.46]", ["joint_offsets_m", "2 elements", "6 elements"]),
    ("ros2_control.joint_offsets_m=[0.46, 0.46, 0.46, 0.46, 0.46, 11]", ["joint_offsets_m[5]", "11", "[-10, 10]"]),
    ("ros2_control.emulator_swap_legs=[2]", ["emulator_swap_legs", "[2]", "pair"]),
    ("ros2_control.emulator_swap_legs=[3, 3]", ["emulator_swap_legs", "[3, 3]", "distinct"]),
    ("ros2_control.emulator_swap_legs=[2, 7]", ["emulator_swap_legs[1]", "7", "[1, 6]"]),
    ("ros2_control.emulator_sign_flip_legs=[0]", ["emulator_sign_flip_legs[0]", "0", "[1, 6]"]),
    ("ros2_control.emulator_stuck_legs=[4, 4]", ["emulator_stuck_legs", "distinct"]),
    ("ros2_control.emulator_effort=median", ["emulator_effort", "'median'", "'last', 'mean'"]),
])
def test_bad_mapping_and_fault_settings_are_refused_naming_key_value_and_range(override, words):
    with pytest.raises(ParameterError) as e:
        scn.load("contact_1d", [override])
    text = str(e.value)
    assert text.startswith("ros2_control."), text
    for w in words:
        assert w in text, text
