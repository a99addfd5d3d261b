"""`rths compare`: the chapter-8 comparison of seed 000 (d = 50 kg/s, PPI2, NPC on in all variants)."""
from __future__ import annotations

import json


def test_chapter8_ranking_table_and_plots(rths_cli, tmp_path):
    out = tmp_path / "ch8"
    p = rths_cli("compare", "contact_1d", "--preset", "chapter8", "--trials", "10", "--out", str(out), timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {r["variant"]: r for r in json.loads((out / "compare.json").read_text())["rows"]}
    assert set(rows) == {"feedback", "VFF", "ILC", "AFF", "VFF+ILC"}
    e = {k: r["max_abs_tracking_error_m"] for k, r in rows.items()}
    assert all(r["stable"] for r in rows.values()), rows
    assert e["VFF+ILC"] <= e["VFF"] < e["ILC"], e          # the thesis's ranking of the feedforward schemes
    assert e["AFF"] < e["feedback"], e
    assert rows["ILC"]["trials"] == 10
    text = (out / "compare.md").read_text()
    for name in rows:
        assert f"| {name} |" in text
    for png in ("overlay_displacement.png", "overlay_tracking_error.png", "ILC/trials_errors.png",
                "ILC/trials_fft.png", "AFF/displacement.png"):
        assert (out / png).stat().st_size > 5000, png


def test_compare_refuses_bad_variant(rths_cli, tmp_path):
    p = rths_cli("compare", "contact_1d", "--variant", "x:platform.commander.vff=maybe", "--out", str(tmp_path))
    assert p.returncode == 2 and "platform.commander.vff" in p.stderr
    p = rths_cli("compare", "contact_1d", "--variant", "no-colon", "--out", str(tmp_path))
    assert p.returncode == 2 and "NAME:KEY=VALUE" in p.stderr
