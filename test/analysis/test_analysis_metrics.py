"""Fidelity measures, stability verdict, plots and report of a 1-D contact run (Insam 2022 §4.4, ch. 5).

All signals are synthetic: prescribed motions with a delayed achieved motion, and a small closed-loop
model of the Table A.2 contact system (numerical mass + unilateral spring, actuator = pure delay,
2.4 um quantisation of z', 0.02 N force noise).  No reference-solution module is used.
"""
from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

from rths_ros.analysis.metrics import (
    MetricsParams,
    compute_metrics,
    contact_events,
    dominant_frequency,
    energy,
    judge_stability,
    power_flows,
    relative_rms_error,
    rms,
)
from rths_ros.analysis.plots import DPI, plot_overlay, plot_run
from rths_ros.analysis.report import write_metrics_json, write_report
from rths_ros.params import ParameterError, build

DT = 1e-3
G = 9.81
# Table A.2
H0, L0, M_EXP, M_NUM, K_NUM, K_EXP, F_D, DZ_MAX = 0.01, 0.071, 0.38, 9.62, 1e4, 8650.0, 0.25, 0.005


# ------------------------------------------------------------------------------------------------
# synthetic runs
# ------------------------------------------------------------------------------------------------

def closed_loop(d_num: float, delay_s: float, noise: bool = True, t_end: float = 4.0, seed: int = 3) -> dict:
    """Table A.2 contact system in deviation form with a delayed actuator and contact gating.

    NUM: m x'' = k_NUM (x_d - x) + d_NUM (x_d' - x') + m_EXP g - F_int; EXP: unilateral spring on z'.
    """
    rng = np.random.default_rng(seed)
    n = int(round(t_end / DT))
    nd = int(round(delay_s / DT))
    t = np.arange(n) * DT
    amp, w = (H0 + DZ_MAX) / 2, 2 * np.pi * F_D
    tm = t + 0.5 * DT
    xd, xdd = -amp * (1 - np.cos(w * tm)), -amp * w * np.sin(w * tm)
    f_noise = rng.normal(0.0, 0.02, n) if noise else np.zeros(n)
    v_noise = rng.normal(0.0, 1e-4, n) if noise else np.zeros(n)
    z, zd, zp, zpd, fi, fm = (np.zeros(n) for _ in range(6))
    c = np.zeros(n, dtype=bool)
    x = v = 0.0
    for k in range(n):
        z[k], zd[k] = x, v
        j = max(k - nd, 0)
        zp[k] = round(z[j] / 2.4e-6) * 2.4e-6 if noise else z[j]
        zpd[k] = zd[j] + v_noise[k]
        pen = -H0 - zp[k]
        c[k] = pen > 0.0
        fm[k] = M_EXP * G - (K_EXP * pen if c[k] else 0.0) + f_noise[k]
        fi[k] = fm[k] if c[k] else M_EXP * G
        a = (K_NUM * (xd[k] - x) + d_num * (xdd[k] - v) + M_EXP * G - fi[k]) / M_NUM
        v += a * DT
        x += v * DT
    return {"k": np.arange(n), "t": t, "z_cmd": z, "zdot_cmd": zd, "z_ach": zp, "zdot_ach": zpd,
            "f_int": fi, "f_meas": fm, "contact": c, "f_d": np.zeros(n)}


def bump(t: np.ndarray, t_end: float = 4.0, depth: float = 0.0127) -> tuple[np.ndarray, np.ndarray]:
    """Smooth 1 - cos dip of the given depth over [0, t_end] and its derivative."""
    w = 2 * np.pi / t_end
    return -depth / 2 * (1 - np.cos(w * t)), -depth / 2 * w * np.sin(w * t)


