"""Shared fixtures: run the `rths` runner in-process against the installed messages."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the tests mirror the package tree (test/core/..., test/app, test/analysis, ...; node-graph runs in test/graph);
# their shared helpers (graph_equivalence.py) live here
sys.path.insert(0, str(Path(__file__).resolve().parent))


def rths(*args: str, timeout: float = 600, check: bool = False, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the `rths` command line (same interpreter) and capture its output."""
    e = dict(os.environ)
    e.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "rths_ros.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=e, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"rths {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def rths_cli():
    return rths
