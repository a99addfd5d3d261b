"""What happened to a run: completed, aborted, interrupted or incomplete, and its first fault.

The run's status is decided from its events (OUT/events.json, written by the supervisor and completed by the
runner, and the /rths/events messages in the bag) and from how many steps of loop data were recorded:

``completed``    the last trial reported DONE, nothing aborted, and every step of every trial is in the
                 record (in lockstep mode also without a missing sample);
``aborted``      a node aborted the run (a safety limit, a watchdog, a dead node, an emergency stop);
``interrupted``  the operator stopped it (SIGINT / SIGTERM to ``rths run``, shutdown of a launch): the nodes
                 send an ABORT whose reason starts with :data:`INTERRUPTED`, and the platform ramps to the
                 safe pose as after any abort;
``incomplete``   no abort, but the record does not hold every step: a loop topic misses steps at the start, in
                 the middle or at the end of a trial (:func:`step_gaps`), e.g. the recorder was killed and its bag
                 recovered from the complete chunks, or it joined late, or lost samples of a best-effort topic;
``failed``       a node process died (a crash, killed, a teardown that hung before its files were written)
                 without an abort of the run: whatever the record holds, the run is not one to report as
                 complete.

The first fault is the earliest ABORT (its node, step and reason); a node that died without sending one (a
crash seen only by its exit code) is named by the runner instead.  ROS-free: the runner, the analysis and the
nodes share it.
"""
from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: the reason of the ABORT a node sends when its process got SIGINT / SIGTERM ("interrupted by SIGINT")
INTERRUPTED = "interrupted by"
STATUSES = ("completed", "aborted", "interrupted", "incomplete", "failed")
EVENTS_FILE = "events.json"


def interrupt_reason(signame: str) -> str:
    return f"{INTERRUPTED} {signame} (operator stop): ramp to the safe pose, then stop"


def first_fault_of(events: list[dict]) -> dict | None:
    """The earliest ABORT as {node, step, reason} (the node is the event's source), or None."""
    for e in events:
        if e.get("type") == "ABORT":
            reason = str(e.get("reason", ""))
            node = str(e.get("source", ""))
            prefix = f"{node}: "
            if reason.startswith(prefix):
                reason = reason[len(prefix):]
            return {"node": node, "step": int(e.get("step", 0)), "reason": reason}
    return None


def fault_text(fault: dict | None) -> str:
    if not fault:
        return ""
    return f"{fault['node']} at step {fault['step']}: {fault['reason']}"


def fault_reason(fault: dict | None) -> str:
    """The fault as its node wrote it: "node: reason" (empty without a fault)."""
    return f"{fault['node']}: {fault['reason']}" if fault else ""


def read_events(out: Path) -> dict:
    """OUT/events.json as {"status", "first_fault", "events": [...]}; an empty record when there is none.
    (A list, the layout of older runs, is read as the events.)"""
    try:
        data = json.loads((Path(out) / EVENTS_FILE).read_text())
    except (OSError, ValueError):
        return {"status": None, "first_fault": None, "events": []}
    if isinstance(data, list):
        data = {"events": data}
    data.setdefault("status", None)
    data.setdefault("events", [])
    data.setdefault("first_fault", first_fault_of(data["events"]))
    return data


def write_events(out: Path, record: dict) -> None:
    path = Path(out) / EVENTS_FILE
    tmp = path.with_name(f".{EVENTS_FILE}.tmp")
    tmp.write_text(json.dumps(record, indent=2))
    tmp.replace(path)


def event_status(events: list[dict], trials: int) -> str:
    """The status the events alone tell: aborted / interrupted from the first ABORT, completed if the last
    trial reported DONE, else incomplete."""
    fault = first_fault_of(events)
    if fault is not None:
        return "interrupted" if fault["reason"].startswith(INTERRUPTED) else "aborted"
    if any(e.get("type") == "DONE" and int(e.get("trial", 0)) >= trials - 1 for e in events):
        return "completed"
    return "incomplete"


#: the loop topics a complete run records at every step of every trial, with the first step of a trial each one
#: carries: no leg command is sent for a trial's first step (the legs are at the start pose)
STEP_TOPICS = {"/rths/interface_command": 0, "/rths/interface_state": 0, "/rths/interface_force": 0,
               "/rths/leg_command": 1, "/rths/leg_state": 0, "/rths/raw_wrench": 0}
#: how many missing ranges a topic's gap record lists (the counts are always whole)
GAP_RANGES_SHOWN = 5


