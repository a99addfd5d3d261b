"""The 1-D interface's bag analysis: the record of the run, then tracking, energy and reference error
(rths_ros.analysis.run_analysis.analyze_record; docs/metrics.md)."""
from __future__ import annotations

from pathlib import Path

from rths_ros.analysis.run_analysis import analyze_record, record_from_bag


def analyze_bag(bag: Path, out: Path) -> dict:
    rec, scenario, loop = record_from_bag(Path(bag))
    return analyze_record(rec, scenario, loop, out)
