"""`rths face`: the command line, re-analysis without running (the ROS-graph backend of ScenarioPointRunner is
in test_face_graph_backend.py), the Dask cluster option, the building runner, the shipped sweep files, and the FACE numbers of
§12.2 (building benchmark) and §12.3 (simulated contact rig) that docs/fidelity.md reports."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from rths_ros import cli
from rths_ros.analysis import face
from rths_ros.analysis import measures as ms
from rths_ros.analysis.face import cli as face_cli
from rths_ros.app import scenario as scn
from rths_ros.families.building.face import BuildingPointRunner
from rths_ros.params import ParameterError

ROOT = Path(__file__).resolve().parents[2]
SWEEPS = ROOT / "config" / "sweeps"


def _contact_sweep(path: Path, runner: str, values=(0, 2, 4, 6), duration_s: float = 1.0, **extra) -> Path:
    data = {"name": f"contact_{runner}", "runner": runner, "scenario": "contact_1d",
            "overrides": {"loop.duration_s": duration_s, "numerical.contact_1d.d_num_kg_per_s": 50.0,
                          "safety.watchdog_s": 30.0,     # lockstep: tolerate a loaded machine
                          "sim_plant.cascade.preset": "PPI2"},
            "vary": {"parameter": "sim_plant.command_delay_steps", "values": list(values)},
            "e": {"measure": "e_track_rel"}, "q": {"measure": "peak_amplitude"},
            "fit": {"degree": 1, "db": True}, **extra}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _face(out: Path) -> dict:
    return json.loads((out / "face.json").read_text())


def test_face_subcommand_runs_and_reanalyse_runs_nothing(tmp_path, monkeypatch, capsys):
    sweep = _contact_sweep(tmp_path / "s.yaml", "vrths")
    out = tmp_path / "out"
    assert cli.main(["face", str(sweep), "--out", str(out), "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert "4/4 points" in printed and "q_pred" in printed
    first = _face(out)
    assert first["n_used"] == 4 and first["fit"]["degree"] == 1
    e = [p["e"] for p in first["points"]]
    assert e == sorted(e) and e[0] < e[-1]          # more delay, larger tracking error
    stamps = {f.name: f.stat().st_mtime_ns for f in (out / "points").iterdir()}

    # re-analysis with another fit: nothing may run (every way of running a point is disabled)
    def forbidden(*_a, **_k):
        raise AssertionError("a point was run during --reanalyse")
    monkeypatch.setattr(face_cli, "make_runner", forbidden)
    monkeypatch.setattr(face.ScenarioPointRunner, "__call__", forbidden)
    monkeypatch.setattr("rths_ros.app.vrths.run_virtual", forbidden)
    data = yaml.safe_load(sweep.read_text())
    data["fit"] = {"degree": 2, "db": True}
    (tmp_path / "s2.yaml").write_text(yaml.safe_dump(data))
    assert cli.main(["face", str(tmp_path / "s2.yaml"), "--out", str(out), "--reanalyse"]) == 0
    second = _face(out)
    assert second["fit"]["degree"] == 2
    assert [p["e"] for p in second["points"]] == e
    assert [p["q"] for p in second["points"]] == [p["q"] for p in first["points"]]
    assert {f.name: f.stat().st_mtime_ns for f in (out / "points").iterdir()} == stamps
    # without a sweep file the saved sweep.yaml is used (degree 1 again)
    assert cli.main(["face", "--out", str(out), "--reanalyse"]) == 0
    assert _face(out)["fit"]["degree"] == 1
    assert _face(out)["q_pred"] == pytest.approx(first["q_pred"], rel=1e-12)


def test_face_subcommand_reports_a_bad_sweep(tmp_path, capsys):
    sweep = _contact_sweep(tmp_path / "bad.yaml", "vrths", values=(0, 1, 2))
    assert cli.main(["face", str(sweep), "--out", str(tmp_path / "o")]) == 2
    assert "vary.values: 3 values given; expected at least 4" in capsys.readouterr().err
    assert cli.main(["face", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "o")]) == 2


def test_dask_local_cluster_gives_the_process_pool_numbers(tmp_path, capsys):
    pytest.importorskip("distributed")
    sweep = _contact_sweep(tmp_path / "d.yaml", "vrths", values=(0, 1, 3, 5))
    assert cli.main(["face", str(sweep), "--out", str(tmp_path / "pool"), "--workers", "2"]) == 0
    assert cli.main(["face", str(sweep), "--out", str(tmp_path / "dask"), "--cluster", "local:2"]) == 0
    assert "4/4 points" in capsys.readouterr().out
    a, b = _face(tmp_path / "pool"), _face(tmp_path / "dask")
    for key in ("e_min", "q_min", "q_pred", "error_estimate"):
        assert a[key] == pytest.approx(b[key], rel=1e-12, abs=0), key
    assert [(p["e"], p["q"]) for p in a["points"]] == [(p["e"], p["q"]) for p in b["points"]]


def test_a_cluster_started_from_the_command_line_gives_the_process_pool_numbers(tmp_path, capsys):
    """`dask scheduler` and two `dask worker` processes (rths_ros.bench.dask_cluster), the sweep sent by address:
    the same points as the process pool; the workers saw the output directory and saved the points themselves
    (the probe file of that check is gone)."""
    pytest.importorskip("distributed")
    from rths_ros.bench.dask_cluster import CommandLineCluster
    sweep = _contact_sweep(tmp_path / "d.yaml", "vrths", values=(0, 1, 3, 5, 7))
    assert cli.main(["face", str(sweep), "--out", str(tmp_path / "pool"), "--workers", "2"]) == 0
    with CommandLineCluster(tmp_path / "dask-logs") as cluster:
        assert cluster.add_worker() == 1 and cluster.add_worker() == 2
        assert cli.main(["face", str(sweep), "--out", str(tmp_path / "dask"), "--cluster", cluster.address]) == 0
        assert "5/5 points done" in capsys.readouterr().out
        pids = {p.pid for p in cluster.procs}
    a, b = _face(tmp_path / "pool"), _face(tmp_path / "dask")
    assert [(p["e"], p["q"]) for p in a["points"]] == [(p["e"], p["q"]) for p in b["points"]]
    assert len(list((tmp_path / "dask" / "points").glob("point_*.npz"))) == 5
    assert not list((tmp_path / "dask").glob(".workers-probe-*"))
    for pid in pids:                                  # the with block stopped the scheduler and the workers
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


def test_points_go_to_the_cluster_in_batches_that_shrink_to_single_points_at_the_end():
    from rths_ros.analysis.face.engine import GUIDED_SHARE, TASKS_PER_WORKER, batches
    b = batches(200, 2)
    assert [i for r in b for i in r] == list(range(200))             # every point once, in order
    sizes = [len(r) for r in b]
    assert sizes[0] == 13 == max(sizes)                              # about eight batches per worker at first
    assert sizes == sorted(sizes, reverse=True) and sizes[-4:] == [1, 1, 1, 1]
    start = 0
    for r in b:                                                      # none above its share of what remains
        assert r.start == start and len(r) <= max(1, -(-(200 - start) // (GUIDED_SHARE * 2)))
        start = r.stop
    assert [list(r) for r in batches(5, 2)] == [[0], [1], [2], [3], [4]]
    assert [i for r in batches(1001, 3) for i in r] == list(range(1001))
    assert max(len(r) for r in batches(1001, 3)) == -(-1001 // (TASKS_PER_WORKER * 3))
    assert batches(0, 4) == []


def _profiler_running(dask_worker=None):
    return {k: pc.is_running() for k, pc in dask_worker.periodic_callbacks.items() if k.startswith("profile")}


def test_a_sweep_pauses_a_cluster_workers_profiler_and_resumes_it_after():
    """A worker with Dask's defaults samples its running task every 10 ms: paused for the sweep, running again
    after it (the cluster stays as it was)."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from rths_ros.analysis.face.engine import _worker_profiler, _worker_restore
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            Client(lc) as client:
        assert list(client.run(_profiler_running).values()) == [{"profile": True, "profile-cycle": True}]
        assert list(client.run(_worker_profiler).values()) == ["paused"]
        assert list(client.run(_profiler_running).values()) == [{"profile": False, "profile-cycle": False}]
        assert list(client.run(_worker_profiler).values()) == ["untouched"]     # (nothing was running)
        assert [p for _, p in client.run(_worker_restore).values()] == ["resumed"]
        assert list(client.run(_profiler_running).values()) == [{"profile": True, "profile-cycle": True}]


