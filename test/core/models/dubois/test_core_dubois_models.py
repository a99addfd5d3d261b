"""The ROS-free models of the du Bois et al. 2010 damper rig: modal RK4 substructure (eqs. 10-15), hydraulic and Maxwell
dampers (eqs. 16-17, 20-23), hybrid model (eq. 24) and the transfer system built from the process models."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from rths_ros.core.methods.tdc import ProcessModelParams
from rths_ros.core.models.dubois import (
    Actuator,
    ActuatorParams,
    ChainParams,
    HybridModel,
    HydraulicDamper,
    HydraulicDamperParams,
    MaxwellDamper,
    MaxwellParams,
    ModalSubstructure,
    RigParams,
    StreamingProcessModel,
    chain_matrices,
    maxwell_from_hydraulic,
    orifice_flow,
    servo_models,
)
from rths_ros.core.sysid.qualification import fourier_coefficient

DT = 1e-3


def _steady_ratio(y, x, f, dt, n_rec):
    return fourier_coefficient(y[-n_rec:], f, dt) / fourier_coefficient(x[-n_rec:], f, dt)


def test_modes_are_mass_normalised_and_proportionally_damped():
    c = ChainParams()
    sub = ModalSubstructure.from_chain(c, DT)
    assert np.allclose(sub.phi.T @ sub.m @ sub.phi, np.eye(2), atol=1e-12)
    assert np.allclose(sub.phi.T @ sub.k @ sub.phi, np.diag(sub.lam), rtol=1e-10)
    assert np.allclose(sub.phi.T @ sub.c @ sub.phi, np.diag(sub.modal_damping), rtol=1e-10, atol=1e-9)
    # eq. (14): modal damping alpha + beta lambda, i.e. zeta_i = beta w_i / 2 for the chain
    assert np.allclose(sub.damping_ratios, c.beta_s * np.sqrt(sub.lam) / 2.0, rtol=1e-12)


def test_static_base_displacement_moves_both_masses_equally():
    # eq. (15): a held base displacement x0 gives x1 = x2 = x0 at rest (no damper)
    sub = ModalSubstructure.from_chain(ChainParams(beta_s=0.02), DT)
    for _ in range(20000):
        sub.step(np.zeros(2), lambda t: (0.001, 0.0, 0.0))
    assert np.allclose(sub.displacement(), [0.001, 0.001], rtol=1e-4)


def test_modal_rk4_with_maxwell_damper_matches_eq24():
    """The modal substructure driven by x0 with the linear damper's force fed back at DOF 2 gives the steady
    state of eq. (24): gain within 0.5 %, phase within 1 deg."""
    rig = RigParams()
    hyb = HybridModel(rig.chain, rig.maxwell)
    for f in (2.0, 6.3, 12.0):
        sub = ModalSubstructure.from_chain(rig.chain, DT)
        dmp = MaxwellDamper(rig.maxwell, DT)
        w = 2 * math.pi * f
        n_rec = int(round(20 / f / DT))
        n = int(round(12.0 / DT)) + n_rec
        x0, x2 = np.zeros(n), np.zeros(n)
        for k in range(n):
            sub.step(np.array([0.0, -dmp.force_n]), lambda t, w=w: (math.sin(w * t), w * math.cos(w * t),
                                                                   -w * w * math.sin(w * t)))
            x2[k] = sub.displacement(1)[0]
            dmp.step(x2[k])
            x0[k] = math.sin(w * (k + 1) * DT)
        h = _steady_ratio(x2, x0, f, DT, n_rec)
        ref = hyb.x2_over_x0([f])[0]
        assert abs(h) == pytest.approx(abs(ref), rel=5e-3), f
        assert math.degrees(abs(np.angle(h / ref))) < 1.0, f


def test_eq24_solves_the_equations_of_motion():
    """x1, x2 of eq. (24) satisfy eqs. (18), (19) and (23) (solved directly) to 1e-9."""
    rig = RigParams()
    c, mx = rig.chain, rig.maxwell
    hyb = HybridModel(c, mx)
    for f in (0.5, 3.0, 6.3, 30.0):
        s = 2j * math.pi * f
        zd = mx.c_d_n_s_per_m * mx.k_d_n_per_m * s / (mx.c_d_n_s_per_m * s + mx.k_d_n_per_m)
        a = np.array([[c.m1_kg * s * s + (c.c1 + c.c2) * s + c.k1_n_per_m + c.k2_n_per_m, -(c.c2 * s + c.k2_n_per_m)],
                      [-(c.c2 * s + c.k2_n_per_m), c.m2_kg * s * s + c.c2 * s + c.k2_n_per_m + zd]])
        x = np.linalg.solve(a, np.array([c.c1 * s + c.k1_n_per_m, 0.0]))
        assert hyb.x2_over_x0([f])[0] == pytest.approx(x[1], rel=1e-9)
        assert hyb.x1_over_x0([f])[0] == pytest.approx(x[0], rel=1e-9)


def test_hybrid_poles_of_the_default_rig():
    """du Bois et al. 2010 §4.3/4.5: five poles (two underdamped pairs, one real), second natural frequency 6.3 Hz
    (tolerance 0.05 Hz), both modes below 10 Hz."""
    poles = HybridModel(RigParams().chain, RigParams().maxwell).poles()
    modes = [p for p in poles if p.f_d_hz > 0]
    real = [p for p in poles if p.f_d_hz == 0]
    assert len(modes) == 2 and len(real) == 1
    assert modes[1].f_d_hz == pytest.approx(6.3, abs=0.05)
    assert all(p.f_d_hz < 10.0 for p in modes)
    assert all(0.0 < p.zeta < 1.0 for p in modes)
    assert real[0].s.real < 0 and real[0].zeta == pytest.approx(1.0)


def test_default_maxwell_is_the_hydraulic_damper_at_mid_range():
    """The linear damper of the hybrid model is derived from the hydraulic damper at 0.04 m/s (documented
    choice): c_d to 1e-4 relative, k_d = 4 B A^2 / V0 exactly."""
    d = HydraulicDamperParams()
    m = maxwell_from_hydraulic(d, 0.04)
    assert m.k_d_n_per_m == pytest.approx(MaxwellParams().k_d_n_per_m, rel=1e-12)
    assert m.c_d_n_s_per_m == pytest.approx(MaxwellParams().c_d_n_s_per_m, rel=1e-4)


def test_orifice_flow_solves_laminar_turbulent_law():
    d = HydraulicDamperParams()
    dp = np.array([-5e6, -1e5, -1.0, 0.0, 1.0, 3e5, 8e6])
    q = orifice_flow(dp, d.c1_pa_s_per_m3, d.c2_pa_s2_per_m6)
    back = d.c1_pa_s_per_m3 * q + d.c2_pa_s2_per_m6 * q * np.abs(q)
    assert np.allclose(back, dp, rtol=1e-9, atol=1e-6)


def test_damper_quasi_static_force_is_the_orifice_law():
    """At 0.5 Hz the compressibility is negligible: F = A dp with dp = c1 A v + c2 (A v)^2 (poppets off);
    tolerance 1 % of the peak force."""
    d = HydraulicDamperParams(poppet=False)
    t = np.arange(4000) * DT
    y = 0.01 * np.sin(2 * math.pi * 0.5 * t)
    f = HydraulicDamper(d, DT).simulate(y)
    v = np.gradient(y, DT)
    q = d.area_m2 * v
    ref = d.area_m2 * (d.c1_pa_s_per_m3 * q + d.c2_pa_s2_per_m6 * q * np.abs(q))
    sl = slice(1000, 3900)
    assert np.max(np.abs(f[sl] - ref[sl])) < 0.01 * np.max(np.abs(ref))


def test_damper_is_a_spring_at_high_frequency():
    """Far above the corner k/c the oil column dominates: dynamic stiffness ~ 4 B A^2 / V0 (within 5 %)."""
    d = HydraulicDamperParams(poppet=False, substeps=50)
    dt = 1e-4
    f0 = 400.0
    t = np.arange(4000) * dt
    y = 1e-6 * np.sin(2 * math.pi * f0 * t)
    f = HydraulicDamper(d, dt).simulate(y)
    n = int(round(10 / f0 / dt))
    h = fourier_coefficient(f[-n:], f0, dt) / fourier_coefficient(y[-n:], f0, dt)
    assert abs(h) == pytest.approx(d.stiffness_n_per_m, rel=0.05)


def test_poppets_limit_the_force():
    """Above the opening pressure the poppet loop limits the force (Fig. 1 C): the peak with poppets stays
    below A (p_open + 3 width) while without them it exceeds twice that."""
    d = HydraulicDamperParams()
    t = np.arange(3000) * DT
    y = 0.01 * np.sin(2 * math.pi * 5.0 * t)          # 0.31 m/s peak
    with_p = np.max(np.abs(HydraulicDamper(d, DT).simulate(y)[1000:]))
    without = np.max(np.abs(HydraulicDamper(replace(d, poppet=False), DT).simulate(y)[1000:]))
    lim = d.area_m2 * (d.poppet_open_pa + 3 * d.poppet_width_pa)
    assert with_p < lim
    assert without > 2 * lim


def test_maxwell_damper_streaming_matches_eq23():
    m = MaxwellParams()
    for f0 in (2.0, 20.0, 80.0):
        dt = 1e-4
        n = int(round(20 / f0 / dt))
        t = np.arange(3 * n) * dt
        y = np.sin(2 * math.pi * f0 * t)
        dmp = MaxwellDamper(m, dt)
        f = np.array([dmp.step(v) for v in y])
        h = fourier_coefficient(f[-n:], f0, dt) / fourier_coefficient(y[-n:], f0, dt)
        ref = dmp.frequency_response([f0])[0]
        # the backward-difference velocity lags by dt/2: phase tolerance w dt, gain 1 %
        assert abs(h) == pytest.approx(abs(ref), rel=0.01)
        assert abs(np.angle(h / ref)) < 2 * math.pi * f0 * dt + 1e-3


@pytest.mark.parametrize("kind", ["G1", "G2", "G1D", "G2D"])
def test_streaming_process_model_equals_batch_simulate(kind):
    w = 2 * math.pi * 30
    m = ProcessModelParams(kind=kind, gain=0.9 if kind.startswith("G1") else w * w, tau_p_s=0.007, zeta=0.5,
                           omega0_rad_s=w, delay_s=0.0043)
    u = np.random.default_rng(3).standard_normal(800)
    s = StreamingProcessModel(m, DT)
    y = np.array([s.step(v) for v in u])
    assert np.allclose(y, m.simulate(u, DT), atol=1e-12, rtol=1e-10)


def test_actuator_response_and_load_rejection():
    p = ActuatorParams()
    act = Actuator(p, DT)
    # unloaded: the batch cascade of the two process models (exact) ...
    u = np.random.default_rng(5).standard_normal(600)
    y = np.array([act.step(v) for v in u])
    g2d, g1 = servo_models(p)
    assert np.allclose(y, g1.simulate(g2d.simulate(u, DT), DT), atol=1e-12)
    # ... whose steady state at 5 Hz is the continuous cascade behind one sample: each of the two zero-order-hold
    # stages adds half a sample (vector error 0.5 %)
    act.reset()
    n = int(round(10 / 5.0 / DT))
    u = np.sin(2 * math.pi * 5.0 * np.arange(4 * n) * DT)
    y = np.array([act.step(v) for v in u])
    h = fourier_coefficient(y[-n:], 5.0, DT) / fourier_coefficient(u[-n:], 5.0, DT)
    assert abs(h / (act.frequency_response([5.0])[0] * np.exp(-2j * math.pi * 5.0 * DT)) - 1) < 5e-3
    # a held load is rejected by the loop (sensitivity 1 - G = 0 at DC) ...
    act.reset()
    for _ in range(2000):
        x = act.step(0.0, 1000.0)
    assert abs(x) < 1e-9
    # ... but a step of load first deflects the actuator by about f / k_load
    act.reset()
    x1 = act.step(0.0, 1000.0)
    assert x1 == pytest.approx(-1000.0 / p.k_load_n_per_m, rel=1e-6)


def test_chain_matrices_layout():
    m, k = chain_matrices(ChainParams(m1_kg=2.0, m2_kg=3.0, k1_n_per_m=5.0, k2_n_per_m=7.0))
    assert np.allclose(np.diag(m), [0.0, 2.0, 3.0])
    assert np.allclose(k, [[5, -5, 0], [-5, 12, -7], [0, -7, 7]])
