"""`rths bench` (the summary of what users wait for): every row present, each a number or "not measured" with
a reason, the verdict consistent with measured against target, the files written.  Workloads are tiny and
nothing asserts a speed or a duration."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rths_ros.bench import measure, run_timing
from rths_ros.bench.rows import markdown_rows, row, text_rows, verdict
from rths_ros.bench.summary import (
    SummaryOptions,
    markdown_summary,
    row_realtime,
    rows_quick_tests,
    rows_run,
    rows_tests,
    run_summary,
)
from rths_ros.cli import main

ROW_IDS = ["run.startup", "run.loop", "run.shutdown", "run.analysis", "run.whole", "composed", "vrths.contact_1d",
           "vrths.gait_vpp", "vrths.benchmark_building", "face.workers=1", "face.workers=2", "face.local:1",
           "face.local:2", "face.cluster:1", "face.cluster:2", "face.cluster_speedup", "face.cluster_vs_pool",
           "realtime", "realtime.defaults", "tests.wall", "tests.result", "tests.quick_wall"]


def check_rows(rows: list[dict]) -> None:
    """The structure every summary keeps, whatever was measured."""
    assert [r["id"] for r in rows] == ROW_IDS
    for r in rows:
        assert r["what"] and r["target"] and r["command"], r
        if r["measured"] is None:
            assert r["reason"] and r["display"].startswith("not measured: ") and r["met"] is None, r
            continue
        assert isinstance(r["measured"], float) and r["reason"] is None, r
        expected = verdict(r["measured"], r["op"], r["limit"])
        assert r["met"] == (None if (r["shortened"] and not r["comparable"]) else expected), r
        if r["op"] is None:
            assert r["met"] is None and r["target"] == "–"


def test_verdict_and_rows():
    assert verdict(2.0, "<=", 3.0) is True and verdict(4.0, "<=", 3.0) is False
    assert verdict(2.0, ">=", 2.0) is True and verdict(1.9, ">=", 2.0) is False
    assert verdict(0, "==", 0) is True and verdict(1, "==", 0) is False
    assert verdict(None, "<=", 3.0) is None and verdict(1.0, None, None) is None
    assert verdict(float("nan"), "<=", 1.0) is None
    with pytest.raises(ValueError):
        verdict(1.0, "<", 2.0)
    r = row("x", "a thing", 7.0, "s", op="<=", limit=8.0, command="rths x")
    assert r["met"] is True and r["display"] == "7.00 s" and r["target"] == "≤ 8 s"
    r = row("x", "a thing", 9.0, "s", op="<=", limit=8.0, command="rths x", shortened=True, comparable=False)
    assert r["met"] is None and r["shortened"]
    r = row("x", "a ratio", 1.5, "x", op=">=", limit=2.0, command="rths x", shortened=True)
    assert r["met"] is False
    r = row("x", "a thing", float("nan"), "s", op="<=", limit=1.0, command="rths x")
    assert r["measured"] is None and r["met"] is None and r["reason"]
    table = markdown_rows([r])
    assert table.count("\n") == 2 and "not measured" in table and "a thing" in text_rows([r])


def _fake_run_dir(tmp_path, with_run_json: bool):
    d = tmp_path / ("with" if with_run_json else "without")
    (d / "timing").mkdir(parents=True)
    (d / "logs").mkdir()
    t = 1_700_000_000.0
    (d / "logs" / "supervisor.log").write_text(
        f"[INFO] [{t + 2.0:.9f}] [supervisor]: all 5 nodes ready: START\n"
        f"[INFO] [{t + 6.0:.9f}] [supervisor]: sim_plant finished step 4000 (trial 0): STOP\n"
        "supervisor: teardown watchdog armed\n")
    for i, node in enumerate(("sim_plant", "ft_sensor")):
        p = d / "timing" / f"{node}.json"
        p.write_text(json.dumps({"node": node, "startup": {"process_start": t + 0.5, "imports_done": t + 0.9 + i,
                                                           "built": t + 1.5 + 2 * i, "ready": t + 1.8, "start": t + 2.0}}))
        os.utime(p, (t + 6.5, t + 6.5 + 0.1 * i))
    for name, dt in (("metrics.json", 7.0), ("report.md", 7.5), ("displacement.png", 7.2)):
        (d / name).write_text("x")
        os.utime(d / name, (t + dt, t + dt))
    if with_run_json:
        (d / "timing" / "run.json").write_text(json.dumps(
            {"cli_start": t + 0.1, "spawn": t + 0.4, "start": t + 2.1, "stop": t + 6.1, "nodes_ended": t + 6.4,
             "analysis_done": t + 7.4}))
    return d, t


def test_run_breakdown_from_run_json_and_from_the_logs(tmp_path):
    d, t = _fake_run_dir(tmp_path, with_run_json=False)
    pts, src = run_timing.run_points(d)
    assert pts["start"] == pytest.approx(t + 2.0) and pts["stop"] == pytest.approx(t + 6.0)
    assert src["start"] == src["stop"] == "logs/supervisor.log"
    assert pts["nodes_ended"] == pytest.approx(t + 6.6) and pts["analysis_done"] == pytest.approx(t + 7.5)
    seg = run_timing.segments(pts, t, t + 8.0)
    assert seg["startup_s"] == pytest.approx(2.0) and seg["loop_s"] == pytest.approx(4.0)
    assert seg["shutdown_s"] == pytest.approx(0.6) and seg["analysis_s"] == pytest.approx(0.9)
    assert seg["whole_s"] == pytest.approx(8.0) and seg["interpreter_s"] is None
    ns = run_timing.node_startup(d)
    assert ns["import_node"] == ns["build_node"] == "ft_sensor"
    assert ns["import_s"] == pytest.approx(1.4) and ns["build_s"] == pytest.approx(1.6)

    d, t = _fake_run_dir(tmp_path, with_run_json=True)
    pts, src = run_timing.run_points(d)
    assert set(src.values()) == {"timing/run.json"} and pts["start"] == pytest.approx(t + 2.1)
    m = {"command": f"rths run contact_1d --out {d}", "exit_code": 0, "steps": 4000, "sim_s": 4.0, "points": pts,
         "sources": src, "segments": run_timing.segments(pts, t, t + 8.0), "node_startup": run_timing.node_startup(d)}
    rows = rows_run(m, SummaryOptions().resolved())
    assert [r["id"] for r in rows] == ROW_IDS[:5]
    by = {r["id"]: r for r in rows}
    assert by["run.loop"]["measured"] == pytest.approx(1.0) and by["run.loop"]["met"] is False
    assert by["run.startup"]["measured"] == pytest.approx(2.1) and by["run.startup"]["met"] is True
    assert by["run.shutdown"]["met"] is None and "ft_sensor" in by["run.startup"]["detail"]
    failed = rows_run(dict(m, exit_code=1, error="boom"), SummaryOptions().resolved())
    assert all(r["measured"] is None and "boom" in r["reason"] for r in failed)


def test_the_run_rows_come_from_the_run_of_the_median_loop_speed(tmp_path, monkeypatch):
    """(The selection only: each run is given by its loop time; the commands themselves run in the bench.)"""
    from rths_ros.bench import measure
    loops = iter([2.5, 2.0, 3.0])
    seen = []

    def fake(scenario, out, overrides=(), composed=False, progress=print):
        seen.append(Path(out))
        loop_s = next(loops)
        return {"command": f"rths run {scenario} --out {out}", "exit_code": 0, "steps": 4000, "sim_s": 4.0,
                "segments": {"loop_s": loop_s, "startup_s": 1.0 + loop_s}, "sources": {}, "points": {}}
    monkeypatch.setattr(measure, "measure_run_command", fake)
    m = measure.median_run_command("contact_1d", tmp_path, [], 3, progress=lambda *_: None)
    assert m["segments"]["loop_s"] == 2.5 and m["loop_x_runs"] == [1.6, 2.0, 4.0 / 3.0]
    assert seen == [tmp_path / f"run_{i}" for i in (1, 2, 3)]       # each run in a folder of its own
    detail = next(r for r in rows_run(m, SummaryOptions().resolved()) if r["id"] == "run.loop")["detail"]
    assert "the run of the median of 3: 1.60, 2.00, 1.33×" in detail
    loops = iter([2.5, 9.0])
    results = iter([0, 1])

    def failing(scenario, out, overrides=(), composed=False, progress=print):
        return dict(fake(scenario, out), exit_code=next(results), error="boom")
    monkeypatch.setattr(measure, "measure_run_command", failing)
    m = measure.median_run_command("contact_1d", tmp_path, [], 3, progress=lambda *_: None)
    assert m["exit_code"] == 1 and m["error"] == "boom"            # a failed run is reported, not skipped


def test_dt_overrides_name_every_key_that_must_follow_the_step():
    from rths_ros.app import scenario as scn
    ov = measure.dt_overrides("contact_1d", 0.002)
    keys = {o.split("=")[0] for o in ov}
    assert {"loop.dt_s", "numerical.contact_1d.dt_s", "passivity.dt_s", "platform.commander.coupling.dt_s"} <= keys
    s = scn.load("contact_1d", ov)
    assert s.loop.dt_s == 0.002 and s.steps == round(s.loop.duration_s / 0.002)
    with pytest.raises(scn.ParameterError):
        measure.dt_overrides("contact_1d", 1.0)        # outside loop.dt_s's range


def test_realtime_and_test_record_rows(tmp_path):
    opts = SummaryOptions(quick=True).resolved()
    scan = {"duration_s": 1.0, "dt_keys": ["loop.dt_s", "passivity.dt_s"], "hops_per_step": 4, "scanned_hz": [1000, 500],
            "best_hz": 500, "rates": [
                {"hz": 1000, "dt_s": 1e-3, "miss_ratio": 0.3, "latency_p50_s": 1.2e-3, "latency_p99_s": 2e-3,
                 "latency_p999_s": 3e-3, "hop_p50_s": 3e-4, "lost_messages": 3, "passed": False},
                {"hz": 500, "dt_s": 2e-3, "miss_ratio": 0.0, "latency_p50_s": 1.2e-3, "latency_p99_s": 1.5e-3,
                 "latency_p999_s": 1.8e-3, "hop_p50_s": 3e-4, "lost_messages": 0, "passed": True}]}
    r = row_realtime(scan, opts)
    assert r["measured"] == 500.0 and r["met"] is False and "passivity.dt_s" in r["detail"]
    assert "loop.dt_s=0.002" in r["command"]
    assert "realtime-processes-rt" in r["command"] and "SCHED_FIFO 80" in r["what"]
    r = row_realtime(dict(scan, best_hz=None, rates=[dict(x, passed=False) for x in scan["rates"]]), opts)
    assert r["measured"] == 0.0 and r["met"] is False and r["display"].startswith("none of")
    d = row_realtime(scan, opts, rid="realtime.defaults")       # the scenario's own settings: shown, no target
    assert d["measured"] == 500.0 and d["met"] is None and "--configs realtime-processes " in d["command"]
    none = rows_tests(None, None)
    assert all(x["measured"] is None and x["reason"] for x in none)
    rec = {"wall_s": 480.0, "exit_code": 1, "date": "2026-01-01 00:00:00 +0000", "commit": "abc", "pytest_args": ""}
    wall, result = rows_tests(rec, None)
    assert wall["met"] is True and result["met"] is False and "abc" in wall["detail"]
    rec_file = tmp_path / "test_wall.json"                     # beside it, the second distribution's tiers
    (tmp_path / "test_jazzy_wall.json").write_text(json.dumps(dict(rec, wall_s=338.0, exit_code=0)))
    wall, _ = rows_tests(dict(rec, distro="kilted"), rec_file)
    assert "on ROS 2 kilted" in wall["what"] and "ROS 2 jazzy as well: 338 s, exit 0" in wall["detail"], wall
    wall, result = rows_tests(dict(rec, pytest_args="-k x", exit_code=0), None)
    assert wall["met"] is None and wall["shortened"] and result["met"] is True
    (quick,) = rows_quick_tests(dict(rec, wall_s=95.0), None)
    assert quick["met"] is False and "exit 1" in quick["detail"] and quick["limit"] == 90.0


def test_quick_summary_of_the_in_process_rows(tmp_path):
    """Real measurements on a tiny workload: the virtual runs (best of 1) and a 4-point FACE sweep with one
    worker; the ROS rows are not selected and say so."""
    record = tmp_path / "test_wall.json"
    record.write_text(json.dumps({"wall_s": 512.5, "exit_code": 0, "date": "2026-01-01 00:00:00 +0000",
                                  "commit": "0123abcd", "pytest_args": ""}))
    opts = SummaryOptions(quick=True, only=("vrths", "face", "tests"), face_points=4, face_configs=("workers=1",),
                          face_cluster=False, test_record=record)     # (the cluster rows: test_face_cli)
    logs = []
    s = run_summary(opts, tmp_path / "out", log=logs.append)
    rows = s["rows"]
    check_rows(rows)
    by = {r["id"]: r for r in rows}
    for name in ("contact_1d", "gait_vpp", "benchmark_building"):
        assert by[f"vrths.{name}"]["measured"] > 0 and "µs/step" in by[f"vrths.{name}"]["detail"]
    assert by["face.workers=1"]["measured"] > 0 and by["face.workers=1"]["shortened"]
    assert by["face.workers=2"]["reason"] == "not selected"
    assert all(r["measured"] is None for r in rows if r["id"].startswith("face.cluster"))
    assert (tmp_path / "out" / "face" / "workers_1" / "face.json").is_file()
    assert by["tests.wall"]["measured"] == 512.5 and "0123abcd" in by["tests.wall"]["detail"]
    assert by["tests.quick_wall"]["measured"] is None and "test_quick_wall.json" in by["tests.quick_wall"]["reason"]
    assert by["run.whole"]["reason"] == by["realtime"]["reason"] == by["realtime.defaults"]["reason"] \
        == "not selected (--only)"
    assert any(line.startswith("[1/3] ") for line in logs) and any(line.startswith("[3/3] ") for line in logs)
    md = markdown_summary(s, {"cores": 2}, "QUICK")
    assert "**QUICK**" in md and md.count("\n| ") >= len(ROW_IDS) + 1
    # the machine's speed, measured before the first group and after the last, is stated with the results
    speed = s["machine_speed"]
    assert 0 < speed["start_s"] < 10 and 0 < speed["end_s"] < 10, speed
    assert f"took {1e3 * speed['start_s']:.0f} ms at the start of the bench and {1e3 * speed['end_s']:.0f} ms" in md
    json.dumps(s)                                        # bench.json holds it as it is


def test_the_speed_note_says_when_the_machine_changed_speed_during_the_bench():
    from rths_ros.bench.core import SPEED_DRIFT, speed_note
    assert speed_note(None) == "" and speed_note({}) == ""
    steady = speed_note({"start_s": 0.040, "end_s": 0.040 * (1 + SPEED_DRIFT * 0.9)})
    assert "40 ms at the start of the bench and 45 ms at its end." in steady and "not comparable" not in steady
    slower = speed_note({"start_s": 0.040, "end_s": 0.060})
    assert "ran 50 % slower at the end" in slower and "not comparable" in slower
    faster = speed_note({"start_s": 0.060, "end_s": 0.040})
    assert "ran 33 % faster at the end" in faster
    assert speed_note({"start_s": 0.05}).endswith("took 50 ms at the start of the bench.")


def test_the_cluster_rows_compare_the_points_phases():
    """(Given measurements; the sweeps on a real cluster: test/analysis/test_face_cli.py.)"""
    from rths_ros.bench.summary import rows_face_cluster
    opts = SummaryOptions().resolved()
    res = {f"cluster:{w}": {"wall_s": wall, "points_s": pts, "points_per_s": 200 / wall, "command": f"rths face {w}"}
           for w, wall, pts in ((1, 10.2, 7.9), (2, 6.74, 4.3))}
    pool = {"workers=2": {"wall_s": 6.65, "points_s": 4.4}}
    by = {r["id"]: r for r in rows_face_cluster(res, pool, opts)}
    assert by["face.cluster_speedup"]["measured"] == pytest.approx(7.9 / 4.3) and by["face.cluster_speedup"]["met"]
    ratio = by["face.cluster_vs_pool"]
    assert ratio["measured"] == pytest.approx(4.3 / 4.4) and ratio["met"] is True
    assert "whole command 6.74 s and 6.65 s" in ratio["detail"] and "client connected" in ratio["detail"]
    slower = {r["id"]: r for r in rows_face_cluster(res, {"workers=2": {"wall_s": 6.0, "points_s": 3.9}}, opts)}
    assert slower["face.cluster_vs_pool"]["met"] is False
    missing = {r["id"]: r for r in rows_face_cluster({"cluster:2": {"error": "no scheduler"}}, pool, opts)}
    assert missing["face.cluster:2"]["measured"] is None and "no scheduler" in missing["face.cluster:2"]["reason"]
    assert missing["face.cluster_vs_pool"]["measured"] is None


def test_cli_bench_summary_writes_json_and_markdown(tmp_path, capsys):
    """`rths bench --quick --only tests`: the table with every row, written and printed."""
    out = tmp_path / "bench"
    assert main(["bench", "--quick", "--only", "tests", "--test-record", str(tmp_path / "none.json"),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "QUICK (shortened)" in printed and "test suite (make test): wall time" in printed
    data = json.loads((out / "bench.json").read_text())
    check_rows(data["summary"]["rows"])
    assert data["summary"]["quick"] is True and data["summary"]["counts"]["not_measured"] == len(ROW_IDS)
    md = (out / "bench.md").read_text()
    assert "| what | measured | target | met | command | notes |" in md and "QUICK" in md
    assert main(["bench", "--only", "nonsense", "--out", str(out)]) == 2
    assert main(["bench", "--face-points", "2", "--out", str(out)]) == 2


def test_the_composed_row_is_the_run_of_the_median_speed_and_lists_every_run():
    from rths_ros.bench.summary import median_composed, row_composed
    runs = [{"realtime_factor": x, "step_latency_p50_s": 1e-4 * i, "step_latency_p99_s": 3e-4, "wall_s": 4.0 / x}
            for i, x in enumerate((7.4, 5.9, 6.8), start=1)]
    m = median_composed(runs)
    assert m["realtime_factor"] == 6.8 and m["x_runs"] == [7.4, 5.9, 6.8]
    assert m["step_latency_p50_s"] == pytest.approx(3e-4)          # every figure of the row is that run's
    r = row_composed(m, SummaryOptions().resolved())
    assert r["measured"] == 6.8 and r["met"] is False
    assert "the run of the median of 3: 7.40, 5.90, 6.80×" in r["detail"] and "p50 0.300 ms" in r["detail"]
    # a failed run is reported as it is, not hidden behind the others
    failed = {"error": "rths run exited 1"}
    assert median_composed([runs[0], failed, runs[2]]) is failed
    assert row_composed(failed, SummaryOptions().resolved())["measured"] is None
    one = row_composed(median_composed(runs[:1]), SummaryOptions(quick=True).resolved())
    assert one["measured"] == 7.4 and "median" not in one["detail"]
