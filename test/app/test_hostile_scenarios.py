"""More than 200 malformed or hostile scenario files, each refused with a clear message that names the
offending key (or, for a file that is no scenario at all, the file and what is wrong with it); never a crash.

Every generated case is invalid by the documented schema (``rths params``: type, range, choices, list length),
so a case the loader accepts fails the test: nothing is filtered out.
"""
from __future__ import annotations

import datetime
import random
import re

import pytest
import yaml

from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError

N_VALUE_CASES = 130


def _range(allowed: str) -> tuple[float, float] | None:
    m = re.search(r"in \[([^,\]]+), ([^\]]+)\]", allowed)
    return (float(m.group(1)), float(m.group(2))) if m else None


def _integer_range(allowed: str) -> tuple[int, int]:
    rg = _range(allowed)
    if rg is not None:
        return int(rg[0]), int(rg[1])
    values = [int(v) for v in re.findall(r"-?\d+", allowed)]       # "one of 1, 2, 3, 4"
    return min(values), max(values)


def _n_elements(allowed: str) -> int | None:
    m = re.search(r"with (\d+) elements", allowed)
    return int(m.group(1)) if m else None


def invalid_values(row: dict) -> list:
    """Values the schema row (``scn.parameter_table()``) does not allow: wrong types, non-finite numbers,
    values outside the range (the displayed bounds are rounded: a generous margin), unknown choices, lists of
    the wrong length or element type, mappings where a value belongs."""
    kind, allowed = row["type"], row["allowed"]
    out: list = [{"x": 1}, {}]
    if kind == "number":
        lo, hi = _range(allowed)
        out += ["abc", float("nan"), float("inf"), float("-inf"), True, None, [], [1, 2, 3], "", "0x10",
                datetime.date(2026, 1, 1), lo - max(1.0, abs(lo)), hi + 10.0 * max(1.0, abs(hi))]
    elif kind == "integer":
        lo, hi = _integer_range(allowed)
        out += ["abc", 2.5, True, None, [], "", lo - 1, 2 * hi + 1, 10**30 if hi < 10**30 else -10**30]
    elif kind == "boolean":
        out += ["abc", 2, 1.5, None, [], "", "maybe"]
    elif kind == "string":
        out += [42, 1.5, None, [], ["a"], True]
        if allowed.startswith("one of"):
            out += ["no_such_choice"] + ([] if "''" in allowed else [""])
    elif kind.startswith("list of"):
        out += ["abc", 7, None, [None], [{"x": 1}]]
        if kind == "list of number":
            n = _n_elements(allowed)
            lo, hi = _range(allowed)
            if n is None:            # a list of any length (at least one element)
                out += [[], ["a"], [float("nan")], [hi + max(1.0, abs(hi))], [1.0, lo - max(1.0, abs(lo))]]
            else:
                out += [[1.0] * (n - 1), [1.0] * (n + 1), ["a"] * n, [float("nan")] * n,
                        [hi + max(1.0, abs(hi))] * n]
        elif kind == "list of integer":
            lo, hi = _integer_range(allowed)
            out += [[2.5], [lo - 1], [2 * hi + 1], ["a"]]
        else:
            out += [[1], ["no_such_node"]]
    else:
        raise AssertionError(f"{row['key']}: no invalid values for type {kind!r}")
    return out


def _model_using(section: str) -> str | None:
    """A model whose scenarios carry ``numerical.<section>`` (a scenario carries its own family's and model's)."""
    return next((m for m in scn.MODELS if section in scn.numerical_sections(m)), None)


def _nested(key: str, value) -> dict:
    """``{a: {b: value}}`` for ``a.b``; a key of a numerical section comes with a model that uses the section."""
    data: dict = {}
    node = data
    parts = key.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    if parts[0] == "numerical" and len(parts) > 2 and (model := _model_using(parts[1])):
        data["numerical"].setdefault("model", model)
    return data


FILE = None     # the expected message names the file (it is no scenario at all)


