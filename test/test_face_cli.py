"""`rths face`: the command line, re-analysis without running, the ROS-graph backend of
ScenarioPointRunner (a small contact_1d sweep through the graph, aborted runs dropped), the Dask
cluster option, the building runner and the shipped sweep files."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from rths_ros import cli
from rths_ros.analysis import face
from rths_ros.core import scenario as scn
from rths_ros.core.params import ParameterError

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = ROOT / "config" / "sweeps"


def _contact_sweep(path: Path, runner: str, values=(0, 2, 4, 6), duration_s: float = 1.0, **extra) -> Path:
    data = {"name": f"contact_{runner}", "runner": runner, "scenario": "contact_1d",
            "overrides": {"loop.duration_s": duration_s, "numerical.contact_1d.d_num_kg_per_s": 50.0,
                          "safety.watchdog_s": 30.0,     # lockstep: tolerate a loaded machine
                          "sim_plant.cascade.preset": "PPI2"},
            "vary": {"parameter": "sim_plant.command_delay_steps", "values": list(values)},
            "e": {"measure": "e_track_rel"}, "q": {"measure": "peak_amplitude"},
            "fit": {"degree": 1, "db": True}, **extra}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _face(out: Path) -> dict:
    return json.loads((out / "face.json").read_text())


def test_face_subcommand_runs_and_reanalyse_runs_nothing(tmp_path, monkeypatch, capsys):
    sweep = _contact_sweep(tmp_path / "s.yaml", "vrths")
    out = tmp_path / "out"
    assert cli.main(["face", str(sweep), "--out", str(out), "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert "4/4 points" in printed and "q_pred" in printed
    first = _face(out)
    assert first["n_used"] == 4 and first["fit"]["degree"] == 1
    e = [p["e"] for p in first["points"]]
    assert e == sorted(e) and e[0] < e[-1]          # more delay, larger tracking error
    stamps = {f.name: f.stat().st_mtime_ns for f in (out / "points").iterdir()}

    # re-analysis with another fit: nothing may run (every way of running a point is disabled)
    def forbidden(*_a, **_k):
        raise AssertionError("a point was run during --reanalyse")
    monkeypatch.setattr(face, "make_runner", forbidden)
    monkeypatch.setattr(face.ScenarioPointRunner, "__call__", forbidden)
    monkeypatch.setattr("rths_ros.core.vrths.run_virtual", forbidden)
    data = yaml.safe_load(sweep.read_text())
    data["fit"] = {"degree": 2, "db": True}
    (tmp_path / "s2.yaml").write_text(yaml.safe_dump(data))
    assert cli.main(["face", str(tmp_path / "s2.yaml"), "--out", str(out), "--reanalyse"]) == 0
    second = _face(out)
    assert second["fit"]["degree"] == 2
    assert [p["e"] for p in second["points"]] == e
    assert [p["q"] for p in second["points"]] == [p["q"] for p in first["points"]]
    assert {f.name: f.stat().st_mtime_ns for f in (out / "points").iterdir()} == stamps
    # without a sweep file the saved sweep.yaml is used (degree 1 again)
    assert cli.main(["face", "--out", str(out), "--reanalyse"]) == 0
    assert _face(out)["fit"]["degree"] == 1
    assert _face(out)["q_pred"] == pytest.approx(first["q_pred"], rel=1e-12)


def test_face_subcommand_reports_a_bad_sweep(tmp_path, capsys):
    sweep = _contact_sweep(tmp_path / "bad.yaml", "vrths", values=(0, 1, 2))
    assert cli.main(["face", str(sweep), "--out", str(tmp_path / "o")]) == 2
    assert "vary.values: 3 values given; expected at least 4" in capsys.readouterr().err
    assert cli.main(["face", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")]) == 2


@pytest.fixture(scope="module")
def graph_sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("face_graph")
    sweep = _contact_sweep(tmp / "g.yaml", "graph")
    out = tmp / "out"
    spec, raw = face.load_sweep(sweep)
    res = face.run_sweep(spec, out, workers=2, raw=raw, progress=None)
    vspec, vraw = face.load_sweep(_contact_sweep(tmp / "v.yaml", "vrths"))
    vres = face.run_sweep(vspec, tmp / "vout", workers=1, raw=vraw, progress=None)
    return out, res, vres


def test_graph_backend_runs_each_point_in_lockstep_with_a_bag(graph_sweep):
    out, res, _ = graph_sweep
    for v in (0, 2, 4, 6):
        run = out / "runs" / f"command_delay_steps={v}"
        assert (run / "bag").is_dir(), run
        s = scn.from_data(yaml.safe_load((run / "scenario.yaml").read_text()))
        assert s.loop.mode == "lockstep" and s.sim_plant.command_delay_steps == v
        assert s.numerical.contact_1d.d_num_kg_per_s == 50.0
    assert res["n_used"] == 4
    assert all(p["used"] for p in res["points"])


def test_graph_backend_reproduces_the_in_process_sweep(graph_sweep):
    """The graph reproduces the virtual run to 1e-9 (test_contact1d_graph), so e and q must agree."""
    _, res, vres = graph_sweep
    for g, v in zip(res["points"], vres["points"]):
        assert g["e"] == pytest.approx(v["e"], rel=1e-6)
        assert g["q"] == pytest.approx(v["q"], rel=1e-6)
    assert res["q_pred"] == pytest.approx(vres["q_pred"], rel=1e-6)


def test_graph_backend_flags_an_aborted_run_and_the_analysis_drops_it(tmp_path, graph_sweep):
    out, _, _ = graph_sweep
    runner = face.ScenarioPointRunner("contact_1d", {"loop.duration_s": 1.0}, backend="graph", out_dir=tmp_path)
    rec = runner({"safety.interface_limit_m": 0.0001})     # the first command leaves the accepted range
    assert rec["aborted"] is True or bool(rec["aborted"])
    assert (tmp_path / "runs" / "interface_limit_m=0.0001").is_dir()
    spec, _ = face.load_sweep(out / "sweep.yaml")
    index = json.loads((out / "points" / "index.json").read_text())
    records = [face._load_record(out / "points" / f) for f in index["files"]]
    # put the aborted run in place of one point, and an NPC intervention in another
    records.append(rec)
    npc = dict(records[0])
    npc["f_d"] = np.where(np.arange(npc["z_ach"].size) == 100, 0.5, 0.0)
    records.append(npc)
    values = list(index["values"]) + [8, 10]
    res = face.analyse(spec, records, values)
    assert [p["used"] for p in res["points"]] == [True] * 4 + [False, False]
    assert res["points"][4]["reason"] == "aborted"
    assert res["points"][5]["reason"] == "NPC active"


def test_dask_local_cluster_gives_the_process_pool_numbers(tmp_path, capsys):
    pytest.importorskip("distributed")
    sweep = _contact_sweep(tmp_path / "d.yaml", "vrths", values=(0, 1, 3, 5))
    assert cli.main(["face", str(sweep), "--out", str(tmp_path / "pool"), "--workers", "2"]) == 0
    assert cli.main(["face", str(sweep), "--out", str(tmp_path / "dask"), "--cluster", "local:2"]) == 0
    assert "4/4 points" in capsys.readouterr().out
    a, b = _face(tmp_path / "pool"), _face(tmp_path / "dask")
    for key in ("e_min", "q_min", "q_pred", "error_estimate"):
        assert a[key] == pytest.approx(b[key], rel=1e-12, abs=0), key
    assert [(p["e"], p["q"]) for p in a["points"]] == [(p["e"], p["q"]) for p in b["points"]]


def test_cluster_address_is_validated(tmp_path):
    pytest.importorskip("distributed")
    for bad in ("local:0", "local:x", ""):
        with pytest.raises(ParameterError, match="cluster"):
            face.open_cluster(bad)


def test_building_runner_delay_and_reference():
    """tau_add delays the command path by whole samples; the reference is the structure's floor 1
    (seed 000 §12.2: a_hat = 3.39e-4 m over t in (5.2, 36.8) s, 2|X|/N)."""
    r = face.BuildingPointRunner("case1", {"duration_s": 12.0})
    r0, r1 = r({"tau_add_s": 0.0}), r({"tau_add_s": 0.002})
    assert r1["delay_samples"] == 8 and r0["delay_samples"] == 0
    assert not r0["aborted"] and not r1["aborted"]
    e0 = face.e_value(r0, face.EMeasureSpec(window_s=(5.2, 12.0)), 0)
    e1 = face.e_value(r1, face.EMeasureSpec(window_s=(5.2, 12.0)), 0)
    assert e1 - e0 == pytest.approx(0.002, abs=0.0006)      # tau_FEI grows by about tau_add
    with pytest.raises(ParameterError, match="scenario"):
        face.BuildingPointRunner("building1")
    ref = face.BuildingPointRunner("case1").reference()
    a, f = face.ms.fft_peak(ref["z_ach"], ref["dt"], (5.2, 36.8))
    assert a == pytest.approx(3.39e-4, rel=0.02)


@pytest.mark.parametrize("name", sorted(p.name for p in SWEEPS.glob("*.yaml")))
def test_shipped_sweeps_are_valid(name):
    spec, _ = face.load_sweep(SWEEPS / name)
    runner = face.make_runner(spec, out_dir=Path(os.devnull).parent)     # builds and validates the scenario
    if spec.runner in ("vrths", "graph"):
        s = runner.scenario({spec.vary.parameter: spec.vary.values[0]})
        key = spec.vary.parameter
        assert key in {r["key"] for r in scn.parameter_table()}, key
        assert s.numerical.contact_1d.d_num_kg_per_s == 50.0      # §12.3: d_NUM = 50 kg/s


def test_contact_sweep_has_twelve_runs_of_extra_command_delay():
    spec, _ = face.load_sweep(SWEEPS / "contact_1d_tau_add.yaml")
    assert spec.runner == "graph" and spec.vary.parameter == "sim_plant.command_delay_steps"
    assert len(spec.vary.values) == 12
