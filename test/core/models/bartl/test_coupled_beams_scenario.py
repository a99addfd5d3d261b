"""Bartl's (2019) coupled-beam rig as a scenario of the two-shaker family (numerical.model = coupled_beams): the
in-process virtual run drives the same loop as the rig study's simulate_beams (bit for bit, with the two-DoF AFF
split into learner and platform halves), the scenario synchronises as the rig study does, its objects keep the
protocols' widths and message mapping, and the scenario checks name the key."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual
from rths_ros.core.learning.aff.harmonic import basis_matrix
from rths_ros.core.models.bartl.beams import simulate_beams
from rths_ros.core.models.bartl.beams_rths import CoupledBeamsAff, PlateForce, ShakerPath, rig_of
from rths_ros.core.platform.commander import CommandRejected
from rths_ros.families.shaker_pair.analysis import SYNC_TOL, shaker_pair_metrics, study_layout
from rths_ros.params import ParameterError

NAME = "coupled_beams_aff"
#: a short run: 0.5 s of identification, 0.3 s with the excitation on
SHORT = ["loop.duration_s=0.8", "numerical.coupled_beams.aff.t_id_s=0.5"]


@pytest.fixture(scope="module")
def short_run():
    s = scn.load(NAME, SHORT)
    return s, run_virtual(s)


def test_virtual_run_is_the_rig_study_loop_bit_for_bit(short_run):
    s, v = short_run
    assert not v["aborted"] and v["k"].size == s.steps + 1 == 4001
    p = s.numerical.coupled_beams
    r = study_layout(v, s)
    n = r["t"].size
    core = simulate_beams(p.aff, p.excitation_frequency_hz, p.excitation_amplitude_n, n * s.loop.dt_s,
                          rig=rig_of(p, s.loop.dt_s))
    for key in ("y_vir", "y_exp", "u", "g", "f_ext"):
        assert np.array_equal(r[key], core[key][:n]), key
    # the graph's step k is the study's sample k+1: its last measured state is the study's sample n
    core1 = simulate_beams(p.aff, p.excitation_frequency_hz, p.excitation_amplitude_n, (n + 1) * s.loop.dt_s,
                           rig=rig_of(p, s.loop.dt_s))
    assert np.array_equal(v["q_ach"][-1], core1["y_exp"][n])
    # the equality is not one of zeros: the shakers move both points by micrometres, the excitation is on
    assert np.max(np.abs(v["q_ach"])) > 1e-5 and np.max(np.abs(r["u"])) > 0.1 and r["f_ext"][-1] != 0.0
    # the interface force is lambda_EXP of the plate model, through the wrench's force.z and torque.y
    assert np.array_equal(v["measured"][:, 0], v["wrench"][:, 2])
    assert np.array_equal(v["measured"][:, 1], v["wrench"][:, 4])


def test_the_default_scenario_synchronises_both_actuator_points():
    """60 Hz, 3 s of identification and 3 s with the excitation on (docs/bartl_rigs.md, "Coupled beams through
    the node graph"): both points follow the virtual beam within a few per cent, and the virtual beam's interface
    motion is the coupled reference's."""
    s = scn.load(NAME)
    v = run_virtual(s)
    m, _ = shaker_pair_metrics(v, s)
    assert m["stable"] is True and m["synchronised"] is True, m["stability_reason"]
    assert m["sync_error"] < 0.04
    assert m["ratio"][0] == pytest.approx(1.0, abs=0.03) and m["ratio"][1] == pytest.approx(1.0, abs=0.03)
    assert abs(m["phase_deg"][0]) < 3.0 and abs(m["phase_deg"][1]) < 3.0
    assert m["ref_ratio_z"] == pytest.approx(1.0, abs=0.02) and m["ref_ratio_alpha"] == pytest.approx(1.0, abs=0.02)


def test_before_the_filter_converges_the_measures_say_not_synchronised(short_run):
    s, v = short_run
    m, _ = shaker_pair_metrics(v, s)
    assert m["sync_error"] > SYNC_TOL and m["synchronised"] is False


def test_the_coefficients_regroup_theta_per_shaker():
    """Row r of the published coefficients, evaluated with the leg filters' kernel, is u_r = (W(t) theta)_r."""
    s = scn.load(NAME, ["numerical.coupled_beams.aff.frequencies_hz=[60.0, 180.0]"])
    aff = CoupledBeamsAff(s.numerical.coupled_beams, s.loop.dt_s)
    rng = np.random.default_rng(3)
    aff.filt.theta_app[:] = rng.standard_normal(aff.filt.theta_app.size)
    for step in (0, 7, 1234):
        u = aff.feedforward(step=step)
        w = basis_matrix(aff.omegas, step * s.loop.dt_s, 2)
        assert np.allclose(u[:2], w @ aff.filt.theta_app, rtol=1e-13, atol=1e-15)
        assert not u[2:].any()
        # through the message: six rows, flattened
        msg = aff.coefficients.ravel().copy()
        assert np.array_equal(aff.feedforward(theta=msg, step=step), u)


def test_the_widths_and_the_message_mapping():
    s = scn.load(NAME)
    assert factory.interface_widths(s) == {"command": 2, "force": 2, "measured": 2, "state": 2}
    plant = factory.build_plant(s)
    out = plant.reset(0)
    assert not out.lengths.any() and not out.wrench.any()        # sample 0: the rig at rest
    out = plant.step(np.array([0.3, -0.2, 0, 0, 0, 0]))
    assert out.currents[0] == 0.3 and out.currents[1] == -0.2
    assert out.lengths[:2].any() and not out.lengths[2:].any()
    assert out.wrench[2] != 0.0 and out.wrench[4] != 0.0
    assert out.wrench[[0, 1, 3, 5]].tolist() == [0.0, 0.0, 0.0, 0.0]
    force, measured, contact = PlateForce().process(out.wrench)
    assert force == measured == (out.wrench[2], out.wrench[4]) and contact is True


def test_the_shaker_path_refuses_what_is_beyond_its_limits():
    path = ShakerPath(0.05, 20.0)
    path.reset()
    cmd = path.command([0.01, -0.01], [0.0, 0.0])
    assert not cmd.length.any()                           # pure AFF: the demand is the filter's alone
    path.add_feedforward(cmd, np.array([1.5, -2.0, 0, 0, 0, 0]))
    assert cmd.length[:2].tolist() == [1.5, -2.0] and cmd.feedforward_position[:2].tolist() == [1.5, -2.0]
    with pytest.raises(CommandRejected, match=r"y_VIR\[1\] = -0.06 m beyond safety.interface_limit_m = 0.05"):
        path.command([0.0, -0.06], [0.0, 0.0])
    cmd = path.command([0.0, 0.0], [0.0, 0.0])
    with pytest.raises(CommandRejected, match=r"u\[0\] = 25 N beyond numerical.coupled_beams.force_limit_n = 20"):
        path.add_feedforward(cmd, np.array([25.0, 0, 0, 0, 0, 0]))
    cmd = path.command([0.0, 0.0], [0.0, 0.0])
    with pytest.raises(CommandRejected, match="u\\[1\\] = nan"):
        path.add_feedforward(cmd, np.array([0.0, np.nan, 0, 0, 0, 0]))


def test_a_force_limit_below_the_filter_output_aborts_the_run():
    s = scn.load(NAME, SHORT + ["numerical.coupled_beams.force_limit_n=0.2"])
    v = run_virtual(s)
    assert v["aborted"] and "numerical.coupled_beams.force_limit_n = 0.2 N" in v["abort_reason"]


@pytest.mark.parametrize("overrides, message", [
    (["aff.enabled=false"], "aff.enabled: false is not allowed with numerical.model = 'coupled_beams'"),
    (["passivity.enabled=true"], "passivity.enabled: true is not allowed with numerical.model = 'coupled_beams'"),
    (["numerical.coupled_beams.aff.frequencies_hz=[50.0]"],
     "numerical.coupled_beams.aff.frequencies_hz: [50.0] is not allowed with "
     "numerical.coupled_beams.excitation_frequency_hz = 60.0"),
    (["loop.dt_s=0.001"], "numerical.coupled_beams.dt_s: 0.0002 differs from loop.dt_s = 0.001"),
    (["numerical.coupled_beams.aff.n_int=1"], "n_int"),
    (["plant=hardware"], "plant: 'hardware' is not allowed with numerical.model = 'coupled_beams'"),
])
def test_the_scenario_checks_name_the_key(overrides, message):
    with pytest.raises(ParameterError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        scn.load(NAME, overrides)


def test_the_objects_load_their_compiled_steps_when_built():
    """A realtime run's first step must not wait for numba to load a kernel (a 0.2 ms loop's watchdog is 20 ms and
    tripped at step 0 before): each object runs its compiled steps once in its constructor."""
    code = textwrap.dedent("""
        from rths_ros.app import factory, scenario as scn
        from rths_ros.core.models.bartl import beams
        from rths_ros.core.learning.aff import harmonic_legs
        kernels = (beams.rig_advance, beams.vir_advance, beams.to_points, beams.force_at_points,
                   beams.excitation_force, harmonic_legs.harmonic_feedforward_kernel)
        assert not any(k.signatures for k in kernels)
        s = scn.load("coupled_beams_aff")
        factory.build_numerical(s), factory.build_plant(s), factory.build_aff(s)
        print([len(k.signatures) for k in kernels])
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert all(int(x) >= 1 for x in p.stdout.strip()[1:-1].split(",")), p.stdout


def test_an_output_filter_is_refused_for_more_than_one_channel():
    from rths_ros.core.learning.aff.harmonic_interface import InterfaceGapAff
    s = scn.load(NAME)
    with pytest.raises(ValueError, match="an output filter holds one channel; n_int = 2"):
        InterfaceGapAff(s.numerical.coupled_beams.aff, s.loop.dt_s, output_filter=lambda u: u)


def test_lms_01_at_320_hz_runs_away_and_aborts_while_rls_synchronises():
    """§6.1.4 as the scenario runs it (5 s of identification, as the thesis): LMS with mu_LMS = 0.1 is unstable at
    320 Hz, so the shakers' demand grows until the force limit aborts the run within 0.5 s of the switch-on; the
    thesis's RLS with simultaneous identification synchronises."""
    base = ["numerical.coupled_beams.excitation_frequency_hz=320", "numerical.coupled_beams.aff.frequencies_hz=[320]",
            "numerical.coupled_beams.aff.t_id_s=5.0", "loop.duration_s=8.0"]
    s = scn.load(NAME, base + ["numerical.coupled_beams.aff.law=lms", "numerical.coupled_beams.aff.simultaneous=false",
                               "numerical.coupled_beams.aff.mu_lms=0.1"])
    v = run_virtual(s)
    assert v["aborted"] and "numerical.coupled_beams.force_limit_n = 50 N" in v["abort_reason"]
    assert 5.0 < v["k"].size * s.loop.dt_s < 5.5
    s = scn.load(NAME, base)
    v = run_virtual(s)
    m, _ = shaker_pair_metrics(v, s)
    assert not v["aborted"] and m["synchronised"] is True and m["sync_error"] < 0.02


def test_the_rig_matrices_do_not_depend_on_the_callers_blas_threads():
    """The node graph's processes and the in-process run must build the same rig to the last bit: with two
    OpenBLAS threads the matrix exponential rounds differently (ad, bd differed by 7e-21 from the one-thread result
    before build_rig pinned one thread)."""
    from threadpoolctl import threadpool_limits

    from rths_ros.core.models.bartl.beams import BeamRigParams, build_rig
    a = build_rig(BeamRigParams())
    with threadpool_limits(limits=1):
        b = build_rig(BeamRigParams())
    for key in ("ad", "bd", "c_y", "c_lam", "d_lam", "av", "bv", "c_v"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key

