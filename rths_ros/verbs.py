"""The verbs of the ``rths`` command beyond its core (run, check, analyze, ...): registered through the entry-point
group ``rths_ros.verbs``, so a lab's package adds its own study verbs as this package adds its rig and study
verbs (entry_points.txt).  An entry names ``add_parsers(sub, scenario_args)``: it adds its subcommands to ``sub``
(``scenario_args(parser)`` adds the usual SCENARIO and ``--set``).  A verb plugin that fails is named on standard
error and the others still work.

Also here: the grouped top-level help (``rths --help``), and the old names of renamed verbs, which still work and
say the new name.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from importlib.metadata import entry_points

__all__ = ["VERB_GROUP", "HELP_GROUPS", "RENAMED", "add_plugin_verbs", "grouped_help", "rename"]

VERB_GROUP = "rths_ros.verbs"

#: the sections of ``rths --help`` and their verbs; verbs of other packages follow in their own section
HELP_GROUPS = {
    "run and inspect": ("run", "check", "list", "params", "analyze", "vrths", "reference", "compare"),
    "rig bring-up": ("identify", "qualify", "commission", "geometry", "compare-twin"),
    "analyses and studies": ("face", "margin", "ilc-convergence", "stability", "interface-estimation",
                             "aff-learning", "fxlms-transient", "aff-rigs", "damper-rig"),
    "benchmarks and reliability": ("bench", "building-benchmark", "stress"),
}

#: old verb -> its new name (named after the work's authors, or too close to another verb)
RENAMED = {"bartl": "aff-rigs", "dubois": "damper-rig", "benchmark": "building-benchmark",
           "check-ilc": "ilc-convergence"}


def add_plugin_verbs(sub, scenario_args) -> dict[str, str]:
    """Add the verbs of every ``rths_ros.verbs`` entry; returns {verb: distribution} of those added."""
    added: dict[str, str] = {}
    for ep in sorted(entry_points(group=VERB_GROUP), key=lambda e: (e.dist is None or
                                                                     e.dist.metadata["Name"] != "rths_ros", e.name)):
        if any(ep.value == seen for seen in added.values()):
            continue
        before = set(sub.choices)
        try:
            ep.load()(sub, scenario_args)
        except Exception as exc:       # a broken plugin is named, the others still work
            dist = ep.dist.metadata["Name"] if ep.dist is not None else "?"
            print(f"rths: verb plugin {ep.name} = {ep.value} (from {dist}) failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            continue
        for verb in set(sub.choices) - before:
            added[verb] = ep.dist.metadata["Name"] if ep.dist is not None else "?"
    return added


def rename(argv: list[str]) -> list[str]:
    """``argv`` with an old verb replaced by its new name (said on standard error)."""
    if argv and argv[0] in RENAMED:
        print(f"rths {argv[0]}: this command is now `rths {RENAMED[argv[0]]}` (the old name still works)",
              file=sys.stderr)
        return [RENAMED[argv[0]]] + argv[1:]
    return argv


def grouped_help(parser: argparse.ArgumentParser, sub, origin: dict[str, str]) -> str:
    """``rths --help``: the verbs in sections, one line each."""
    width = min(100, shutil.get_terminal_size((100, 24)).columns)
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    lines = [parser.format_usage().rstrip(), "", parser.description or "", ""]
    listed: set[str] = set()
    groups = dict(HELP_GROUPS)
    others = [v for v in sub.choices if v not in {x for g in groups.values() for x in g}]
    for dist in sorted({origin.get(v, "?") for v in others}):
        groups[f"from {dist}"] = tuple(v for v in others if origin.get(v, "?") == dist)
    for title, verbs in groups.items():
        present = [v for v in verbs if v in sub.choices]
        if not present:
            continue
        lines.append(f"{title}:")
        for v in present:
            listed.add(v)
            head = f"  {v:<21} "
            lines.append(head + textwrap.shorten(helps.get(v, ""), width=width - len(head), placeholder=" ..."))
    lines += ["", "`rths COMMAND --help` describes a command and its options; docs/ has a page per test, rig and "
              "method."]
    return "\n".join(lines) + "\n"
