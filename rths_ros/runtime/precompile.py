"""Compile the numba kernels of every scenario once, into numba's cache (``python -m rths_ros.runtime.precompile``).

The kernels are compiled with ``cache=True``: the first process that calls one compiles it (seconds of CPU; the
gait model's about 45 s, the contact test's about 30 s on a 2-core machine) and writes it beside its source, and
every later process loads it (milliseconds).  On a fresh installation the first run pays the compilation, and
several processes starting at once (the node processes of a run, the workers of the test suite) each compile the
same kernels until one of them has written the cache.  ``scripts/setup_env.sh`` runs this module once after the
install (again only when the sources changed), so neither a first run nor the test suite compiles.

Each scenario's fast path (the objects a graph run's nodes step, and the fused trial kernel of the in-process
virtual run) is stepped a few steps, as :func:`rths_ros.runtime.startup.warm_fast_path` does before READY.  The
scenarios of one model family are warmed in one process (their kernels overlap), the families spread over the
cores.  A scenario that cannot be warmed (a plugin that fails to load, a scenario for another plant) is named and
skipped: this is a cache warm-up, its failure only leaves the compilation to the first run.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import os
import sys
import time


def _warm(names: list[str]) -> list[tuple[str, float, str]]:
    """(scenario, CPU seconds, problem or "") for each scenario, warmed in this process."""
    from rths_ros.app import scenario as scn
    from rths_ros.app.vrths import VirtualRun
    done = []
    for name in names:
        c0 = time.process_time()
        problem = ""
        try:
            s = scn.load(name)
            loop = dataclasses.replace(s.loop, duration_s=20 * s.loop.dt_s, trials=1)
            s = dataclasses.replace(s, loop=loop)
            for compiled in (False, True):          # the nodes' objects, then the fused trial kernel
                VirtualRun(s, compiled=compiled).run()
        except Exception as exc:        # only a warm-up: the first run compiles what is left
            problem = f"{type(exc).__name__}: {exc}"
        done.append((name, time.process_time() - c0, problem))
    return done


def families(names: list[str]) -> dict[str, list[str]]:
    """The scenarios grouped by model family (a scenario that does not load is a group of its own)."""
    from rths_ros.app import scenario as scn
    from rths_ros.families import registry
    models = registry.models()
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for name in names:
        try:
            model = scn.load(name).numerical.model
            groups[models[model].family if model in models else model].append(name)
        except Exception:
            groups[name].append(name)
    return dict(groups)


def main(argv: list[str] | None = None) -> int:
    from rths_ros.app import scenario as scn
    ap = argparse.ArgumentParser(prog="python -m rths_ros.runtime.precompile", description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*", help="scenario names (default: every scenario, plugins' included)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: the cores)")
    a = ap.parse_args(argv)
    names = a.scenarios or scn.scenario_names()
    groups = families(names)
    t0 = time.monotonic()
    failed = 0
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, min(a.jobs, len(groups)))) as pool:
        futures = {pool.submit(_warm, group): family for family, group in sorted(groups.items(),
                                                                                 key=lambda kv: -len(kv[1]))}
        for fut in concurrent.futures.as_completed(futures):
            for name, cpu_s, problem in fut.result():
                if problem:
                    failed += 1
                    print(f"precompile: {name}: not warmed ({problem})", file=sys.stderr)
                else:
                    print(f"precompile: {name} ({futures[fut]}): {cpu_s:.1f} s of CPU")
    print(f"precompile: {len(names) - failed} of {len(names)} scenarios warmed in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
