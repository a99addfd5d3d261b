"""Bartl 2019 ch. 6 findings on the twins (rths_ros.analysis.bartl_rigs / bartl_beams) and ``rths bartl``.

Short runs (a few seconds of simulated test); the full studies are ``rths bartl cubic-spring`` and
``rths bartl beams`` (docs/bartl_rigs.md)."""
from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pytest

from rths_ros import bartl_cli
from rths_ros.analysis.bartl_rigs import (
    CUBIC_CASES,
    cubic_combined_study,
    cubic_measures,
    cubic_supervisor_study,
    format_combined,
    format_supervisor,
)
from rths_ros.params import ParameterError


def _parser():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd")
    bartl_cli.add_parsers(sub)
    return p


def test_measures_of_a_synthetic_record():
    f, dt = 10.0, 1e-3
    t = np.arange(4000) * dt
    yv = 0.004 * np.cos(2 * math.pi * f * t)
    ye = 0.8 * 0.004 * np.cos(2 * math.pi * f * t - math.radians(30.0)) + 0.0002
    r = {"t": t, "g": ye - yv, "y_vir": yv, "y_exp": ye, "f_hz": f, "amp_n": 1.0, "strategy": "x", "dt_s": dt,
         "t_on_s": 1.0, "p_in": np.where(t > 2.0, -2.0, 0.5), "saturated": (t > 3.5).astype(float),
         "mu_lms": np.full(t.size, 0.05), "nu_lms": np.where(t > 2.5, 0.9, 1.0)}
    m = cubic_measures(r)
    assert m["ratio"] == pytest.approx(0.8, rel=1e-6)
    assert m["phase_deg"] == pytest.approx(-30.0, abs=1e-4)
    assert m["offset_mm"] == pytest.approx(0.2, abs=1e-6)
    assert m["p_out_max_w"] == pytest.approx(2.0)
    assert m["e_out_j"] == pytest.approx(2.0 * 2.0, rel=1e-3)     # 2 W for the 2 s after t = 2 s
    assert m["sat_fraction"] == pytest.approx(0.5 / 3.0, abs=1e-3)
    assert m["unstable"] and m["nu_min"] == 0.9


def test_supervisor_stabilises_what_is_unstable_without_it():
    """§6.2.1, Table 6.3 (mu_init = 0.1): without supervision unstable at 10 / 20 / 30 Hz (the demand sits in the
    +-25 mm saturation); with it stable within 0.5 s, peak power outflow of the order of the thesis's ~3 W (0.5-10 W
    accepted), mu lowered, nu below 1, and the gap's harmonic below 5 % of the virtual amplitude after 10 s."""
    rows, _ = cubic_supervisor_study(CUBIC_CASES, t_adapt_s=10.0)
    for r in rows:
        case = (r["f_hz"], r["supervisor"])
        if not r["supervisor"]:
            assert r["unstable"] and r["sat_fraction"] > 0.3, case
            assert r["p_out_max_w"] > 50.0, case
        else:
            assert not r["unstable"] and r["sat_fraction"] == 0.0, case
            assert r["t_stab_s"] < 0.5, case
            assert 0.5 < r["p_out_max_w"] < 10.0, case
            assert r["mu_final"] < 0.1 and r["nu_min"] < 1.0, case
            assert r["sync_error"] < 0.05, case
    assert "unstable" in format_supervisor(rows)


def test_pbc_phase_error_aff_offset_and_the_combination_without_either():
    """§6.2.2: pure PBC lags (phase error > 15 deg at every case), pure AFF is in phase (< 2 deg) but offset (> 3 % of
    the amplitude), PBC + AFF is in phase (< 2 deg), amplitude within 3 %, offset < 1 % of the amplitude."""
    rows, _ = cubic_combined_study(CUBIC_CASES, t_adapt_s=6.0)
    by = {(r["f_hz"], r["strategy"]): r for r in rows}
    for f, _ in CUBIC_CASES:
        pbc, aff, both = by[(f, "pbc")], by[(f, "aff")], by[(f, "pbc_aff")]
        assert pbc["phase_deg"] < -15.0, f
        assert abs(aff["phase_deg"]) < 2.0 and abs(aff["ratio"] - 1) < 0.03, f
        assert aff["offset_rel"] > 0.03, f
        assert abs(both["phase_deg"]) < 2.0 and abs(both["ratio"] - 1) < 0.03, f
        assert abs(both["offset_rel"]) < 0.01, f
        assert abs(aff["ref_ratio"] - 1) < 0.03, f            # the AFF's virtual part follows the reference
    # the phase error of pure PBC grows with the frequency (actuator lag)
    assert by[(10.0, "pbc")]["phase_deg"] > by[(20.0, "pbc")]["phase_deg"] > by[(30.0, "pbc")]["phase_deg"]
    assert "pbc_aff" in format_combined(rows)


