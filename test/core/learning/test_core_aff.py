"""Adaptive feedforward filter (Insam 2022 ch. 7): the FXLMS update against a NumPy reference, leakage,
normalisation, timing, the secondary-path model, the regressor choice and the closed RTHS loop on the twin."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import signal

from rths_ros.analysis.metrics import compute_metrics
from rths_ros.analysis.run_analysis import reference_for
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import VirtualRun, run_virtual
from rths_ros.core.learning.aff.fxlms import FxlmsAff
from rths_ros.core.learning.aff.params import AffParams
from rths_ros.core.learning.aff.secondary_path import SecondaryPath, closed_loop_tf
from rths_ros.core.plant.legs import N_LEGS, LegCascade, LegCascadeParams, LegPlantParams, closed_loop_frf
from rths_ros.params import ParameterError, build

DT = 1e-3
HOME = np.array([0.70, 0.71, 0.69, 0.705, 0.695, 0.70])


def _on(**kw) -> AffParams:
    """Enabled filter; the algorithm as printed in the thesis (eq. 7.4) unless stated."""
    kw.setdefault("algorithm", "fxlms")
    return AffParams(enabled=True, **kw)


# ------------------------------------------------------------------------------------------------
# parameters


def test_defaults_are_table_a5_and_ranges_are_checked():
    p = AffParams()
    assert (p.enabled, p.mu, p.nu, p.n_taps, p.delta) == (False, 0.1, 0.99999, 100, 0.001)
    assert p.secondary_path == "closed_loop" and p.regressor == "deviation"
    assert build(AffParams, {"n_taps": 1000}).n_taps == 1000
    for bad in ({"n_taps": 0}, {"n_taps": 1001}, {"nu": 1.5}, {"secondary_path": "measured"}, {"mu_lms": 0.1}):
        with pytest.raises(ParameterError):
            build(AffParams, bad)


# ------------------------------------------------------------------------------------------------
# secondary path


def _zoh_advanced_lfilter(leg: int, x: np.ndarray, cascade: LegCascadeParams, vff: bool) -> np.ndarray:
    """Independent route: transfer-function ZOH discretisation, one sample advanced, run by lfilter."""
    num, den = closed_loop_tf(leg, None, cascade, vff)
    numd, dend, _ = signal.cont2discrete((num, den), DT, method="zoh")
    numd = np.atleast_2d(numd)[0]
    assert abs(numd[0]) < 1e-12          # strictly proper: no direct feedthrough before the advance
    return signal.lfilter(numd[1:], dend, x)


@pytest.mark.parametrize("vff", [False, True])
@pytest.mark.parametrize("preset", ["PPI1", "PPI2"])
def test_secondary_path_dc_gain_frf_and_lfilter(preset, vff):
    cas = LegCascadeParams(preset=preset)
    sp = SecondaryPath("closed_loop", None, cas, vff, DT)
    assert sp.dc_gain() == pytest.approx(np.ones(6), abs=1e-9)
    f = np.array([0.25, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0])
    h = sp.frf(f)
    for leg in range(6):
        hc = closed_loop_frf(f, leg, None, cas, vff)
        # the discrete path is the continuous closed loop half a sample ahead (command held over the step
        # that ends at the sample it belongs to); what remains is the discretisation error
        rel = np.abs(h[leg] / (hc * np.exp(1j * np.pi * f * DT)) - 1.0)
        assert np.all(rel[f <= 20.0] < 4e-3), rel
        assert rel[-1] < 1e-2, rel
        lead_deg = np.degrees(np.angle(h[leg] / hc))
        assert lead_deg[3] == pytest.approx(0.9, abs=0.1)       # 5 Hz: 360 * 5 * dt / 2
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 6)) * 1e-3
    y = np.array([sp.step(row).copy() for row in x])
    for leg in range(6):
        ref = _zoh_advanced_lfilter(leg, x[:, leg], cas, vff)
        # 1e-9 of each sample, and of the channel's peak near its zero crossings (two summation orders:
        # the last bits differ between CPUs' vector units)
        np.testing.assert_allclose(y[:, leg], ref, rtol=1e-9, atol=1e-9 * np.max(np.abs(ref)))


def test_secondary_path_models_the_twin_legs():
    """Feedback only, the ZOH model matches the twin's 10 kHz cascade (LegCascade) to about 0.1 %."""
    sp = SecondaryPath("closed_loop", None, LegCascadeParams.PPI1(), False, DT)
    legs = LegCascade(LegPlantParams(), LegCascadeParams.PPI1(), DT, 10)
    legs.reset(np.zeros(6))
    rng = np.random.default_rng(0)
    x = signal.lfilter([1.0], [1.0, -0.99], rng.standard_normal((3000, 6)) * 1e-4, axis=0)
    y_twin = np.zeros_like(x)
    y_model = np.zeros_like(x)
    for k in range(x.shape[0]):
        legs.step(x[k])
        y_twin[k] = legs.length
        y_model[k] = sp.step(x[k])
    rel = np.sqrt(np.mean((y_twin - y_model) ** 2, axis=0) / np.mean(y_twin ** 2, axis=0))
    assert np.all(rel < 2e-3), rel


