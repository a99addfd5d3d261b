"""`rths benchmark`: nominal and perturbed runs of the building benchmark from the command line, the
stated convention, the JSON + Markdown outputs, and a user controller loaded by import path."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from rths_ros import cli
from rths_ros.core.models.building.benchmark import run_benchmark, run_perturbed
from rths_ros.core.models.building.tracking_controller import ReferenceController, TrackingController
from rths_ros.families.building import benchmark_report as br
from rths_ros.params import ParameterError

DURATION = 12.0      # s of El Centro: keeps the file quick; the whole record is exercised in test_core_building


class UserPI(TrackingController):
    """A user's controller written only against the interface: the benchmark's lead + PI with K_i = 60
    1/s, stepped sample by sample (no fast_coefficients, so run_benchmark calls step())."""

    def __init__(self):
        super().__init__()
        self.inner = ReferenceController(ki_per_s=60.0)

    def reset(self):
        self.inner.reset()

    def step(self, desired, measured):
        return self.inner.step(desired, measured)


class NotAController:
    pass


@pytest.fixture
def user_module(monkeypatch):
    """This test module, importable by name as a user's module would be."""
    monkeypatch.setitem(sys.modules, "user_controllers_for_test", sys.modules[__name__])
    return "user_controllers_for_test"


def test_nominal_run_prints_j1_to_j9_and_writes_files(tmp_path, capsys):
    out = tmp_path / "nom"
    assert cli.main(["building-benchmark", "--case", "1", "--duration", str(DURATION), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "paper convention" in text and "| nominal |" in text
    data = json.loads((out / "benchmark.json").read_text())
    ref = run_benchmark(1, "elcentro", duration_s=DURATION)["J"]
    for c in ("J1", "J2", "J3", "J4", "J5", "J6", "J7", "J8", "J9"):
        assert data["J"][c] == pytest.approx(ref[c], rel=1e-12)
        assert f"{ref[c]:.2f}" in text
    assert data["convention"] == "paper" and data["runs"] == 0
    md = (out / "benchmark.md").read_text()
    assert "Convention: paper convention" in md and "| nominal |" in md


def test_matlab_convention_changes_the_order(tmp_path, capsys):
    out = tmp_path / "m"
    assert cli.main(["building-benchmark", "--duration", str(DURATION), "--convention", "matlab", "--out", str(out)]) == 0
    assert "matlab convention" in capsys.readouterr().out
    data = json.loads((out / "benchmark.json").read_text())
    paper = run_benchmark(1, "elcentro", duration_s=DURATION)["J"]
    # matlab J5 = peak error floor 1 = paper J7 (same peak definition, no norm involved)
    assert data["J"]["J5"] == pytest.approx(paper["J7"], rel=1e-12)
    assert data["J"]["J1"] == pytest.approx(round(paper["J1"], 1), abs=0.1)


def test_perturbed_runs_with_a_user_controller(tmp_path, capsys, user_module):
    out = tmp_path / "pert"
    assert cli.main(["building-benchmark", "--case", "1", "--runs", "2", "--duration", str(DURATION),
                     "--controller", f"{user_module}:UserPI", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 perturbed plants" in text and "mean ± std" in text and "UserPI" in text
    data = json.loads((out / "benchmark.json").read_text())
    assert data["seeds"] == [1, 2] and len(data["table"]) == 2
    ref = run_perturbed(1, runs=2, controller=lambda: ReferenceController(ki_per_s=60.0), duration_s=DURATION)
    for c in ("J1", "J2", "J4", "J9"):
        assert data["mean"][c] == pytest.approx(ref["mean"][c], rel=1e-12)
        assert data["std"][c] == pytest.approx(ref["std"][c], rel=1e-12)
        assert data["std"][c] > 0.0           # two different plants
    assert np.mean([row[1] for row in data["table"]]) == pytest.approx(data["mean"]["J2"], rel=1e-12)
    # the smaller integral gain tracks worse than the reference controller (K_i = 95 1/s)
    nominal = run_perturbed(1, runs=2, duration_s=DURATION)
    assert data["mean"]["J2"] > nominal["mean"]["J2"]
    assert "± " in (out / "benchmark.md").read_text()


@pytest.mark.parametrize("spec, match", [
    ("nocolon", "expected MODULE:CLASS"),
    ("no_such_module_xyz:C", "cannot be imported"),
    ("{mod}:Missing", "has no attribute 'Missing'"),
    ("{mod}:NotAController", "not a subclass"),
])
def test_bad_controller_is_reported(spec, match, user_module, capsys):
    with pytest.raises(ParameterError, match=match):
        br.load_controller(spec.format(mod=user_module))
    assert cli.main(["building-benchmark", "--runs", "1", "--controller", spec.format(mod=user_module)]) == 2
    assert match.split("'")[0] in capsys.readouterr().err


def test_aborting_controller_exits_nonzero(tmp_path, user_module, capsys, monkeypatch):
    """The pass-through controller (the plant's own ~25 ms lag) drives the hybrid loop unstable; it
    aborts at t = 10.1 s when |F| reaches the actuator's 8900 N capacity (docs/benchmark_building.md)."""
    from rths_ros.core.models.building import tracking_controller as tc
    monkeypatch.setattr(sys.modules[__name__], "PassThrough", tc.PassThroughController, raising=False)
    out = tmp_path / "abort"
    code = cli.main(["building-benchmark", "--duration", "20", "--controller", f"{user_module}:PassThrough",
                     "--out", str(out)])
    assert code == 1
    assert "aborted" in capsys.readouterr().err
    data = json.loads((out / "benchmark.json").read_text())
    assert data["aborted"] is True and data["J"] == {}


def test_all_cases_in_one_command(tmp_path, capsys):
    """--case all runs the perturbed set of every partitioning case, one table each."""
    out = tmp_path / "all"
    assert cli.main(["building-benchmark", "--case", "all", "--runs", "2", "--duration", str(DURATION), "--out", str(out)]) == 0
    for case in (1, 2, 3, 4):
        res = json.loads((out / f"case{case}" / "benchmark.json").read_text())
        assert res["case"] == case and res["runs"] == 2
    text = capsys.readouterr().out
    assert all(f"case {c}," in text for c in (1, 2, 3, 4))
