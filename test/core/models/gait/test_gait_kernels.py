"""The gait kernels (rths_ros.core.models.gait.kernels) give the numbers of the pinocchio and NumPy code they replace
to rounding: each check runs the array code of the interface, the platform and the model beside the kernel on many
random cases.  Not bit for bit across machines: NumPy hands small products to its BLAS, whose kernels sum in another
order on a CPU with AVX-512 than the kernels' loops do (seen on an AMD EPYC: differences of up to tens of units in the last
place); a wrong term, sign or frame differs by far more than the tolerance.  The scalar kernels (leg speed policy,
plate command, a point moved by a pose) use no BLAS and stay equal bit for bit."""
from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from rths_ros.core.models.gait import kernels as gk
from rths_ros.core.models.gait.interface import GaitInterface, GaitInterfaceParams, _cross, leg_unit_vectors, rot_z
from rths_ros.core.platform.stewart import StewartKinematics

N = 20_000
RTOL, ATOL = 1e-12, 1e-12      # rounding of numbers of order 1 to 1e3; a wrong term is off by far more


def _same(got, ref) -> bool:
    got, ref = np.asarray(got), np.asarray(ref)
    return got.shape == ref.shape and bool(np.allclose(got, ref, rtol=RTOL, atol=ATOL, equal_nan=True))


def _command_from_tcp(gi, pose, x_ref):
    d = gi._T_g_w * pose * gi._T_tcp_d
    R = d.rotation
    theta = math.atan2(R[1, 0], R[0, 0])
    t = d.translation
    return np.array([t[0] + x_ref, t[1], math.pi / 2 - theta])


def _tcp_body_twist(gi, q, qdot, xd_ref):
    out = np.empty(6)
    alpha = float(q[2])
    R_gd = rot_z(math.pi / 2 - alpha)
    w_g = np.array([0.0, 0.0, -float(qdot[2])])
    v_ifp_g = np.array([float(qdot[0]) - xd_ref, float(qdot[1]), 0.0])
    r_g = R_gd @ gi._T_d_tcp.translation
    v_tcp_g = v_ifp_g + _cross(w_g, r_g)
    R_g_tcp = R_gd @ gi._T_d_tcp.rotation
    out[:3] = R_g_tcp.T @ v_tcp_g
    out[3:] = R_g_tcp.T @ w_g
    return out


def _leg_commands(gi, q, qdot, x_ref, xd_ref):
    x, y, alpha = float(q[0]), float(q[1]), float(q[2])
    pose = gi._T_w_g * pin.SE3(rot_z(math.pi / 2 - alpha), np.array([x - x_ref, y, 0.0])) * gi._T_d_tcp
    b = np.empty(6)
    J = np.zeros((6, 6))
    gi.kinematics.jacobian_into(pose, J, lengths_out=b)
    return b, J @ _tcp_body_twist(gi, q, qdot, xd_ref), pose


def _achieved_rest(gi, pose, rates, x_ref, xd_ref):
    V = gi.kinematics.twist_from_rates(pose, rates, np.empty(6))
    q = _command_from_tcp(gi, pose, x_ref)
    R_g_tcp = (gi._T_g_w * pose).rotation
    w_g = R_g_tcp @ V[3:]
    v_tcp_g = R_g_tcp @ V[:3]
    r_g = R_g_tcp @ gi._a_t
    v_ifp = v_tcp_g + _cross(w_g, r_g)
    return q, np.array([v_ifp[0] + xd_ref, v_ifp[1], -w_g[2]])


def _foot_state(gi, pose, V):
    T = gi._T_g_w * pose * gi._T_tcp_d * pin.SE3(gi._R_df, np.zeros(3))
    R_g_tcp = (gi._T_g_w * pose).rotation
    return T.rotation, T.translation, R_g_tcp @ (V[:3] + _cross(V[3:], gi._a_t)), R_g_tcp @ V[3:]


