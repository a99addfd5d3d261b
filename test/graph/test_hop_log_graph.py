"""The hop logs of a run through separate processes (recording.hop_log): every loop node logged, each segment of
every step is there and not negative, the seven parts of each step add up to its round trip as the plant saw it,
and the run with the logs on is still the virtual run; `rths bench hops --run` writes its table and figure."""
from __future__ import annotations

import json

import numpy as np
from graph_equivalence import assert_graph_matches_virtual
from shared_runs import copy_run, shared_run

from rths_ros.analysis import hops
from rths_ros.runtime import hop_log

OV = ("loop.duration_s=1.0", "recording.hop_log=true")


def test_a_processes_run_splits_into_hops_that_add_up(tmp_path, rths_local):
    run = shared_run("contact_1d", *OV, args=("--no-plots",))
    logs = hop_log.load(run.out / "timing")
    assert {"sim_plant", "ft_sensor", "numerical_substructure", "stewart_platform"} <= set(logs)
    # the plant publishes each step's raw wrench, the loop's next hop, before its leg state (runtime/beat.py)
    (w_steps, w_ns), (s_steps, s_ns) = logs["sim_plant"]["pub:/rths/raw_wrench"], logs["sim_plant"]["pub:/rths/leg_state"]
    assert np.array_equal(w_steps, s_steps) and np.all(w_ns < s_ns)
    seg = hops.segments(run.out / "timing")
    for name, x in seg.items():
        assert x.size >= 999 and np.all(x >= 0.0), (name, x.size)
    by = hops.segments_by_step(run.out / "timing")
    parts = [n for n in by if n != "step round trip"]
    steps = sorted(set.intersection(*(set(by[n]) for n in by)))
    assert len(steps) >= 998
    for k in steps:                                 # the parts chain the same stamps: they add up exactly
        assert abs(sum(by[n][k] for n in parts) - by["step round trip"][k]) < 1e-9, k
    assert_graph_matches_virtual(run.out / "bag", "contact_1d", overrides=list(OV))
    out = copy_run(run, tmp_path / "run")
    r = rths_local("bench", "hops", "--run", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "| step round trip | 1000 |" in r.stdout
    data = json.loads((out / "hops.json").read_text())
    assert data["dt_s"] is None and data["segments"]["numerical work"]["steps"] == 1000
    assert (out / "hops.png").stat().st_size > 10_000


def test_hops_of_a_run_without_logs_are_refused_naming_the_setting(tmp_path, rths_local):
    run = shared_run("contact_1d")
    r = rths_local("bench", "hops", "--run", str(run.out))
    assert r.returncode == 2 and "recording.hop_log=true" in r.stderr, r.stdout + r.stderr


def test_a_loop_bench_into_a_folder_of_an_earlier_bench_replaces_its_runs(tmp_path):
    """`rths bench --out DIR` again: each configuration's folder holds the earlier bench's run (its bag among it),
    which the new run replaces instead of refusing to write its bag."""
    from rths_ros.bag import read_bag
    from rths_ros.bench.loop import bench_loop
    stale = tmp_path / "lockstep-composed"
    (stale / "bag").mkdir(parents=True)
    (stale / "bag" / "metadata.yaml").write_text("an earlier bench's bag\n")
    (stale / "events.json").write_text("{}")
    res = bench_loop("contact_1d", [], 0.2, ["lockstep-composed"], tmp_path, log=lambda *_: None)
    assert "error" not in res["lockstep-composed"], res
    cmds = read_bag(stale / "bag", ["/rths/leg_command"])["/rths/leg_command"]
    assert [int(m.step) for _, m in cmds] == list(range(1, 201))
