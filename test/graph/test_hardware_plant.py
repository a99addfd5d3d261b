"""plant = hardware: the hardware_plant node against the in-process rig emulators (platform link + Net F/T).

The emulators serve the digital twin over UDP, so with the same noise seeds a lockstep run through the whole
driver chain must reproduce the simulated plant's run up to the sensor's count resolution (1e-6 N) and what
that changes downstream; a link fault must abort the run naming the link; ``rths identify`` on the twin must
recover Insam 2022 Table 4.1.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hardware_emulation import SLACK

from rths_ros.analysis.metrics import compute_metrics
from rths_ros.analysis.run_analysis import analyze_bag, record_from_bag, reference_for
from rths_ros.app import scenario as scn
from rths_ros.app.run_status import read_events
from rths_ros.app.vrths import run_virtual
from rths_ros.bag import read_bag
from rths_ros.core.platform.safety import safe_pose_lengths
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.core.sysid.legs import load_plant_config
from rths_ros.runner import run_scenario

ROOT = Path(__file__).resolve().parents[2]

# Insam 2022 Table 4.1: k_i w_c,i [m/(A s^2)] and w_c,i [rad/s]
TABLE_4_1_NUM = (1011.0, 1053.1, 1123.5, 780.9, 988.1, 1070.9)
TABLE_4_1_WC = (122.9, 55.5, 54.7, 55.3, 66.2, 59.0)



@pytest.fixture(scope="module")
def hardware_run(tmp_path_factory):
    s = scn.load("contact_1d", SLACK, plant="hardware")
    assert s.hardware.emulate and "hardware_plant" in s.run_nodes and "sim_plant" not in s.run_nodes
    out = tmp_path_factory.mktemp("hardware") / "run"
    res = run_scenario(s, out, progress=False)
    assert res.code == 0, res.message
    summary = analyze_bag(out / "bag", out)
    return s, out, summary["metrics"]


def test_hardware_run_reproduces_the_simulated_plant(hardware_run):
    s, out, m_hw = hardware_run
    rec, s_bag, _ = record_from_bag(out / "bag")
    assert s_bag.plant == "hardware"
    assert rec["missing_samples"] == {"cmd": 0, "state": 0, "force": 0, "legs": 0, "wrench": 0}
    s_sim = scn.load("contact_1d")          # plant = sim; its graph run equals run_virtual (test_contact1d_graph)
    v = run_virtual(s_sim)
    assert rec["k"].size == v["k"].size == s.steps + 1
    # states: the wrench passes the sensor's int32 counts (1e-6 N); that may move a leg across one resolver
    # step (2.4 um) somewhere, nothing more
    q = s.sim_plant.quantisation_m
    assert np.max(np.abs(rec["z_ach"] - v["z_ach"])) < q
    assert np.max(np.abs(rec["z_cmd"] - v["z_cmd"])) < q
    # the measured force within the sensor noise (std 0.02 N); a wrench one step late would differ by
    # k_EXP * |z_dot| * dt, up to ~0.1 N here
    noise = s.sim_plant.force_noise_std_n
    assert np.max(np.abs(rec["f_meas"] - v["f_meas"])) < noise
    assert np.max(np.abs(rec["f_int"] - v["f_int"])) < noise
    m_sim = compute_metrics(v, reference_for(s_sim, v["k"].size), s.loop.dt_s)
    for key in ("e_track_rel", "e_ref_rel", "edot_track_rel", "max_abs_tracking_error_m", "E_error_J",
                "Ec_error_J", "peak_contact_force_n"):
        rel = abs(m_hw[key] - m_sim[key]) / abs(m_sim[key])
        assert rel < 1e-3, f"{key}: hardware {m_hw[key]:.6g} vs sim {m_sim[key]:.6g} ({rel:.2g})"
    for key in ("touchdown_s", "liftoff_s"):
        assert abs(m_hw[key] - m_sim[key]) <= 1.5 * s.loop.dt_s, key
    assert m_hw["stable"] is m_sim["stable"] is True


def test_hardware_run_is_recorded_and_analysed_like_any_other(hardware_run):
    s, out, m = hardware_run
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["loop"]["steps"] == s.steps
    for png in ("displacement.png", "tracking_error.png", "interface_force.png", "power_error.png"):
        assert (out / png).stat().st_size > 10_000
    topics = read_bag(out / "bag", ["/rths/raw_wrench", "/rths/leg_state"])
    wrench = [msg for _, msg in topics["/rths/raw_wrench"]]
    assert [int(w.step) for w in wrench] == list(range(s.steps + 1))
    seq = np.array([int(w.sequence) for w in wrench])
    # RawWrench.sequence is the RDT sequence number: a new sensor record for every step (lockstep waits for a
    # record sampled after the step), so it increases strictly, by at least one
    assert np.all(np.diff(seq) >= 1)
    assert all(int(w.status) == 0 for w in wrench)
    assert len(topics["/rths/leg_state"]) == s.steps + 1
    t = json.loads((out / "timing" / "hardware_plant.json").read_text())
    hw = t["hardware"]
    assert hw["emulated"] is True and hw["fault"] == ""
    assert hw["link"]["lost"] == 0 and hw["link"]["stale_states"] == 0
    assert hw["link"]["received"] >= s.steps + 1          # RESETs + one STATE per step (+ heartbeat answers)
    assert hw["sensor"]["lost"] == 0 and hw["sensor"]["received"] >= s.steps + 1


def test_link_fault_aborts_the_run_naming_the_link(tmp_path):
    fail_at = 600
    s = scn.load("contact_1d", [f"hardware.emulator_fail_at_step={fail_at}", "recording.enabled=false", *SLACK],
                 plant="hardware")
    res = run_scenario(s, tmp_path / "run", progress=False)
    assert res.code != 0
    assert "hardware_plant" in res.message and "platform controller at 127.0.0.1:" in res.message, res.message
    events = read_events(tmp_path / "run")["events"]
    aborts = [e for e in events if e["type"] == "ABORT"]
    assert aborts and aborts[0]["source"] == "hardware_plant", aborts
    assert f"no STATE for step {fail_at}" in aborts[0]["reason"]
    assert aborts[0]["step"] == fail_at
    assert not any(e["type"] == "SAFE" for e in events)     # a dead link cannot ramp; the rig's watchdog holds
    t = json.loads((tmp_path / "run" / "timing" / "hardware_plant.json").read_text())
    assert t["exit_code"] == 3 and "platform controller" in t["hardware"]["fault"]
    assert t["hardware"]["link"]["retransmissions"] >= s.hardware.platform_link.retries


def test_abort_elsewhere_ramps_the_rig_to_its_safe_pose_over_the_link(tmp_path):
    s = scn.load("contact_1d", ["faults.leg_command_offset_at_step=200", *SLACK], plant="hardware")
    out = tmp_path / "run"
    res = run_scenario(s, out, progress=False)
    assert res.code != 0
    events = read_events(out)["events"]
    assert [e["source"] for e in events if e["type"] == "ABORT"][0] == "stewart_platform"
    safe = [e for e in events if e["type"] == "SAFE"]
    assert safe and safe[0]["source"] == "hardware_plant"
    t = json.loads((out / "timing" / "hardware_plant.json").read_text())
    assert t["hardware"]["fault"] == ""
    k_abort = t["safe_pose"]["abort_step"]
    states = {int(msg.step): np.array(msg.length) for _, msg in
              read_bag(out / "bag", ["/rths/leg_state"])["/rths/leg_state"]}
    k_last = max(states)
    assert k_last == k_abort + t["safe_pose"]["ramp_steps"] + t["safe_pose"]["hold_steps"]
    b_safe = safe_pose_lengths(StewartKinematics(s.platform.geometry), s.safety.safe_retract_m)
    assert t["safe_pose"]["hold_steps"] == round(s.safety.hold_s / s.loop.dt_s)
    # the legs were millimetres from the safe pose (home retracted by safety.safe_retract_m, away from the plate)
    # at the abort and on it at the end, moved by the controller behind the link (the cascade settles during the
    # hold of safety.hold_s)
    assert np.max(np.abs(states[k_abort] - b_safe)) > 3e-3
    assert np.max(np.abs(states[k_last] - b_safe)) < 3e-4


def test_identify_cli_recovers_table_4_1(tmp_path):
    out = tmp_path / "legs.yaml"
    p = subprocess.run([sys.executable, "-m", "rths_ros.cli", "identify", "contact_1d", "--twin", "--band-s", "8",
                        "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=str(ROOT),
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(" band ") == 6 * 10           # progress: one line per leg and band
    legs = load_plant_config(out)
    for i in range(6):
        e_num = legs.gain_num[i] / TABLE_4_1_NUM[i] - 1.0
        e_wc = legs.omega_c_rad_per_s[i] / TABLE_4_1_WC[i] - 1.0
        assert abs(e_num) < 0.05 and abs(e_wc) < 0.05, (i + 1, e_num, e_wc)
    # the table names each leg with identified value, scenario value and error
    rows = [line.split() for line in p.stdout.splitlines() if line.split()[:1] in (["1"], ["2"], ["3"], ["4"],
                                                                                    ["5"], ["6"])]
    assert len(rows) == 6
    assert float(rows[1][1]) == pytest.approx(legs.gain_num[1], abs=0.01)
    assert float(rows[1][2]) == pytest.approx(TABLE_4_1_NUM[1])


def test_identify_cli_takes_the_line_spacing_the_top_frequency_and_a_delay_fit(tmp_path, capsys):
    from rths_ros.cli import main
    out = tmp_path / "leg2.yaml"
    code = main(["identify", "contact_1d", "--twin", "--legs", "2", "--spacing-hz", "1", "--f-max-hz", "40",
                 "--band-s", "3", "--fit-delay", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "10 bands up to 40 Hz, spacing 1 Hz" in text
    bands = [line for line in text.splitlines() if " band " in line]
    assert len(bands) == 10 and "[ 37.0,  40.0] Hz" in bands[-1]      # 4 lines per band, the last ends at 40 Hz
    header = next(line for line in text.splitlines() if line.split()[:2] == ["leg", "identified"])
    assert "delay [ms]" in header
    row = next(line.split() for line in text.splitlines() if line.split()[:1] == ["2"])
    assert abs(float(row[-1])) < 0.5               # the twin has no transport delay: the fit finds next to none
    assert "spacing 1 Hz" in out.read_text() and load_plant_config(out).gain_num[1] == pytest.approx(
        TABLE_4_1_NUM[1], rel=0.05)
    # invalid values are refused before anything runs, naming the option and the rule
    for args, what in [(["--spacing-hz", "0.3"], "--spacing-hz: 0.3 is not allowed; 1/(--spacing-hz dt) must be a "
                                                 "whole number of samples"),
                       (["--spacing-hz", "0"], "--spacing-hz: 0.0 is out of range"),
                       (["--f-max-hz", "nan"], "--f-max-hz: nan is not finite"),
                       (["--f-max-hz", "600"], "--f-max-hz: 600.0 is not below the Nyquist frequency"),
                       (["--f-max-hz", "10.3"], "--f-max-hz: 10.3 is not a whole multiple of --spacing-hz = 0.5 Hz"),
                       (["--f-max-hz", "2"], "10 exceeds the 4 lines up to --f-max-hz")]:
        assert main(["identify", "contact_1d", "--twin", *args, "--out", str(tmp_path / "x.yaml")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("rths identify: error: ") and what in err, (args, err)
    assert not (tmp_path / "x.yaml").exists()
