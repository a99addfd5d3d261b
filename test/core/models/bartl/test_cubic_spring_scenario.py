"""Bartl's (2019) cubic-spring rig as a scenario of the linear-motor family (numerical.model = cubic_spring): the
in-process virtual run drives the same loop as the rig study's simulate_cubic (bit for bit, with the passivity
controller, the AFF and both), reproduces the rig study's rows and findings (docs/bartl_rigs.md): without the
passivity controller the coupled test goes unstable and aborts at the interface limit, unsupervised LMS runs away,
the supervisor stabilises it, PBC + AFF removes the offset of pure AFF.  The scenario checks name the key."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual
from rths_ros.core.models.bartl.cubic_spring import CubicSpringParams, reference_response
from rths_ros.core.models.bartl.loop import default_pbc, simulate_cubic
from rths_ros.core.models.bartl.rths import CubicSpringScenarioParams, reference_motion
from rths_ros.core.platform.commander import CommandRejected, LegCommandArrays
from rths_ros.core.platform.linear_actuator import DirectForce, LinearActuatorPath
from rths_ros.families.linear_motor.analysis import linear_motor_metrics, study_layout
from rths_ros.params import ParameterError

NAME = "cubic_spring_pbc"


@pytest.fixture(scope="module")
def pbc_run():
    s = scn.load(NAME, [])
    return s, run_virtual(s)


def test_virtual_run_is_the_rig_study_loop_bit_for_bit(pbc_run):
    s, v = pbc_run
    assert not v["aborted"] and v["k"].size == s.steps + 1 == 4001
    core = simulate_cubic("pbc", 10.0, 10.0, 4.0, pbc=default_pbc(1e-3))
    r = study_layout(v, s)
    n = core["y_vir"].size
    for key in ("y_vir", "y_exp", "lam_vir", "g", "saturated"):
        assert np.array_equal(r[key][:n], core[key]), key
    assert np.max(np.abs(v["z_cmd"])) > 5e-3       # the test moves: the equality is not one of zeros


def test_pure_pbc_reproduces_the_rig_study_row(pbc_run):
    """docs/bartl_rigs.md, 10 N / 10 Hz, pure PBC: y_EXP/y_VIR 1.010, phase -24.0 deg, no offset, y_VIR/reference
    0.710 (11 s runs there, 4 s here)."""
    s, v = pbc_run
    m, _ = linear_motor_metrics(v, s)
    assert m["stable"] is True, m["stability_reason"]
    assert m["ratio"] == pytest.approx(1.010, abs=0.01)
    assert m["phase_deg"] == pytest.approx(-24.0, abs=1.5)
    assert abs(m["offset_mm"]) < 0.02
    assert m["ref_ratio"] == pytest.approx(0.71, abs=0.03)
    assert m["sat_fraction"] == 0.0 and m["E_diss_J"] > 0.5


def test_without_passivity_control_the_coupled_test_is_unstable_and_aborts():
    s = scn.load(NAME, ["passivity.enabled=false"])
    v = run_virtual(s)
    assert v["aborted"]
    assert "actuator demand" in v["abort_reason"] and "safety.interface_limit_m = 0.05" in v["abort_reason"]
    assert 0.3 < v["k"].size * s.loop.dt_s < 2.0       # it grows for a few hundred ms, then hits the limit
    # the rig study's loop without PBC: the demand sits in the stroke saturation
    core = simulate_cubic("pbc", 10.0, 10.0, 4.0, pbc=default_pbc(1e-3, enabled=False))
    assert np.mean(core["saturated"][2000:]) > 0.3
    m, _ = linear_motor_metrics(v, s, aborted=True, abort_reason=v["abort_reason"])
    assert m["stable"] is False and "aborted" in m["stability_reason"]


def test_reference_motion_is_the_rig_modules_reference():
    p = CubicSpringScenarioParams(excitation_amplitude_n=40.0, excitation_frequency_hz=20.0)
    t = np.arange(2000) * 1e-3
    ours = reference_motion(p, t)
    theirs = reference_response(20.0, 40.0, CubicSpringParams(), t_end_s=2.0)["x"]
    assert np.max(np.abs(ours - theirs)) < 1e-8 * np.max(np.abs(theirs)) + 1e-12
    late = reference_motion(CubicSpringScenarioParams(excitation_on_s=0.5), t)
    assert np.all(late[t < 0.5] == 0.0) and np.max(np.abs(late)) > 1e-3


def test_the_family_parts_are_the_linear_actuator_objects():
    s = scn.load(NAME, [])
    path, force, plant = factory.build_platform_path(s), factory.build_force_path(s), factory.build_plant(s)
    assert isinstance(path, LinearActuatorPath) and path.commander is None and path.closed_loop is False
    assert isinstance(force.processor, DirectForce) and plant.kinematics is None
    assert factory.interface_widths(s) == {"command": 1, "force": 1, "measured": 1, "state": 1}
    assert factory.plant_seed(s, 2) == s.numerical.cubic_spring.seed + 2
    out = plant.reset(1)
    assert out.lengths[1] == pytest.approx(0.0, abs=1e-6) and out.wrench[0] == pytest.approx(0.5, abs=0.1)


def test_linear_actuator_path_refuses_what_it_must_not_command():
    path = LinearActuatorPath(0.05)
    cmd = path.command([0.01], [0.2])
    assert cmd.length[0] == 0.01 and cmd.velocity[0] == 0.2 and not cmd.length[1:].any()
    for bad in (0.0501, -0.06, float("nan"), float("inf")):
        with pytest.raises(CommandRejected, match="safety.interface_limit_m = 0.05"):
            path.command([bad], [0.0])
    c = LegCommandArrays()
    c.length[0] = 0.07
    with pytest.raises(CommandRejected):
        path.check(c)
    assert path.achieved(np.arange(6.0), np.arange(6.0) + 1) == ([0.0], [1.0])
    assert DirectForce().process([3.5, 1, 2, 0, 0, 0]) == (3.5, 3.5, True)


@pytest.mark.parametrize("over, key", [
    (["ilc.enabled=true"], "ilc.enabled"),
    (["numerical.cubic_spring.displacement_control=false"], "numerical.cubic_spring.displacement_control"),
    (["aff.enabled=true"], "numerical.cubic_spring.excitation_on_s"),
    (["aff.enabled=true", "numerical.cubic_spring.excitation_on_s=1.001",
      "numerical.cubic_spring.excitation_frequency_hz=20"], "numerical.cubic_spring.aff.frequencies_hz"),
    (["plant=hardware"], "plant"),
    (["numerical.cubic_spring.dt_s=0.0005"], "numerical.cubic_spring.dt_s"),
])
def test_scenario_checks_name_the_key(over, key):
    with pytest.raises(ParameterError, match=key.replace(".", r"\.")):
        scn.load(NAME, over)


RLS_SIMULTANEOUS = ["numerical.cubic_spring.aff.law=rls", "numerical.cubic_spring.aff.simultaneous=true",
                    "numerical.cubic_spring.aff.supervisor=false"]


@pytest.mark.parametrize("name, strategy, over", [("cubic_spring_aff_supervised", "aff", []),
                                                  ("cubic_spring_aff_supervised", "aff", RLS_SIMULTANEOUS),
                                                  ("cubic_spring_pbc_aff", "pbc_aff", [])])
def test_aff_scenarios_are_the_rig_study_loop_bit_for_bit(name, strategy, over):
    """LMS with the supervisor, QR-RLS with simultaneous identification (Alg. 5), and PBC + LMS."""
    s = scn.load(name, ["loop.duration_s=3"] + over)
    v = run_virtual(s)
    p = s.numerical.cubic_spring
    assert not v["aborted"] and s.aff.enabled and "aff_learner" in s.run_nodes
    core = simulate_cubic(strategy, 10.0, 10.0, 3.0, aff=p.aff, pbc=s.passivity, t_on_s=p.excitation_on_s)
    r = study_layout(v, s)
    for key in ("y_vir", "y_exp", "lam_vir", "x_d"):
        mine = r[key] if key != "x_d" else v["b_cmd"][:, 0]      # the demand of step k (0: the rig at rest)
        assert np.array_equal(mine[:3000], core[key]), key
    assert np.max(np.abs(core["x_d"][:1000])) > 1e-4     # the identification moves the motor before f_ext


def test_supervisor_stabilises_the_lms_that_runs_away_alone():
    """§6.2.1: LMS with mu_init = 0.1 is unstable alone; the supervisor stabilises it in < 0.5 s with about 3 W of
    peak outflow; pure AFF synchronises phase and amplitude but keeps an offset (docs: 0.5 mm)."""
    s = scn.load("cubic_spring_aff_supervised", ["numerical.cubic_spring.aff.supervisor=false"])
    v = run_virtual(s)
    assert v["aborted"] and "actuator demand" in v["abort_reason"] and v["k"].size < 2000
    s = scn.load("cubic_spring_aff_supervised", [])
    m, _ = linear_motor_metrics(run_virtual(s), s)
    assert m["stable"] is True and m["t_stab_s"] is not None and m["t_stab_s"] < 0.5
    assert 0.5 < m["p_out_max_w"] < 10.0
    assert m["ratio"] == pytest.approx(1.0, abs=0.01) and abs(m["phase_deg"]) < 1.0
    assert m["offset_mm"] == pytest.approx(0.5, abs=0.1)


def test_pbc_with_aff_removes_the_offset_and_the_phase_error():
    s = scn.load("cubic_spring_pbc_aff", [])
    m, _ = linear_motor_metrics(run_virtual(s), s)
    assert m["stable"] is True and abs(m["offset_mm"]) < 0.05 and abs(m["phase_deg"]) < 1.0
    assert m["ratio"] == pytest.approx(1.0, abs=0.01) and m["sync_error"] < 0.02
