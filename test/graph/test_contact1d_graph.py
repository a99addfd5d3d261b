"""contact_1d through the ROS graph (separate processes, lockstep) against the in-process virtual run."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rths_ros.analysis.run_analysis import record_from_bag
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual


@pytest.fixture(scope="module")
def graph_run():
    """`rths run contact_1d` (shared with the other tests of the session that read this run: test/shared_runs.py)."""
    from shared_runs import shared_run
    r = shared_run("contact_1d")
    return r.out, r


def test_graph_reproduces_the_virtual_run(graph_run):
    out, _ = graph_run
    rec, s, loop = record_from_bag(out / "bag")
    assert s == scn.load("contact_1d")
    assert rec["missing_samples"] == {"cmd": 0, "state": 0, "force": 0, "legs": 0, "wrench": 0}
    v = run_virtual(s)
    assert rec["k"].size == v["k"].size == s.steps + 1
    for key in ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas"):
        a, b = rec[key], v[key]
        scale = max(np.max(np.abs(b)), 1e-12)
        err = np.max(np.abs(a - b)) / scale
        assert err < 1e-9, f"{key}: relative deviation {err:.3g}"
    assert np.array_equal(rec["contact"], v["contact"])


def test_run_writes_bag_metrics_report_and_plots(graph_run):
    out, p = graph_run
    m = json.loads((out / "metrics.json").read_text())
    for key in ("e_track_rel", "e_ref_rel", "edot_track_rel", "max_abs_tracking_error_m", "E_error_J",
                "Ec_error_J", "E_diss_J", "touchdown_s", "liftoff_s", "stable", "dominant_error_freq_hz"):
        assert key in m, key
    for key in ("steps", "deadline_miss_ratio", "step_latency_p50_s", "step_latency_p99_s"):
        assert key in m["loop"], key
    assert m["loop"]["steps"] == 4000
    assert m["stable"] is True
    assert (out / "report.md").read_text().count(".png") >= 4
    for png in ("displacement.png", "tracking_error.png", "interface_force.png", "power_error.png"):
        assert (out / png).stat().st_size > 10_000


def test_reanalysis_of_the_bag_gives_the_same_metrics(graph_run, rths_local, tmp_path):
    out, _ = graph_run
    p = rths_local("analyze", str(out / "bag"), "--out", str(tmp_path / "again"))
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "again" / "metrics.json").read_text()) == json.loads(
        (out / "metrics.json").read_text())


def test_the_observers_of_a_lockstep_run_take_the_cpu_the_loop_leaves(graph_run):
    """realtime.lockstep_observers_batch (default true): the recorder and the supervisor ran at SCHED_BATCH from START
    on, the loop's processes at normal scheduling (each node's timing/<node>.json lists what it got).  A run started
    at idle priority (a test tier of `make test` runs at SCHED_IDLE) keeps its observers there, and says so."""
    out, _ = graph_run
    setups = {n: json.loads((out / "timing" / f"{n}.json").read_text())["realtime_setup"]
              for n in ("recorder", "supervisor", "sim_plant", "ft_sensor", "numerical_substructure",
                        "stewart_platform")}
    at_start = ("SCHED_BATCH from START", "SCHED_IDLE kept at START (below SCHED_BATCH)")
    assert [n for n, a in setups.items() if set(at_start) & set(a)] == ["recorder", "supervisor"], setups
    assert not any("SCHED_FIFO" in a for a in setups.values()), setups
