"""``rths interface-estimation``: the printed table, the JSON and the plot; bad input exits 2 naming the flag."""
from __future__ import annotations

import json

from rths_ros import cli


def test_interface_estimation_writes_json_and_plot(tmp_path, capsys):
    out = tmp_path / "ie"
    assert cli.main(["interface-estimation", "--duration", "0.3", "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    err = doc["force"]["rms_error"]
    assert set(err) == {"kalman", "inverse_dynamics", "projected"}
    assert err["kalman"][1] < err["inverse_dynamics"][1] < err["projected"][1]
    assert (out / "interface_estimation.png").stat().st_size > 10_000
    assert json.loads((out / "interface_estimation.json").read_text()) == doc


def test_interface_estimation_refuses_bad_input(tmp_path, capsys):
    assert cli.main(["interface-estimation", "--q-force", "-1", "--out", str(tmp_path / "x")]) == 2
    assert "--q-force" in capsys.readouterr().err
    assert cli.main(["interface-estimation", "--duration", "0.1", "--out", str(tmp_path / "y")]) == 2
    assert "--duration" in capsys.readouterr().err
