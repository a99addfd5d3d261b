"""Gait analysis (Insam 2022 ch. 15, ch. 17): metrics on synthetic records with known answers, figures, GIF and the
multi-trial reproducibility overlay."""
from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from rths_ros.families.gait.metrics import (
    GaitRecord,
    animate_stick_figure,
    contact_events,
    gait_metrics,
    plot_gait,
    plot_reproducibility,
    reproducibility_stats,
)

M, L0, G = 30.0, 1.0, 9.81      # Table A.7 subject: 30 kg, 1 m legs
BW = M * G
CYCLE = 0.6                     # s, gait cycle of ch. 17
STANCE_R = 0.85                 # right stance fraction reported in ch. 17
A_COM = 0.02                    # m, sinusoid amplitude (peak-to-peak 0.04 m)


def synthetic(dt=1e-3, n_cycles=2, com_offset=0.0, t0=0.0, noise=0.0, seed=0):
    k = np.arange(int(round(n_cycles * CYCLE / dt)) + 1)
    s = k * dt
    t = t0 + s
    com_x = 1.0 * s - 0.1 * s ** 2                      # x' = 1 - 0.2 s: trend -0.2 m/s^2
    com_y = 1.0 + A_COM * np.cos(2 * math.pi * s / (CYCLE / 2)) + com_offset
    trunk = -0.1 * s
    kc = int(round(CYCLE / dt))
    kp = k % kc                                         # integer phase: events exactly on samples
    ph = kp * dt
    td_r = 0.05
    c_r = (kp >= round(td_r / dt)) & (kp < round((td_r + STANCE_R * CYCLE) / dt))
    c_l = (kp >= round(0.4 / dt)) | (kp < round(0.1 / dt))   # left stance 0.4 .. 0.1 of the next cycle (50 %)
    u = np.clip((ph - td_r) / (STANCE_R * CYCLE), 0.0, 1.0)
    gy = BW * (1.1 * np.exp(-((u - 0.25) / 0.1) ** 2) + 1.2 * np.exp(-((u - 0.75) / 0.1) ** 2)) * c_r
    gx = -0.2 * BW * np.sin(2 * math.pi * u) * c_r
    tau = 0.1 * BW * L0 * np.sin(2 * math.pi * u) * c_r
    foot = np.where(c_r, 0.3 + (k // kc) * 0.6, np.nan)
    cop = foot - 0.06 + 0.25 * u
    rng = np.random.default_rng(seed)
    gy = gy + noise * rng.normal(size=t.size)
    return GaitRecord(t=t, com_x=com_x, com_y=com_y, trunk_angle=trunk,
                      grf_x={"R": gx}, grf_y={"R": gy}, hip_torque={"R": tau}, cop_x={"R": cop},
                      foot_x={"R": foot}, contact={"R": c_r, "L": c_l})


@pytest.fixture(scope="module")
def rec():
    return synthetic()


def test_events_and_stance_fraction(rec):
    td, to = contact_events(rec.t, rec.contact["R"])
    assert td == pytest.approx([0.05, 0.65], abs=1e-9)
    assert to == pytest.approx([0.56, 1.16], abs=1e-9)
    m = gait_metrics(rec, M, L0, G, leg="R")
    assert m["stride_source"] == "touch_down_R"
    assert m["stride_duration_s"] == pytest.approx(CYCLE, abs=1e-9)
    assert m["stance_fraction_R"] == pytest.approx(STANCE_R, abs=1e-9)
    assert m["stance_fraction_L"] == pytest.approx(0.5, abs=1e-9)
    # double support: L and R both down for 0.05..0.1 and 0.4..0.56 of the cycle = 0.21 s of 0.6 s
    assert m["double_support_fraction"] == pytest.approx(0.21 / 0.6, abs=1e-9)


def test_com_speed_trunk(rec):
    m = gait_metrics(rec, M, L0, G)
    assert m["com_peak_to_peak_m"] == pytest.approx(2 * A_COM, abs=1e-12)
    assert m["com_amplitude_m"] == pytest.approx(A_COM, abs=1e-12)
    # interior apexes at 0.3, 0.6, 0.9 s
    assert [e["t_s"] for e in m["com_maxima"]] == pytest.approx([0.3, 0.6, 0.9], abs=1e-9)
    assert [e["x_m"] for e in m["com_maxima"]] == pytest.approx([0.3 - 0.009, 0.6 - 0.036, 0.9 - 0.081], abs=1e-9)
    assert m["xd_trend_m_per_s2"] == pytest.approx(-0.2, abs=1e-6)
    assert m["xd_start_m_per_s"] == pytest.approx(1.0, abs=1e-3)
    assert m["trunk_change_rad"] == pytest.approx(-0.12, abs=1e-9)
    assert m["trunk_range_rad"] == pytest.approx(0.12, abs=1e-9)


def test_normalised_forces_and_cop(rec):
    m = gait_metrics(rec, M, L0, G)
    assert m["body_weight_n"] == pytest.approx(294.3)
    assert m["grf_y_first_peak_bw"] == pytest.approx(1.1, abs=2e-3)
    assert m["grf_y_second_peak_bw"] == pytest.approx(1.2, abs=2e-3)
    assert m["grf_y_second_peak_bw"] > m["grf_y_first_peak_bw"]
    assert m["grf_y_basin_bw"] == pytest.approx(2.3 * math.exp(-6.25), abs=2e-3)
    assert m["grf_x_max_abs_bw"] == pytest.approx(0.2, abs=1e-4)
    assert m["grf_x_min_bw"] == pytest.approx(-0.2, abs=1e-4)      # braking first
    assert m["hip_torque_max_norm"] == pytest.approx(0.1, abs=1e-4)
    assert m["cop_start_m"] == pytest.approx(-0.06, abs=1e-9)
    assert m["cop_travel_m"] == pytest.approx(0.25, abs=1e-3)
    assert m["cop_forward_fraction"] == 1.0


def test_grf_through_the_vpp_has_its_own_metrics(rec, tmp_path):
    """A record with the plate force in grf_x/grf_y and the model's GRF through the VPP in grf_x_vpp/grf_y_vpp
    (the gait run's prosthetic leg): the grf_vpp_* metrics come from the latter, the grf_* ones are unchanged."""
    gx, gy = rec.grf_x["R"], rec.grf_y["R"]
    v = GaitRecord(t=rec.t, com_x=rec.com_x, com_y=rec.com_y, trunk_angle=rec.trunk_angle, grf_x={"R": 2.0 * gx},
                   grf_y={"R": gy}, grf_x_vpp={"R": 0.5 * gx}, grf_y_vpp={"R": 0.9 * gy}, contact=rec.contact)
    m = gait_metrics(v, M, L0, G)
    assert m["grf_x_max_abs_bw"] == pytest.approx(0.4, abs=1e-4)
    assert m["grf_vpp_x_max_abs_bw"] == pytest.approx(0.1, abs=1e-4)
    assert m["grf_y_first_peak_bw"] == pytest.approx(1.1, abs=2e-3)
    assert m["grf_vpp_y_first_peak_bw"] == pytest.approx(0.99, abs=2e-3)
    assert m["grf_vpp_y_second_peak_bw"] == pytest.approx(1.08, abs=2e-3)
    assert m["grf_vpp_y_second_peak_t_s"] == m["grf_y_second_peak_t_s"]
    assert "grf_vpp_x_max_abs_bw" not in gait_metrics(rec, M, L0, G)
    f = GaitRecord.from_mapping({"t": rec.t, "com_x": rec.com_x, "com_y": rec.com_y, "grf_x_vpp_R": gx,
                                 "contact_R": rec.contact["R"]})
    assert np.array_equal(f.grf_x_vpp["R"], gx) and not f.grf_x
    paths = plot_gait(v, tmp_path, M, L0, G, prefix="v")
    assert (tmp_path / "v_grf.png") in paths


def test_single_stance_record_uses_the_record_length():
    t = np.linspace(0.0, 0.5, 501)
    c = (t >= 0.1) & (t < 0.4)
    r = GaitRecord(t=t, com_x=t, com_y=np.ones_like(t), contact={"R": c})
    m = gait_metrics(r, M, L0)
    assert m["stride_source"] == "record"
    assert m["stance_fraction_R"] == pytest.approx(0.3 / 0.5, abs=2e-3)
    with pytest.raises(ValueError):
        GaitRecord(t=t, com_x=t[:-1], com_y=t)
    with pytest.raises(ValueError):
        gait_metrics(r, 0.0, L0)


def test_figures_and_animation(rec, tmp_path):
    paths = plot_gait(rec, tmp_path / "fig", M, L0)
    assert [p.name for p in paths] == ["gait_com.png", "gait_grf.png", "gait_hip_torque.png", "gait_cop.png"]
    for p in paths:
        assert p.stat().st_size > 5000
        with Image.open(p) as im:
            assert im.format == "PNG"
    gif = animate_stick_figure(rec, tmp_path / "anim" / "stride.gif", max_frames=12, fps=10)
    assert gif.read_bytes()[:4] == b"GIF8"
    with Image.open(gif) as im:
        assert im.n_frames == 12


def test_reproducibility_overlay(tmp_path):
    d = 0.004
    trials = [synthetic(com_offset=o, t0=t0) for o, t0 in ((-d, 0.0), (0.0, 3.0), (d, 7.5))]
    st = reproducibility_stats(trials, ("com_y", "grf_y_R"))
    assert st["n_trials"] == 3
    # offsets -d, 0, +d: population spread d sqrt(2/3) everywhere, mean = the middle trial
    assert st["com_y"]["std"] == pytest.approx(np.full(500, d * math.sqrt(2 / 3)), abs=1e-12)
    assert st["com_y"]["max_std"] == pytest.approx(d * math.sqrt(2 / 3), abs=1e-12)
    assert st["com_y"]["mean"] == pytest.approx(np.interp(st["t"], trials[1].t - 3.0, trials[1].com_y), abs=1e-12)
    assert st["grf_y_R"]["max_std"] == pytest.approx(0.0, abs=1e-9)   # identical forces, shifted in time only
    noisy = [synthetic(noise=5.0, seed=k) for k in range(3)]
    path, st2 = plot_reproducibility(noisy, tmp_path / "repro.png")
    assert path.stat().st_size > 5000
    assert 2.0 < st2["grf_y_R"]["rms_std"] < 6.0       # N(0, 5 N) noise: population std of 3 samples ~ 4.1 N
    with pytest.raises(ValueError):
        reproducibility_stats(noisy[:1])
