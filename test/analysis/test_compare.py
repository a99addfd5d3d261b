"""`rths compare`: the chapter-8 comparison of Insam 2022 (d = 50 kg/s, PPI2, NPC on in all variants)."""
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


def test_npc_paper_presets(rths_cli, tmp_path):
    """The source-002 presets: npc_kd runs K_d = 50, 100, 150 kg/s (unstable, stable, stable by the verdict;
    the growth ratio orders them), npc_gp has G_P = 0 ... 4000 kg/s in steps of 200 at K_d = 50 kg/s and
    every variant loads."""
    from rths_ros.analysis.compare import PRESETS
    from rths_ros.app import scenario as scn
    gp = PRESETS["npc_gp"]
    assert list(gp["variants"]) == [f"G_P={g}" for g in range(0, 4001, 200)]
    for ov in gp["variants"].values():
        s = scn.load("contact_1d", gp["base"] + ov)
        assert s.numerical.contact_1d.d_num_kg_per_s == 50 and s.platform.commander.vff
    out = tmp_path / "kd"
    p = rths_cli("compare", "contact_1d", "--preset", "npc_kd", "--out", str(out), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {r["variant"]: r for r in json.loads((out / "compare.json").read_text())["rows"]}
    assert [rows[f"K_d={d}"]["stable"] for d in (50, 100, 150)] == [False, True, True]
    g = [rows[f"K_d={d}"]["oscillation_growth_ratio"] for d in (50, 100, 150)]
    assert g[0] > g[1] > g[2], g
    assert "| growth |" in (out / "compare.md").read_text()
