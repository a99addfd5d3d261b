"""Command shaping (forward prediction, transfer-dynamics cancellation) through the ROS graph (separate processes,
lockstep) against the in-process virtual run, and its effect on the tracking error of the contact test."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rths_ros.analysis.run_analysis import record_from_bag
from rths_ros.core import scenario as scn
from rths_ros.core.vrths import run_virtual

SCENARIOS = ("contact_1d_prediction", "contact_1d_tdc", "contact_1d_newmark")


@pytest.fixture(scope="module", params=SCENARIOS)
def graph_run(request, tmp_path_factory):
    import subprocess
    import sys
    from pathlib import Path
    name = request.param
    out = tmp_path_factory.mktemp(name) / "run"
    root = Path(__file__).resolve().parents[1]
    p = subprocess.run([sys.executable, "-m", "rths_ros.cli", "run", name, "--out", str(out)],
                       capture_output=True, text=True, timeout=900, cwd=str(root), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    return name, out


def test_graph_reproduces_the_virtual_run(graph_run):
    name, out = graph_run
    rec, s, _ = record_from_bag(out / "bag")
    assert s == scn.load(name)
    assert s.platform.commander.coupling.active or s.numerical.model == "contact_1d_newmark"
    assert rec["missing_samples"] == {"cmd": 0, "state": 0, "force": 0, "legs": 0, "wrench": 0}
    v = run_virtual(s)
    assert not v["aborted"], v["abort_reason"]
    assert rec["k"].size == v["k"].size == s.steps + 1
    for key in ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas"):
        a, b = rec[key], v[key]
        scale = max(np.max(np.abs(b)), 1e-12)
        err = np.max(np.abs(a - b)) / scale
        assert err < 1e-9, f"{key}: relative deviation {err:.3g}"
    assert np.array_equal(rec["contact"], v["contact"])


def test_graph_run_against_feedback_only(graph_run):
    """Command shaping: e_track_rel of the graph run below 0.15x that of contact_1d (0.0302, virtual run).
    Newmark (feedback only): the same e_track_rel as contact_1d within 1 %."""
    from rths_ros.analysis.metrics import compute_metrics
    name, out = graph_run
    m = json.loads((out / "metrics.json").read_text())
    s0 = scn.load("contact_1d")
    base = compute_metrics(run_virtual(s0), None, s0.loop.dt_s)["e_track_rel"]
    assert m["stable"] is True
    if name == "contact_1d_newmark":
        assert m["e_track_rel"] == pytest.approx(base, rel=0.01)
    else:
        assert m["e_track_rel"] < 0.15 * base, (m["e_track_rel"], base)
