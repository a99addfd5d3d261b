"""Start failures and the hardware plant in realtime under `ros2 launch`, started exactly as a user does (the `ros2`
command, the installed rths.launch.py), so the exit code and the last line are what a shell sees.

* a ros2_control rig whose joint states lack a configured joint (here the emulator publishing other names): the
  launch ends by itself, non-zero, its last line the plant's own message, one ABORT in events.json, in separate
  processes and composed;
* `plant:=hardware mode:=realtime composed:=true`: loop statistics from the hardware plant (not null) and one START.
The wall time of each launch is printed (measured, not asserted)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from launch_checks import SKIP_REASON, ros2_launch

if SKIP_REASON:
    pytest.skip(SKIP_REASON, allow_module_level=True)

from rths_ros.app.run_status import read_events
from rths_ros.runtime.processes import node_pids


def _launch(out: Path, args: list[str], timeout_s: float = 180.0) -> tuple[int, str, float]:
    return ros2_launch(["rths_ros", "rths.launch.py", f"out:={out}", *args], timeout_s)


@pytest.mark.parametrize("composed", ["false", "true"])
def test_a_wrong_joint_name_ends_the_launch_on_the_plants_message(tmp_path, composed):
    out = tmp_path / "run"
    overrides = ("loop.duration_s=1 ros2_control.emulate=true standard_interfaces.wrench_input_topic=/ft_sensor/wrench "
                 "ros2_control.emulator_joint_names=[leg_1,leg_2,leg_3,leg_4,leg_5,hexa_leg_g]")
    code, text, wall = _launch(out, ["scenario:=contact_1d", "mode:=realtime", "plant:=ros2_control",
                                     f"composed:={composed}", f"overrides:={overrides}"])
    lines = [ln for ln in text.splitlines() if ln.strip()]
    print(f"composed:={composed}: exit {code} after {wall:.1f} s; last line: {lines[-1]}")
    assert code != 0, text[-3000:]
    assert "rths: FAILED: run aborted: ros2_control_plant: pre-flight" in lines[-1], text[-3000:]
    assert "lacks leg_6 (has hexa_leg_g" in lines[-1], lines[-1]
    rec = read_events(out)
    types = [e["type"] for e in rec["events"]]
    assert rec["status"] == "aborted" and types.count("ABORT") == 1 and "START" not in types, (rec["status"], types)
    assert "rths_analysis" not in text        # nothing was recorded: no analysis to fail after the cause
    assert not node_pids(str(out)), "node processes left behind"


def test_the_hardware_plant_in_realtime_reports_loop_statistics_and_one_start(tmp_path):
    out = tmp_path / "run"
    # reliable loop topics: with best effort the recorder's process on a loaded machine lost steps now and then
    # (a record of 948 of 1001 steps is incomplete, and the launch fails on it), which is not what this is about
    code, text, wall = _launch(out, ["scenario:=contact_1d", "mode:=realtime", "plant:=hardware", "composed:=true",
                                     "overrides:=loop.duration_s=1 safety.watchdog_steps=2000 "
                                     "loop.qos_profile=realtime_reliable"])
    print(f"hardware realtime composed: exit {code} after {wall:.1f} s")
    assert code == 0, text[-3000:]
    loop = json.loads((out / "metrics.json").read_text())["loop"]
    for key in ("step_latency_p50_s", "step_latency_p99_s", "period_mean_s", "period_jitter_s"):
        assert loop[key] is not None and loop[key] == loop[key] and loop[key] > 0, (key, loop)
    assert "hardware_plant" in loop["nodes"]
    types = [e["type"] for e in read_events(out)["events"]]
    assert types.count("START") == 1, types
