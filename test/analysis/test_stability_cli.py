"""``rths stability``: the printed numbers, stability.json and the maps (Bartl 2019 §4.2; tolerances 0.001)."""
from __future__ import annotations

import json

import pytest

from rths_ros import cli


def test_stability_prints_the_source_numbers_and_writes_json(tmp_path, capsys):
    assert cli.main(["stability", "--no-plots", "--out", str(tmp_path / "s")]) == 0
    text = capsys.readouterr().out
    assert "first-order Pade : 0.3232" in text and "exact delay (phase margin)             : 0.2533" in text
    assert "unstable for 0.7016 < kappa_P < 5.7024" in text
    doc = json.loads((tmp_path / "s" / "stability.json").read_text())
    assert doc["delay"]["tau_max_pade"] == pytest.approx(0.323, abs=1e-3)
    assert doc["delay"]["tau_crit_exact"] == pytest.approx(0.253, abs=1e-3)


def test_stability_maps_are_drawn(tmp_path, capsys):
    out = tmp_path / "m"
    assert cli.main(["stability", "--grid", "15", "--zetas", "0,0.1", "--coupling", "force", "--phi", "0.5",
                     "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["delay"]["coupling"] == "force" and doc["delay"]["tau_max_pade"] > 0
    share = doc["map"]["stable_share"]
    assert 0.0 < share["0"] < share["0.1"] < 1.0        # damping enlarges the stable region
    assert (out / "stability_map.png").stat().st_size > 10_000 and (out / "p_loop.png").stat().st_size > 10_000


def test_stability_refuses_bad_input_naming_it(tmp_path, capsys):
    assert cli.main(["stability", "--phi", "-1", "--no-plots", "--out", str(tmp_path / "x")]) == 2
    assert "phi" in capsys.readouterr().err
    assert cli.main(["stability", "--zetas", "a,b", "--no-plots", "--out", str(tmp_path / "y")]) == 2
    assert "--zetas" in capsys.readouterr().err