def step_gaps(steps, trials: int, trial_len: int, first: int = 0, record_end: int | None = None) -> dict:
    """The steps a topic misses of a run of ``trials`` trials of ``trial_len`` steps (step indices count on over
    the trials: trial j holds j*trial_len ... (j+1)*trial_len - 1; the topic carries steps ``first`` ... of each).

    Returns {"expected", "recorded", "missing", "start", "middle", "end", "after_record", "ranges"}: ``start``
    counts the missing steps before the first recorded one, ``end`` those after the last, ``middle`` the rest;
    ``after_record`` those at or after ``record_end`` (the steps the whole record lacks, e.g. after an abort: the
    status line says so once, not per topic); ``ranges`` lists the first GAP_RANGES_SHOWN runs of missing steps
    before ``record_end`` as [first, last] (inclusive).  A topic without any step recorded misses all of them
    (counted as ``start``)."""
    local = np.arange(first, trial_len)
    expected = (np.arange(trials)[:, None] * trial_len + local[None, :]).ravel()
    got = np.zeros(expected.size, dtype=bool)
    seen = np.asarray(sorted({int(k) for k in steps}), dtype=np.int64)
    if seen.size:
        pos = np.searchsorted(expected, seen)
        ok = (pos < expected.size) & (expected[np.minimum(pos, expected.size - 1)] == seen)
        got[pos[ok]] = True
    miss = ~got
    n_miss = int(miss.sum())
    if got.any():
        lo, hi = int(np.argmax(got)), int(got.size - 1 - np.argmax(got[::-1]))
        start, end = lo, int(got.size - 1 - hi)
    else:
        start, end = n_miss, 0
    after = int(miss[expected >= record_end].sum()) if record_end is not None else 0
    ranges: list[list[int]] = []
    if record_end is not None:
        miss = miss & (expected < record_end)
    if miss.any():
        idx = np.flatnonzero(miss)
        breaks = np.flatnonzero(np.diff(idx) > 1)
        for a, b in zip(np.r_[0, breaks + 1], np.r_[breaks, idx.size - 1]):
            lo_k, hi_k = int(expected[idx[a]]), int(expected[idx[b]])
            if ranges and lo_k == ranges[-1][1] + 1 + first:      # a trial's first step the topic does not carry
                ranges[-1][1] = hi_k
            else:
                ranges.append([lo_k, hi_k])
    return {"expected": int(expected.size), "recorded": int(got.sum()), "missing": n_miss, "start": start,
            "middle": n_miss - start - end, "end": end, "after_record": after, "ranges": ranges[:GAP_RANGES_SHOWN]}


def gaps_text(gaps: dict) -> str:
    """The gaps inside the record, topics with the same gaps together:
    ``/rths/interface_command, /rths/leg_state: 13 steps missing (start 13: steps 0-12)``; parts joined by "; "."""
    groups: dict[str, list[str]] = {}
    for topic, g in sorted(gaps.items()):
        inside = g["missing"] - g.get("after_record", 0)
        if inside <= 0:
            continue
        end = g["end"] - g.get("after_record", 0)
        where = ", ".join(f"{w} {n}" for w, n in (("start", g["start"]), ("middle", g["middle"]), ("end", end)) if n)
        steps = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in g["ranges"])
        more = ", ..." if inside > sum(b - a + 1 for a, b in g["ranges"]) else ""
        groups.setdefault(f"{inside} steps missing ({where}: steps {steps}{more})", []).append(topic)
    return "; ".join(f"{', '.join(topics)}: {text}" for text, topics in groups.items())


@dataclass
class RunStatus:
    """A run's status and what its record holds (see the module doc)."""

    status: str
    steps_expected: int                     # rows a complete run records (all trials)
    steps_recorded: int                     # rows recorded (step 0 .. the last step with loop data)
    missing_samples: dict = field(default_factory=dict)   # channel -> samples missing inside the record
    first_fault: dict | None = None
    gaps: dict = field(default_factory=dict)              # loop topic -> step_gaps() of the whole run
    recovered: str = ""                                   # what the recovery of a damaged bag kept ("" if none)
    tuning: list = field(default_factory=list)            # the TUNED events: live changes of a gain (node, step)

    @property
    def gap_total(self) -> int:
        return int(sum(g["missing"] for g in self.gaps.values()))

    @property
    def complete(self) -> bool:
        return self.status == "completed"

    @property
    def missing_total(self) -> int:
        return int(sum(self.missing_samples.values()))

    def summary(self) -> str:
        """One line for the report, the analysis output and the exit message."""
        steps = f"{self.steps_recorded} of {self.steps_expected} steps recorded"
        gaps = f", {self.missing_total} samples missing" if self.missing_total else ""
        inside = gaps_text(self.gaps)
        if inside:
            gaps += f"; gaps: {inside}"
        head = {"completed": "completed", "aborted": "ABORTED", "interrupted": "INTERRUPTED",
                "incomplete": "INCOMPLETE", "failed": "FAILED"}[self.status]
        fault = f"; first fault: {fault_text(self.first_fault)}" if self.first_fault else ""
        recovered = f"; bag recovered: {self.recovered}" if self.recovered else ""
        return f"{head} ({steps}{gaps}){fault}{recovered}"

    def as_metrics(self) -> dict:
        return {"status": self.status, "complete": self.complete, "steps_expected": int(self.steps_expected),
                "steps_recorded": int(self.steps_recorded),
                "missing_samples": {k: int(v) for k, v in self.missing_samples.items()},
                "missing_samples_total": self.missing_total, "first_fault": self.first_fault,
                "step_gaps": {t: dict(g) for t, g in sorted(self.gaps.items())}, "step_gaps_total": self.gap_total,
                "bag_recovered": self.recovered, "tuning": [dict(e) for e in self.tuning],
                "run_status": self.summary()}


