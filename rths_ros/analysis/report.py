"""Markdown report and JSON file of the fidelity measures of one run."""
from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rths_ros.analysis.metrics import plain

__all__ = ["write_report", "write_metrics_json", "METRIC_INFO"]

# key -> (unit, meaning); _SECTIONS sets the order of the report tables
METRIC_INFO: dict[str, tuple[str, str]] = {
    # accuracy
    "e_track_rel": ("-", "relative RMS tracking error RMS(z - z')/MAX|z| (eq. 4.4)"),
    "e_ref_rel": ("-", "relative RMS reference error RMS(z^r - z')/MAX|z^r| (eq. 4.6), fidelity"),
    "edot_track_rel": ("-", "relative RMS velocity tracking error (eq. 6.22)"),
    "e_track_rel_abs_origin": ("-", "as e_track_rel, z measured from the ground (MAX|z + h0 + l0|)"),
    "e_ref_rel_abs_origin": ("-", "as e_ref_rel, z measured from the ground"),
    "max_abs_tracking_error_m": ("m", "max |z - z'|"),
    "max_abs_tracking_error_at_s": ("s", "time of max |z - z'|"),
    "rms_tracking_error_m": ("m", "RMS(z - z')"),
    "max_abs_reference_error_m": ("m", "max |z^r - z'|"),
    "rms_reference_error_m": ("m", "RMS(z^r - z')"),
    "max_abs_z_cmd_m": ("m", "MAX|z|, normalisation of e_track_rel"),
    # energy
    "E_error_J": ("J", "energy error, sum of P_error dT over the run (eq. 5.7); > 0: energy injected"),
    "Ec_error_J": ("J", "energy error over the contact phase TD..TO (eq. 5.6)"),
    "E_diss_J": ("J", "energy dissipated by NPC, sum of F_d z-dot dT (eq. 5.8)"),
    "E_num_ts_J": ("J", "energy handed from the numerical part to the transfer system, sum F_int z-dot dT"),
    "E_ts_exp_J": ("J", "energy handed from the transfer system to the experimental part, sum F'_m z'-dot dT"),
    "active_fraction": ("-", "fraction of steps with P_error > 0 (active phases)"),
    "peak_power_error_w": ("W", "max |P_error|"),
    "peak_damping_force_n": ("N", "max |F_d| (NPC)"),
    # contact
    "touchdown_s": ("s", "touch-down TD (first contact)"),
    "liftoff_s": ("s", "lift-off TO (end of the first contact phase)"),
    "n_contact_events": ("-", "number of contact phases"),
    "peak_contact_force_n": ("N", "peak ground reaction m_EXP g - F'_m"),
    # stability
    "stable": ("-", "stability verdict"),
    "oscillation_amplitude_m": ("m", "peak amplitude of the band-passed tracking error"),
    "oscillation_threshold_m": ("m", "amplitude above which the run counts as unstable"),
    "oscillation_growth_ratio": ("-", "late/early RMS of the band-passed tracking error in the contact phase"),
    "dominant_osc_freq_hz": ("Hz", "dominant frequency of the band-passed tracking error in the judged phase"),
    "dominant_error_freq_hz": ("Hz", "dominant frequency of the tracking error (Hann-windowed FFT, no DC)"),
    "aborted": ("-", "the run was aborted or interrupted"),
    "status": ("-", "completed, aborted, interrupted or incomplete (docs/reliability.md)"),
    "steps_expected": ("-", "rows a complete run records (all trials)"),
    "steps_recorded": ("-", "rows recorded: step 0 to the last step with loop data"),
    "missing_samples_total": ("-", "loop samples missing inside the record (held from the previous step)"),
    # run
    "n_steps": ("-", "synchronisation steps"),
    "dt_s": ("s", "synchronisation step dT"),
    "duration_s": ("s", "run length"),
    "origin_offset_m": ("m", "h0 + l0 used by the *_abs_origin measures"),
}

