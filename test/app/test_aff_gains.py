"""AdaptiveFilter ``gains``: every adaptive filter the factory builds says which of its adaptation gains change
while it runs: [mu_LMS, nu_LMS] of a harmonic LMS adaptation (the power-flow supervisor lowers them), nothing for
QR-RLS and FIR filters.  The aff_learner publishes them with the coefficients (the graph tests check the values in
the bag against the in-process repeat)."""
from __future__ import annotations

import numpy as np

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.core.learning.aff.fxlms import FxlmsAff


def test_lms_filters_report_mu_and_nu_and_the_others_nothing():
    assert factory.build_aff(scn.load("coupled_beams_aff")).gains == ()                  # QR-RLS, two DoF
    aff = factory.build_aff(scn.load("cubic_spring_aff_supervised"))
    assert aff.gains == (0.1, 1.0)                                                       # mu_init, no leakage yet
    fir = factory.build_aff(scn.load("contact_1d", ["aff.enabled=true"]))
    assert isinstance(fir, FxlmsAff) and fir.gains == ()
    legs = factory.build_aff(scn.load("contact_1d_harmonic_aff_supervised"))
    assert len(legs.gains) == 2 and legs.gains[1] == 1.0


def test_the_supervisor_lowers_the_published_mu():
    """The cubic rig's pure LMS AFF under the supervisor: a power inflow below P_lim after the identification
    (lambda_VIR g' = -1000 g'^2 W) makes it lower mu_LMS and nu_LMS, and the gains follow the filter's state."""
    s = scn.load("cubic_spring_aff_supervised")
    aff = factory.build_aff(s)
    dt = s.loop.dt_s
    g_prev = 0.0
    for k in range(1500):             # 1 s of identification, then 0.5 s of adaptation
        g = 1e-3 * np.sin(2 * np.pi * 10.0 * k * dt)
        aff.adapt_interface((0.0,), (g,), (1000.0 * (g - g_prev) / dt,), step=k)
        g_prev = g
        if k == 900:
            assert aff.gains == (0.1, 1.0)        # identifying: the supervisor waits
    mu, nu = aff.gains
    assert (mu, nu) == (aff.filt.mu_lms, aff.filt.nu_lms)
    assert mu < 0.05 and nu < 1.0
