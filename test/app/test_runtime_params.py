"""Scenario validation: every kind of bad value is refused with a message naming the key."""
from __future__ import annotations

import pytest
import yaml

from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError


def _load(data, overrides=()):
    return scn.from_data(data, list(overrides))


BASE = {"name": "t", "nodes": ["supervisor", "smoke_listener", "smoke_talker"]}


@pytest.mark.parametrize("override, key, words", [
    ("loop.dt_s=fast", "loop.dt_s", "number"),                          # wrong type
    ("loop.dt_s=0.5", "loop.dt_s", "out of range"),                     # out of range
    ("loop.dt_s=-1", "loop.dt_s", "out of range"),
    ("loop.trials=2.5", "loop.trials", "integer"),                      # int expected
    ("loop.mode=fastest", "loop.mode", "'lockstep'"),                   # not a choice
    ("recording.enabled=3", "recording.enabled", "boolean"),
    ("loop.speed=3", "loop.speed", "unknown key"),                      # unknown key
    ("numerical.contact_1d.d_num_kg_per_s=[1,2]", "numerical.contact_1d.d_num_kg_per_s", "number"),
    ("numerical.contact_1d.m_num_kg=-9.62", "numerical.contact_1d.m_num_kg", "out of range"),
    ("numerical.contact_1d.m_num_kg=.nan", "numerical.contact_1d.m_num_kg", "finite"),
    ("numerical.contact_1d.m_num_kg=1.0e+400", "numerical.contact_1d.m_num_kg", "finite"),
    ("sim_plant.cascade.k_pp_per_s=abc", "sim_plant.cascade.k_pp_per_s", "number"),
    ("sim_plant.force_bias=[1,2]", "sim_plant.force_bias", "6 elements"),
    ("nodes=[supervisor, teleporter]", "nodes[1]", "one of"),
    ("nodes=[]", "nodes", "at least one"),
    ("platform.interface.mount=sideways", "platform.interface.mount", "upside_down"),
    ("loop=3", "loop", "mapping"),
])
def test_bad_values_name_key_value_and_allowed(override, key, words):
    with pytest.raises(ParameterError) as exc:
        _load(BASE, [override])
    msg = str(exc.value)
    assert msg.startswith(key), msg
    assert words in msg, msg


def test_unknown_top_level_section_lists_allowed_keys():
    with pytest.raises(ParameterError) as exc:
        _load({**BASE, "numerics": {}})
    assert "numerics: unknown key" in str(exc.value)
    assert "numerical" in str(exc.value)  # the allowed keys are listed


def test_defaults_fill_every_value_and_dump_round_trips():
    s = scn.load("contact_1d")
    text = scn.dump(s)
    again = scn.from_data(yaml.safe_load(text))
    assert again == s
    assert s.numerical.contact_1d.m_num_kg == 9.62
    assert s.steps == 4000


def test_overrides_and_mode():
    s = scn.load("contact_1d", ["numerical.contact_1d.d_num_kg_per_s=50"], mode="realtime")
    assert s.numerical.contact_1d.d_num_kg_per_s == 50.0
    assert s.loop.mode == "realtime"
    with pytest.raises(ParameterError, match="expected KEY=VALUE"):
        scn.load("contact_1d", ["d_num"])


def test_unknown_scenario_name_lists_the_known_ones():
    with pytest.raises(ParameterError) as exc:
        scn.load("no_such_scenario")
    assert "contact_1d" in str(exc.value) and "smoke" in str(exc.value)


def test_every_shipped_scenario_is_valid():
    names = scn.scenario_names()
    assert {"smoke", "contact_1d"} <= set(names)
    for name in names:
        scn.load(name)


def test_yaml_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("loop: [unclosed\n")
    with pytest.raises(ParameterError, match="not valid YAML"):
        scn.load(str(bad))
    top = tmp_path / "list.yaml"
    top.write_text("- a\n- b\n")
    with pytest.raises(ParameterError, match="top level must be a mapping"):
        scn.load(str(top))


def test_cli_refuses_bad_scenario_with_clear_message(rths_cli, tmp_path):
    f = tmp_path / "wrong.yaml"
    f.write_text(yaml.safe_dump({"name": "wrong", "loop": {"dt_s": "1ms"}}))
    p = rths_cli("run", str(f), "--out", str(tmp_path / "run"))
    assert p.returncode == 2
    assert "loop.dt_s: '1ms' is not allowed; expected number in [0.0001, 0.01] s" in p.stderr
    p = rths_cli("check", "contact_1d", "--set", "numerical.contact_1d.k_num_n_per_m=-1")
    assert p.returncode == 2 and "numerical.contact_1d.k_num_n_per_m" in p.stderr and "out of range" in p.stderr


def test_node_process_refuses_to_start_on_bad_value(tmp_path):
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "rths_ros.nodes.sim_plant", "--scenario", "contact_1d",
                        "--set", "sim_plant.substeps=3"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "sim_plant.substeps: 3 is out of range" in p.stderr


def test_exponent_floats_without_a_dot_are_numbers():
    """`--set aff.delta=1e-7` (YAML 1.2 float syntax) is a number, not the string YAML 1.1 would make."""
    s = scn.load("contact_1d", ["aff.delta=1e-7", "loop.dt_s=1E-3"])
    assert s.aff.delta == 1e-7 and s.loop.dt_s == 1e-3
    with pytest.raises(scn.ParameterError, match="aff.delta: inf is not finite"):
        scn.load("contact_1d", ["aff.delta=1e999"])
