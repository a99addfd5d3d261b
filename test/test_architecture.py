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
    """Each registered family has its parts, a bag analyser that imports, a trial loop of the virtual run and an
    example scenario; each model's family is registered, and the virtual run builds each model: a new family
    cannot be half wired."""
    from rths_ros.app import scenario as scn
    from rths_ros.app.vrths import VirtualRun
    from rths_ros.families import registry
    from rths_ros.families.base import TRIAL_LOOPS, resolve
    fams = registry.families()
    assert registry.load_errors() == []
    for name, fam in fams.items():
        assert fam.trial in TRIAL_LOOPS or callable(resolve(fam.trial)), name
        assert callable(resolve(fam.analyzer)), name
        assert all(callable(getattr(fam.parts, k)) for k in ("platform", "force", "plant", "seed")), name
    for model, e in registry.models().items():
        assert e.family in fams
        example = scn.load(fams[e.family].example)
        s = example if example.numerical.model == model else scn.load(fams[e.family].example,
                                                                        [f"numerical.model={model}"])
        assert VirtualRun(s).family == e.family


def test_no_module_outside_a_family_names_a_family():
    """A family's name appears as a string only in its own folder (rths_ros/families/<name>/): no table, no test of
    the family outside it.  (Its scenarios and docs name it, and so do comments and docstrings, which this check
    leaves out by looking at string literals only.)"""
    import ast

    from rths_ros.families import registry
    names = set(registry.families())
    hits = []
    for p in sorted((ROOT / "rths_ros").rglob("*.py")):
        rel = p.relative_to(ROOT / "rths_ros")
        tree = ast.parse(p.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                      and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names \
                    and id(node) not in docstrings:
                if rel.parts[:2] != ("families", node.value):
                    hits.append(f"rths_ros/{rel}:{node.lineno}: {node.value!r}")
    assert hits == []


def test_the_node_lists_agree():
    """The nodes are listed in four places that cannot import each other (setup.py's console scripts, the CMake
    build's wrappers, the node table of rths_ros.nodes.registry and the scenario's start order): the same set
    everywhere, plus the composed process in the two executable lists, and a module with main() per node."""
    import ast

    from rths_ros.app.scenario import KNOWN_NODES
    from rths_ros.nodes.registry import NODES
    setup_tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    setup_nodes = next(ast.literal_eval(n.value) for n in ast.walk(setup_tree) if isinstance(n, ast.Assign)
                       and any(isinstance(t, ast.Name) and t.id == "NODES" for t in n.targets))
    cmake = re.search(r"set\(rths_nodes\s+([^)]*)\)", (ROOT / "CMakeLists.txt").read_text(encoding="utf-8"))
    cmake_nodes = cmake.group(1).split()
    assert set(NODES) == set(KNOWN_NODES)
    assert set(setup_nodes) == set(cmake_nodes) == set(NODES) | {"composed"}
    assert len(setup_nodes) == len(set(setup_nodes)) and len(cmake_nodes) == len(set(cmake_nodes))
    for node in set(NODES) | {"composed"}:
        text = (ROOT / "rths_ros" / "nodes" / f"{node}.py").read_text(encoding="utf-8")
        assert re.search(r"^def main\(", text, re.M), node
