"""du Bois et al.'s (2010) damper rig through the node graph (scenario dubois_damper, family damper_rig) in lockstep: a
servo-hydraulic actuator with a hydraulic damper instead of the Stewart platform, transfer-dynamics cancellation
on the platform path and force blending in the numerical node.  The bag's records equal the in-process virtual
run, and the analysis's repeat of the run by the rig study's loop (run_substructured) gives identical signals."""
from __future__ import annotations

import json

import pytest
from graph_equivalence import assert_graph_matches_virtual, run_scenario


def test_damper_rig_through_the_graph_reproduces_the_virtual_run(tmp_path):
    out = tmp_path / "run"
    run_scenario("dubois_damper", out)
    rec, s, v = assert_graph_matches_virtual(out / "bag", "dubois_damper")
    assert s.numerical.family == "damper_rig"
    assert (rec["b_cmd"][1:, 0] == v["b_cmd"][1:, 0]).all()    # the shaped demand, as the platform node sent it
    m = json.loads((out / "metrics.json").read_text())
    assert m["status"] == "completed" and m["stable"] is True and m["acceptable"] is True
    assert m["H_error"] == pytest.approx(0.113, abs=0.02)
    assert m["core_check"]["identical"] is True and m["core_check"]["trip_fired"] is False
    assert (out / "damper_rig.png").stat().st_size > 10_000 and (out / "report.md").exists()
