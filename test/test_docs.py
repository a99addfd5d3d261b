"""The documentation names every scenario parameter and every shipped scenario."""
from __future__ import annotations

from pathlib import Path

from rths_ros.app import scenario as scn

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_parameter_is_documented():
    text = (DOCS / "scenarios.md").read_text()
    missing = [r["key"] for r in scn.parameter_table() if f"`{r['key']}`" not in text]
    assert not missing, f"docs/scenarios.md lacks {missing[:10]} (regenerate with `rths params --markdown`)"


def test_every_scenario_is_documented():
    text = (DOCS / "scenarios.md").read_text()
    for name in scn.scenario_names():
        assert f"`{name}`" in text, name
