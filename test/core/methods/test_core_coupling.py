"""Command shaping in the platform commander (forward prediction, transfer-dynamics cancellation, du Bois et al. 2010) and
its effect on the contact test (in-process virtual run = the graph's core objects)."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.analysis.metrics import compute_metrics
from rths_ros.analysis.twin_qualification import fit_unit_gain
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual
from rths_ros.core.methods.coupling import CommandShaper, CouplingParams, PredictionStageParams, TdcStageParams
from rths_ros.core.methods.tdc import ProcessModelParams
from rths_ros.params import ParameterError

C = "platform.commander.coupling"


def _e_track(s):
    rec = run_virtual(s)
    assert not rec["aborted"], rec["abort_reason"]
    return compute_metrics(rec, None, s.loop.dt_s)


def test_off_by_default_and_disabled_parameters_change_nothing():
    s = scn.load("contact_1d")
    assert not s.platform.commander.coupling.active
    a = run_virtual(s)
    b = run_virtual(scn.load("contact_1d", [f"{C}.prediction.horizon_s=0.05", f"{C}.tdc.model.kind=G2"]))
    for key in ("z_cmd", "z_ach", "f_int", "b_cmd"):
        assert np.array_equal(a[key], b[key]), key


def test_prediction_stage_is_exact_for_a_quadratic():
    dt, tau = 1e-3, 0.05
    sh = CommandShaper(CouplingParams(prediction=PredictionStageParams(enabled=True, order=2, window_s=0.02,
                                                                       n_samples=21, horizon_s=tau)), 1)
    x = lambda t: 0.3 * t * t - 0.02 * t + 0.001
    v = lambda t: 0.6 * t - 0.02
    for k in range(60):
        t = k * dt
        q, qd = sh.shape(np.array([x(t)]), np.array([v(t)]))
    assert q[0] == pytest.approx(x(t + tau), rel=1e-9, abs=1e-12)
    assert qd[0] == pytest.approx(v(t + tau), rel=1e-9)
    sh.reset()
    q, _ = sh.shape(np.array([0.004]), np.array([0.0]))   # start from rest: the history is the first sample
    assert q[0] == pytest.approx(0.004, rel=1e-12)


@pytest.mark.parametrize("model", [ProcessModelParams(kind="G1", gain=1.0, tau_p_s=0.05),
                                   ProcessModelParams(kind="G2", gain=26.0 ** 2, zeta=0.7, omega0_rad_s=26.0)])
def test_tdc_stage_through_its_own_model_tracks_the_demand(model):
    """Shaped command through a plant equal to the model: RMS error at least 10x below the raw command's."""
    dt = 1e-3
    sh = CommandShaper(CouplingParams(tdc=TdcStageParams(enabled=True, model=model)), 1)
    t = np.arange(4000) * dt
    x = 0.005 * (1.0 - np.cos(2 * np.pi * 0.5 * t)) + 0.001 * np.sin(2 * np.pi * 3.0 * t)
    xd = 0.005 * np.pi * np.sin(2 * np.pi * 0.5 * t) + 0.006 * np.pi * np.cos(2 * np.pi * 3.0 * t)
    r = np.zeros_like(x)
    rd = np.zeros_like(x)
    for k in range(t.size):
        q, qd = sh.shape(x[k:k + 1], xd[k:k + 1])
        r[k], rd[k] = q[0], qd[0]
    # the loop applies the command of step k over [t_k, t_k+1] and measures at t_k+1: one step of transport
    y_raw = model.simulate(x, dt)
    y_tdc = model.simulate(r, dt)
    e_raw = np.sqrt(np.mean((y_raw[1000:-1] - x[1001:]) ** 2))
    e_tdc = np.sqrt(np.mean((y_tdc[1000:-1] - x[1001:]) ** 2))
    assert e_tdc < 0.1 * e_raw, (e_tdc, e_raw)
    # the velocity command is the rate of the shaped command
    assert np.sqrt(np.mean((rd[1000:] - np.gradient(r, dt)[1000:]) ** 2)) < 0.05 * np.sqrt(np.mean(rd[1000:] ** 2))


def test_both_stages_and_a_wrong_period_are_refused():
    with pytest.raises(ParameterError, match="together"):
        scn.load("contact_1d", [f"{C}.prediction.enabled=true", f"{C}.tdc.enabled=true"])
    with pytest.raises(ParameterError, match="coupling.dt_s"):
        scn.load("contact_1d", [f"{C}.dt_s=0.002"])
    with pytest.raises(ParameterError, match="n_samples"):
        scn.load("contact_1d", [f"{C}.prediction.order=4", f"{C}.prediction.n_samples=3"])


