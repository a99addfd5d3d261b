"""Tare, gravity compensation and force gating of the measured force (Insam 2022 §4.2.4)."""
import numpy as np
import pytest

from rths_ros.core.plant.sim_plant import SimPlant, SimPlantParams
from rths_ros.core.platform.force_processing import ForceProcessor, ForceProcessorParams
from rths_ros.core.platform.interface import InterfaceMap
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.params import ParameterError, build

M_EXP, G, K_EXP, H0 = 0.38, 9.81, 8650.0, 0.01
W = M_EXP * G


def _wrench(fz, bias=None):
    w = np.array([0.0, 0.0, fz, 0.0, 0.0, 0.0])
    return w if bias is None else w + bias


def test_gravity_compensation_upside_down():
    fp = ForceProcessor(ForceProcessorParams(tare=False))
    # flight: the sensor carries the weight, F'_m = -m g -> F_int = m g (hanging-model tension)
    f_int, f_meas, contact = fp.process(_wrench(-W))
    assert (f_int, f_meas, contact) == (pytest.approx(W), pytest.approx(W), False)
    # contact with a plate reaction N = 17.3 N: F'_m = -(m g + N) -> F_int = m g - N
    n = K_EXP * 0.002
    f_int, f_meas, contact = fp.process(_wrench(-(W + n)))
    assert contact
    assert f_meas == pytest.approx(W - n) and f_int == pytest.approx(W - n)


def test_gating_replaces_the_flight_force_by_the_weight():
    fp = ForceProcessor(ForceProcessorParams(tare=False))
    rng = np.random.default_rng(3)
    fz = -W + 0.1 * np.sin(np.linspace(0, 20, 500)) + 0.02 * rng.standard_normal(500)   # inertia + noise
    for f in fz:
        f_int, f_meas, contact = fp.process(_wrench(f))
        assert not contact and f_int == W
        assert f_meas == pytest.approx(f + 2 * W)
    # without gating the measured force is passed through (contact is still reported)
    fp = ForceProcessor(ForceProcessorParams(tare=False, gating=False))
    for f in fz:
        f_int, f_meas, contact = fp.process(_wrench(f))
        assert f_int == f_meas == pytest.approx(f + 2 * W) and not contact


def test_contact_detection_hysteresis():
    fp = ForceProcessor(ForceProcessorParams(tare=False, contact_threshold_n=0.5, release_threshold_n=0.3))
    # deviations |f_meas - m g| (= plate reaction N)
    devs = [0.0, 0.45, 0.55, 0.4, 0.31, 0.29, 0.4, 0.49, 0.6, 5.0, 0.0]
    expected = [False, False, True, True, True, False, False, False, True, True, False]
    got = [fp.process(_wrench(-(W + d)))[2] for d in devs]
    assert got == expected
    fp.reset()
    assert not fp.contact


def test_tare_removes_the_bias_but_keeps_the_static_weight():
    bias = np.array([0.3, -0.2, 0.7, 0.01, -0.02, 0.005])
    n = 200
    fp = ForceProcessor(ForceProcessorParams(tare=True, tare_samples=n))
    rng = np.random.default_rng(0)
    for _i in range(n):
        assert not fp.tared
        out = fp.process(_wrench(-W, bias) + 0.02 * rng.standard_normal(6))
        assert out == (W, W, False)               # during the tare window: flight value
    assert fp.tared
    np.testing.assert_allclose(fp.bias, bias, atol=0.005)
    f_int, f_meas, contact = fp.process(_wrench(-W, bias))
    assert f_meas == pytest.approx(W, abs=0.005) and not contact
    f_int, f_meas, contact = fp.process(_wrench(-(W + 10.0), bias))
    assert contact and f_int == pytest.approx(W - 10.0, abs=0.005)
    # without tare the 0.7 N bias looks like contact
    raw = ForceProcessor(ForceProcessorParams(tare=False))
    assert raw.process(_wrench(-W, bias))[2]
    # reset starts a new tare window
    fp.reset()
    assert not fp.tared and np.all(fp.bias == 0.0)


def test_threshold_validation():
    with pytest.raises(ParameterError, match="release_threshold_n"):
        build(ForceProcessorParams, {"contact_threshold_n": 0.5, "release_threshold_n": 0.8})
    with pytest.raises(ParameterError, match="tare_samples"):
        build(ForceProcessorParams, {"tare_samples": 0})


def test_with_simulated_plant_hanging_model_force():
    """Plant (bias, 0.02 N noise) -> tare -> gating: F_int = m g in flight, m g - k_EXP (p - h0) in contact."""
    kin = StewartKinematics()
    imap = InterfaceMap(None, kin)
    bias = [0.05, -0.1, 0.4, 0.0, 0.0, 0.0]
    plant = SimPlant(build(SimPlantParams, {"force_bias": bias, "noise_seed": 11}), kin, imap, 1e-3)
    fp = ForceProcessor(ForceProcessorParams(tare_samples=100))
    zs = np.concatenate([np.zeros(200), -0.012 * np.linspace(0, 1, 1500), np.full(600, -0.012)])
    out = plant.measure()
    rows = []
    for z in zs:
        f_int, f_meas, contact = fp.process(out.wrench)
        rows.append((f_int, contact, out.platform_z_m, out.touched))
        b, _ = imap.leg_commands(np.array([z]), np.array([0.0]))
        out = plant.step(b, np.zeros(6))
    f_int, contact, pz, true_contact = (np.array(c) for c in zip(*rows))
    assert fp.bias[2] == pytest.approx(0.4, abs=0.01)
    flight = pz < H0 - 1e-4
    assert not contact[flight].any() and np.all(f_int[flight] == W)
    hold = slice(-300, None)
    assert contact[hold].all() and true_contact[hold].all()
    expected = W - K_EXP * (pz[hold] - H0)
    assert np.mean(f_int[hold] - expected) == pytest.approx(0.0, abs=0.01)
    # detection lags the first touch of the plate by the time the rising platform needs to build up
    # the 0.5 N threshold (0.5 N / k_EXP / 8 mm/s = 7 ms) plus the bouncing of the penalty contact
    td_true = np.argmax(true_contact)
    td = np.argmax(contact)
    assert 0 <= td - td_true <= 12
