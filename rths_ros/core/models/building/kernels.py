"""Numba kernels of the vRTHS building benchmark: the per-sample maps of the numerical substructure and of the
servo-hydraulic plant (used by the per-step objects of :mod:`rths_ros.core.models.building.structure`), the reference
structure's response and the fused run loop of :func:`rths_ros.core.models.building.benchmark.run_benchmark`."""
from __future__ import annotations

import numba
import numpy as np

from rths_ros.core.numerics.newmark import newmark_sample


@numba.njit(cache=True)
def _advance2(ad, bd, x, u0, u1):
    """x <- Ad x + Bd [u0, u1] in place (Bd with two columns)."""
    n = x.shape[0]
    y = np.empty(n)
    for i in range(n):
        s = bd[i, 0] * u0 + bd[i, 1] * u1
        for j in range(n):
            s += ad[i, j] * x[j]
        y[i] = s
    x[:] = y


@numba.njit(cache=True)
def _quantise(value, step, limit):
    """A converter of the controller model: round to the nearest multiple of step, then saturate at ±limit (as
    :func:`rths_ros.core.models.building.tracking_controller.convert`)."""
    q = np.rint(value / step) * step
    if q > limit:
        return limit
    if q < -limit:
        return -limit
    return q


@numba.njit(cache=True)
def _control_step(y1, xm, y_prev, r_prev, e_prev, u_prev, l0, l1, ld, fb, p0, p1, pd, quant, qstep, qlim):
    """The benchmark's tracking controller over one sample (phase lead on the desired displacement, then PI on
    the error), with the converters' quantisation when ``quant``: (u, and the new y_prev, r_prev, e_prev,
    u_prev)."""
    if quant:
        yq = _quantise(y1, qstep, qlim)
        r = l0 * yq + l1 * y_prev - ld * r_prev
        e = _quantise(_quantise(r, qstep, qlim) - fb * xm, qstep, qlim)
        u = p0 * e + p1 * e_prev - pd * u_prev
        return _quantise(u, qstep, qlim), yq, r, e, u
    r = l0 * y1 + l1 * y_prev - ld * r_prev
    e = r - fb * xm
    u = p0 * e + p1 * e_prev - pd * u_prev
    return u, y1, r, e, u


@numba.njit(cache=True)
def _plant_step(ad, bd, z, u):
    """One plant sample with the command u held (no converter): z <- Ad z + Bd u; returns (|F|, |x|, |x'|)."""
    n = z.shape[0]
    y = np.empty(n)
    for i in range(n):
        s = bd[i, 0] * u
        for j in range(n):
            s += ad[i, j] * z[j]
        y[i] = s
    z[:] = y
    return abs(z[2]), abs(z[3]), abs(z[4])


@numba.njit(cache=True)
def _plant_measure(z, nx, nf, cfg):
    """Sensors at the current state, no converter: (x + nx, f + nf) with the specimen force ``f`` of ``cfg`` =
    [k_e, c_e, total]: total != 0 -> F = m_e x'' + c_e x' + k_e x (state z[2]), else k_e x + c_e x'."""
    x = z[3] + nx
    if cfg[2] != 0.0:
        f = z[2] + nf
    else:
        f = cfg[0] * z[3] + cfg[1] * z[4] + nf
    return x, f


@numba.njit(cache=True)
def _delay(buf, pos, value):
    """A delay line of ``buf.shape[0]`` samples (none when empty): returns (the value of that many samples ago,
    the next position)."""
    d = buf.shape[0]
    if d == 0:
        return value, pos
    out = buf[pos]
    buf[pos] = value
    return out, (pos + 1) % d


@numba.njit(cache=True)
def _response(ad, bd, ag):
    """Displacements q (N x 3) of a structure x+ = Ad x + Bd a_g from rest."""
    n = ag.shape[0]
    x = np.zeros(ad.shape[0])
    out = np.zeros((n, 3))
    y = np.empty(ad.shape[0])
    for k in range(n):
        out[k, 0], out[k, 1], out[k, 2] = x[0], x[1], x[2]
        for i in range(ad.shape[0]):
            s = bd[i, 0] * ag[k]
            for j in range(ad.shape[0]):
                s += ad[i, j] * x[j]
            y[i] = s
        x[:] = y
    return out


@numba.njit(cache=True)
def _newmark_advance(mats, load, ncoef, st, scratch, x, a_g, f_meas, first):
    """One Newmark sample of the numerical substructure (:func:`rths_ros.core.numerics.newmark.newmark_sample`):
    load ``f = load[0] a_g + load[1] f_meas``; ``mats`` = [M^-1, S^-1, C, K] (4, n, n); ``ncoef`` = [dt, beta,
    gamma]; state ``st`` (3, n), ``scratch`` (5, n); the command ``[q; q']`` goes to ``x`` (2n,)."""
    n = st.shape[1]
    f = scratch[4]
    for i in range(n):
        f[i] = load[0, i] * a_g + load[1, i] * f_meas
    newmark_sample(st, first, mats[0], mats[1], mats[2], mats[3], ncoef[0], ncoef[1], ncoef[2], f, x[:n], x[n:],
                   scratch[:4])


