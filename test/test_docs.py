"""The documentation names every scenario parameter and every shipped scenario."""
from __future__ import annotations

from pathlib import Path

from rths_ros.app import scenario as scn

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_parameter_is_documented():
    text = (DOCS / "scenarios.md").read_text()
    missing = [r["key"] for r in scn.parameter_table(plugins=False) if f"`{r['key']}`" not in text]
    assert not missing, f"docs/scenarios.md lacks {missing[:10]} (regenerate with `rths params --markdown`)"


def test_every_scenario_is_documented():
    text = (DOCS / "scenarios.md").read_text()
    for name in scn.scenario_names(plugins=False):
        assert f"`{name}`" in text, name


def test_works_are_cited_by_author_and_year():
    """Code, help and docs cite the literature by author and year (docs/references.md), never by a folder
    number of the sources."""
    import re
    import subprocess
    root = DOCS.parent
    files = subprocess.run(["git", "ls-files", "rths_ros", "docs", "README.md", "config", "launch", "test", "bench"],
                           cwd=root, capture_output=True, text=True, check=True).stdout.split()
    pattern = re.compile(r"\bseeds? ?0\d\d|\bseed_?0\d\d|\bdigest\b", re.IGNORECASE)
    found = [f"{f}:{n}" for f in files if f.endswith((".py", ".md", ".yaml", ".txt")) and f != "test/test_docs.py"
             for n, line in enumerate((root / f).read_text().splitlines(), 1) if pattern.search(line)]
    assert not found, found[:10]
    refs = (DOCS / "references.md").read_text()
    for short in ("Insam 2022", "Bartl 2019", "Insam et al. 2021", "du Bois et al. 2010", "Silva et al. 2020"):
        assert f"| {short} |" in refs, short
