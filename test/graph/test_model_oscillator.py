"""The fourth numerical model (docs/architecture.md, "Adding a numerical model"): the linear single-DoF oscillator
exists only as one module in rths_ros/core/models/ and one line of the model table, and runs through the node graph
(lockstep, the nodes composed in one process) exactly like the in-process virtual run."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_equivalence import assert_graph_matches_virtual
from scipy import signal

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.core.models.base import NumericalModel
from rths_ros.core.models.oscillator import Oscillator, OscillatorParams
from rths_ros.families.registry import models
from rths_ros.params import ParameterError

SETS = ["numerical.model=oscillator_1d"]


def test_exact_zero_order_hold_step_matches_scipy():
    """The model's step is the ZOH discretisation: the same trajectory as scipy's cont2discrete under a random
    held force, and the static deflection -F/k under a constant one."""
    p = OscillatorParams(mass_kg=3.0, stiffness_n_per_m=2500.0, damping_kg_per_s=7.0, drive_amplitude_n=0.0)
    dt = 1e-3
    a = np.array([[0.0, 1.0], [-p.stiffness_n_per_m / p.mass_kg, -p.damping_kg_per_s / p.mass_kg]])
    b = np.array([[0.0], [1.0 / p.mass_kg]])
    ad, bd, *_ = signal.cont2discrete((a, b, np.eye(2), np.zeros((2, 1))), dt, method="zoh")
    rng = np.random.default_rng(3)
    f = rng.normal(0.0, 5.0, 500)
    osc = Oscillator(p, dt)
    x = np.zeros(2)
    for fk in f:
        x = ad @ x + bd[:, 0] * (-fk)
        z, zd = osc.step(fk)
        assert z == pytest.approx(x[0], rel=1e-9, abs=1e-15) and zd == pytest.approx(x[1], rel=1e-9, abs=1e-15)
    osc.reset()
    for _ in range(20000):
        z, _ = osc.step(10.0)
    assert z == pytest.approx(-10.0 / p.stiffness_n_per_m, rel=1e-6)


def test_the_table_line_is_all_the_scenario_needs():
    assert models()["oscillator_1d"].family == "interface_1d"
    s = scn.load("contact_1d", SETS + ["numerical.oscillator_1d.mass_kg=5"])
    assert s.numerical.oscillator_1d.mass_kg == 5.0
    model = factory.build_numerical(s)
    assert isinstance(model, NumericalModel) and model.force_width == 1
    with pytest.raises(ParameterError, match="numerical.oscillator_1d.mass_kg"):
        scn.load("contact_1d", SETS + ["numerical.oscillator_1d.mass_kg=-1"])


@pytest.fixture(scope="module")
def graph_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("oscillator") / "run"
    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-m", "rths_ros.cli", "run", "--no-plots", "contact_1d", "--composed", "--out", str(out)]
    for s in SETS:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=str(root), stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def test_graph_reproduces_the_virtual_run(graph_run):
    rec, s, v = assert_graph_matches_virtual(graph_run / "bag", "contact_1d", overrides=SETS)
    assert s.numerical.model == "oscillator_1d"
    # the drive swings the oscillator about 13 mm down, the specimen touches the ground and pushes back
    assert -0.02 < np.min(rec["z_cmd"]) < -0.01
    assert 0.1 < np.mean(rec["contact"]) < 0.5 and np.ptp(rec["f_int"]) > 5.0


def test_analysis_reports_no_reference_error_for_a_model_without_reference(graph_run):
    m = json.loads((graph_run / "metrics.json").read_text())
    assert m["e_ref_rel"] is None
    assert m["stable"] is True and m["e_track_rel"] < 0.1
