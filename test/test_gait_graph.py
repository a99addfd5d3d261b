"""gait_vpp (prosthetic-foot RTHS, seed 000 Part III) through the ROS graph and in the virtual run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rths_ros.analysis.gait import gait_metrics
from rths_ros.analysis.gait_run import gait_record_from_bag, gait_view, pure_reference
from rths_ros.core import scenario as scn
from rths_ros.core.gait_rths import FALL_EVENT, GaitNumerical, time_gait_step
from rths_ros.core.vrths import run_virtual

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "rths_ros.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(ROOT), stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def graph_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gait") / "run"
    p = _run("run", "gait_vpp", "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def test_graph_reproduces_the_virtual_run(graph_run):
    rec, s = gait_record_from_bag(graph_run / "bag")
    assert s == scn.load("gait_vpp")
    assert rec["missing_force_samples"] == 0 and not rec["aborted"]
    v = run_virtual(s)
    assert rec["force"].shape[0] == v["force"].shape[0] == s.steps + 1
    for key in ("q_cmd", "qd_cmd", "q_ach", "qd_ach", "force", "measured", "b_cmd", "b_meas", "wrench"):
        err = float(np.max(np.abs(rec[key] - v[key])))
        assert err <= 1e-12, f"{key}: deviation {err:.3g}"
    assert np.array_equal(rec["contact"], v["contact"])


def test_graph_run_completes_one_stride_with_thesis_like_numbers(graph_run):
    m = json.loads((graph_run / "metrics.json").read_text())
    assert m["aborted"] is False and m["replay_command_max_dev"] == 0.0
    td = m["events"]["R"]["touch_down_s"]
    assert len(td) >= 2 and m["stride_source"] == "touch_down_R"          # one complete stride of the right leg
    assert 0.5 <= m["stride_duration_s"] <= 0.8                             # thesis: about 0.6 s
    assert 0.75 <= m["stance_fraction_R"] <= 0.92                           # thesis: about 85 %
    assert 0.02 <= m["com_peak_to_peak_m"] <= 0.08                          # thesis: about 0.04 m
    assert 0.8 <= m["grf_y_second_peak_bw"] <= 1.4                          # thesis: about 110 % BW
    assert m["hip_torque_min_norm"] < 0.0 < m["hip_torque_max_norm"]         # sign change over the stance
    assert m["cop_travel_m"] > 0.02                                          # heel -> forefoot
    for f in ("gait_com.png", "gait_grf.png", "gait_hip_torque.png", "gait_cop.png", "gait_stick.gif"):
        assert (graph_run / f).stat().st_size > 5_000, f
    rep = (graph_run / "report.md").read_text()
    assert "thesis" in rep and "110 % BW" in rep and "85.0 %" in rep


def test_reproducibility_over_three_noise_seeds(graph_run, tmp_path):
    runs = [graph_run]
    for seed in (2, 3):
        out = tmp_path / f"seed{seed}"
        p = _run("run", "gait_vpp", "--composed", "--no-analyze", "--set", f"loop.seed={seed}", "--out", str(out))
        assert p.returncode == 0, p.stdout + p.stderr
        runs.append(out)
    p = _run("analyze", "--gait", *map(str, runs), "--out", str(tmp_path / "rep"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "rep" / "gait_reproducibility.png").stat().st_size > 10_000
    spread = json.loads((tmp_path / "rep" / "reproducibility.json").read_text())["spread"]
    assert 0.0 < spread["com_y"]["max_std"] < 0.005          # different noise, same gait (within 5 mm)
    assert 0.0 < spread["grf_y_R"]["rms_std"] < 30.0


def test_ideal_actuator_moves_the_stance_fraction_towards_the_pure_model():
    out = {}
    for name in ("gait_vpp", "gait_vpp_ideal"):
        s = scn.load(name)
        g, _ = gait_view(run_virtual(s), s)
        out[name] = gait_metrics(g, s.numerical.vpp.m_vpp_kg, s.numerical.vpp.l0_l_m)["stance_fraction_R"]
    pure = pure_reference(scn.load("gait_vpp"))["stance_fraction_R"]
    assert abs(out["gait_vpp_ideal"] - pure) < abs(out["gait_vpp"] - pure)


def test_walker_without_support_falls_with_the_fall_bit():
    s = scn.load("gait_vpp")
    g = GaitNumerical(s.numerical.vpp, s.numerical.gait, s.loop.dt_s)
    ev = 0
    for _ in range(3000):
        ev = g.step(0.0, 0.0, 0.0)        # the foot never carries: the right leg gives no support
        if ev & FALL_EVENT:
            break
    assert ev & FALL_EVENT and g.fallen


def test_vpp_step_cost_is_small():
    r = time_gait_step(n=3000)
    assert r["median_us"] < 100.0, r      # 1 ms synchronisation step; measured ~10 us
