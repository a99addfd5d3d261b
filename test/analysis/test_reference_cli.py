"""``rths reference``: the ideal-transfer-system reference solution printed, written and plotted.

The numbers are Insam's (2022) reference of the contact test (§4.4, Table A.2 with d_NUM = 50 kg/s): touch-down
1.216 s, lift-off 2.78 s, minimum of z^r -12.70 mm, peak contact force 23.3 N.  Tolerances: touch-down 1 ms,
lift-off 5 ms (the thesis prints 2.78 s), minimum 0.01 mm, force 0.1 N.
"""
from __future__ import annotations

import csv
import json

import pytest

from rths_ros import cli

D50 = "numerical.contact_1d.d_num_kg_per_s=50"


def test_reference_prints_and_writes_the_thesis_reference(tmp_path, capsys):
    out = tmp_path / "ref"
    assert cli.main(["reference", "contact_1d", "--set", D50, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "touch-down" in text and "1.2158 s" in text
    assert "-12.698 mm" in text
    doc = json.loads((out / "reference.json").read_text())
    ev = doc["events"]
    assert ev["touchdown_s"] == pytest.approx(1.216, abs=1e-3)
    assert ev["liftoff_s"] == pytest.approx(2.78, abs=5e-3)
    assert ev["min_z_m"] * 1e3 == pytest.approx(-12.70, abs=0.01)
    assert ev["peak_contact_force_n"] == pytest.approx(23.3, abs=0.1)
    with (out / "reference.csv").open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0][0] == "t_s" and "z_ref_m" in rows[0] and rows[0][-1] == "contact"
    assert len(rows) == 1 + 4001                    # 0..4 s every 1 ms
    zi = rows[0].index("z_ref_m")
    z = [float(r[zi]) for r in rows[1:]]
    assert min(z) == pytest.approx(ev["min_z_m"], abs=1e-9)
    contact = [int(r[-1]) for r in rows[1:]]
    first = contact.index(1)
    assert first * 1e-3 == pytest.approx(ev["touchdown_s"], abs=1e-3)
    assert (out / "reference.png").stat().st_size > 10_000


def test_reference_follows_the_overrides_and_the_duration(tmp_path, capsys):
    out = tmp_path / "ref"
    assert cli.main(["reference", "contact_1d", "--out", str(out), "--duration", "2.0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["t_end_s"] == 2.0
    assert doc["events"]["liftoff_s"] is None       # still in contact at 2 s: no lift-off in the record
    assert doc["events"]["touchdown_s"] == pytest.approx(1.216, abs=1e-3)
    # d_NUM = 200 (the scenario's default) lifts off earlier than 50 kg/s (Table A.2: 2.775 s against 2.782 s)
    assert cli.main(["reference", "contact_1d", "--out", str(tmp_path / "r200"), "--json"]) == 0
    d200 = json.loads(capsys.readouterr().out)["events"]
    assert d200["liftoff_s"] == pytest.approx(2.775, abs=2e-3)


def test_reference_of_a_model_without_one_is_refused_naming_the_models(tmp_path, capsys):
    assert cli.main(["reference", "benchmark_building", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "numerical.model: 'building'" in err and "contact_1d" in err
    assert not (tmp_path / "x").exists()
    assert cli.main(["reference", "contact_1d", "--duration", "0", "--out", str(tmp_path / "y")]) == 2
    assert "--duration" in capsys.readouterr().err
