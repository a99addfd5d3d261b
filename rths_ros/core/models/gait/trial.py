"""One trial of the gait test's step loop in one compiled kernel.

:class:`rths_ros.app.vrths.VirtualRun` steps the node objects of the gait test one by one (the force processor, the
platform path, the VPP model and the simulated plant with the prosthetic foot).  :func:`run_trial_compiled` runs the
same trial in :func:`_run_trial_gait`, which calls the kernels those objects call in their methods (the forward
kinematics :func:`~rths_ros.core.platform.stewart._forward`, the interface kernels of
:mod:`rths_ros.core.models.gait.kernels`, the model's :func:`~rths_ros.core.models.gait.vpp_kernels._sync_kernel`
and :func:`~rths_ros.core.models.gait.kernels.plate_command`, the leg-speed policy and the limit kernels, and the
plant's delay line, legs, forward kinematics, foot and sensor kernels) in the same order, on the objects' own
state arrays, with the plant's sensor noise drawn from its own generator in the same order.  So the record is the
one of the objects stepped one by one, bit for bit (test/app/test_vrths_compiled_gait.py).

The measured legs' forward kinematics is solved once per step: the force processor and the platform path each
warm-start it from their own last pose, and both see the same leg lengths from the same start pose at the reset,
so their poses are the same numbers.

Covered: the gait objects as :mod:`rths_ros.app.factory` builds them (the Stewart twin with the prosthetic foot,
legs under the cascade or the ideal actuator), without fault injection.  Any trial that aborts (a non-finite wrench,
a load or leg limit, a fall of the walker, a forward kinematics that fails, a singular Jacobian) is left to the
objects: the caller steps them, which gives the abort its reason and message.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
from numba import njit

from rths_ros.core.models.gait import kernels as gk
from rths_ros.core.models.gait.rths import GaitForceProcessor, GaitModel, GaitNumerical, GaitPlatform
from rths_ros.core.models.gait.vpp_kernels import _sync_kernel
from rths_ros.core.models.gait.vpp_params import C_R, EV_FALL
from rths_ros.core.plant.legs import LegCascade
from rths_ros.core.plant.prosthetic_foot import _foot_wrench
from rths_ros.core.plant.sim_plant import SimPlant, _sensors, advance_legs, pose_and_z
from rths_ros.core.platform.commander import _first_violation
from rths_ros.core.platform.stewart import _forward, _joint_angles, _lengths_jacobian, _solve6

__all__ = ["run_trial_compiled", "supports"]

#: the (n, 3) record columns of :func:`_run_trial_gait`
ROW3_KEYS = ("q_cmd", "qd_cmd", "q_ach", "qd_ach", "force", "measured")
#: the (n, 6) record columns of :func:`_run_trial_gait`
VECTOR_KEYS = ("b_cmd", "ff_velocity", "b_meas", "bdot_meas", "current", "wrench")


@njit(cache=True)
def _run_trial_gait(n_steps, geom, fk, proc, ach, model, plat, plant, legs, foot, sensors, noise, rows, vecs, cols,
                    final):
    """Samples 0 .. ``n_steps`` of one trial (the loop of ``VirtualRun._trial_vector``).  ``vecs[2:6, 0]`` hold the
    plant's measurement of sample 0 and ``vecs[0, 0]`` the start lengths on entry; writes ``rows``
    (:data:`ROW3_KEYS`), ``vecs`` (:data:`VECTOR_KEYS`) and ``cols`` (contact, cop_x).  ``final`` receives the
    model's times, the delay-line position, the count of speed-limited steps, the plant's last Newton updates and
    the model's last events.  Returns -1, or the sample at which
    the trial aborts (the rows from there on are incomplete)."""
    a, p = geom
    fk_r, fk_t, f_l, f_u, f_j, f_res, f_a, f_delta, f_s, f_rn, f_target = fk
    fr_f, wk_f, check, fmax, mmax, frame_max, mass, gravity, com_f, cop_min, load = proc
    fr_p, wk_p, a_t, rates_w, v_ach, a_l, a_u, a_j, a_a = ach
    s, c, fp, big_p, w3, dt_sub, n_sub, wk, model_cmd, gp, q_to, q, qd, t, t_to, state_t, dt = model
    p_u, p_j, p_v, pose_r, pose_t, b, bd, prev, db, saturate, lim, vmax, vff, enforce, ang, p_l, lo, hi, amax = plat
    cmd_buf, ff_buf, bi, ideal, ideal_len, ideal_vel, tr, tt, pl_work, pl_target, offset, home_z, fr_pl, wk_pl, \
        a_t_pl, pl_l, pl_u, pl_j, pl_a, pl_rates, pl_v = plant
    legs_x, lm, ln, lc, ld, legs_cur = legs
    r_gf, p_g, v_g, w_g, sole, k_pts, c_pts, d_h, mu, v_s, f_grav, f_mass, f_com, r_fs, p_fs, aux = foot
    home_l, quant, vel_mode, lq, lq_prev, noise_std, bias = sensors
    qm = np.zeros(3)
    q_ach = np.zeros(3)
    qd_ach = np.zeros(3)
    ffv = np.zeros(6)
    tl = np.zeros(6)
    tv = np.zeros(6)
    b_cmd, ff_rec, b_meas, bdot_meas, current, wrench = vecs[0], vecs[1], vecs[2], vecs[3], vecs[4], vecs[5]
    n_sat = 0
    for k in range(n_steps + 1):
        w = wrench[k]
        for i in range(6):
            if not np.isfinite(w[i]):
                return k
        # ft_sensor: the load from the wrench and the measured legs
        for i in range(6):
            f_target[i] = b_meas[k, i]
        it, err = _forward(fk_r, fk_t, a, p, f_target, 1e-12, 20, f_l, f_u, f_j, f_res, f_a, f_delta, f_s, f_rn)
        if not err <= 1e-12:
            return k
        gk.command_from_pose(fk_r, fk_t, fr_f, wk_f, 0.0, qm)
        if check:
            for i in range(6):
                if not abs(w[i]) <= (fmax if i < 3 else mmax):
                    return k
        gk.sagittal_load(w, qm[2], fk_r, fk_t, fr_f, wk_f, 0.0, mass, gravity, com_f, cop_min, load)
        if check and not load[6] <= frame_max:
            return k
        # stewart_platform: the achieved interface state
        if not gk.achieved_state(fk_r, fk_t, bdot_meas[k], a, p, a_l, a_u, a_j, a_a, rates_w, v_ach, fr_p, wk_p,
                                 a_t, 0.0, 0.0, q_ach, qd_ach):
            return k
        for i in range(3):
            rows[0, k, i] = q[i]
            rows[1, k, i] = qd[i]
            rows[2, k, i] = q_ach[i]
            rows[3, k, i] = qd_ach[i]
        rows[4, k, 0], rows[4, k, 1], rows[4, k, 2] = load[2], load[3], load[4]
        rows[5, k, 0], rows[5, k, 1] = load[0], load[1]
        rows[5, k, 2] = load[4] + qm[0] * load[1] - qm[1] * load[0]
        cols[0, k] = 1.0 if abs(load[1]) >= cop_min else 0.0
        cols[1, k] = load[7]
        if k == n_steps:
            break
        # numerical_substructure: one step of the model with the load held, the command of the next step
        w3[0], w3[1], w3[2] = load[2], load[3], load[4]
        was_stance = c[C_R] != 0
        q0, q1, q2 = q[0], q[1], q[2]
        ev = _sync_kernel(s, c, fp, big_p, w3, dt_sub, n_sub, wk, model_cmd)
        state_t += n_sub * dt_sub
        t += dt
        if was_stance and c[C_R] == 0:
            t_to = t - dt
            q_to[0], q_to[1], q_to[2] = q0, q1, q2
        gk.plate_command(model_cmd, c[C_R] != 0, fp[1], t, t_to, q_to, gp, q, qd)
        final[6] = ev
        if ev & EV_FALL:
            return k
        # stewart_platform: the leg command
        gk.leg_commands_pose(q, qd, 0.0, 0.0, fr_p, wk_p, a, p, p_u, p_j, p_v, pose_r, pose_t, b, bd)
        if saturate and gk.saturate_legs(b, bd, prev, lim, vmax, dt, db):
            n_sat += 1
        for i in range(6):
            ffv[i] = bd[i] if vff else 0.0
        if enforce:
            _joint_angles(pose_r, pose_t, a, p, p_l, p_u, ang)
            if _first_violation(b, bd, bd, ang, lo, hi, vmax, amax) != 0:
                return k
        for i in range(6):
            prev[i] = b[i]
            b_cmd[k + 1, i] = b[i]
            ff_rec[k + 1, i] = ffv[i]
        # sim_plant: the legs over [t_k, t_k+1), the true pose, the foot's wrench and the measurement
        bi = advance_legs(cmd_buf, ff_buf, bi, b, ffv, ideal, ideal_len, ideal_vel, dt, legs_x, lm, ln, lc, ld,
                          legs_cur, tl, tv, current[k + 1])
        it, err, _ = pose_and_z(tl, tr, tt, a, p, 1e-12, 20, pl_work, pl_target, offset, home_z)
        if not err <= 1e-12:
            return k
        _lengths_jacobian(tr, tt, a, p, pl_l, pl_u, pl_j)
        for i in range(6):
            pl_rates[i] = tv[i]
        if not _solve6(pl_j, pl_rates, pl_a, pl_v):
            return k
        gk.foot_state_pose(tr, tt, pl_v, fr_pl, wk_pl, a_t_pl, r_gf, p_g, v_g, w_g)
        _foot_wrench(r_gf, p_g, v_g, w_g, sole, k_pts, c_pts, d_h, mu, v_s, f_grav, f_mass, f_com, r_fs, p_fs,
                     wrench[k + 1], aux)
        _sensors(tl, tv, home_l, quant, vel_mode, dt, lq, lq_prev, bdot_meas[k + 1], True, tr, 0.0, offset,
                 noise[k], noise_std, bias, wrench[k + 1])
        for i in range(6):
            b_meas[k + 1, i] = lq[i]
        final[5] = it
    final[0] = t
    final[1] = t_to
    final[2] = state_t
    final[3] = bi
    final[4] = n_sat
    return -1


def supports(numerical, platform, force, plant) -> bool:
    """The kernel covers these objects (see the module doc)."""
    return (type(numerical) is GaitModel and type(numerical.inner) is GaitNumerical
            and type(platform) is GaitPlatform and type(force) is GaitForceProcessor
            and type(plant) is SimPlant and plant._foot_mode and type(plant.legs) is LegCascade)


def _fk_arrays(kin):
    return (np.zeros(6), np.zeros((3, 6)), np.zeros((6, 6)), np.zeros(6), np.zeros((6, 7)), np.zeros(6),
            np.zeros((3, 3)), np.zeros((3, 3)), np.zeros(6))


def run_trial_compiled(numerical, platform, force, plant, noise_seed: int, n_steps: int, rec: dict, base: int) -> bool:
    """One trial (samples 0 .. ``n_steps``, rows ``base`` ..) of the objects' step loop in :func:`_run_trial_gait`.
    Returns False, with the record rows undefined, when the kernel does not cover the objects (:func:`supports`)
    or the trial aborts: then step the objects."""
    if not supports(numerical, platform, force, plant):
        return False
    out = plant.reset(noise_seed)
    numerical.reset()
    platform.reset()
    force.reset()
    noise = plant.draw_noise(n_steps)
    n = n_steps + 1
    rows = np.zeros((len(ROW3_KEYS), n, 3))
    vecs = np.zeros((len(VECTOR_KEYS), n, 6))
    cols = np.zeros((2, n))
    vecs[0, 0] = platform.start_lengths
    vecs[2, 0], vecs[3, 0], vecs[4, 0], vecs[5, 0] = out.lengths, out.velocities, out.currents, out.wrench
    kin = platform.kinematics
    geom = kin.geometry
    gf = force.gi
    fk_r, fk_t = np.array(gf._fk_last.rotation, order="C"), np.array(gf._fk_last.translation)
    fk = (fk_r, fk_t, *_fk_arrays(kin))
    ip = gf.params
    proc = (gf.frames, gf.work, bool(ip.enforce_limits), float(ip.fts_force_max_n), float(ip.fts_moment_max_n_m),
            float(ip.frame_load_max_n), float(ip.payload_mass_kg), gf._gravity_g, gf._com_f, float(ip.cop_min_force_n),
            np.zeros(len(gk.LOAD_FIELDS)))
    gi = platform.gi
    ach = (gi.frames, gi.work, gi._a_t, np.zeros(6), np.zeros(6), np.zeros(6), np.zeros((3, 6)), np.zeros((6, 6)),
           np.zeros((6, 7)))
    num = numerical.inner
    st = num.state
    wkr = num._work
    model = (st.s, st.c, st.fp, num.P, wkr.w, float(num.vp.dt_sub_s), int(num.vp.n_sub), wkr.wk, num.model_cmd,
             num._gp, num._q_to, num.q, num.qd, float(num.t), float(num._t_to), float(st.t), float(num.dt_s))
    chk = platform._checker
    pose_r, pose_t = np.zeros((3, 3)), np.zeros(3)
    b, bd = np.zeros(6), np.zeros(6)
    plat = (np.zeros((3, 6)), np.zeros((6, 6)), np.zeros(6), pose_r, pose_t, b, bd, platform._prev, platform._db,
            bool(platform._saturate), float(platform._vmax * platform.dt_s), float(platform._vmax),
            bool(platform.vff), bool(platform.enforce_limits), chk._ang, np.zeros(6), float(chk._len_min),
            float(chk._len_max), float(chk._ang_max))
    p = plant
    pg = p.gait
    plant_args = (p._cmd_buf, p._ff_buf, p._buf_i, p._ideal, p._ideal_len, p._ideal_vel, p.pose_r, p.pose_t,
                  p.fk_work, p._target, float(p._offset), float(p._home_z), pg.frames, pg.work, pg._a_t, np.zeros(6),
                  np.zeros((3, 6)), np.zeros((6, 6)), np.zeros((6, 7)), np.zeros(6), p._V)
    lg = p.legs
    legs = (lg._x, lg._m, lg._n, lg._c, lg._d, lg._current)
    ft = p.foot
    fpp = ft.params
    foot = (np.zeros((3, 3)), np.zeros(3), np.zeros(3), np.zeros(3), ft._sole, ft._k, ft._c,
            float(fpp.hardening_length_m), float(fpp.friction_coefficient), float(fpp.slip_velocity_m_per_s),
            pg._gravity_g.copy(), float(fpp.foot_mass_kg), ft._com, np.ascontiguousarray(pg._T_f_s.rotation),
            np.array(pg._T_f_s.translation), ft._aux)
    sensors = (p._home_lengths, float(p.params.quantisation_m), p._vel_mode(False), p._lq, p._lq_prev, p._noise_std,
               p._bias)
    final = np.zeros(7)
    abort = _run_trial_gait(n_steps, geom, fk, proc, ach, model, plat, plant_args, legs, foot, sensors, noise, rows,
                            vecs, cols, final)
    if abort >= 0:
        return False
    sl = slice(base, base + n)
    for key, col in zip(ROW3_KEYS, rows):
        rec[key][sl] = col
    for key, col in zip(VECTOR_KEYS, vecs):
        rec[key][sl] = col
    rec["contact"][sl] = cols[0] != 0.0
    rec["cop_x"][sl] = cols[1]
    # the objects' state at the end of the trial, as stepping them leaves it
    fk_pose = pin.SE3(fk_r, fk_t)
    gf._fk_last = fk_pose
    gi._fk_last = fk_pose
    gi.last_tcp_pose = pin.SE3(pose_r, pose_t)
    o = platform._out
    o.length[:] = b
    o.velocity[:] = bd
    o.feedforward_velocity[:] = bd if platform.vff else 0.0
    platform.saturated_steps = int(final[4])
    num.t, num._t_to = float(final[0]), float(final[1])
    num.events = int(final[6])
    st.t = float(final[2])
    force.force[:] = rows[4, -1]
    force.measured[:] = rows[5, -1]
    force.alpha = float(rows[2, -1, 2])
    force.contact = bool(cols[0, -1])
    force.cop_x = float(cols[1, -1])
    plant.set_pose_after_trial(int(final[3]), n_steps, int(final[5]))
    return True
