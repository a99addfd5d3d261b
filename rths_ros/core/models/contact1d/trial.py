"""One trial of the 1-D contact test's step loop in one compiled kernel.

:class:`rths_ros.app.vrths.VirtualRun` steps the node objects of the 1-D interface one by one (the force processor,
the interface map, the numerical part, the leg commander and the simulated plant).  :func:`run_trial_compiled` runs
the same trial in :func:`_run_trial_1d`, which calls the kernels those objects call in their methods
(:func:`~rths_ros.core.platform.force_processing.force_step`,
:func:`~rths_ros.core.platform.interface_kernels.achieved_translation`,
:func:`~rths_ros.core.models.contact1d.model.msd_step`,
:func:`~rths_ros.core.platform.interface_kernels.leg_commands_translation`, the commander's limit kernels, and the
plant's :func:`~rths_ros.core.plant.sim_plant.command_delay`, leg, forward-kinematics, specimen and sensor
kernels) in the same order, on the objects' own state arrays, with the plant's sensor noise drawn from its own
generator in the same order.  So the record is the one of the objects stepped one by one, bit for bit
(test/app/test_vrths_compiled_1d.py).

Covered: the DOP853 numerical part (``numerical.model = contact_1d``), an interface of one translation, the force
processor, the Stewart twin with the contact specimen (legs under the cascade or the ideal actuator), without the
passivity controller, the learners, the force blend, command shaping, the commander's added delay and fault
injection.  Anything else, and any
trial that aborts (a non-finite wrench, a leg limit, a forward kinematics that fails), is left to the objects: the
caller steps them, which gives the abort its reason and message.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from rths_ros.core.models.base import OneDofModel
from rths_ros.core.models.contact1d.model import NumericalMSD, msd_step
from rths_ros.core.plant.legs import LegCascade
from rths_ros.core.plant.sim_plant import SimPlant, _sensors, advance_legs, pose_and_z
from rths_ros.core.plant.specimen import _specimen_step
from rths_ros.core.platform.commander import _first_violation
from rths_ros.core.platform.force_processing import ForceProcessor, force_step
from rths_ros.core.platform.interface_kernels import ACHIEVED_OK, achieved_translation, leg_commands_translation
from rths_ros.core.platform.paths import InterfacePath, ScalarForcePath
from rths_ros.core.platform.stewart import _joint_angles

__all__ = ["run_trial_compiled", "supports"]

#: rows of the scalar record columns of :func:`_run_trial_1d`
SCALAR_KEYS = ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas", "f_d", "contact")
#: rows of the 6-vector record columns of :func:`_run_trial_1d`
VECTOR_KEYS = ("b_cmd", "ff_velocity", "b_meas", "bdot_meas", "current", "wrench")


@njit(cache=True)
def _run_trial_1d(n_steps, force, achieved, command, limits, model, plant, legs, specimen, sensors, noise, cols,
                  vecs, final):
    """Samples 0 .. ``n_steps`` of one trial (the loop of ``VirtualRun._trial`` without the controllers and
    learners).  ``vecs[2:6, 0]`` hold the plant's measurement of sample 0 on entry; writes ``cols``
    (:data:`SCALAR_KEYS`, n_steps + 1) and ``vecs`` (:data:`VECTOR_KEYS`, n_steps + 1, 6).  ``final`` receives
    the plant's delay-line position, interface-point displacement and spring force at the end.  Returns -1, or
    the sample at which the trial aborts (the rows from there on are incomplete)."""
    fst, facc, fbias, weight, tare_n, gating, c_on, c_off = force
    fk_r, fk_t, ka, kp, fk_work, target, rates_w, v_ach, frames, mid_r, mid_t, d_r, d_t, lin, ang6, idx = achieved
    r_home, t_home, r_w_i0, r_tcp_i, x3, xd3, v_cmd, t_cmd, u_work, j_work, length, velocity, ffv, vff = command
    enforce, lo, hi, vmax, amax, ang, jl, ju = limits
    rk, b0, inv_m, dt, y, kbuf, y_next = model
    cmd_buf, ff_buf, bi, ideal, ideal_len, ideal_vel, pose_r, pose_t, pa, pp, pfk_work, ptarget, offset, home_z, pz = \
        plant
    legs_x, lm, ln, lc, ld, legs_cur = legs
    spec_state, spec_args, spec_weight = specimen
    home_l, quant, vel_mode, lq, lq_prev, noise_std, bias = sensors
    q = np.zeros(1)
    qd = np.zeros(1)
    q_ach = np.zeros(1)
    qd_ach = np.zeros(1)
    tl = np.zeros(6)
    tv = np.zeros(6)
    b_cmd = vecs[0]
    ff_rec = vecs[1]
    b_meas = vecs[2]
    bdot_meas = vecs[3]
    current = vecs[4]
    wrench = vecs[5]
    spring = 0.0
    z = zd = 0.0
    for k in range(n_steps + 1):
        w = wrench[k]
        for i in range(6):
            if not np.isfinite(w[i]):
                return k
        f_gated, f_meas, contact = force_step(fst, facc, fbias, w, weight, tare_n, gating, c_on, c_off)
        code, _, _ = achieved_translation(b_meas[k], bdot_meas[k], fk_r, fk_t, ka, kp, 1e-12, 20, fk_work, target,
                                          rates_w, v_ach, frames, mid_r, mid_t, d_r, d_t, lin, ang6, idx, q_ach,
                                          qd_ach)
        if code != ACHIEVED_OK:
            return k
        f_d = 0.0
        f_int = f_gated + f_d
        cols[0, k] = z
        cols[1, k] = zd
        cols[2, k] = q_ach[0]
        cols[3, k] = qd_ach[0]
        cols[4, k] = f_int
        cols[5, k] = f_meas
        cols[6, k] = f_d
        cols[7, k] = 1.0 if contact else 0.0
        if k == n_steps:
            break
        msd_step(rk, b0, inv_m, f_int, k, dt, y, kbuf, y_next)
        z, zd = y[0], y[1]
        q[0] = z
        qd[0] = zd
        leg_commands_translation(q, qd, idx, r_home, t_home, r_w_i0, r_tcp_i, ka, kp, x3, xd3, v_cmd, t_cmd, u_work,
                                 j_work, length, velocity)
        for i in range(6):
            ffv[i] = velocity[i] if vff else 0.0
        if enforce:
            _joint_angles(r_home, t_cmd, ka, kp, jl, ju, ang)
            if _first_violation(length, velocity, ffv, ang, lo, hi, vmax, amax) != 0:
                return k
        for i in range(6):
            b_cmd[k + 1, i] = length[i]
            ff_rec[k + 1, i] = ffv[i]
        # the plant over [t_k, t_k+1): SimPlant.step
        bi = advance_legs(cmd_buf, ff_buf, bi, length, ffv, ideal, ideal_len, ideal_vel, dt, legs_x, lm, ln, lc, ld,
                          legs_cur, tl, tv, current[k + 1])
        it, err, z_new = pose_and_z(tl, pose_r, pose_t, pa, pp, 1e-12, 20, pfk_work, ptarget, offset, home_z)
        if not err <= 1e-12:
            return k
        z0 = pz
        pz = z_new
        spring = _specimen_step(spec_state, z0, pz, *spec_args)
        fz = -(spec_weight + spring)
        _sensors(tl, tv, home_l, quant, vel_mode, dt, lq, lq_prev, bdot_meas[k + 1], False, pose_r, fz, offset,
                 noise[k], noise_std, bias, wrench[k + 1])
        for i in range(6):
            b_meas[k + 1, i] = lq[i]
    final[0] = bi
    final[1] = pz
    final[2] = spring
    return -1


def supports(numerical, platform, force, plant) -> bool:
    """The kernel covers these objects (see the module doc)."""
    return (type(numerical) is OneDofModel and type(numerical.inner) is NumericalMSD
            and type(platform) is InterfacePath and platform.commander.shaper is None
            and platform.commander.added_delay_steps == 0
            and not platform.map._has_rot and platform.map.n == 1
            and type(force) is ScalarForcePath and type(force.processor) is ForceProcessor
            and type(plant) is SimPlant and not plant._foot_mode and type(plant.legs) is LegCascade)


def run_trial_compiled(numerical, platform, force, plant, noise_seed: int, n_steps: int, rec: dict, base: int) -> bool:
    """One trial (samples 0 .. ``n_steps``, rows ``base`` ..) of the objects' step loop in :func:`_run_trial_1d`.
    Returns False, with the record rows undefined, when the kernel does not cover the objects (:func:`supports`)
    or the trial aborts: then step the objects."""
    if not supports(numerical, platform, force, plant):
        return False
    out = plant.reset(noise_seed)
    numerical.reset()
    platform.commander.reset()
    force.reset()
    noise = plant.draw_noise(n_steps)
    n = n_steps + 1
    cols = np.zeros((len(SCALAR_KEYS), n))
    vecs = np.zeros((len(VECTOR_KEYS), n, 6))
    imap, cmdr = platform.map, platform.commander
    vecs[0, 0] = imap.kinematics.home_lengths
    vecs[2, 0], vecs[3, 0], vecs[4, 0], vecs[5, 0] = out.lengths, out.velocities, out.currents, out.wrench
    fp = force.processor
    force_args = (fp.state, fp._acc, fp._bias, *fp.constants)
    fk_r, fk_t = imap._fk_r, imap._fk_t
    fk_r[:] = imap._fk_last.rotation
    fk_t[:] = imap._fk_last.translation
    target, rates, mid_r, mid_t, d_r, d_t, lin, ang = imap._ach
    achieved = (fk_r, fk_t, *imap.geometry, imap.fk_work, target, rates, imap._V, imap.frames, mid_r, mid_t, d_r, d_t,
                lin, ang, imap._idx)
    x3, xd3, t, u = imap._cmd_work
    o = cmdr.last
    command = (imap._R_home, imap._t_home, imap._R_w_i0, imap._r_tcp_i, x3, xd3, imap._V, t, u, imap._J, o.length,
               o.velocity, o.feedforward_velocity, bool(cmdr.params.vff))
    kin = cmdr.kinematics
    limits = (bool(cmdr.params.enforce_limits), float(cmdr._len_min), float(cmdr._len_max), float(cmdr._vel_max),
              float(cmdr._ang_max), cmdr._ang, kin._L, kin._U)
    msd = numerical.inner
    model = (msd.rk_args, msd._b0, msd._inv_m, msd.dt, msd._y, msd._rk._k, msd._next)
    p = plant
    plant_args = (p._cmd_buf, p._ff_buf, p._buf_i, p._ideal, p._ideal_len, p._ideal_vel, p.pose_r, p.pose_t,
                  *p.kinematics.geometry, p.fk_work, p._target, float(p._offset), float(p._home_z), float(p._z))
    lg = p.legs
    legs = (lg._x, lg._m, lg._n, lg._c, lg._d, lg._current)
    sp = p.specimen
    specimen = (sp.state, sp.kernel_args, float(sp._weight))
    sensors = (p._home_lengths, float(p.params.quantisation_m), p._vel_mode(False), p._lq, p._lq_prev, p._noise_std,
               p._bias)
    final = np.zeros(3)
    abort = _run_trial_1d(n_steps, force_args, achieved, command, limits, model, plant_args, legs, specimen, sensors,
                          noise, cols, vecs, final)
    if abort >= 0:
        return False
    rows = slice(base, base + n)
    for key, col in zip(SCALAR_KEYS[:-1], cols[:-1]):
        rec[key][rows] = col
    rec["contact"][rows] = cols[-1] != 0.0
    for key, col in zip(VECTOR_KEYS, vecs):
        rec[key][rows] = col
    # the objects' scalars at the end of the trial, as stepping them leaves them
    imap.reset_warm_start(fk_r, fk_t)
    numerical.inner.k = n_steps
    numerical._q[0], numerical._qd[0] = msd._y
    plant.set_state_after_trial(int(final[0]), float(final[1]), float(final[2]), n_steps)
    return True