_SECTIONS = [
    ("Accuracy and fidelity", ["e_track_rel", "e_ref_rel", "edot_track_rel", "e_track_rel_abs_origin",
                               "e_ref_rel_abs_origin", "max_abs_tracking_error_m", "max_abs_tracking_error_at_s",
                               "rms_tracking_error_m", "max_abs_reference_error_m", "rms_reference_error_m",
                               "max_abs_z_cmd_m"]),
    ("Energy (power error P_error = F'_m z'-dot - F_int z-dot)",
     ["E_error_J", "Ec_error_J", "E_diss_J", "E_num_ts_J", "E_ts_exp_J", "active_fraction",
      "peak_power_error_w", "peak_damping_force_n"]),
    ("Contact", ["touchdown_s", "liftoff_s", "n_contact_events", "peak_contact_force_n"]),
    ("Stability", ["stable", "oscillation_amplitude_m", "oscillation_threshold_m", "oscillation_growth_ratio",
                   "dominant_osc_freq_hz", "dominant_error_freq_hz", "aborted"]),
    ("Run", ["status", "steps_expected", "steps_recorded", "missing_samples_total", "n_steps", "dt_s", "duration_s",
             "origin_offset_m"]),
]
_NOT_TABULATED = {"stability_reason", "normalisation", "normalisation_abs_origin", "loop", "stability_rule",
                  "contact_events_s", "trials", "tuning"}


def _plain(x: Any) -> Any:
    """JSON-ready copy: numpy -> Python, non-finite floats -> None, tuples -> lists, Paths -> str."""
    return plain(x, json_safe=True)


