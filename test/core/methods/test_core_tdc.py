"""Transfer-dynamics cancellation (du Bois et al. 2010): process models, fitting, inverse + forward prediction,
force blending and the power-discrepancy trip."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.core.methods.prediction import PredictorParams
from rths_ros.core.methods.tdc import (
    InverseModelFeedforward,
    ProcessModelParams,
    TDCParams,
    TransferDynamicsCancellation,
    blend_force,
)
from rths_ros.core.sysid.qualification import fit_process_model
from rths_ros.params import ParameterError, build

DT = 1e-3
W0 = 2 * math.pi * 25.0
TRUE = {
    "G1": ProcessModelParams(kind="G1", gain=0.95, tau_p_s=0.008, delay_s=0.0),
    "G1D": ProcessModelParams(kind="G1D", gain=0.95, tau_p_s=0.008, delay_s=0.006),
    "G2": ProcessModelParams(kind="G2", gain=1.02 * W0 * W0, zeta=0.45, omega0_rad_s=W0, delay_s=0.0),
    "G2D": ProcessModelParams(kind="G2D", gain=1.02 * W0 * W0, zeta=0.45, omega0_rad_s=W0, delay_s=0.004),
}


def test_model_frequency_response_definition():
    m = TRUE["G2D"]
    assert abs(m.frequency_response([0.0])[0]) == pytest.approx(1.02)  # static gain K / w0^2
    h = m.frequency_response([25.0])[0]
    assert abs(h) == pytest.approx(1.02 / (2 * 0.45), rel=1e-9)
    assert np.angle(h) == pytest.approx(-math.pi / 2 - 2 * math.pi * 25.0 * 0.004)
    m1 = TRUE["G1"]
    assert m1.frequency_response([1 / (2 * math.pi * 0.008)])[0] == pytest.approx(0.95 / (1 + 1j))


@pytest.mark.parametrize("kind", ["G1", "G1D", "G2", "G2D"])
def test_fit_recovers_parameters_from_synthetic_frf(kind):
    # synthetic FRF surface: 4 amplitudes (identical linear plant), 1-80 Hz, 0.5 % complex noise
    rng = np.random.default_rng(11)
    f = np.tile(np.geomspace(1.0, 80.0, 25), 4)
    true = TRUE[kind]
    h = true.frequency_response(f)
    h = h * (1 + 0.005 * (rng.standard_normal(f.size) + 1j * rng.standard_normal(f.size)))
    m = fit_process_model(f, h, kind).model
    assert m.kind == kind
    assert m.static_gain == pytest.approx(true.static_gain, rel=0.01)
    if kind.startswith("G1"):
        assert m.tau_p_s == pytest.approx(true.tau_p_s, rel=0.03)
    else:
        assert m.omega0_rad_s == pytest.approx(true.omega0_rad_s, rel=0.01)
        assert m.zeta == pytest.approx(true.zeta, rel=0.03)
    assert m.effective_delay_s == pytest.approx(true.effective_delay_s, abs=1e-4)


def test_delay_free_model_misfits_a_delayed_plant():
    # du Bois et al. 2010 Fig. 6: adding the delay improves the fit "dramatically"
    f = np.geomspace(1.0, 80.0, 30)
    h = TRUE["G1D"].frequency_response(f)
    e1 = fit_process_model(f, h, "G1").rms_error
    e1d = fit_process_model(f, h, "G1D").rms_error
    assert e1d < 1e-6 and e1 > 100 * max(e1d, 1e-9)


def _track(model: ProcessModelParams, f_hz: float, compensate: bool, predictor=None):
    t = np.arange(0.0, 3.0, DT)
    x = 2e-3 * np.sin(2 * math.pi * f_hz * t)
    if compensate:
        inv = InverseModelFeedforward(model, predictor or PredictorParams(), DT)
        r = np.array([inv.step(v) for v in x])
    else:
        r = x
    y = model.simulate(r, DT)
    sl = t > 1.0
    return float(np.sqrt(np.mean((y - x)[sl] ** 2)))


@pytest.mark.parametrize("kind", ["G1D", "G2D", "G1", "G2"])
@pytest.mark.parametrize("f_hz", [5.0, 10.0])
def test_inverse_with_predictor_cancels_lag_and_delay(kind, f_hz):
    # the plant equals the model (perfect identification); the remaining error is the half-sample
    # lag of the zero-order hold plus prediction/differencing error
    m = TRUE[kind]
    e_unc = _track(m, f_hz, False)
    e_cmp = _track(m, f_hz, True)
    assert e_cmp < e_unc / 10.0, (e_unc, e_cmp)


def test_predictor_setting_limits_compensation_bandwidth():
    # du Bois et al. 2010 Fig. 13/15: with T_s = 0.1 s, n_s = 20 the delayed models break down above ~10 Hz
    m = TRUE["G1D"]
    slow = PredictorParams(order=6, window_s=0.1, n_samples=20, spacing="ts_over_ns")
    fast = PredictorParams(order=6, window_s=0.01, n_samples=10, spacing="ts_over_ns")
    assert _track(m, 5.0, True, slow) < _track(m, 5.0, False) / 10
    assert _track(m, 20.0, True, slow) > _track(m, 20.0, False)  # worse than no compensation
    assert _track(m, 20.0, True, fast) < _track(m, 20.0, False) / 5


def test_force_blending_equation_25():
    assert blend_force(0.0, 10.0, 4.0) == 4.0
    assert blend_force(1.0, 10.0, 4.0) == 10.0
    assert blend_force(0.25, 10.0, 4.0) == pytest.approx(5.5)


def _tdc(**trip):
    trip.setdefault("threshold_w2", 1e-4)
    return TransferDynamicsCancellation(build(TDCParams, {
        "model": {"kind": "G1", "gain": 1.0, "tau_p_s": 0.005},
        "switches": {"gamma_initial": 0.0, "gamma_target": 1.0, "gamma_rate_per_s": 2.0,
                     "sx_initial": 0.0, "sx_target": 1.0, "sx_rate_per_s": 2.0},
        "trip": {"lpf_time_constant_s": 0.02, "ramp_time_s": 0.05, **trip}}, section="tdc"))


def test_switches_engage_and_trip_ramps_gamma_to_zero():
    tdc = _tdc()
    gam, forces = [], []
    n_total = 3000
    trip_at = None
    for k in range(n_total):
        t = k * DT
        v_num = 0.05 * math.cos(2 * math.pi * 2 * t)
        # healthy until 1.5 s, then the physical velocity departs with a growing oscillation
        v_phys = v_num if t < 1.5 else v_num + 0.01 * math.exp(3 * (t - 1.5)) * math.sin(2 * math.pi * 15 * t)
        f = tdc.coupling_force(f_phys=20.0, f_model=10.0)
        tdc.command(x_num=0.0, v_num=v_num, v_phys=v_phys)
        gam.append(tdc.gamma.value)
        forces.append(f)
        if tdc.tripped and trip_at is None:
            trip_at = k
    gam = np.array(gam)
    # engaging: gamma rises at 2 /s and reaches 1 after 0.5 s; s_x likewise
    assert gam[249] == pytest.approx(0.5, abs=0.003) and gam[600] == 1.0
    assert trip_at is not None and 1500 < trip_at < 1700
    # trip: gamma falls from 1 to 0 within the 50 ms ramp, monotonically, and stays there
    after = gam[trip_at:]
    assert np.all(np.diff(after) <= 0)
    assert after[49] == pytest.approx(0.0, abs=1e-9) and after[40] > 0.0
    assert np.all(after[50:] == 0.0)
    assert forces[-1] == 10.0  # the simulated specimen force has taken over


def test_trip_stays_quiet_when_velocities_agree_and_can_be_disabled():
    tdc = _tdc()
    for _k in range(2000):
        tdc.coupling_force(5.0, 5.0)
        tdc.command(0.0, 0.1, 0.1)
    assert not tdc.tripped and tdc.gamma.value == 1.0
    off = _tdc(enabled=False)
    for _k in range(500):
        off.coupling_force(100.0, 0.0)
        off.command(0.0, 1.0, 0.0)
    assert not off.tripped and off.trip.filtered_w2 > 1.0


def test_displacement_switch_scales_demand():
    tdc = _tdc()
    r = [tdc.command(x_num=1e-3, v_num=0.0, v_phys=0.0) for _ in range(200)]
    # s_x ramps at 2 /s; call k sees s_x = 2 k dt, so the demanded position rises by 2e-6 m per
    # step (2 mm/s) and the inverse G1 adds tau_p * 2 mm/s
    assert r[0] == pytest.approx(0.0, abs=1e-12)
    assert tdc.inverse.x_tau == pytest.approx(2 * 199 * DT * 1e-3, rel=1e-9)
    assert tdc.inverse.v_tau == pytest.approx(2e-3, rel=1e-6)
    assert r[-1] == pytest.approx(2 * 199 * DT * 1e-3 + 0.005 * 2e-3, rel=1e-6)
    with pytest.raises(ParameterError, match="kind"):
        build(TDCParams, {"model": {"kind": "G3"}}, section="tdc")


# ------------------------------------------------------------------------------------------------
# force switch and trip in the loop of the contact test (numerical.force_blend)
# ------------------------------------------------------------------------------------------------

def _traced_run(name, sets=()):
    """Virtual run (the graph's core objects) with gamma, LPF(dP^2) and the fed force of every step."""
    from rths_ros.app import scenario as scn
    from rths_ros.app.vrths import VirtualRun
    vr = VirtualRun(scn.load(name, list(sets)))
    log = []
    if vr.blend is not None:
        force = vr.blend.force

        def traced(*a):
            f = force(*a)
            b = vr.blend
            log.append((b.gamma_used, b.trip.filtered_w2, f, b.f_model, a[0]))
            return f
        vr.blend.force = traced
    return vr, vr.run(), np.array(log)


def test_specimen_model_force_of_the_blend():
    """f_n of the quasi-static specimen model in the force processor's units: m_EXP g in flight, m_EXP g -
    k_EXP (z - h0) once the commanded position passes the gap h0; f = gamma f_p + (1 - gamma) f_n."""
    from rths_ros.core.methods.tdc import ForceBlend, ForceBlendParams
    from rths_ros.core.models.contact1d.model import Contact1DParams
    c = Contact1DParams()
    b = ForceBlend(ForceBlendParams(enabled=True, gamma_initial=0.5, gamma_rate_per_s=0.0), c, c.dt_s)
    w = c.m_exp_kg * c.g_m_per_s2
    assert b.force(3.0, 0.0, 0.0, 0.0) == pytest.approx(0.5 * 3.0 + 0.5 * w)      # step 0: rest
    for z in (0.004, 0.009, 0.012, 0.014):
        b.force(w, z, 0.0, 0.0)
        n = c.k_exp_n_per_m * max(0.0, z - c.h0_m)
        assert b.f_model == pytest.approx(w - n, abs=1e-9)
    with pytest.raises(ParameterError, match=r"numerical\.force_blend: not allowed with numerical\.model = 'vpp' "
                                             r".* belongs to family interface_1d"):
        from rths_ros.app import scenario as scn
        scn.load("gait_vpp", ["numerical.force_blend.enabled=true"])


def test_force_blend_changes_nothing_while_the_loop_is_stable():
    """contact_1d (d_NUM = 200 kg/s) with the scenario contact_1d_trip's switch and trip: gamma engages to 1
    before the touch-down (f_p = f_n = m_EXP g in flight), LPF(dP^2) peaks at 6e-4 W^2, 8x below the threshold,
    the trip stays quiet and the run is contact_1d's."""
    from rths_ros.app import scenario as scn
    from rths_ros.app.vrths import run_virtual
    trip = scn.load("contact_1d_trip").numerical.force_blend
    sets = ["numerical.force_blend.enabled=true", f"numerical.force_blend.trip.threshold_w2={trip.trip.threshold_w2}"]
    vr, rec, log = _traced_run("contact_1d", sets)
    assert not vr.blend.tripped and log[:, 1].max() < 0.2 * trip.trip.threshold_w2
    assert np.all(log[500:, 0] == 1.0)
    ref = run_virtual(scn.load("contact_1d"))
    np.testing.assert_allclose(rec["z_cmd"], ref["z_cmd"], rtol=0, atol=1e-9 * np.max(np.abs(ref["z_cmd"])))


def test_trip_ramps_gamma_to_zero_in_the_loop():
    """contact_1d_trip (d_NUM = 50 kg/s: the contact oscillation grows with the platform lag).  gamma engages at
    2 /s; after the touch-down (1.22 s) the power discrepancy grows until LPF(dP^2) passes 0.005 W^2 at 1.514 s;
    the latched trip ramps gamma from 1 to 0 in 50 ms, monotonically, and it stays 0: from then on the numerical
    part runs on the specimen model's force.  Without the switch the run oscillates with 6 mm (e_track_rel 0.110);
    with it the oscillation is cut at 1.2 mm and e_track_rel is 0.032."""
    from rths_ros.analysis.metrics import compute_metrics
    from rths_ros.app import scenario as scn
    from rths_ros.app.vrths import run_virtual
    from rths_ros.core.models.contact1d.model import reference_solution
    vr, rec, log = _traced_run("contact_1d_trip")
    s = vr.s
    p = s.numerical.force_blend
    dt = s.loop.dt_s
    td = reference_solution(s.numerical.contact_1d, s.loop.duration_s)["touchdown_s"]
    k_trip = vr.blend.trip.trip_step
    assert vr.blend.tripped and td < k_trip * dt < td + 0.5
    gamma = log[:, 0]
    k_on = int(round(1.0 / (p.gamma_rate_per_s * dt)))
    np.testing.assert_allclose(gamma[:k_on + 1], np.minimum(1.0, np.arange(k_on + 1) * p.gamma_rate_per_s * dt),
                               atol=1e-12)
    assert np.all(gamma[k_on:k_trip + 1] == 1.0) and log[k_trip, 1] > p.trip.threshold_w2 >= log[k_trip - 1, 1]
    n_ramp = int(round(p.trip.ramp_time_s / dt))
    after = gamma[k_trip + 1:]
    assert np.all(np.diff(after) <= 0.0) and 0.0 < after[n_ramp - 2] and np.all(after[n_ramp:] == 0.0)
    np.testing.assert_array_equal(log[k_trip + 1 + n_ramp:, 2], log[k_trip + 1 + n_ramp:, 3])    # f = f_n
    free = run_virtual(scn.load("contact_1d_trip", ["numerical.force_blend.enabled=false"]))
    m = compute_metrics(rec, None, dt)
    m_free = compute_metrics(free, None, dt)
    late = np.arange(rec["z_cmd"].size) * dt > k_trip * dt + 0.5
    assert np.max(np.abs(rec["z_cmd"] - rec["z_ach"])[late]) < 0.2 * np.max(np.abs(free["z_cmd"] - free["z_ach"]))
    assert m["e_track_rel"] < 0.35 * m_free["e_track_rel"], (m["e_track_rel"], m_free["e_track_rel"])
