"""gait_vpp (prosthetic-foot RTHS, Insam 2022 Part III) through the ROS graph and in the virtual run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual
from rths_ros.core.models.gait import vpp, vpp_ic, vpp_params
from rths_ros.core.models.gait.rths import FALL_EVENT, GaitNumerical
from rths_ros.families.gait.analysis import gait_record_from_bag, gait_view, vpp_reference
from rths_ros.families.gait.metrics import gait_metrics

ROOT = Path(__file__).resolve().parents[2]


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


def test_thesis_configuration_scenario_through_the_graph_reproduces_the_virtual_run(tmp_path):
    """gait_vpp_thesis (Table A.7 initial conditions, CoP shift) through the ROS graph in lockstep (the nodes composed
    in one process; gait_vpp runs through separate processes above): the records equal the in-process run to
    1e-12, and the walker slows down and leans back (docs/gait.md)."""
    out = tmp_path / "thesis"
    p = _run("run", "gait_vpp_thesis", "--composed", "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    rec, s = gait_record_from_bag(out / "bag")
    v = run_virtual(s)
    for key in ("q_cmd", "q_ach", "force", "wrench"):
        assert float(np.max(np.abs(rec[key] - v[key]))) <= 1e-12, key
    m = json.loads((out / "metrics.json").read_text())
    assert m["aborted"] is False
    assert m["xd_trend_m_per_s2"] < -0.1 and m["trunk_change_rad"] < -0.02


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
    assert "## Differences from the thesis" in rep and "no number given" in rep


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


def test_ideal_actuator_moves_the_stance_fraction_towards_the_vpp_simulation():
    out = {}
    for name in ("gait_vpp", "gait_vpp_ideal"):
        s = scn.load(name)
        g, _ = gait_view(run_virtual(s), s)
        out[name] = gait_metrics(g, s.numerical.vpp.m_vpp_kg, s.numerical.vpp.l0_l_m)
    sim = vpp_reference(scn.load("gait_vpp"))            # basic VPP model, periodic gait (thesis ch. 17)
    assert not sim["fallen"]
    for key in ("stance_fraction_R", "stride_duration_s"):
        assert abs(out["gait_vpp_ideal"][key] - sim[key]) < abs(out["gait_vpp"][key] - sim[key]), (key, out, sim)


def test_scenario_stores_modified_model_initial_conditions():
    """gait_vpp starts from its stored amp_* values, optimised on the scenario's own modified model (its stump,
    the secant of its foot): they continue that model's walk longer and more periodically than Table A.7's."""
    s = scn.load("gait_vpp")
    assert s.numerical.gait.initial_conditions == "model"
    assert scn.load("gait_vpp_ideal").numerical.vpp == s.numerical.vpp    # both variants start alike
    p = vpp_ic.scenario_model(s)
    assert p.k_u_n_per_m == s.numerical.vpp.k_u_n_per_m and p.d_u_kg_per_s == s.numerical.vpp.d_u_kg_per_s
    ic = vpp_ic.scenario_ic(s)
    g = GaitNumerical(s.numerical.vpp, s.numerical.gait, s.loop.dt_s)
    assert g.state.s[vpp_params.S_Y] == ic["y0_m"] and g.state.s[vpp_params.S_VX] == ic["xd0_m_per_s"]
    a7 = vpp_params.THESIS_IC_A7

    def cost(x):
        return vpp_ic.periodicity_cost(p, x["xd0_m_per_s"], x["y0_m"], x["phid0_rad_per_s"], amputee=True,
                                       n_strides=3)
    assert cost(ic) < 0.1 * cost(a7)
    steps = {k: vpp.simulate(p, n_steps=60, t_max_s=30.0, amputee=True, ic=x, decimate=50)["n_td"]
             for k, x in (("stored", ic), ("a7", a7))}
    assert steps["stored"] > 2 * steps["a7"], steps


def test_modified_model_optimisation_reduces_the_stride_cost():
    p = vpp_ic.scenario_model(scn.load("gait_vpp"))
    res = vpp_ic.optimise_ic(p, amputee=True, max_evals=40, n_strides=1, seed=2, check=False,
                             fix_y0=vpp_params.THESIS_IC_A7["y0_m"])
    assert res.y0_m == vpp_params.THESIS_IC_A7["y0_m"] and res.evaluations <= 50
    assert res.cost_best < 0.3 * res.cost_start
    assert vpp_ic.periodicity_cost(p, res.xd0_m_per_s, res.y0_m, res.phid0_rad_per_s, amputee=True) == \
        pytest.approx(res.cost_best)


_LIMIT_MESSAGES = {
    "joint": r"joint angle (?P<value>[\d.]+) deg exceeds the universal joint limit (?P<limit>[\d.]+) deg",
    "frame": r"reaction frame load (?P<value>[\d.]+) N exceeds the admissible (?P<limit>[\d.]+) N",
    "stroke": r"commanded length (?P<value>[\d.]+) m is (?P<side>below the minimum|above the maximum) "
              r"(?P<limit>[\d.]+) m",
}


def _limit_abort(rec):
    """(limit name, value beyond the limit?, limit) of the limit named in an abort reason."""
    import re
    for name, pat in _LIMIT_MESSAGES.items():
        m = re.search(pat, rec["abort_reason"])
        if m:
            value, limit = float(m["value"]), float(m["limit"])
            beyond = value < limit if name == "stroke" and m["side"].startswith("below") else value > limit
            return name, beyond, limit
    raise AssertionError(f"no limit named in {rec['abort_reason']!r}")


def _assert_clean_abort(rec, s):
    n = rec["force"].shape[0]
    assert rec["aborted"] and 1 < n <= s.steps
    for key in ("q_cmd", "q_ach", "force", "measured", "b_cmd", "b_meas", "wrench"):
        assert rec[key].shape[0] == n and np.all(np.isfinite(rec[key])), key


def test_walking_beyond_the_stride_hits_a_platform_limit_and_aborts_cleanly():
    """Longer than one stride, the rig's limits end the gait (thesis §16.2: they restrict the TD/TO angles)."""
    s = scn.load("gait_vpp", ["loop.duration_s=2.0"])
    rec = run_virtual(s)
    _assert_clean_abort(rec, s)
    name, beyond, limit = _limit_abort(rec)
    assert beyond, rec["abort_reason"]
    g, r = gait_view(rec, s)
    m = gait_metrics(g, s.numerical.vpp.m_vpp_kg, s.numerical.vpp.l0_l_m)
    assert m["stride_source"] == "touch_down_R" and r["fallen_at_step"] < 0   # a stride first; the model stood


