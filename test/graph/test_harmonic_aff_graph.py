"""Harmonic-basis AFF (Bartl 2019 ch. 5) on the contact test: the core helper, the learning over three periods
of the suspension in the virtual run, and the ROS graph (aff_learner adapts, stewart_platform applies)
against the virtual run in lockstep."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import rths

from rths_ros.analysis.run_analysis import record_from_bag
from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import VirtualRun, run_virtual
from rths_ros.bag import read_bag
from rths_ros.core.learning.aff.harmonic import basis_matrix
from rths_ros.core.learning.aff.harmonic_legs import HarmonicLegAff, harmonic_feedforward, harmonic_feedforward_kernel
from rths_ros.core.learning.aff.params import AffParams, HarmonicFeedforwardParams
from rths_ros.core.learning.aff.secondary_path import SecondaryPath
from rths_ros.params import ParameterError

SCENARIO = "contact_1d_harmonic_aff"


def period_max_error(rec: dict, period_steps: int) -> list[float]:
    """max |z_cmd - z_ach| per period of the suspension (rows 1.. of each period)."""
    e = np.abs(rec["z_cmd"] - rec["z_ach"])
    return [float(np.max(e[p * period_steps + 1:(p + 1) * period_steps + 1])) for p in range(e.size // period_steps)]


def test_feedforward_kernel_is_the_basis_of_the_harmonic_filter():
    """u = W(t) theta with the layout [Re psi_1, Im psi_1, ...] of rths_ros.core.learning.aff.harmonic (eq. 5.13)."""
    rng = np.random.default_rng(3)
    om = 2 * np.pi * 0.25 * np.arange(1, 8)
    theta = rng.standard_normal((6, 14))
    u = np.zeros(6)
    for t in (0.0, 0.123, 3.999, 11.5):
        harmonic_feedforward_kernel(theta, om, t, u)
        w = basis_matrix(om, t, 1)                                   # (1, 14)
        assert np.allclose(u, theta @ w[0], rtol=0, atol=1e-13)
        assert np.allclose(u, harmonic_feedforward(theta, om, t), rtol=0, atol=1e-13)


@pytest.mark.parametrize("algorithm", ["lms", "qr_rls"])
def test_cancels_a_periodic_gap_through_the_secondary_path_model(algorithm):
    """Plant = the secondary-path model of each leg plus a periodic disturbance on the 1st-3rd harmonics:
    the sign and timing of the model-based P_est (H_gu = -S) and of the QR-RLS external gap (g + S(u)) are
    right if the gap goes to zero (LMS: mu = 0.003; QR-RLS: mu_RLS = 0.9999).  (LMS with mu = 0.01 diverges
    here: the three resonators' bands, about mu / (4 pi dT) = 0.8 Hz, overlap at 1 Hz spacing.)"""
    dt = 1e-3
    hp = HarmonicFeedforwardParams(n_harmonics=3, base_frequency_hz=1.0, algorithm=algorithm, mu_lms=0.003,
                                   gamma_rls=1.0)
    p = AffParams(enabled=True, kind="harmonic", harmonic=hp)
    aff = HarmonicLegAff(p, dt_s=dt, home_lengths=np.zeros(6))
    plant = SecondaryPath("closed_loop", dt_s=dt)
    amp = np.linspace(1e-3, 2e-3, 6)

    def dist(t):
        return amp * (np.sin(2 * np.pi * t + 0.3) + 0.5 * np.cos(4 * np.pi * t) + 0.3 * np.sin(6 * np.pi * t))

    n = 8000
    g = np.zeros((n, 6))
    b_meas = np.zeros(6)
    for k in range(n):
        g[k] = aff.adapt(np.zeros(6), b_meas, step=k)
        u = aff.feedforward(None, step=k + 1)
        b_meas = plant.step(u).copy() + dist((k + 1) * dt)
    rms_first = np.sqrt(np.mean(g[:1000] ** 2))
    rms_last = np.sqrt(np.mean(g[-1000:] ** 2))
    assert rms_last < 0.01 * rms_first, (rms_first, rms_last)


def test_parameters_are_checked():
    s = scn.load(SCENARIO)
    assert s.aff.kind == "harmonic" and s.aff.enabled
    assert scn.load("contact_1d").aff.kind == "fir"
    with pytest.raises(ParameterError, match="aff.kind"):
        scn.load(SCENARIO, ["aff.kind=sine"])
    with pytest.raises(ParameterError, match="aff.harmonic.algorithm"):
        scn.load(SCENARIO, ["aff.harmonic.algorithm=rls"])
    with pytest.raises(ParameterError, match="Nyquist"):     # 200 x 2.5 Hz reaches 500 Hz at dT = 1 ms
        factory.build_aff(scn.load(SCENARIO, ["aff.harmonic.base_frequency_hz=2.5",
                                                "aff.harmonic.n_harmonics=200"]))


@pytest.mark.parametrize("algorithm,first,third", [("lms", 0.643e-3, 0.076e-3), ("qr_rls", 0.598e-3, 0.110e-3)])
def test_learns_over_three_periods(algorithm, first, third):
    """Virtual run of the scenario (3 periods of f_d = 0.25 Hz, 12 s): the third period's max tracking error
    is well below the first period's and feedback only's.  Measured (mm): feedback only 0.672 / 0.672 / 0.672;
    LMS 0.643 / 0.231 / 0.076; QR-RLS 0.598 / 0.199 / 0.110 (tolerance 20 %)."""
    s = scn.load(SCENARIO, [f"aff.harmonic.algorithm={algorithm}"])
    per = int(round(1.0 / (s.numerical.contact_1d.f_d_hz * s.loop.dt_s)))
    assert s.steps == 3 * per
    fb = period_max_error(run_virtual(scn.replace(s, aff=dataclasses.replace(s.aff, enabled=False))), per)
    v = run_virtual(s)
    assert not v["aborted"]
    e = period_max_error(v, per)
    assert len(e) == len(fb) == 3
    assert e[2] < 0.25 * e[0] and e[2] < 0.25 * fb[2], (e, fb)
    assert abs(e[0] - first) < 0.2 * first and abs(e[2] - third) < 0.2 * third, e
    assert abs(fb[2] - 0.672e-3) < 0.05 * 0.672e-3, fb


def test_graph_reproduces_the_virtual_run(tmp_path):
    """aff_learner (adapts, publishes theta, kind 'harmonic') and stewart_platform (u = W(t_k+1) theta_k through
    the platform path's add_feedforward) as separate processes, lockstep, 1.5 s: bit-exact against the virtual run."""
    out = tmp_path / "run"
    p = rths("run", "--no-plots", SCENARIO, "--out", str(out), "--set", "loop.duration_s=1.5", timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    rec, s, _ = record_from_bag(out / "bag")
    assert "aff_learner" in s.run_nodes and s.aff.kind == "harmonic"
    assert rec["missing_samples"] == {"cmd": 0, "state": 0, "force": 0, "legs": 0, "wrench": 0}
    vr = VirtualRun(s)
    v = vr.run()
    assert rec["k"].size == v["k"].size == s.steps + 1
    for key in ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas", "b_cmd", "b_meas"):
        a, b = rec[key], v[key]
        err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)
        assert err <= 1e-12, f"{key}: relative deviation {err:.3g}"
    topics = read_bag(out / "bag", ["/rths/aff_coefficients", "/rths/leg_command"])
    coef = {int(m.step): m for _, m in topics["/rths/aff_coefficients"]}
    assert sorted(coef) == list(range(s.steps + 1))
    last = coef[s.steps]
    assert last.kind == "harmonic" and (last.n_legs, last.n_coefficients) == (6, 2 * s.aff.harmonic.n_harmonics)
    theta_last = np.asarray(last.coefficients).reshape(6, -1)
    assert np.array_equal(theta_last, vr.aff.coefficients)           # the learner's theta = the virtual run's
    assert np.max(np.abs(theta_last)) > 1e-5                          # it has learnt something
    # the platform applied u_k = W(t_k) theta_{k-1} as position feedforward
    om = vr.aff.omegas
    ffp = {int(m.step): np.asarray(m.feedforward_position) for _, m in topics["/rths/leg_command"]}
    for k in (1, 500, s.steps):
        th = np.asarray(coef[k - 1].coefficients).reshape(6, -1)
        assert np.allclose(ffp[k], harmonic_feedforward(th, om, k * s.loop.dt_s), rtol=0, atol=1e-15)
    assert max(np.max(np.abs(v)) for v in ffp.values()) > 1e-5


# ------------------------------------------------------------------------------------------------
# power-flow supervisor (Bartl 2019 Alg. 2) on the contact test

SUPERVISED = "contact_1d_harmonic_aff_supervised"


def _supervised_run(sets=()):
    """Virtual run of the supervised scenario; returns (record, VirtualRun, min P_in seen by the supervisor)."""
    vr = VirtualRun(scn.load(SUPERVISED, list(sets)))
    p_min = [0.0]
    if vr.aff.supervised:
        adapt = vr.aff.adapt

        def traced(*a, **kw):
            out = adapt(*a, **kw)
            p_min[0] = min(p_min[0], vr.aff.supervisor.p_in)
            return out
        vr.aff.adapt = traced
    return vr.run(), vr, p_min[0]


def test_supervisor_parameters():
    s = scn.load(SUPERVISED)
    sp = s.aff.harmonic.supervisor
    assert sp.enabled and s.aff.harmonic.mu_lms == 0.005 and (sp.da_mu_down, sp.b_mu) == (1e-3, 2.0)  # Table 6.3
    assert not scn.load(SCENARIO).aff.harmonic.supervisor.enabled
    assert factory.build_aff(s).supervised and not factory.build_aff(scn.load(SCENARIO)).supervised
    with pytest.raises(ParameterError, match="aff.harmonic.supervisor.enabled"):
        scn.load(SUPERVISED, ["aff.harmonic.algorithm=qr_rls"])
    with pytest.raises(ParameterError, match="aff.harmonic.supervisor.p_lim_w"):
        scn.load(SUPERVISED, ["aff.harmonic.supervisor.p_lim_w=0.1"])


def test_supervisor_keeps_an_unstable_gain_within_the_limits():
    """Bartl 2019 §6.3 (Table 6.3): a gain that is unstable without supervision; with it mu_LMS drops to a stable
    value and adaptation continues.  Here mu_LMS = 0.005: alone a leg leaves its stroke at step 5342 (second
    period); supervised (P_lim = -0.02 W) the 24 s run completes, P_in reaches -0.12 W, mu_LMS falls to 2.6e-4
    and the max tracking error per period falls 1.448 / 0.594 / 0.521 / 0.218 / 0.187 / 0.142 mm (feedback only
    0.672 mm).  With numpy's AVX-512 kernels the last bits differ and the supervisor switches at other steps:
    1.448 / 0.608 / 0.540 / 0.258 / 0.314 / 0.157 mm, so the test asks for the last period to be the best,
    not for every period to improve on the one before."""
    alone = run_virtual(scn.load(SUPERVISED, ["aff.harmonic.supervisor.enabled=false"]))
    assert alone["aborted"] and "stroke" in alone["abort_reason"]
    assert alone["k"].size < 2 * 4000
    rec, vr, p_min = _supervised_run()
    assert not rec["aborted"], rec["abort_reason"]
    sp = vr.s.aff.harmonic.supervisor
    assert p_min < sp.p_lim_w                                          # the supervisor acted
    mu_end = vr.aff.supervisor.mu_lms
    assert 0.0 < mu_end < 0.1 * vr.s.aff.harmonic.mu_lms               # "mu drops to a stable value"
    per = 4000
    e = period_max_error(rec, per)
    fb = period_max_error(run_virtual(scn.load(SUPERVISED, ["aff.enabled=false", "loop.duration_s=4"])), per)[0]
    assert len(e) == 6
    assert e[-1] < 0.3 * fb and e[-1] < 0.2 * e[0], (e, fb)
    assert e[-1] < min(e[:-1]), e                                      # adaptation continues: the last period is the best


def test_a_supervisor_that_never_triggers_changes_nothing():
    """The scenario's tuned gain with the thesis's P_lim = -1 W: P_in never goes below it on the contact test (min
    -0.07 W), so mu and gamma stay at mu_LMS and 0 and the run equals the unsupervised one bit for bit."""
    sets = ["loop.duration_s=4", "aff.harmonic.mu_lms=0.0007", "aff.harmonic.supervisor.p_lim_w=-1.0"]
    rec, vr, p_min = _supervised_run(sets)
    assert -1.0 < p_min < -0.01
    assert vr.aff.supervisor.mu_lms == 0.0007 and vr.aff.supervisor.gamma_lms == 0.0
    ref = run_virtual(scn.load(SUPERVISED, sets + ["aff.harmonic.supervisor.enabled=false"]))
    for key in ("z_cmd", "z_ach", "b_cmd", "f_int"):
        assert np.array_equal(rec[key], ref[key]), key


def test_graph_with_the_supervisor_reproduces_the_virtual_run(tmp_path):
    """aff_learner with the supervisor (it also reads the interface force, command and state of every step) as a
    separate process, lockstep, 2.5 s: bit-exact against the virtual run, theta of the last step equal, and the
    supervisor has lowered mu_LMS within the window (0.005 -> 0.0020)."""
    out = tmp_path / "run"
    p = rths("run", "--no-plots", SUPERVISED, "--out", str(out), "--set", "loop.duration_s=2.5", timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    rec, s, _ = record_from_bag(out / "bag")
    assert "aff_learner" in s.run_nodes and s.aff.harmonic.supervisor.enabled
    assert rec["missing_samples"] == {"cmd": 0, "state": 0, "force": 0, "legs": 0, "wrench": 0}
    vr = VirtualRun(s)
    v = vr.run()
    assert not v["aborted"] and rec["k"].size == v["k"].size == s.steps + 1
    for key in ("z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas", "b_cmd", "b_meas"):
        a, b = rec[key], v[key]
        err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-12)
        assert err <= 1e-12, f"{key}: relative deviation {err:.3g}"
    coef = {int(m.step): m for _, m in read_bag(out / "bag", ["/rths/aff_coefficients"])["/rths/aff_coefficients"]}
    assert sorted(coef) == list(range(s.steps + 1))
    assert np.array_equal(np.asarray(coef[s.steps].coefficients).reshape(6, -1), vr.aff.coefficients)
    assert vr.aff.supervisor.mu_lms < 0.5 * s.aff.harmonic.mu_lms
