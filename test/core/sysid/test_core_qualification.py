"""Qualification tools (du Bois et al. 2010 §2.2, §3.1): stepped sine, integer-period Fourier coefficients,
Welch PSD, FRF plot, process-model fit."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal

from rths_ros.core.sysid.qualification import (
    SteppedSineParams,
    fit_process_model,
    fourier_coefficient,
    plot_frf,
    snap_frequency,
    stepped_sine,
    welch_psd,
)
from rths_ros.params import ParameterError, build

DT = 1e-3
# known plant: second-order lag (40 Hz, zeta 0.3) plus a 3 ms delay, ZOH-discretised at 1 kHz
W0, ZETA, DELAY_SAMPLES = 2 * math.pi * 40.0, 0.3, 3
_bd, _ad, _ = signal.cont2discrete(([W0 * W0], [1.0, 2 * ZETA * W0, W0 * W0]), DT, method="zoh")
_B = np.concatenate([np.zeros(DELAY_SAMPLES), np.ravel(_bd)])


def plant(u, dt):
    assert dt == DT
    return signal.lfilter(_B, _ad, u)


def plant_analytic(f):
    _, h = signal.freqz(_B, _ad, worN=2 * math.pi * np.asarray(f) * DT)
    return h


def test_fourier_coefficient_integer_periods():
    f, per, n = snap_frequency(7.3, DT, 10, 0.5)
    assert per / f == pytest.approx(n * DT)
    t = np.arange(n) * DT
    x = 0.2 + 1.5 * np.sin(2 * math.pi * f * t + 0.4) + 0.3 * np.sin(2 * math.pi * 2 * f * t)
    c = fourier_coefficient(x, f, DT)
    assert abs(c) == pytest.approx(1.5, abs=1e-9)
    assert np.angle(c) == pytest.approx(0.4 - math.pi / 2, abs=1e-9)


def test_stepped_sine_matches_analytic_frf():
    freqs = [1.0, 3.3, 7.0, 15.0, 28.0, 40.0, 61.0, 90.0]
    res = stepped_sine(plant, SteppedSineParams(frequencies_hz=tuple(freqs), amplitudes=(1e-3, 5e-3), dt_s=DT,
                                                settle_time_s=0.5))
    assert res.frf.shape == (2, len(freqs))
    np.testing.assert_allclose(res.frequencies_hz[0], freqs, rtol=0.01)  # snapping moves f by < 1 %
    h = plant_analytic(res.frequencies_hz)
    rel = np.abs(res.frf - h) / np.abs(h)
    assert rel.max() < 1e-6, rel.max()  # linear plant, settled, leakage-free
    # a linear plant has no harmonics
    assert np.abs(res.harmonics[..., 1:]).max() < 1e-8


def test_stepped_sine_sees_nonlinearity_as_harmonics():
    # saturating plant: odd harmonics appear at the large amplitude only
    def sat(u, dt):
        return np.tanh(plant(u, dt) / 2e-3) * 2e-3
    res = stepped_sine(sat, SteppedSineParams(frequencies_hz=(5.0,), amplitudes=(1e-4, 4e-3), dt_s=DT,
                                              n_harmonics=3))
    h3 = np.abs(res.harmonics[:, 0, 2])
    assert h3[0] < 1e-3 * np.abs(res.harmonics[0, 0, 0]) and h3[1] > 0.02 * np.abs(res.harmonics[1, 0, 0])
    assert np.abs(res.frf[1, 0]) < 0.9 * np.abs(res.frf[0, 0])  # gain drops with amplitude


def test_welch_psd_finds_tone_and_noise_floor():
    rng = np.random.default_rng(3)
    n = 16000
    t = np.arange(n) * DT
    sigma = 0.01
    y = np.sin(2 * math.pi * 40.0 * t) + sigma * rng.standard_normal(n)
    f, pxx = welch_psd(y, DT)
    assert f[1] - f[0] == pytest.approx(1.0 / (n // 8 * DT))  # 8 segments
    assert f[np.argmax(pxx)] == pytest.approx(40.0, abs=0.6)
    floor = np.median(pxx[(f > 100) & (f < 400)])
    assert floor == pytest.approx(2 * sigma ** 2 * DT, rel=0.15)  # one-sided white-noise density


@pytest.mark.parametrize("kind", ["G1D", "G2D"])
def test_fit_on_stepped_sine_estimate(kind, tmp_path):
    # fit the estimated FRF of the known plant; G2D must recover w0, zeta and the delay
    # (3 samples + half a sample from the zero-order hold)
    freqs = tuple(np.geomspace(1.0, 80.0, 16))
    res = stepped_sine(plant, SteppedSineParams(frequencies_hz=freqs, amplitudes=(1e-3,), dt_s=DT,
                                                settle_time_s=0.3))
    fit = fit_process_model(*res.flat(), kind)
    if kind == "G2D":
        m = fit.model
        assert m.omega0_rad_s == pytest.approx(W0, rel=0.03)
        assert m.zeta == pytest.approx(ZETA, rel=0.1)
        assert m.delay_s == pytest.approx(3.5e-3, abs=0.4e-3)
        assert m.static_gain == pytest.approx(1.0, rel=0.01)
        assert fit.rms_error < 0.02
    else:
        assert fit.rms_error > 0.05  # first order + delay cannot follow the resonance
    png = plot_frf(res, str(tmp_path / "frf.png"), models={kind: fit.model}, title=kind)
    assert (tmp_path / "frf.png").stat().st_size > 10000 and png.endswith("frf.png")


def test_params_checked():
    with pytest.raises(ParameterError, match="Nyquist"):
        build(SteppedSineParams, {"frequencies_hz": [10.0, 600.0]}, section="qualification")
    with pytest.raises(ParameterError, match="amplitudes"):
        build(SteppedSineParams, {"amplitudes": [-1.0]})
