"""Independent integration (seed 003): multi-rate interface loop, reconciliation, mean-force feedback.

Contact example of Table 25.1 (k_N = 40 N/m, K_P = 500 N/m, c = 6.3 N s/m, m = 1 kg, spring
pre-compressed by 20 mm, unit step force), 6 s runs.  Rebound depth = how far the interface
displacement drops below the 20 mm contact point after a bounce.
"""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.core.independent_integration import (ContactExampleParams, IndependentIntegrationParams,
                                                   LinearEulerModel, euler_contact_amplification, held,
                                                   rebound_depths, rebound_metrics, run_independent,
                                                   simulate_explicit_euler, simulate_independent,
                                                   simulate_reference)
from rths_ros.core.params import ParameterError, build

P = ContactExampleParams()
DURATION = 6.0


@pytest.fixture(scope="module")
def reference():
    return simulate_reference(P, DURATION)


def _errors(ref, t, x):
    xg = held(ref["t"], t, x)
    late = ref["t"] >= 3.0
    return (float(np.sqrt(np.mean((xg - ref["x"]) ** 2))), float(np.sqrt(np.mean((xg - ref["x"])[late] ** 2))),
            rebound_metrics(ref["t"], xg, P.contact_m, (3.0, DURATION))["rebound_depth_m"])


@pytest.mark.parametrize("H", [0.01, 0.02])
@pytest.mark.parametrize("alpha,reference_mode", [(0.0, "hold"), (5e-3, "euler_path"), (1e-3, "euler_path")])
def test_constant_force_equals_explicit_euler(H, alpha, reference_mode):
    # seed 003: with f == f0 throughout the step the scheme equals an explicit-Euler step of the full model
    M = np.diag([2.0, 0.5])
    K = np.array([[300.0, -100.0], [-100.0, 100.0]])
    C = 0.01 * K
    G = np.array([[0.0, 1.0]])
    ip = IndependentIntegrationParams(main_step_s=H, alpha=alpha, reference=reference_mode)
    fext = lambda t: np.array([1.0, 0.0])  # noqa: E731
    const = lambda y, t: np.array([-0.4])  # noqa: E731
    out = run_independent(LinearEulerModel(M, C, K, G), ip, const, fext, 1.0)
    euler = LinearEulerModel(M, C, K, G)
    ref = [euler.G @ euler.x]
    for _ in range(int(round(1.0 / H))):
        euler.step([-0.4], np.array([1.0, 0.0]), H)
        ref.append(euler.G @ euler.x)
    ref = np.array(ref)
    np.testing.assert_allclose(out["y_model"], ref, atol=1e-14)
    # the fast demand lands on the model's Euler position at every model step
    N = ip.substeps
    np.testing.assert_allclose(out["y_phys"][::N], ref, atol=1e-12)
    np.testing.assert_allclose(out["f_fed"], -0.4)


def test_finite_difference_jacobian_is_H_over_m():
    M = np.diag([2.0, 0.5])
    model = LinearEulerModel(M, np.zeros((2, 2)), np.eye(2), G=np.array([[0.0, 1.0]]), v0=[0.1, -0.2])
    J = model.velocity_jacobian([3.0], np.zeros(2), 0.01)
    assert J[0, 0] == pytest.approx(0.01 / 0.5, rel=1e-6)


def test_hold_reference_breaks_equivalence_only_through_alpha():
    # with the literal y_ref = y_0 the reconciliation pulls the demand back towards the step start
    ip = IndependentIntegrationParams(alpha=5e-3, reference="hold")
    model = LinearEulerModel([[1.0]], [[0.0]], [[0.0]], v0=[0.1])
    out = run_independent(model, ip, lambda y, t: np.array([0.0]), lambda t: np.array([0.0]), 0.01)
    assert out["y_model"][-1, 0] == pytest.approx(1e-3)
    assert 0.9e-3 < out["y_phys"][-1, 0] < 1e-3