def test_the_sweep_settings_reach_the_workers_of_a_local_cluster_and_of_the_command_line_cluster(tmp_path):
    """config/dask/rths-sweeps.yaml: in the worker processes of ``--cluster local:N`` (through their nannies) and
    in the scheduler and workers of the bench's command-line cluster (DASK_CONFIG); its keys are Dask's own (a
    misspelt one would be ignored)."""
    pytest.importorskip("distributed")
    import dask.config
    from distributed import Client

    from rths_ros.analysis.face.engine import _worker_profiler, open_cluster, sweep_dask_config
    from rths_ros.bench.dask_cluster import CommandLineCluster
    cfg = sweep_dask_config()
    want = {"distributed.admin.tick.interval": "500ms", "distributed.worker.profile.enabled": False,
            "distributed.worker.memory.monitor-interval": "1s"}
    assert {k: cfg[k] for k in want} == want and "distributed.admin.system-monitor.interval" in cfg
    for key in cfg:                                    # every key exists in Dask's defaults
        assert dask.config.get(key, default="<missing>") != "<missing>", key

    def seen(run) -> dict:
        return {k: list(run(dask.config.get, k).values()) for k in want}
    client, cluster = open_cluster("local:1")
    try:
        assert seen(client.run) == {k: [v] for k, v in want.items()}
        assert list(client.run(_worker_profiler).values()) == ["untouched"]     # no profiler to pause
    finally:
        client.close()
        cluster.close()
    with CommandLineCluster(tmp_path / "dask-logs") as cl:
        cl.add_worker()
        with Client(cl.address) as c:
            assert seen(c.run) == {k: [v] for k, v in want.items()}
            assert {k: c.run_on_scheduler(dask.config.get, k) for k in want} == want


