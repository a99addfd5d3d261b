"""The launch files' logic: node sets, arguments, run directories (most of it without the `launch` package)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rths_ros.launch_support import node_specs
from rths_ros.params import ParameterError

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["rths.launch.py", "plant.launch.py"])
def test_launch_files_are_thin_and_use_the_shared_code(name):
    src = (ROOT / "launch" / name).read_text()
    tree = ast.parse(src)
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert "generate_launch_description" in names
    assert "from rths_ros.launch_actions import" in src
    assert len(src.splitlines()) < 40


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


# ---------------------------------------------------------------------------------------------
# the pieces the launch files and `rths run` share
# ---------------------------------------------------------------------------------------------
import importlib.util
import subprocess
import sys

from rths_ros.app import scenario as scn
from rths_ros.launch_support import (
    LAUNCH_ARGUMENTS,
    PLANT_SIDE_NODES,
    default_out,
    load_for_launch,
    parse_bool,
    parse_overrides,
    prepare_run_dir,
    process_specs,
)
from rths_ros.runtime.processes import _node_names


def test_overrides_argument_splits_like_a_shell_and_names_bad_items():
    assert parse_overrides("loop.duration_s=1.0  passivity.enabled=true") == ["loop.duration_s=1.0",
                                                                             "passivity.enabled=true"]
    assert parse_overrides("description='two words'") == ["description=two words"]
    assert parse_overrides("") == []
    with pytest.raises(ParameterError, match="overrides: 'loop.duration_s' is not KEY=VALUE"):
        parse_overrides("loop.duration_s")
    with pytest.raises(ParameterError, match="overrides"):
        parse_overrides("a='unclosed")


def test_boolean_arguments_name_the_key():
    assert parse_bool("composed", "True") is True and parse_bool("record", "false") is False
    with pytest.raises(ParameterError, match="composed: 'maybe' is not a boolean"):
        parse_bool("composed", "maybe")


def test_launch_arguments_reach_the_scenario():
    s = load_for_launch("contact_1d", plant="hardware", mode="realtime", overrides=["loop.duration_s=1.0"],
                        record=False)
    assert (s.plant, s.loop.mode, s.loop.duration_s) == ("hardware", "realtime", 1.0)
    assert "recorder" not in s.run_nodes and "hardware_plant" in s.run_nodes
    with pytest.raises(ParameterError, match="mode: 'fast'"):
        load_for_launch("contact_1d", mode="fast")


def test_process_specs_separate_and_composed(tmp_path):
    nodes = scn.load("contact_1d").run_nodes
    sep = process_specs(tmp_path / "scenario.yaml", nodes, tmp_path)
    assert [p.name for p in sep] == list(nodes) and all(p.nodes == (p.name,) for p in sep)
    assert sep[0].arguments == ("--scenario", str(tmp_path / "scenario.yaml"), "--out", str(tmp_path))
    comp = process_specs(tmp_path / "scenario.yaml", nodes, tmp_path, composed=True)
    assert [p.executable for p in comp] == ["composed", "recorder"]
    assert comp[0].arguments[:2] == ("--nodes", ",".join(n for n in nodes if n != "recorder"))
    assert set(PLANT_SIDE_NODES) & set(nodes) == {"ft_sensor", "sim_plant"}
    # the recorder in the composed process (recording.in_process): one process, every node in it
    inproc = process_specs(tmp_path / "scenario.yaml", nodes, tmp_path, composed=True, recorder_in_process=True)
    assert [p.executable for p in inproc] == ["composed"] and set(inproc[0].nodes) == set(nodes)
    # (a flag of composed runs only: separate processes stay one per node)
    assert process_specs(tmp_path / "scenario.yaml", nodes, tmp_path, recorder_in_process=True) == sep


@pytest.mark.parametrize("setting,lockstep,realtime", (("auto", True, False), ("always", True, True),
                                                       ("never", False, False)))
def test_recording_in_process_by_mode(setting, lockstep, realtime):
    r = scn.load("contact_1d", [f"recording.in_process={setting}"]).recording
    assert (r.composed_in_process("lockstep"), r.composed_in_process("realtime")) == (lockstep, realtime)


def test_recording_in_process_refuses_other_values():
    with pytest.raises(ParameterError, match="recording.in_process.*'sometimes'"):
        scn.load("contact_1d", ["recording.in_process=sometimes"])


def test_run_directory_prepared_and_a_recorded_run_refused(tmp_path):
    s = scn.load("contact_1d")
    out = tmp_path / "a" / "b"
    path = prepare_run_dir(s, out, refuse_existing_bag=True)
    assert path == out.resolve() / "scenario.yaml" and (out / "logs").is_dir()
    assert scn.load(str(path)) == s
    (out / "bag").mkdir()
    with pytest.raises(ParameterError, match="already holds a recorded run"):
        prepare_run_dir(s, out, refuse_existing_bag=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ParameterError, match="out: cannot use .*file/run as the run directory"):
        prepare_run_dir(s, tmp_path / "file" / "run")


def test_default_run_directories_never_collide(tmp_path):
    a = default_out("contact_1d", tmp_path)
    a.mkdir(parents=True)
    b = default_out("contact_1d", tmp_path)
    assert a != b and b.parent == tmp_path / "runs" and b.name.startswith("contact_1d-")


def test_process_watch_knows_the_installed_node_executables():
    """ros2 launch and ros2 run start lib/rths_ros/<node>, rths run starts python -m rths_ros.nodes.<node>."""
    assert _node_names(["/v/bin/python", "/v/lib/rths_ros/sim_plant", "--out", "x"]) == ("sim_plant",)
    assert _node_names(["/v/lib/rths_ros/recorder", "--out", "x"]) == ("recorder",)
    assert _node_names(["/v/bin/python", "/v/lib/rths_ros/composed", "--nodes", "a,b"]) == ("a", "b")
    assert _node_names(["/v/bin/python", "-m", "rths_ros.nodes.supervisor"]) == ("supervisor",)
    assert _node_names(["/v/bin/python", "/v/lib/other/sim_plant"]) == ()
    assert _node_names(["/v/bin/python", "/v/lib/rths_ros/not_a_node"]) == ()


def test_every_launch_argument_is_documented():
    doc = (ROOT / "docs" / "ros2.md").read_text()
    for key in LAUNCH_ARGUMENTS:
        assert f"| `{key}` |" in doc, key


@pytest.mark.skipif(importlib.util.find_spec("ros2launch") is None,
                    reason="no ros2 launch here: scripts/setup_env.sh installs it from ../shared/ros2-tooling")
def test_show_args_lists_every_argument_with_its_description():
    p = subprocess.run([str(Path(sys.prefix) / "bin" / "ros2"), "launch", "rths_ros", "rths.launch.py", "--show-args"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    for key, (_default, desc) in LAUNCH_ARGUMENTS.items():
        assert f"'{key}':" in p.stdout, key
        assert desc.split(":")[0][:40] in " ".join(p.stdout.split()), key
    q = subprocess.run([str(Path(sys.prefix) / "bin" / "ros2"), "launch", "rths_ros", "plant.launch.py",
                        "--show-args"], capture_output=True, text=True, timeout=120)
    assert q.returncode == 0 and "'plant':" in q.stdout and "'composed':" not in q.stdout, q.stdout + q.stderr


def test_one_run_policy_for_rths_run_and_the_launch():
    """rths run and ros2 launch take their time limits and the node a failure is named after from one place."""
    from rths_ros.app import scenario as scn
    from rths_ros.launch_support import RunPolicy, orderly_stop_s
    s = scn.load("contact_1d", ["safety.watchdog_s=0.5", "loop.timeout_s=100", "loop.start_timeout_s=20"])
    p = RunPolicy.of(s)
    assert p.drain_s == orderly_stop_s(s) and p.stuck_s == p.drain_s + 2.0 + 10.0 and p.limit_s == 150.0
    assert RunPolicy.first_failure({"a": 0, "b": 3, "c": -9, "d": None}) == "c"     # the crash, not the abort
    assert RunPolicy.first_failure({"a": 0, "b": 3, "c": 3}) == "b"
    assert RunPolicy.first_failure({"a": 0, "b": None}) is None
    for module in ("runner", "launch_actions"):
        text = (Path(__file__).resolve().parents[1] / "rths_ros" / f"{module}.py").read_text()
        assert "RunPolicy.of(" in text and "4.0 * " not in text and "+ 30.0" not in text, module


@pytest.mark.parametrize("mode", ["lockstep", "realtime"])
def test_the_wait_for_safe_after_an_abort_ends_within_the_runners_drain(mode):
    """The supervisor, the recorder and the live view wait for SAFE at most ``safe_wait_s`` after an abort (in
    lockstep 5 s longer: a lockstep ramp's wall time grows with the machine's load); the runner's and the
    launch's drain after a failed node (``orderly_stop_s``) must outlast it, or they would stop a node still
    waiting.  At the smallest watchdog_s allowed and at the default."""
    from rths_ros.core.platform.safety import LOCKSTEP_SAFE_EXTRA_S, safe_ramp_bound_s, safe_wait_s
    from rths_ros.launch_support import orderly_stop_s
    for sets in ([], ["safety.watchdog_s=0.05"]):
        s = scn.load("contact_1d", sets, mode)
        wait = safe_wait_s(s.safety, mode)
        assert wait == pytest.approx(safe_ramp_bound_s(s.safety) + 3.0
                                     + (LOCKSTEP_SAFE_EXTRA_S if mode == "lockstep" else 0.0))
        assert wait + 1.0 < orderly_stop_s(s), (mode, sets, wait, orderly_stop_s(s))
