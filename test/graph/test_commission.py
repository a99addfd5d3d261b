"""`rths commission` on the emulated ros2_control rig (the emulator node in process, over DDS, realtime): a correctly
wired rig passes; two swapped legs, a flipped sign, a leg that does not move and a rig reporting the actuator stroke
are each found and named in the verdict.  The rig client refuses commands beyond the stroke or the leg speed."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.core.platform.commissioning import CommissioningParams, commission
from rths_ros.runtime.ros2_control_rig import RigCommandRefused, Ros2ControlRig, load_rig_scenario

# (the emulator is a Python thread on a possibly busy machine: it may stall longer than a rig would)
RIG = ["ros2_control.emulate=true", "ros2_control.state_timeout_s=2.0"]
FAST = CommissioningParams(hold_s=0.2, window_s=0.08)


def _commission(*sets):
    s = load_rig_scenario("contact_1d", RIG + list(sets))
    g = s.platform.geometry
    with Ros2ControlRig(s) as rig:
        rig.wait_ready()
        res = commission(rig, factory.start_lengths(s), g.leg_length_min_m, g.leg_length_max_m, FAST)
        summary = rig.emulator_summary()
    print(res.table())
    print(res.faults)
    return res, summary


def test_rths_commission_passes_a_correct_rig_and_writes_its_record(tmp_path, rths_cli):
    out = tmp_path / "c"
    p = rths_cli("commission", "contact_1d", *[a for x in RIG for a in ("--set", x)], "--hold-s", "0.2",
                 "--out", str(out), timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASS: legs, order, signs and gains as expected" in p.stdout, p.stdout
    rec = json.loads((out / "commission.json").read_text())
    assert rec["passed"] is True and rec["faults"] == [] and len(rec["jogs"]) == 6
    assert [j["moved_leg"] for j in rec["jogs"]] == [1, 2, 3, 4, 5, 6]
    assert all(abs(j["gain"] - 1.0) < 0.1 for j in rec["jogs"]), rec["jogs"]
    assert rec["emulator"]["refused_commands"] == 0 and rec["emulator"]["clipped_commands"] == 0


@pytest.mark.parametrize("fault, named, moved", [
    ("ros2_control.emulator_swap_legs=[2, 3]", "legs 2 and 3 swapped", [1, 3, 2, 4, 5, 6]),
    ("ros2_control.emulator_sign_flip_legs=[5]", "leg 5: sign flipped", [1, 2, 3, 4, 5, 6]),
    ("ros2_control.emulator_stuck_legs=[4]", "leg 4 does not move", [1, 2, 3, 0, 5, 6]),
])
def test_each_wiring_fault_of_the_emulated_rig_is_found_and_named(fault, named, moved):
    res, summary = _commission(fault)
    assert not res.passed
    assert res.faults == [named], res.faults
    assert [j.moved for j in res.jogs] == moved
    assert summary["clipped_commands"] == 0


def test_a_rig_reporting_the_stroke_is_refused_before_anything_moves_and_passes_once_mapped(tmp_path, rths_cli):
    stroke = RIG + ["ros2_control.emulator_position_offset_m=0.46"]
    p = rths_cli("commission", "contact_1d", *[a for x in stroke for a in ("--set", x)], "--out",
                 str(tmp_path / "s"), timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAIL: all legs read 460.0 mm below the expected pose alike" in p.stdout, p.stdout
    assert "ros2_control.joint_offsets_m about +0.4600 m" in p.stdout
    rec = json.loads((tmp_path / "s" / "commission.json").read_text())
    assert rec["jogged"] is False and rec["emulator"]["commands"] == 0      # nothing was commanded
    res, _ = _commission("ros2_control.emulator_position_offset_m=0.46", "ros2_control.joint_offsets_m=[0.46, 0.46, "
                         "0.46, 0.46, 0.46, 0.46]", "ros2_control.emulator_sign_flip_legs=[2]")
    assert res.faults == ["leg 2: sign flipped"], res.faults


def test_the_rig_client_refuses_commands_beyond_the_stroke_or_the_leg_speed_and_sends_nothing():
    s = load_rig_scenario("contact_1d", RIG)
    g = s.platform.geometry
    with Ros2ControlRig(s) as rig:
        rig.wait_ready()
        b0 = rig.read_lengths()
        before = rig.emulator_summary()["commands"]
        far = np.tile(b0, (50, 1))
        far[-1, 2] = g.leg_length_max_m + 1e-3
        with pytest.raises(RigCommandRefused) as e:
            rig.play(far)
        assert "leg 3: command 0.792300 m (row 49) outside the stroke [0.611300, 0.791300] m" in str(e.value)
        fast = np.tile(b0, (50, 1))
        fast[10:, 4] += 1e-3                  # 1 mm in one period: 1 m/s
        with pytest.raises(RigCommandRefused) as e:
            rig.play(fast)
        assert "leg 5:" in str(e.value) and "(row 10)" in str(e.value) and "1.0000 m/s" in str(e.value)
        assert "leg speed limit 0.2500 m/s" in str(e.value)
        assert rig.commands_sent == 0 and rig.emulator_summary()["commands"] == before
        res = rig.play(np.tile(b0, (20, 1)))          # a valid trajectory goes out and is recorded
        assert res["lengths"].shape == (20, 6) and np.allclose(res["lengths"], b0, atol=1e-5)
        assert rig.commands_sent == 20


def test_the_twin_in_process_and_the_platform_link_pass_too(tmp_path, rths_cli):
    """The same check over the other two rigs (lockstep: the twin stepped in process, the platform emulator over
    the UDP link)."""
    for rig in ("--twin", "--link"):
        out = tmp_path / rig.strip("-")
        p = rths_cli("commission", "contact_1d", rig, "--hold-s", "0.2", "--out", str(out), timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        rec = json.loads((out / "commission.json").read_text())
        assert rec["passed"] and [j["moved_leg"] for j in rec["jogs"]] == [1, 2, 3, 4, 5, 6], rec
        assert ("platform controller at 127.0.0.1" in rec["rig"]) == (rig == "--link"), rec["rig"]
