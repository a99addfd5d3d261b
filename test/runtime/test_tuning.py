"""Live tuning without a graph: which parameters a node takes during a run, when a change takes effect, the ramp of
a rate-limited gain, the events, the refusals, the descriptors and the report (rths_ros.runtime.tuning)."""
from types import SimpleNamespace

import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.core.learning.ilc.learner import IlcParams, PdIlc
from rths_ros.core.methods.passivity import PassivityController, PassivityParams
from rths_ros.runtime.ros_parameters import scenario_parameters
from rths_ros.runtime.tuning import TUNABLES, LiveTuning, tunables_of


def _p(name, value):
    return SimpleNamespace(name=name, value=value)


def _tuning(role="passivity_controller", mode="realtime", dt=0.001):
    applied, events = [], []
    current = {"passivity.g_p_kg_per_s": 1600.0, "passivity.alpha_max_kg_per_s": 1e4, "ilc.beta_per_s": 10.0,
               "ilc.gamma": 1.0}
    t = LiveTuning(role, mode, dt, current, lambda k, v: applied.append((k, v)),
                   lambda step, trial, reason: events.append((step, trial, reason)))
    return t, applied, events


def test_a_rate_limited_gain_ramps_from_the_next_step_and_reports_start_and_end():
    t, applied, events = _tuning()
    r = t.on_set([_p("passivity.alpha_max_kg_per_s", 5000.0)])
    assert r.successful and applied == []                       # nothing changes between step boundaries
    for k in range(100, 400):
        t.tick(k)
    # 20000 kg/s per second at 1 ms: 20 kg/s per step, 5000 kg/s down in 250 steps (steps 100..349)
    values = [v for _, v in applied]
    assert values[0] == pytest.approx(9980.0) and values[-1] == 5000.0 and len(values) == 250
    assert np.all(np.diff(values) == pytest.approx(-20.0)) and t.pending == {}
    assert events == [(100, 0, "tuned passivity.alpha_max_kg_per_s: 10000 -> 5000 requested; 9980 from step 100, "
                                "ramping at 20000 per second"),
                      (349, 0, "tuned passivity.alpha_max_kg_per_s: reached 5000 at step 349")]
    assert t.changes == [{"key": "passivity.alpha_max_kg_per_s", "from": 10000.0, "target": 5000.0, "step": 100,
                          "trial": 0, "reached_step": 349}]


def test_a_new_request_during_a_ramp_turns_it_and_is_reported_anew():
    t, applied, events = _tuning()
    t.on_set([_p("passivity.g_p_kg_per_s", 2000.0)])          # 2 kg/s per step at 1 ms
    for k in range(10):
        t.tick(k)
    assert t.current["passivity.g_p_kg_per_s"] == pytest.approx(1620.0)
    t.on_set([_p("passivity.g_p_kg_per_s", 1610.0)])
    for k in range(10, 20):
        t.tick(k)
    assert t.current["passivity.g_p_kg_per_s"] == pytest.approx(1610.0)
    assert [e[2].split(":")[1].strip() for e in events] == ["1600 -> 2000 requested; 1602 from step 0, ramping at "
                                                            "2000 per second", "1620 -> 1610 requested; 1618 from "
                                                            "step 10, ramping at 2000 per second", "reached 1610 at "
                                                            "step 14"]


def test_the_ilc_gains_apply_whole_at_the_learning_update():
    t, applied, events = _tuning("ilc_learner")
    assert t.on_set([_p("ilc.beta_per_s", 20.0), _p("ilc.gamma", 0.5)]).successful
    t.tick(1000, trial=0)
    assert applied == [("ilc.beta_per_s", 20.0), ("ilc.gamma", 0.5)]
    assert [e[:2] for e in events] == [(1000, 0), (1000, 0)] and "10 -> 20 requested; 20 from step 1000" in events[0][2]
    ilc = PdIlc(IlcParams(beta_per_s=10.0, gamma=1.0, injection="position"), 6, 100, 0.001, k_pp_per_s=20.0)
    ilc.set_gains(beta_per_s=20.0, gamma=0.5)
    assert (ilc.beta, ilc.gamma) == (pytest.approx(1.0), pytest.approx(0.025))   # scaled by 1/K_Pp as built


