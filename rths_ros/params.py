"""Typed, unit- and range-checked parameters.

Every tunable value of the package is a field of a frozen dataclass declared with
:func:`param`.  The declaration carries the unit, the allowed range (or the allowed
choices) and a one-line description.  :func:`build` turns a plain mapping (a section of
a scenario YAML) into such a dataclass and refuses, with a message that names the key,
the value and what is allowed, anything that is

* of the wrong type,
* outside its range / not one of its choices,
* not a declared key (typos must not be silently ignored).

Example::

    @dataclass(frozen=True)
    class Spring:
        stiffness_n_per_m: float = param(8650.0, "N/m", 0.0, 1e9, "spring stiffness k")

    build(Spring, {"stiffness_n_per_m": 9000}, section="specimen")
"""
from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from typing import Any


class ParameterError(ValueError):
    """A parameter value that is missing, of the wrong type, out of range or unknown."""


_INF = math.inf


def param(default: Any, unit: str = "", lo: float | None = None, hi: float | None = None,
          doc: str = "", choices: tuple | None = None, length: int | None = None) -> Any:
    """Declare a dataclass field with unit, range and description.

    ``lo``/``hi`` bound numbers (inclusive) and each element of a numeric list.
    ``choices`` restricts strings (or numbers) to a fixed set.  ``length`` fixes the
    length of a list-valued parameter.  Pass ``default=REQUIRED`` for a value that
    has no sensible default.
    """
    meta = {"unit": unit, "lo": lo, "hi": hi, "doc": doc, "choices": choices, "length": length}
    if isinstance(default, (list, dict)):
        frozen = tuple(default) if isinstance(default, list) else default
        return dataclasses.field(default_factory=lambda: frozen, metadata=meta)
    if default is REQUIRED:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


class _Required:
    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return "REQUIRED"


REQUIRED = _Required()


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (tuple, list):
        args = typing.get_args(tp)
        inner = _type_name(args[0]) if args else "value"
        return f"list of {inner}"
    if origin is typing.Union:
        return " or ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None))
    return {float: "number", int: "integer", bool: "boolean", str: "string"}.get(tp, getattr(tp, "__name__", str(tp)))


def _allowed(meta: Mapping[str, Any], tp: Any) -> str:
    if meta.get("choices"):
        return "one of " + ", ".join(repr(c) for c in meta["choices"])
    lo, hi = meta.get("lo"), meta.get("hi")
    unit = meta.get("unit") or ""
    parts = [_type_name(tp)]
    if lo is not None or hi is not None:
        lo_s = "-inf" if lo is None else f"{lo:g}"
        hi_s = "inf" if hi is None else f"{hi:g}"
        parts.append(f"in [{lo_s}, {hi_s}]")
    if unit:
        parts.append(unit)
    if meta.get("length"):
        parts.append(f"with {meta['length']} elements")
    return " ".join(parts)


def _coerce_scalar(key: str, value: Any, tp: Any, meta: Mapping[str, Any]) -> Any:
    allowed = _allowed(meta, tp)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ParameterError(f"{key}: {value!r} is not allowed; expected {allowed}")
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"{key}: {value!r} is not allowed; expected {allowed}")
        value = float(value)
        if not math.isfinite(value):
            raise ParameterError(f"{key}: {value!r} is not finite; expected {allowed}")
    elif tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise ParameterError(f"{key}: {value!r} is not allowed; expected {allowed}")
    elif tp is str:
        if not isinstance(value, str):
            raise ParameterError(f"{key}: {value!r} is not allowed; expected {allowed}")
    choices = meta.get("choices")
    if choices and value not in choices:
        raise ParameterError(f"{key}: {value!r} is not allowed; expected {allowed}")
    lo, hi = meta.get("lo"), meta.get("hi")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ParameterError(f"{key}: {value!r} is out of range; expected {allowed}")
    return value


def _coerce(key: str, value: Any, tp: Any, meta: Mapping[str, Any]) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None and len(args) < len(typing.get_args(tp)):
            return None
        return _coerce(key, value, args[0], meta)
    if origin in (tuple, list):
        (inner,) = typing.get_args(tp)[:1] or (float,)
        if not isinstance(value, (list, tuple)):
            raise ParameterError(f"{key}: {value!r} is not allowed; expected {_allowed(meta, tp)}")
        n = meta.get("length")
        if n is not None and len(value) != n:
            raise ParameterError(f"{key}: {len(value)} elements given; expected {_allowed(meta, tp)}")
        if typing.get_origin(inner) in (tuple, list):   # a list of lists (points): lo/hi bound every number
            inner_meta = {**meta, "length": None}
            return tuple(_coerce(f"{key}[{i}]", v, inner, inner_meta) for i, v in enumerate(value))
        return tuple(_coerce_scalar(f"{key}[{i}]", v, inner, meta) for i, v in enumerate(value))
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise ParameterError(f"{key}: {value!r} is not allowed; expected a mapping of {tp.__name__} keys")
        return build(tp, value, section=key)
    return _coerce_scalar(key, value, tp, meta)


def build(cls: type, values: Mapping[str, Any] | None, section: str = "") -> Any:
    """Construct ``cls`` from ``values``, validating every key (see module doc)."""
    if values is not None and not isinstance(values, Mapping):
        raise ParameterError(f"{section or cls.__name__}: {values!r} is not allowed; expected a mapping of "
                             f"{cls.__name__} keys")
    values = dict(values or {})
    bad = [k for k in values if not isinstance(k, str)]
    if bad:
        raise ParameterError(f"{section + '.' if section else ''}{bad[0]!r}: keys must be strings")
    hints = typing.get_type_hints(cls)
    prefix = f"{section}." if section else ""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ParameterError(
            f"{prefix}{unknown[0]}: unknown key; allowed keys of '{section or cls.__name__}' are "
            + ", ".join(sorted(known)))
    kwargs = {}
    for name, f in known.items():
        key = prefix + name
        if name in values:
            kwargs[name] = _coerce(key, values[name], hints[name], f.metadata)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ParameterError(f"{key}: missing; expected {_allowed(f.metadata, hints[name])}")
    obj = cls(**kwargs)
    check = getattr(obj, "validate", None)
    if callable(check):
        try:
            check()
        except ParameterError as exc:
            raise ParameterError(f"{prefix}{exc}") from None
    return obj


def describe(cls: type, section: str = "") -> list[dict]:
    """Rows (key, type, default, unit, allowed, description) for documentation and ROS parameters."""
    rows = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        key = f"{section}.{f.name}" if section else f.name
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            rows.extend(describe(tp, key))
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = REQUIRED
        rows.append({"key": key, "type": _type_name(tp), "default": default,
                     "unit": f.metadata.get("unit", ""), "allowed": _allowed(f.metadata, tp),
                     "doc": f.metadata.get("doc", "")})
    return rows


def to_dict(obj: Any) -> dict:
    """Plain nested dict (lists for tuples) of a parameter dataclass, for YAML/JSON output."""
    out = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if dataclasses.is_dataclass(v):
            v = to_dict(v)
        elif isinstance(v, tuple):
            v = _plain_list(v)
        out[f.name] = v
    return out


def _plain_list(v: tuple) -> list:
    """Nested tuples (a list-of-lists parameter) as nested lists."""
    return [_plain_list(x) if isinstance(x, tuple) else x for x in v]
