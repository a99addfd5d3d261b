"""The scenario as ROS parameters: every key with its description, unit and allowed range, so ``ros2 param list /
describe / get`` on any node shows the values the run uses.  They are read-only, except a node's live-tunable
ones (:mod:`rths_ros.runtime.tuning`), whose description says when a new value takes effect."""
from __future__ import annotations

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

from rths_ros.app import scenario as scn
from rths_ros.params import describe


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flatten(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def _range_of(allowed: str) -> tuple[float | None, float | None]:
    try:
        inner = allowed.split("in [", 1)[1].split("]", 1)[0]
        lo, hi = (float(x) for x in inner.split(","))
        if lo == float("-inf") or hi == float("inf"):
            return None, None
        return lo, hi
    except (IndexError, ValueError):
        return None, None


def scenario_values(scenario) -> dict:
    """{dotted key: value} of the scenario."""
    return _flatten(scn.to_dict(scenario))


def scenario_parameters(scenario, tunables: dict | None = None) -> list[tuple[str, object, ParameterDescriptor]]:
    """(key, value, descriptor) for every scenario value a ROS parameter can carry (no empty or mixed lists);
    ``tunables``: {key: Tunable} of the node, declared writable."""
    tunables = tunables or {}
    values = scenario_values(scenario)
    out = []
    for row in describe(scn.Scenario):
        key = row["key"]
        if key not in values:
            continue
        value = values[key]
        if isinstance(value, list):
            if not value:
                continue  # an empty list has no ROS parameter type
            if all(isinstance(v, bool) for v in value) or not all(isinstance(v, type(value[0])) for v in value):
                continue
        tune = tunables.get(key)
        live = (f"; TUNABLE during a realtime run: takes effect {tune.takes_effect} (docs/live.md)"
                if tune is not None else "")
        desc = ParameterDescriptor(description=f"{row['doc']} [{row['unit']}] allowed: {row['allowed']}{live}",
                                   read_only=tune is None)
        if isinstance(value, float) and "in [" in row["allowed"]:
            lo, hi = _range_of(row["allowed"])
            if lo is not None:
                desc.floating_point_range = [FloatingPointRange(from_value=lo, to_value=hi, step=0.0)]
        elif isinstance(value, int) and not isinstance(value, bool) and "in [" in row["allowed"]:
            lo, hi = _range_of(row["allowed"])
            if lo is not None and abs(lo) < 2**62 and abs(hi) < 2**62:
                desc.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=1)]
        out.append((key, value, desc))
    return out
