"""The ROS-graph backend of FACE's ScenarioPointRunner: a small contact_1d sweep through the graph, each point a
lockstep run with its bag, two runs at a time, the same e and q as the in-process sweep, aborted runs dropped by the
analysis."""
from __future__ import annotations

import json
import os
import re
import time

import numpy as np
import pytest
import yaml
from test_face_cli import _contact_sweep

from rths_ros.analysis import face
from rths_ros.analysis.face.outputs import _load_record
from rths_ros.app import scenario as scn


class TimedRunner:
    """A run_point wrapper that stamps every record with the wall-clock start and end of its run and the
    id of the process that ran it (saved with the point, like any other recorded value)."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, point):
        start = time.time()
        rec = self.inner(point)
        rec.update(run_start_s=start, run_end_s=time.time(), run_pid=os.getpid())
        return rec


@pytest.fixture(scope="module")
def graph_sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("face_graph")
    sweep = _contact_sweep(tmp / "g.yaml", "graph")
    out = tmp / "out"
    spec, raw = face.load_sweep(sweep)
    lines: list[str] = []
    res = face.run_sweep(spec, out, TimedRunner(face.make_runner(spec, out)), workers=2, raw=raw,
                         progress=lines.append)
    vspec, vraw = face.load_sweep(_contact_sweep(tmp / "v.yaml", "vrths"))
    vres = face.run_sweep(vspec, tmp / "vout", face.make_runner(vspec, tmp / "vout"), workers=1, raw=vraw,
                          progress=None)
    return out, res, vres, lines


def test_graph_backend_runs_each_point_in_lockstep_with_a_bag(graph_sweep):
    out, res, _, _ = graph_sweep
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
    _, res, vres, _ = graph_sweep
    for g, v in zip(res["points"], vres["points"]):
        assert g["e"] == pytest.approx(v["e"], rel=1e-6)
        assert g["q"] == pytest.approx(v["q"], rel=1e-6)
    assert res["q_pred"] == pytest.approx(vres["q_pred"], rel=1e-6)


def test_graph_sweep_runs_two_graphs_at_once_and_reports_progress(graph_sweep):
    """With workers = 2 the four graph runs are spread over two worker processes and at least two runs
    overlap in time (both cores in use); a progress line with its bar follows every finished run."""
    out, _, _, lines = graph_sweep
    index = json.loads((out / "points" / "index.json").read_text())
    recs = [_load_record(out / "points" / f) for f in index["files"]]
    spans = sorted((float(r["run_start_s"]), float(r["run_end_s"])) for r in recs)
    assert all(a < b for a, b in spans)
    overlapping = [(i, j) for i in range(len(spans)) for j in range(i + 1, len(spans))
                   if spans[j][0] < spans[i][1] and spans[i][0] < spans[j][1]]
    assert overlapping, spans
    assert len({int(r["run_pid"]) for r in recs}) == 2
    assert os.getpid() not in {int(r["run_pid"]) for r in recs}        # not run in the calling process
    assert len(lines) == 4
    done = [int(re.search(r"\] (\d)/4 points done", line).group(1)) for line in lines]
    assert done == [1, 2, 3, 4]
    assert lines[-1].count("#") == 30 and "FACE contact_graph" in lines[-1]


def test_graph_backend_flags_an_aborted_run_and_the_analysis_drops_it(tmp_path, graph_sweep):
    out, _, _, _ = graph_sweep
    runner = face.ScenarioPointRunner("contact_1d", {"loop.duration_s": 1.0}, backend="graph", out_dir=tmp_path)
    rec = runner({"safety.interface_limit_m": 0.0001})     # the first command leaves the accepted range
    assert rec["aborted"] is True or bool(rec["aborted"])
    assert (tmp_path / "runs" / "interface_limit_m=0.0001").is_dir()
    spec, _ = face.load_sweep(out / "sweep.yaml")
    index = json.loads((out / "points" / "index.json").read_text())
    records = [_load_record(out / "points" / f) for f in index["files"]]
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
