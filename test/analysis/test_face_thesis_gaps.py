"""FACE numbers of Insam 2022 ch. 12 that the twin does not reproduce one to one, and the experiments that explain
them (docs/fidelity.md, "Not reproduced" of section 4 and the §12.3 sections of section 5): the test run is
q_min also when the fit range leaves it out (§12.2), the detrended contact-window q (§12.3), the §12.3 twin
with the thesis's transfer system and a mis-identified k_EXP, and the brackets of the Table 12.1 system 1 + VFF
and §12.1.2 spring prediction errors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rths_ros.analysis import face

DT = 1e-3
SWEEPS = Path(__file__).resolve().parents[2] / "config" / "sweeps"


def _run(name: str, tmp: Path, **change):
    spec, raw = face.load_sweep(SWEEPS / name)
    raw = {**raw, **change}
    spec = face.sweep_from_data(raw)
    out = tmp / spec.name
    return face.run_sweep(spec, out, face.make_runner(spec, out), workers=1, raw=raw, progress=None), raw, out


def _refit(out: Path, raw: dict, **change) -> dict:
    return face.reanalyse(out, face.sweep_from_data({**raw, **change}))


def test_q_min_is_the_test_run_also_outside_the_fit_range():
    """§12.2: h is fitted over tau_add = 1..6 ms, a_min is the run without added delay.  With the points
    q = 1 mm * 10^(p/20) (dB-linear, 1 dB per step) and the run p = 0 left out of the fit, q_min is that
    run's q and the error estimate uses it (exact to 1e-9)."""
    t = np.arange(2000) * DT
    values = [0, 1, 2, 3, 4, 5, 6]
    recs = []
    for p in values:
        a = 1e-3 * 10 ** (p / 20)
        recs.append({"t": t, "dt": DT, "z_ach": a * np.sin(2 * np.pi * 8 * t),
                     "z_cmd": a * np.sin(2 * np.pi * 8 * (t + (p + 1) * DT))})
    spec = face.sweep_from_data({"name": "sel", "runner": "linear_vrths", "scenario": "system1",
                                 "vary": {"parameter": "tau_add_steps", "values": values},
                                 "e": {"measure": "parameter", "scale": DT}, "q": {"measure": "peak_amplitude"},
                                 "fit": {"degree": 1, "db": True, "parameter_range": [1, 6]}})
    res = face.analyse(spec, recs, values)
    assert res["n_used"] == 6 and res["points"][0]["reason"] == "outside fit.parameter_range"
    assert res["e_min"] == 0.0
    assert res["q_min"] == pytest.approx(res["points"][0]["q"], rel=1e-12)
    assert res["q_pred"] == pytest.approx(res["q_min"], rel=1e-9)      # the line through 1..6 hits p = 0
    assert res["error_estimate"] == pytest.approx(0.0, abs=1e-9)


def test_detrend_makes_q_the_oscillation_not_the_leakage_of_a_slow_shape():
    """§12.3: the contact window holds a slow shape and a small oscillation.  For a 1.4 s window with a
    cubic shape of 1 mm and a 7 Hz sine of 20 um, the FFT peak above 4 Hz is within 10 % of 20 um only
    after the cubic is removed (detrend_degree 3); without it the peak is the shape's leakage, more than
    20 % off."""
    t = np.arange(4000) * DT
    u = (t - 2.0) / 0.7
    x = np.where((t >= 1.3) & (t < 2.7), 1e-3 * (u ** 3 - 0.5 * u), 0.0) + 2e-5 * np.sin(2 * np.pi * 7.0 * t)
    rec = {"t": t, "dt": DT, "z_ach": x, "z_cmd": x}
    plain = face.QMeasureSpec(measure="peak_amplitude", window_s=(1.3, 2.7), f_min_hz=4.0)
    detr = face.QMeasureSpec(measure="peak_amplitude", window_s=(1.3, 2.7), f_min_hz=4.0, detrend_degree=3)
    assert face.q_value(rec, detr) == pytest.approx(2e-5, rel=0.10)
    assert abs(face.q_value(rec, plain) / 2e-5 - 1.0) > 0.20
    f = face.QMeasureSpec(measure="peak_frequency", window_s=(1.3, 2.7), f_min_hz=4.0, detrend_degree=3)
    assert face.q_value(rec, f) == pytest.approx(7.0, abs=1 / 1.4)    # one bin of the 1.4 s window