def open_loop(delay_s: float, extra_osc=None, noise: bool = True, seed: int = 5) -> dict:
    """Prescribed bump z, delayed z' (plus optional oscillation), spring-contact force on z' with gating."""
    rng = np.random.default_rng(seed)
    t = np.arange(4000) * DT
    z, zd = bump(t)
    zp, zpd = bump(t - delay_s)
    if extra_osc is not None:
        o, od = extra_osc(t)
        zp, zpd = zp + o, zpd + od
    if noise:
        zp = np.round(zp / 2.4e-6) * 2.4e-6
        zpd = zpd + rng.normal(0.0, 1e-4, t.size)
    pen = -H0 - zp
    contact = pen > 0.0
    f_meas = M_EXP * G - K_EXP * np.maximum(pen, 0.0) + (rng.normal(0.0, 0.02, t.size) if noise else 0.0)
    f_int = np.where(contact, f_meas, M_EXP * G)
    return {"t": t, "z_cmd": z, "zdot_cmd": zd, "z_ach": zp, "zdot_ach": zpd, "f_int": f_int,
            "f_meas": f_meas, "contact": contact, "f_d": np.zeros_like(t)}


@pytest.fixture(scope="module")
def reference() -> dict:
    r = closed_loop(50.0, 0.0, noise=False)
    return {"t": r["t"], "z": r["z_cmd"]}


# ------------------------------------------------------------------------------------------------
# small functions
# ------------------------------------------------------------------------------------------------

def test_rms_and_relative_error_definitions():
    t = np.arange(4000) * DT
    assert rms(0.003 * np.sin(2 * np.pi * 2 * t)) == pytest.approx(0.003 / math.sqrt(2), rel=1e-12)
    z = np.array([0.0, -0.005, -0.010, -0.005])
    zp = z + np.array([0.0, 0.001, -0.001, 0.001])
    assert relative_rms_error(z, zp) == pytest.approx(math.sqrt(3 / 4) * 1e-3 / 0.010)  # eq. 4.4
    assert relative_rms_error(z, zp, norm=0.081) == pytest.approx(math.sqrt(3 / 4) * 1e-3 / 0.081)
    assert math.isnan(relative_rms_error(np.zeros(3), np.ones(3)))


def test_ideal_transfer_system_gives_exactly_zero_power_error():
    r = open_loop(0.0, noise=False)
    assert np.array_equal(r["z_cmd"], r["z_ach"]) and np.any(r["contact"])
    _, _, p_err = power_flows(r["f_int"], r["zdot_cmd"], r["f_int"], r["zdot_cmd"])
    assert np.all(p_err == 0.0)
    m = compute_metrics(r, r["z_cmd"], DT)
    assert m["E_error_J"] == 0.0 and m["Ec_error_J"] == 0.0 and m["active_fraction"] == 0.0
    assert m["e_track_rel"] == 0.0 and m["e_ref_rel"] == 0.0 and m["max_abs_tracking_error_m"] == 0.0
    assert m["stable"] is True


@pytest.mark.parametrize("tau", [0.002, 0.005, 0.02])
def test_delayed_spring_is_generative_closed_form(tau):
    """z = A sin wt, z' = z(t - tau), F = k z': E_error = k A^2 w sin(w tau) t_end / 2 > 0 (thesis §5.1)."""
    a, f, k, n = 0.002, 5.0, K_EXP, 2000  # 10 whole periods
    t = np.arange(n) * DT
    w = 2 * np.pi * f
    zd = a * w * np.cos(w * t)
    zp, zpd = a * np.sin(w * (t - tau)), a * w * np.cos(w * (t - tau))
    force = k * zp                                  # spring EXP part, fed back unchanged
    _, _, p_err = power_flows(force, zd, force, zpd)
    e = energy(p_err, DT)
    assert e > 0.0
    assert e == pytest.approx(k * a * a * w * math.sin(w * tau) * n * DT / 2, rel=1e-9)


