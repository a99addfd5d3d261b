"""The registered model families and numerical models, found through Python entry points.

Group ``rths_ros.scenarios``: a folder of scenario YAMLs (``rths list`` shows them, ``rths run NAME`` finds
them).  Group ``rths_ros.families``: one :class:`~rths_ros.families.base.Family` per entry.  Group ``rths_ros.models``: a
:class:`~rths_ros.core.models.entry.ModelEntry` per entry, a model added to an existing family (the entry's
name is the model's name, ``numerical.model``).  This package registers its own families in the same group
(setup.py, entry_points.txt), so a lab's package that registers its own is served exactly like them, in every
process of a run (the set comes from the installed distributions' metadata, not from a table patched at run
time).

A plugin that fails to load, or that registers a family or model whose name is taken, is left out and named with
its error (:func:`load_errors`, printed once per process on standard error); the others still work.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from rths_ros.families.base import Family, ModelEntry

__all__ = ["FAMILY_GROUP", "MODEL_GROUP", "SCENARIO_GROUP", "scenario_dirs", "families", "family", "family_of", "models", "model", "origin",
           "load_errors", "require_family"]

FAMILY_GROUP = "rths_ros.families"
MODEL_GROUP = "rths_ros.models"
#: a folder of scenario YAMLs a package adds (the entry names a pathlib.Path or str of the folder)
SCENARIO_GROUP = "rths_ros.scenarios"
#: the distribution of this package (its entries are the shipped families)
SHIPPED = "rths_ros"


@dataclass
class _Registry:
    families: dict[str, Family]
    models: dict[str, ModelEntry]
    origin: dict[str, str]          # family or model name -> the distribution that registered it
    errors: list[str]
    scenario_dirs: list[tuple[str, Path]] = field(default_factory=list)   # (distribution, folder)


_REGISTRY: _Registry | None = None


def _dist_name(ep) -> str:
    dist = getattr(ep, "dist", None)
    return dist.metadata["Name"] if dist is not None else "?"


def _unique(eps) -> list:
    """The entries, the shipped distribution's first; an entry seen twice with the same target (the same package on
    the path twice, e.g. a colcon install over an editable one) counts once."""
    seen, out = set(), []
    for ep in sorted(eps, key=lambda ep: _dist_name(ep) != SHIPPED):
        if (ep.name, ep.value) not in seen:
            seen.add((ep.name, ep.value))
            out.append(ep)
    return out


def _load() -> _Registry:
    reg = _Registry({}, {}, {}, [])
    for ep in _unique(entry_points(group=FAMILY_GROUP)):
        where = f"{ep.name} = {ep.value} (from {_dist_name(ep)})"
        try:
            fam = ep.load()
        except Exception as exc:    # a broken plugin is named, the others still work
            reg.errors.append(f"family plugin {where} failed to load: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(fam, Family):
            reg.errors.append(f"family plugin {where} is a {type(fam).__name__}, not a rths_ros.families.Family")
            continue
        if fam.name in reg.families:
            reg.errors.append(f"family plugin {where}: family {fam.name!r} is already registered by "
                              f"{reg.origin[fam.name]}")
            continue
        taken = [m for m in fam.models if m in reg.models]
        if taken:
            reg.errors.append(f"family plugin {where}: model(s) {', '.join(taken)} already registered")
            continue
        reg.families[fam.name] = fam
        reg.origin[fam.name] = _dist_name(ep)
        for name, entry in fam.models.items():
            reg.models[name] = entry
            reg.origin[name] = _dist_name(ep)
    for ep in _unique(entry_points(group=MODEL_GROUP)):
        where = f"{ep.name} = {ep.value} (from {_dist_name(ep)})"
        try:
            entry = ep.load()
        except Exception as exc:
            reg.errors.append(f"model plugin {where} failed to load: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(entry, ModelEntry):
            reg.errors.append(f"model plugin {where} is a {type(entry).__name__}, not a ModelEntry")
        elif ep.name in reg.models:
            reg.errors.append(f"model plugin {where}: model {ep.name!r} is already registered by "
                              f"{reg.origin[ep.name]}")
        elif entry.family not in reg.families:
            reg.errors.append(f"model plugin {where}: family {entry.family!r} is not registered; expected one of "
                              f"{', '.join(reg.families)}")
        else:
            reg.models[ep.name] = entry
            reg.origin[ep.name] = _dist_name(ep)
    for ep in _unique(entry_points(group=SCENARIO_GROUP)):
        where = f"{ep.name} = {ep.value} (from {_dist_name(ep)})"
        try:
            folder = Path(ep.load())
        except Exception as exc:
            reg.errors.append(f"scenario folder {where} failed to load: {type(exc).__name__}: {exc}")
            continue
        if not folder.is_dir():
            reg.errors.append(f"scenario folder {where}: {folder} is not a folder")
        else:
            reg.scenario_dirs.append((_dist_name(ep), folder))
    if not reg.families:
        raise RuntimeError(f"no model family is registered (entry-point group {FAMILY_GROUP!r} is empty): the "
                           "rths_ros distribution is not installed in this Python environment (scripts/setup_env.sh "
                           "installs it)" + ("; " + "; ".join(reg.errors) if reg.errors else ""))
    for err in reg.errors:
        print(f"rths_ros: {err}", file=sys.stderr)
    return reg


def _registry() -> _Registry:
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _load()
    return _REGISTRY


def families() -> dict[str, Family]:
    """Every registered family by name (the shipped ones first)."""
    return dict(_registry().families)


def models() -> dict[str, ModelEntry]:
    """Every registered numerical model by name (``numerical.model``)."""
    return dict(_registry().models)


def origin(name: str) -> str:
    """The distribution that registered family or model ``name`` ('rths_ros' for the shipped ones)."""
    return _registry().origin[name]


def scenario_dirs() -> list[tuple[str, Path]]:
    """The folders of scenario YAMLs that installed packages add, as (distribution, folder)."""
    return list(_registry().scenario_dirs)


def load_errors() -> list[str]:
    """The plugins that were left out, each named with its error."""
    return list(_registry().errors)


def model(name: str) -> ModelEntry:
    """The entry of model ``name`` (KeyError names the registered models)."""
    reg = _registry()
    try:
        return reg.models[name]
    except KeyError:
        raise KeyError(f"numerical.model: {name!r} is not a known model; expected one of "
                       f"{', '.join(reg.models)}") from None


def family_of(model_name: str) -> str:
    return model(model_name).family


def family(name_or_scenario) -> Family:
    """The family named ``name_or_scenario``, or the family of a scenario's ``numerical.model``."""
    name = name_or_scenario if isinstance(name_or_scenario, str) else family_of(name_or_scenario.numerical.model)
    reg = _registry()
    try:
        return reg.families[name]
    except KeyError:
        raise KeyError(f"model family {name!r} is not registered; expected one of {', '.join(reg.families)}") \
            from None


def require_family(model_name: str, family_name: str, what: str) -> None:
    """Raise ValueError naming ``what`` unless ``model_name`` belongs to ``family_name`` (readers of one family's
    records)."""
    if family_of(model_name) != family_name:
        raise ValueError(f"{what} is not a run of the {family_name} family (numerical.model = {model_name!r}, "
                         f"family {family_of(model_name)})")