@numba.njit(cache=True)
def _run_fused(ad_n, bd_n, scheme, mats, load, ncoef, ad_p, bd_p, cfg, fdelay, ag, noise, coef, conv, lim):
    """The whole run loop of :func:`rths_ros.core.models.building.benchmark.run_benchmark` for a controller of the
    linear form of ``TrackingController.fast_coefficients`` (same order of operations as the per-step objects).
    ``scheme`` 0 = ZOH map ``ad_n, bd_n``, else Newmark with ``mats, load, ncoef`` (see
    :func:`_newmark_advance`).  ``cfg`` as :func:`_plant_measure`; ``fdelay`` the delay line of the fed-back force
    (its length = the delay in samples, zeros).  ``conv`` = [on, step, limit] of the controller's converters
    (``TrackingController.converter``).  ``lim`` = [force capacity, abort_on_stroke_velocity, stroke, velocity].
    Returns the columns, the abort row (-1 = none) and the maxima (|F|, |x|, |x'|)."""
    n = ag.shape[0]
    y = np.zeros((n, 3))
    cols = np.zeros((7, n))   # u, u_applied, x_m, f_m, x, xdot, f_act
    xs = np.zeros(ad_n.shape[0])
    st = np.zeros((3, load.shape[1]))
    scratch = np.zeros((5, load.shape[1]))
    z = np.zeros(ad_p.shape[0])
    l0, l1, ld, fb, p0, p1, pd = coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6]
    quant, qstep, qlim = conv[0] != 0.0, conv[1], conv[2]
    y_prev = r_prev = e_prev = u_prev = 0.0
    xm, fs = _plant_measure(z, noise[0, 0], noise[0, 1], cfg)
    fm, dpos = _delay(fdelay, 0, fs)
    fmax = smax = vmax = 0.0
    abort = -1
    for k in range(n):
        y1 = xs[0]
        y[k, 0], y[k, 1], y[k, 2] = y1, xs[1], xs[2]
        cols[2, k], cols[3, k] = xm, fm
        cols[4, k], cols[5, k], cols[6, k] = z[3], z[4], z[2]
        u, y_prev, r_prev, e_prev, u_prev = _control_step(y1, xm, y_prev, r_prev, e_prev, u_prev, l0, l1, ld, fb,
                                                          p0, p1, pd, quant, qstep, qlim)
        cols[0, k] = u
        if scheme == 0:
            _advance2(ad_n, bd_n, xs, ag[k], fm)
        else:
            _newmark_advance(mats, load, ncoef, st, scratch, xs, ag[k], fm, k == 0)
        if not np.isfinite(u):
            abort = k
            break
        f, x, xd = _plant_step(ad_p, bd_p, z, u)
        cols[1, k] = u
        fmax = max(fmax, f)
        smax = max(smax, x)
        vmax = max(vmax, xd)
        if not f <= lim[0]:
            abort = k
            break
        if lim[1] != 0.0 and (x > lim[2] or xd > lim[3]):
            abort = k
            break
        xm, fs = _plant_measure(z, noise[k + 1, 0], noise[k + 1, 1], cfg)
        fm, dpos = _delay(fdelay, dpos, fs)
    return y, cols, abort, fmax, smax, vmax


@numba.njit(cache=True)
def _run_trial(ad_n, bd_n, scheme, mats, load, ncoef, ad_p, bd_p, cfg, fdelay, ag, noise, coef, conv, lim, n_steps,
               y, yd, cols):
    """One trial of the node graph's building scenario (the order of :class:`rths_ros.app.vrths.VirtualRun`'s
    per-step objects), samples 0 .. ``n_steps``, written into the rows of ``y``, ``yd`` (q, q') and ``cols`` =
    [x_m, f_m, u, u_da, x, xdot, f_act, f_true] (8, n_steps + 1; ``u`` is left as it is in the last row).  The
    arguments are those of :func:`_run_fused`; ``ag`` holds the ground acceleration of the first ``n_steps``
    samples (0 beyond the record).  Returns the sample of the first abort (the plant refused the command), or -1;
    the rows from an aborted sample on are incomplete (the caller repeats the trial with the objects)."""
    xs = np.zeros(ad_n.shape[0])
    st = np.zeros((3, load.shape[1]))
    scratch = np.zeros((5, load.shape[1]))
    z = np.zeros(ad_p.shape[0])
    l0, l1, ld, fb, p0, p1, pd = coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6]
    quant, qstep, qlim = conv[0] != 0.0, conv[1], conv[2]
    ny = y.shape[1]
    y_prev = r_prev = e_prev = u_prev = 0.0
    u_da = 0.0
    xm, fs = _plant_measure(z, noise[0, 0], noise[0, 1], cfg)
    fm, dpos = _delay(fdelay, 0, fs)
    for k in range(n_steps + 1):
        for i in range(ny):
            y[k, i] = xs[i]
            yd[k, i] = xs[ny + i]
        cols[0, k], cols[1, k] = xm, fm
        cols[3, k], cols[4, k], cols[5, k], cols[6, k] = u_da, z[3], z[4], z[2]
        cols[7, k] = z[2] if cfg[2] != 0.0 else cfg[0] * z[3] + cfg[1] * z[4]
        if k == n_steps:
            break
        y1 = xs[0]
        u, y_prev, r_prev, e_prev, u_prev = _control_step(y1, xm, y_prev, r_prev, e_prev, u_prev, l0, l1, ld, fb,
                                                          p0, p1, pd, quant, qstep, qlim)
        cols[2, k] = u
        if scheme == 0:
            _advance2(ad_n, bd_n, xs, ag[k], fm)
        else:
            _newmark_advance(mats, load, ncoef, st, scratch, xs, ag[k], fm, k == 0)
        if not np.isfinite(u):
            return k
        f, x, xd = _plant_step(ad_p, bd_p, z, u)
        u_da = u
        if not f <= lim[0]:
            return k
        if lim[1] != 0.0 and (x > lim[2] or xd > lim[3]):
            return k
        xm, fs = _plant_measure(z, noise[k + 1, 0], noise[k + 1, 1], cfg)
        fm, dpos = _delay(fdelay, dpos, fs)
    return -1