def test_delayed_mass_is_dissipative_closed_form():
    """Mass EXP part (F = m z''): E_error = -m A^2 w^3 sin(w tau) t_end / 2 < 0 (thesis §5.1)."""
    a, f, m, tau, n = 0.002, 5.0, 2.0, 0.005, 2000
    t = np.arange(n) * DT
    w = 2 * np.pi * f
    zd = a * w * np.cos(w * t)
    zpd = a * w * np.cos(w * (t - tau))
    force = -m * a * w * w * np.sin(w * (t - tau))
    e = energy(power_flows(force, zd, force, zpd)[2], DT)
    assert e < 0.0
    assert e == pytest.approx(-m * a * a * w ** 3 * math.sin(w * tau) * n * DT / 2, rel=1e-9)


def test_delayed_actuator_on_contact_spring_injects_energy():
    """The gated contact run of the 1-D test: P_error is positive on average in contact, E^c_error > 0."""
    m0 = compute_metrics(open_loop(0.0, noise=False), None, DT)
    for tau in (0.005, 0.02):
        r = open_loop(tau, noise=False)
        m = compute_metrics(r, None, DT)
        _, _, p_err = power_flows(r["f_int"], r["zdot_cmd"], r["f_meas"], r["zdot_ach"])
        assert np.mean(p_err[r["contact"]]) > 0.0
        assert m["Ec_error_J"] > 0.0 and m["E_error_J"] > 0.0
    assert m["Ec_error_J"] > 3 * compute_metrics(open_loop(0.005, noise=False), None, DT)["Ec_error_J"]
    assert m0["Ec_error_J"] == 0.0


def test_npc_damper_dissipates():
    r = open_loop(0.01)
    alpha = 40.0                                            # F_d = alpha z-dot, alpha >= 0 (eq. 5.5)
    r["f_d"] = np.where(r["contact"], alpha * r["zdot_cmd"], 0.0)
    r["f_int"] = r["f_int"] + r["f_d"]
    m = compute_metrics(r, None, DT)
    expect = alpha * np.sum(r["zdot_cmd"][r["contact"]] ** 2) * DT
    assert m["E_diss_J"] == pytest.approx(expect, rel=1e-12) and m["E_diss_J"] > 0.0
    assert m["peak_damping_force_n"] == pytest.approx(np.max(np.abs(r["f_d"])))
    # eq. 5.4: the damper lowers E_error by exactly E_diss
    r0 = dict(r, f_int=r["f_int"] - r["f_d"], f_d=np.zeros_like(r["t"]))
    assert compute_metrics(r0, None, DT)["E_error_J"] - m["E_error_J"] == pytest.approx(m["E_diss_J"], rel=1e-9)


def test_contact_events_merge_flicker_and_open_end():
    t = np.arange(100) * DT
    c = np.zeros(100, dtype=bool)
    c[10:30] = True
    c[33:50] = True          # 3 ms gap: flicker
    c[80:] = True            # ends in contact
    ev = contact_events(c, t, merge_gap_s=0.02)
    assert [(e.start, e.stop) for e in ev] == [(10, 50), (80, 100)]
    assert ev[0].touchdown_s == pytest.approx(0.010) and ev[0].liftoff_s == pytest.approx(0.050)
    assert ev[1].liftoff_s is None
    assert len(contact_events(c, t, merge_gap_s=0.0)) == 3
    assert contact_events(np.zeros(5, bool), t[:5]) == []


