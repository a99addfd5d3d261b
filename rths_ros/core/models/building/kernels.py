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
def _quantise(value, per_volt, lsb_v, range_v):
    """Value through a converter: to volts, saturate at ±range, round to the nearest level, back."""
    v = value / per_volt
    if v > range_v:
        v = range_v
    elif v < -range_v:
        v = -range_v
    return np.rint(v / lsb_v) * lsb_v * per_volt


@numba.njit(cache=True)
def _plant_step(ad, bd, z, u, cfg):
    """One plant sample: D/A on u, z <- Ad z + Bd u.  ``cfg`` = [quantise, m/V, N/V, lsb V, range V, k_e,
    c_e, actuator_force]; returns (u applied, |F|, |x|, |x'|)."""
    if cfg[0] != 0.0:
        u = _quantise(u, cfg[1], cfg[3], cfg[4])
    n = z.shape[0]
    y = np.empty(n)
    for i in range(n):
        s = bd[i, 0] * u
        for j in range(n):
            s += ad[i, j] * z[j]
        y[i] = s
    z[:] = y
    return u, abs(z[2]), abs(z[3]), abs(z[4])


@numba.njit(cache=True)
def _plant_measure(z, nx, nf, cfg):
    """Sensors at the current state: (x_m, f_m) with noise (nx m, nf N) and A/D (``cfg`` as above)."""
    x = z[3] + nx
    if cfg[7] != 0.0:
        f = z[2] + nf
    else:
        f = cfg[5] * z[3] + cfg[6] * z[4] + nf
    if cfg[0] != 0.0:
        x = _quantise(x, cfg[1], cfg[3], cfg[4])
        f = _quantise(f, cfg[2], cfg[3], cfg[4])
    return x, f


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
def _run_fused(ad_n, bd_n, scheme, mats, load, ncoef, ad_p, bd_p, cfg, ag, noise, coef, lim):
    """The whole run loop of :func:`rths_ros.core.models.building.benchmark.run_benchmark` for a controller of the
    linear form of ``TrackingController.fast_coefficients`` (same order of operations as the per-step objects).
    ``scheme`` 0 = ZOH map ``ad_n, bd_n``, else Newmark with ``mats, load, ncoef`` (see
    :func:`_newmark_advance`).  ``lim`` = [force capacity, abort_on_stroke_velocity, stroke, velocity].
    Returns the columns, the abort row (-1 = none) and the maxima (|F|, |x|, |x'|)."""
    n = ag.shape[0]
    y = np.zeros((n, 3))
    cols = np.zeros((7, n))   # u, u_applied, x_m, f_m, x, xdot, f_act
    xs = np.zeros(ad_n.shape[0])
    st = np.zeros((3, load.shape[1]))
    scratch = np.zeros((5, load.shape[1]))
    z = np.zeros(ad_p.shape[0])
    l0, l1, ld, fb, p0, p1, pd = coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6]
    y_prev = r_prev = e_prev = u_prev = 0.0
    xm, fm = _plant_measure(z, noise[0, 0], noise[0, 1], cfg)
    fmax = smax = vmax = 0.0
    abort = -1
    for k in range(n):
        y1 = xs[0]
        y[k, 0], y[k, 1], y[k, 2] = y1, xs[1], xs[2]
        cols[2, k], cols[3, k] = xm, fm
        cols[4, k], cols[5, k], cols[6, k] = z[3], z[4], z[2]
        r = l0 * y1 + l1 * y_prev - ld * r_prev
        e = r - fb * xm
        u = p0 * e + p1 * e_prev - pd * u_prev
        y_prev, r_prev, e_prev, u_prev = y1, r, e, u
        cols[0, k] = u
        if scheme == 0:
            _advance2(ad_n, bd_n, xs, ag[k], fm)
        else:
            _newmark_advance(mats, load, ncoef, st, scratch, xs, ag[k], fm, k == 0)
        if not np.isfinite(u):
            abort = k
            break
        ua, f, x, xd = _plant_step(ad_p, bd_p, z, u, cfg)
        cols[1, k] = ua
        fmax = max(fmax, f)
        smax = max(smax, x)
        vmax = max(vmax, xd)
        if not f <= lim[0]:
            abort = k
            break
        if lim[1] != 0.0 and (x > lim[2] or xd > lim[3]):
            abort = k
            break
        xm, fm = _plant_measure(z, noise[k + 1, 0], noise[k + 1, 1], cfg)
    return y, cols, abort, fmax, smax, vmax
