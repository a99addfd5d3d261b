"""The interface map's kernels give pinocchio's (and NumPy's) numbers bit for bit."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from rths_ros.core.platform.interface import InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.interface_kernels import se3_act_inv_motion, se3_mul
from rths_ros.core.platform.stewart import StewartKinematics


def _random_se3(rng) -> pin.SE3:
    return pin.SE3(pin.exp3(rng.standard_normal(3)), rng.standard_normal(3))


def test_se3_product_and_motion_action_equal_pinocchio():
    rng = np.random.default_rng(7)
    r, t = np.zeros((3, 3)), np.zeros(3)
    lin, ang = np.zeros(3), np.zeros(3)
    for _ in range(100_000):
        a, b = _random_se3(rng), _random_se3(rng)
        c = a * b
        se3_mul(a.rotation, a.translation, b.rotation, b.translation, r, t)
        assert np.array_equal(r, c.rotation) and np.array_equal(t, c.translation)
        v = rng.standard_normal(6)
        m = a.actInv(pin.Motion(v))
        se3_act_inv_motion(a.rotation, a.translation, v, lin, ang)
        assert np.array_equal(lin, m.linear) and np.array_equal(ang, m.angular)


def _achieved_pinocchio(imap: InterfaceMap, kin: StewartKinematics, lengths, rates, guess):
    """The achieved state as pinocchio and NumPy compute it (the map's path for interfaces with rotations)."""
    pose = kin.forward(lengths, guess=guess)
    v = np.zeros(6)
    kin.twist_from_rates(pose, rates, v)
    d = imap._T_i0_w * pose * imap._T_tcp_i
    m = imap._T_tcp_i.actInv(pin.Motion(v))
    return pose, d.translation[imap._idx], (d.rotation @ m.linear)[imap._idx]


def _leg_commands_numpy(imap: InterfaceMap, kin: StewartKinematics, q, qd):
    x6 = np.zeros(6)
    xd = np.zeros(6)
    x6[imap._idx] = q
    xd[imap._idx] = qd
    pose = pin.SE3(imap._R_home, imap._t_home + imap._R_w_i0 @ x6[:3])
    v = np.zeros(6)
    v[:3] = imap._T_tcp_i.rotation @ xd[:3]
    jac = kin.jacobian(pose)
    return kin.inverse(pose), np.dot(jac, v), pose


def test_translation_kernels_of_the_map_equal_the_pinocchio_path():
    rng = np.random.default_rng(3)
    for dofs, mount, offset in ((("z",), "upside_down", 0.0), (("x",), "upright", 0.04), (("y", "z"), "upright", -0.02),
                                (("x", "y", "z"), "upside_down", 0.03)):
        kin = StewartKinematics()
        imap = InterfaceMap(InterfaceMapParams(dofs=dofs, mount=mount, specimen_offset_m=offset), kin)
        ref_kin = StewartKinematics()
        n = len(dofs)
        q_out, qd_out = np.zeros(n), np.zeros(n)
        b, bd = np.zeros(6), np.zeros(6)
        guess = ref_kin.home_pose
        for _ in range(300):
            q = rng.uniform(-0.02, 0.02, n)
            qd = rng.uniform(-0.1, 0.1, n)
            imap.leg_commands_into(q, qd, b, bd)
            b_ref, bd_ref, pose_ref = _leg_commands_numpy(imap, ref_kin, q, qd)
            assert np.array_equal(b, b_ref) and np.array_equal(bd, bd_ref)
            assert np.array_equal(imap.last_platform_pose.translation, pose_ref.translation)
            lengths = b + rng.normal(0.0, 1e-5, 6)
            rates = bd + rng.normal(0.0, 1e-3, 6)
            imap.achieved_into(lengths, rates, q_out, qd_out)
            guess, q_ref, qd_ref = _achieved_pinocchio(imap, ref_kin, lengths, rates, guess)
            assert np.array_equal(q_out, q_ref) and np.array_equal(qd_out, qd_ref)
            assert np.array_equal(imap.last_achieved_pose.rotation, guess.rotation)
            assert np.array_equal(imap.last_achieved_pose.translation, guess.translation)