def test_contact_phase_ends_at_take_off_when_the_gate_chatters_after_it():
    """A 1 s ground contact followed by 12 ms gaps and 9 ms openings (the gate opening on the specimen's
    ringing in flight): with hold_s the phase ends exactly at the first fall after the long contact, the
    openings are no contact phase, and E^c_error sums P_error over [TD, TO) only (exact, rel 1e-12)."""
    n = 3000
    t = np.arange(n) * DT
    c = np.zeros(n, dtype=bool)
    c[500:1500] = True
    for s in range(1512, n - 9, 21):
        c[s:s + 9] = True
    ev = contact_events(c, t, merge_gap_s=0.02)
    assert len(ev) == 1 and ev[0].stop > 2900                # without the rule: merged to the end of the chatter
    ev = contact_events(c, t, merge_gap_s=0.02, hold_s=0.3)
    assert [(e.start, e.stop) for e in ev] == [(500, 1500)]
    # the flicker before a long contact still merges into it
    c2 = c.copy()
    c2[490:495] = True
    assert [(e.start, e.stop) for e in contact_events(c2, t, 0.02, 0.3)] == [(490, 1500)]
    # no long contact at all: the openings stay contact phases (the rule does not apply)
    short = np.zeros(n, dtype=bool)
    short[100:110] = True
    assert len(contact_events(short, t, 0.02, 0.3)) == 1
    rng = np.random.default_rng(3)
    rec = {"t": t, "z_cmd": np.zeros(n), "z_ach": np.zeros(n), "zdot_cmd": rng.normal(0, 1e-3, n),
           "zdot_ach": rng.normal(0, 1e-3, n), "f_int": np.full(n, 3.0), "f_meas": np.full(n, 3.0), "contact": c}
    m = compute_metrics(rec, None, DT)
    p_err = power_flows(rec["f_int"], rec["zdot_cmd"], rec["f_meas"], rec["zdot_ach"])[2]
    assert m["liftoff_s"] == pytest.approx(1.5) and m["n_contact_events"] == 1
    assert m["Ec_error_J"] == pytest.approx(float(np.sum(p_err[500:1500]) * DT), rel=1e-12)
    m0 = compute_metrics(rec, None, DT, params=build(MetricsParams, {"contact_hold_s": 0.0}))
    assert m0["liftoff_s"] > 2.9 and m0["Ec_error_J"] != pytest.approx(m["Ec_error_J"], rel=1e-3)


def test_dominant_frequency_ignores_dc_and_trend():
    t = np.arange(4000) * DT
    x = 0.004 + 0.001 * t + 1e-4 * np.sin(2 * np.pi * 6.2 * t)       # offset + drift + 6.2 Hz
    assert dominant_frequency(x, DT, f_min=2.0) == pytest.approx(6.2, abs=0.02)
    y = 5e-4 + 1e-4 * np.sin(2 * np.pi * 5.5 * t + 0.3)
    assert dominant_frequency(y, DT) == pytest.approx(5.5, abs=0.02)
    assert math.isnan(dominant_frequency(np.zeros(100), DT))


def test_params_validation():
    with pytest.raises(ParameterError, match="osc_band_hi_hz"):
        build(MetricsParams, {"osc_band_lo_hz": 20.0, "osc_band_hi_hz": 2.0}, section="metrics")
    with pytest.raises(ParameterError, match="growth_ratio"):
        build(MetricsParams, {"growth_ratio": 0.5})


# ------------------------------------------------------------------------------------------------
# whole-run measures and stability verdict
# ------------------------------------------------------------------------------------------------

def test_reference_run_contact_timing_and_normalisation(reference):
    """Ideal loop of Table A.2 (d_NUM = 50): TD 1.216 s, TO 2.782 s, min z = -12.70 mm."""
    r = closed_loop(50.0, 0.0, noise=False)
    m = compute_metrics(r, reference, DT)
    assert m["touchdown_s"] == pytest.approx(1.216, abs=0.002)
    assert m["liftoff_s"] == pytest.approx(2.782, abs=0.003)
    assert m["n_contact_events"] == 1
    assert m["max_abs_z_cmd_m"] == pytest.approx(0.0127, abs=0.0001)
    assert m["peak_contact_force_n"] == pytest.approx(23.3, abs=0.3)
    assert m["stable"] is True


