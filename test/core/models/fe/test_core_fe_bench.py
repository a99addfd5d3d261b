"""`rths bench fe` (rths_ros/bench/fe.py) on a small plate: the table's structure and its accuracy column.
Nothing here asserts a timing (timings are measured by the command and reported in docs/performance.md)."""
from __future__ import annotations

import json

import pytest

from rths_ros import cli
from rths_ros.bench.fe import DEFAULTS, bench_fe, markdown_fe, parse_settings

SMALL = ["runs=3", "steps=40", "nx=8", "ny=8", "modal=20"]


def test_settings():
    s = parse_settings([])
    assert (s["taps"], s["n_slow"], s["dt"], s["nx"], s["ny"]) == (58, 11, 5e-4, 36, 36)   # Table 2.3, 8067 DoFs
    q = parse_settings(["steps=7"], quick=True)
    assert (q["runs"], q["steps"]) == (10, 7)
    for bad in (["taps"], ["colour=red"], ["window=kaiser"], ["runs=1"]):
        with pytest.raises(ValueError):
            parse_settings(bad)
    assert set(DEFAULTS) >= {"runs", "steps", "window", "method"}


def test_small_bench_rows_and_accuracy():
    d = bench_fe(parse_settings(SMALL), log=lambda m: None)
    names = [r["method"] for r in d["rows"]]
    assert names[:3] == ["FIR/IIR", "Newmark", "HHT-alpha"] and "corrector only" in names[3]
    assert "modal truncation (20 modes)" in names[4]
    for r in d["rows"]:
        assert r["ci95_lo_us"] <= r["mean_us"] <= r["ci95_hi_us"]
        assert 0.0 < r["median_us"] <= r["p99_us"] <= r["max_us"]
        assert 0.0 <= r["over_budget_pct"] <= 100.0
    rel = {r["method"]: r["rel_rms_vs_newmark"] for r in d["rows"]}
    assert rel["Newmark"] == 0.0
    assert rel["FIR/IIR"] < 0.05 and rel["HHT-alpha"] < 0.05
    assert rel["FIR/IIR, corrector only (output latency)"] == rel["FIR/IIR"]     # same outputs, less timed
    assert d["hht"] == pytest.approx({"alpha": 0.3, "beta": 0.4225, "gamma": 0.8})
    assert sum(f == 0.0 for f in d["slow_modes_hz"]) == 6 and len(d["slow_modes_hz"]) == 11
    md = markdown_fe(d)
    assert "| FIR/IIR |" in md and "95 % CI" in md


def test_cli_dispatch(tmp_path, capsys):
    args = ["bench", "fe", "--out", str(tmp_path)] + [x for s in SMALL for x in ("--set", s)]
    assert cli.main(args) == 0
    data = json.loads((tmp_path / "bench.json").read_text())
    assert data["fe"]["n_dof"] == 6 * 64 + 4 * 16 + 3 and "loadavg" in data["machine"]
    assert "| HHT-alpha |" in (tmp_path / "bench.md").read_text()