def _sagittal(gi, w, alpha, pose, x_ref):
    p = gi.params
    T_gs = gi._T_g_w * pose * gi._T_tcp_s
    f_g = T_gs.rotation @ w[:3]
    m_g = T_gs.rotation @ w[3:]
    T_gd = gi._T_g_w * pose * gi._T_tcp_d
    T_gf = T_gd * pin.SE3(gi._R_df, np.zeros(3))
    if p.payload_mass_kg > 0.0:
        fw = p.payload_mass_kg * gi._gravity_g
        r_com = T_gf.act(gi._com_f) - T_gs.translation
        f_g = f_g - fw
        m_g = m_g - _cross(r_com, fw)
    a = T_gd.translation
    m_a = m_g + _cross(T_gs.translation - a, f_g)
    e, en = leg_unit_vectors(alpha)
    fx, fy = float(f_g[0]), float(f_g[1])
    if abs(fy) >= p.cop_min_force_n:
        m_o = m_a + _cross(a, f_g)
        cop_x, cop_z = float(m_o[2] / fy) + x_ref, float(-m_o[0] / fy)
    else:
        cop_x = cop_z = math.nan
    return np.array([fx, fy, fx * e[0] + fy * e[1], fx * en[0] + fy * en[1], float(m_a[2]), float(f_g[2]), fy,
                     cop_x, cop_z])


def _random_pose(rng, kin):
    home = kin.home_pose
    return pin.SE3(home.rotation @ pin.exp3(rng.normal(0.0, 0.2, 3)), home.translation + rng.normal(0.0, 0.05, 3))