def run_status(events: list[dict], trials: int, steps_expected: int, steps_recorded: int,
               missing_samples: dict | None = None, lockstep: bool = True, recorded_status: str | None = None,
               first_fault: dict | None = None, gaps: dict | None = None) -> RunStatus:
    """Combine the events (and the status the runner recorded, if any) with the record's extent.

    A run the events call completed is ``incomplete`` if fewer steps than expected were recorded, if a loop topic
    misses a step anywhere (``gaps``: {topic: step_gaps(...)}, in either mode), or (lockstep: every sample is
    acknowledged, none may be missing) if samples are missing inside the record."""
    missing = dict(missing_samples or {})
    status = event_status(events, trials)
    if recorded_status in ("aborted", "interrupted", "failed") and status in ("completed", "incomplete"):
        status = recorded_status      # the runner knew more (a node died without an ABORT, a signal)
    gaps = dict(gaps or {})
    if status == "completed" and (steps_recorded < steps_expected or any(g["missing"] for g in gaps.values())
                                  or (lockstep and sum(missing.values()) > 0)):
        status = "incomplete"
    fault = first_fault_of(events) or first_fault
    return RunStatus(status, int(steps_expected), int(steps_recorded), missing, fault, gaps)


def record_run_end(out: Path, exit_codes: dict, trials: int, interrupted_by: str | None = None,
                   failure: str | None = None, failed_node: str | None = None,
                   logs: dict | None = None, notes: dict | None = None,
                   warnings: dict | None = None, stopped: frozenset | set = frozenset()) -> tuple[str, dict | None, list]:
    """At the end of a run (``rths run`` or a launch): the status and the first fault, written into
    OUT/events.json with every node process's exit code.  Returns (status, first fault, events).

    The first fault is the earliest ABORT; a node process that died without sending one (killed, a crash: any
    exit code but 0, 3 = aborted, 130/143 = stopped by a signal) is the first fault instead, and the ABORT another
    node sent about it (the plant's process watch) is its consequence.  ``failure`` (the runner's own reason, e.g.
    the time limit) is the fault when nothing else is known.  ``interrupted_by``: the signal that stopped the run.
    ``notes``: what is known about a node's exit beyond its code (e.g. its teardown watchdog fired).
    ``warnings``: {node: text} of what went wrong without costing data (``teardown_warnings`` in events.json).
    ``stopped``: the nodes the runner stopped itself after another's failure (whatever their code: a signal that
    came before a node's handler ends it by the signal), never the fault.
    A node that died without an abort makes the run ``failed``, never ``completed``."""
    rec = read_events(out)
    events = rec["events"]
    fault = first_fault_of(events)
    died = [n for n, c in exit_codes.items() if c not in (None, 0, 3, 130, 143) and n not in stopped]
    if interrupted_by is None and died and (fault is None or not fault["reason"].startswith(INTERRUPTED)):
        node = died[0]
        code = exit_codes[node]
        how = f"exited with code {code}"
        if code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        # (a node of a composed process that died is that process's fault: its own ABORT explains the death)
        inside = fault is not None and fault["node"] not in exit_codes and "composed" in died
        if fault is None or (fault["node"] not in died and not inside):
            log = (logs or {}).get(node)
            note = (notes or {}).get(node)
            fault = {"node": node, "step": fault["step"] if fault else -1,
                     "reason": note or (f"process {how}" + (f" (log: {log})" if log else ""))}
    if interrupted_by is not None:
        status = "interrupted"
    elif failure is None:
        status = event_status(events, trials) if events else "incomplete"
    else:
        # a run whose last trial reported DONE without an abort stays completed (its data are whole) even if a
        # node failed afterwards (e.g. a teardown that hung): the failure is still the first fault and the exit code
        status = event_status(events, trials) if fault is not None else "aborted"
        status = status if status in ("aborted", "interrupted", "completed") else "aborted"
        if fault is None:       # the runner itself ended the run (time limit, a node stuck after the end)
            fault = {"node": failed_node or "runner", "step": -1, "reason": failure}
    if status in ("completed", "incomplete") and died:
        # a node process died (a crash, killed, a teardown hang before its files were written): never completed,
        # whatever the other nodes did afterwards (a teardown hang after the files were written exits with the
        # node's own result code and is a warning, not a death)
        status = "failed"
    rec.update({"status": status, "first_fault": fault, "exit_codes": dict(exit_codes)})
    if warnings:
        rec["teardown_warnings"] = dict(warnings)
    try:
        write_events(out, rec)
    except OSError:
        pass
    return status, fault, events


__all__ = ["STEP_TOPICS", "step_gaps", "gaps_text", "record_run_end", "fault_reason", "INTERRUPTED", "STATUSES", "RunStatus", "run_status", "event_status", "first_fault_of", "fault_text",
           "read_events", "write_events", "interrupt_reason"]
