"""J1-J9 of the servo-hydraulic building benchmark on signals with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.models.building import criteria as bc

DT = 1.0 / 4096.0


def _signals(delay=12, gain=1.0, n=4096 * 8, f_hz=2.0, offset=0.0):
    t = np.arange(n) * DT
    w = 2 * math.pi * f_hz
    y1 = 1e-3 * np.sin(w * t)
    x_m = gain * 1e-3 * np.sin(w * (t - delay * DT)) + offset
    xr = np.column_stack([1e-3 * np.sin(w * t), 2e-3 * np.sin(w * t), 3e-3 * np.sin(w * t)])
    return t, y1, x_m, xr


def test_pure_delay_gives_lag_and_analytic_errors():
    delay = 12
    t, y1, x_m, xr = _signals(delay)
    j = bc.evaluate(y1, x_m, 1.1 * xr[:, 1], 0.8 * xr[:, 2], xr, DT)
    assert j["J1"] == pytest.approx(delay * DT * 1e3, abs=1e-12)
    # ||sin(wt - phi) - sin(wt)|| / ||sin|| = 2 |sin(phi/2)| over whole periods (8 periods of 2 Hz in 8 s
    # minus the start-up of the delayed copy)
    expected = 200.0 * abs(math.sin(2 * math.pi * 2.0 * delay * DT / 2))
    assert j["J2"] == pytest.approx(expected, rel=1e-3)
    assert j["J3"] == pytest.approx(expected, rel=2e-3)
    assert j["J4"] == pytest.approx(j["J2"], rel=1e-9)     # floor 1 of x_r equals y1 here
    assert j["J5"] == pytest.approx(10.0, rel=1e-9)        # y2 = 1.1 x_r2
    assert j["J6"] == pytest.approx(20.0, rel=1e-9)        # y3 = 0.8 x_r3
    assert j["J8"] == pytest.approx(10.0, rel=1e-9)
    assert j["J9"] == pytest.approx(20.0, rel=1e-9)
    assert not j["J1_at_window_edge"]


def test_gain_error_only():
    _, y1, x_m, xr = _signals(delay=0, gain=1.1)
    j = bc.evaluate(y1, x_m, xr[:, 1], xr[:, 2], xr, DT)
    assert j["J1"] == 0.0
    assert j["J2"] == pytest.approx(10.0, rel=1e-9)
    assert j["J3"] == pytest.approx(10.0, rel=1e-9)
    assert j["J6"] == 0.0 and j["J9"] == 0.0


def test_conventions_order_norm_and_rounding():
    _, y1, x_m, xr = _signals(delay=7, offset=2e-4)
    y2, y3 = 1.05 * xr[:, 1], 0.9 * xr[:, 2]
    p = bc.evaluate(y1, x_m, y2, y3, xr, DT, "paper")
    m = bc.evaluate(y1, x_m, y2, y3, xr, DT, "matlab")
    # reordering: matlab J5 = peak floor 1 = paper J7; matlab J6/J7 = RMS floors 2/3 = paper J5/J6
    assert m["J5"] == pytest.approx(p["J7"])
    assert m["J6"] == pytest.approx(p["J5"]) and m["J7"] == pytest.approx(p["J6"])
    assert m["J8"] == pytest.approx(p["J8"]) and m["J9"] == pytest.approx(p["J9"])
    # a constant offset of x_m counts in the RMS (paper) but not in the standard deviation (matlab)
    assert p["J2"] > m["J2"] + 5.0
    _, y1c, x_mc, _ = _signals(delay=7)
    assert m["J2"] == pytest.approx(bc.evaluate(y1c, x_mc, y2, y3, xr, DT, "matlab")["J2"], rel=1e-6)
    assert m["J1"] == round(7 * DT * 1e3, 1) == 1.7
    assert p["J1"] == pytest.approx(7 * DT * 1e3)
    with pytest.raises(ValueError, match="convention"):
        bc.evaluate(y1, x_m, y2, y3, xr, DT, "other")


def test_lag_window_edge_flagged():
    _, y1, x_m, xr = _signals(delay=60, f_hz=1.0)
    m = bc.evaluate(y1, x_m, xr[:, 1], xr[:, 2], xr, DT, "matlab")
    p = bc.evaluate(y1, x_m, xr[:, 1], xr[:, 2], xr, DT, "paper")
    assert m["J1_at_window_edge"] and m["J1"] == round(49 * DT * 1e3, 1)
    assert not p["J1_at_window_edge"] and p["J1"] == pytest.approx(60 * DT * 1e3)


def test_fft_pearson_equals_direct():
    rng = np.random.default_rng(5)
    y = np.cumsum(rng.standard_normal(20000)) * 1e-5 + 3e-3
    x = np.roll(y, 9) + 1e-6 * rng.standard_normal(y.size)
    fast = bc.pearson_by_lag(y, x, 80)
    slow = bc.pearson_by_lag_direct(y, x, 80)
    np.testing.assert_allclose(fast, slow, atol=1e-10)
    assert int(np.argmax(fast)) == int(np.argmax(slow)) == 9


def test_shape_check():
    _, y1, x_m, xr = _signals()
    with pytest.raises(ValueError, match="shape"):
        bc.evaluate(y1, x_m[:-1], xr[:, 1], xr[:, 2], xr, DT)


def test_zero_reference_gives_nan_not_an_exception():
    _, y1, x_m, xr = _signals()
    j = bc.evaluate(np.zeros_like(y1), x_m, xr[:, 1], xr[:, 2], np.zeros_like(xr), DT)
    assert math.isnan(j["J2"]) and math.isnan(j["J4"]) and math.isnan(j["J9"])
