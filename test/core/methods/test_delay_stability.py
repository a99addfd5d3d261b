"""Stability of feedback coupling with delay and with a P-controlled actuator (Bartl 2019 §4.2.2-4.2.3).

Seed numbers (Fig. 4.7 example kappa = 1, phi = 1.5, zeta = 0.1): largest stable delay 0.323 of the coupled period
with the first-order Padé approximation the thesis used (eq. 4.20), 0.253 for the exact delay.  P-loop of Figs.
4.16-4.18: unstable for an intermediate band of kappa_P, about 0.70 < kappa_P < 5.7 (see docs/stability.md for the
upper edge).  Every closed-form limit is checked against the closed-loop poles computed independently (numpy
roots of the Padé cubic; python-control's closed loop of the physical transfer functions; a 12th-order Padé for
the exact delay).
"""
from __future__ import annotations

import math

import control
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rths_ros.core.methods.delay_stability import (
    COUPLINGS,
    DelayCase,
    PLoopCase,
    p_loop_characteristic,
    p_loop_coefficients,
    p_loop_min_zeta_vir,
    p_loop_stable,
    p_loop_unstable_band,
    pade_cubic,
    pade_stable,
    tau_crit_exact,
    tau_max_pade,
)


def test_fig_4_7_example_pade_and_exact_delay_limits():
    c = DelayCase(phi=1.5, kappa=1.0, zeta_vir=0.1, zeta_exp=0.1)
    t_p = tau_max_pade(c)
    assert t_p == pytest.approx(0.323, abs=1e-3)
    assert pade_stable(c, 0.99 * t_p) and not pade_stable(c, 1.01 * t_p)
    t_e = tau_crit_exact(c)
    assert t_e == pytest.approx(0.253, abs=1e-3)


def _exact_delay_stable(c: DelayCase, tau: float) -> bool:
    """Closed loop with the delay e^{-2 pi tau s} by a 12th-order Padé approximation (python-control)."""
    num, den = c.open_loop()
    pn, pd = control.pade(2.0 * math.pi * tau, 12)
    loop = control.tf(num, den) * control.tf(pn, pd)
    return bool(np.all(np.real(control.poles(control.feedback(loop, 1))) < 0.0))


def test_exact_delay_limit_against_a_high_order_pade_closed_loop():
    c = DelayCase(phi=1.5, kappa=1.0, zeta_vir=0.1, zeta_exp=0.1)
    t_e = tau_crit_exact(c)
    assert _exact_delay_stable(c, 0.98 * t_e) and not _exact_delay_stable(c, 1.02 * t_e)


def test_stated_findings_of_the_delay_map():
    # phi < 1: displacement control unstable for any delay (eq. 4.21)
    assert tau_max_pade(DelayCase(0.5, 1.0, 0.1, 0.1)) == 0.0
    assert tau_crit_exact(DelayCase(0.5, 1.0, 0.1, 0.1)) == 0.0
    # undamped: stable for every Padé delay iff kappa > phi (> 1)
    assert math.isinf(tau_max_pade(DelayCase(1.5, 3.0, 0.0, 0.0)))
    assert tau_max_pade(DelayCase(3.0, 1.5, 0.0, 0.0)) == 0.0
    # more damping enlarges the stable delay; virtual damping helps more than experimental damping
    base = tau_max_pade(DelayCase(1.5, 1.0, 0.05, 0.05))
    assert tau_max_pade(DelayCase(1.5, 1.0, 0.1, 0.1)) > base
    assert tau_max_pade(DelayCase(1.5, 1.0, 0.1, 0.05)) > tau_max_pade(DelayCase(1.5, 1.0, 0.05, 0.1))
    # force control mirrors it: phi > 1 unstable for any delay, phi < 1 can be stable (eq. 4.37)
    assert tau_max_pade(DelayCase(1.5, 1.0, 0.1, 0.1, "force")) == 0.0
    assert tau_max_pade(DelayCase(0.5, 1.0, 0.1, 0.1, "force")) > 0.0


def _limit_agrees_with_the_poles(c: DelayCase) -> float:
    """tau_max_pade of ``c`` against the closed loop's roots: 0 is unstable at once, inf stable at every delay
    tried, a finite limit stable just below and unstable just above.  Returns the limit."""
    t = tau_max_pade(c)
    if t == 0.0:
        assert not pade_stable(c, 1e-3)
    elif math.isinf(t):
        assert all(pade_stable(c, x) for x in (1e-3, 0.1, 1.0, 10.0))
    else:
        assert pade_stable(c, 0.995 * t) and not pade_stable(c, 1.005 * t)
    return t


