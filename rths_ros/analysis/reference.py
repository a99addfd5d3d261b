"""``rths reference SCENARIO``: the ideal-transfer-system reference solution of a scenario, printed and plotted.

The reference is the coupled system with a perfect transfer system (the interface follows the numerical part
exactly and without delay), computed by the model's own exact solver (the model table's ``reference_report``,
:mod:`rths_ros.core.models.entry`).  It is what the reference error ``e_ref`` of every run is measured against.

Outputs in ``--out``: ``reference.json`` (events and the resolved parameters), ``reference.csv`` (every signal per
sample), ``reference.png`` (the signals, contact phases shaded, events marked).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from rths_ros.app import scenario as scn
from rths_ros.families.registry import models as _registered_models
from rths_ros.params import ParameterError

__all__ = ["reference_report", "format_report", "write_reference"]


def reference_report(s: scn.Scenario, t_end_s: float | None = None) -> dict:
    """The model's reference report over ``0..t_end_s`` (default: the scenario's duration).  ParameterError when
    the scenario's model has no reference solution, naming the models that have one."""
    ent = _registered_models()[s.numerical.model]
    if ent.reference_report is None:
        have = ", ".join(k for k, e in _registered_models().items() if e.reference_report is not None)
        raise ParameterError(f"numerical.model: {s.numerical.model!r} has no ideal-transfer reference solution; "
                             f"models with one: {have}")
    t_end = s.loop.duration_s if t_end_s is None else float(t_end_s)
    if not (t_end > s.loop.dt_s):
        raise ParameterError(f"--duration: {t_end!r} s must be longer than one step loop.dt_s = {s.loop.dt_s!r} s")
    rep = ent.reference_report(s.numerical, s.loop.dt_s, t_end)
    rep["scenario"] = s.name
    rep["model"] = s.numerical.model
    rep["dt_s"] = s.loop.dt_s
    rep["t_end_s"] = t_end
    return rep


def _value(ev: dict) -> str:
    v, unit = ev["value"], ev["unit"]
    if isinstance(v, float) and not math.isfinite(v):
        return "none in the record"
    if unit == "m":
        return f"{v * 1e3:.3f} mm"
    if unit == "s":
        return f"{v:.4f} s"
    if unit == "N":
        return f"{v:.3f} N"
    return f"{v}{(' ' + unit) if unit else ''}"


def format_report(rep: dict) -> str:
    """The printed summary: title, method, one line per event."""
    lines = [rep["title"], f"  scenario {rep['scenario']}, model {rep['model']}, 0..{rep['t_end_s']:g} s every "
             f"{rep['dt_s']:g} s", f"  method: {rep['method']}"]
    width = max(len(ev["label"]) for ev in rep["events"])
    lines += [f"  {ev['label']:<{width}} : {_value(ev)}" for ev in rep["events"]]
    return "\n".join(lines)


def _json_value(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def write_reference(rep: dict, out: Path) -> dict[str, Path]:
    """reference.json, reference.csv and reference.png into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "reference.json", "csv": out / "reference.csv", "png": out / "reference.png"}
    doc = {"scenario": rep["scenario"], "model": rep["model"], "title": rep["title"], "method": rep["method"],
           "dt_s": rep["dt_s"], "t_end_s": rep["t_end_s"],
           "events": {ev["key"]: _json_value(ev["value"]) for ev in rep["events"]},
           "units": {ev["key"]: ev["unit"] for ev in rep["events"]},
           "signals": {s["key"]: s["label"] for s in rep["series"]}}
    paths["json"].write_text(json.dumps(doc, indent=2) + "\n")
    t = np.asarray(rep["t"], dtype=float)
    cols = [np.asarray(s["values"], dtype=float) for s in rep["series"]]
    contact = np.asarray(rep["contact"], dtype=int)
    with paths["csv"].open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_s", *(s["key"] for s in rep["series"]), "contact"])
        for i in range(t.size):
            w.writerow([f"{t[i]:.6f}", *(f"{c[i]:.9g}" for c in cols), int(contact[i])])
    _plot(rep, paths["png"])
    return paths


def _phases(t: np.ndarray, contact: np.ndarray) -> list[tuple[float, float]]:
    c = np.asarray(contact, dtype=bool)
    edges = np.flatnonzero(np.diff(c.astype(np.int8)))
    starts = ([0] if c[0] else []) + [int(i) + 1 for i in edges if not c[i]]
    ends = [int(i) + 1 for i in edges if c[i]] + ([t.size - 1] if c[-1] else [])
    return [(float(t[a]), float(t[b])) for a, b in zip(starts, ends)]


def _plot(rep: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = np.asarray(rep["t"], dtype=float)
    panels: dict[str, list[dict]] = {}
    for s in rep["series"]:
        panels.setdefault(s["panel"], []).append(s)
    fig, axes = plt.subplots(len(panels), 1, sharex=True, figsize=(8.0, 2.6 * len(panels) + 0.6), squeeze=False)
    phases = _phases(t, rep["contact"])
    for ax, (panel, series) in zip(axes[:, 0], panels.items()):
        unit = series[0]["unit"]
        scale, shown = (1e3, "mm") if unit == "m" else (1.0, unit)
        for s in series:
            ax.plot(t, np.asarray(s["values"], dtype=float) * scale, label=s["label"], lw=1.2)
        for a, b in phases:
            ax.axvspan(a, b, color="#ffbf00", alpha=0.15, lw=0)
        for _name, at in rep.get("marks", []):
            if math.isfinite(at):
                ax.axvline(at, color="k", lw=0.8, ls="--", alpha=0.6)
        ax.set_ylabel(f"{panel} [{shown}]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    top = axes[0, 0]
    for name, at in rep.get("marks", []):
        if math.isfinite(at):
            top.annotate(f"{name} {at:.3f} s", (at, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                         rotation=90, va="top", ha="right")
    axes[-1, 0].set_xlabel("t [s]")
    head, _, params = rep["title"].partition(" (")
    fig.suptitle(f"{head}\n({params}; shaded: contact phase)" if params else f"{head} (shaded: contact phase)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