def test_prediction_and_tdc_reduce_the_tracking_error_of_the_contact_test():
    """d_NUM = 200 kg/s, PPI1, feedback only: e_track_rel 0.0302; prediction (50 ms) 0.0019; TDC (G2 fitted on
    the twin) 0.0020.  Required: each below 0.15x feedback only, and stable."""
    base = _e_track(scn.load("contact_1d"))
    pred = _e_track(scn.load("contact_1d_prediction"))
    tdc = _e_track(scn.load("contact_1d_tdc"))
    assert base["stable"] and pred["stable"] and tdc["stable"]
    assert 0.02 < base["e_track_rel"] < 0.04
    assert pred["e_track_rel"] < 0.15 * base["e_track_rel"], (pred["e_track_rel"], base["e_track_rel"])
    assert tdc["e_track_rel"] < 0.15 * base["e_track_rel"], (tdc["e_track_rel"], base["e_track_rel"])
    # a horizon far from the transfer system's lag helps much less (tuning matters)
    short = _e_track(scn.load("contact_1d_prediction", [f"{C}.prediction.horizon_s=0.01"]))
    assert short["e_track_rel"] > 5 * pred["e_track_rel"]


def test_delayed_model_inverse_with_forward_prediction_on_a_delayed_transfer_system():
    """contact_1d_tdc_delay: the leg commands arrive 10 ms late.  Feedback only 0.0360; TDC with the G2D model (the
    twin's unit-gain G2 plus the 10 ms delay, predicted by order 2 over 20 ms) 0.0020, the same as TDC on the
    delay-free system (0.0020); the same inverse without the delay (G2: no prediction) 0.0052.  The source's
    predictor setting (order 6, 10 samples over 10 ms) amplifies the contact transient beyond the leg speed limit
    (du Bois et al. 2010: delayed models break down at higher frequencies)."""
    s = scn.load("contact_1d_tdc_delay")
    assert s.platform.commander.coupling.tdc.model.kind == "G2D" and s.sim_plant.command_delay_steps == 10
    base = _e_track(scn.load("contact_1d_tdc_delay", [f"{C}.tdc.enabled=false"]))["e_track_rel"]
    tdc = _e_track(s)
    no_pred = _e_track(scn.load("contact_1d_tdc_delay", [f"{C}.tdc.model.kind=G2"]))["e_track_rel"]
    free = _e_track(scn.load("contact_1d_tdc"))["e_track_rel"]
    assert tdc["stable"]
    assert base > _e_track(scn.load("contact_1d"))["e_track_rel"]          # the delay costs tracking
    assert tdc["e_track_rel"] < 0.1 * base, (tdc["e_track_rel"], base)
    assert tdc["e_track_rel"] < 0.5 * no_pred, (tdc["e_track_rel"], no_pred)
    assert tdc["e_track_rel"] < 1.2 * free, (tdc["e_track_rel"], free)
    seed = run_virtual(scn.load("contact_1d_tdc_delay", [f"{C}.tdc.predictor.order=6",
                                                         f"{C}.tdc.predictor.window_s=0.01",
                                                         f"{C}.tdc.predictor.n_samples=10"]))
    assert seed["aborted"] and "leg speed limit" in seed["abort_reason"]


def test_a_model_with_a_long_predicted_delay_is_stopped_by_the_leg_speed_limit():
    """The demand-weighted G1D fit (25 ms delay, order-6 predictor) amplifies the contact transient; the
    commander's limit check aborts the run instead of commanding it."""
    s = scn.load("contact_1d", [f"{C}.tdc.enabled=true", f"{C}.tdc.model.kind=G1D", f"{C}.tdc.model.gain=1",
                                f"{C}.tdc.model.tau_p_s=0.028", f"{C}.tdc.model.delay_s=0.0249"])
    rec = run_virtual(s)
    assert rec["aborted"] and "leg speed limit" in rec["abort_reason"], rec["abort_reason"]


@pytest.mark.parametrize("true", [ProcessModelParams(kind="G1D", gain=1.0, tau_p_s=0.04, delay_s=0.004),
                                  ProcessModelParams(kind="G2", gain=60.0 ** 2, zeta=0.8, omega0_rad_s=60.0)])
def test_unit_gain_fit_recovers_a_unit_gain_model(true):
    f = np.geomspace(0.2, 40.0, 14)
    rng = np.random.default_rng(3)
    h = true.frequency_response(f) * (1.0 + 0.003 * (rng.standard_normal(f.size) + 1j * rng.standard_normal(f.size)))
    fit = fit_unit_gain(f, h, true.kind).model
    assert fit.static_gain == pytest.approx(1.0, abs=1e-12)
    if true.order == 1:
        assert fit.tau_p_s == pytest.approx(true.tau_p_s, rel=0.03)
        assert fit.delay_s == pytest.approx(true.delay_s, abs=2e-4)
    else:
        assert fit.omega0_rad_s == pytest.approx(true.omega0_rad_s, rel=0.02)
        assert fit.zeta == pytest.approx(true.zeta, rel=0.03)


def test_coupling_parameters_reach_the_commander():
    from rths_ros.app import factory
    s = scn.load("contact_1d_tdc")
    _, cmd = factory.build_platform(s)
    assert cmd.shaper is not None and cmd.params.coupling.tdc.model.kind == "G2"
    _, plain = factory.build_platform(scn.load("contact_1d"))
    assert plain.shaper is None
