#!/usr/bin/env python3
"""Rank the test suite by the CPU time each test used (the JSON lines written with RTHS_TEST_CPU_LOG, test/conftest.py).

    python scripts/test_cpu_report.py build/test_cpu.jsonl [--top 30]

Prints the CPU and wall seconds per tier (unit, slow, graph, launch, serial, extended: a test counts in the
last of these it is marked with) and the tests that used the most CPU.  On a machine with N cores the tests that are
not serial cannot end sooner than their CPU seconds / N, whatever the order: the floor a faster suite has to
lower.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys

TIERS = ("unit", "slow", "graph", "launch", "serial", "extended")


def tier_of(marks: list[str]) -> str:
    t = "unit"
    for name in TIERS[1:]:
        if name in marks:
            t = name
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", nargs="+", help="JSON lines of RTHS_TEST_CPU_LOG")
    ap.add_argument("--top", type=int, default=30, help="how many of the costliest tests to list (default 30)")
    a = ap.parse_args(argv)
    rows = []
    for path in a.log:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    rows.append(json.loads(line))
    if not rows:
        print("no tests in the log", file=sys.stderr)
        return 1
    cpu = collections.Counter()
    wall = collections.Counter()
    n = collections.Counter()
    for r in rows:
        t = tier_of(r.get("marks", []))
        cpu[t] += r["cpu_s"]
        wall[t] += r["wall_s"]
        n[t] += 1
    print(f"{'tier':10s} {'tests':>6s} {'CPU s':>9s} {'wall s':>9s}")
    for t in TIERS:
        if n[t]:
            print(f"{t:10s} {n[t]:6d} {cpu[t]:9.1f} {wall[t]:9.1f}")
    print(f"{'all':10s} {sum(n.values()):6d} {sum(cpu.values()):9.1f} {sum(wall.values()):9.1f}")
    print(f"\nthe {a.top} tests that used the most CPU:")
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[:a.top]:
        print(f"{r['cpu_s']:8.1f} s CPU {r['wall_s']:8.1f} s wall  [{tier_of(r.get('marks', []))}] {r['test']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
