"""The `rths` command line: help, analytic tools."""
from __future__ import annotations

import json

import pytest


def test_help_lists_subcommands(rths_cli):
    p = rths_cli("--help")
    assert p.returncode == 0
    for sub in ("run", "analyze", "vrths", "margin", "check", "params", "list"):
        assert sub in p.stdout


@pytest.mark.parametrize("d, pm, tau", [(200, 62.08, 0.0284), (50, 14.63, 0.0058)])
def test_margin_of_the_contact_phase(rths_cli, d, pm, tau):
    p = rths_cli("margin", "contact_1d", "--set", f"numerical.contact_1d.d_num_kg_per_s={d}", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["phase_margin_deg"] == pytest.approx(pm, abs=0.01)
    assert r["tau_crit_s"] == pytest.approx(tau, abs=0.00005)
    text = rths_cli("margin", "contact_1d", "--set", f"numerical.contact_1d.d_num_kg_per_s={d}").stdout
    assert f"{pm:.2f} deg" in text


def test_params_and_list(rths_cli):
    p = rths_cli("params", "--markdown")
    assert "numerical.contact_1d.d_num_kg_per_s" in p.stdout and "kg/s" in p.stdout
    assert "contact_1d" in rths_cli("list").stdout


def test_run_refuses_a_folder_that_holds_a_recorded_run(rths_cli, tmp_path):
    """An earlier run's folder is never written into: refused at start, naming the path and the choices."""
    out = tmp_path / "earlier"
    (out / "bag").mkdir(parents=True)
    (out / "events.json").write_text("[]")
    p = rths_cli("run", "smoke", "--out", str(out))
    assert p.returncode == 2
    assert f"out: {out.resolve()} already holds a recorded run" in p.stderr and "--out" in p.stderr
    assert (out / "events.json").read_text() == "[]"           # nothing of the earlier run was touched
    assert not (out / "logs").exists()
