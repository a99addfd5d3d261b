"""A finite-element virtual part (scenario contact_1d_fe_beam, numerical.model = fe_beam_1d: Craig-Bampton-reduced cantilever, Newmark) through
the node graph in lockstep (the nodes composed in one process; the separate processes are checked with contact_1d): the records equal the in-process virtual run, and the coupled test is stable with the
default damping."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from graph_equivalence import assert_graph_matches_virtual


def test_fe_beam_through_the_graph_reproduces_the_virtual_run(tmp_path):
    out = tmp_path / "run"
    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d_fe_beam", "--composed", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=str(root), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    rec, s, _ = assert_graph_matches_virtual(out / "bag", "contact_1d_fe_beam")
    assert s.numerical.model == "fe_beam_1d"
    assert -0.02 < np.min(rec["z_cmd"]) < -0.01 and 0.1 < np.mean(rec["contact"]) < 0.5
    m = json.loads((out / "metrics.json").read_text())
    assert m["stable"] is True and m["e_ref_rel"] is None
