"""Newmark integration of the building benchmark's numerical substructure (``integrator``; Bartl 2019 §2.3).

``zoh`` (default) is the exact zero-order-hold map; ``average_acceleration`` (implicit, the sample's measured force
at the new time level: feedforward form) and ``central_difference`` (explicit, feedback form) run the compiled
kernels of :mod:`rths_ros.core.numerics.newmark`.  Checked here: closed forms of the free vibration, energy, second-order
convergence to the exact step response, the explicit stability limit, the validation, and case 1 J1-J9 of each
scheme against ``zoh`` (with where the difference comes from)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual
from rths_ros.core.models.building import benchmark as brun
from rths_ros.core.models.building import structure as bld
from rths_ros.core.models.building.criteria import CRITERIA, evaluate_record
from rths_ros.core.models.building.rths import core_params
from rths_ros.core.models.building.tracking_controller import ReferenceController
from rths_ros.core.numerics.newmark import amplification_matrix, iteration_inverse, newmark_sample
from rths_ros.params import ParameterError

NEWMARK = ("average_acceleration", "central_difference")
BETA = {"average_acceleration": 0.25, "central_difference": 0.0}


def _modes(m_mat, k_mat):
    w2, phi = np.linalg.eig(np.linalg.solve(m_mat, k_mat))
    order = np.argsort(w2.real)
    return np.sqrt(w2.real[order]), phi.real[:, order]


def _free(scheme, dt, n, q0):
    """Undamped free vibration of the building's M_n, K_n from q0 (at rest) through the kernel: the commands
    q[1..n], and the kernel's state (q, q') after each sample (level n+1 for AA, level n for CD)."""
    m = bld.structure_matrices(bld.benchmark_params())
    M, K, Z = m["M_n"], m["K_n"], np.zeros((3, 3))
    beta = BETA[scheme]
    st, scratch = np.zeros((3, 3)), np.zeros((4, 3))
    st[0] = q0
    out_q, out_qd, f = np.zeros(3), np.zeros(3), np.zeros(3)
    q, qs, qds = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    s_inv = iteration_inverse(M, Z, K, dt, beta, 0.5)
    for k in range(n):
        newmark_sample(st, k == 0, np.linalg.inv(M), s_inv, Z, K, dt, beta, 0.5, f, out_q, out_qd, scratch)
        q[k], qs[k], qds[k] = out_q, st[0], st[1]
    return M, K, q, qs, qds


@pytest.mark.parametrize("scheme", NEWMARK)
def test_free_vibration_matches_the_modal_closed_form(scheme):
    """Each mode of the undamped M_n, K_n, started from rest at q0 = its mode shape, follows cos(n theta):
    average acceleration theta = 2 atan(omega dt/2) (no amplitude error), central difference
    cos(theta) = 1 - (omega dt)^2/2.  dt = 1/512 s so the discrete closed form differs visibly from cos(omega t)."""
    dt, n = 1.0 / 512.0, 2048
    m = bld.structure_matrices(bld.benchmark_params())
    w, phi = _modes(m["M_n"], m["K_n"])
    steps = np.arange(1, n + 1)
    for i in range(3):
        q0 = 1e-3 * phi[:, i] / np.max(np.abs(phi[:, i]))
        q = _free(scheme, dt, n, q0)[2]
        wdt = w[i] * dt
        theta = 2.0 * math.atan(0.5 * wdt) if scheme == "average_acceleration" else math.acos(1.0 - 0.5 * wdt ** 2)
        closed = np.outer(np.cos(steps * theta), q0)
        np.testing.assert_allclose(q, closed, rtol=0, atol=1e-9 * 1e-3)
        continuous = np.outer(np.cos(steps * wdt), q0)
        if i == 2:      # the highest mode (omega dt = 0.11): the discrete phase is measurably not omega t
            assert np.max(np.abs(continuous - closed)) > 1e-5


def test_average_acceleration_conserves_energy():
    """Undamped, all three modes excited: E = q'^T M q'/2 + q^T K q/2 of the state stays constant to round-off
    (measured 5e-15 and 2e-14 relative at dt = 1/512 s and 1/4096 s); the central difference conserves only a
    modified energy, so its E oscillates (measured 5.2e-2 and 8.1e-4: ~(omega_max dt)^2/4)."""
    q0 = np.array([1e-3, -2e-3, 3e-3])

    def energy(M, K, q, qd):
        return 0.5 * np.einsum("ni,ij,nj->n", qd, M, qd) + 0.5 * np.einsum("ni,ij,nj->n", q, K, q)

    for dt, n in ((1.0 / 512.0, 4000), (1.0 / 4096.0, 8000)):
        M, K, _, q, qd = _free("average_acceleration", dt, n, q0)
        e0 = 0.5 * q0 @ K @ q0
        assert np.max(np.abs(energy(M, K, q, qd) / e0 - 1.0)) < 1e-12
        _, _, _, q_cd, qd_cd = _free("central_difference", dt, n, q0)
        assert np.max(np.abs(energy(M, K, q_cd, qd_cd) / e0 - 1.0)) > 1e-6


def _step_response(integrator, dt, t_end=0.5, f=800.0, a_g=0.3):
    """NumericalSubstructure with constant inputs (the ZOH map is then the exact solution); q at t = k dt."""
    num = bld.NumericalSubstructure(bld.benchmark_params(integrator=integrator, dt_s=dt))
    n = int(round(t_end / dt))
    q = np.zeros((n + 1, 3))
    for k in range(n):
        num.step(f, a_g)
        q[k + 1] = num.x[:3]
    return q


def test_step_force_converges_to_the_exact_response_at_second_order():
    """Constant f_e = 800 N and a_g = 0.3 m/s^2 from rest, damped M_n, C_n, K_n, 0.5 s: the ZOH map is exact for
    held inputs; each Newmark scheme converges to it at second order.  Largest error / peak at dt = 1/1024, 1/2048,
    1/4096 s: AA 1.40e-4, 3.48e-5, 8.71e-6; CD 7.55e-5, 1.88e-5, 4.70e-6 (ratios 4.01, 4.00 for both)."""
    errs = {s: [] for s in NEWMARK}
    for dt in (1.0 / 1024.0, 1.0 / 2048.0, 1.0 / 4096.0):
        stride = int(round(1.0 / (1024.0 * dt)))          # compare at the samples of t = j / 1024 s
        exact = _step_response("zoh", dt)[::stride]
        peak = np.max(np.abs(exact))
        for s in NEWMARK:
            errs[s].append(np.max(np.abs(_step_response(s, dt)[::stride] - exact)) / peak)
    for s in NEWMARK:
        e = errs[s]
        assert e[0] / e[1] == pytest.approx(4.0, rel=0.05), (s, e)
        assert e[1] / e[2] == pytest.approx(4.0, rel=0.05), (s, e)
        assert e[2] < 1e-5, (s, e)


def test_central_difference_beyond_its_stability_limit_is_refused():
    """Case 1: omega_max of M_n, K_n = 239.7 rad/s, limit dt < 8.345 ms.  dt_s = 0.01 (omega_max dt = 2.40) is
    refused with the key, the value and the alternatives (its amplification matrix has |lambda| > 1); 8 ms is
    accepted and stable; the implicit scheme is accepted and stable at 0.01 s."""
    p_bad = bld.BenchmarkParams(dt_s=0.01, integrator="central_difference")
    wdt, limit = bld.explicit_stability_limit(p_bad)
    assert wdt == pytest.approx(2.397, abs=1e-3) and limit == pytest.approx(8.345e-3, rel=1e-3)
    for call in (lambda: bld.benchmark_params(dt_s=0.01, integrator="central_difference"),
                 lambda: bld.NumericalSubstructure(p_bad)):
        with pytest.raises(ParameterError, match=r"integrator: 'central_difference' is not allowed .*omega_max dt = "
                                                 r"2\.397.*expected dt_s < 0\.008345 s or one of 'zoh', "
                                                 r"'average_acceleration'"):
            call()
    with pytest.raises(ParameterError, match=r"^numerical\.building\.integrator: 'central_difference'"):
        scn.load("benchmark_building", ["loop.dt_s=0.01", "numerical.building.dt_s=0.01",
                                        "tracking_controller.reference.dt_s=0.01",
                                        "numerical.building.integrator=central_difference"])
    m = bld.structure_matrices(p_bad)
    amp = amplification_matrix(m["M_n"], m["C_n"], m["K_n"], 0.01, 0.0, 0.5)
    assert np.max(np.abs(np.linalg.eigvals(amp))) > 1.1          # what the refusal prevents
    ok = bld.NumericalSubstructure(bld.benchmark_params(dt_s=0.008, integrator="central_difference"))
    assert ok.omega_max_dt == pytest.approx(1.918, abs=1e-3) and ok.spectral_radius < 1.0
    aa = bld.NumericalSubstructure(bld.benchmark_params(dt_s=0.01, integrator="average_acceleration"))
    assert aa.spectral_radius < 1.0


def test_integrator_validation_names_key_value_and_choices():
    allowed = r"expected one of 'zoh', 'average_acceleration', 'central_difference'"
    with pytest.raises(ParameterError, match=r"benchmark\.integrator: 'rk4' is not allowed; " + allowed):
        bld.benchmark_params(integrator="rk4")
    with pytest.raises(ParameterError, match=r"numerical\.building\.integrator: 'rk4' is not allowed; " + allowed):
        scn.load("benchmark_building", ["numerical.building.integrator=rk4"])
    with pytest.raises(ParameterError, match=r"integrator: 'euler' is not allowed; " + allowed):
        bld.NumericalSubstructure(bld.BenchmarkParams(integrator="euler"))
    assert bld.BenchmarkParams().integrator == "zoh"
    s = scn.load("benchmark_building", ["numerical.building.integrator=average_acceleration"])
    assert core_params(s.numerical.building).integrator == "average_acceleration"


# ------------------------------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def runs():
    return {s: brun.run_benchmark(1, "elcentro", integrator=s) for s in ("zoh",) + NEWMARK}


def _j(rec):
    return np.array([rec["J"][c] for c in CRITERIA])


def test_zoh_default_is_unchanged(runs):
    """The default run's J1-J9 (ZOH map; the specification's force channel: specimen force plus noise, one sample
    late, no converter; the controller's converters), pinned to 1e-9 relative (docs/benchmark_building.md,
    section 5)."""
    before = [4.638671875, 10.354545044680542, 11.555188775722595, 35.94953352261214, 32.14519704828007,
              32.26402230825932, 18.373179717227924, 14.783492714036054, 14.726037783048689]
    np.testing.assert_allclose(_j(runs["zoh"]), before, rtol=1e-9)
    assert runs["zoh"]["params"].integrator == "zoh"


def test_case1_nominal_j_of_each_scheme_close_to_zoh(runs):
    """Case 1, El Centro, nominal, reference controller, whole record.  Measured (percentage points):
    J1 identical; J2, J3 within 0.003 and 0.013; J4-J9 AA +0.45 ... +1.19, CD -0.44 ... -1.18 (at most 3.5 %
    of the value).  AA and CD lie on opposite sides with equal size (their mean is within 0.007 of zoh): a
    timing effect, not an integration error (next test)."""
    z = _j(runs["zoh"])
    for s in NEWMARK:
        r = runs[s]
        assert not r["aborted"]
        d = _j(r) - z
        assert d[0] == 0.0, s                                   # J1 (ms, a multiple of dt)
        assert np.all(np.abs(d[1:3]) < 0.03), (s, d)            # J2, J3
        assert np.all(np.abs(d[3:]) < 1.5), (s, d)              # J4-J9
        assert np.all(np.abs(d[3:]) / z[3:] < 0.04), (s, d)
        assert np.max(np.abs(r["y"] - runs["zoh"]["y"])) < 0.01 * np.max(np.abs(runs["zoh"]["y"]))
    mean = 0.5 * (_j(runs["average_acceleration"]) + _j(runs["central_difference"]))
    assert np.all(np.abs(mean - z) < 0.03), mean - z


def _hand_run(integrator, mode):
    """Case 1 driven by hand (the per-step objects).  mode 'avg': the numerical part gets the mean of this and
    the previous sample's inputs (half a sample later); 'new_level': it is stepped after the plant with the force
    measured at the new sample and a_g,k+1 (Bartl 2019 eq. 2.48 with the force of t_{k+1})."""
    p = bld.benchmark_params(integrator=integrator)
    ag = brun.ground_motion(p)
    n = ag.size
    ag1 = np.append(ag, 0.0)
    num, plant, ctrl = bld.NumericalSubstructure(p), bld.ServoHydraulicPlant(p), ReferenceController()
    xm, fm = plant.measure()
    y, xmr = np.zeros((n, 3)), np.zeros(n)
    f_prev = a_prev = 0.0
    for k in range(n):
        y[k], xmr[k] = num.x[:3], xm
        u = ctrl.step(num.x[0], xm)
        if mode == "avg":
            num.step(0.5 * (fm + f_prev), 0.5 * (ag[k] + a_prev))
            f_prev, a_prev = fm, ag[k]
            xm, fm = plant.step(u)
        else:
            xm, fm = plant.step(u)
            num.step(fm, ag1[k + 1])
    rec = {"t": np.arange(n) * p.dt_s, "y": y, "x_m": xmr, "x_r": brun.reference_response(p, ag), "a_g": ag}
    return np.array([evaluate_record(rec)[c] for c in CRITERIA])


def test_the_j_differences_are_the_coupling_time_level(runs):
    """The Newmark schemes integrate as accurately as the ZOH map at 4096 Hz; what moves J4-J9 is the time level
    the sample's force acts at.  ZOH holds f_m,k over [t_k, t_k+1); average acceleration (f_m,k at t_k+1) applies
    the trapezoid of f_m,k-1 and f_m,k there, half a sample later; central difference applies f_m,k at t_k, half a
    sample earlier.  Measured: AA equals ZOH fed the two-sample mean of its inputs to 0.0076 pp; CD equals AA fed
    the force measured at the new level to 0.0055 pp (the largest differences are the peaks J3 and J7; without
    the controller's converters, whose 2^-18 m steps the lead amplifies, 0.0009 and 0.0017 pp)."""
    zoh_late = _hand_run("zoh", "avg")
    assert np.max(np.abs(zoh_late - _j(runs["average_acceleration"]))) < 0.01
    aa_aligned = _hand_run("average_acceleration", "new_level")
    assert np.max(np.abs(aa_aligned - _j(runs["central_difference"]))) < 0.01


@pytest.mark.parametrize("scheme", NEWMARK)
def test_compiled_loop_equals_per_step_loop(scheme):
    fast = brun.run_benchmark(3, "kobe", perturbed_seed=2, duration_s=8.0, integrator=scheme, fast=True)
    slow = brun.run_benchmark(3, "kobe", perturbed_seed=2, duration_s=8.0, integrator=scheme, fast=False)
    for key in ("u", "x_m", "f_m", "y"):
        np.testing.assert_array_equal(fast[key], slow[key])


def test_scenario_key_reaches_the_graph_objects():
    """numerical.building.integrator through the scenario: the virtual run (the graph's objects, BuildingNumerical
    in the numerical node) equals run_benchmark with the same parameters, sample for sample."""
    s = scn.load("benchmark_building", ["loop.duration_s=2.0", "numerical.building.integrator=average_acceleration"])
    v = run_virtual(s)
    core = brun.run_benchmark(params=core_params(s.numerical.building, s.loop.duration_s))
    assert core["params"].integrator == "average_acceleration"
    for key in ("x_m", "f_m", "y"):
        assert np.array_equal(core[key], v[key]), key
