"""The run status of a recorded run, for every analysis (1-D interface, gait, building).

A bag alone cannot tell a complete run from a cut-off one, so the analysis reads the run's events (OUT/events.json
next to the bag, else the /rths/events messages in the bag) and counts the steps actually recorded
(:mod:`rths_ros.app.run_status`).  Measures are computed over the recorded steps only; the verdict of a run that did
not complete says so, and ``rths analyze`` exits non-zero for it unless ``--partial`` is given.
"""
from __future__ import annotations

from pathlib import Path

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import STEP_TOPICS, RunStatus, read_events, run_status, step_gaps
from rths_ros.bag import recovery_note
from rths_ros.runtime.node import event_dict


class NoLoopData(ValueError):
    """The bag holds no loop data: nothing to analyse (the run ended before its first step)."""


def event_dicts(msgs) -> list[dict]:
    return [event_dict(m) for m in msgs]


def run_dir_of(bag: Path) -> Path:
    bag = Path(bag)
    return bag.parent if bag.name == "bag" else bag


def loop_topic_gaps(topics: dict, scenario: scn.Scenario, rows_per_trial: int | None = None,
                    record_end: int | None = None) -> dict:
    """{topic: step_gaps(...)} of every loop topic (run_status.STEP_TOPICS) the run should have recorded: those the
    bag holds a stepped message of, and those a node the scenario starts produces (runtime.topics), when the
    recorder ran.  The smoke listener answers step k with the force of step k + 1 (its force starts at step 1)."""
    from rths_ros.runtime.topics import BY_NAME
    trial_len = scenario.steps + 1 if rows_per_trial is None else rows_per_trial
    running = set(scenario.run_nodes)
    out = {}
    for topic, first in STEP_TOPICS.items():
        steps = [int(m.step) for _, m in topics.get(topic, []) if hasattr(m, "step")]
        produced = "recorder" in running and bool(running & set(BY_NAME[topic].producers))
        if not steps and not produced:
            continue
        if topic == "/rths/interface_force" and "smoke_listener" in running:
            first = 1
        out[topic] = step_gaps(steps, scenario.loop.trials, trial_len, first, record_end)
    return out


def status_of_bag(bag: Path, topics: dict, scenario: scn.Scenario, steps_recorded: int,
                  missing: dict | None = None, rows_per_trial: int | None = None) -> RunStatus:
    """The status of the run recorded in ``bag`` (``topics``: its messages by topic, as read_bag gives them): the
    events, the extent of the record, and the steps each loop topic misses (:func:`loop_topic_gaps`).

    ``rows_per_trial``: the rows a complete trial records (default: every step, ``scenario.steps + 1``)."""
    rec = read_events(run_dir_of(bag))
    events = rec["events"] or event_dicts([m for _, m in topics.get("/rths/events", [])])
    per_trial = scenario.steps + 1 if rows_per_trial is None else rows_per_trial
    st = run_status(events, scenario.loop.trials, per_trial * scenario.loop.trials, steps_recorded, missing,
                    scenario.loop.mode == "lockstep", rec.get("status"), rec.get("first_fault"),
                    loop_topic_gaps(topics, scenario, per_trial, steps_recorded))
    st.recovered = recovery_note(bag)
    st.tuning = [{"node": e["source"], "step": e["step"], "trial": e["trial"], "change": e["reason"]}
                 for e in events if e.get("type") == "TUNED"]
    return st


def no_loop_data(bag: Path, topics: dict, scenario: scn.Scenario, what: str) -> NoLoopData:
    """The error for a bag without loop data, naming what happened to the run."""
    st = status_of_bag(bag, topics, scenario, 0)
    if st.recovered:
        return NoLoopData(f"{bag}: no loop data ({what}) in what was recovered of the damaged bag; run status "
                          f"{st.summary()}; no metrics written")
    return NoLoopData(f"{bag}: no loop data ({what}): the run ended before its first step; run status "
                      f"{st.summary()}; no metrics written")


def apply_status(metrics: dict, st: RunStatus) -> dict:
    """Put the run status into ``metrics`` and qualify the stability verdict: a run that did not complete is
    never called stable (None: not judged); instability seen in the recorded steps is still reported."""
    metrics.update(st.as_metrics())
    metrics["aborted"] = st.status in ("aborted", "interrupted")
    if not st.complete and "stable" in metrics:
        reason = metrics.get("stability_reason", "")
        if metrics["stable"]:
            metrics["stable"] = None
            metrics["stability_reason"] = (f"not judged: the run is {st.status}; over the {st.steps_recorded} "
                                           f"recorded steps: {reason}")
        elif metrics["stable"] is False:
            metrics["stability_reason"] = f"the run is {st.status}; over the recorded steps: {reason}"
    return metrics


def status_lines(st: RunStatus) -> list[str]:
    """The line the analysis prints first."""
    return [f"run status: {st.summary()}"]


__all__ = ["NoLoopData", "status_of_bag", "loop_topic_gaps", "apply_status", "status_lines", "event_dicts", "no_loop_data",
           "run_dir_of"]
