"""gait_vpp with plant = hardware: the hardware_plant node ramps the rig from its home pose to the gait test's start
pose over the platform link before READY (and at every later trial begin), then runs the stride.

Against the emulators, whose controller leaves the legs at home after a RESET like a rig's, the graph run must
show the ramp (speed-limited like the safe-pose ramp, settled at the start pose) and then reproduce the simulated
plant's stride, which starts at the start pose directly.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from hardware_emulation import SLACK

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.app.run_status import read_events
from rths_ros.app.vrths import run_virtual
from rths_ros.bag import read_bag
from rths_ros.core.platform.safety import START_POSE_TOLERANCE_M
from rths_ros.core.platform.safety import start_pose_ramp as start_ramp
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.families.gait.analysis import gait_record_from_bag, gait_view
from rths_ros.families.gait.metrics import gait_metrics
from rths_ros.nodes.hardware_plant import trial_start_lengths
from rths_ros.runner import run_scenario


def test_start_pose_and_ramp_profile():
    s = scn.load("gait_vpp", plant="hardware")
    home = np.array(StewartKinematics(s.platform.geometry).home_lengths)
    start = trial_start_lengths(s)
    assert np.array_equal(start, factory.start_lengths(s))
    assert np.max(np.abs(start - home)) > 0.01                      # the gait start pose is not home
    c = scn.load("contact_1d", plant="hardware")
    assert np.array_equal(trial_start_lengths(c), np.array(StewartKinematics(c.platform.geometry).home_lengths))
    assert start_ramp(start + 0.5 * START_POSE_TOLERANCE_M, start, s.safety, s.loop.dt_s) is None
    ramp = start_ramp(home, start, s.safety, s.loop.dt_s)
    b = np.array([ramp.command(j)[0] for j in range(ramp.total_steps + 1)])
    v = np.array([ramp.command(j)[1] for j in range(ramp.total_steps + 1)])
    assert np.allclose(b[0], home) and np.allclose(b[-1], start)
    assert np.max(np.abs(np.diff(b, axis=0))) <= s.safety.ramp_speed_m_per_s * s.loop.dt_s * (1 + 1e-9)
    assert np.max(np.abs(v)) <= s.safety.ramp_speed_m_per_s * (1 + 1e-9)
    assert ramp.hold_steps == round(s.safety.hold_s / s.loop.dt_s)


@pytest.fixture(scope="module")
def hardware_gait(tmp_path_factory):
    s = scn.load("gait_vpp", ["loop.trials=2", *SLACK], plant="hardware")
    assert s.hardware.emulate and "hardware_plant" in s.run_nodes and "sim_plant" not in s.run_nodes
    out = tmp_path_factory.mktemp("hwgait") / "run"
    res = run_scenario(s, out, progress=False)
    assert res.code == 0, res.message
    return s, out


def test_rig_is_ramped_to_the_start_pose_before_ready_and_at_the_next_trial(hardware_gait):
    s, out = hardware_gait
    t = json.loads((out / "timing" / "hardware_plant.json").read_text())
    hw = t["hardware"]
    assert hw["emulated"] and hw["fault"] == ""
    ramps = hw["start_ramps"]
    # one ramp in configure (before READY; trial 0 then starts without another RESET), one at the begin of trial 1
    assert [r["trial"] for r in ramps] == [0, 1], ramps
    start = trial_start_lengths(s)
    home = np.array(StewartKinematics(s.platform.geometry).home_lengths)
    for r in ramps:
        assert r["start_error_before_m"] == pytest.approx(np.max(np.abs(home - start)), abs=1e-5)   # from home
        assert r["peak_command_speed_m_per_s"] <= s.safety.ramp_speed_m_per_s * (1 + 1e-9)
        assert r["ramp_steps"] >= np.pi * r["max_leg_travel_m"] / (2 * s.safety.ramp_speed_m_per_s * s.loop.dt_s)
        assert r["hold_steps"] == round(s.safety.hold_s / s.loop.dt_s)
        assert r["start_error_after_m"] < 1e-4                     # settled at the start pose
        assert r["max_sensor_force_n"] < 50.0                       # the foot is not pressed into the plate
    events = read_events(out)["events"]
    kinds = [(e["type"], e["source"]) for e in events]
    assert kinds.index(("READY", "hardware_plant")) < kinds.index(("START", "supervisor"))
    assert not any(e["type"] == "ABORT" for e in events)
    # the first leg state of each trial is at the start pose
    states = {int(m.step): np.array(m.length) for _, m in read_bag(out / "bag", ["/rths/leg_state"])["/rths/leg_state"]}
    for trial in (0, 1):
        assert np.max(np.abs(states[trial * (s.steps + 1)] - start)) < 1e-4


def test_hardware_stride_reproduces_the_simulated_plant(hardware_gait):
    s, out = hardware_gait
    rec, s_bag = gait_record_from_bag(out / "bag")
    assert s_bag.plant == "hardware" and not rec["aborted"] and rec["missing_force_samples"] == 0
    s_sim = scn.load("gait_vpp")
    v = run_virtual(s_sim)
    vp = s.numerical.vpp
    m_hw = gait_metrics(gait_view(rec, s_bag)[0], vp.m_vpp_kg, vp.l0_l_m)
    m_sim = gait_metrics(gait_view(v, s_sim)[0], vp.m_vpp_kg, vp.l0_l_m)
    assert m_hw["stride_source"] == m_sim["stride_source"] == "touch_down_R"      # one complete stride
    assert abs(m_hw["stride_duration_s"] - m_sim["stride_duration_s"]) <= 3 * s.loop.dt_s
    assert abs(m_hw["stance_fraction_R"] - m_sim["stance_fraction_R"]) < 0.01
    assert abs(m_hw["com_peak_to_peak_m"] - m_sim["com_peak_to_peak_m"]) < 1e-3
    assert abs(m_hw["grf_y_second_peak_bw"] - m_sim["grf_y_second_peak_bw"]) < 0.02
    # the interface command differs only by what the ramp's residual and the noise change downstream
    n = min(rec["q_cmd"].shape[0], s.steps + 1)
    assert np.max(np.abs(rec["q_cmd"][:n, :2] - v["q_cmd"][:n, :2])) < 2e-3
