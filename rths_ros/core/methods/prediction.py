"""Polynomial forward prediction of a demand signal (Bartl 2019 §4.3, du Bois et al. 2010 §3.2 eqs. 2-3).

A polynomial of order ``N`` is fitted by least squares to the last ``n_s`` samples of a signal
and evaluated ``tau`` seconds ahead.  Because the sample times relative to "now" are fixed, the
fit-and-evaluate map is a fixed FIR filter: ``x_tau = w . b`` with ``b`` the history samples.
The weights are computed once with a pseudo-inverse (du Bois et al. 2010: "the pseudo-inverse only needs to
be performed once and can be reused at each time step").

Two parameterisations are provided:

* **fixed** (Bartl 2019 eqs. 4.42-4.47): order ``N``, ``M + 1`` samples one loop period apart,
  horizon ``P`` loop periods, gain ``c_AFP``.  ``N = M = 2``, ``P = 1`` gives the weights
  ``[3, -3, 1]`` (newest sample first).  :func:`fixed_predictor_weights`.
* **least-squares window** (du Bois et al. 2010 eq. 2): order (6 in the paper), ``n_s`` samples spanning
  ``T_s``, horizon ``tau_d``.  The sample spacing printed in the paper is
  ``dt = T_s / (n_s - 1)``; with ``T_s = 0.1 s, n_s = 20`` this is 5.263 ms, not a multiple of the
  1 ms control period, so the alternative ``dt = T_s / n_s`` is offered as well
  (``spacing = "ts_over_ns"``).  :func:`window_predictor_weights`, :class:`PolynomialPredictor`.

Conventions and choices (the sources are silent on these):

* Weight vectors are ordered **newest sample first** (``b = [x[n], x[n-1], ...]``, Bartl 2019).
* Time is normalised by the span of the window before the pseudo-inverse; the unnormalised
  Vandermonde matrix of ``T_s = 0.01 s`` is numerically singular (condition ~1e15).
* In the streaming :class:`PolynomialPredictor` the history is sampled at the control period
  ``dt_s``.  When the window spacing is not an integer multiple of ``dt_s`` the required past
  values are linearly interpolated between the two neighbouring stored samples; the weights
  are folded onto the stored samples once, so a step is still one dot product.
* :func:`predictor_frequency_response` gives the exact steady-state complex gain of predicted vs
  true ``x(t + tau)`` for a sinusoid (the du Bois et al. 2010 Fig. 15 test).  :func:`usable_bandwidth_hz`
  turns it into one number: the lowest frequency where ``|H - 1|`` exceeds a tolerance
  (default 0.1, i.e. 10 % vector error, about 10 % gain or 5.7 deg phase).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from rths_ros.params import ParameterError, param

SPACING_CHOICES = ("ts_over_ns_minus_1", "ts_over_ns")


def _ls_weights(times: np.ndarray, order: int, horizons: np.ndarray, scale: float) -> np.ndarray:
    """Rows ``w_h`` with ``x(h) ~= w_h . x(times)`` for a least-squares polynomial of ``order``."""
    X = np.vander(times / scale, order + 1, increasing=True)
    pinv = np.linalg.pinv(X)
    rows = np.vander(np.atleast_1d(horizons) / scale, order + 1, increasing=True)
    return rows @ pinv


def fixed_predictor_weights(order: int, n_past: int, horizon_steps: float = 1.0, gain: float = 1.0) -> np.ndarray:
    """Weights of the fixed predictor of Bartl 2019 eqs. (4.42)-(4.46), newest sample first.

    ``order`` = N, ``n_past`` = M (so ``M + 1`` samples are used), ``horizon_steps`` = P_AFP (may
    be non-integer), ``gain`` = c_AFP.  ``u[n] = w . [y[n], y[n-1], ..., y[n-M]]``.
    """
    if order < 0 or n_past < order:
        raise ValueError(f"need 0 <= order <= n_past, got order={order}, n_past={n_past}")
    times = -np.arange(n_past + 1, dtype=np.float64)  # X_ij = (-i dt)^j with dt = 1
    scale = max(float(n_past), 1.0)
    return gain * _ls_weights(times, order, np.array([float(horizon_steps)]), scale)[0]


def window_sample_times(window_s: float, n_samples: int, spacing: str = "ts_over_ns_minus_1") -> np.ndarray:
    """Sample times relative to now, newest first: ``0, -dt, ..., -(n_s - 1) dt`` (du Bois et al. 2010 eq. 2)."""
    if spacing not in SPACING_CHOICES:
        raise ValueError(f"spacing must be one of {SPACING_CHOICES}")
    sp = window_s / (n_samples - 1) if spacing == "ts_over_ns_minus_1" else window_s / n_samples
    return -np.arange(n_samples, dtype=np.float64) * sp


def window_predictor_weights(order: int, window_s: float, n_samples: int, horizons_s,
                             spacing: str = "ts_over_ns_minus_1") -> np.ndarray:
    """Least-squares predictor weights (du Bois et al. 2010 eqs. 2-3), newest sample first.

    Returns shape ``(len(horizons_s), n_samples)``; row ``i`` predicts ``x(t + horizons_s[i])``.
    """
    if n_samples < order + 1:
        raise ValueError(f"n_samples={n_samples} must exceed the polynomial order {order}")
    times = window_sample_times(window_s, n_samples, spacing)
    scale = float(-times[-1]) if n_samples > 1 else 1.0
    return _ls_weights(times, order, np.asarray(horizons_s, dtype=np.float64), scale)


def predictor_frequency_response(weights: np.ndarray, times_s: np.ndarray, horizon_s: float,
                                 freqs_hz) -> np.ndarray:
    """Steady-state complex gain (predicted / true ``x(t + horizon)``) for sinusoids.

    ``weights`` and ``times_s`` (relative sample times, newest first) describe the FIR map.  The
    result is 1 for a perfect predictor; ``abs`` is the gain, ``angle`` the phase error.
    """
    w = np.asarray(weights, dtype=np.float64)
    t = np.asarray(times_s, dtype=np.float64)
    om = 2.0 * np.pi * np.atleast_1d(np.asarray(freqs_hz, dtype=np.float64))
    pred = np.exp(1j * np.outer(om, t)) @ w
    return pred / np.exp(1j * om * horizon_s)


def usable_bandwidth_hz(weights: np.ndarray, times_s: np.ndarray, horizon_s: float, tol: float = 0.1,
                        f_max_hz: float = 200.0, df_hz: float = 0.05) -> float:
    """Lowest frequency at which ``|H - 1| > tol`` (scanned on a ``df_hz`` grid up to ``f_max_hz``).

    Returns ``f_max_hz`` if the tolerance is never exceeded.
    """
    f = np.arange(df_hz, f_max_hz + 0.5 * df_hz, df_hz)
    err = np.abs(predictor_frequency_response(weights, times_s, horizon_s, f) - 1.0)
    bad = np.nonzero(err > tol)[0]
    return float(f[bad[0]]) if bad.size else float(f_max_hz)


@dataclass(frozen=True)
class PredictorParams:
    """Least-squares polynomial forward predictor (du Bois et al. 2010 §3.2)."""

    order: int = param(6, "", 0, 12, "polynomial order (6 in du Bois et al. 2010, 'chosen arbitrarily')")
    window_s: float = param(0.01, "s", 1e-4, 10.0,
                            "T_s: time spanned by the fitted samples (du Bois et al. 2010: 0.1 s in the tests, 0.01 s best)")
    n_samples: int = param(10, "", 2, 1000, "n_s: number of fitted samples (du Bois et al. 2010: 20 in the tests, 10 best)")
    spacing: str = param("ts_over_ns_minus_1", "", doc=(
        "sample spacing: 'ts_over_ns_minus_1' = T_s/(n_s-1) as printed in du Bois et al. 2010 eq. (2); "
        "'ts_over_ns' = T_s/n_s (a multiple of 1 ms for both settings of the paper)"), choices=SPACING_CHOICES)
    horizon_s: float = param(0.005, "s", 0.0, 1.0, "tau_d: prediction horizon (the identified delay)")

    def validate(self) -> None:
        if self.n_samples < self.order + 1:
            raise ParameterError(f"n_samples: {self.n_samples!r} is too small; expected >= order + 1 = "
                                 f"{self.order + 1}")


@numba.njit(cache=True)
def _ring_dot(buf, head, w, out, n_rows):  # pragma: no cover - numba
    """``out[r] = sum_j w[r, j] * buf[(head - j) mod len]`` (``head`` = index of the newest sample)."""
    n = buf.shape[0]
    m = w.shape[1]
    for r in range(n_rows):
        acc = 0.0
        for j in range(m):
            idx = head - j
            if idx < 0:
                idx += n
            acc += w[r, j] * buf[idx]
        out[r] = acc


class PolynomialPredictor:
    """Streaming least-squares forward predictor at control period ``dt_s``.

    :meth:`push` stores one sample per control period and returns the predictions for every
    horizon in ``horizons_s`` (default: the ``horizon_s`` of the parameters).  Until the history
    is full, missing past samples are taken equal to the oldest sample seen (start from rest).
    """

    def __init__(self, params: PredictorParams, dt_s: float, horizons_s=None) -> None:
        self.params = params
        self.dt = float(dt_s)
        hz = np.atleast_1d(np.asarray(params.horizon_s if horizons_s is None else horizons_s, dtype=np.float64))
        self.horizons = hz
        times = window_sample_times(params.window_s, params.n_samples, params.spacing)
        w_window = window_predictor_weights(params.order, params.window_s, params.n_samples, hz, params.spacing)
        # fold the window weights onto the stored samples (linear interpolation for fractional lags)
        lags = -times / self.dt
        n_hist = int(math.floor(lags[-1] + 1e-9)) + 2
        w = np.zeros((hz.size, n_hist))
        for j, lag in enumerate(lags):
            lo = int(math.floor(lag + 1e-9))
            frac = lag - lo
            if frac < 1e-9:
                w[:, lo] += w_window[:, j]
            else:
                w[:, lo] += (1.0 - frac) * w_window[:, j]
                w[:, lo + 1] += frac * w_window[:, j]
        self.weights = np.ascontiguousarray(w)
        self._buf = np.zeros(n_hist)
        self._out = np.zeros(hz.size)
        self._head = -1
        self._count = 0
        _ring_dot(self._buf, 0, self.weights, self._out, hz.size)  # compile now

    @property
    def history_length(self) -> int:
        return int(self._buf.size)

    def reset(self) -> None:
        self._buf[:] = 0.0
        self._head = -1
        self._count = 0

    def push(self, x: float) -> np.ndarray:
        """Store ``x`` (the newest sample) and return the predictions (array reused between calls)."""
        n = self._buf.size
        if self._count == 0:
            self._buf[:] = x
        self._head = (self._head + 1) % n
        self._buf[self._head] = x
        self._count += 1
        _ring_dot(self._buf, self._head, self.weights, self._out, self._out.size)
        return self._out
