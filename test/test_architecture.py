"""The architecture's rules, checked on the source tree (docs/architecture.md, "Layers"): the import-linter
contracts of .importlinter, ruff with ruff.toml, no import cycle, no package file over 600 lines, and no test of
the model's kind in the nodes or the analysis (they look the implementation up in tables)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MAX_LINES = 600
#: a test of which numerical model runs (the nodes and the analysis get their objects from tables instead)
MODEL_KIND_TEST = re.compile(r"is_gait|is_building|numerical\.model\s*(==|!=|in\s|not\s+in\s)|"
                             r"\bfamily\s*(==|!=)|specimen_kind\s*(==|!=)")


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_import_linter_contracts_are_kept():
    p = subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                       env=_env(), timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert "0 broken" in p.stdout


def test_ruff_finds_nothing():
    p = subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (each is an import cycle)."""
    mods = sorted(graph.modules)
    adj = {m: graph.find_modules_directly_imported_by(m) for m in mods}
    reach = {}
    for m in mods:
        seen, todo = set(), [m]
        while todo:
            for w in adj[todo.pop()]:
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        reach[m] = seen
    out, done = [], set()
    for m in mods:
        if m in done or m not in reach[m]:
            continue
        comp = sorted(x for x in mods if x in reach[m] and m in reach[x])
        done.update(comp)
        out.append(comp)
    return out


def test_no_import_cycle():
    sys.path.insert(0, str(ROOT))
    try:
        graph = grimp.build_graph("rths_ros", cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    assert len(graph.modules) > 50
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    """The check itself: a two-module cycle is found."""
    class G:
        modules = {"a", "b", "c"}

        @staticmethod
        def find_modules_directly_imported_by(m):
            return {"a": {"b"}, "b": {"a"}, "c": {"a"}}[m]
    assert _cycles(G) == [["a", "b"]]


def test_no_package_file_over_600_lines():
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "rths_ros").rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_nodes_and_analysis_never_test_the_model_kind():
    hits = []
    for folder in ("nodes", "analysis"):
        for p in sorted((ROOT / "rths_ros" / folder).rglob("*.py")):
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                if MODEL_KIND_TEST.search(line.split("#", 1)[0]):
                    hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == []
    assert MODEL_KIND_TEST.search('if s.numerical.model == "vpp":')       # the pattern finds such a test


def test_every_model_family_is_served_everywhere():
    """A model's family is one of FAMILIES, and each family has its parts (factory), its analysis and its trial
    loop in the virtual run: a new family cannot be half wired."""
    from rths_ros.analysis.run_analysis import BAG_ANALYZERS
    from rths_ros.app import scenario as scn
    from rths_ros.app.factory import FAMILY_PARTS
    from rths_ros.app.vrths import VirtualRun
    from rths_ros.core.models.registry import FAMILIES, MODELS
    assert {e.family for e in MODELS.values()} <= set(FAMILIES)
    assert set(FAMILY_PARTS) == set(FAMILIES) == set(BAG_ANALYZERS)
    # a scenario of each model: its family's shipped scenario, or contact_1d with numerical.model set
    shipped = {"building": "benchmark_building", "gait": "gait_vpp", "shaker_pair": "coupled_beams_aff"}
    for model, e in MODELS.items():
        s = scn.load(shipped[e.family]) if e.family in shipped else scn.load("contact_1d", [f"numerical.model={model}"])
        assert VirtualRun(s).family == e.family
