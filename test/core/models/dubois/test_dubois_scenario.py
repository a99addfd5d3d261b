"""du Bois et al.'s (2010) damper rig as a scenario of the damper-rig family (numerical.model = dubois_damper): the in-process
virtual run drives the rig study's loop (run_substructured) bit for bit, its measures are the study's test point,
transfer-dynamics cancellation by the fitted G2 model beats the actuator alone (§4.5), and the scenario checks
name the key."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual
from rths_ros.core.models.dubois.rig import IDENTITY, run_substructured
from rths_ros.core.platform.linear_actuator import LinearActuatorPath
from rths_ros.families.damper_rig.analysis import damper_metrics
from rths_ros.families.damper_rig.study import StudyParams, run_point
from rths_ros.params import ParameterError

NAME = "dubois_damper"
NO_TDC = ["numerical.dubois_damper.model.kind=G1", "numerical.dubois_damper.model.gain=1",
          "numerical.dubois_damper.model.tau_p_s=0"]


@pytest.fixture(scope="module")
def g2_run():
    s = scn.load(NAME, [])
    return s, run_virtual(s)


def test_virtual_run_is_the_rig_study_loop_bit_for_bit(g2_run):
    s, v = g2_run
    assert not v["aborted"] and v["k"].size == s.steps + 1 == 5001
    p = s.numerical.dubois_damper
    r = run_substructured(p.rig, p.model, p.predictor, p.amplitude_m, p.frequency_hz, (s.steps + 1) * s.loop.dt_s,
                          switches=p.switches, trip=p.trip, seed=p.noise_seed, ramp_s=p.ramp_s)
    assert np.array_equal(v["z_cmd"], r.x2_num) and np.array_equal(v["z_ach"], r.x2_phys)
    assert np.array_equal(v["f_meas"], r.f_phys)
    assert np.array_equal(v["b_cmd"][1:, 0], r.demand[:-1])       # the demand of step k+1 answers x2 of step k+1
    assert np.max(np.abs(v["z_cmd"])) > 5e-4 and np.max(np.abs(v["f_meas"])) > 100.0


def test_without_cancellation_the_measures_are_the_rig_studys_test_point():
    """The study's test point at 5 Hz (4 s settling, samples 4000-4999 recorded) is the scenario over 5000 samples
    (4.999 s) without cancellation: the same H and RMS; the shipped 5 s scenario ends one sample later."""
    study = StudyParams(settle_s=4.0, record_min_s=1.0, ramp_s=1.0, switch_rate_per_s=2.0)
    h, rms, _, n_set, f = run_point(study, IDENTITY, 0.001, 5.0, seed=1)
    assert f == 5.0 and n_set == 4000
    s = scn.load(NAME, NO_TDC + ["loop.duration_s=4.999"])
    m = damper_metrics(run_virtual(s), s)
    assert m["eval_window_s"] == 1.0
    assert m["H_abs"] == pytest.approx(abs(h), rel=1e-12) and m["rms_over_noise"] == pytest.approx(rms, rel=1e-12)
    s5 = scn.load(NAME, NO_TDC)
    assert damper_metrics(run_virtual(s5), s5)["H_abs"] == pytest.approx(abs(h), rel=1e-4)


def test_g2_cancellation_beats_the_actuator_alone(g2_run):
    """§4.5: every controller improves on the PID alone; G2 is acceptable (|H - 1| <= 0.25)."""
    s, v = g2_run
    g2 = damper_metrics(v, s)
    s0 = scn.load(NAME, NO_TDC)
    none = damper_metrics(run_virtual(s0), s0)
    assert g2["stable"] and none["stable"]
    assert g2["acceptable"] is True and none["acceptable"] is False
    assert g2["H_error"] == pytest.approx(0.113, abs=0.02) and none["H_error"] == pytest.approx(0.363, abs=0.03)
    assert g2["rms_over_noise"] < 0.5 * none["rms_over_noise"]
    assert abs(g2["H_phase_deg"]) < 0.5 * abs(none["H_phase_deg"])


def test_the_family_parts_are_the_damper_rig_objects():
    s = scn.load(NAME, [])
    path = factory.build_platform_path(s)
    assert isinstance(path, LinearActuatorPath) and path.shaper is not None and path.commander is None
    assert factory.build_force_blend(s) is not None and factory.build_plant(s).kinematics is None
    assert factory.interface_widths(s) == {"command": 1, "force": 1, "measured": 1, "state": 1}
    assert factory.plant_seed(s, 3) == 4
    path.reset()
    r = [path.command([0.001], [0.0]).length[0] for _ in range(3)]
    assert r[0] == 0.0 and 0.0 < r[2] < 0.001      # s_x ramps from 0 at 2/s: the demand grows with it


def test_a_demand_beyond_the_limit_aborts_the_run():
    s = scn.load(NAME, ["numerical.dubois_damper.amplitude_m=0.02", "numerical.dubois_damper.frequency_hz=6.3",
                        "safety.interface_limit_m=0.01"])
    v = run_virtual(s)
    assert v["aborted"] and "beyond safety.interface_limit_m = 0.01" in v["abort_reason"]
    m = damper_metrics(v, s, True, v["abort_reason"])
    assert m["stable"] is False and "H_abs" not in m


@pytest.mark.parametrize("over, key", [
    (["aff.enabled=true"], "aff.enabled"),
    (["plant=hardware"], "plant"),
    (["numerical.dubois_damper.rig.dt_s=0.002"], "numerical.dubois_damper.rig.dt_s"),
    (["numerical.dubois_damper.amplitude_m=0.5"], "amplitude_m"),
])
def test_scenario_checks_name_the_key(over, key):
    with pytest.raises(ParameterError, match=key.replace(".", r"\.")):
        scn.load(NAME, over)


#: the models fitted on the twin by `rths dubois qualify` (seed 1): numerical.dubois_damper.model overrides
FITTED = {
    "G1": ["kind=G1", "gain=1.1536006593601846", "tau_p_s=0.016937715111668587"],
    "G2": [],
    "G1D": ["kind=G1D", "gain=1.0419152212489473", "tau_p_s=0.0037360606964616724", "delay_s=0.00945679295782338"],
    "G2D": ["kind=G2D", "gain=110705.59115657087", "zeta=0.7951419593889589", "omega0_rad_s=327.6625957563487",
            "delay_s=0.007589262086382197"],
}


def test_every_controller_improves_on_the_pid_alone_and_the_delayed_ones_most():
    """§4.5 through the scenario at 5 Hz: RMS below the PID alone for every mode; the delayed models leave about
    half the RMS of G1 and G2 (docs/dubois_rig.md: 0.36)."""
    rms = {}
    for mode, over in FITTED.items():
        s = scn.load(NAME, ["numerical.dubois_damper.model." + o for o in over])
        rms[mode] = damper_metrics(run_virtual(s), s)["rms_over_noise"]
    s0 = scn.load(NAME, NO_TDC)
    none = damper_metrics(run_virtual(s0), s0)["rms_over_noise"]
    assert all(v < 0.5 * none for v in rms.values()), (rms, none)
    ratio = (rms["G1D"] + rms["G2D"]) / (rms["G1"] + rms["G2"])
    assert 0.25 < ratio < 0.6, ratio
