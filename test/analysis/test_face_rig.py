"""FACE on a rig (docs/fidelity.md, "FACE on your rig"): the sweep degraded by the commander's added delay, in
realtime, on any plant; the check before the first point that reports every problem at once; the verdict with
its thresholds; a short realtime sweep on the emulated ros2_control rig."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from rths_ros import cli
from rths_ros.analysis.face import execution, preflight
from rths_ros.analysis.face.fit import verdict
from rths_ros.analysis.face.spec import VerdictSpec, load_sweep, sweep_from_data

ROOT = Path(__file__).resolve().parents[2]
RIG_SWEEP = ROOT / "config" / "sweeps" / "contact_1d_rig_delay.yaml"
#: the emulated ros2_control rig (a Python process on a possibly busy two-core machine: tolerant timeouts)
EMULATED_RIG = ["--plant", "ros2_control", "--set", "ros2_control.emulate=true",
                "--set", "standard_interfaces.wrench_input_topic=/ft_sensor/wrench",
                "--set", "ros2_control.state_timeout_s=0.5", "--set", "safety.watchdog_steps=250"]


def _no_point_may_run(monkeypatch):
    ran = []

    def forbidden(*_a, **_k):
        ran.append(1)
        raise AssertionError("a point was run although the sweep cannot run")
    monkeypatch.setattr(execution.ScenarioPointRunner, "__call__", forbidden)
    import rths_ros.runner
    monkeypatch.setattr(rths_ros.runner, "run_scenario", forbidden)
    return ran


def test_every_problem_is_reported_before_the_first_point(tmp_path, monkeypatch, capsys):
    """Three kinds of problem in one sweep: two values the scenario refuses, a plant that cannot run in the sweep's
    mode (every other value), an analysis window beyond the record; all listed, exit 2, nothing run, no output."""
    ran = _no_point_may_run(monkeypatch)
    data = yaml.safe_load(RIG_SWEEP.read_text())
    data["mode"] = "lockstep"                              # ros2_control needs realtime
    data["vary"]["values"] = [0, 2, -1, 4, 5000]           # -1 and 5000 are outside 0..1000
    data["q"]["window_s"] = [0.55, 2.5]                    # beyond loop.duration_s = 1.5 s
    sweep = tmp_path / "bad.yaml"
    sweep.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    code = cli.main(["face", str(sweep), "--out", str(out), "--plant", "ros2_control",
                     "--set", "ros2_control.emulate=true", "--set", "standard_interfaces.wrench_input_topic=/ft"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "cannot run (4 problems; nothing was run)" in err, err
    assert "(platform.commander.added_delay_steps = -1): platform.commander.added_delay_steps: -1 is out of range" in err
    assert "(platform.commander.added_delay_steps = 5000): platform.commander.added_delay_steps: 5000" in err, err
    assert "added_delay_steps = 0, 2, 4" in err and "'ros2_control' is not allowed with loop.mode = 'lockstep'" in err
    assert "q.window_s: [0.55, 2.5] ends after loop.duration_s = 1.5 s" in err, err
    assert not ran and not (out / "points").exists()


def test_the_check_names_a_missing_reference_the_in_process_runner_on_a_rig_and_a_cluster_for_a_rig(tmp_path):
    base = yaml.safe_load(RIG_SWEEP.read_text())
    # the in-process runner is the twin in lockstep: not on a rig, not in realtime
    spec = sweep_from_data({**base, "runner": "vrths", "plant": "ros2_control"})
    problems = preflight.check_sweep(spec, tmp_path)
    assert any("runner: 'vrths' is not allowed with mode 'realtime' and plant 'ros2_control'" in p for p in problems)
    # a realtime sweep on a rig runs one point at a time: no cluster
    spec = sweep_from_data({**base, "plant": "ros2_control",
                            "overrides": {**base["overrides"], "ros2_control.emulate": True,
                                          "standard_interfaces.wrench_input_topic": "/ft_sensor/wrench"}})
    assert preflight.check_sweep(spec, tmp_path) == []
    assert any("--cluster local:2" in p for p in preflight.check_sweep(spec, tmp_path, cluster="local:2"))
    # a model without a reference solution
    spec = sweep_from_data({"name": "x", "runner": "vrths", "scenario": "contact_1d_fe_beam",
                            "vary": {"parameter": "platform.commander.added_delay_steps", "values": [0, 1, 2, 3]},
                            "reference": {"source": "runner"}})
    assert any("has no reference solution" in p for p in preflight.check_sweep(spec, tmp_path))
    # plant and mode belong to the sweep, not to its overrides
    with pytest.raises(Exception, match="overrides.plant: is not allowed"):
        sweep_from_data({**base, "overrides": {**base["overrides"], "plant": "ros2_control"}})


def test_the_shipped_rig_sweep_is_valid_on_the_twin_and_on_the_rig(tmp_path):
    spec, raw = load_sweep(RIG_SWEEP)
    assert spec.runner == "graph" and spec.mode == "realtime" and spec.plant == ""
    assert spec.vary.parameter == "platform.commander.added_delay_steps" and len(spec.vary.values) >= 4
    assert preflight.check_sweep(spec, tmp_path) == []
    from rths_ros.analysis.face.cli import with_command_line
    rig = sweep_from_data(with_command_line(raw, ["plant=ros2_control", "ros2_control.emulate=true",
                                                  "standard_interfaces.wrench_input_topic=/ft_sensor/wrench"]))
    assert rig.plant == "ros2_control" and rig.overrides["ros2_control.emulate"] is True
    assert preflight.check_sweep(rig, tmp_path) == []
    runner = execution.make_runner(rig, tmp_path)
    assert runner.one_at_a_time and runner.setup == {"runner": "graph", "plant": "ros2_control", "mode": "realtime",
                                                     "composed": True}


@pytest.mark.parametrize("ee, pe, ok", [(0.04, 0.1, True), (0.04, None, True), (0.2, 0.1, False),
                                        (0.04, 0.5, False), (math.nan, None, False)])
def test_the_verdict_states_its_thresholds(ee, pe, ok):
    res = {"error_estimate": ee, "prediction_error": pe, "q_pred": 6.8, "q_min": 6.5,
           "q_ref": None if pe is None else 6.9}
    v = verdict(res, VerdictSpec(max_error_estimate=0.1, max_prediction_error=0.2),
                {"plant": "ros2_control", "mode": "realtime"})
    assert v["acceptable"] is ok
    assert v["text"].startswith("rig fidelity " + ("acceptable" if ok else "NOT acceptable"))
    assert "threshold 10.0 %" in v["text"] and "extrapolated q(0) = 6.8" in v["text"]
    assert ("threshold 20.0 %" in v["text"]) is (pe is not None)
    assert v["thresholds"] == {"max_error_estimate": 0.1, "max_prediction_error": 0.2, "monotonic_e": True}


def test_the_verdict_refuses_a_sweep_whose_e_does_not_follow_the_degradation():
    """On a rig whose own timing jitter exceeds the added delay, e jumps around: FACE's premise fails."""
    pts = [{"parameter": v, "e": e, "used": True} for v, e in ((0, 0.037), (2, 0.024), (4, 0.032), (6, 0.036))]
    res = {"error_estimate": 0.03, "prediction_error": None, "q_pred": 5.7, "q_min": 5.9, "q_ref": None,
           "points": pts, "parameter": "platform.commander.added_delay_steps"}
    v = verdict(res, VerdictSpec(), {"plant": "ros2_control", "mode": "realtime"})
    assert v["acceptable"] is False and "e monotonic in platform.commander.added_delay_steps: no" in v["text"]
    pts[1]["e"] = 0.040                      # 0.037 < 0.040: still not monotonic
    assert verdict(res, VerdictSpec(), {})["acceptable"] is False
    for p, e in zip(pts, (0.020, 0.024, 0.028, 0.032)):
        p["e"] = e
    assert verdict(res, VerdictSpec(), {})["acceptable"] is True
    assert verdict({**res, "points": pts[::-1]}, VerdictSpec(), {})["acceptable"] is True   # order of the rows
    pts[2]["e"] = 0.5
    assert verdict(res, VerdictSpec(monotonic_e=False), {})["acceptable"] is True


