"""Servo-hydraulic building benchmark (Silva et al. 2020; seed 000 §12.2): models, per-step objects, runs.

Seed numbers (seed 000 §12.2, case 1, El Centro x 0.4, FFT of the first-floor displacement over
t in (5.2, 36.8) s, one-sided amplitude 2|X|/N): reference amplitude a_hat = 3.39e-4 m, hybrid
amplitude with the sample controller a_min = 4.59e-4 m, frequency f_hat = 3.7 Hz.
Specification numbers: sensor noise RMS 0.016 mm and 2.18 N.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal

from rths_ros.core.models.building import benchmark as brun
from rths_ros.core.models.building import data as bdata
from rths_ros.core.models.building import kernels as bkern
from rths_ros.core.models.building import structure as bld
from rths_ros.core.models.building.tracking_controller import (
    PassThroughController,
    ReferenceController,
    ReferenceControllerParams,
    TrackingController,
)
from rths_ros.params import ParameterError


@pytest.fixture(scope="module")
def nominal():
    return brun.run_benchmark(1, "elcentro")


def _fft_peak(t, s, lo=5.2, hi=36.8):
    w = (t > lo) & (t < hi)
    x = s[w]
    amp = 2.0 * np.abs(np.fft.rfft(x)) / x.size
    f = np.fft.rfftfreq(x.size, t[1] - t[0])
    i = int(np.argmax(amp[1:])) + 1
    return f[i], amp[i], f[1] - f[0]


# ------------------------------------------------------------------------------------- models
def test_plant_state_space_matches_block_transfer_function():
    p = bld.benchmark_params()
    for seed in (None, 3):
        v = bld.plant_values(p, seed)
        a, b = bld.plant_state_space(v)
        c = np.array([[0.0, 0.0, 0.0, 1.0, 0.0]])
        num, den = bld.plant_transfer_function(v)
        w = 2 * np.pi * np.array([0.0, 0.5, 3.7, 20.0, 67.0, 300.0])
        _, h_tf = signal.freqs(num, den, w)
        h_ss = np.array([(c @ np.linalg.solve(1j * wk * np.eye(5) - a, b))[0, 0] for wk in w])
        np.testing.assert_allclose(h_ss, h_tf, rtol=1e-9)
    # the nominal DC gain g a1b0 / (a1b0 + b2 a3 k_e) is within 1 % of unity (the role of g)
    v = bld.plant_values(p)
    a, b = bld.plant_state_space(v)
    dc = v.gain * v.a1_beta0 / (v.a1_beta0 + v.beta2 * v.a3 * v.k_e)
    assert -np.linalg.solve(a, b)[3, 0] == pytest.approx(dc, rel=1e-12)
    assert abs(dc - 1.0) < 0.01


def test_zoh_discretisation_keeps_dc_gain_and_poles():
    p = bld.benchmark_params()
    plant = bld.ServoHydraulicPlant(p)
    dc_d = np.linalg.solve(np.eye(5) - plant.ad, plant.bd)[3, 0]
    dc_c = -np.linalg.solve(plant.a_c, plant.b_c)[3, 0]
    assert dc_d == pytest.approx(dc_c, rel=1e-9)
    zc = np.sort_complex(np.exp(np.linalg.eigvals(plant.a_c) * p.dt_s))
    zd = np.sort_complex(np.linalg.eigvals(plant.ad))
    np.testing.assert_allclose(zd, zc, rtol=1e-9)
    assert plant.stable and plant.spectral_radius < 1.0


def test_cases_data_modal_damping_and_masses():
    masses = {1: 1000.0, 2: 1100.0, 3: 1300.0, 4: 1000.0}
    zetas = {1: 0.05, 2: 0.04, 3: 0.03, 4: 0.03}
    for case in bdata.CASES:
        d = bdata.load_case(case)
        np.testing.assert_allclose(np.diag(d["M"]), masses[case])
        # C is classical: Phi^T C Phi = diag(2 zeta w) with the mass-normalised modes
        w2, phi = np.linalg.eig(np.linalg.solve(d["M"], d["K"]))
        phi = phi / np.sqrt(np.einsum("ij,ik,kj->j", phi, d["M"], phi))
        cm = phi.T @ d["C"] @ phi
        zeta = np.diag(cm) / (2.0 * np.sqrt(w2))
        np.testing.assert_allclose(zeta, zetas[case], rtol=1e-3)
        assert np.max(np.abs(cm - np.diag(np.diag(cm)))) < 1e-3 * np.max(np.abs(cm))
    with pytest.raises(ParameterError, match="case"):
        bld.benchmark_params(case=5)
    with pytest.raises(ParameterError, match="earthquake"):
        bld.benchmark_params(earthquake="northridge")


def test_numerical_substructure_partition():
    p = bld.benchmark_params()
    m = bld.structure_matrices(p)
    assert m["M"][0, 0] - m["M_n"][0, 0] == pytest.approx(29.13)
    assert m["K"][0, 0] - m["K_n"][0, 0] == pytest.approx(1.19e6)
    assert m["C"][0, 0] - m["C_n"][0, 0] == pytest.approx(2 * 0.0097 * math.sqrt(1.19e6 * 29.13))
    np.testing.assert_array_equal((m["K"] - m["K_n"])[1:, :], 0.0)
    # one step from rest with f_e alone: q'' = -M_n^-1 e1 f_e, so q1 after dt is about -f dt^2 / (2 m_n11')
    num = bld.NumericalSubstructure(p)
    y = num.step(1000.0, 0.0)
    acc = -np.linalg.solve(m["M_n"], np.array([1.0, 0.0, 0.0]))[0] * 1000.0
    assert y == pytest.approx(0.5 * acc * p.dt_s ** 2, rel=5e-3)
    num.reset()
    assert num.command == 0.0


# ------------------------------------------------------------------------------------- sensors
def test_sensor_noise_rms_matches_specification():
    p = bld.benchmark_params(quantise=False)
    plant = bld.ServoHydraulicPlant(p)
    meas = np.array([plant.measure() for _ in range(40000)])
    assert np.std(meas[:, 0]) == pytest.approx(0.016e-3, rel=0.03)
    assert np.std(meas[:, 1]) == pytest.approx(2.18, rel=0.03)
    # quantisation: 18 bit over +-3.8 V at 7.89 mm/V and saturation at the range
    q = bkern._quantise(0.1, 7.89e-3, 7.6 / 2 ** 18, 3.8)
    assert q == pytest.approx(3.8 * 7.89e-3)
    lsb_m = 7.6 / 2 ** 18 * 7.89e-3
    x = 1.234567e-3
    assert abs(bkern._quantise(x, 7.89e-3, 7.6 / 2 ** 18, 3.8) - x) <= 0.5 * lsb_m + 1e-18


# ------------------------------------------------------------------------------------- perturbed
def test_perturbed_plants_differ_per_seed_and_are_reproducible():
    p = bld.benchmark_params()
    nominal = bld.plant_values(p)
    assert (nominal.beta1, nominal.beta2, nominal.a3, nominal.k_e) == (425.0, 9.9976e4, 3.3, 1.19e6)
    a, b, a2 = bld.plant_values(p, 1), bld.plant_values(p, 2), bld.plant_values(p, 1)
    assert a == a2
    assert a != b and a != nominal
    draws = np.array([[v.beta1, v.beta2, v.a3, v.k_e] for v in (bld.plant_values(p, s) for s in range(1500))])
    np.testing.assert_allclose(draws.std(axis=0), [3.3, 3.3e3, 1.3, 5e4], rtol=0.08)
    sigma = np.array([3.3, 3.3e3, 1.3, 5e4])
    z = (draws.mean(axis=0) - np.array([425.0, 9.9976e4, 3.3, 1.19e6])) / (sigma / math.sqrt(1500))
    assert np.all(np.abs(z) < 4.0), z


def test_perturbed_runs_reproducible_and_different():
    r1 = brun.run_benchmark(1, "elcentro", perturbed_seed=7, duration_s=12.0)
    r2 = brun.run_benchmark(1, "elcentro", perturbed_seed=7, duration_s=12.0)
    r3 = brun.run_benchmark(1, "elcentro", perturbed_seed=8, duration_s=12.0)
    np.testing.assert_array_equal(r1["x_m"], r2["x_m"])
    assert r1["J"] == r2["J"]
    assert not np.array_equal(r1["x_m"], r3["x_m"])


# ------------------------------------------------------------------------------------- runs
def test_nominal_case1_stable_finite_reproducible(nominal):
    r = nominal
    assert not r["aborted"]
    n = r["t"].size
    assert n == int(round(41.18 * 4096)) + 1
    for key in ("x_m", "f_m", "u", "x", "f"):
        assert np.all(np.isfinite(r[key]))
    js = [r["J"][f"J{i}"] for i in range(1, 10)]
    assert all(np.isfinite(js))
    # bounded response: displacements below the stroke, force below the capacity
    assert r["limits"]["max_abs_stroke_m"] < 7e-3
    assert r["limits"]["max_abs_force_n"] < 8900.0
    # the sample controller tracks: a few ms of delay, ~10 % RMS tracking error
    assert 1.0 < r["J"]["J1"] < 10.0
    assert r["J"]["J2"] < 20.0
    again = brun.run_benchmark(1, "elcentro")
    for key in ("x_m", "f_m", "u", "y"):
        np.testing.assert_array_equal(again[key], r[key])
    assert again["J"] == r["J"]


def test_nominal_case1_matches_seed_fft_numbers(nominal):
    r = nominal
    f_ref, a_ref, df = _fft_peak(r["t"], r["x_r"][:, 0])
    f_hyb, a_hyb, _ = _fft_peak(r["t"], r["y"][:, 0])
    assert a_ref == pytest.approx(3.39e-4, rel=0.02)      # seed: a_hat = 3.39e-4 m
    assert a_hyb == pytest.approx(4.59e-4, rel=0.03)      # seed: a_min = 4.59e-4 m
    assert abs(f_ref - 3.7) <= df and abs(f_hyb - 3.7) <= df   # seed: f_hat = 3.7 Hz


def test_per_step_loop_equals_compiled_loop():
    fast = brun.run_benchmark(2, "kobe", perturbed_seed=4, duration_s=15.0, fast=True)
    slow = brun.run_benchmark(2, "kobe", perturbed_seed=4, duration_s=15.0, fast=False)
    for key in ("u", "u_applied", "x_m", "f_m", "x", "f", "f_act", "y"):
        np.testing.assert_array_equal(fast[key], slow[key])


def test_per_step_objects_follow_the_documented_timing():
    """Drive the three objects by hand, as a ROS graph would, and compare with run_benchmark."""
    p = bld.benchmark_params(4, "morgan", duration_s=8.0)
    ref = brun.run_benchmark(4, "morgan", duration_s=8.0)
    ag = brun.ground_motion(p)
    num, plant, ctrl = bld.NumericalSubstructure(p), bld.ServoHydraulicPlant(p), ReferenceController()
    xm, fm = plant.measure()
    y1 = num.command
    x_m = np.zeros(ag.size)
    for k in range(ag.size):
        x_m[k] = xm
        u = ctrl.step(y1, xm)
        y1 = num.step(fm, ag[k])
        xm, fm = plant.step(u)
    np.testing.assert_array_equal(x_m, ref["x_m"])


def test_all_cases_and_earthquakes_run():
    for case, eq in ((1, "kobe"), (2, "morgan"), (3, "elcentro"), (4, "kobe")):
        r = brun.run_benchmark(case, eq, duration_s=10.0)
        assert r["params"].case == case and r["params"].earthquake == eq
        assert not r["aborted"]
        assert all(np.isfinite(r["J"][f"J{i}"]) for i in range(1, 10))


def test_capacity_exceeded_aborts():
    r = brun.run_benchmark(1, "elcentro", force_capacity_n=500.0)
    assert r["aborted"] and "step" in r["abort_reason"]
    assert r["t"].size < 41 * 4096
    assert "J" not in r
    slow = brun.run_benchmark(1, "elcentro", force_capacity_n=500.0, fast=False, duration_s=r["t"][-1] + 1.0)
    assert slow["aborted"] and slow["t"].size == r["t"].size


# ------------------------------------------------------------------------------------- controllers
def test_reference_controller_is_tustin_of_the_continuous_design():
    c = ReferenceController()
    dt = c.dt_s
    lead = signal.cont2discrete(([50.8, 50.8 * 168.6], [1.0, 8570.0]), dt, method="bilinear")
    pi = signal.cont2discrete(([2.0, 95.0], [1.0, 0.0]), dt, method="bilinear")
    # impulse response of the controller from y1 with x_m = 0 equals lead * PI in series
    n = 50
    imp = np.zeros(n)
    imp[0] = 1.0
    out = np.array([c.step(v, 0.0) for v in imp])
    lead_out = signal.lfilter(np.ravel(lead[0]), lead[1], imp)
    expected = signal.lfilter(np.ravel(pi[0]), pi[1], lead_out)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    c.reset()
    assert c.step(0.0, 0.0) == 0.0


class _UserPI(TrackingController):
    """A user controller written against the interface only: the same PI + lead, own code."""

    def __init__(self, kp=2.0, ki=95.0):
        super().__init__()
        self.kp, self.ki = kp, ki
        self.reset()

    def reset(self):
        self.y_prev = self.r_prev = self.e_prev = self.u_prev = 0.0

    def step(self, desired, measured):
        t = self.dt_s
        c = 2.0 / t
        r = ((50.8 * c + 50.8 * 168.6) * desired + (50.8 * 168.6 - 50.8 * c) * self.y_prev
             - (8570.0 - c) * self.r_prev) / (c + 8570.0)
        e = r - measured
        u = ((self.kp * c + self.ki) * e + (self.ki - self.kp * c) * self.e_prev + c * self.u_prev) / c
        self.y_prev, self.r_prev, self.e_prev, self.u_prev = desired, r, e, u
        return u


def test_user_controller_drops_in():
    ref = brun.run_benchmark(1, "elcentro", duration_s=12.0)
    user = brun.run_benchmark(1, "elcentro", _UserPI(), duration_s=12.0)
    np.testing.assert_allclose(user["x_m"], ref["x_m"], atol=1e-9)
    assert user["J"]["J2"] == pytest.approx(ref["J"]["J2"], rel=1e-4)
    slower = brun.run_benchmark(1, "elcentro", _UserPI(ki=40.0), duration_s=12.0)
    assert slower["J"]["J1"] > ref["J"]["J1"]           # less integral action -> more delay
    with pytest.raises(ParameterError, match="fast"):
        brun.run_benchmark(1, "elcentro", _UserPI(), duration_s=1.0, fast=True)


def test_pass_through_is_worse_than_reference():
    r = brun.run_benchmark(1, "elcentro", PassThroughController(), duration_s=12.0)
    ref = brun.run_benchmark(1, "elcentro", duration_s=12.0)
    assert r["aborted"] or r["J"]["J1"] > 3 * ref["J"]["J1"]
    assert ReferenceControllerParams().kp == 2.0


def test_run_perturbed_tabulates():
    out = brun.run_perturbed(1, runs=3, duration_s=10.0)
    assert out["table"].shape == (3, 9)
    assert out["seeds"] == [1, 2, 3]
    assert len({pv.k_e for pv in out["plants"]}) == 3
    for j in out["criteria"]:
        col = out["table"][:, out["criteria"].index(j)]
        assert out["mean"][j] == pytest.approx(np.mean(col))
        assert out["std"][j] == pytest.approx(np.std(col, ddof=1))
