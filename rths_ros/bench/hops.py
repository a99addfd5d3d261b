"""``rths bench hops``: the loop of a scenario in each configuration with the nodes' hop logs on
(``recording.hop_log``), split into the transport of each topic and each node's own work
(:mod:`rths_ros.analysis.hops`): a table per configuration, ``hops.json`` and the histograms ``hops.png`` in its run
directory.  ``--run DIR`` analyses a run made with ``--set recording.hop_log=true`` instead."""
from __future__ import annotations

import json
from pathlib import Path


def analyse_run(run_dir: Path, title: str | None = None, log=print) -> dict:
    """The segments of one run directory: hops.json and hops.png written into it; the summary returned."""
    from rths_ros.analysis import hops
    from rths_ros.app import scenario as scn
    run_dir = Path(run_dir)
    timing = run_dir / "timing"
    if not list(timing.glob("*.hops.npz")):
        raise scn.ParameterError(f"run: {run_dir} has no hop logs (timing/*.hops.npz); run it with "
                                 "--set recording.hop_log=true")
    s = scn.load(str(run_dir / "scenario.yaml")) if (run_dir / "scenario.yaml").is_file() else None
    dt = s.loop.dt_s if s is not None and s.loop.mode == "realtime" else None
    seg = hops.segments(timing)
    summ = hops.summary(seg, dt)
    (run_dir / "hops.json").write_text(json.dumps({"dt_s": dt, "segments": summ}, indent=1))
    name = title or (f"{s.name}, {s.loop.mode}" if s is not None else run_dir.name)
    hops.plot(seg, run_dir / "hops.png", f"where a step's time goes: {name}", dt)
    log(hops.markdown(summ))
    log(f"-> {run_dir / 'hops.json'}, {run_dir / 'hops.png'}")
    return summ


def bench_hops(name: str, overrides: list[str], duration_s: float, configs: list[str], out_dir: Path,
               log=print) -> dict:
    from rths_ros.bench.loop import bench_loop
    res = {}
    for c in configs:
        bench_loop(name, list(overrides) + ["recording.hop_log=true"], duration_s, [c], Path(out_dir),
                   log=lambda m: log("  " + m))
        log(f"\n{c}:")
        res[c] = analyse_run(Path(out_dir) / c, f"{name}, {c}", log)
    return res


def cmd_hops(a) -> int:
    from rths_ros.launch_support import default_out
    if a.run:
        analyse_run(Path(a.run))
        return 0
    out = Path(a.out) if a.out else default_out("bench-hops")
    configs = [c for c in (a.configs or "lockstep-processes,realtime-processes").split(",") if c]
    bench_hops(a.scenario, a.set, a.duration, configs, out)
    return 0
