"""The `rths` command line: help, analytic tools."""
from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_help_lists_subcommands(rths_cli):
    """`rths --help`: every verb in its section, one line each, at most 40 lines; the verbs of other installed
    packages in a section of their own."""
    p = rths_cli("--help")
    assert p.returncode == 0
    lines = p.stdout.splitlines()
    assert len(lines) <= 40, p.stdout
    for section in ("run and inspect:", "rig bring-up:", "analyses and studies:", "benchmarks and reliability:",
                    "from rths-lab-example:"):
        assert section in lines
    listed = {line.split()[0] for line in lines if line.startswith("  ")}
    assert {"run", "analyze", "vrths", "margin", "check", "params", "list", "aff-rigs", "damper-rig", "bench",
            "building-benchmark", "ilc-convergence", "stress", "voice-coil"} <= listed
    assert not {"bartl", "dubois", "benchmark", "check-ilc"} & listed


@pytest.mark.parametrize("old, new", [("bartl", "aff-rigs"), ("dubois", "damper-rig"),
                                      ("benchmark", "building-benchmark"), ("check-ilc", "ilc-convergence")])
def test_an_old_verb_name_still_works_and_says_the_new_one(rths_cli, old, new):
    p = rths_cli(old, "--help")
    assert p.returncode == 0 and f"usage: rths {new}" in p.stdout
    assert f"this command is now `rths {new}`" in p.stderr


def test_a_verb_from_another_package(rths_cli):
    p = rths_cli("voice-coil", "lab_voice_coil", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["static_tracking_ratio"] == pytest.approx(2e5 / 2.05e5)
    assert rths_cli("voice-coil", "contact_1d").returncode == 2


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


def test_run_refuses_any_earlier_run_folder_and_overwrite_replaces_it(rths_cli, tmp_path):
    """An earlier run's folder without a bag (a run that failed at start) is refused just the same; --overwrite
    replaces an earlier run, but never clears a folder that holds no run."""
    out = tmp_path / "failed_at_start"
    (out / "logs").mkdir(parents=True)
    (out / "scenario.yaml").write_text("name: earlier\n")
    (out / "logs" / "supervisor.log").write_text("earlier log\n")
    p = rths_cli("run", "smoke", "--out", str(out))
    assert p.returncode == 2
    err = p.stderr.strip()
    assert err == (f"rths run: error: out: {out.resolve()} already holds an earlier run; choose another --out, "
                   "pass --overwrite to replace it, or leave --out out for a new timestamped folder under runs/"), err
    assert (out / "logs" / "supervisor.log").read_text() == "earlier log\n"
    other = tmp_path / "notes"
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    p = rths_cli("run", "smoke", "--out", str(other), "--overwrite")
    assert p.returncode == 2 and "holds no run" in p.stderr and (other / "thesis.tex").exists()
    p = rths_cli("run", "smoke", "--out", str(out), "--overwrite", "--no-analyze", timeout=300)
    assert p.returncode == 0, p.stderr
    assert not (out / "logs" / "supervisor.log").read_text().startswith("earlier")
    assert (out / "bag").is_dir()


@pytest.mark.parametrize("bad", ["file", "/proc/rths-not-here/run"])
def test_run_out_path_errors_are_one_line(rths_cli, tmp_path, bad):
    path = tmp_path / "a_file" if bad == "file" else Path(bad)
    if bad == "file":
        path.write_text("x")
    p = rths_cli("run", "smoke", "--out", str(path))
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("nodes, missing", [
    ("[recorder]", "missing supervisor"),
    ("[recorder, supervisor, numerical_substructure, stewart_platform, ft_sensor]", "missing sim_plant"),
    ("[supervisor, numerical_substructure, stewart_platform, sim_plant]", "missing ft_sensor (numerical_substructure "
                                                                           "reads /rths/interface_force)"),
])
def test_an_incomplete_node_set_is_refused_at_start_naming_what_is_missing(rths_cli, tmp_path, nodes, missing):
    p = rths_cli("check", "contact_1d", "--set", f"nodes={nodes}")
    assert p.returncode == 2 and missing in p.stderr, p.stderr
    p = rths_cli("run", "contact_1d", "--set", f"nodes={nodes}", "--out", str(tmp_path / "run"), timeout=60)
    assert p.returncode == 2 and missing in p.stderr, p.stderr
    assert not (tmp_path / "run").exists()