@pytest.mark.parametrize("coupling", COUPLINGS)
@pytest.mark.parametrize("zv,ze", ((0.5, 0.0), (0.1, 0.1), (0.0, 0.3)))
def test_unit_mass_ratio_where_the_cubic_drops_to_a_quadratic(coupling, zv, ze):
    """phi = 1: |H_0(inf)| = 1 and the closed loop's s^3 coefficient is 0 for every delay; the limit then comes from
    the quadratic's coefficients alone (a case the property test below once found: it was reported as 0, unstable
    for any delay, while the poles were stable)."""
    c = DelayCase(1.0, 1.0, zv, ze, coupling)
    assert not np.any(pade_cubic(c, 0.3)[0])
    t = _limit_agrees_with_the_poles(c)
    if zv + ze > 0.0:
        assert t > 0.0


@settings(max_examples=150, deadline=None)
@given(phi=st.floats(0.1, 10.0), kappa=st.floats(0.1, 10.0), zv=st.floats(0.005, 0.5), ze=st.floats(0.0, 0.5),
       coupling=st.sampled_from(("displacement", "force")))
@example(phi=1.0, kappa=1.0, zv=0.5, ze=0.0, coupling="displacement")      # found by this test: phi = 1
def test_pade_limit_matches_the_closed_loop_poles(phi, kappa, zv, ze, coupling):
    _limit_agrees_with_the_poles(DelayCase(phi, kappa, zv, ze, coupling))


def test_p_loop_polynomial_is_the_physical_closed_loop():
    """The quartic of eqs. 4.34-4.36 against python-control's closed loop of C H_TR (H_VIR + H_EXP), phi_EXP = 0."""
    for kp in (0.3, 2.0, 20.0):
        c = PLoopCase(kappa_p=kp)
        s = control.tf("s")
        h_vir = 1 / (s**2 + 2 * c.zeta_vir * s + 1)
        d_a = 2 * c.zeta_act * math.sqrt(c.kappa_act * c.phi_act)
        h_tr = c.kappa_exp / (c.phi_act * s**2 + d_a * s + c.kappa_act + c.kappa_exp)
        loop = kp * h_tr * (h_vir + 1 / c.kappa_exp)
        ref = np.sort_complex(control.poles(control.feedback(1, loop)))
        ours = np.sort_complex(np.roots(p_loop_characteristic(c)))
        assert np.allclose(ours, ref, rtol=1e-6, atol=1e-9)
        a1, a2, a3, a4 = p_loop_coefficients(c)
        assert a1 == pytest.approx(2 * c.zeta_vir + 2 * c.zeta_act * math.sqrt(c.kappa_act / c.phi_act))
        assert a4 == pytest.approx((c.kappa_act + c.kappa_exp + kp * (1 + c.kappa_exp)) / c.phi_act)


def test_p_loop_unstable_band_of_figs_4_16_to_4_18():
    (lo, hi), = p_loop_unstable_band(PLoopCase())
    assert lo == pytest.approx(0.70, abs=0.01)
    assert hi == pytest.approx(5.70, abs=0.01)
    for kp, stable in ((0.69, True), (0.72, False), (5.6, False), (5.72, True), (5.74, True), (20.0, True)):
        poles = np.roots(p_loop_characteristic(PLoopCase(kappa_p=kp)))
        assert bool(np.all(poles.real < 0)) is stable, kp
        assert p_loop_stable(PLoopCase(kappa_p=kp)) is stable, kp


def test_min_virtual_damping_rises_then_falls_with_the_gain():
    """Fig. 4.19's finding (kappa_ACT = 0.1, zeta_ACT = 10, phi_ACT = 0.1; kappa_EXP = 2)."""
    z = [p_loop_min_zeta_vir(PLoopCase(kappa_p=k, kappa_exp=2.0, zeta_act=10.0)) for k in (0.1, 1.0, 10.0, 100.0)]
    assert z[1] > z[0] and z[2] > z[3]
    for k, zm in zip((0.1, 1.0, 10.0, 100.0), z):
        c = PLoopCase(kappa_p=k, kappa_exp=2.0, zeta_act=10.0)
        assert p_loop_stable(c.with_(zeta_vir=zm * 1.01 + 1e-9))
        if zm > 0:
            assert not p_loop_stable(c.with_(zeta_vir=zm * 0.99))


def test_bad_ratios_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="phi"):
        DelayCase(phi=0.0)
    with pytest.raises(ValueError, match="coupling"):
        DelayCase(coupling="acceleration")
    with pytest.raises(ValueError, match="phi_act"):
        PLoopCase(phi_act=-1.0)
