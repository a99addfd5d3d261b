"""Linear vRTHS test beds of Insam 2022 §11.2-§12.1 (rths_ros.core.methods.linear_vrths): analytic references,
the behaviour of delayed/lagging actuators stated in §11.2, and the equivalent delay of §11.3.1."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from rths_ros.analysis import measures as ms
from rths_ros.core.methods.linear_vrths import (
    SYSTEMS,
    LinearPointRunner,
    LinearVrthsParams,
    reference_frequency_hz,
    reference_solution,
    simulate,
    static_offset_m,
    system,
)
from rths_ros.params import ParameterError, build

DT = 1e-3


@pytest.mark.parametrize("name, f_hz, tol", [
    ("spring_12_1_2", 8.53, 0.005),     # §12.1.2 (thesis: 8.5 Hz)
    ("mass_12_1_3", 5.79, 0.005),       # §12.1.3 (thesis: 5.8 Hz)
    ("system1", 5.53, 0.005),           # §12.1.4 (thesis: 5.53 Hz)
    ("spring_11_2", 8.57, 0.005),       # §11.2.1
    ("mass_11_2", 6.02, 0.005),         # §11.2.2 with the reconstructed m_EXP = 3.46 kg
])
def test_reference_frequencies(name, f_hz, tol):
    assert reference_frequency_hz(system(name)) == pytest.approx(f_hz, abs=tol)


def test_partitioning_of_systems_1_and_2():
    """§12.1.4/§12.1.5: NUM eigenfrequency 6 Hz and EXP eigenfrequency 3 Hz in both systems."""
    for name in ("system1", "system2"):
        p = system(name)
        assert math.sqrt(p.k_num_n_per_m / p.m_num_kg) / (2 * math.pi) == pytest.approx(6.0, abs=0.01)
        assert math.sqrt(p.k_exp_n_per_m / p.m_exp_kg) / (2 * math.pi) == pytest.approx(3.0, abs=0.01)


@pytest.mark.parametrize("overrides", [
    dict(),                                                         # underdamped gravity drop
    dict(d_num_kg_per_s=2000.0),                                    # overdamped
    dict(excitation="step_force", step_force_n=-1.0),
])
def test_reference_solution_solves_the_coupled_ode(overrides):
    p = system("system1", duration_s=2.0, **overrides)
    r = reference_solution(p)
    f0 = -p.m_total * p.g_m_per_s2 if p.excitation == "gravity_drop" else p.step_force_n
    sol = solve_ivp(lambda t, y: [y[1], (f0 - p.d_total * y[1] - p.k_total * y[0]) / p.m_total],
                    (0, 2.0), [0.0, 0.0], t_eval=r["t"], rtol=1e-10, atol=1e-13)
    assert np.max(np.abs(sol.y[0] - r["z"])) < 1e-8 * max(1.0, np.max(np.abs(r["z"])) * 1e3)
    assert np.max(np.abs(sol.y[1] - r["zdot"])) < 1e-6
    assert reference_solution(p, [1e3])["z"][0] == pytest.approx(static_offset_m(p), rel=1e-9)


def test_ideal_actuator_reproduces_the_reference():
    """Without actuator dynamics, latency or delay the sampled loop follows the analytic solution
    (the remaining error is the zero-order hold of the force, < 1 % of the motion)."""
    for name in ("spring_12_1_2", "system1"):
        r = simulate(system(name, actuator="ideal", command_latency_steps=0, duration_s=2.0))
        err = np.max(np.abs(r["z_ach"] - r["z_ref"])) / np.max(np.abs(r["z_ref"]))
        assert err < 0.01, name
        assert not r["unstable"]


def _peak(rec, win=1.0):
    return ms.fft_peak(rec["z_ach"], DT, win)[0]


def test_delay_destabilises_a_spring_and_stabilises_a_mass():
    """§11.2.1/§11.2.2 (step force -1 N, pure actuator delay 5 and 10 ms): the oscillation magnitude
    grows with delay for a spring EXP and shrinks for a mass EXP."""
    spring = [_peak(simulate(system("spring_11_2", actuator="delay", tau_act_steps=n))) for n in (0, 5, 10)]
    mass = [_peak(simulate(system("mass_11_2", actuator="delay", tau_act_steps=n))) for n in (0, 5, 10)]
    assert spring[0] < spring[1] < spring[2]
    assert mass[0] > mass[1] > mass[2]


def test_slow_first_order_actuator_lowers_the_spring_frequency():
    """§11.2.1: T_ACT = 1 ms matches the reference frequency, T_ACT = 30 ms lowers it."""
    def freq(t_act):
        r = simulate(system("spring_11_2", actuator="first_order", t_act_s=t_act, command_latency_steps=0,
                            duration_s=2.0))
        return ms.matrix_pencil(r["z_ach"][:600] - r["z_ach"][-1], DT, n_modes=3)
    f_ref = reference_frequency_hz(system("spring_11_2"))
    fast = [m for m in freq(0.001) if m.frequency_hz > 1][0].frequency_hz
    slow = [m for m in freq(0.03) if m.frequency_hz > 1][0].frequency_hz
    assert fast == pytest.approx(f_ref, rel=0.02)
    assert slow < f_ref - 0.5


def test_tau_fei_adapted_grows_one_to_one_with_tau_add():
    """§11.3.1: tau_add = 2..22 ms on the spring system; the adapted tau_FEI follows tau_min + tau_add
    (slope 1), the standard form is too low and flattens."""
    taus = np.arange(0, 23, 2)
    ad, std = [], []
    for n in taus:
        r = simulate(system("spring_12_1_2", tau_add_steps=int(n)))
        ad.append(ms.fei(r["z_cmd"], r["z_ach"], DT, mode="adapted").tau_s)
        std.append(ms.fei(r["z_cmd"], r["z_ach"], DT, mode="standard").tau_s)
    ad, std = np.array(ad), np.array(std)
    tau_add = taus * DT
    slope_ad = np.polyfit(tau_add[1:], ad[1:], 1)[0]
    assert slope_ad == pytest.approx(1.0, abs=0.1)
    assert np.max(np.abs(ad - (ad[0] + tau_add))) < 2e-3
    slope_lo = np.polyfit(tau_add[:6], std[:6], 1)[0]
    slope_hi = np.polyfit(tau_add[6:], std[6:], 1)[0]
    assert np.all(std < ad)
    assert slope_hi < 0.8 * slope_lo < 0.8
    assert ad[0] == pytest.approx(0.011, abs=0.002)         # thesis tau_min = 0.011 s (adapted)
    assert std[0] == pytest.approx(0.007, abs=0.002)        # thesis 0.007 s (standard)


def test_vff_reduces_the_equivalent_delay():
    """§12.1.2: with VFF the equivalent delay is much smaller."""
    r0 = simulate(system("spring_12_1_2"))
    r1 = simulate(system("spring_12_1_2", vff=True))
    t0 = ms.fei(r0["z_cmd"], r0["z_ach"], DT).tau_s
    t1 = ms.fei(r1["z_cmd"], r1["z_ach"], DT).tau_s
    assert t1 < 0.3 * t0


def test_parameters_are_validated():
    with pytest.raises(ParameterError, match="system: 'nope'"):
        system("nope")
    with pytest.raises(ParameterError, match="leg"):
        system("system1", leg=7)
    with pytest.raises(ParameterError, match="actuator"):
        build(LinearVrthsParams, {"actuator": "hydraulic"})
    with pytest.raises(ParameterError, match="k_NUM \\+ k_EXP > 0"):
        build(LinearVrthsParams, {"k_num_n_per_m": 0.0, "k_exp_n_per_m": 0.0})
    with pytest.raises(ParameterError, match="tau_add_steps"):
        LinearPointRunner("system1")({"tau_add_steps": -1})
    assert set(SYSTEMS) >= {"spring_12_1_2", "mass_12_1_3", "system1", "system2"}


def test_point_runner_reference_record():
    run = LinearPointRunner("system1", duration_s=1.0)
    ref = run.reference()
    assert ref["reference_frequency_hz"] == pytest.approx(5.532, abs=1e-3)
    rec = run({"tau_add_steps": 3})
    assert rec["tau_add_s"] == pytest.approx(0.003)
    assert rec["z_ach"].shape == ref["z_ach"].shape == (1001,)
