"""``rths analyze``: the analysis of a run directory or a bag, as ``rths run`` and the launch also run it.

A damaged bag (rths_ros.bag.bag_damage: its writer was killed, or the file was cut short, emptied or overwritten
later) is recovered first, metadata.yaml present or not, and analysed over what survived.  The metrics.json and
report.md of an earlier analysis are set aside as ``*.stale`` while the new analysis runs, so a failed analysis
leaves nothing that claims to describe the bag.  Exit codes: 0 completed, EXIT_PARTIAL (3) a run that did not
complete (without --partial) or a damaged bag of which no loop data survived, 1 an analysis error, 2 bad input.
"""
from __future__ import annotations

import sys
from pathlib import Path

#: ``rths analyze`` of a run that did not complete (aborted, interrupted, incomplete) without --partial
EXIT_PARTIAL = 3


RESULT_FILES = ("metrics.json", "report.md")


def _set_results_aside(out: Path) -> list[Path]:
    """Rename the metrics.json and report.md of an earlier analysis in ``out`` to ``*.stale`` (a new analysis
    writes them again; one that fails leaves nothing that claims to describe the bag)."""
    moved = []
    for name in RESULT_FILES:
        f = Path(out) / name
        if f.exists():
            target = f.with_name(f.name + ".stale")
            f.replace(target)
            moved.append(target)
    return moved


def analyze(bag: Path, out: Path, partial: bool = False, recovered: dict | None = None) -> int:
    """Metrics, report and plots of the run in ``bag``.  0 for a completed run; a run that did not complete is
    analysed over its recorded steps (the status is in metrics.json and the report) and gives EXIT_PARTIAL unless
    ``partial``; a bag without loop data is an error and writes no metrics (EXIT_PARTIAL when ``recovered``: the
    bag was damaged and nothing of the loop survived).  The metrics.json and report.md of an earlier analysis are
    set aside as ``*.stale`` first and removed once the new ones are written."""
    from rths_ros.analysis.run_analysis import analyze_bag
    stale = _set_results_aside(out)
    try:
        summary = analyze_bag(bag, out)
    except Exception as exc:  # analysis must not hide that the run itself worked
        print(f"rths analyze: error: {exc}", file=sys.stderr)
        if stale:
            print(f"rths analyze: the results of an earlier analysis do not describe this bag: kept as "
                  f"{', '.join(p.name for p in stale)}", file=sys.stderr)
        return EXIT_PARTIAL if recovered is not None else 1
    for f in stale:
        f.unlink(missing_ok=True)
    for line in summary.get("lines", []):
        print(line)
    status = (summary.get("metrics") or {}).get("status", "completed")
    if status != "completed" and not partial:
        print(f"rths analyze: the run is {status}: the metrics cover the recorded steps only; pass --partial to "
              "accept partial results (exit 0)", file=sys.stderr)
        return EXIT_PARTIAL
    return 0


def recover_damaged_bag(bag: Path, who: str = "rths analyze") -> dict | None:
    """Recover ``bag`` if it is damaged (rths_ros.bag.bag_damage), printing what was kept; None if it was not
    damaged.  The run's scenario.yaml beside the bag stands in for a lost /rths/scenario message."""
    from rths_ros.bag import bag_damage, recover
    damage = bag_damage(bag)
    if damage is None:
        return None
    scen = bag.parent / "scenario.yaml" if bag.name == "bag" else None
    text = scen.read_text() if scen is not None and scen.is_file() else None
    info = recover(bag, text)
    print(f"{who}: {bag} is damaged ({damage}); recovered {info['messages']} messages from {info['chunks']} "
          f"complete chunks (the damaged file is kept as *.partial)")
    return info


def cmd_analyze_gait(a) -> int:
    from rths_ros.families.gait.analysis import analyze_gait_bag, analyze_gait_runs
    bags = []
    for tgt in a.target:
        t = Path(tgt)
        bag = t / "bag" if (t / "bag").is_dir() else t
        if not bag.exists():
            print(f"rths analyze: error: {t} is neither a run directory nor a bag", file=sys.stderr)
            return 2
        bags.append(bag)
    try:
        if len(bags) == 1:
            bag = bags[0]
            out = Path(a.out) if a.out else (bag.parent if bag.name == "bag" else bag.parent / f"{bag.name}-analysis")
            res = analyze_gait_bag(bag, out)
        else:
            from rths_ros.launch_support import default_out
            out = Path(a.out) if a.out else default_out("gait-reproducibility")
            res = analyze_gait_runs(bags, out)
    except ValueError as exc:
        print(f"rths analyze: error: {exc}", file=sys.stderr)
        return 2
    for line in res["lines"]:
        print(line)
    statuses = [m.get("status") for m in ([res.get("metrics")] if len(bags) == 1 else res.get("runs", []))
                if isinstance(m, dict)]
    partial = [st for st in statuses if st not in (None, "completed")]
    if partial and not a.partial:
        print(f"rths analyze: {len(partial)} run(s) did not complete ({', '.join(partial)}): the metrics cover the "
              "recorded steps only; pass --partial to accept partial results (exit 0)", file=sys.stderr)
        return EXIT_PARTIAL
    return 0


def cmd_analyze(a) -> int:
    from rths_ros.analysis import figures
    with figures.disabled(getattr(a, "no_plots", False)):
        return _cmd_analyze(a)


def _cmd_analyze(a) -> int:
    if a.gait:
        return cmd_analyze_gait(a)
    if len(a.target) != 1:
        print("rths analyze: error: several run directories need --gait (reproducibility overlay)", file=sys.stderr)
        return 2
    target = Path(a.target[0])
    bag = target / "bag" if (target / "bag").is_dir() else target
    if not bag.exists():
        print(f"rths analyze: error: {target} is neither a run directory nor a bag", file=sys.stderr)
        return 2
    out = Path(a.out) if a.out else (bag.parent if bag.name == "bag" else bag.parent / f"{bag.name}-analysis")
    try:
        recovered = recover_damaged_bag(bag)
    except Exception as exc:        # (an unreadable directory, a full disk): say so, claim nothing
        print(f"rths analyze: error: {bag} is damaged and could not be recovered: {exc}", file=sys.stderr)
        _set_results_aside(out)
        return 1
    return analyze(bag, out, a.partial, recovered)