def test_identity_path_passes_through():
    sp = SecondaryPath("identity")
    x = np.arange(6.0)
    np.testing.assert_array_equal(sp.step(x), x)
    assert sp.dc_gain() == pytest.approx(np.ones(6))


# ------------------------------------------------------------------------------------------------
# the update against a hand-written NumPy reference


def _numpy_reference(p: AffParams, home, b_des, b_meas, filtered_dev):
    """Leaky NLMS/FXLMS of §7.3 written with whole-array NumPy operations (the module doc's timing)."""
    n = p.n_taps
    ref = home if p.regressor == "deviation" else np.zeros(6)
    theta = np.zeros((6, n))
    raw = np.tile((home - ref)[:, None], (1, n))
    filt = raw.copy()
    b_prev = home.copy()
    u_prev = np.zeros(6)
    u_path = SecondaryPath(p.secondary_path, None, LegCascadeParams.PPI1(), False, DT)
    us, gaps, thetas = [], [], []
    for k in range(b_des.shape[0]):
        g = b_prev - b_meas[k]
        e = g
        if p.algorithm == "modified":    # e = g + S(u)_k - Theta . b~_k
            e = g + u_path.step(u_prev) - np.sum(theta * filt, axis=1)
        mu_bar = p.mu / (p.delta + np.sum(filt ** 2, axis=1))
        theta = p.nu * theta + (mu_bar * e)[:, None] * filt
        raw = np.roll(raw, 1, axis=1)
        filt = np.roll(filt, 1, axis=1)
        raw[:, 0] = b_des[k] - ref
        filt[:, 0] = filtered_dev[k] + (home - ref)
        us.append(np.sum(theta * raw, axis=1))
        u_prev = us[-1]
        gaps.append(g)
        thetas.append(theta.copy())
        b_prev = b_des[k].copy()
    return np.array(us), np.array(gaps), np.array(thetas)


@pytest.mark.parametrize("kw", [dict(), dict(n_taps=17, mu=0.7, nu=0.99, delta=1e-6),
                                dict(secondary_path="identity", n_taps=5),
                                dict(regressor="absolute", n_taps=30),
                                dict(algorithm="modified"),
                                dict(algorithm="modified", n_taps=17, mu=1.2, nu=0.999, delta=1e-6)])
