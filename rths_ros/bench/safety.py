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


def _flood_run(name: str, overrides: list[str], out: Path, composed: bool, flood_hz: float) -> dict:
    """One realtime run, with a foreign node flooding every loop topic at ``flood_hz`` (0: none) from its own
    process; returns the status and the loop statistics of its analysis."""
    import subprocess
    import sys

    from rths_ros.analysis.run_analysis import analyze_bag
    from rths_ros.runner import DomainLease, run_scenario
    s = scn.load(name, overrides, "realtime")
    lease = DomainLease()
    intruder = None
    if flood_hz > 0:
        intruder = subprocess.Popen([sys.executable, "-m", "rths_ros.bench.intruder", "--domain",
                                     str(lease.domain_id), "--rate", str(flood_hz), "--seconds", "600"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(2.0)         # it is on the domain (and discovered) before the run's nodes start
    try:
        r = run_scenario(s, out, composed=composed, progress=False, lease=lease)
    finally:
        sent = ""
        if intruder is not None:
            intruder.terminate()
            try:
                sent = (intruder.communicate(timeout=10)[0] or "").strip().splitlines()[-1:]
            except Exception:
                intruder.kill()
            sent = sent[0] if sent else ""
        lease.close()
    row = {"composed": composed, "flood_hz": flood_hz, "exit_code": r.code, "intruder": sent}
    try:
        m = analyze_bag(out / "bag", out)["metrics"]
        loop = m.get("loop", {})
        row.update(status=m.get("status"), deadline_miss_ratio=loop.get("deadline_miss_ratio"),
                   deadline_miss_node=loop.get("deadline_miss_node"), p99_s=loop.get("step_latency_p99_s"),
                   step_gaps=m.get("step_gaps_total"))
    except Exception as exc:
        row.update(status=f"no analysis: {exc}"[:120])
    foreign = 0
    for f in sorted((out / "timing").glob("*.json")):
        foreign += int(json.loads(f.read_text()).get("foreign_messages", 0))
    row["foreign_dropped"] = foreign
    return row


def bench_flood(name: str, out_dir: Path, runs: int = 3, duration_s: float = 4.0, flood_hz: float = 1000.0,
                overrides: list[str] | None = None, loop_hz: float | None = None) -> list[dict]:
    """Deadline misses of realtime runs with and without a foreign node flooding every loop topic at ``flood_hz``,
    separate processes and composed, ``runs`` runs each (alternating, so a slow minute of the machine hits both);
    ``loop_hz``: the loop's rate (default: the scenario's)."""
    from rths_ros.bench.measure import dt_overrides
    rows = []
    ov = [f"loop.duration_s={duration_s:g}", *(overrides or [])]
    if loop_hz:
        ov += dt_overrides(name, 1.0 / loop_hz, ov)
    cases = [(c, f) for c in (False, True) for f in (0.0, flood_hz)]
    total = runs * len(cases)
    i = 0
    for j in range(runs):
        for composed, hz in cases:
            i += 1
            print(f"  [{i}/{total}] {'composed' if composed else 'processes'}, "
                  f"{'flood ' + format(hz, 'g') + ' Hz' if hz else 'clean'}", flush=True)
            row = _flood_run(name, ov, out_dir / f"flood_{i}", composed, hz)
            row["run"] = j + 1
            row["loop_hz"] = 1.0 / scn.load(name, ov, "realtime").loop.dt_s
            print(f"      {row.get('status')}, deadline misses {row.get('deadline_miss_ratio')}, "
                  f"foreign dropped {row['foreign_dropped']}", flush=True)
            rows.append(row)
    return rows


def markdown_flood(rows: list[dict]) -> str:
    out = ["| layout | loop | foreign flood | run | status | deadline-miss ratio (worst node) | step p99 | "
           "foreign samples dropped |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = r.get("deadline_miss_ratio")
        p99 = r.get("p99_s")
        out.append(f"| {'composed' if r['composed'] else 'processes'} | {r.get('loop_hz', 0):g} Hz | "
                   f"{format(r['flood_hz'], 'g') + ' Hz' if r['flood_hz'] else 'none'} | {r['run']} | "
                   f"{r.get('status')} | {'-' if ratio is None else f'{100 * ratio:.2f} %'}"
                   f"{' (' + r['deadline_miss_node'] + ')' if r.get('deadline_miss_node') else ''} | "
                   f"{'-' if p99 is None else f'{1e3 * p99:.2f} ms'} | {r['foreign_dropped']} |")
    return "\n".join(out)
