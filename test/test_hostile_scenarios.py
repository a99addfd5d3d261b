"""200 malformed or hostile scenario files, each refused with a clear message (never a crash)."""
from __future__ import annotations

import random

import pytest
import yaml

from rths_ros.core import scenario as scn
from rths_ros.core.params import ParameterError

BAD_VALUES = ["abc", -1e300, 1e300, ".nan", ".inf", [], {}, [1, 2, 3], {"x": 1}, True, None, "", "0x10", -5,
              10**30, [None], "2026-01-01"]


def _leaf_keys() -> list[str]:
    return [r["key"] for r in scn.parameter_table()]


def _cases() -> list[tuple[str, str]]:
    rng = random.Random(1234)
    keys = _leaf_keys()
    cases = []
    # wrong types / huge / non-finite values at random keys
    while len(cases) < 130:
        key = rng.choice(keys)
        val = rng.choice(BAD_VALUES)
        data: dict = {}
        node = data
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = val
        text = yaml.safe_dump(data)
        try:                                   # keep only those the schema must refuse
            scn.from_data(yaml.safe_load(text))
        except ParameterError:
            cases.append((f"bad value {key}={val!r}", text))
    # unknown keys at every level, unknown nodes
    for i in range(40):
        key = rng.choice(keys).split(".")
        cut = rng.randrange(len(key))
        path = key[:cut] + [f"typo_{i}"]
        data: dict = {}
        node = data
        for p in path[:-1]:
            node = node.setdefault(p, {})
        node[path[-1]] = 1
        cases.append((f"unknown key {'.'.join(path)}", yaml.safe_dump(data)))
    for i in range(10):
        cases.append((f"unknown node {i}", yaml.safe_dump({"nodes": ["sim_plant", f"robot_{i}"]})))
    # structural garbage
    cases += [
        ("top-level list", "- a\n- b\n"), ("top-level scalar", "42\n"), ("top-level string", "hello\n"),
        ("broken YAML", "loop: [unclosed\n"), ("tab indentation", "loop:\n\tdt_s: 0.001\n"),
        ("section is a list", "loop: [1, 2]\n"), ("section is a number", "numerical: 3\n"),
        ("nested garbage", "platform: {geometry: {base_radius_m: {x: 1}}}\n"),
        ("non-string key", "loop: {1: 2}\n"), ("null node list", "nodes: null\n"),
        ("billion laughs", "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                           "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                           "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                           "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                           "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n"),
        ("deep nesting", "a: " + "[" * 50 + "]" * 50 + "\n"),
        ("python object tag", "loop: !!python/object/apply:os.system ['true']\n"),
        ("huge file", "description: '" + "x" * 1_100_000 + "'\n"),
        ("dt mismatch", "passivity: {dt_s: 0.002}\n"), ("duplicate nodes", "nodes: [sim_plant, sim_plant]\n"),
        ("empty node list", "nodes: []\n"), ("negative trials", "loop: {trials: -3}\n"),
        ("string trials", "loop: {trials: many}\n"), ("float trials", "loop: {trials: 2.5}\n"),
        ("bool as number", "loop: {duration_s: true}\n"), ("list length", "sim_plant: {force_bias: [1, 2]}\n"),
        ("mode typo", "loop: {mode: real-time}\n"), ("plant typo", "plant: simulated\n"),
        ("ilc injection typo", "ilc: {injection: current}\n"), ("aff taps huge", "aff: {n_taps: 1000000}\n"),
        ("negative mass", "numerical: {contact_1d: {m_num_kg: -1}}\n"),
        ("inf stiffness", "numerical: {contact_1d: {k_num_n_per_m: .inf}}\n"),
    ]
    return cases


CASES = _cases()


def test_there_are_at_least_200_cases():
    assert len(CASES) >= 200


@pytest.mark.parametrize("label, text", CASES, ids=[c[0][:60] for c in CASES])
def test_hostile_scenario_is_refused_clearly(tmp_path, label, text):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(ParameterError) as exc:
        scn.load(str(f))
    msg = str(exc.value)
    assert msg and len(msg) < 2000, label        # a message, not a dump
    assert ":" in msg, msg                       # "key: what is wrong"