_MALLOC_PROBE = """
import ctypes, sys
from rths_ros.analysis.face.engine import _worker_malloc

class Info(ctypes.Structure):       # glibc's struct mallinfo2
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
keep = []

def mapped_by_one_array():          # blocks glibc maps on their own for one 1-MB array
    before = libc.mallinfo2().hblks
    keep.append(bytearray(1 << 20))
    return libc.mallinfo2().hblks - before

print("before", mapped_by_one_array())
print(_worker_malloc(), mapped_by_one_array())
print(_worker_malloc(), mapped_by_one_array())       # (the same call again: still raised)
print(_worker_malloc(restore=True), mapped_by_one_array())
"""


@pytest.mark.parametrize("trim", ["65536", None])
def test_a_nanny_started_worker_keeps_a_points_arrays_on_the_heap_for_the_sweep(trim):
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, under which glibc maps every array above
    128 KB for each use (engine._worker_malloc); the sweep raises the thresholds, then sets them back.  A worker
    without the variable is left alone."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
    if trim is not None:
        env["MALLOC_TRIM_THRESHOLD_"] = trim
    r = subprocess.run([sys.executable, "-c", _MALLOC_PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = [ln.split() for ln in r.stdout.splitlines()]
    if trim is None:
        assert [ln[0] for ln in lines[1:]] == ["untouched"] * 3
        return
    assert lines[0] == ["before", "1"], lines                                      # mapped for its own use
    assert lines[1] == ["raised", "0"] and lines[2] == ["raised", "0"], lines     # on the heap
    assert lines[3] == ["restored", "1"], lines                                    # mapped again, as Dask set it


def test_the_points_phase_is_read_from_the_progress_line():
    from rths_ros.bench.dask_cluster import points_phase_s
    text = ("  FACE s: [###---] 100/200 points done     3.1 s\r  FACE s: [######] 200/200 points done     6.4 s\n"
            "verdict: ...")
    assert points_phase_s(text) == 6.4
    assert points_phase_s("  FACE s: [###---] 100/200 points done     3.1 s") is None


def test_cluster_address_is_validated(tmp_path):
    pytest.importorskip("distributed")
    for bad in ("local:0", "local:x", ""):
        with pytest.raises(ParameterError, match="cluster"):
            face.open_cluster(bad)


def test_building_runner_delay_and_reference():
    """tau_add delays the command path by whole samples; the reference is the structure's floor 1
    (Insam 2022 §12.2: a_hat = 3.39e-4 m over t in (5.2, 36.8) s, 2|X|/N)."""
    r = BuildingPointRunner("case1", {"duration_s": 12.0})
    r0, r1 = r({"tau_add_s": 0.0}), r({"tau_add_s": 0.002})
    assert r1["delay_samples"] == 8 and r0["delay_samples"] == 0
    assert not r0["aborted"] and not r1["aborted"]
    e0 = face.e_value(r0, face.EMeasureSpec(window_s=(5.2, 12.0)), 0)
    e1 = face.e_value(r1, face.EMeasureSpec(window_s=(5.2, 12.0)), 0)
    assert e1 - e0 == pytest.approx(0.002, abs=0.0006)      # tau_FEI grows by about tau_add
    with pytest.raises(ParameterError, match="scenario"):
        BuildingPointRunner("building1")
    ref = BuildingPointRunner("case1").reference()
    a, f = ms.fft_peak(ref["z_ach"], ref["dt"], (5.2, 36.8))
    assert a == pytest.approx(3.39e-4, rel=0.02)


def test_building_runner_passes_the_converter_keys_to_the_controller():
    """quantise, quantisation_bits and saturation_m (tracking_controller.reference.* of the scenario) reach
    the reference controller, also behind tau_add; their values are validated there."""
    r = BuildingPointRunner("case1", {"duration_s": 6.0})
    assert r._split({})[1].converter() == (2.0 ** -18, 3.8)              # the benchmark's converters
    assert r._split({"quantise": False})[1].converter() is None
    assert r._split({"quantisation_bits": 8, "saturation_m": 0.01})[1].converter() == (2.0 ** -8, 0.01)
    assert r._split({"quantisation_bits": 8, "tau_add_s": 0.001})[1].inner.converter() == (2.0 ** -8, 3.8)
    a, b = r({}), r({"quantisation_bits": 8})
    assert not a["aborted"] and not b["aborted"]
    assert np.max(np.abs(a["z_ach"] - b["z_ach"])) > 1e-5           # a 4 mm step changes the run
    with pytest.raises(ParameterError, match="quantisation_bits"):
        BuildingPointRunner("case1", {"quantisation_bits": 1})


@pytest.mark.parametrize("name", sorted(p.name for p in SWEEPS.glob("*.yaml")))
def test_shipped_sweeps_are_valid(name):
    spec, _ = face.load_sweep(SWEEPS / name)
    runner = face.make_runner(spec, out_dir=Path(os.devnull).parent)     # builds and validates the scenario
    if spec.runner in ("vrths", "graph"):
        s = runner.scenario({spec.vary.parameter: spec.vary.values[0]})
        key = spec.vary.parameter
        assert key in {r["key"] for r in scn.parameter_table()}, key
        if "§12.3" in spec.description:
            assert s.numerical.contact_1d.d_num_kg_per_s == 50.0      # §12.3: d_NUM = 50 kg/s


def test_contact_sweep_has_the_thesis_points_of_extra_command_delay():
    """§12.3 with VFF: tau_add = 0..9 ms in steps of 1 ms."""
    spec, _ = face.load_sweep(SWEEPS / "contact_1d_tau_add.yaml")
    assert spec.runner == "graph" and spec.vary.parameter == "sim_plant.command_delay_steps"
    assert list(spec.vary.values) == list(range(10))


# ------------------------------------------------------------------------------------------------
# FACE numbers of docs/fidelity.md, section 5 (in process; each check is a shipped sweep file)


def _docs_sweep(name: str, tmp: Path, **change):
    spec, raw = face.load_sweep(SWEEPS / name)
    raw = {**raw, **change}
    spec = face.sweep_from_data(raw)
    return face.run_sweep(spec, tmp / spec.name, face.make_runner(spec, tmp / spec.name), workers=2, raw=raw,
                          progress=None), raw


def test_building_face_12_2_magnitude(tmp_path):
    """§12.2 magnitude, `config/sweeps/building_tau_add.yaml` (case 1, El Centro, tau_add 0..8 ms, linear
    in dB over the thesis's fit points tau_add = 1..6 ms, a_min from the run without added delay): thesis
    a_min 4.59e-4 m, a_hat 3.39e-4 m, a_pred 2.7e-4 m (20.2 %), estimate 69.9 %; with tau_add = 1..4 ms
    5.7 %.  docs/fidelity.md: a_min 4.564e-4 m, a_hat 3.369e-4 m, a_pred 2.784e-4 m, prediction error
    17.4 %, estimate 63.9 %; 1..4 ms: 3.305e-4 m, 1.9 %.  Tolerances: package values a_min, a_hat 1 %,
    a_pred 3 %, prediction errors 2 points, estimate 3 points; against the thesis a_min 3 %, a_hat 2 %,
    a_pred 5 %, prediction error 4 points, estimate 7 points, the 1..4 ms prediction error 4 points."""
    res, raw = _docs_sweep("building_tau_add.yaml", tmp_path)
    assert res["n_used"] == 6 and [p["parameter"] for p in res["points"] if not p["used"]] == [0.0, 0.007, 0.008]
    assert all(p["reason"] == "outside fit.parameter_range" for p in res["points"] if not p["used"])
    assert res["q_min"] == res["points"][0]["q"]                      # the test: tau_add = 0, not a fit point
    assert res["q_min"] == pytest.approx(4.59e-4, rel=0.03)           # thesis
    assert res["q_ref"] == pytest.approx(3.39e-4, rel=0.02)           # thesis
    assert res["q_pred"] == pytest.approx(2.7e-4, rel=0.05)           # thesis
    assert res["prediction_error"] == pytest.approx(0.202, abs=0.04)  # thesis
    assert res["error_estimate"] == pytest.approx(0.699, abs=0.07)    # thesis
    assert res["q_min"] == pytest.approx(4.564e-4, rel=0.01)
    assert res["q_ref"] == pytest.approx(3.369e-4, rel=0.01)
    assert res["q_pred"] == pytest.approx(2.784e-4, rel=0.03)
    assert res["prediction_error"] == pytest.approx(0.174, abs=0.02)
    assert res["error_estimate"] == pytest.approx(0.639, abs=0.03)
    assert res["e_min"] == pytest.approx(4.59e-3, abs=2e-4)           # tau_FEI of the reference controller
    assert res["tau_fei"]["slope_adapted"] == pytest.approx(1.0, abs=0.05)
    # the thesis's other point selection: tau_add = 1..4 ms predicts better than 1..6 ms
    spec4 = face.sweep_from_data({**raw, "fit": {"degree": 1, "db": True, "parameter_range": [0.001, 0.004]}})
    r4 = face.reanalyse(tmp_path / "building_tau_add", spec4)
    assert r4["q_pred"] == pytest.approx(3.305e-4, rel=0.03)
    assert r4["prediction_error"] == pytest.approx(0.019, abs=0.02)
    assert r4["prediction_error"] == pytest.approx(0.057, abs=0.04)   # thesis
    assert r4["prediction_error"] < res["prediction_error"] < 0.202


def test_building_face_12_2_frequency(tmp_path):
    """§12.2 frequency, `config/sweeps/building_ki.yaml` (K_i = 30..95 1/s, degree 2 in 1/K_i): f_hat =
    3.70 Hz (thesis 3.7 Hz); docs/fidelity.md: f_pred 4.02 Hz (8.7 %), and 3.40 Hz (8.2 %) against tau_FEI."""
    res, raw = _docs_sweep("building_ki.yaml", tmp_path)
    assert res["n_used"] == 14
    assert res["q_ref"] == pytest.approx(3.70, abs=0.04)
    assert res["q_pred"] == pytest.approx(4.02, abs=0.05)
    assert res["prediction_error"] == pytest.approx(0.087, abs=0.015)
    r_tau = face.reanalyse(tmp_path / "building_ki",
                           face.sweep_from_data({**raw, "e": {"measure": "tau_fei_adapted", "window_s": [5.2, 36.8]}}))
    assert r_tau["q_pred"] == pytest.approx(3.40, abs=0.1)
    assert r_tau["prediction_error"] == pytest.approx(0.082, abs=0.015)
    # The two fits bracket f_hat: against 1/K_i the extrapolation overshoots, against tau_FEI (not monotonic
    # in K_i) it bends down.  Since the force feedback follows the benchmark README (specimen force plus
    # noise, one sample late) the tau_FEI fit predicts marginally better (8.2 % against 8.7 %); before, it
    # was the worse one (16.5 % against 7.0 %).  The change comes from one FFT step (3.54 -> 3.70 Hz now at
    # K_i = 65 instead of 60 1/s), so the order rests on the FFT quantisation (docs/fidelity.md §12.2).
    assert r_tau["q_pred"] < res["q_ref"] < res["q_pred"]
    assert r_tau["prediction_error"] < res["prediction_error"]
    f = [p["q"] for p in res["points"]]
    assert f[6] < f[7] == f[-1]             # K_i = 60 below the last FFT step, 65..95 on it


def test_contact_face_12_3_magnitude_in_process(tmp_path):
    """§12.3 magnitude, `config/sweeps/contact_1d_tau_add.yaml` with the in-process backend (the graph
    reproduces it to 1e-6, test_graph_backend_reproduces_the_in_process_sweep): the thesis's points
    tau_add = 0..9 ms, none aborts; q = FFT peak of the detrended contact window.  docs/fidelity.md:
    tau_FEI(0) 4.48 ms, a_min 9.85e-5 m, a_pred 1.89e-5 m, a_hat 2.25e-5 m, prediction error 16.0 % (7.2 %
    with tau_add <= 6 ms); thesis derived 14.6 % (37 % / 57 %).  Tolerances: tau_FEI 0.1 ms, a_min and
    a_hat 1 %, a_pred 5 %, prediction errors 3 points (and 3 points from the thesis's 14.6 %)."""
    res, raw = _docs_sweep("contact_1d_tau_add.yaml", tmp_path, runner="vrths")
    assert res["n_used"] == 10 and all(p["used"] for p in res["points"])
    assert res["e_min"] == pytest.approx(4.48e-3, abs=1e-4)
    assert res["q_min"] == pytest.approx(9.85e-5, rel=0.01)
    assert res["q_ref"] == pytest.approx(2.251e-5, rel=0.01)
    assert res["q_pred"] == pytest.approx(1.89e-5, rel=0.05)
    assert res["prediction_error"] == pytest.approx(0.160, abs=0.03)
    assert res["prediction_error"] == pytest.approx(1.57 / 1.37 - 1, abs=0.03)    # thesis, derived
    assert res["error_estimate"] > 1.0 and res["test_error"] > 1.0      # the magnitude is not reproduced
    r6 = face.reanalyse(tmp_path / "contact_1d_tau_add",
                        face.sweep_from_data({**raw, "fit": {"degree": 1, "db": True, "parameter_range": [0, 6]}}))
    assert r6["prediction_error"] == pytest.approx(0.072, abs=0.03)


def test_contact_face_12_3_frequency(tmp_path):
    """§12.3 frequency, `config/sweeps/contact_1d_kpp.yaml` (K_Pp = 30..80 1/s, matrix-pencil frequency):
    e_track,rel falls with K_Pp; docs/fidelity.md: 6.93 -> 7.13 Hz, f_pred 7.18 Hz against the reference
    solution's 6.995 Hz (2.6 %)."""
    res, _ = _docs_sweep("contact_1d_kpp.yaml", tmp_path)
    used = [p for p in res["points"] if p["used"]]
    assert len(used) == 11
    e = [p["e"] for p in used]
    f = [p["q"] for p in used]
    assert e == sorted(e, reverse=True) and f == sorted(f)
    assert f[0] == pytest.approx(6.93, abs=0.03) and f[-1] == pytest.approx(7.13, abs=0.03)
    assert res["q_ref"] == pytest.approx(6.995, abs=0.01)
    assert res["q_pred"] == pytest.approx(7.18, abs=0.03)
    assert res["prediction_error"] == pytest.approx(0.026, abs=0.01)


def test_a_cluster_sweep_without_dask_installed_says_what_to_install(tmp_path, monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.split(".")[0] in ("distributed", "dask"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_dask)
    from rths_ros.analysis.face.spec import load_sweep
    spec = load_sweep(Path(__file__).resolve().parents[2] / "config" / "sweeps" / "contact_1d_kpp.yaml")[0]
    with pytest.raises(ParameterError, match="dask and distributed are not installed"):
        face.run_sweep(spec, tmp_path, lambda p: {}, cluster="local:1", check=False, progress=None)