def test_refusals_name_the_tunables_and_lockstep_takes_no_change():
    t, _, _ = _tuning()
    # a set through the parameter services is refused before rclpy (TunableParameters.set_parameters_atomically)
    assert t.refusal(["loop.dt_s"]) == ("loop.dt_s: read-only during a run (a scenario value); tunable on "
                                        "passivity_controller: passivity.g_p_kg_per_s, "
                                        "passivity.alpha_max_kg_per_s (docs/live.md)")
    # the on-set callback lets the node's own declarations of other parameters pass, and queues nothing for them
    assert t.on_set([_p("use_sim_time", False)]).successful and t.pending == {}
    other, _, _ = _tuning("sim_plant")
    why = other.refusal(["sim_plant.cascade.gains"])
    assert "tunable only on passivity_controller: passivity.g_p_kg_per_s" in why and "on ilc_learner: ilc.beta_per_s" in why
    lock, _, _ = _tuning(mode="lockstep")
    r = lock.on_set([_p("passivity.g_p_kg_per_s", 100.0)])
    assert not r.successful and "deterministic" in r.reason and "--set passivity.g_p_kg_per_s=VALUE" in r.reason
    assert not t.on_set([_p("passivity.g_p_kg_per_s", float("nan"))]).successful and t.pending == {}


def test_only_a_nodes_tunables_are_writable_and_say_when_they_take_effect():
    s = scn.load("contact_1d", ["passivity.enabled=true"])
    desc = {k: d for k, _, d in scenario_parameters(s, tunables_of("passivity_controller"))}
    for key in ("passivity.g_p_kg_per_s", "passivity.alpha_max_kg_per_s"):
        assert desc[key].read_only is False and "TUNABLE during a realtime run" in desc[key].description
        assert desc[key].floating_point_range[0].to_value > 0                   # the key's declared range stays
    assert desc["loop.dt_s"].read_only and desc["ilc.beta_per_s"].read_only
    plain = {k: d for k, _, d in scenario_parameters(s)}
    assert all(d.read_only for d in plain.values())
    assert set(TUNABLES) == {"passivity_controller", "ilc_learner"}


def test_the_passivity_gains_change_the_damping_from_the_next_update():
    c = PassivityController(PassivityParams(enabled=True, alpha_max_kg_per_s=1e4, t_error_s=0.0, t_tot_s=0.0))
    c.update(10.0, 0.0, 0.1, 10.0, 0.1)        # energy generated by the interface: alpha grows
    c.update(10.0, 0.0, 0.1, 10.0, 0.1)
    assert 0 < c.alpha
    c.set_gains(alpha_max_kg_per_s=1.0)
    c.update(10.0, 0.0, 0.1, 10.0, 0.1)
    assert c.alpha == 1.0 and c.alpha_max == 1.0
    off = PassivityController(PassivityParams(enabled=False))
    off.set_gains(g_p_kg_per_s=5000.0)
    assert off.g_p == 0.0                       # the damping stays off when the scenario has it off


def test_the_report_lists_the_changes():
    import tempfile
    from pathlib import Path

    from rths_ros.analysis.report import write_report
    with tempfile.TemporaryDirectory() as d:
        m = {"stable": True, "tuning": [{"node": "passivity_controller", "step": 1200, "trial": 0,
                                         "change": "tuned passivity.alpha_max_kg_per_s: 10000 -> 5000 requested"}]}
        text = Path(write_report(m, {"name": "x"}, [], d)).read_text()
    assert "## Live tuning" in text
    assert "| passivity_controller | 1200 | 0 | tuned passivity.alpha_max_kg_per_s: 10000 -> 5000 requested |" in text


def test_a_viewers_parameter_names_are_node_then_key():
    from rths_ros.nodes.live_params import split_name, viewer_name
    assert viewer_name("passivity_controller", "passivity.g_p_kg_per_s") == "/passivity_controller.passivity.g_p_kg_per_s"
    assert split_name("/passivity_controller.passivity.g_p_kg_per_s") == ("passivity_controller", "passivity.g_p_kg_per_s")
    assert split_name("ilc_learner.ilc.gamma") == ("ilc_learner", "ilc.gamma")
    for bad in ("", "/", "/passivity_controller", "/.x", "passivity_controller."):
        assert split_name(bad) is None, bad
