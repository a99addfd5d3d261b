"""FIR filtered-x LMS coupling under random excitation (Bartl 2019 §5.5.2).

Seed finding (Figs. 5.24/5.25, no numbers): with N_theta = 10 the synchronisation deviates strongly; N_theta = 100
and 1000 improve it.  Held on the package's setting (rths_ros/core/methods/fxlms_transient.py; sample time T_0/100,
mu = 0.01, 600 periods), with the margins in the asserts: N = 10 leaves more than 50 % of the reference RMS as
gap (no feedforward: 73 %), N = 100 less than 30 %, N = 1000 less than 15 % and less than N = 100; the slope of
y_EXP over y_VIR is within 10 % of 1 for N = 100 and 1000 and off by more than 30 % for N = 10.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import solve

from rths_ros.analysis.fxlms_study import gap_measures
from rths_ros.core.methods.fxlms_transient import FxlmsCase, plant, secondary_path, simulate


@pytest.fixture(scope="module")
def runs():
    return {n: gap_measures(simulate(FxlmsCase(n_theta=n))) for n in (10, 100, 1000)}


def test_filter_length_sets_the_synchronisation(runs):
    assert runs[10]["gap_rms_rel"] > 0.5
    assert runs[100]["gap_rms_rel"] < 0.3
    assert runs[1000]["gap_rms_rel"] < min(0.15, runs[100]["gap_rms_rel"])
    assert abs(runs[10]["slope"] - 1.0) > 0.3
    for n in (100, 1000):
        assert abs(runs[n]["slope"] - 1.0) < 0.1 and runs[n]["correlation"] > 0.95


def test_without_feedforward_the_gap_stays():
    r = gap_measures(simulate(FxlmsCase(n_theta=1, mu=1e-12, periods=100)))
    assert r["gap_rms_rel"] > 0.6


def test_secondary_path_sums_to_the_static_gain():
    """The pulse response of u_FF -> g sums to the discrete DC gain C (I - Ad)^-1 Bd (to 1e-6 relative)."""
    c = FxlmsCase()
    Ad, Bd, C = plant(c)
    h = secondary_path(c)
    dc = (C[1] - C[0]) @ solve(np.eye(4) - Ad, Bd[:, 1])
    assert h.sum() == pytest.approx(dc, rel=1e-6)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="n_theta"):
        FxlmsCase(n_theta=0)
    with pytest.raises(ValueError, match="mu"):
        FxlmsCase(mu=2.5)