def test_update_equals_numpy_reference(kw):
    p = _on(**kw)
    rng = np.random.default_rng(11)
    n_steps = 300
    b_des = HOME + 2e-3 * rng.standard_normal((n_steps, 6))
    b_meas = HOME + 2e-3 * rng.standard_normal((n_steps, 6))
    dev = b_des - HOME
    # the filtered regressor comes from a separate SecondaryPath (checked against lfilter above), so this
    # compares the update, shift and FIR output alone
    path = SecondaryPath(p.secondary_path, None, LegCascadeParams.PPI1(), False, DT)
    filtered = np.array([path.step(row).copy() for row in dev])
    u_ref, g_ref, th_ref = _numpy_reference(p, HOME, b_des, b_meas, filtered)
    aff = FxlmsAff(p, None, LegCascadeParams.PPI1(), False, DT, home_lengths=HOME)
    ref = HOME if p.regressor == "deviation" else np.zeros(6)
    for k in range(n_steps):
        u = aff.step(b_des[k], b_meas[k])
        np.testing.assert_array_equal(aff.gap, g_ref[k])
        # rounding is relative to the terms of the sum Theta . b, not to the (cancelling) result
        lo = max(k - p.n_taps + 1, 0)
        scale = np.max(np.abs(th_ref[k])) * np.max(np.abs(b_des[lo:k + 1] - ref)) * p.n_taps
        np.testing.assert_allclose(u, u_ref[k], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(aff.coefficients, th_ref[-1], rtol=0, atol=1e-12 * np.max(np.abs(th_ref[-1])))
    assert aff.coefficients.shape == (6, p.n_taps)
    assert np.max(np.abs(th_ref[-1])) > 1e-5      # the reference did adapt


# ------------------------------------------------------------------------------------------------
# leakage, normalisation, timing


def test_leakage_decays_coefficients_by_nu_when_the_gap_is_zero():
    aff = FxlmsAff(_on(nu=0.9, mu=0.5), home_lengths=HOME)
    rng = np.random.default_rng(5)
    for _ in range(50):
        aff.step(HOME + 1e-3 * rng.standard_normal(6), HOME + 1e-3 * rng.standard_normal(6))
    b = HOME + 1e-3
    aff.step(b, HOME)                            # gap of this step is not zero yet
    theta0 = aff.coefficients.copy()
    assert np.max(np.abs(theta0)) > 0.0
    for _ in range(10):
        aff.step(b, b)                           # b' equals the previous desired length: g = 0
        assert np.all(aff.gap == 0.0)
    np.testing.assert_allclose(aff.coefficients, 0.9 ** 10 * theta0, rtol=1e-12)


def test_normalisation_makes_the_update_scale_free_and_delta_bounds_small_signals():
    """mu_bar = mu / (delta + |b~|^2): scaling the motion and the gap by s leaves Theta unchanged when
    |b~|^2 >> delta; for signals far below sqrt(delta) the step is mu / delta."""
    rng = np.random.default_rng(9)
    dev = rng.standard_normal((200, 6))
    gap = rng.standard_normal((200, 6))

    def run(scale, delta):
        aff = FxlmsAff(_on(delta=delta, nu=1.0, mu=0.3, n_taps=20, secondary_path="identity"), home_lengths=HOME)
        for k in range(200):
            aff.step(HOME + scale * dev[k], HOME + scale * (dev[k - 1] if k else 0.0) - scale * gap[k])
        return aff.coefficients.copy()

    a = run(1e-2, 1e-15)
    b = run(1e-1, 1e-15)
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    assert np.max(np.abs(a)) > 1e-2
    # small signals: |b~|^2 ~ 1e-12 m^2 << delta = 1e-3: the coefficients scale with the signal power
    c = run(1e-7, 1e-3)
    d = run(2e-7, 1e-3)
    np.testing.assert_allclose(d, 4.0 * c, rtol=1e-6)
    assert np.max(np.abs(c)) < 1e-6


@pytest.mark.parametrize("algorithm", ["fxlms", "modified"])
def test_timing_learns_the_inverse_of_a_static_actuator_exactly(algorithm):
    """Plant b'_{k+1} = home + 0.5 (b_{k+1} + u_{k+1} - home) with the command held over the step: the gap
    is zero for u = b - home, i.e. Theta = [1, 0, ...].  Only the documented pairing of gap and regressor
    (g_k with [b~_k, b~_{k-1}, ...]) converges to it."""
    aff = FxlmsAff(_on(secondary_path="identity", mu=0.5, nu=1.0, n_taps=8, delta=1e-12, algorithm=algorithm),
                   home_lengths=HOME)
    rng = np.random.default_rng(2)
    meas = HOME.copy()
    for _ in range(3000):
        b = HOME + 1e-3 * rng.standard_normal(6)
        u = aff.step(b, meas)
        meas = HOME + 0.5 * (b + u - HOME)
    target = np.zeros((6, 8))
    target[:, 0] = 1.0
    np.testing.assert_allclose(aff.coefficients, target, atol=1e-9)


def test_fxlms_with_the_closed_loop_path_reduces_the_gap_of_the_twin_legs():
    """The twin's legs (PPI1, feedback only) follow a two-sine leg motion; AFF (Table A.5) cuts the gap
    to about a third (it keeps re-adapting rather than settling on an inverse of the 50 ms lag)."""
    t = np.arange(1, 12001) * DT
    motion = 4e-3 * np.sin(2 * np.pi * 0.7 * t) + 2e-3 * np.sin(2 * np.pi * 1.9 * t + 1.0)
    b = HOME + motion[:, None] * np.array([1.0, -1.0, 0.8, -0.8, 1.1, -0.9])

    def rms_gap(p):
        legs = LegCascade(LegPlantParams(), LegCascadeParams.PPI1(), DT, 10)
        legs.reset(HOME)
        aff = FxlmsAff(p, home_lengths=HOME)
        meas = HOME.copy()
        gaps = np.zeros_like(b)
        for k in range(b.shape[0]):
            u = aff.step(b[k], meas)
            legs.step(b[k] + u)
            meas = legs.length.copy()
            gaps[k] = b[k] - meas
        return np.sqrt(np.mean(gaps[-2000:] ** 2))

    off = rms_gap(AffParams(enabled=False))
    on = rms_gap(_on())
    assert off > 1e-3                  # about 1.1 mm: the PPI1 lag
    assert on < 0.4 * off, (on, off)   # about 0.32 mm


# ------------------------------------------------------------------------------------------------
# regressor choice


def test_deviation_regressor_is_quiet_at_rest_absolute_integrates_a_static_gap():
    """At rest with a constant 5 um gap (an offset of the measurement): the deviation regressor is zero, so
    nothing is output or adapted; with absolute lengths every tap gets the same update and the output is an
    integrator of the gap, u_{k+1} ~ nu u_k + mu g_k, which winds up."""
    meas = HOME - 5e-6
    dev = FxlmsAff(_on(), home_lengths=HOME)
    ab = FxlmsAff(_on(regressor="absolute"), home_lengths=HOME)
    for _ in range(200):
        u_dev = dev.step(HOME, meas)
        u_abs = ab.step(HOME, meas)
    assert np.all(u_dev == 0.0) and np.all(dev.coefficients == 0.0)
    expected = 0.1 * 5e-6 * (1 - 0.99999 ** 200) / (1 - 0.99999)
    np.testing.assert_allclose(u_abs, expected, rtol=1e-3)
    th = ab.coefficients
    np.testing.assert_allclose(th, th[:, :1] * np.ones_like(th), rtol=1e-12)


def test_absolute_regressor_makes_the_filter_length_irrelevant():
    """The absolute-length FIR is an integrator of the gap: N_FIR = 10 and 100 give the same output."""
    rng = np.random.default_rng(4)
    b = HOME + np.cumsum(1e-5 * rng.standard_normal((500, 6)), axis=0)
    meas = HOME + np.cumsum(1e-5 * rng.standard_normal((500, 6)), axis=0)

    def outputs(p):
        aff = FxlmsAff(p, home_lengths=HOME)
        return np.array([aff.step(b[k], meas[k]).copy() for k in range(500)])

    u10 = outputs(_on(regressor="absolute", n_taps=10))
    u100 = outputs(_on(regressor="absolute", n_taps=100))
    np.testing.assert_allclose(u10, u100, atol=2e-3 * np.max(np.abs(u100)))
    d10 = outputs(_on(n_taps=10))
    d100 = outputs(_on(n_taps=100))
    assert np.max(np.abs(d10 - d100)) > 0.1 * np.max(np.abs(d100))


# ------------------------------------------------------------------------------------------------
# bookkeeping


def test_disabled_filter_outputs_zero_and_home_is_latched_from_the_first_measurement():
    off = FxlmsAff(AffParams(enabled=False), home_lengths=HOME)
    assert np.all(off.step(HOME + 1e-3, HOME) == 0.0)
    rng = np.random.default_rng(8)
    b = HOME + 1e-3 * rng.standard_normal((50, 6))
    explicit = FxlmsAff(_on(), home_lengths=HOME)
    latched = FxlmsAff(_on())
    assert latched.home_lengths is None
    meas = HOME
    for k in range(50):
        np.testing.assert_array_equal(explicit.step(b[k], meas), latched.step(b[k], meas))
        meas = b[k] - 1e-4
    np.testing.assert_array_equal(latched.home_lengths, HOME)
    # reset: coefficients back to zero, the same run again gives the same result
    u_end = latched.output.copy()
    latched.reset()
    assert np.all(latched.coefficients == 0.0)
    meas = HOME
    for k in range(50):
        latched.step(b[k], meas)
        meas = b[k] - 1e-4
    np.testing.assert_array_equal(latched.output, u_end)


# ------------------------------------------------------------------------------------------------
# the closed RTHS loop on the twin (Insam 2022 §7.4: d_NUM = 200 kg/s, PPI1, AFF alone)


def _contact_scenario(p: AffParams):
    """contact_1d with d = 200 kg/s (PPI1, no VFF, no NPC: Insam 2022 §7.4) and these AFF parameters."""
    s = scn.load("contact_1d", ["numerical.contact_1d.d_num_kg_per_s=200"])
    return dataclasses.replace(s, aff=p)


def _error_windows(rec) -> tuple[float, float, float]:
    """max |z - z'| [m] in flight (t < 1.2 s), around the flight -> contact switch (1.2 s <= t < 1.45 s; touchdown
    at 1.21 s) and in the rest of the test."""
    e = np.abs(rec["z_cmd"] - rec["z_ach"])
    t = rec["t"]
    return (float(e[t < 1.2].max()), float(e[(t >= 1.2) & (t < 1.45)].max()), float(e[t >= 1.45].max()))


def _rths_with_aff(p: AffParams):
    """The virtual run (the graph's step loop) of contact_1d, d = 200, with these AFF parameters."""
    s = _contact_scenario(p)
    rec = run_virtual(s)
    if rec["aborted"]:
        raise AssertionError(rec["abort_reason"])
    m = compute_metrics(rec, reference_for(s, s.steps + 1), s.loop.dt_s)
    e = rec["z_cmd"] - rec["z_ach"]
    m["t_max_error_s"] = float(rec["t"][np.argmax(np.abs(e))])
    return m, rec


def test_rths_table_a5_adaptation_gain_destabilises_the_twin():
    """Insam 2022 §7.5: in vRTHS the maximum stable mu_LMS is lower than on the rig.  In this twin the
    standard mu = 0.1 with the printed algorithm makes the contact phase oscillate until a leg exceeds its
    speed limit."""
    with pytest.raises(AssertionError) as exc:
        _rths_with_aff(_on())
    assert "velocity" in str(exc.value) and "speed limit" in str(exc.value)


def test_rths_aff_tracks_better_and_a_tenfold_smaller_gain_leaves_larger_errors():
    base = _rths_with_aff(AffParams(enabled=False))[0]
    aff = _rths_with_aff(_on(mu=0.01))[0]
    slow = _rths_with_aff(_on(mu=0.001))[0]
    assert base["stable"] and aff["stable"] and slow["stable"], (aff["stability_reason"], slow["stability_reason"])
    assert base["max_abs_tracking_error_m"] > 0.6e-3
    # with AFF the error is smaller and its maximum sits at the flight -> contact switch
    assert aff["max_abs_tracking_error_m"] < 0.8 * base["max_abs_tracking_error_m"]
    assert aff["e_track_rel"] < 0.5 * base["e_track_rel"]
    assert 1.2 <= aff["t_max_error_s"] <= 1.4, aff["t_max_error_s"]
    assert aff["e_ref_rel"] < base["e_ref_rel"]
    # a ten times smaller adaptation gain converges slowly and leaves clearly larger errors (Fig. 7.8)
    assert slow["e_track_rel"] > 1.8 * aff["e_track_rel"]
    assert slow["max_abs_tracking_error_m"] > 1.2 * aff["max_abs_tracking_error_m"]


def test_rths_modified_fxlms_is_stable_at_table_a5_and_a_tenfold_smaller_gain_leaves_larger_errors():
    """The default (modified FXLMS) at the standard mu = 0.1: stable, the error about halved against feedback
    only with its maximum at the flight -> contact switch; mu = 0.01 leaves clearly larger errors."""
    base = _rths_with_aff(AffParams(enabled=False))[0]
    std = _rths_with_aff(AffParams(enabled=True))[0]           # Table A.5 + the default algorithm
    slow = _rths_with_aff(AffParams(enabled=True, mu=0.01))[0]
    assert AffParams().algorithm == "modified" and AffParams().mu == 0.1
    assert std["stable"] and slow["stable"], (std["stability_reason"], slow["stability_reason"])
    assert std["max_abs_tracking_error_m"] < 0.55 * base["max_abs_tracking_error_m"]   # 0.318 vs 0.672 mm
    assert 1.2 <= std["t_max_error_s"] <= 1.4, std["t_max_error_s"]
    assert std["e_ref_rel"] < base["e_ref_rel"]
    assert slow["max_abs_tracking_error_m"] > 1.5 * std["max_abs_tracking_error_m"]    # 0.588 vs 0.318 mm
    assert slow["e_track_rel"] > 1.3 * std["e_track_rel"]


class _FixedFir(FxlmsAff):
    """FxlmsAff whose coefficients are set to ``theta`` (6, N) at every reset; with mu = 0, nu = 1 they stay."""

    def __init__(self, theta, *args, **kwargs):
        self._fixed = np.array(theta, dtype=float)
        super().__init__(*args, **kwargs)

    def reset(self, home_lengths=None) -> None:
        super().reset(home_lengths)
        self._theta[:] = self._fixed


def test_rths_a_fir_fitted_to_the_flight_phase_tracks_the_switch_below_0p1_mm_which_nlms_cannot_learn_in_time():
    """Where the floor of the adaptive filter comes from (docs/aff.md, "Why the twin stays at 0.3 mm").

    In flight the filtered regressor spans essentially two directions: all taps equal (the position) and a
    ramp across the taps (the velocity), with 4e-4 of the energy.  The inverse of the 50 ms leg lag needs
    the ramp direction, along which NLMS with the Table A.5 gain converges with a time constant of about
    40 s, ten test lengths.  The same 100-tap FIR with the same secondary-path model and timing, fitted by
    least squares to the flight phase (t < 1.2 s) of the feedback-only run and then held fixed, tracks the
    flight -> contact switch to 0.04 mm: the structure is not the limit, the adaptation speed is."""
    p = AffParams()
    s = _contact_scenario(AffParams(enabled=False))
    fb = run_virtual(s)
    home = fb["b_cmd"][0]                     # the platform starts at rest at home
    dev = fb["b_cmd"] - home                  # desired leg lengths (no AFF: un-augmented), deviations
    path = SecondaryPath("closed_loop", s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff, DT)
    filt = np.array([path.step(d).copy() for d in dev])          # b~_k, same pairing as FxlmsAff.adapt
    flight = fb["t"] < 1.2
    n = p.n_taps
    theta = np.zeros((N_LEGS, n))
    for i in range(N_LEGS):
        x = np.column_stack([np.concatenate([np.zeros(j), filt[: filt.shape[0] - j, i]]) for j in range(n)])[flight]
        r = x.T @ x
        lam, vec = np.linalg.eigh(r)
        lam, vec = lam[::-1], vec[:, ::-1]
        ramp = np.arange(n) - (n - 1) / 2.0
        assert abs(vec[:, 0] @ np.ones(n)) / np.sqrt(n) > 0.99                   # 1st: all taps equal
        assert abs(vec[:, 1] @ ramp) / np.linalg.norm(ramp) > 0.99                # 2nd: ramp across the taps
        assert lam[1] / lam[0] < 1e-3, lam[1] / lam[0]                            # 4.3e-4
        tau = DT * (p.delta + np.mean(np.sum(x * x, axis=1))) / (p.mu * lam[1] / x.shape[0])
        assert tau > 10.0, tau                                                    # about 40 s
        d = dev[flight, i] - filt[flight, i]                                      # gap without a filter (model)
        theta[i] = np.linalg.solve(r + 1e-11 * np.eye(n), x.T @ d)
    s_fix = _contact_scenario(AffParams(enabled=True, mu=0.0, nu=1.0))
    vr = VirtualRun(s_fix)
    vr.aff = _FixedFir(theta, s_fix.aff, s_fix.sim_plant.legs, s_fix.sim_plant.cascade,
                       s_fix.platform.commander.vff, DT, home_lengths=home)
    fixed = vr.run()
    assert not fixed["aborted"], fixed["abort_reason"]
    np.testing.assert_array_equal(vr.aff.coefficients, theta)                     # held fixed
    fl, sw, rest = _error_windows(fixed)
    assert fl < 0.02e-3 and sw < 0.08e-3, (fl, sw)                                # 0.004, 0.039 mm
    assert rest < 0.12e-3, rest                                                   # 0.089 mm at lift-off
    adaptive = _error_windows(run_virtual(_contact_scenario(AffParams(enabled=True))))
    assert adaptive[1] > 3.0 * sw, (adaptive, sw)                                 # 0.318 vs 0.039 mm


def test_rths_literal_eq_7_4_with_absolute_lengths_tracks_the_flight_then_destabilises_the_contact():
    """Eq. 7.4 as printed with the absolute leg lengths and Table A.5 is integral action on the gap
    (u_{k+1} ~ nu u_k + mu g_k): the flight phase is tracked to 0.025 mm, the switch is not, and the contact
    phase oscillates until a leg exceeds its speed limit (§7.5: vRTHS tolerates a lower mu than the rig)."""
    rec = run_virtual(_contact_scenario(_on(regressor="absolute")))
    assert AffParams().mu == 0.1
    assert rec["aborted"] and "speed limit" in rec["abort_reason"], rec["abort_reason"]
    assert rec["t"][-1] > 1.45                                                    # in the contact phase (2.04 s)
    fl, sw, _ = _error_windows(rec)
    assert fl < 0.05e-3, fl                                                       # 0.025 mm
    assert sw > 0.25e-3, sw                                                       # 0.59 mm