def test_interface_kernels_equal_the_pinocchio_and_numpy_code():
    rng = np.random.default_rng(11)
    kin = StewartKinematics()
    for params in (GaitInterfaceParams(), GaitInterfaceParams(side="left", payload_mass_kg=0.0,
                                                              sensor_offset_m=(0.01, -0.02, 0.03))):
        gi = GaitInterface(params, kin)
        for _ in range(N // 2):
            x_ref = float(rng.choice([0.0, rng.normal()]))
            xd_ref = float(rng.choice([0.0, rng.normal()]))
            q = np.array([rng.normal(0.0, 0.1), rng.uniform(0.1, 0.3), rng.uniform(1.0, 2.0)])
            qd = rng.normal(0.0, 1.0, 3)
            assert _same(gi.tcp_body_twist(q, qd, xd_ref_m_per_s=xd_ref), _tcp_body_twist(gi, q, qd, xd_ref))
            b, bd = gi.leg_commands(q, qd, x_ref, check=False, xd_ref_m_per_s=xd_ref)
            b_ref, bd_ref, pose_ref = _leg_commands(gi, q, qd, x_ref, xd_ref)
            assert _same(b, b_ref) and _same(bd, bd_ref)
            assert _same(gi.last_tcp_pose.rotation, pose_ref.rotation)
            assert _same(gi.last_tcp_pose.translation, pose_ref.translation)
            pose = _random_pose(rng, kin)
            assert _same(gi.command_from_tcp(pose, x_ref), _command_from_tcp(gi, pose, x_ref))
            rates = rng.normal(0.0, 0.2, 6)
            q_ref, qd_ref = _achieved_rest(gi, pose, rates, x_ref, xd_ref)
            L, U, J, A, rates_w = gi._fk_work
            q_k, qd_k = np.empty(3), np.empty(3)
            assert gk.achieved_state(pose.rotation, pose.translation, rates, *kin.geometry, L, U, J, A, rates_w,
                                     gi._V, gi.frames, gi.work, gi._a_t, x_ref, xd_ref, q_k, qd_k)
            assert _same(q_k, q_ref) and _same(qd_k, qd_ref)
            V = rng.normal(0.0, 0.5, 6)
            fs = gi.foot_state_from_tcp(pose, V)
            for got, ref in zip((fs.R_gf, fs.p, fs.v, fs.w), _foot_state(gi, pose, V)):
                assert _same(got, ref)
            w = rng.normal(0.0, 200.0, 6) * rng.choice([1.0, 1e-3])
            alpha = float(rng.uniform(1.0, 2.0))
            sw = gi.sagittal_wrench(w, alpha, pose=pose, x_ref_m=x_ref, check=False)
            got = np.array([sw.f_x, sw.f_y, sw.f_parallel, sw.f_perp, sw.m_z, sw.f_lateral, sw.normal_force,
                            sw.cop_x, sw.cop_z])
            assert _same(got, _sagittal(gi, w, alpha, pose, x_ref))


def test_the_achieved_state_of_measured_legs_equals_the_array_code():
    rng = np.random.default_rng(5)
    kin, ref_kin = StewartKinematics(), StewartKinematics()
    gi = GaitInterface(GaitInterfaceParams(), kin)
    guess = ref_kin.home_pose
    for _ in range(2000):
        q = np.array([rng.normal(0.0, 0.05), rng.uniform(0.12, 0.2), rng.uniform(1.2, 1.9)])
        b, bd = gi.leg_commands(q, rng.normal(0.0, 0.5, 3), check=False)
        lengths = b + rng.normal(0.0, 1e-5, 6)
        q_a, qd_a = gi.achieved(lengths, bd)
        guess = ref_kin.forward(lengths, guess=guess)
        q_ref, qd_ref = _achieved_rest(gi, guess, bd, 0.0, 0.0)
        assert _same(q_a, q_ref) and _same(qd_a, qd_ref)


def _saturate_numpy(b, bd, prev, lim, vmax, dt):
    db = b - prev
    sat = np.abs(db) > lim
    if sat.any() or np.any(np.abs(bd) > vmax):
        np.clip(db, -lim, lim, out=db)
        b = prev + db
        bd = np.clip(bd, -vmax, vmax)
        bd[sat] = db[sat] / dt
        return b, bd, True
    return b, bd, False


def test_the_leg_speed_policy_equals_the_array_code():
    rng = np.random.default_rng(9)
    db = np.zeros(6)
    for _ in range(N):
        prev = rng.uniform(0.6, 0.8, 6)
        b = prev + rng.normal(0.0, 3e-4, 6)
        bd = rng.normal(0.0, 0.25, 6)
        if rng.random() < 0.05:
            b[rng.integers(6)] = math.nan
        b_ref, bd_ref, hit_ref = _saturate_numpy(b.copy(), bd.copy(), prev, 2.5e-4, 0.25, 1e-3)
        hit = gk.saturate_legs(b, bd, prev, 2.5e-4, 0.25, 1e-3, db)
        assert hit == hit_ref
        assert np.array_equal(b, b_ref, equal_nan=True) and np.array_equal(bd, bd_ref, equal_nan=True)


def _plate_command_python(c, right_stance, fp_r, t, t_to, q0, h0f, a0, T, lift):
    if right_stance:
        return np.array([c[0] - fp_r, c[1], c[2]]), np.array([c[3], c[4], c[5]])
    tx, ty, ta = -h0f * math.cos(a0), c[1], a0
    tyd = c[4]
    tau = (t - t_to) / T if T > 0.0 else 1.0
    if tau >= 1.0:
        return np.array([tx, ty, ta]), np.array([0.0, tyd, 0.0])
    s = tau * tau * tau * (10.0 - 15.0 * tau + 6.0 * tau * tau)
    sd = 30.0 * tau * tau * (1.0 - tau) * (1.0 - tau) / T
    b = 64.0 * (tau * (1.0 - tau)) ** 3
    bd = 192.0 * (tau * (1.0 - tau)) ** 2 * (1.0 - 2.0 * tau) / T
    return (np.array([q0[0] + s * (tx - q0[0]), q0[1] + s * (ty - q0[1]) + lift * b, q0[2] + s * (ta - q0[2])]),
            np.array([sd * (tx - q0[0]), sd * (ty - q0[1]) + s * tyd + lift * bd, sd * (ta - q0[2])]))


def test_the_plate_command_equals_the_python_code():
    rng = np.random.default_rng(4)
    q, qd = np.zeros(3), np.zeros(3)
    for _ in range(N):
        c = rng.normal(0.0, 1.0, 6)
        stance = bool(rng.random() < 0.3)
        fp_r = float(rng.normal())
        T = float(rng.choice([0.0, 0.08, rng.uniform(0.01, 0.2)]))
        t_to = float(rng.choice([-math.inf, rng.uniform(0.0, 1.0)]))
        t = (t_to if math.isfinite(t_to) else 0.0) + float(rng.uniform(0.0, 0.25))
        q0 = rng.normal(0.0, 1.0, 3)
        h0f, a0, lift = 0.16, math.radians(75.0), float(rng.uniform(0.0, 0.05))
        gk.plate_command(c, stance, fp_r, t, t_to, q0, np.array([h0f, a0, T, lift, 2.0, 3.0]), q, qd)
        q_ref, qd_ref = _plate_command_python(c, stance, fp_r, t, t_to, q0, h0f, a0, T, lift)
        assert np.array_equal(q, q_ref) and np.array_equal(qd, qd_ref)


def test_pinocchio_point_action():
    rng = np.random.default_rng(1)
    out = np.zeros(3)
    for _ in range(N):
        T = pin.SE3(pin.exp3(rng.standard_normal(3)), rng.standard_normal(3))
        p = rng.standard_normal(3)
        gk.se3_act(T.rotation, T.translation, p, out)
        assert np.array_equal(out, T.act(p))
