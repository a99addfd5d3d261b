"""`rths compare-twin RUN_DIR` (rths_ros.analysis.twin_comparison): the numbers on signals with known answers, and
a short run on the emulated ros2_control rig against the twin: the rig's topics add a latency of one to three beats
(the newest command leaves at the next beat and acts at the rig's next tick), which the first comparison measures
and names (its hint); the twin given that latency agrees with the rig on every check, and a deliberately mis-set
rig (other leg gains than the twin's) fails the verdict against the same twin."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rths_ros.analysis import twin_comparison as tc
from rths_ros.params import ParameterError

DT = 0.002
#: the contact test of config/sweeps/contact_1d_rig_delay.yaml: 1.5 s at 250 Hz, PPI2 leg gains
SHORT = ["loop.duration_s=1.5", "loop.dt_s=0.004", "numerical.contact_1d.dt_s=0.004", "passivity.dt_s=0.004",
         "platform.commander.coupling.dt_s=0.004", "numerical.contact_1d.f_d_hz=0.6667",
         "sim_plant.cascade.preset=PPI2", "safety.watchdog_steps=250"]
RIG = ["ros2_control.emulate=true", "standard_interfaces.wrench_input_topic=/ft_sensor/wrench",
       "ros2_control.state_timeout_s=0.5"]
#: the rig's legs mis-set: K_Pp = 20 1/s instead of PPI2's 50 1/s (the slower position loop adds ~30 ms of lag)
MIS_SET = ["sim_plant.cascade.preset=custom", "sim_plant.cascade.k_pp_per_s=20", "sim_plant.cascade.k_pv_a_s_per_m=0.2",
           "sim_plant.cascade.k_iv_a_per_m=5.0"]
DT_RUN = 0.004

def _record(t, z, za, f):
    return {"z_cmd": z, "z_ach": za, "f_int": f, "aborted": False, "abort_reason": ""}


def test_identical_records_agree_and_a_shifted_scaled_one_is_measured():
    t = np.arange(1500) * DT
    z = -0.006 * (1 - np.cos(2 * np.pi * 0.667 * t))
    za = np.interp(t - 0.02, t, z)
    f = 3.7 - 2000 * np.minimum(z + 0.01, 0.0) + 0.5 * np.sin(2 * np.pi * 7 * t)
    twin = _record(t, z, za, f)
    same = tc.compare_records(twin, dict(twin), DT)
    for s in same["signals"].values():
        assert s["nrmse"] == 0 and s["lag_s"] == 0 and s["correlation"] == pytest.approx(1)
    assert same["tracking"]["tau_fei_diff_s"] == 0
    assert tc.verdict(same)["good_enough"] is True
    # the rig: 6 ms later and 20 % more force
    late = np.interp(t - 0.026, t, z)
    rig = _record(t, z, late, 3.7 + 1.2 * (f - 3.7))
    c = tc.compare_records(rig, twin, DT)
    assert c["signals"]["z_ach"]["lag_s"] == pytest.approx(0.006, abs=2e-4)
    assert c["tracking"]["tau_fei_diff_s"] == pytest.approx(0.006, abs=5e-4)
    assert c["signals"]["f_int"]["peak_diff_rel"] > 0.1
    v = tc.verdict(c)
    assert v["good_enough"] is False and "|tau_FEI rig - tau_FEI twin|" in v["text"]
    assert "command_delay_steps=3" in v["hint"]           # 6 ms = 3 steps of 2 ms
    assert {ch["name"] for ch in v["checks"] if not ch["passed"]} >= {
        "|tau_FEI rig - tau_FEI twin| [s]", "interface force: |peak difference| / peak"}


def test_a_threshold_is_set_by_name_and_a_wrong_one_is_refused():
    assert tc.thresholds_from(["max_tau_fei_diff_s=0.005"]).max_tau_fei_diff_s == 0.005
    with pytest.raises(ParameterError, match="max_tau_fei_diff: unknown key"):
        tc.thresholds_from(["max_tau_fei_diff=0.005"])


def _sets(*groups):
    return [a for g in groups for x in g for a in ("--set", x)]


@pytest.fixture(scope="module")
def rig_runs(tmp_path_factory):
    """A nominal and a mis-set run on the emulated ros2_control rig (realtime, composed)."""
    from conftest import rths
    base = tmp_path_factory.mktemp("compare_twin")
    runs = {}
    for name, extra in (("nominal", []), ("mis_set", MIS_SET)):
        out = base / name
        p = rths("run", "contact_1d", "--mode", "realtime", "--composed", "--plant", "ros2_control", "--out", str(out),
                 "--no-analyze", *_sets(SHORT, RIG, extra), timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        runs[name] = out
    return base, runs


def test_compare_twin_passes_on_the_emulated_ros2_control_rig_and_fails_on_a_mis_set_one(rig_runs, rths_cli, tmp_path):
    _, runs = rig_runs
    base = tmp_path            # the comparisons' own folders: a rerun starts from none (the rig runs are shared)
    # 1. the plain twin: the rig's topic latency shows as extra equivalent delay, and the hint says how much
    first = base / "cmp_plain"
    p = rths_cli("compare-twin", str(runs["nominal"]), "--out", str(first), timeout=300)
    assert p.returncode == 0 and "verdict: twin" in p.stdout, p.stdout + p.stderr
    r = json.loads((first / "twin_comparison.json").read_text())
    d_tau = r["comparison"]["tracking"]["tau_fei_diff_s"]
    assert 0.0 < d_tau < 0.016, d_tau                       # later, by less than four beats
    latency = max(0, int(round(d_tau / DT_RUN)))
    assert r["verdict"]["good_enough"] or f"command_delay_steps={latency}" in r["verdict"]["hint"]
    # 2. the twin with the rig's latency: every check passes
    out = base / "cmp_nominal"
    p = rths_cli("compare-twin", str(runs["nominal"]), "--out", str(out),
                 *_sets([f"sim_plant.command_delay_steps={latency}"]), "--fail-if-not-good", timeout=300)
    r = json.loads((out / "twin_comparison.json").read_text())
    assert r["rig_plant"] == "ros2_control" and r["mode"] == "realtime" and "realtime, composed" in r["twin_how"]
    assert p.returncode == 0 and r["verdict"]["good_enough"] is True, p.stdout
    sig = r["comparison"]["signals"]
    assert sig["f_int"]["correlation"] > 0.95 and sig["z_ach"]["nrmse"] < 0.1
    for f in ("signals.png", "tracking.png", "report.md"):
        assert (out / f).stat().st_size > 1000, f
    # 3. the mis-set rig against the same twin (the twin run above, given instead of run again)
    out2 = base / "cmp_mis_set"
    p2 = rths_cli("compare-twin", str(runs["mis_set"]), "--out", str(out2), "--twin-run", str(out / "twin_run"),
                  *_sets(["sim_plant.cascade={preset: PPI2}", f"sim_plant.command_delay_steps={latency}"]),
                  "--fail-if-not-good", timeout=300)
    r2 = json.loads((out2 / "twin_comparison.json").read_text())
    assert p2.returncode == 1 and r2["verdict"]["good_enough"] is False, p2.stdout + p2.stderr
    failed = {c["name"] for c in r2["verdict"]["checks"] if not c["passed"]}
    assert "|tau_FEI rig - tau_FEI twin| [s]" in failed, failed
    assert r2["comparison"]["tracking"]["tau_fei_diff_s"] > 0.01      # the slower legs: > 10 ms more lag
    assert "verdict: twin NOT good enough for FACE" in p2.stdout
    # a twin run of another test is refused
    p3 = rths_cli("compare-twin", str(runs["mis_set"]), "--out", str(base / "x"), "--twin-run", str(out / "twin_run"))
    assert p3.returncode == 2 and "its sim_plant section differs" in p3.stderr, p3.stderr
