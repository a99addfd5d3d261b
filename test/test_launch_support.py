"""The launch file's logic without the `launch` package (not installable here)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rths_ros.core.params import ParameterError
from rths_ros.launch_support import node_specs

ROOT = Path(__file__).resolve().parents[1]


def test_launch_file_is_valid_python_using_node_specs():
    src = (ROOT / "launch" / "rths.launch.py").read_text()
    tree = ast.parse(src)
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in names
    assert "node_specs" in src


def test_specs_follow_the_scenario_and_arguments():
    s, specs = node_specs("contact_1d", plant="sim", mode="realtime", out="/tmp/x")
    assert [n.name for n in specs] == list(s.nodes)
    assert all(n.executable == n.name for n in specs)
    assert s.loop.mode == "realtime"
    args = specs[0].arguments
    assert "--mode" in args and "realtime" in args and "/tmp/x" in args and "plant=sim" in args


def test_bad_launch_arguments_are_refused_clearly():
    with pytest.raises(ParameterError, match="plant"):
        node_specs("contact_1d", plant="robot")

def test_plant_hardware_starts_the_hardware_plant_node():
    s, specs = node_specs("contact_1d", plant="hardware")
    names = [n.name for n in specs]
    assert "hardware_plant" in names and "sim_plant" not in names
    assert "plant=hardware" in specs[0].arguments