def write_metrics_json(metrics: Mapping[str, Any], path: str | Path) -> Path:
    """Write ``metrics`` as JSON: sorted keys, plain numbers, true/false, NaN/inf as null."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_plain(metrics), sort_keys=True, indent=2, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "–"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if not math.isfinite(v):
            return str(v)
        s = f"{v:.4g}"
        if unit == "m" and v != 0.0:
            s += f" ({v * 1e3:.4g} mm)"
        elif unit == "J" and v != 0.0 and abs(v) < 0.1:
            s += f" ({v * 1e3:.4g} mJ)"
        return s
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt(x) for x in v)
    return str(v).replace("|", "\\|")


def _esc(s: str) -> str:
    return str(s).replace("|", "\\|")


def _flatten(d: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    rows = []
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            rows.extend(_flatten(v, key))
        else:
            rows.append((key, v))
    return rows


def _table(rows: Sequence[tuple[str, str, str, str]]) -> list[str]:
    lines = ["| measure | value | unit | meaning |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {v} | {u} | {_esc(m)} |" for k, v, u, m in rows]
    return lines


def write_report(metrics: Mapping[str, Any], scenario: Mapping[str, Any] | None, plots: Sequence[str | Path],
                 out_dir: str | Path, filename: str = "report.md") -> Path:
    """Write ``report.md`` into ``out_dir``: verdict, tables of the measures, scenario parameters, figures.

    Figures are embedded with paths relative to ``out_dir``.  Returns the path of the report.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    scenario = dict(scenario or {})
    name = scenario.get("name") or scenario.get("scenario") or "RTHS run"
    stable = metrics.get("stable")
    verdict = "STABLE" if stable else ("UNSTABLE" if stable is not None else "not judged")
    lines = [f"# RTHS run report: {_esc(name)}", ""]
    if scenario.get("description"):
        lines += [str(scenario["description"]), ""]
    if metrics.get("status"):     # what happened to the run (completed, aborted, interrupted, incomplete)
        lines += [f"**Run: {_esc(metrics.get('run_status', metrics['status']))}.**", ""]
        if metrics["status"] != "completed":
            lines += ["The measures below cover the recorded steps only; the run did not complete.", ""]
    lines += [f"**Verdict: {verdict}.** {_esc(metrics.get('stability_reason', ''))}", ""]
    lines += [f"Relative errors normalised by {metrics.get('normalisation', 'MAX|z|')}; "
              f"the `*_abs_origin` variants use {metrics.get('normalisation_abs_origin', 'the absolute height')} "
              f"with h0 + l0 = {_fmt(metrics.get('origin_offset_m'), 'm')}.", ""]

    trials = metrics.get("trials")
    if trials:
        lines += [f"## Trials ({len(trials)}; the tables below are the last trial's)", "",
                  "| trial | e_track_rel | e_ref_rel | max \\|z - z'\\| [mm] | E_error [mJ] | E_diss [mJ] | "
                  "peak F_d [N] | stable |", "|---|---|---|---|---|---|---|---|"]
        for t in trials:
            lines.append(f"| {t['trial'] + 1} | {_fmt(t.get('e_track_rel'))} | {_fmt(t.get('e_ref_rel'))} | "
                         f"{_fmt(1e3 * (t.get('max_abs_tracking_error_m') or float('nan')))} | "
                         f"{_fmt(1e3 * (t.get('E_error_J') or 0.0))} | {_fmt(1e3 * (t.get('E_diss_J') or 0.0))} | "
                         f"{_fmt(t.get('peak_damping_force_n'))} | {t.get('stable')} |")
        lines.append("")

    tuning = metrics.get("tuning")
    if tuning:      # gains changed while the run went on (rths_ros.runtime.tuning): the measures span both values
        lines += ["## Live tuning", "", "Gains changed during the run; the measures below cover the run before and "
                  "after each change.", "", "| node | step | trial | change |", "|---|---|---|---|"]
        lines += [f"| {t['node']} | {t['step']} | {t['trial']} | {_esc(t['change'])} |" for t in tuning] + [""]

    shown = set()
    for title, keys in _SECTIONS:
        rows = []
        for k in keys:
            if k in metrics:
                unit, meaning = METRIC_INFO[k]
                rows.append((k, _fmt(metrics[k], unit), unit, meaning))
                shown.add(k)
        if rows:
            lines += [f"## {title}", ""] + _table(rows) + [""]
        if title == "Contact" and metrics.get("contact_events_s"):
            ev = "; ".join(f"{_fmt(a)} s .. {_fmt(b)} s" for a, b in metrics["contact_events_s"])
            lines += [f"Contact phases (TD .. TO): {ev}.", ""]
    rest = [k for k in sorted(metrics) if k not in shown and k not in _NOT_TABULATED]
    if rest:
        lines += ["## Further values", ""]
        lines += _table([(k, _fmt(metrics[k]), "", "") for k in rest]) + [""]

    loop = metrics.get("loop")
    if loop:
        lines += ["## Loop timing", "", "| key | value |", "|---|---|"]
        lines += [f"| `{k}` | {_fmt(v)} |" for k, v in _flatten(loop)] + [""]

    rule = metrics.get("stability_rule")
    if rule:
        lines += ["<details><summary>Stability rule parameters</summary>", "", "| key | value |", "|---|---|"]
        lines += [f"| `{k}` | {_fmt(v)} |" for k, v in sorted(rule.items())] + ["", "</details>", ""]

    if scenario:
        lines += ["## Scenario parameters", "", "| key | value |", "|---|---|"]
        lines += [f"| `{k}` | {_fmt(v)} |" for k, v in _flatten(scenario)] + [""]

    from rths_ros.analysis import figures
    if figures.not_drawn_lines(plots):
        lines += ["## Figures", "", *figures.not_drawn_lines(plots)]
    if plots:
        lines += ["## Figures", ""]
        for pth in plots:
            pth = Path(pth)
            try:
                rel = Path(os.path.relpath(pth.resolve(), out.resolve())).as_posix()
            except ValueError:  # different drive
                rel = pth.as_posix()
            caption = pth.stem.replace("_", " ")
            lines += [f"![{caption}]({rel})", ""]

    path = out / filename
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path
