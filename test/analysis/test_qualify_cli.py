"""`rths qualify`: stepped sine, Welch PSD and process models of the contact test's transfer system on the twin,
and the in-loop tuning of the prediction horizon and the TDC model (short grid)."""
from __future__ import annotations

import csv

import numpy as np
import pytest
import yaml

from rths_ros.app import scenario as scn


@pytest.fixture(scope="module")
def qualified(tmp_path_factory):
    from conftest import rths
    out = tmp_path_factory.mktemp("qualify") / "q"
    p = rths("qualify", "contact_1d", "--freqs", "0.5,2,7,20", "--amplitudes", "0.0005", "--random-s", "2",
             "--out", str(out), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p


def test_writes_plots_tables_and_models(qualified):
    out, p = qualified
    for name in ("frf.png", "psd.png"):
        assert (out / name).stat().st_size > 10_000, name
    rows = list(csv.DictReader((out / "frf.csv").open()))
    assert len(rows) == 4
    doc = yaml.safe_load((out / "models.yaml").read_text())
    assert set(doc["free_fits"]) == set(doc["unit_gain_fits"]) == {"G1", "G2", "G1D", "G2D"}
    assert "rths qualify contact_1d" in p.stdout and "e_track_rel" in p.stdout


def test_frf_is_the_ppi1_position_loop(qualified):
    """PPI1: K_Pp = 20 1/s (Insam 2022 Table A.1) -> about a 50 ms first-order lag, unit static gain."""
    out, _ = qualified
    rows = list(csv.DictReader((out / "frf.csv").open()))
    f = np.array([float(r["frequency_hz"]) for r in rows])
    g = np.array([float(r["gain"]) for r in rows])
    ph = np.array([float(r["phase_deg"]) for r in rows])
    assert np.all(np.diff(ph) < 0)
    assert g[0] == pytest.approx(1.0, abs=0.03)
    tau_low = np.tan(-np.radians(ph[0])) / (2 * np.pi * f[0])     # phase lag at 0.5 Hz as a first-order lag
    assert tau_low == pytest.approx(1.0 / 20.0, rel=0.25)
    assert g[-1] < 0.2
    doc = yaml.safe_load((out / "models.yaml").read_text())
    assert doc["unit_gain_fits"]["G1"]["tau_p_s"] == pytest.approx(0.05, rel=0.15)
    for m in doc["free_fits"].values():
        assert m["rms_error"] < 0.1


def test_psd_of_the_random_test(qualified):
    """Auto-PSD ratio achieved/demand of the random test = |H|^2 of the stepped sine (8 Hamming segments)."""
    out, _ = qualified
    data = np.loadtxt(out / "psd.csv", delimiter=",", skiprows=1)
    f, p_u, p_y = data[:, 0], data[:, 1], data[:, 2]
    rows = list(csv.DictReader((out / "frf.csv").open()))
    g = {round(float(r["frequency_hz"])): float(r["gain"]) for r in rows}
    i20 = int(np.argmin(np.abs(f - 20.0)))
    assert f[i20] == pytest.approx(20.0, abs=1e-9)
    assert p_y[i20] / p_u[i20] == pytest.approx(g[20] ** 2, rel=0.3)
    i4 = int(np.argmin(np.abs(f - 4.0)))
    assert g[7] ** 2 < p_y[i4] / p_u[i4] < g[2] ** 2


def test_in_loop_tuning_picks_the_lag_and_a_model_that_reduce_the_error(qualified):
    out, _ = qualified
    doc = yaml.safe_load((out / "models.yaml").read_text())
    loop = doc["loop"]
    base = loop["feedback_only"]["e_track_rel"]
    assert 0.02 < base < 0.04
    assert loop["best_prediction"] == "0.05"                  # the horizon = 1/K_Pp
    assert loop["prediction"]["0.05"]["e_track_rel"] < 0.15 * base
    best = loop["tdc"][loop["best_tdc"]]
    assert best["e_track_rel"] < 0.15 * base
    # the recommended section loads into the scenario and gives the same error
    from rths_ros.analysis.twin_qualification import loop_error
    model = doc["platform"]["commander"]["coupling"]["tdc"]["model"]
    sets = ["platform.commander.coupling.tdc.enabled=true"] + [
        f"platform.commander.coupling.tdc.model.{k}={v}" for k, v in model.items()]
    e, why = loop_error(scn.load("contact_1d", sets))
    assert not why
    assert e == pytest.approx(best["e_track_rel"], rel=1e-9)


def test_bad_grid_is_refused(rths_local, tmp_path):
    p = rths_local("qualify", "contact_1d", "--freqs", "1,x", "--out", str(tmp_path / "q"))
    assert p.returncode == 2 and "--freqs" in p.stderr
    p = rths_local("qualify", "contact_1d", "--freqs", "600", "--out", str(tmp_path / "q"))
    assert p.returncode == 2 and "Nyquist" in p.stderr
    p = rths_local("qualify", "gait_vpp", "--freqs", "1", "--out", str(tmp_path / "q"))
    assert p.returncode == 2 and "numerical.model" in p.stderr
