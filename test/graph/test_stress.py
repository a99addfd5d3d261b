"""`rths stress`: repeated lockstep runs of the graph are identical, and the comparison catches a run that is not
(a run with another seed, and a change of one ulp in one recorded value)."""
from __future__ import annotations

import json

import numpy as np

from rths_ros import stress
from rths_ros.app import scenario as scn

SHORT = "loop.duration_s=0.5"


def test_two_runs_are_identical_and_counted(rths_cli, tmp_path):
    out = tmp_path / "stress"
    p = rths_cli("stress", "contact_1d", "--runs", "2", "--set", SHORT, "--out", str(out), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "run 1/2:" in p.stdout and "run 2/2:" in p.stdout
    report = json.loads((out / "stress.json").read_text())
    t = report["totals"]
    assert (t["runs"], t["hangs"], t["failures"], t["differences"]) == (2, 0, 0, 0), report["rows"]
    assert report["reference_run"] == "run-000"
    rows = report["rows"]
    assert rows[1]["arrays"] == rows[0]["arrays"] > 20          # every control topic field and the events
    assert all(r["code"] == 0 and r["wall_s"] > 0 for r in rows)
    assert rows[0]["bag_kept"] and not rows[1]["bag_kept"]      # the matching run's bag was deleted

    # exactness: a change of one ulp in one value of the reference record is a difference, and reported as such
    ref = stress.loop_arrays(out / "run-000" / "bag")
    assert stress.compare(ref, ref) == {}
    other = {k: v.copy() for k, v in ref.items()}
    key = "/rths/interface_command:position"
    k = other[key].shape[0] // 2
    other[key][k, 0] = np.nextafter(other[key][k, 0], np.inf)
    diff = stress.compare(ref, other)
    assert list(diff) == [key]
    assert 0 < diff[key]["max_abs_diff"] < 1e-15
    del other["/rths/leg_state:current"]                        # a missing array counts too
    assert "/rths/leg_state:current" in stress.compare(ref, other)


def test_a_perturbed_run_is_a_difference(tmp_path):
    """The second run's plant noise has another seed: the series must report it, with the arrays it changed."""
    s = scn.load("contact_1d", [SHORT])
    lines = []
    report = stress.run_stress(s, 2, tmp_path / "stress", log=lines.append, sets_for_run={1: ["loop.seed=2"]})
    t = report["totals"]
    assert (t["runs"], t["hangs"], t["failures"], t["differences"]) == (2, 0, 0, 1), report["rows"]
    diff = report["rows"][1]["differences"]
    assert "/rths/raw_wrench:wrench.force.z" in diff and diff["/rths/raw_wrench:wrench.force.z"]["max_abs_diff"] > 0
    assert "DIFFERS" in lines[1]
    assert report["rows"][1]["bag_kept"]                       # kept for a look at the difference
