"""``rths bench link``: a realtime run on one host beside the same run split over two hosts on one machine
(:mod:`rths_ros.runtime.two_hosts`): with the emulated link at no delay (what the relay itself costs), at the
given delay and jitter, with packet loss, and cut mid-run; each case ``runs`` times, the cases alternating so that
a slow minute of the machine hits all of them.  What it reports per run: status, deadline misses, step latency
(median, p99), missing steps and the link's holds; per case the medians, and the step latency the link added
over the one-host run (median of the per-run medians).  docs/distributed.md has a measured table."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from rths_ros.app import scenario as scn

#: (case, link keys); ``{delay}`` and ``{jitter}`` are filled from the arguments
CASES = (("one host", None), ("two hosts, no delay", "delay_ms=0"),
         ("two hosts, delay", "delay_ms={delay},jitter_ms={jitter}"), ("two hosts, 2 % loss", "loss=0.02"),
         ("two hosts, cut", "cut_at_step={cut}"))


def _one(name: str, overrides: list[str], out: Path, link_text: str | None) -> dict:
    from rths_ros.analysis.run_analysis import analyze_bag
    from rths_ros.runner import run_scenario
    from rths_ros.runtime.two_hosts import Link
    s = scn.load(name, overrides, "realtime")
    link = Link.parse(link_text) if link_text is not None else None
    r = run_scenario(s, out, progress=False, link=link)
    row = {"exit_code": r.code, "first_line": (r.message.splitlines() or [""])[0][:200]}
    try:
        m = analyze_bag(out / "bag", out)["metrics"]
        loop = m.get("loop", {})
        row.update(status=m.get("status"), deadline_miss_ratio=loop.get("deadline_miss_ratio"),
                   p50_s=loop.get("step_latency_p50_s"), p99_s=loop.get("step_latency_p99_s"),
                   step_gaps=m.get("step_gaps_total"))
    except Exception as exc:
        row.update(status=f"no analysis: {exc}"[:120])
    if link is not None:
        try:
            stats = json.loads((out / "link.json").read_text())
            holds = [d.get("hold_ms", {}) for d in stats["directions"]]
            row.update(hold_p50_ms=[h.get("p50") for h in holds], lost=[d["lost"] for d in stats["directions"]],
                       cut_step=(stats.get("cut_at") or {}).get("step"))
        except (OSError, ValueError, KeyError):
            pass
        row["link_named"] = "the first fault is about the link" in r.message
    return row


def bench_link(name: str, out_dir: Path, runs: int = 3, duration_s: float = 4.0, loop_hz: float | None = 250.0,
               delay_ms: float = 0.2, jitter_ms: float = 0.1, overrides: list[str] | None = None) -> list[dict]:
    from rths_ros.bench.measure import dt_overrides
    ov = [f"loop.duration_s={duration_s:g}", *(overrides or [])]
    if loop_hz:
        ov += dt_overrides(name, 1.0 / loop_hz, ov)
    steps = scn.load(name, ov, "realtime").steps
    rows = []
    total = runs * len(CASES)
    i = 0
    for j in range(runs):
        for case, text in CASES:
            i += 1
            text = None if text is None else text.format(delay=delay_ms, jitter=jitter_ms, cut=steps // 3)
            print(f"  [{i}/{total}] {case}" + (f" ({text})" if text else ""), flush=True)
            row = {"case": case, "link": text, "run": j + 1, "loop_hz": loop_hz,
                   **_one(name, ov, out_dir / f"link_{i}", text)}
            print(f"      {row.get('status')}, exit {row['exit_code']}, deadline misses "
                  f"{row.get('deadline_miss_ratio')}, step p50 {row.get('p50_s')}", flush=True)
            rows.append(row)
    return rows


def _ms(v) -> str:
    return "-" if v is None else f"{v * 1e3:.3f}"


def markdown_link(rows: list[dict]) -> str:
    out = ["| case | run | status (exit) | deadline misses | step latency p50 / p99 [ms] | missing steps | link hold "
           "p50 [ms] (each way) | fault names the link |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        miss = r.get("deadline_miss_ratio")
        holds = r.get("hold_p50_ms")
        out.append(f"| {r['case']} | {r['run']} | {r.get('status')} ({r['exit_code']}) | "
                   f"{'-' if miss is None else f'{100 * miss:.2f} %'} | {_ms(r.get('p50_s'))} / {_ms(r.get('p99_s'))} | "
                   f"{r.get('step_gaps', '-')} | {'-' if not holds else ' / '.join(f'{h:.3f}' for h in holds if h)} | "
                   f"{'yes' if r.get('link_named') else '-' if r.get('link') is None else 'no'} |")
    base = [r["p50_s"] for r in rows if r["case"] == "one host" and r.get("p50_s") is not None]
    if base:
        ref = statistics.median(base)
        out.append("")
        for case, _ in CASES[1:3]:
            vals = [r["p50_s"] for r in rows if r["case"] == case and r.get("p50_s") is not None]
            if vals:
                out.append(f"- {case}: step latency median {statistics.median(vals) * 1e3:.3f} ms, "
                           f"{(statistics.median(vals) - ref) * 1e3:+.3f} ms over one host ({ref * 1e3:.3f} ms)")
    return "\n".join(out)


__all__ = ["bench_link", "markdown_link", "CASES"]