def test_cli_cubic_spring_writes_json_and_table(tmp_path, capsys):
    a = _parser().parse_args(["aff-rigs", "cubic-spring", "--study", "supervisor", "--cases", "20:40",
                              "--t-adapt", "2", "--no-plots", "--out", str(tmp_path)])
    assert a.func(a) == 0
    d = json.loads((tmp_path / "cubic_spring.json").read_text())
    assert [r["supervisor"] for r in d["supervisor"]] == [False, True]
    assert d["supervisor"][0]["unstable"] and not d["supervisor"][1]["unstable"]
    text = capsys.readouterr().out
    assert "40 N / 20 Hz" in text and (tmp_path / "cubic_spring.md").exists()


@pytest.mark.parametrize("argv, flag", [
    (["--cases", "200:10"], "--cases"),
    (["--cases", "10-10"], "--cases"),
    (["--t-adapt", "1"], "--t-adapt"),
    (["--mu-lms", "2"], "--mu-lms"),
])
def test_cli_cubic_spring_names_the_bad_flag(argv, flag, tmp_path):
    a = _parser().parse_args(["aff-rigs", "cubic-spring", "--out", str(tmp_path), *argv])
    with pytest.raises(ParameterError, match=flag):
        a.func(a)


# ------------------------------------------------------------------------------------------------------- beams
@pytest.fixture(scope="module")
def beam_rig():
    from rths_ros.core.models.bartl.beams import build_rig
    return build_rig()


def test_beams_synchronise_at_60_320_800_hz(beam_rig):
    """§6.1.2 (QR-RLS, simultaneous, mu_ad = 0.999, mu_id = 0.9999, t_id = 5 s): after 5 s of adaptation the gap's
    harmonic is below 2 % of the virtual interface motion at each frequency, both actuator points in phase within
    2 deg; at 60 and 320 Hz the virtual interface moves as the coupled reference within 2 %."""
    from rths_ros.analysis.bartl_rigs import beam_sync_study, format_sync
    rows, _ = beam_sync_study((60.0, 320.0, 800.0), t_id_s=5.0, t_adapt_s=5.0, rig=beam_rig)
    for r in rows:
        assert r["sync_error"] < 0.02, r["f0_hz"]
        assert max(abs(v) for v in r["phase_deg"]) < 2.0, r["f0_hz"]
        if r["f0_hz"] < 500:
            assert abs(r["ref_ratio_z"] - 1) < 0.02 and abs(r["ref_ratio_alpha"] - 1) < 0.02, r["f0_hz"]
    assert "800 Hz" in format_sync(rows)


def test_beams_lms_01_is_unstable_at_320_hz_and_rls_is_not(beam_rig):
    """§6.1.4: LMS with mu_LMS = 0.1 diverges at 320 Hz; QR-RLS with the thesis's forgetting factor does not."""
    from rths_ros.analysis.bartl_rigs import beam_aff
    from rths_ros.core.models.bartl.beams import simulate_beams
    lms = simulate_beams(beam_aff((320.0,), 5.0, law="lms", simultaneous=False, mu_lms=0.1), 320.0, 1.0, 8.0,
                         rig=beam_rig)
    rls = simulate_beams(beam_aff((320.0,), 5.0), 320.0, 1.0, 8.0, rig=beam_rig)
    assert lms["diverged"] and not rls["diverged"]


def test_square_wave_more_harmonics_synchronise_better(beam_rig):
    """§6.1.5 (square wave, 40 Hz, t_id = 20 s, 5 s of adaptation): the rms gap falls by more than 5x from 1 to 5 harmonics and
    9 harmonics are no worse than 5 (10 % margin); with 9 harmonics the gap at 9 f0 is below a third of the 5-harmonic
    run's."""
    from rths_ros.analysis.bartl_rigs import beam_square_study
    rows, _ = beam_square_study(40.0, (1, 5, 9), t_id_s=20.0, t_adapt_s=5.0, rig=beam_rig)
    r1, r5, r9 = rows
    assert r5["rel_rms"] < r1["rel_rms"] / 5.0
    assert r9["rel_rms"] < 1.1 * r5["rel_rms"]
    assert r9["gap_k_um"][9] < r5["gap_k_um"][9] / 3.0


def test_cli_beams_names_the_bad_flag(tmp_path):
    for argv, flag in ((["--frequencies", "2000"], "--frequencies"), (["--harmonics", "0"], "--harmonics"),
                       (["--square-hz", "80", "--harmonics", "1,20"], "--harmonics"),
                       (["--square-hz", "100", "--harmonics", "15"], "--square-hz"), (["--mu-ad", "0.5"], "--mu-ad"),
                       (["--t-id", "0"], "--t-id")):
        a = _parser().parse_args(["aff-rigs", "beams", "--out", str(tmp_path), *argv])
        with pytest.raises(ParameterError, match=flag):
            a.func(a)


def test_cli_beams_sync_writes_json(tmp_path):
    a = _parser().parse_args(["aff-rigs", "beams", "--study", "sync", "--frequencies", "320", "--t-id", "2",
                              "--t-adapt", "1", "--no-plots", "--out", str(tmp_path)])
    assert a.func(a) == 0
    d = json.loads((tmp_path / "beams.json").read_text())
    assert [r["f0_hz"] for r in d["sync"]] == [320.0] and d["square"] == []
