"""The pre-flight a plant runs before START (rths_ros.core.platform.safety.preflight_problem): measured legs inside
the stroke, belonging to a pose, at the start pose after the ramp; a failure names the leg, the values and the
likely cause.  And the last check before a command leaves a plant (commands_outside_stroke)."""
import numpy as np
import pinocchio as pin
import pytest

from rths_ros.core.platform.safety import commands_outside_stroke, preflight_problem
from rths_ros.core.platform.stewart import StewartGeometryParams, StewartKinematics

G = StewartGeometryParams()
KIN = StewartKinematics(G)
HOME = np.array(KIN.home_lengths, dtype=float)
LO, HI = G.leg_length_min_m, G.leg_length_max_m


def check(measured, **kw):
    return preflight_problem(measured, HOME, LO, HI, kw.pop("kin", KIN), **kw)


def test_legs_at_home_pass_and_so_does_a_pose_inside_the_workspace():
    assert check(HOME) is None
    assert check(HOME, tolerance_m=1e-3) is None
    pose = KIN.home_pose.copy()
    pose.translation = pose.translation + np.array([0.01, -0.005, 0.02])
    lengths = KIN.inverse(pose)
    assert check(lengths) is None                                # inside the stroke, a pose: fine before the ramp
    problem = check(lengths, tolerance_m=1e-3)                  # ... but not at the start pose
    assert problem is not None and "not at the start pose" in problem and "safety.preflight_tolerance_m" in problem


def test_a_rig_that_reports_the_stroke_instead_of_the_length_is_named_as_an_offset():
    measured = HOME - LO                                         # 0.09 m: the actuator's stroke from its minimum
    problem = check(measured)
    assert problem is not None
    assert "outside the stroke" in problem and "leg 1 0.089978 m" in problem, problem
    assert "a length offset" in problem and f"{LO:.4f} m less" in problem and "stroke instead" in problem, problem


def test_millimetres_read_as_metres_are_named_as_a_unit():
    problem = check(HOME * 1000.0)
    assert problem is not None and "a unit or scale" in problem and "1000 x" in problem, problem
    assert "millimetres read as metres" in problem, problem


def test_two_swapped_legs_are_named():
    pose = KIN.home_pose.copy()
    pose.translation = pose.translation + np.array([0.02, 0.0, 0.0])   # legs differ from each other here
    start = KIN.inverse(pose)
    measured = start.copy()
    measured[[1, 2]] = measured[[2, 1]]
    problem = preflight_problem(measured, start, LO, HI, None, 1e-4)
    assert problem is not None and "legs 2 and 3 swapped" in problem, problem


def test_after_the_ramp_a_leg_that_did_not_move_and_a_leg_that_moved_the_other_way_are_named():
    before = HOME - 0.01                                        # the legs stood 10 mm short of the start pose
    after = HOME.copy()
    after[3] = before[3]                                         # leg 4 did not move
    after[4] = before[4] - 0.01                                  # leg 5 moved 10 mm the wrong way
    problem = preflight_problem(after, HOME, LO, HI, KIN, 1e-3, before)
    assert problem is not None
    assert "leg 4 measured" in problem and "leg 5 measured" in problem, problem
    assert "leg 4 did not move" in problem and "leg 5 moved the opposite way" in problem and "sign" in problem, problem
    assert "leg 1" not in problem


def test_lengths_inside_the_stroke_that_belong_to_no_pose_are_refused():
    # inside the stroke leg by leg, but three long and three short legs alternating far beyond any pose's joints
    measured = HOME.copy()
    measured[::2] = HI - 1e-4
    measured[1::2] = LO + 1e-4
    problem = check(measured)
    assert problem is not None, "an alternating extreme leg set should not pass"
    assert "no pose of the platform" in problem or "joint angle" in problem, problem


def test_non_finite_measurements_are_refused():
    m = HOME.copy()
    m[2] = np.nan
    assert "not 6 finite values" in check(m)


@pytest.mark.parametrize("value", [LO - 1e-6, HI + 1e-6, float("nan"), float("inf")])
def test_a_command_outside_the_stroke_is_named_and_not_sent(value):
    cmd = HOME.copy()
    cmd[5] = value
    bad = commands_outside_stroke(cmd, LO, HI)
    assert bad is not None and bad.startswith("leg 6:") and "not sent" in bad


def test_commands_inside_the_stroke_pass():
    assert commands_outside_stroke(HOME, LO, HI) is None
    assert commands_outside_stroke([LO] * 6, LO, HI) is None and commands_outside_stroke([HI] * 6, LO, HI) is None


def test_the_pose_check_uses_forward_kinematics_from_home():
    """(The check must not depend on where an earlier forward kinematics left the object.)"""
    kin = StewartKinematics(G)
    far = kin.home_pose.copy()
    far.translation = far.translation + np.array([0.03, 0.03, 0.03])
    kin.forward(kin.inverse(far))
    assert preflight_problem(HOME, HOME, LO, HI, kin, 1e-6) is None
    assert isinstance(kin.home_pose, pin.SE3)
