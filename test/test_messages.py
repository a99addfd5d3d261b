"""The package's own messages import from the venv with no environment set by hand."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MSG_DIR = Path(__file__).resolve().parents[1] / "msg"


def test_every_message_imports_in_a_clean_environment(tmp_path):
    names = sorted(p.stem for p in MSG_DIR.glob("*.msg"))
    assert len(names) >= 11
    code = "from rths_ros.msg import " + ", ".join(names) + "\nimport rths_ros.params\nprint('ok')"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok"


def test_loop_messages_carry_step_and_header():
    import rths_ros.msg as m
    for name in ("InterfaceCommand", "InterfaceState", "InterfaceForce", "RawWrench", "LegCommand", "LegState",
                 "PassivityState", "AdaptiveFilter"):
        fields = getattr(m, name).get_fields_and_field_types()
        assert fields["header"] == "std_msgs/Header", name
        assert fields["step"] == "uint64", name
    ev = m.TestEvent
    assert {ev.START, ev.TRIAL_BEGIN, ev.TRIAL_END, ev.PAUSE, ev.ABORT, ev.STOP} == {1, 2, 3, 4, 7, 6}


def test_message_round_trip_serialisation():
    from rclpy.serialization import deserialize_message, serialize_message

    from rths_ros.msg import LegCommand
    m = LegCommand()
    m.step = 12345678901
    m.length = [0.7, 0.71, 0.72, 0.73, 0.74, 0.75]
    m2 = deserialize_message(serialize_message(m), LegCommand)
    assert m2.step == m.step and list(m2.length) == list(m.length)
