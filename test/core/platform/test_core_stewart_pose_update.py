"""The compiled pose update of the forward kinematics equals pinocchio's ``SE3 * exp6`` bit for bit."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from rths_ros.core.platform.stewart import StewartKinematics, _compose_exp6


def test_compose_exp6_equals_pinocchio_bit_for_bit():
    rng = np.random.default_rng(7)
    E = np.zeros((3, 3))
    for n in range(5000):
        M = pin.exp6(rng.standard_normal(6))
        d = rng.standard_normal(6) * 10.0 ** rng.uniform(-14, 0)   # both sides of the Taylor threshold
        if n % 4 == 0:
            d[3:] = 0.0
        R, t = M.rotation.copy(), M.translation.copy()
        _compose_exp6(R, t, d, E)
        ref = M * pin.exp6(d)
        assert np.array_equal(R, ref.rotation) and np.array_equal(t, ref.translation), n


def test_forward_returns_a_pose_of_its_own_and_keeps_the_guess():
    kin = StewartKinematics()
    guess = kin.home_pose
    before = guess.copy()
    b = kin.home_lengths + np.array([1e-3, -2e-3, 0.5e-3, 0.0, 1e-3, -1e-3])
    M1 = kin.forward(b, guess=guess)
    assert guess == before
    M2 = kin.forward(kin.home_lengths)        # from M1 (the previous result)
    assert np.max(np.abs(kin.inverse(M1) - b)) <= 1e-12
    assert np.max(np.abs(kin.inverse(M2) - kin.home_lengths)) <= 1e-12
    assert not np.array_equal(M1.translation, M2.translation)