def test_lagged_noisy_tracking_is_stable_and_normalised(reference):
    """Smooth lagged tracking (20 ms) with noise: stable, max|e_track| inside the thesis's 0.02-0.5 mm."""
    r = open_loop(0.02)
    m = compute_metrics(r, reference, DT)
    assert m["stable"] is True, m["stability_reason"]
    assert "no growing or large oscillation" in m["stability_reason"]
    assert 2e-5 < m["max_abs_tracking_error_m"] < 5e-4
    e = r["z_cmd"] - r["z_ach"]
    assert m["e_track_rel"] == pytest.approx(rms(e) / np.max(np.abs(r["z_cmd"])), rel=1e-12)
    assert m["e_track_rel_abs_origin"] == pytest.approx(rms(e) / (np.max(r["z_cmd"]) + H0 + L0), rel=1e-9)
    assert m["e_track_rel"] / m["e_track_rel_abs_origin"] == pytest.approx((H0 + L0) / 0.0127, rel=0.01)
    assert m["edot_track_rel"] > 0 and m["e_ref_rel"] > 0
    assert "initial rest position" in m["normalisation"]
    assert m["dominant_error_freq_hz"] < 2.0          # the lag of the slow motion dominates, not an oscillation


def test_growing_oscillation_is_unstable():
    """Growing 5.5 Hz oscillation in contact (20 um -> 0.35 mm, below the amplitude threshold)."""
    def osc(t):
        env = np.where(t > 1.2, 2e-5 * np.exp(2.0 * (t - 1.2)), 0.0) * (t < 2.62)
        w = 2 * np.pi * 5.5
        return env * np.sin(w * t), env * w * np.cos(w * t)
    r = open_loop(0.005, extra_osc=osc)
    m = compute_metrics(r, None, DT)
    assert m["stable"] is False
    assert m["stability_reason"].startswith("growing oscillation")
    assert m["oscillation_amplitude_m"] < m["oscillation_threshold_m"]
    assert m["oscillation_growth_ratio"] > 3.0         # e^(2/s * ~0.8 s) between the thirds
    assert m["dominant_error_freq_hz"] == pytest.approx(5.5, abs=0.1)
    assert m["dominant_osc_freq_hz"] == pytest.approx(5.5, abs=0.1)


def test_sustained_large_oscillation_is_unstable():
    def osc(t):
        w = 2 * np.pi * 6.0
        on = (t > 1.3) & (t < 2.6)
        return on * 1e-3 * np.sin(w * t), on * 1e-3 * w * np.cos(w * t)
    m = compute_metrics(open_loop(0.005, extra_osc=osc), None, DT)
    assert m["stable"] is False and m["stability_reason"].startswith("sustained large oscillation")
    assert m["oscillation_amplitude_m"] == pytest.approx(1e-3, rel=0.1)


@pytest.mark.parametrize("d_num,delay_s,stable", [
    (50.0, 0.003, True), (50.0, 0.005, True), (50.0, 0.010, False), (50.0, 0.015, False),
    (200.0, 0.010, True), (200.0, 0.025, True), (200.0, 0.035, False),
])
def test_closed_loop_verdict_matches_stability_margin(d_num, delay_s, stable):
    """tau_crit = 5.8 ms (d_NUM = 50) and 28.4 ms (d_NUM = 200) (thesis §4.1.2)."""
    m = compute_metrics(closed_loop(d_num, delay_s), None, DT)
    assert m["stable"] is stable, m["stability_reason"]
    if not stable:
        assert 5.0 < m["dominant_osc_freq_hz"] < 7.5          # loop mode, thesis: 5-7 Hz
        assert m["Ec_error_J"] > 1e-3                       # energy injected (thesis: 3.5e-3 J)


def test_unstable_run_has_more_energy_error_than_stable():
    s = compute_metrics(closed_loop(50.0, 0.003), None, DT)
    u = compute_metrics(closed_loop(50.0, 0.010), None, DT)
    assert u["Ec_error_J"] > 10 * s["Ec_error_J"] > 0.0
    assert 6.0 < u["dominant_error_freq_hz"] < 7.5


def test_non_finite_and_aborted_runs_are_unstable():
    r = open_loop(0.005)
    r["z_ach"] = r["z_ach"].copy()
    r["z_ach"][2500] = np.nan
    m = compute_metrics(r, None, DT)
    assert m["stable"] is False and "non-finite" in m["stability_reason"] and "z_ach" in m["stability_reason"]
    r2 = dict(open_loop(0.005), aborted=True, abort_reason="leg 3 stroke limit")
    m2 = compute_metrics(r2, None, DT)
    assert m2["stable"] is False and m2["aborted"] is True and "leg 3 stroke limit" in m2["stability_reason"]
    v = judge_stability(r2["t"], r2["z_cmd"], r2["z_cmd"] + 0.01, DT)
    assert v.stable is False and v.reason.startswith("tracking lost")


