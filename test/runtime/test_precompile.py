"""The set-up's warm-up of numba's cache (rths_ros.runtime.precompile)."""
from __future__ import annotations

from rths_ros.runtime import precompile


def test_scenarios_are_grouped_by_family():
    groups = precompile.families(["contact_1d", "contact_1d_tdc", "gait_vpp", "benchmark_building"])
    assert groups["interface_1d"] == ["contact_1d", "contact_1d_tdc"]
    assert groups["gait"] == ["gait_vpp"] and groups["building"] == ["benchmark_building"]


def test_a_scenario_is_warmed_and_one_that_cannot_be_is_named_not_raised():
    (ok,) = precompile._warm(["smoke"])
    assert ok[0] == "smoke" and ok[2] == "" and ok[1] >= 0.0
    (bad,) = precompile._warm(["no_such_scenario"])
    assert bad[0] == "no_such_scenario" and "no_such_scenario" in bad[2]


def test_the_command_reports_every_scenario(capsys):
    assert precompile.main(["smoke", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "precompile: smoke (interface_1d):" in out and "1 of 1 scenarios warmed" in out
