"""``rths compare-twin RUN_DIR``: a finished run on the rig against the same scenario on its digital twin
(rths_ros.analysis.twin_comparison; docs/fidelity.md, "Twin versus rig")."""
from __future__ import annotations

import sys
import time
from pathlib import Path


def cmd_compare_twin(a) -> int:
    from rths_ros.analysis.twin_comparison import compare_run, thresholds_from
    th = thresholds_from(a.threshold)
    t0 = time.monotonic()
    composed = True if a.composed else (False if a.separate else None)
    r = compare_run(a.run_dir, a.out, a.set, th, a.twin_run, composed)
    c, tr = r["comparison"], r["comparison"]["tracking"]
    print(f"rths compare-twin {r['scenario']}: rig run {r['run_dir']} (plant {r['rig_plant']}, {r['mode']}, "
          f"{c['samples']} samples)")
    print(f"  twin: {r['twin_how']}" + (f"; overrides: {' '.join(r['overrides'])}" if r["overrides"] else ""))
    print(f"  {'':<28} {'rig':>12} {'twin':>12}")
    print(f"  {'e_track_rel':<28} {tr['rig']['e_track_rel']:12.5f} {tr['twin']['e_track_rel']:12.5f}")
    print(f"  {'tau_FEI adapted [ms]':<28} {1e3 * tr['rig']['tau_fei_s']:12.3f} {1e3 * tr['twin']['tau_fei_s']:12.3f}")
    print(f"  {'signal':<28} {'nrmse':>8} {'peak diff':>12} {'corr':>8} {'lag [ms]':>9}")
    for s in c["signals"].values():
        print(f"  {s['label']:<28} {s['nrmse']:8.4f} {100 * s['peak_diff_rel']:10.2f} % {s['correlation']:8.4f} "
              f"{1e3 * s['lag_s']:9.2f}")
    f = c["signals"]["f_int"]
    print(f"  peak interface force: rig {f['peak_rig']:.3f} N, twin {f['peak_twin']:.3f} N "
          f"(difference {f['peak_diff']:+.3f} N)")
    v = r["verdict"]
    for ch in v["checks"]:
        if not ch["passed"]:
            print(f"  failed: {ch['name']} = {ch['value']} (threshold {ch['op']} {ch['threshold']})")
    print(f"verdict: {v['text']}")
    if v.get("hint"):
        print(f"hint: {v['hint']}")
    print(f"-> {Path(r['files'][0]).parent} ({', '.join(Path(p).name for p in r['files'])}) in "
          f"{time.monotonic() - t0:.1f} s")
    return 0 if v["good_enough"] or not a.fail_if_not_good else 1


def add_parsers(sub, scenario_args) -> None:
    """``compare-twin`` on the ``rths`` parser's ``sub`` (``scenario_args`` is the other verbs' SCENARIO/--set helper;
    this verb's positional argument is a run directory, its --set changes the twin)."""
    del scenario_args
    p = sub.add_parser("compare-twin", help="a finished rig run against the same scenario on the digital twin: "
                       "numbers, plots, and whether the twin is good enough for FACE")
    p.add_argument("run_dir", help="run directory of the rig run (scenario.yaml, bag/, metrics.json; `rths run`)")
    p.add_argument("--out", help="output folder (default RUN_DIR/compare-twin)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change the twin, e.g. its leg gains (sim_plant.cascade.*); the run's scenario otherwise")
    p.add_argument("--twin-run", metavar="RUN_DIR", help="compare with this finished run on the twin instead of "
                   "running one (same mode, step, duration)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--composed", action="store_true", help="realtime twin: every node in one process (default: as "
                   "the rig run)")
    g.add_argument("--separate", action="store_true", help="realtime twin: every node its own process")
    p.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE",
                   help="a threshold of the verdict, e.g. max_tau_fei_diff_s=0.002 (docs/fidelity.md)")
    p.add_argument("--fail-if-not-good", action="store_true", help="exit 1 when the twin is not good enough")
    p.set_defaults(func=cmd_compare_twin)


if __name__ == "__main__":     # pragma: no cover
    sys.exit("use `rths compare-twin`")
