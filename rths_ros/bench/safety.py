"""``rths bench safety``: reaction to faults (a killed node, a saturated sensor), measured on this machine."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from rths_ros.app import scenario as scn


def _safety_case(name: str, overrides: list[str], out: Path, kill: str | None) -> dict:
    """One faulted run; returns what the nodes recorded of the abort and the safe pose."""
    import signal
    import threading

    from rths_ros.runner import DomainLease, run_scenario
    s = scn.load(name, overrides)
    res: dict = {}
    lease = DomainLease()
    t = threading.Thread(target=lambda: res.update(r=run_scenario(s, out, progress=False, lease=lease)),
                         daemon=True)
    t.start()
    t_kill = None
    if kill:
        from rths_ros.runner import wait_until_running
        wait_until_running(out, 120.0)
        time.sleep(1.5)
        from rths_ros.runner import node_pids
        for pid in node_pids(str(out), kill)[:1]:
            os.kill(pid, signal.SIGKILL)
            t_kill = time.monotonic()
    t.join(600)
    r = res.get("r")
    row = {"dt_s": s.loop.dt_s, "case": " ".join(overrides) + (f"; SIGKILL {kill}" if kill else ""), "mode": s.loop.mode,
           "exit_code": None if r is None else r.code,
           "reason": "" if r is None else r.message.splitlines()[0][:160],
           "end_after_kill_s": None if t_kill is None else time.monotonic() - t_kill}
    for f in sorted((out / "timing").glob("*.json")):
        data = json.loads(f.read_text())
        if data.get("watchdog_trip") and "watchdog" not in row:
            row["watchdog"] = dict(data["watchdog_trip"], node=data["node"])
        if data.get("safe_pose"):
            row["safe_pose"] = data["safe_pose"]
    return row


def bench_safety(name: str, out_dir: Path) -> list[dict]:
    """Reaction to faults, measured on this machine: a killed numerical node (lockstep and realtime,
    the watchdogs) and a sensor saturation at a known step (the limit check)."""
    cases = [
        (["loop.duration_s=600"], "numerical_substructure"),
        (["loop.duration_s=600", "loop.mode=realtime"], "numerical_substructure"),
        (["faults.saturate_wrench_at_step=1500"], None),
        (["faults.saturate_wrench_at_step=1500", "loop.mode=realtime"], None),
    ]
    rows = []
    for i, (ov, kill) in enumerate(cases):
        print(f"  [{i + 1}/{len(cases)}] {' '.join(ov)}{'; kill ' + kill if kill else ''}", flush=True)
        rows.append(_safety_case(name, ov, out_dir / f"safety_{i}", kill))
    return rows


def markdown_safety(rows: list[dict]) -> str:
    lines = ["| case | mode | watchdog: topic, silent [ms] (steps) | abort step | ramp to safe pose: steps (ms) "
             "| hold steps | run ended after the kill [s] |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        w = r.get("watchdog")
        wd = (f"{w['topic']} at {w['node']}, {w['silent_s'] * 1e3:.0f} ({w['silent_s'] / r['dt_s']:.0f})"
              if w else "–")
        sp = r.get("safe_pose") or {}
        ramp = f"{sp['ramp_steps']} ({sp['ramp_s'] * 1e3:.0f})" if sp else "–"
        end = f"{r['end_after_kill_s']:.2f}" if r.get("end_after_kill_s") is not None else "–"
        lines.append(f"| {r['case']} | {r['mode']} | {wd} | {sp.get('abort_step', '–')} | {ramp} | "
                     f"{sp.get('hold_steps', '–')} | {end} |")
    return "\n".join(lines)
