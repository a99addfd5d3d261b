"""The example lab package (examples/rths_lab_example) runs through the node graph like a shipped family: its
2-DoF chain (a model added to interface_1d) and its voice-coil rig (a family of its own), as processes and
composed, equal the in-process virtual run; `rths analyze` of the bag gives the family's own metrics again."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from graph_equivalence import assert_graph_matches_virtual, run_scenario

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("composed", [False, True], ids=["processes", "composed"])
@pytest.mark.parametrize("name", ["lab_voice_coil", "lab_two_mass_contact"])
def test_the_lab_scenarios_through_the_graph_equal_the_virtual_run(tmp_path, name, composed):
    out = tmp_path / "run"
    p = run_scenario(name, out, composed=composed)
    rec, s, v = assert_graph_matches_virtual(out / "bag", name)
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "completed" and m["stable"] is True, p.stdout
    if name == "lab_voice_coil":
        assert s.numerical.family == "voice_coil"
        # the rig's own measures: the rod follows the command within 5 %, the coupled loop within 5 % of the
        # ideal coupled system
        assert m["e_track_rel"] < 0.05 and m["e_ref_rel"] < 0.05 and m["peak_force_n"] > 1.0
        assert (out / "voice_coil.png").stat().st_size > 10_000
    else:
        assert s.numerical.family == "interface_1d" and s.numerical.model == "two_mass_contact"
        assert rec["contact"].any() and not rec["contact"].all()       # the specimen touched down and lifted off
        assert m["e_track_rel"] < 0.1
    again = tmp_path / "again"
    q = subprocess.run([sys.executable, "-m", "rths_ros.cli", "analyze", str(out / "bag"), "--out", str(again)],
                       capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert q.returncode == 0, q.stdout + q.stderr
    m2 = json.loads((again / "metrics.json").read_text())
    assert {k: m2[k] for k in ("e_track_rel", "max_abs_tracking_error_m")} == \
        {k: m[k] for k in ("e_track_rel", "max_abs_tracking_error_m")}
