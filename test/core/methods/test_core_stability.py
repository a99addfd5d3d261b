"""Phase margin / critical delay of the contact-phase open loop (Insam 2022 §4.1.2)."""
import cmath
import math

import numpy as np
import pytest

from rths_ros.core.methods.stability import contact_open_loop, contact_phase_margin, gain_crossovers, phase_margin
from rths_ros.core.models.contact1d.model import Contact1DParams


@pytest.mark.parametrize("d, pm_deg, w_pm, tau", [
    (200.0, 62.08, 38.216, 0.0284),    # thesis: 62 deg, 0.0284 s
    (50.0, 14.63, 43.698, 0.0058),     # thesis: 0.0058 s
])
def test_contact_phase_margin_matches_thesis(d, pm_deg, w_pm, tau):
    r = contact_phase_margin(Contact1DParams(d_num_kg_per_s=d))
    assert round(r["phase_margin_deg"], 2) == pm_deg
    assert r["crossover_rad_s"] == pytest.approx(w_pm, abs=1e-3)
    assert r["crossover_hz"] == pytest.approx(w_pm / (2 * math.pi), abs=1e-3)
    assert round(r["tau_crit_s"], 4) == tau
    assert r["tau_crit_s"] == pytest.approx(2 * math.pi * r["phase_margin_deg"] / (360 * r["crossover_rad_s"]))


def test_thesis_rounded_margin_for_robust_set():
    assert round(contact_phase_margin(Contact1DParams(d_num_kg_per_s=200.0))["phase_margin_deg"]) == 62


@pytest.mark.parametrize("d, pm_deg, tau", [(150.0, 45.18, 0.0193), (5.0, 1.46, 0.00058)])
def test_other_damping_values_of_part_one(d, pm_deg, tau):
    r = contact_phase_margin(Contact1DParams(d_num_kg_per_s=d))
    assert round(r["phase_margin_deg"], 2) == pm_deg
    assert r["tau_crit_s"] == pytest.approx(tau, rel=0.01)


def test_low_frequency_crossover_is_listed_but_not_relevant():
    r = contact_phase_margin(Contact1DParams(d_num_kg_per_s=200.0))
    assert len(r["crossovers"]) == 2
    low, high = r["crossovers"]
    assert 1.8 < low["crossover_hz"] < 2.3 and low["phase_margin_deg"] > 160.0
    assert high["crossover_rad_s"] == r["crossover_rad_s"]


@pytest.mark.parametrize("d", [50.0, 200.0])
def test_critical_delay_puts_a_closed_loop_root_on_the_imaginary_axis(d):
    """m s^2 + d s + k_NUM + k_EXP e^{-s tau_crit} vanishes at s = j w_pm."""
    p = Contact1DParams(d_num_kg_per_s=d)
    r = contact_phase_margin(p)
    s = 1j * r["crossover_rad_s"]
    char = p.m_num_kg * s ** 2 + p.d_num_kg_per_s * s + p.k_num_n_per_m \
        + p.k_exp_n_per_m * cmath.exp(-s * r["tau_crit_s"])
    assert abs(char) < 1e-6 * p.k_exp_n_per_m


def test_contact_open_loop_polynomials():
    num, den = contact_open_loop(Contact1DParams(d_num_kg_per_s=50.0))
    np.testing.assert_array_equal(num, [8650.0])
    np.testing.assert_array_equal(den, [9.62, 50.0, 1e4])


def test_generic_phase_margin():
    r = phase_margin([1.0], [1.0, 0.0])                  # integrator: 90 deg at 1 rad/s
    assert r["phase_margin_deg"] == pytest.approx(90.0)
    assert r["crossover_rad_s"] == pytest.approx(1.0)
    assert r["tau_crit_s"] == pytest.approx(math.pi / 2)
    r = phase_margin([1.0], [1.0, 1.0, 0.0])             # 1/(s(s+1))
    w = math.sqrt((math.sqrt(5.0) - 1.0) / 2.0)
    assert r["crossover_rad_s"] == pytest.approx(w)
    assert r["phase_margin_deg"] == pytest.approx(180.0 - 90.0 - math.degrees(math.atan(w)))
    r = phase_margin([0.5], [1.0, 1.0])                  # |L| < 1 everywhere
    assert r["phase_margin_deg"] == math.inf and r["crossovers"] == []


def test_negative_damping_has_negative_margin():
    r = contact_phase_margin(Contact1DParams(d_num_kg_per_s=-10.0))
    assert r["phase_margin_deg"] < 0.0 and r["tau_crit_s"] == 0.0


def test_gain_crossovers_solve_unit_magnitude():
    num, den = contact_open_loop(Contact1DParams(d_num_kg_per_s=50.0))
    for w in gain_crossovers(num, den):
        assert abs(np.polyval(num, 1j * w) / np.polyval(den, 1j * w)) == pytest.approx(1.0, abs=1e-12)
