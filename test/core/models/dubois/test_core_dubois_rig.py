"""The virtual substructured damper rig of du Bois et al. 2010 §4: known-signal shift, open-loop plant, the coupled
test point with its switches and power-discrepancy trip."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from rths_ros.core.methods.prediction import PredictorParams
from rths_ros.core.methods.tdc import ProcessModelParams, SwitchParams, TripParams
from rths_ros.core.models.dubois import (
    IDENTITY,
    ActuatorParams,
    RigParams,
    open_loop_plant,
    prediction_model,
    run_substructured,
    shift_sinusoid,
)

DT = 1e-3
QUIET = replace(RigParams(), actuator=replace(ActuatorParams(), noise_x_m=0.0, noise_f_n=0.0))
TEST_PREDICTOR = PredictorParams(order=6, window_s=0.1, n_samples=20)


@pytest.mark.parametrize("f0, tau", [(3.0, 0.0094), (47.0, 0.0031), (120.0, 0.0075)])
def test_shift_sinusoid_is_exact(f0, tau):
    t = np.arange(700) * DT
    u = 0.7 * np.sin(2 * math.pi * f0 * t + 0.3)
    assert np.allclose(shift_sinusoid(u, DT, tau), 0.7 * np.sin(2 * math.pi * f0 * (t + tau) + 0.3), atol=1e-9)


def test_open_loop_plant_identity_model_is_the_bare_transfer_system():
    u = 0.001 * np.sin(2 * math.pi * 7.0 * np.arange(1500) * DT)
    bare = open_loop_plant(QUIET, "standard")(u, DT)
    ident = open_loop_plant(QUIET, "standard", IDENTITY)(u, DT)
    assert np.array_equal(bare, ident)
    # the damper changes the transfer system (du Bois et al. 2010 §2.2): largest difference > 2 % of the demand
    empty = open_loop_plant(QUIET, "empty")(u, DT)
    assert np.max(np.abs(empty - bare)) > 0.02 * 0.001


def test_hybrid_run_with_a_fast_transfer_system_equals_the_numerical_run():
    """gamma -> 1 (measured force) with a near-ideal transfer system gives the numerical x2 of the run that keeps
    the simulated damper (gamma = 0): RMS difference below 3 % of the x2 amplitude (the remaining lag is the
    one-sample hold of the servo and the loop)."""
    fast = replace(QUIET, actuator=replace(QUIET.actuator, omega0_hz=400.0, delay_s=0.0, tau_p_s=0.0))
    n = 5000
    hyb = run_substructured(fast, IDENTITY, TEST_PREDICTOR, 0.001, 2.0, n * DT,
                            switches=SwitchParams(gamma_initial=1.0, sx_initial=1.0))
    num = run_substructured(fast, IDENTITY, TEST_PREDICTOR, 0.001, 2.0, n * DT,
                            switches=SwitchParams(gamma_initial=0.0, gamma_target=0.0, sx_initial=1.0))
    a = np.max(np.abs(num.x2_num[2000:]))
    assert a > 1e-4
    assert np.sqrt(np.mean((hyb.x2_num[2000:] - num.x2_num[2000:]) ** 2)) < 0.03 * a
    assert np.allclose(hyb.force, hyb.f_phys) and np.allclose(num.force, num.f_model)


def test_displacement_switch_zero_keeps_the_specimen_at_rest():
    r = run_substructured(QUIET, IDENTITY, TEST_PREDICTOR, 0.001, 3.0, 2.0,
                          switches=SwitchParams(sx_initial=0.0, sx_target=0.0, gamma_initial=0.0, gamma_target=0.0))
    assert np.max(np.abs(r.x2_num)) > 1e-4
    assert np.max(np.abs(r.x2_phys_true)) == 0.0 and np.max(np.abs(r.f_phys)) == 0.0


def test_prediction_model_is_the_identity_with_delay():
    m = prediction_model(0.007)
    assert m.kind == "G1D" and m.gain == 1.0 and m.tau_p_s == 0.0 and m.effective_delay_s == 0.007


def test_trip_catches_the_predictor_breakdown_and_hands_over_to_the_model():
    """A delayed model behind the T_s = 0.1 s predictor at 20 Hz: the power discrepancy passes 10 W^2, the trip
    latches and gamma is ramped to 0; the same model at 5 Hz stays below."""
    g1d = ProcessModelParams(kind="G1D", gain=1.03, tau_p_s=0.00385, delay_s=0.0094)
    sw = SwitchParams(gamma_rate_per_s=2.0, sx_rate_per_s=2.0)
    trip = TripParams(threshold_w2=10.0, ramp_time_s=0.05)
    bad = run_substructured(RigParams(), g1d, TEST_PREDICTOR, 0.01, 20.0, 4.0, switches=sw, trip=trip)
    assert bad.tripped and bad.trip_peak_w2 > 10.0
    k = int(round(bad.trip_time_s / DT))
    assert bad.gamma[k + 60:].max() == 0.0
    ok = run_substructured(RigParams(), g1d, TEST_PREDICTOR, 0.001, 5.0, 4.0, switches=sw, trip=trip)
    assert not ok.tripped and ok.trip_peak_w2 < 10.0