def _cases() -> list[tuple[str, str, str | None]]:
    """(label, YAML text, the key the refusal must name or FILE)."""
    rng = random.Random(1234)
    rows = scn.parameter_table()
    cases = []
    # wrong types / out of range / non-finite values: a key of every type, then random keys
    kinds = sorted({r["type"] for r in rows})
    picks = [rng.choice([r for r in rows if r["type"] == k]) for k in kinds]
    picks += [rng.choice(rows) for _ in range(N_VALUE_CASES - len(picks))]
    for row in picks:
        val = rng.choice(invalid_values(row))
        cases.append((f"bad value {row['key']}={val!r}", yaml.safe_dump(_nested(row["key"], val)), row["key"]))
    # unknown keys at every level
    for i in range(40):
        key = rng.choice(rows)["key"].split(".")
        path = key[:rng.randrange(len(key))] + [f"typo_{i}"]
        cases.append((f"unknown key {'.'.join(path)}", yaml.safe_dump(_nested(".".join(path), 1)), ".".join(path)))
    for i in range(10):
        cases.append((f"unknown node {i}", yaml.safe_dump({"nodes": ["sim_plant", f"robot_{i}"]}), "nodes"))
    # structural garbage
    laughs = "".join(f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    cases += [
        ("top-level list", "- a\n- b\n", FILE), ("top-level scalar", "42\n", FILE),
        ("top-level string", "hello\n", FILE), ("broken YAML", "loop: [unclosed\n", FILE),
        ("tab indentation", "loop:\n\tdt_s: 0.001\n", FILE), ("section is a list", "loop: [1, 2]\n", "loop"),
        ("section is a number", "numerical: 3\n", "numerical"),
        ("nested garbage", "platform: {geometry: {base_radius_m: {x: 1}}}\n", "platform.geometry.base_radius_m"),
        ("non-string key", "loop: {1: 2}\n", "loop.1"), ("null node list", "nodes: null\n", "nodes"),
        ("billion laughs", "a: &a [x,x,x,x,x,x,x,x,x]\n" + laughs, "a"),
        ("deep nesting", "a: " + "[" * 50 + "]" * 50 + "\n", FILE),
        ("python object tag", "loop: !!python/object/apply:os.system ['true']\n", FILE),
        ("huge file", "description: '" + "x" * 1_100_000 + "'\n", FILE),
        ("dt mismatch", "passivity: {dt_s: 0.002}\n", "passivity.dt_s"),
        ("duplicate nodes", "nodes: [sim_plant, sim_plant]\n", "nodes"),
        ("empty node list", "nodes: []\n", "nodes"), ("negative trials", "loop: {trials: -3}\n", "loop.trials"),
        ("string trials", "loop: {trials: many}\n", "loop.trials"),
        ("float trials", "loop: {trials: 2.5}\n", "loop.trials"),
        ("bool as number", "loop: {duration_s: true}\n", "loop.duration_s"),
        ("list length", "sim_plant: {force_bias: [1, 2]}\n", "sim_plant.force_bias"),
        ("mode typo", "loop: {mode: real-time}\n", "loop.mode"), ("plant typo", "plant: simulated\n", "plant"),
        ("ilc injection typo", "ilc: {injection: current}\n", "ilc.injection"),
        ("aff taps huge", "aff: {n_taps: 1000000}\n", "aff.n_taps"),
        ("negative mass", "numerical: {contact_1d: {m_num_kg: -1}}\n", "numerical.contact_1d.m_num_kg"),
        ("inf stiffness", "numerical: {contact_1d: {k_num_n_per_m: .inf}}\n", "numerical.contact_1d.k_num_n_per_m"),
    ]
    return cases


CASES = _cases()

# what a file-level refusal says, by case
FILE_PROBLEM = {"top-level list": "top level must be a mapping", "top-level scalar": "top level must be a mapping",
                "top-level string": "top level must be a mapping", "broken YAML": "not valid YAML",
                "tab indentation": "not valid YAML", "deep nesting": "nested deeper than",
                "python object tag": "not valid YAML", "huge file": "too large"}


def test_there_are_at_least_200_cases_and_every_type_is_covered():
    assert len(CASES) >= 200
    kinds = {r["type"] for r in scn.parameter_table()}
    covered = {r["type"] for r in scn.parameter_table() for label, _, key in CASES if key == r["key"]}
    assert covered == kinds, kinds - covered


def test_every_generated_value_is_invalid_by_the_schema():
    """The generator's claim, for every key and every value it can produce (not only the sampled ones)."""
    for row in scn.parameter_table():
        for val in invalid_values(row):
            with pytest.raises(ParameterError) as exc:
                scn.from_data(yaml.safe_load(yaml.safe_dump(_nested(row["key"], val))))
            msg = str(exc.value)
            assert msg.startswith((row["key"] + ":", row["key"] + "[")), (row["key"], val, msg)


@pytest.mark.parametrize("label, text, key", CASES, ids=[c[0][:60] for c in CASES])
def test_hostile_scenario_is_refused_clearly(tmp_path, label, text, key):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    with pytest.raises(ParameterError) as exc:
        scn.load(str(f))
    msg = str(exc.value)
    assert msg and len(msg) < 2000, label        # a message, not a dump
    if key is FILE:                              # "scenario FILE: what is wrong"
        assert msg.startswith(f"scenario {f}: ") and FILE_PROBLEM[label] in msg, msg
    else:                                        # "key: what is wrong" (list elements: "key[i]: ...")
        assert msg.startswith((key + ":", key + "[")), (key, msg)
        assert len(msg) > len(key) + 10, msg     # and says what is wrong