def test_reference_forms_and_loop_pass_through(reference):
    r = open_loop(0.005)
    loop = {"steps": 4000, "deadline_miss_ratio": 0.001, "step_latency_p50_s": 2e-4, "step_latency_p99_s": 6e-4}
    a = compute_metrics(r, reference["z"], DT, loop)
    coarse = {"t": reference["t"][::10], "z": reference["z"][::10]}
    b = compute_metrics(r, coarse, DT)
    c = compute_metrics(dict(r, z_ref=reference["z"], loop=loop), None, DT)
    assert a["e_ref_rel"] == pytest.approx(b["e_ref_rel"], rel=1e-3)
    assert c["e_ref_rel"] == a["e_ref_rel"] and c["loop"] == loop == a["loop"]
    assert compute_metrics(r, None, DT)["e_ref_rel"] is None
    with pytest.raises(ValueError, match="z_ref"):
        compute_metrics(r, reference["z"][:-5], DT)
    json.dumps(a, allow_nan=False)  # plain, JSON-serialisable values
    for key in ("e_track_rel", "e_ref_rel", "edot_track_rel", "max_abs_tracking_error_m", "E_error_J",
                "Ec_error_J", "E_diss_J", "touchdown_s", "liftoff_s", "stable", "stability_reason",
                "dominant_error_freq_hz", "peak_damping_force_n", "normalisation", "loop",
                "e_track_rel_abs_origin"):
        assert key in a


# ------------------------------------------------------------------------------------------------
# JSON, plots, report
# ------------------------------------------------------------------------------------------------

def test_write_metrics_json(tmp_path):
    m = {"b": np.float64(0.5), "a": True, "c": float("nan"), "d": np.int64(3), "e": [np.float32(1.5), None]}
    p = write_metrics_json(m, tmp_path / "sub" / "metrics.json")
    text = p.read_text()
    assert list(json.loads(text)) == ["a", "b", "c", "d", "e"]
    assert '"a": true' in text and '"c": null' in text and '"b": 0.5' in text and '"d": 3' in text
    assert json.loads(text)["e"] == [1.5, None]


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_plots_and_report(tmp_path, reference):
    r = closed_loop(50.0, 0.010)
    r["f_d"] = np.where(r["contact"], 30.0 * r["zdot_cmd"], 0.0)
    m = compute_metrics(r, reference, DT)
    paths = plot_run(r, reference, m, tmp_path / "fig")
    assert [p.name for p in paths] == ["displacement.png", "tracking_error.png", "interface_force.png",
                                       "power_error.png"]
    w, h = _png_size(paths[0])
    assert (w, h) == (int(8.0 * DPI), int(4.2 * DPI))
    assert _png_size(paths[3])[1] > h                      # extra F_d panel
    ov = plot_overlay({"3 ms": closed_loop(50.0, 0.003, noise=False), "10 ms": r}, tmp_path / "fig",
                      z_ref=reference)
    assert all(p.stat().st_size > 10_000 for p in paths + ov)

    scenario = {"name": "contact1d_d50", "numerical": {"d_num_kg_per_s": 50.0, "k_num_n_per_m": 1e4},
                "plant": {"delay_s": 0.01}}
    rep = write_report(m, scenario, paths, tmp_path)
    text = rep.read_text()
    assert rep.name == "report.md"
    assert "**Verdict: UNSTABLE.**" in text and m["stability_reason"] in text
    assert "| `e_ref_rel` |" in text and "| `E_diss_J` |" in text and "| J |" in text
    assert "`numerical.d_num_kg_per_s` | 50" in text
    assert "![displacement](fig/displacement.png)" in text
    assert "initial rest position" in text
