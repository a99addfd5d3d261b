"""NPC, ILC, AFF and VFF together through the ROS graph (separate processes, lockstep) against the
in-process virtual run of the same scenario: the learners' and the passivity controller's wiring."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rths_ros.analysis.run_analysis import record_from_bag
from rths_ros.app.vrths import run_virtual

ROOT = Path(__file__).resolve().parents[2]
SETS = ["numerical.contact_1d.d_num_kg_per_s=50", "sim_plant.cascade.preset=PPI2", "passivity.enabled=true",
        "platform.commander.vff=true", "ilc.enabled=true", "ilc.f_q_cut_hz=2", "aff.enabled=true", "aff.mu=0.05",
        "loop.trials=2", "loop.duration_s=1.0"]


@pytest.mark.parametrize("composed", [False, True], ids=["processes", "composed-local-bus"])
def test_all_controllers_in_the_graph_reproduce_the_virtual_run(tmp_path, composed):
    out = tmp_path / "all"
    args = [sys.executable, "-m", "rths_ros.cli", "run", "contact_1d", "--out", str(out)]
    if composed:
        args.append("--composed")
    for s in SETS:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True, timeout=900, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    rec, s, _ = record_from_bag(out / "bag")
    assert set(s.run_nodes) >= {"passivity_controller", "ilc_learner", "aff_learner"}
    assert rec["missing_samples"] == {"cmd": 0, "state": 0, "force": 0, "legs": 0, "wrench": 0}
    v = run_virtual(s)
    assert rec["k"].size == v["k"].size == 2 * (s.steps + 1)
    for key in ("z_cmd", "z_ach", "f_int", "f_d", "b_cmd", "ff_velocity", "b_meas"):
        a, b = rec[key], v[key]
        err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)
        assert err < 1e-9, f"{key}: relative deviation {err:.3g}"
    assert np.any(rec["f_d"] != 0) and np.any(rec["ff_velocity"] != 0)
    m = json.loads((out / "metrics.json").read_text())
    assert m["n_trials"] == 2 and len(m["trials"]) == 2
    assert (out / "ilc_feedforward.npz").exists() and (out / "trials_errors.png").exists()


def test_realtime_composed_ilc_series_learns(tmp_path):
    """Wall clock at 1 kHz, composed: the learner gets every trial (missing best-effort samples are
    filled), the supervisor sequences the trials, and the error falls."""
    out = tmp_path / "rt"
    p = subprocess.run([sys.executable, "-m", "rths_ros.cli", "run", "contact_1d", "--mode", "realtime", "--composed",
                        "--out", str(out), "--set", "ilc.enabled=true", "--set", "ilc.f_q_cut_hz=2",
                        "--set", "loop.trials=3", "--set", "loop.duration_s=2.5", "--set", "loop.pause_s=0.2"],
                       capture_output=True, text=True, timeout=600, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    m = json.loads((out / "metrics.json").read_text())
    e = [t["e_track_rel"] for t in m["trials"]]
    assert len(e) == 3 and e[2] < 0.6 * e[0], e
    assert m["loop"]["mode"] == "realtime"
