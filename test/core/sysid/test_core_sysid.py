"""Closed-loop leg identification (Insam 2022 §4.3.1, Table 4.1) on the digital twin."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app.scenario import from_data
from rths_ros.core.plant.legs import LegCascade, LegPlantParams
from rths_ros.core.plant.sim_plant import SimPlant, SimPlantParams
from rths_ros.core.platform.interface import InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.stewart import StewartGeometryParams, StewartKinematics
from rths_ros.core.sysid.legs import (
    InjectableLegCascade,
    LinkRig,
    SysIdParams,
    TwinNoiseParams,
    TwinRig,
    estimate_frf,
    fit_leg_model,
    identify,
    load_plant_config,
    segmented_multisine,
    sysid_params,
)
from rths_ros.params import ParameterError, build

# Table 4.1 of Insam 2022: k_i w_c,i [m/(A s^2)] and w_c,i [rad/s]
TABLE_4_1_NUM = (1011.0, 1053.1, 1123.5, 780.9, 988.1, 1070.9)
TABLE_4_1_WC = (122.9, 55.5, 54.7, 55.3, 66.2, 59.0)


def p_true(leg: int, f_hz):
    s = 2j * np.pi * np.asarray(f_hz)
    return TABLE_4_1_NUM[leg] / (s * (s + TABLE_4_1_WC[leg]))


def test_segmented_multisine_matches_the_thesis_design():
    p = SysIdParams(band_duration_s=4.0)
    bands = segmented_multisine(p, 1e-3)
    assert len(bands) == 10
    assert [(b.freq_hz[0], b.freq_hz[-1]) for b in bands] == [(10.0 * j + 0.5, 10.0 * (j + 1)) for j in range(10)]
    assert all(np.allclose(np.diff(b.freq_hz), 0.5) for b in bands)
    for b in bands:
        assert len(b.period) == 2000 and b.n_periods == 2
        assert np.sqrt(np.mean(b.period ** 2)) == pytest.approx(p.amplitude_a, rel=1e-12)
        spec = np.abs(np.fft.rfft(b.period))
        mask = np.zeros(len(spec), bool)
        mask[b.bins] = True
        assert spec[~mask].max() < 1e-9 * spec[mask].min()           # energy only on the band's lines
        assert np.ptp(spec[mask]) < 1e-9 * spec[mask].max()          # flat amplitude
        assert np.max(np.abs(b.period)) / p.amplitude_a < 2.5        # Schroeder phases: low crest factor
    with pytest.raises(ParameterError, match="spacing_hz"):
        segmented_multisine(SysIdParams(spacing_hz=0.3), 1e-3)
    with pytest.raises(ParameterError, match="Nyquist"):
        segmented_multisine(SysIdParams(f_max_hz=600.0), 1e-3)


def test_injectable_cascade_is_the_twin_plus_an_exact_injection():
    rng = np.random.default_rng(4)
    base, inj = LegCascade(dt_s=1e-3, substeps=10), InjectableLegCascade(dt_s=1e-3, substeps=10)
    fine = InjectableLegCascade(dt_s=1e-4, substeps=1)       # the controller rate, one sub-step per call
    for c in (base, inj, fine):
        c.reset(np.full(6, 0.7))
    for k in range(300):
        cmd = 0.7 + 1e-3 * rng.standard_normal(6)
        ff = 1e-2 * rng.standard_normal(6)
        d = 0.05 * rng.standard_normal(6) if k >= 150 else np.zeros(6)
        if k < 150:                                           # no injection: bit-identical to LegCascade
            base.step(cmd, ff)
        inj.injection[:] = d
        inj.step(cmd, ff)
        acc = np.zeros(6)
        for _ in range(10):
            fine.injection[:] = d
            fine.step(cmd, ff)
            acc += fine.current
        if k < 150:
            assert np.array_equal(base.length, inj.length) and np.array_equal(base.current, inj.current)
        assert np.allclose(inj.length, fine.length, rtol=0, atol=1e-12)
        assert np.allclose(inj.current, fine.current, rtol=0, atol=1e-12)
        assert np.allclose(inj.current_mean, acc / 10, rtol=0, atol=1e-12)


def test_noise_free_frf_follows_table_4_1_leg_2():
    rig = TwinRig(noise=TwinNoiseParams(quantisation_m=0.0, current_noise_std_a=0.0, disturbance_std_a=0.0))
    p = SysIdParams(band_duration_s=4.0, legs=[2])
    res = identify(rig, p)
    ratio = res.frf[0] / p_true(1, res.freq_hz)
    # sampling of a 10 kHz controller at 1 kHz: within 2 % / 0.02 rad up to 100 Hz
    assert np.max(np.abs(np.abs(ratio) - 1.0)) < 0.02
    assert np.max(np.abs(np.angle(ratio))) < 0.02
    assert res.fits[0].gain_num == pytest.approx(TABLE_4_1_NUM[1], rel=0.01)
    assert res.fits[0].omega_c_rad_per_s == pytest.approx(TABLE_4_1_WC[1], rel=0.01)


def test_closed_loop_estimator_is_not_biased_by_loop_noise():
    """With a large disturbance current circulating in the loop, S_yu/S_uu is pulled towards -1/C while
    the estimator through the injection stays on P (leg 2, 0.5-10 Hz)."""
    rig = TwinRig(noise=TwinNoiseParams(quantisation_m=0.0, current_noise_std_a=0.0, disturbance_std_a=1.0))
    p = SysIdParams(band_duration_s=40.0, n_bands=10, amplitude_a=0.05)
    band = segmented_multisine(p, rig.dt_s)[0]
    rig.reset()
    r = band.signal
    u, y = rig.run(1, r)
    est = estimate_frf(r, u, y, band, 1, rig.current_lead_s)
    n = len(band.period)
    uu = np.fft.rfft(u[n:].reshape(-1, n), axis=1)[:, band.bins]
    yy = np.fft.rfft(y[n:].reshape(-1, n), axis=1)[:, band.bins]
    h1 = np.sum(yy * uu.conj(), 0) / np.sum(np.abs(uu) ** 2, 0)
    err_cl = np.abs(est.frf / p_true(1, band.freq_hz) - 1)
    err_h1 = np.abs(h1 / p_true(1, band.freq_hz) - 1)
    assert np.median(err_cl) < 0.05
    assert np.median(err_h1) > 3 * np.median(err_cl)


@pytest.fixture(scope="module")
def noisy_result():
    # noise on: resolver quantisation 2.4 um, 2 mA current-sensor noise, 5 mA disturbance current;
    # 10 bands to 100 Hz at 0.5 Hz spacing as in the thesis, 8 s per band (4 periods, 3 averaged) instead of 200 s
    rig = TwinRig(noise=TwinNoiseParams(seed=11))
    return identify(rig, SysIdParams(band_duration_s=8.0))


def test_sysid_recovers_table_4_1_within_5_percent(noisy_result):
    res = noisy_result
    assert res.legs == (1, 2, 3, 4, 5, 6)
    errs = []
    for fit in res.fits:
        i = fit.leg - 1
        e_num = fit.gain_num / TABLE_4_1_NUM[i] - 1.0
        e_wc = fit.omega_c_rad_per_s / TABLE_4_1_WC[i] - 1.0
        errs.append((fit.leg, e_num, e_wc))
        assert abs(e_num) < 0.05 and abs(e_wc) < 0.05, (fit.leg, e_num, e_wc)
        assert fit.n_lines == 200                         # every line passed the 75 % coherence rule
    print("\nleg  err(k w_c)  err(w_c)  [%]")
    for leg, a, b in errs:
        print(f" {leg}   {100 * a:+.3f}    {100 * b:+.3f}")
    assert np.all(res.coherence >= 0.75)
    assert np.min(res.coherence) < 0.9999                 # the noise is really there


def test_plant_config_round_trip(noisy_result, tmp_path):
    res = noisy_result
    path = tmp_path / "legs.yaml"
    res.write_yaml(path)
    text = path.read_text()
    assert text.startswith("# Leg models")
    legs = load_plant_config(path)
    assert legs.gain_num == tuple(f.gain_num for f in res.fits)
    assert legs.omega_c_rad_per_s == tuple(f.omega_c_rad_per_s for f in res.fits)
    cfg = res.plant_config()
    sp = build(SimPlantParams, cfg["sim_plant"], section="sim_plant")
    assert sp.legs == legs
    scen = from_data({"name": "identified", **cfg})
    assert scen.sim_plant.legs == legs
    # partial identification keeps the base models of the other legs
    part = res.plant_parameters(LegPlantParams(gain_num=(1.0,) * 6, omega_c_rad_per_s=(2.0,) * 6))
    assert part == legs
    with pytest.raises(ParameterError, match="sim_plant"):
        load_plant_config({"legs": {}})


def test_identification_over_the_platform_link_equals_the_in_process_rig():
    from rths_ros.app.emulated_rig import PlatformEmulator
    from rths_ros.drivers.platform_link import PlatformLinkClient, PlatformLinkParams

    kin = StewartKinematics(StewartGeometryParams())
    plant = SimPlant(SimPlantParams(), kin, InterfaceMap(InterfaceMapParams(), kin), 1e-3)
    p = SysIdParams(f_max_hz=20.0, n_bands=2, band_duration_s=4.0, legs=[2])
    with PlatformEmulator(plant) as emu, \
            PlatformLinkClient(PlatformLinkParams(host="127.0.0.1", port=emu.port, reply_timeout_s=0.05)) as cl:
        res_link = identify(LinkRig(cl), p)
    rig = TwinRig(noise=TwinNoiseParams(quantisation_m=2.4e-6, current_noise_std_a=0.0, disturbance_std_a=0.0),
                  home_lengths=kin.home_lengths)
    res_twin = identify(rig, p)
    assert np.allclose(res_link.frf, res_twin.frf, rtol=1e-6, atol=0)
    f = res_link.fits[0]
    assert f.gain_num == pytest.approx(TABLE_4_1_NUM[1], rel=0.05)
    assert f.omega_c_rad_per_s == pytest.approx(TABLE_4_1_WC[1], rel=0.05)


def test_delay_fit_recovers_a_known_delay_from_an_frf():
    """P(jw) e^{-jw tau} with tau = 1.7 ms and 1 % complex noise on every line: the fit with the delay recovers
    tau and the leg model; the fit without it cannot explain the phase."""
    rng = np.random.default_rng(3)
    f = np.arange(1, 201) * 0.5
    tau = 1.7e-3
    frf = p_true(4, f) * np.exp(-2j * np.pi * f * tau) * (1.0 + 0.01 * (rng.standard_normal(f.size)
                                                                        + 1j * rng.standard_normal(f.size)))
    fit = fit_leg_model(f, frf, fit_delay=True, leg=5)
    assert fit.delay_s == pytest.approx(tau, rel=0.02)
    assert fit.gain_num == pytest.approx(TABLE_4_1_NUM[4], rel=0.01)
    assert fit.omega_c_rad_per_s == pytest.approx(TABLE_4_1_WC[4], rel=0.01)
    assert fit.rms_log_error < 0.03                           # the noise, nothing more
    plain = fit_leg_model(f, frf, fit_delay=False, leg=5)
    assert plain.delay_s == 0.0 and plain.rms_log_error > 5 * fit.rms_log_error
    # the model's FRF reproduces the data
    assert np.median(np.abs(fit.frf(f) / frf - 1.0)) < 0.02


class _DelayedRig:
    """A rig whose length measurement arrives ``n`` steps late (a transport delay of n dt)."""

    def __init__(self, rig, n: int):
        self.rig, self.n, self.dt_s = rig, n, rig.dt_s
        self.current_lead_s = rig.current_lead_s

    def reset(self) -> None:
        self.rig.reset()

    def run(self, leg, injection):
        cur, length = self.rig.run(leg, injection)
        late = np.concatenate([np.full(self.n, length[0]), length[:-self.n]])
        return cur, late


def test_identification_with_the_delay_fit_recovers_a_known_transport_delay():
    rig = TwinRig(noise=TwinNoiseParams(quantisation_m=0.0, current_noise_std_a=0.0, disturbance_std_a=0.0))
    n_late = 3
    p = sysid_params(rig.dt_s, band_duration_s=4.0, legs=[2], fit_delay=True)
    res = identify(_DelayedRig(rig, n_late), p)
    fit = res.fits[0]
    assert fit.delay_s == pytest.approx(n_late * rig.dt_s, abs=0.05e-3)
    assert fit.gain_num == pytest.approx(TABLE_4_1_NUM[1], rel=0.02)
    assert fit.omega_c_rad_per_s == pytest.approx(TABLE_4_1_WC[1], rel=0.02)
    # the same data fitted without the delay: the leg model absorbs it and is wrong
    plain = identify(_DelayedRig(rig, n_late), sysid_params(rig.dt_s, base=p, fit_delay=False)).fits[0]
    assert abs(plain.omega_c_rad_per_s / TABLE_4_1_WC[1] - 1.0) > 0.05
    assert "delay" in res.to_yaml() and f"{fit.delay_s * 1e3:8.4f}" in res.to_yaml()


def test_sysid_params_are_checked_and_the_errors_name_the_value():
    assert sysid_params(1e-3) == SysIdParams()
    p = sysid_params(1e-3, spacing_hz=0.25, f_max_hz=20.0, fit_delay=True)
    assert (p.spacing_hz, p.f_max_hz, p.fit_delay) == (0.25, 20.0, True)
    assert len(np.concatenate([b.freq_hz for b in segmented_multisine(p, 1e-3)])) == 80
    for kw, what in [({"spacing_hz": 0.3}, "spacing_hz: 0.3 is not allowed; 1/(spacing_hz dt) must be a whole"),
                     ({"spacing_hz": float("nan")}, "spacing_hz: nan is not finite"),
                     ({"spacing_hz": 0.0}, "spacing_hz: 0.0 is out of range"),
                     ({"f_max_hz": 600.0}, "f_max_hz: 600.0 is not below the Nyquist frequency 500 Hz"),
                     ({"f_max_hz": 10.3}, "f_max_hz: 10.3 is not a whole multiple of spacing_hz = 0.5 Hz"),
                     ({"f_max_hz": 2.0}, "n_bands: 10 exceeds the 4 lines up to f_max_hz"),
                     ({"fit_delay": "yes"}, "fit_delay: 'yes' is not allowed"),
                     ({"no_such": 1}, "no_such: unknown key")]:
        with pytest.raises(ParameterError) as exc:
            sysid_params(1e-3, **kw)
        assert str(exc.value).startswith(what), (kw, str(exc.value))
