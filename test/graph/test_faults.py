"""Fault injection: a NaN in the sensor wrench aborts the run cleanly, in the graph and in the virtual run, and
the platform is ramped to the safe pose within the stated bound (``safety.safe_ramp_bound_s``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from test_safety import _assert_safe

from rths_ros.analysis.run_analysis import record_from_bag
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual

ROOT = Path(__file__).resolve().parents[2]


def test_nan_wrench_aborts_with_the_reason_and_keeps_the_bag(tmp_path):
    out = tmp_path / "nan"
    p = subprocess.run([sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d", "--out", str(out),
                        "--set", "faults.nan_wrench_at_step=1500"], capture_output=True, text=True, timeout=600,
                       cwd=str(ROOT), stdin=subprocess.DEVNULL)
    assert p.returncode != 0
    assert "run aborted: ft_sensor: non-finite wrench[0] = nan at step 1500" in p.stderr, p.stderr
    rec, s, _ = record_from_bag(out / "bag")              # the bag is closed and readable
    assert rec["aborted"] and "non-finite wrench" in rec["abort_reason"]
    assert rec["k"][-1] == 1499                             # everything up to the fault is kept
    # SAFE after the ABORT, the ramp within its bound, the last recorded leg lengths on the safe pose
    _assert_safe(s, out, 1500)
    m = json.loads((out / "metrics.json").read_text())      # and analysed
    assert m["aborted"] is True and m["stable"] is False
    v = run_virtual(s)
    assert v["aborted"] and v["abort_reason"] == "ft_sensor: non-finite wrench[0] = nan at step 1500"
    assert v["k"].size == rec["k"].size
    np.testing.assert_array_equal(v["z_cmd"], rec["z_cmd"])


def test_fault_parameter_is_validated():
    try:
        scn.load("contact_1d", ["faults.nan_wrench_at_step=-7"])
    except scn.ParameterError as exc:
        assert "faults.nan_wrench_at_step" in str(exc)
    else:
        raise AssertionError("accepted -7")
