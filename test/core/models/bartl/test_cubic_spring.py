"""The cubic-spring rig twin (rths_ros.core.models.bartl.cubic_spring): spring law and units, peak filter, motor
tracking, saturation, force-sensor bias, and the coupled reference."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rths_ros.core.methods.lumped_mass import fit_harmonic
from rths_ros.core.models.bartl.cubic_spring import (
    CubicSpringParams,
    CubicSpringRig,
    PeakFilter,
    reference_response,
    spring_force,
)

P = CubicSpringParams()


def test_table_6_2_values_in_the_n_per_mm_reading():
    # Table 6.2 prints 1.95 and 0.0014; read as N/mm and N/mm^3 they are 1950 N/m and 1.4e6 N/m^3
    assert P.k_exp_n_per_m == pytest.approx(1.95 * 1e3)
    assert P.k3_exp_n_per_m3 == pytest.approx(0.0014 * 1e9)
    assert (P.m_vir_kg, P.d_vir_n_s_per_m, P.k_vir_n_per_m) == (1.0, 10.0, 1000.0)
    assert P.stroke_m == 0.025
    # at the 25 mm stroke the cubic term is a visible share of the force (tolerance 1e-9 relative)
    lin = P.k_exp_n_per_m * 0.025
    assert spring_force(0.025, P) - lin == pytest.approx(1.4e6 * 0.025 ** 3, rel=1e-9)
    assert 0.3 < (spring_force(0.025, P) - lin) / lin < 0.6
    assert spring_force(-0.01, P) == pytest.approx(-spring_force(0.01, P))


@pytest.mark.parametrize("f_hz", [10.0, 20.0, 30.0])
def test_peak_filter_passes_its_line_only(f_hz):
    dt = 1e-3
    pf = PeakFilter(f_hz, dt, zeta=1.0 / f_hz)
    h = pf.response(f_hz, dt)
    assert abs(h - 1.0) < 1e-9                      # unit gain, zero phase at the line (prewarped)
    assert abs(pf.response(0.01, dt)) < 1e-3         # no static gain: drift is blocked
    assert abs(pf.response(3 * f_hz, dt)) < 0.1
    # time domain: a constant input dies out
    y = [pf(1.0) for _ in range(5000)]
    assert abs(y[-1]) < 1e-6


def test_motor_tracks_a_slow_demand_and_the_force_sensor_has_its_bias():
    p = dataclasses.replace(P, delay_s=0.0, force_noise_n=0.0, pos_noise_m=0.0)
    rig = CubicSpringRig(p)
    n = int(4.0 / p.dt_s)
    t = np.arange(n) * p.dt_s
    xd = 0.005 * np.sin(2 * math.pi * 2.0 * t)
    x = np.zeros(n)
    fm = np.zeros(n)
    for k in range(n):
        x[k], fm[k] = rig.advance(xd[k])
    s = t > 2.0
    ratio = fit_harmonic(t[s], x[s], 2.0) / fit_harmonic(t[s], xd[s], 2.0)
    assert abs(abs(ratio) - 1.0) < 0.05                # position loop: within 5 % at 2 Hz
    assert abs(math.degrees(math.atan2(ratio.imag, ratio.real))) < 20.0
    bias = fm - np.array([spring_force(v, p) for v in x])
    assert np.allclose(bias, p.force_bias_n, atol=1e-9)


def test_demand_saturates_at_the_stroke():
    p = dataclasses.replace(P, pos_noise_m=0.0)
    rig = CubicSpringRig(p)
    for _ in range(2000):
        x, _ = rig.advance(0.05)
    assert rig.saturated
    assert abs(x - 0.025) < 1e-3                       # held at the 25 mm saturation (1 mm tolerance)


def test_delay_holds_back_the_demand():
    p = dataclasses.replace(P, pos_noise_m=0.0, delay_s=0.006)
    rig = CubicSpringRig(p)
    xs = [rig.advance(0.001)[0] for _ in range(6)]
    assert max(abs(v) for v in xs) == 0.0              # nothing moves during the 6 samples of delay
    assert abs(rig.advance(0.001)[0]) > 0.0


def test_reference_is_the_linear_receptance_without_cubic_term():
    p = dataclasses.replace(P, k3_exp_n_per_m3=0.0)
    r = reference_response(20.0, 10.0, p, t_end_s=3.0)
    s = r["t"] > 2.0
    amp = abs(fit_harmonic(r["t"][s], r["x"][s], 20.0))
    w = 2 * math.pi * 20.0
    h = 1.0 / abs(p.k_vir_n_per_m + p.k_exp_n_per_m - p.m_vir_kg * w * w + 1j * w * p.d_vir_n_s_per_m)
    assert amp == pytest.approx(10.0 * h, rel=5e-3)
    # the cubic spring stiffens the system: amplitude differs from the linear one at 10 N / 10 Hz
    lin = reference_response(10.0, 10.0, p, t_end_s=3.0)
    cub = reference_response(10.0, 10.0, P, t_end_s=3.0)
    a_lin = abs(fit_harmonic(lin["t"][s], lin["x"][s], 10.0))
    a_cub = abs(fit_harmonic(cub["t"][s], cub["x"][s], 10.0))
    assert abs(a_cub / a_lin - 1.0) > 0.01