def test_contact_euler_amplification_matches_derived_values():
    assert euler_contact_amplification(P, 0.01) == pytest.approx(0.9955, abs=2e-4)
    assert euler_contact_amplification(P, 0.02) == pytest.approx(1.044, abs=1e-3)


def test_reference_small_decaying_rebound(reference):
    t, x = reference["t"], reference["x"]
    assert x.max() == pytest.approx(0.02025, abs=5e-5)
    d = rebound_depths(t, x, P.contact_m)
    assert d[0] == pytest.approx(4.2e-3, abs=0.2e-3)
    assert np.all(np.diff(d[:5]) < 0)  # each rebound smaller than the last
    assert x[t > 1.0].min() > 0.0195
    assert rebound_metrics(t, x, P.contact_m, (3.0, DURATION))["rebound_depth_m"] < 1e-5


@pytest.mark.parametrize("H", [0.01, 0.02])
def test_explicit_euler_rebounds_do_not_decay(reference, H):
    e = simulate_explicit_euler(P, H, DURATION)
    d = rebound_depths(e["t"], e["x"], P.contact_m)
    assert d.size >= 9
    assert d[-1] >= 0.95 * d[0]  # no discernible decay (20 ms: growth)
    rms, late_rms, late_depth = _errors(reference, e["t"], e["x"])
    if H == 0.01:
        assert late_depth > 0.015 and rms == pytest.approx(12.3e-3, rel=0.05)
    else:
        assert late_depth > 0.040 and d[-1] > 1.2 * d[0]


@pytest.mark.parametrize("alpha", [1e-3, 5e-3])
@pytest.mark.parametrize("jacobian", ["step", "growing"])
def test_independent_integration_reduces_rebounds(reference, alpha, jacobian):
    H = 0.01
    e = simulate_explicit_euler(P, H, DURATION)
    rms_e, late_e, depth_e = _errors(reference, e["t"], e["x"])
    r = simulate_independent(P, IndependentIntegrationParams(main_step_s=H, alpha=alpha, jacobian=jacobian),
                             DURATION)
    rms, late, depth = _errors(reference, r["t"], r["x"])
    # measured: RMS 2.7-4.8 mm vs 12.3 mm; late (3-6 s) RMS 2.8-5.2 mm vs 12.8 mm; late rebound
    # depth 7-11 mm vs 19 mm
    assert rms < 0.42 * rms_e
    assert late < 0.45 * late_e
    assert depth < 0.6 * depth_e
    # the physical and numerical interface positions stay together (reconciliation)
    xm = held(r["t"], r["t_main"], r["x_model"])
    assert np.max(np.abs(xm - r["x"])) < 5e-3


def test_independent_integration_bounded_at_20ms(reference):
    e = simulate_explicit_euler(P, 0.02, DURATION)
    rms_e, _, depth_e = _errors(reference, e["t"], e["x"])
    for alpha in (1e-3, 5e-3):
        r = simulate_independent(P, IndependentIntegrationParams(main_step_s=0.02, alpha=alpha), DURATION)
        rms, _, depth = _errors(reference, r["t"], r["x"])
        assert rms < 0.4 * rms_e  # measured 6.8 / 10.3 mm vs 29.3 mm
        assert depth < 0.5 * depth_e  # measured 14.4 / 21.5 mm vs 48.3 mm (3-6 s)
        assert r["x"].max() < 0.0215  # no overshoot into the stiff spring


def test_params_checked():
    with pytest.raises(ParameterError, match="fast_step_s"):
        build(IndependentIntegrationParams, {"main_step_s": 0.01, "fast_step_s": 0.0003}, section="ii")
    with pytest.raises(ParameterError, match="jacobian"):
        build(IndependentIntegrationParams, {"jacobian": "exact"})
    assert build(IndependentIntegrationParams, {"main_step_s": 0.02}).substeps == 40