def test_reaction_frame_limit_aborts_during_the_right_stance():
    s = scn.load("gait_vpp", ["platform.gait.interface.frame_load_max_n=250"])
    rec = run_virtual(s)
    _assert_clean_abort(rec, s)
    name, beyond, limit = _limit_abort(rec)
    assert name == "frame" and limit == 250.0 and beyond, rec["abort_reason"]
    assert rec["abort_reason"].startswith("ft_sensor: step ")
    assert rec["contact"][-1] and rec["measured"][-1, 1] > 200.0     # loaded right foot when it stopped
    full = run_virtual(scn.load("gait_vpp"))
    assert np.max(full["measured"][:, 1]) > 250.0                      # the default run does load it beyond 250 N


def test_report_of_a_virtual_run_states_definitions_and_differences(tmp_path):
    from rths_ros.families.gait.analysis import REPORT_ROWS, analyze_gait_record
    s = scn.load("gait_vpp")
    res = analyze_gait_record(run_virtual(s), s, tmp_path)
    m = res["metrics"]
    rep = (tmp_path / "report.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in rep.splitlines() if line.startswith("| ")}
    label = {key: lab for key, lab, _ in REPORT_ROWS}
    # CoM: the peak-to-peak value is the one compared with the thesis's 0.04 m; the amplitude is half of it
    p2p = rows[label["com_peak_to_peak_m"]]
    assert "max - min" in p2p[0] and "0.04" in p2p[-1] and "compared with this row" in p2p[-1]
    assert float(p2p[1]) == pytest.approx(m["com_peak_to_peak_m"], rel=1e-3)
    assert float(rows[label["com_amplitude_m"]][1]) == pytest.approx(0.5 * m["com_peak_to_peak_m"], rel=1e-3)
    # the hip torque has a thesis cell that says there is no number, and its values are the run's
    for key in ("hip_torque_min_norm", "hip_torque_max_norm"):
        row = rows[label[key]]
        assert "no number given" in row[-1]
        assert float(row[1]) == pytest.approx(m[key], rel=1e-3)
    assert m["hip_torque_first_half_mean_norm"] > 0.0 > m["hip_torque_second_half_mean_norm"]   # extension, flexion
    # eq. 16.3: tau_VPP,R = tau_h,R + F_perp l_R differs from tau_h,R by the measured perpendicular force
    assert m["hip_torque_vpp_max_norm"] - m["hip_torque_max_norm"] > 0.1 and m["f_perp_max_abs_n"] > 30.0
    notes = rep.split("## Differences from the thesis")[1].split("\n\n")[1]
    bullets = [line for line in notes.splitlines() if line.startswith("- **")]
    assert [b.split("**")[1] for b in bullets] == ["CoM.", "Stance fraction.", "GRF_y peaks.", "GRF_y basin.",
                                                   "GRF_x.", "Hip torque.", "Speed and trunk."]
    assert f"{100 * m['stance_fraction_R']:.1f} %" in bullets[1]
    assert f"{100 * m['vpp_sim']['stance_fraction_R']:.1f} %" in bullets[1]
    assert "gives no number" in bullets[5] and "matches it" in bullets[5]


def test_walker_without_support_falls_with_the_fall_bit():
    s = scn.load("gait_vpp")
    g = GaitNumerical(s.numerical.vpp, s.numerical.gait, s.loop.dt_s)
    ev = 0
    for _ in range(3000):
        ev = g.step(0.0, 0.0, 0.0)        # the foot never carries: the right leg gives no support
        if ev & FALL_EVENT:
            break
    assert ev & FALL_EVENT and g.fallen


def test_bench_core_reports_the_vpp_sync_step():
    """`rths bench core gait_vpp` measures the gait objects; the speed itself is reported, not asserted."""
    from rths_ros import bench
    core = bench.bench_core(scn.load("gait_vpp"), n=60)
    vpp_rows = [k for k in core if k.startswith("numerical_substructure: VPP sync step (5 RK4 sub-steps")]
    assert len(vpp_rows) == 1, list(core)
    assert any(k.startswith("sim_plant:") for k in core) and any(k.startswith("ft_sensor:") for k in core)
    for k, v in core.items():
        assert v["n"] == 60 and 0.0 < v["median_us"] <= v["p99_us"] <= v["max_us"], (k, v)
    assert "VPP sync step" in bench.markdown_core(core)
