"""What the analyses of the single-actuator rigs share (the linear motor's, rths_ros.families.linear_motor.analysis, and
the damper rig's, rths_ros.families.damper_rig.analysis): the last trial of a record with its abort state, the head of
the report, and the files and lines every analysis writes (metrics.json, report.md, the summary lines)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rths_ros.analysis import figures
from rths_ros.analysis.status import apply_status, status_lines
from rths_ros.app import scenario as scn
from rths_ros.app.run_status import fault_text

__all__ = ["REALTIME_NOTE", "last_trial", "add_core_check", "core_check_lines", "report_head", "write_outputs"]

#: why a realtime run is not repeated in process: its nodes hold the newest sample where one came late
REALTIME_NOTE = ("not run: loop.mode is realtime, where a node holds the newest sample when one is late, so the "
                 "signals differ from the in-process loop by design; run in lockstep for the check")


def last_trial(rec: dict, s: scn.Scenario) -> tuple[dict, int, bool, str]:
    """(the last trial's rows, the number of trials, aborted, the reason): from the virtual run's ``aborted`` and
    ``abort_reason`` or a bag's run status (an interrupted run counts as aborted)."""
    from rths_ros.app.vrths import trial_slice
    trial_len = s.steps + 1
    n_trials = max(1, int(np.ceil(rec["k"].size / trial_len)))
    st = rec.get("run_status")
    aborted = bool(rec.get("aborted", False)) or (st is not None and st.status in ("aborted", "interrupted"))
    reason = rec.get("abort_reason", "") or ((fault_text(st.first_fault) if st.first_fault else st.status)
                                             if st is not None else "")
    return trial_slice(rec, n_trials - 1, trial_len), n_trials, aborted, reason or ""


def add_core_check(m: dict, s: scn.Scenario, n_trials: int, aborted: bool, check) -> None:
    """``n_trials`` and the in-process repeat into ``m``: ``core_check`` = ``check()`` (None: no repeat for this
    configuration) for a lockstep run of one trial that did not abort, ``core_check_skipped`` in realtime."""
    m["n_trials"] = n_trials
    if s.loop.mode != "lockstep":
        m["core_check_skipped"] = REALTIME_NOTE
    elif n_trials == 1 and not aborted:
        cc = check()
        if cc is not None:
            m["core_check"] = cc


def core_check_lines(m: dict, loop: str, deviations: str) -> list[str]:
    """The report's paragraph on the in-process repeat by the rig study's ``loop``; ``deviations`` names the
    largest differences (e.g. "y_VIR 0 m")."""
    if "core_check_skipped" in m:
        return [f"In-process repeat: {m['core_check_skipped']}.", ""]
    cc = m.get("core_check")
    if cc is None:
        return []
    return [f"The in-process rig study's loop ({loop}) with the same settings gives identical signals: "
            f"{cc['identical']} (max abs difference of {deviations}).", ""]


def report_head(title: str, s: scn.Scenario, m: dict, what: str) -> list[str]:
    """The report's title, the scenario's description, ``what`` ran, the run status, the abort and the verdict."""
    lines = [f"# {s.name}: {title}", "", s.description, "", what, ""]
    if m.get("run_status"):
        lines += [f"**Run: {m['run_status']}.**", ""]
    if m.get("aborted"):
        lines += [f"**ABORTED**: {m['abort_reason']}", ""]
    return lines + [f"**{'Stable' if m['stable'] else 'Not stable'}**: {m['stability_reason']}.", ""]


def write_outputs(rec: dict, m: dict, out: Path, report, plots: list[Path], summary: list[str], core: str) -> dict:
    """Apply the bag's run status to ``m``, write metrics.json and report.md (``report(m)``: its lines, then the
    plots) and return ``{"metrics", "lines"}``: the status, the files, ``summary``, the verdict and, when the run
    was repeated in process, whether ``core`` (the loop's name) gave identical signals."""
    st = rec.get("run_status")
    if st is not None:
        apply_status(m, st)
    (out / "metrics.json").write_text(json.dumps(m, indent=2, default=float))
    lines = list(report(m))
    for p_ in plots:
        lines += [f"![{p_.stem}]({p_.name})", ""]
    lines += figures.not_drawn_lines(plots)
    path = out / "report.md"
    path.write_text("\n".join(lines))
    said = (status_lines(st) if st is not None else []) + [
        f"metrics: {out / 'metrics.json'}", f"report : {path}", figures.plots_line(plots)]
    said += summary + [f"stable={m['stable']}: {m['stability_reason']}"]
    if "core_check" in m:
        said.append(f"in-process {core} with the same settings: identical signals = {m['core_check']['identical']}")
    elif "core_check_skipped" in m:
        said.append(f"in-process {core}: {m['core_check_skipped']}")
    return {"metrics": m, "lines": said}
