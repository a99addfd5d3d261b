"""Polynomial forward prediction (Bartl 2019 eqs. 4.42-4.47; du Bois et al. 2010 eqs. 2-3 and Fig. 15).

"Works" / "fails" (the paper judges Fig. 15 by eye): the steady-state complex gain H of the predicted
vs the true time-shifted sinusoid is within 10 % vector error, |H - 1| <= 0.1 (about 10 % gain or
5.7 deg phase).  The paper does not state the prediction horizon of Fig. 15; tau_d = 5 ms is used.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.methods.prediction import (
    PolynomialPredictor,
    PredictorParams,
    fixed_predictor_weights,
    predictor_frequency_response,
    usable_bandwidth_hz,
    window_predictor_weights,
    window_sample_times,
)
from rths_ros.params import ParameterError, build


def test_fixed_predictor_n2_m2_is_3_m3_1():
    np.testing.assert_allclose(fixed_predictor_weights(2, 2, 1.0), [3.0, -3.0, 1.0], atol=1e-12)
    # gain c_AFP scales, and a least-squares fit (M > N) still reproduces polynomials of order N exactly
    np.testing.assert_allclose(fixed_predictor_weights(2, 2, 1.0, gain=1.1), [3.3, -3.3, 1.1], atol=1e-12)
    w = fixed_predictor_weights(2, 6, 2.5)
    y = lambda t: 0.3 - 2 * t + 0.7 * t * t
    assert w @ y(-np.arange(7.0)) == pytest.approx(y(2.5), abs=1e-10)


def test_window_weights_exact_for_order_6_polynomials_and_normalisation():
    p = np.poly1d([0.4, -1, 2, 0.1, -3, 5, 1.5])  # 6th order
    for ts, ns in ((0.1, 20), (0.01, 10)):
        t = window_sample_times(ts, ns)
        assert t[0] == 0.0 and t[-1] == pytest.approx(-ts)
        w = window_predictor_weights(6, ts, ns, [0.005, 0.0])
        s = t / ts  # evaluate in normalised time to keep values O(1)
        assert w[0] @ p(s) == pytest.approx(p(0.005 / ts), rel=1e-8)
        assert w[1] @ p(s) == pytest.approx(p(0.0), rel=1e-8)


@pytest.mark.parametrize("ts,ns,lo,hi", [(0.1, 20, 9.0, 13.0), (0.01, 10, 35.0, 50.0)])
def test_du_bois_2010_predictor_bandwidth(ts, ns, lo, hi):
    # du Bois et al. 2010 Fig. 15: T_s = 0.1 s, n_s = 20 degrades shortly after 10 Hz; T_s = 0.01 s, n_s = 10
    # acceptable to about 40 Hz
    tau = 0.005
    w = window_predictor_weights(6, ts, ns, [tau])[0]
    bw = usable_bandwidth_hz(w, window_sample_times(ts, ns), tau, tol=0.1)
    assert lo <= bw <= hi, bw


def test_du_bois_2010_setting_breaks_down_above_10_hz_with_10ms_horizon():
    # the first setting blows up past its bandwidth (gain > 10 at 20 Hz with tau_d = 10 ms)
    t = window_sample_times(0.1, 20)
    w = window_predictor_weights(6, 0.1, 20, [0.01])[0]
    h = predictor_frequency_response(w, t, 0.01, [5.0, 10.0, 20.0])
    assert abs(h[0]) == pytest.approx(1.003, abs=0.002)
    assert abs(h[1]) == pytest.approx(0.967, abs=0.003)
    assert abs(h[2]) > 10.0


def test_frequency_response_matches_time_domain_prediction():
    # streaming predictor on a sampled sine equals the analytic steady-state gain (integer spacing)
    dt, f, tau = 1e-3, 23.0, 0.005
    pp = PredictorParams(order=6, window_s=0.01, n_samples=10, spacing="ts_over_ns", horizon_s=tau)
    pred = PolynomialPredictor(pp, dt)
    assert pred.history_length == 11
    t = np.arange(2000) * dt
    x = np.sin(2 * math.pi * f * t)
    out = np.array([pred.push(v)[0] for v in x])
    tt = window_sample_times(0.01, 10, "ts_over_ns")
    w = window_predictor_weights(6, 0.01, 10, [tau], "ts_over_ns")[0]
    h = predictor_frequency_response(w, tt, tau, [f])[0]
    expect = abs(h) * np.sin(2 * math.pi * f * (t + tau) + np.angle(h))
    np.testing.assert_allclose(out[50:], expect[50:], atol=1e-9)


def test_fractional_spacing_is_interpolated():
    # T_s/(n_s - 1) = 1.111 ms on a 1 ms grid: the window samples are interpolated linearly; for a
    # quadratic each interpolated sample errs by at most x'' dt^2 / 8, amplified by sum |w|
    dt = 1e-3
    pred = PolynomialPredictor(PredictorParams(order=2, window_s=0.01, n_samples=10, horizon_s=0.005), dt)
    t = np.arange(100) * dt
    x = 1.0 + 3.0 * t + 40.0 * t * t
    out = [pred.push(v)[0] for v in x]
    tp = t[-1] + 0.005
    bound = np.abs(pred.weights).sum() * 80.0 * dt * dt / 8
    assert bound < 1e-4
    assert out[-1] == pytest.approx(1 + 3 * tp + 40 * tp * tp, abs=bound)
    # the first call starts from rest (history filled with the first sample)
    pred.reset()
    assert pred.push(2.0)[0] == pytest.approx(2.0)


def test_parameters_are_checked():
    with pytest.raises(ParameterError, match="n_samples"):
        build(PredictorParams, {"order": 6, "n_samples": 5}, section="predictor")
    with pytest.raises(ParameterError, match="spacing"):
        build(PredictorParams, {"spacing": "uniform"})