def test_a_short_realtime_face_sweep_on_the_emulated_ros2_control_rig_gives_a_verdict(tmp_path, capsys):
    """The shipped sweep (4 points of 1.5 s) on the emulated ros2_control rig: every point runs through the rig's
    topics in realtime, one at a time; the result carries the prediction error against the reference solution and
    the verdict with its thresholds (its value depends on the machine's load, the rig being a Python process)."""
    out = tmp_path / "face"
    code = cli.main(["face", str(RIG_SWEEP), "--out", str(out), "--retries", "1", *EMULATED_RIG])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "one at a time" in printed.out and "5/5 points" in printed.out
    assert "prediction error" in printed.out and "verdict: rig fidelity" in printed.out, printed.out
    res = json.loads((out / "face.json").read_text())
    assert res["setup"] == {"runner": "graph", "plant": "ros2_control", "mode": "realtime", "composed": True}
    assert res["q_ref"] is not None and res["prediction_error"] is not None
    v = res["verdict"]
    assert isinstance(v["acceptable"], bool) and v["thresholds"]["max_error_estimate"] == 0.1
    assert [c["name"].split(" ")[0] for c in v["checks"]] == ["error", "prediction", "e"]
    report = (out / "report.md").read_text()
    assert "**Verdict: rig fidelity" in report and "| threshold |" in report.replace("threshold | passed", "threshold |")
    saved = yaml.safe_load((out / "sweep.yaml").read_text())
    assert saved["plant"] == "ros2_control" and saved["overrides"]["ros2_control.emulate"] is True
    for p in (out / "runs").iterdir():             # every point ran on the rig: the emulator's counts
        emu = json.loads((p / "timing" / "ros2_control_emulator.json").read_text())
        assert emu["commands"] > 0, p.name
    assert sum(p["used"] for p in res["points"]) >= 4


class _AbortsFirst:
    """A point runner whose first run of every point aborts (as a realtime run on a rig may)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, {}

    def __call__(self, point):
        key = tuple(point.items())
        self.calls[key] = self.calls.get(key, 0) + 1
        rec = self.inner(point)
        if self.calls[key] == 1:
            return {**rec, "aborted": True, "abort_reason": "stall"}
        return rec


def test_an_aborted_point_runs_again_with_retries(tmp_path):
    from rths_ros.analysis.face.engine import run_sweep
    spec = sweep_from_data({"name": "r", "runner": "linear_vrths", "scenario": "spring_12_1_2",
                            "overrides": {"duration_s": 1.0}, "vary": {"parameter": "tau_add_steps",
                                                                      "values": [0, 2, 4, 6]},
                            "e": {"measure": "tau_fei_adapted"}, "q": {"measure": "peak_amplitude"}})
    flaky = _AbortsFirst(execution.make_runner(spec))
    res = run_sweep(spec, tmp_path / "a", flaky, workers=1, progress=None, retries=1)
    assert res["n_used"] == 4 and set(flaky.calls.values()) == {2}
    flaky = _AbortsFirst(execution.make_runner(spec))
    with pytest.raises(Exception, match="only 0 usable points"):
        run_sweep(spec, tmp_path / "b", flaky, workers=1, progress=None)     # without retries: all dropped
