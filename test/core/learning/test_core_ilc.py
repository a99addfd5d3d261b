"""PD-type ILC (Insam 2022 ch. 6): update law, robustness filter, injection level, divergence rule, the
RTHS convergence condition eq. 6.18 against the thesis's numbers, and closed-loop ILC series on the
virtual contact test."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.app import scenario
from rths_ros.core.learning.ilc.convergence import ilc_convergence, inner_feedforward_sensitivity
from rths_ros.core.learning.ilc.learner import IlcParams, PdIlc, divergence_rule, q_filter_magnitude
from rths_ros.core.models.contact1d.model import Contact1DParams
from rths_ros.core.plant.legs import LegCascadeParams, LegPlantParams
from rths_ros.params import ParameterError

DT = 1e-3


# ----------------------------------------------------------------------------------------------
# convergence condition eq. 6.18 (PPI1, leg 2, first-order zero-phase Q)

def _conv(beta, gamma, fq, d=200.0, cascade=None, leg=2):
    return ilc_convergence(Contact1DParams(d_num_kg_per_s=d), LegPlantParams(),
                           cascade or LegCascadeParams.PPI1(),
                           IlcParams(beta_per_s=beta, gamma=gamma, f_q_cut_hz=fq), leg=leg)


def test_convergence_thesis_cases():
    """§6.3.1: beta=16, gamma=1: f_Q=2 Hz -> -10 dB (converges); f_Q=12 Hz -> +6 dB near 5 Hz (diverges)."""
    r2 = _conv(16, 1, 2)
    assert r2["peak_db"] == pytest.approx(-10.0, abs=0.5)
    assert r2["converges"]
    r12 = _conv(16, 1, 12)
    assert r12["peak_db"] == pytest.approx(6.3, abs=0.5)
    assert r12["peak_hz"] == pytest.approx(5.2, abs=0.3)
    assert not r12["converges"]
    f, db = r12["curve"]
    assert f.shape == db.shape and f[-1] == pytest.approx(100.0)
    assert np.max(db) <= r12["peak_db"] + 1e-9


@pytest.mark.parametrize("beta,gamma,fq,d,expected", [
    (10, 1, 6, 200, 1.7),        # Table A.4 standard
    (10, 2, 2, 200, -3.9),       # §6.4 setting
    (10, 0, 2, 200, -6.0),
    (16, 0, 6, 200, 0.6),
    (10, 0, 6, 200, -1.5),
    (5, 0, 10, 200, -0.4),
    (5, 0, 6, 200, -2.5),        # DC dominated
    (16, 1, 2, 50, -7.6),        # d = 50 values of the thesis's table (brackets)
    (16, 1, 12, 50, 9.3),
    (10, 1, 6, 50, 5.6),
    (10, 2, 2, 50, -2.4),
])
def test_convergence_table(beta, gamma, fq, d, expected):
    assert _conv(beta, gamma, fq, d)["peak_db"] == pytest.approx(expected, abs=0.15)


def test_convergence_low_frequency_limit_and_leg_choice():
    """S_f,in -> -1/K_Pp at w -> 0, so the DC factor is |1 - beta/K_Pp|; another leg gives another curve."""
    sf = inner_feedforward_sensitivity(np.array([1e-4]), Contact1DParams(), LegPlantParams(),
                                       LegCascadeParams.PPI1(), leg=2)
    assert sf[0].real == pytest.approx(-1.0 / 20.0, rel=1e-3)
    r = _conv(16, 1, 2)
    assert r["dc_db"] == pytest.approx(20 * math.log10(abs(1 - 16 / 20)), abs=0.01)
    assert _conv(16, 1, 12, leg=1)["peak_db"] != pytest.approx(r["peak_db"], abs=0.5)
    with pytest.raises(ParameterError):
        _conv(16, 1, 2, leg=7)
    # PPI2 (K_Pp = 50): the DC factor |1 - 16/50| dominates the f_Q = 2 Hz case (-3.4 dB)
    assert _conv(16, 1, 2, cascade=LegCascadeParams.PPI2())["peak_db"] == pytest.approx(-3.35, abs=0.1)


# ----------------------------------------------------------------------------------------------
# update law, Q filter, injection level, persistence

def test_update_law_hand_computation_without_filter():
    """f_{j+1} = beta e + gamma de/dt + f_j (Q = 1), central difference, on a 5-sample record."""
    p = IlcParams(enabled=True, beta_per_s=2.0, gamma=3.0, f_q_cut_hz=0.0)
    ilc = PdIlc(p, n_legs=2, n_samples=5, dt_s=0.5)
    assert ilc.trial == 1 and not ilc.feedforward.any()
    e = np.array([[0.0, 1.0, 4.0, 9.0, 16.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    # de/dt: ends one-sided, inside central: [2, 4, 8, 12, 14]
    f2 = ilc.update(e)
    np.testing.assert_allclose(f2[0], [6.0, 14.0, 32.0, 54.0, 74.0])
    np.testing.assert_allclose(f2[1], 0.0)
    assert ilc.trial == 2
    e2 = np.array([[1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.5, 0.0, 0.0, 0.0]])
    f3 = ilc.update(e2)
    np.testing.assert_allclose(f3[0], [8.0, 16.0, 34.0, 56.0, 76.0])
    np.testing.assert_allclose(f3[1], [3 * 1.0, 2 * 0.5 + 3 * 0.0, 3 * -0.5, 0.0, 0.0])
    assert ilc.error_rms_history[0] == pytest.approx(math.sqrt(np.mean(e ** 2)))
    assert ilc.error_max_history == [16.0, 1.0]
    with pytest.raises(ValueError):
        ilc.update(np.zeros((2, 4)))
    with pytest.raises(ValueError):
        ilc.feedforward[0, 0] = 1.0          # read-only view
    ilc.reset()
    assert ilc.trial == 1 and not ilc.feedforward.any() and ilc.error_rms_history == []


def test_update_law_backward_difference_and_disabled():
    p = IlcParams(enabled=True, beta_per_s=0.0, gamma=1.0, f_q_cut_hz=0.0, derivative="backward")
    ilc = PdIlc(p, 1, 4, 0.5)
    np.testing.assert_allclose(ilc.update(np.array([[1.0, 3.0, 3.0, 2.0]])), [[2.0, 4.0, 0.0, -2.0]])
    off = PdIlc(IlcParams(enabled=False, f_q_cut_hz=0.0), 1, 4, 0.5)
    off.update(np.ones((1, 4)))
    assert not off.feedforward.any() and off.trial == 2 and off.error_rms_history == [1.0]


def _hand_first_order_filtfilt(x, fc, dt, padlen):
    """First-order bilinear Butterworth, forward then backward, odd padding, steady-state start."""
    k = math.tan(math.pi * fc * dt)
    b0 = k / (1.0 + k)
    a1 = (k - 1.0) / (k + 1.0)
    xp = np.concatenate([2 * x[0] - x[padlen:0:-1], x, 2 * x[-1] - x[-2:-padlen - 2:-1]])

    def run(u):
        y = np.empty_like(u)
        xm, ym = u[0], u[0]
        for i, ui in enumerate(u):
            y[i] = b0 * (ui + xm) - a1 * ym
            xm, ym = ui, y[i]
        return y

    return run(run(xp)[::-1])[::-1][padlen:padlen + x.size]


def test_update_law_with_q_against_hand_filter():
    p = IlcParams(enabled=True, beta_per_s=10.0, gamma=1.0, f_q_cut_hz=6.0)
    n = 400
    ilc = PdIlc(p, 1, n, DT)
    assert ilc.q_padlen == math.ceil(5.0 / (2 * math.pi * 6.0 * DT))
    rng = np.random.default_rng(3)
    e = np.cumsum(rng.standard_normal(n)) * 1e-5
    u = 10.0 * e + np.gradient(e, DT)
    f = ilc.update(e[None, :])[0]
    np.testing.assert_allclose(f, _hand_first_order_filtfilt(u, 6.0, DT, ilc.q_padlen), rtol=0, atol=1e-12)


def test_q_filter_zero_phase_and_attenuation():
    n = 4000
    t = np.arange(n) * DT
    ilc = PdIlc(IlcParams(enabled=True, f_q_cut_hz=6.0), 1, n, DT)
    mid = slice(1000, 3000)
    for f_sig in (1.0, 2.0):                                   # below the cut-off: no lag, |H|^2 gain
        x = np.sin(2 * np.pi * f_sig * t)[None, :]
        y = ilc.q_filter(x)[0]
        gain = q_filter_magnitude(f_sig, 6.0, 1, DT)
        c = np.sum(y[mid] * x[0, mid]) / np.sum(x[0, mid] ** 2)
        s = np.sum(y[mid] * np.cos(2 * np.pi * f_sig * t[mid])) / np.sum(np.cos(2 * np.pi * f_sig * t[mid]) ** 2)
        assert c == pytest.approx(gain, rel=2e-3)
        assert abs(math.atan2(s, c)) < 1e-3                    # phase [rad]
    hi = np.sin(2 * np.pi * 30.0 * t)[None, :]
    amp = np.max(np.abs(ilc.q_filter(hi)[0, mid]))
    assert amp == pytest.approx(1.0 / (1.0 + (30.0 / 6.0) ** 2), rel=0.05)   # ~ -28 dB
    assert q_filter_magnitude(6.0, 6.0, 1, DT) == pytest.approx(0.5, rel=1e-9)  # -6 dB at f_Q,cut
    with pytest.raises(ParameterError):
        PdIlc(IlcParams(f_q_cut_hz=600.0), 1, 10, DT)          # above Nyquist


def test_position_injection_scaling_and_persistence(tmp_path):
    kpp = 20.0
    rng = np.random.default_rng(7)
    pv = IlcParams(enabled=True, beta_per_s=16.0, gamma=1.0, f_q_cut_hz=2.0)
    pp = IlcParams(enabled=True, beta_per_s=16.0, gamma=1.0, f_q_cut_hz=2.0, injection="position")
    vel = PdIlc(pv, 6, 500, DT, kpp)
    pos = PdIlc(pp, 6, 500, DT, kpp)
    assert pos.beta == pytest.approx(16.0 / kpp) and pos.gamma == pytest.approx(1.0 / kpp)
    for _ in range(3):
        e = rng.standard_normal((6, 500)) * 1e-4
        vel.update(e)
        pos.update(e)
    np.testing.assert_allclose(pos.feedforward, vel.feedforward / kpp, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(pos.feedforward_velocity_level, vel.feedforward, rtol=1e-12, atol=1e-18)
    with pytest.raises(ParameterError):
        PdIlc(pp, 6, 500, DT, 0.0)
    # save / load: same level, other level (converted), wrong shape
    path = vel.save(tmp_path / "ff.npz")
    again = PdIlc(pv, 6, 500, DT, kpp)
    again.load(path)
    np.testing.assert_array_equal(again.feedforward, vel.feedforward)
    other = PdIlc(pp, 6, 500, DT, kpp)
    other.load(path)
    np.testing.assert_allclose(other.feedforward, vel.feedforward / kpp, rtol=1e-12)
    with pytest.raises(ParameterError):
        PdIlc(pv, 6, 400, DT, kpp).load(path)


def test_divergence_rule():
    converging = [0.030, 0.0069, 0.0030, 0.0026, 0.00254, 0.00253, 0.00255, 0.00252, 0.00256]
    for j in range(1, len(converging) + 1):
        assert not divergence_rule(converging[:j])[0]
    growing = [0.030, 0.0076, 0.0077, 0.0126, 0.0209]
    assert [divergence_rule(growing[:j])[0] for j in range(1, 6)] == [False, False, False, False, True]
    # a single jump is not enough, two growing trials are
    assert not divergence_rule([1.0, 0.5, 0.8])[0]
    assert divergence_rule([1.0, 0.5, 0.8, 1.0])[0]
    # growth right from trial 1 on (trial 1 is the minimum) counts as well
    assert not divergence_rule([1.0, 1.2])[0]
    assert divergence_rule([1.0, 1.2, 1.5])[0]
    assert divergence_rule([1.0, 0.9, float("nan")])[0]
    assert divergence_rule([1.0, 0.9, 3.5])[0]                       # > 3 x trial 1
    assert not divergence_rule([1.0, 0.9, 3.5], max_ratio_to_first=0.0, consecutive_trials=2)[0]
    ilc = PdIlc(IlcParams(consecutive_trials=1), 1, 3, DT)
    assert ilc.check_divergence() == (False, "no trial yet")
    for m, stop in ((1.0, False), (0.5, False), (0.6, True)):
        assert ilc.check_divergence(m)[0] is stop
    assert ilc.metric_history == [1.0, 0.5, 0.6]


# ----------------------------------------------------------------------------------------------
# closed loop: the series themselves (f_Q = 2 Hz converges, 12 Hz diverges and is stopped) are tested on
# the virtual run in test/app/test_controllers_rths.py; here the two injection levels are shown equivalent.

def test_position_injection_equals_velocity_injection_in_closed_loop():
    """K_Pp (b + f/K_Pp - b') = K_Pp (b - b') + f: a two-trial series with either injection gives the same
    second trial.  Up to rounding: a last-bit difference can flip a 2.4 um resolver step of a measured
    length (or move a contact-gate switch by one step), so the tolerance is one quantisation step."""
    from rths_ros.app.vrths import run_virtual
    base = ["ilc.enabled=true", "ilc.beta_per_s=16", "ilc.gamma=1", "ilc.f_q_cut_hz=2", "loop.trials=2",
            "loop.duration_s=2.0"]
    vel = run_virtual(scenario.load("contact_1d", base + ["ilc.injection=velocity"]))
    pos = run_virtual(scenario.load("contact_1d", base + ["ilc.injection=position"]))
    n = vel["k"].size // 2
    q = 2.4e-6 * 1.001
    np.testing.assert_allclose(pos["b_meas"][n:], vel["b_meas"][n:], rtol=0, atol=q)
    assert np.mean(pos["b_meas"][n:] != vel["b_meas"][n:]) < 0.01        # flips are rare
    assert np.max(np.abs(vel["ff_velocity"][n:])) > 1e-4           # velocity level: the feedforward acts
    assert np.max(np.abs(pos["b_cmd"][n:] - vel["b_cmd"][n:])) > 1e-6   # position level: it is in the length
    assert np.max(np.abs(vel["b_meas"][n:] - vel["b_meas"][:n])) > 1e-5  # and it changes the motion

