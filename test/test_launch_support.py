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


GAIT_LOOP_NODES = ["recorder", "supervisor", "numerical_substructure", "stewart_platform", "ft_sensor"]


@pytest.mark.parametrize("plant, plant_node", [("sim", "sim_plant"), ("hardware", "hardware_plant")])
def test_gait_vpp_starts_the_gait_loop_with_the_chosen_plant(plant, plant_node):
    s, specs = node_specs("gait_vpp", plant=plant, out="/tmp/g")
    names = [n.name for n in specs]
    assert s.numerical.model == "vpp" and s.plant == plant
    assert names == GAIT_LOOP_NODES + [plant_node]         # the plant starts last (it sets the beat)
    other = {"sim_plant", "hardware_plant"} - {plant_node}
    assert not other & set(names)
    assert not {"passivity_controller", "ilc_learner", "aff_learner"} & set(names)   # refused with the vpp model
    for n in specs:
        assert n.executable == n.name
        assert f"plant={plant}" in n.arguments and "/tmp/g" in n.arguments
        assert n.arguments[n.arguments.index("--scenario") + 1].endswith("gait_vpp.yaml")


def test_gait_vpp_plant_default_is_the_simulated_foot():
    s, specs = node_specs("gait_vpp")
    assert s.plant == "sim" and s.sim_plant.specimen_kind == "prosthetic_foot"
    assert [n.name for n in specs][-1] == "sim_plant"
    assert not any(a.startswith("plant=") for a in specs[0].arguments)