def test_contact_12_3_fast_rig_and_misidentified_reference(tmp_path):
    """§12.3, thesis: error estimate 37 %, real error 57 %, attributed to a mis-identified k_EXP, d_EXP; the
    rig has < 1 ms delay with VFF.  Twin with ideal legs and 1 ms residual delay (docs/fidelity.md):
    tau_FEI of the test 0.98 ms (within 0.1 ms of 1 ms), estimate 45.9 % and real error 37.5 % (each within
    3 points); fit over tau_add <= 6 ms: estimate 37.4 % (within 3 points of the thesis's 37 %).  With the
    reference computed for k_EXP = 8000 N/m (specimen 8650 N/m) the runs are identical (1e-12), the estimate
    is unchanged and the real error is 54.3 % (within 3 points; within 5 points of the thesis's 57 %), above
    the estimate as in the thesis."""
    fast, raw, out = _run("contact_1d_tau_add_fast_rig.yaml", tmp_path)
    mis, raw_m, out_m = _run("contact_1d_tau_add_fast_rig_misidentified.yaml", tmp_path)
    assert fast["n_used"] == mis["n_used"] == 10
    assert fast["e_min"] == pytest.approx(1e-3, abs=1e-4)
    assert fast["error_estimate"] == pytest.approx(0.459, abs=0.03)
    assert fast["test_error"] == pytest.approx(0.375, abs=0.03)
    for a, b in zip(fast["points"], mis["points"]):
        assert a["e"] == pytest.approx(b["e"], rel=1e-12) and a["q"] == pytest.approx(b["q"], rel=1e-12)
    assert mis["error_estimate"] == pytest.approx(fast["error_estimate"], rel=1e-12)
    assert mis["q_ref"] < 0.92 * fast["q_ref"]
    assert mis["test_error"] == pytest.approx(0.543, abs=0.03)
    assert mis["test_error"] == pytest.approx(0.57, abs=0.05)                    # thesis
    assert mis["error_estimate"] < mis["test_error"]
    six = _refit(out_m, raw_m, fit={"degree": 1, "db": True, "parameter_range": [1, 6]})
    assert six["error_estimate"] == pytest.approx(0.374, abs=0.03)
    assert six["error_estimate"] == pytest.approx(0.37, abs=0.03)                # thesis
    assert six["test_error"] == pytest.approx(mis["test_error"], rel=1e-12)


def test_table_12_1_system1_vff_prediction_error_is_bracketed_by_the_fit_degree(tmp_path):
    """Table 12.1, system 1 with VFF: thesis prediction error 8.4 %.  With the twin's points the degree-1
    fit in dB gives 11.1 % and the degree-2 fit (the shipped file) 3.9 % (each within 1.5 points), so the
    thesis's value lies between them; without the one-sample command latency the degree-2 error stays
    within 1.5 points of 3.9 % although the test error drops from 16.2 % to 10.3 % (each within 1.5 points)."""
    res, raw, out = _run("table_12_1_system1_vff.yaml", tmp_path)
    lin = _refit(out, raw, fit={"degree": 1, "db": True})
    assert res["prediction_error"] == pytest.approx(0.039, abs=0.015)
    assert lin["prediction_error"] == pytest.approx(0.111, abs=0.015)
    assert res["prediction_error"] < 0.084 < lin["prediction_error"]
    assert res["test_error"] == pytest.approx(0.162, abs=0.015)
    lat0, _, _ = _run("table_12_1_system1_vff.yaml", tmp_path / "lat0",
                      overrides={**raw["overrides"], "command_latency_steps": 0})
    assert lat0["test_error"] == pytest.approx(0.103, abs=0.015)
    assert lat0["prediction_error"] == pytest.approx(res["prediction_error"], abs=0.015)


def test_spring_12_1_2_prediction_error_is_bracketed_by_the_fit_degree(tmp_path):
    """§12.1.2 (5 s FFT, e = adapted tau_FEI, tau_add <= 11 ms): thesis about 15 % with a linear fit in dB.
    The twin gives 21.9 % linear and 0.6 % with degree 2 (each within 1.5 points), so the thesis's value lies
    between them; with e = e_track,rel (degree 2) 10.1 % (within 1.5 points), below the tau_FEI fit as the
    thesis's 6 % is below its 15 %."""
    res, raw, out = _run("spring_11_3_1.yaml", tmp_path)
    quad = _refit(out, raw, fit={"degree": 2, "db": True, "parameter_range": [0, 11]})
    track = _refit(out, raw, e={"measure": "e_track_rel"}, fit={"degree": 2, "db": True, "parameter_range": [0, 11]})
    assert res["prediction_error"] == pytest.approx(0.219, abs=0.015)
    assert quad["prediction_error"] == pytest.approx(0.006, abs=0.015)
    assert quad["prediction_error"] < 0.15 < res["prediction_error"]
    assert track["prediction_error"] == pytest.approx(0.101, abs=0.015)
    assert track["prediction_error"] < res["prediction_error"]
