"""vRTHS benchmark of the RTHS community: a 3-story building on a servo-hydraulic actuator.

Silva, Gomez, Maghareh, Dyke, Spencer, "Benchmark control problem for real-time hybrid simulation",
MSSP 135 (2020); seed 000 §12.2 runs it with partitioning case 1 and El Centro.  The model is the one
of the benchmark's specification (docs/benchmark_building.md); the building matrices and ground
motions are the package's data under ``config/benchmark/``.

Parts (all linear, Δt = 1/4096 s, every continuous block discretised once at construction):

* **Reference structure** (3 lateral DoF): ``M x'' + C x' + K x = -M ι a_g``, ``ι = [1,1,1]``; M, C, K of
  the partitioning case (``building_cases.json``).  Its response ``x_r`` is the yard-stick of J4-J9.
* **Numerical substructure** :class:`NumericalSubstructure`: ``M_n = M - M_e``, ``C_n = C - C_e``,
  ``K_n = K - K_e`` (specimen terms only at (1,1), always the *nominal* specimen), driven by
  ``[a_g, f_e]``::

      M_n q'' + C_n q' + K_n q = -M ι a_g - e1 f_e

  and its DoF 1 displacement ``y1 = q1`` is the desired actuator displacement.  Time integration
  (``integrator``): ``"zoh"`` (default) the exact zero-order-hold map with ``[a_g, f_e]`` held over the
  sample; or one of the Newmark schemes of seed 001 §2.3 (:func:`rths_ros.core.numerics.newmark.newmark_sample`, the
  kernels of :mod:`rths_ros.core.numerics.newmark`): ``"average_acceleration"`` (implicit, feedforward form: the
  sample's inputs ``[a_g,k, f_m,k]`` act at the new time level ``k+1``, no iteration) or
  ``"central_difference"`` (explicit, feedback form: the inputs act at level ``k``, ``q[k+1]`` follows
  explicitly; refused unless ``omega_max dt < 2``).  In both the first sample's inputs also give the initial
  acceleration (they act from ``t = 0+``, as the held inputs of the ZOH map do).
* **Control plant** :class:`ServoHydraulicPlant`: servo-valve ``a1β0/(s² + β1 s + β2)`` in a unity
  displacement loop around ``G0 = Ga Gest/(1 + Ga Gest a2 s)``, ``Ga = 1/(s + a3)``,
  ``Gest = 1/(m_e s² + c_e s + k_e)``, overall gain ``g``.  State ``z = [v, v', F, x, x']``::

      v'' = -β2 v - β1 v' + a1β0 (g u - x)       (servo-valve; inner loop closed on x)
      F'  = -a3 F + v - a2 x'                    (actuator; a2 x' = control-structure interaction)
      m_e x'' = F - c_e x' - k_e x               (specimen)

  which gives ``X(s)/U(s) = g Gs G0/(1 + Gs G0)`` exactly.  Choice: the gain ``g`` is applied to the
  command (not the output), so the specimen moves with the measured displacement; the transfer
  function u -> x is the benchmark's either way.  The D/A holds ``u`` over a sample, so the plant is
  discretised with the exact zero-order-hold map (matrix exponential, with balancing because
  ``a1β0`` = 2e13): this *is* the continuous solution, more accurate than the fixed-step RK4 of the
  Simulink package.
* **Measured force** fed back to the numerical substructure (``specimen_force``):
  ``"restoring"`` (default, the specification's reading) ``f_e = k_e x + c_e x'``; ``"actuator"``
  ``f_e = F = m_e x'' + c_e x' + k_e x`` (what a load cell between actuator and specimen would
  carry, including the specimen's inertia; with it, perfect tracking reproduces the reference
  exactly).
* **Sensors and converters**: band-limited white noise of power P per sample, i.e. Gaussian samples
  of standard deviation ``sqrt(P/Δt)``, on displacement and force; A/D and D/A of ``adc_bits`` over
  ``±adc_range_v`` (rounding to the nearest level, saturation at the range), with 7.89 mm/V and
  1096 N/V.  The command goes through the D/A inside :meth:`ServoHydraulicPlant.step`.
* **Limits**: an actuator force ``|F|`` beyond ``force_capacity_n`` aborts the run
  (:class:`ActuatorCapacityExceeded`); stroke and velocity beyond their limits are recorded
  (``record["limits"]``) and abort only when ``abort_on_stroke_velocity`` is set.
* **Perturbed plants** (:func:`plant_values`): with a seed, ``β1 += 3.3 N1``, ``β2 += 3.3e3 N2``,
  ``a3 += 1.3 N3``, ``k_e += 5e4 N4`` (N_i standard normal from ``numpy.random.default_rng(seed)``,
  drawn in that order); ``c_e = 2 ζ_e sqrt(k_e m_e)`` follows the drawn ``k_e`` (choice).  The
  numerical substructure and the reference keep the nominal specimen.

Timing of one sample k (t_k = k Δt), the order a ROS graph must follow::

    x_m,k, f_m,k   = sensors at t_k                     (ServoHydraulicPlant.measure / previous step)
    u_k            = controller.step(y1_k, x_m,k)        (TrackingController)
    y1_{k+1}       = numerical.step(f_m,k, a_g,k)        (NumericalSubstructure; ZOH on f_m, a_g, or Newmark)
    x_m,k+1, f_m,k+1 = plant.step(u_k)                   (D/A, plant over [t_k, t_k+1), A/D)

so the command y1_k depends on forces up to f_m,k-1 (one-sample coupling, as in the continuous
Simulink package whose numerical substructure has no feed-through).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numba
import numpy as np
from scipy.linalg import expm, matrix_balance

from rths_ros.core.numerics.newmark import CentralDifference, amplification_matrix, iteration_inverse, newmark_sample
from rths_ros.resources import benchmark_data_dir
from rths_ros.params import ParameterError, build, param
from rths_ros.core.models.building.tracking_controller import DT_S, ReferenceController, TrackingController

EARTHQUAKES = ("elcentro", "kobe", "morgan")
CASES = (1, 2, 3, 4)
SPECIMEN_FORCE_CHOICES = ("restoring", "actuator")
#: time integration of the numerical substructure (``BenchmarkParams.integrator``)
INTEGRATOR_CHOICES = ("zoh", "average_acceleration", "central_difference")
#: Newmark (beta, gamma) of the two Newmark choices
NEWMARK_COEFFICIENTS = {"average_acceleration": (0.25, 0.5), "central_difference": (0.0, 0.5)}


@dataclass(frozen=True)
class BenchmarkParams:
    """Parameters of the servo-hydraulic building benchmark (values of Silva et al. 2020)."""

    case: int = param(1, "-", doc="partitioning case 1-4 (building_cases.json)", choices=CASES)
    earthquake: str = param("elcentro", "", doc="ground-motion record", choices=EARTHQUAKES)
    ground_motion_scale: float = param(0.4, "-", 0.0, 10.0, "factor on the unscaled record")
    duration_s: float = param(0.0, "s", 0.0, 600.0, "simulated time; 0 = the whole record")
    dt_s: float = param(DT_S, "s", 1e-5, 0.01, "sample time Δt of the control loop and the substructure")
    integrator: str = param("zoh", "", doc=(
        "time integration of the numerical substructure: 'zoh' = exact zero-order-hold map (a_g, f_e held over "
        "the sample), 'average_acceleration' = implicit Newmark fed by the sample's measured force at the new "
        "time level (feedforward form), 'central_difference' = explicit Newmark (feedback form; refused unless "
        "omega_max dt < 2)"), choices=INTEGRATOR_CHOICES)
    m_e_kg: float = param(29.13, "kg", 1e-3, 1e4, "specimen mass m_e")
    k_e_n_per_m: float = param(1.19e6, "N/m", 1.0, 1e9, "nominal specimen stiffness k_e")
    zeta_e: float = param(0.0097, "-", 0.0, 1.0, "specimen damping ratio; c_e = 2 zeta_e sqrt(k_e m_e)")
    a1_beta0: float = param(2.1283e13, "N/(m s^2) per m", 0.0, 1e16, "servo-valve gain a1*beta0")
    a2: float = param(4.2297e6, "N/m", 0.0, 1e10, "control-structure-interaction gain a2")
    a3_per_s: float = param(3.3, "1/s", -100.0, 1e4, "actuator pole a3")
    beta1_per_s: float = param(425.0, "1/s", 0.0, 1e5, "servo-valve coefficient beta1")
    beta2_per_s2: float = param(9.9976e4, "1/s^2", 0.0, 1e9, "servo-valve coefficient beta2")
    plant_gain: float = param(1.0261, "-", 0.0, 10.0, "overall plant gain g")
    sigma_beta1_per_s: float = param(3.3, "1/s", 0.0, 1e3, "std of beta1 in perturbed runs")
    sigma_beta2_per_s2: float = param(3.3e3, "1/s^2", 0.0, 1e7, "std of beta2 in perturbed runs")
    sigma_a3_per_s: float = param(1.3, "1/s", 0.0, 1e3, "std of a3 in perturbed runs")
    sigma_k_e_n_per_m: float = param(5e4, "N/m", 0.0, 1e8, "std of k_e in perturbed runs")
    specimen_force: str = param("restoring", "", doc=(
        "force fed back to the numerical substructure: 'restoring' = k_e x + c_e x', 'actuator' = the "
        "actuator force m_e x'' + c_e x' + k_e x"), choices=SPECIMEN_FORCE_CHOICES)
    noise_enabled: bool = param(True, "", doc="add the band-limited white sensor noise")
    disp_noise_power_m2_s: float = param(6.25e-14, "m^2 s", 0.0, 1.0, "displacement noise power per sample")
    force_noise_power_n2_s: float = param(1.16e-3, "N^2 s", 0.0, 1e6, "force noise power per sample")
    noise_seed: int = param(0, "-", 0, 2**31 - 1, "seed of the sensor noise (with the plant seed)")
    quantise: bool = param(True, "", doc="quantise and saturate at the A/D and D/A converters")
    adc_bits: int = param(18, "bit", 2, 32, "converter resolution")
    adc_range_v: float = param(3.8, "V", 1e-3, 100.0, "converter range ±V (saturation)")
    disp_m_per_v: float = param(7.89e-3, "m/V", 1e-6, 1.0, "displacement channel calibration")
    force_n_per_v: float = param(1096.0, "N/V", 1e-3, 1e7, "force channel calibration")
    force_capacity_n: float = param(8900.0, "N", 0.0, 1e7, "actuator force capacity (exceeding it aborts)")
    stroke_m: float = param(7e-3, "m", 0.0, 1.0, "actuator stroke ±")
    velocity_m_per_s: float = param(0.3, "m/s", 0.0, 100.0, "actuator velocity limit")
    abort_on_stroke_velocity: bool = param(False, "", doc="abort also when stroke or velocity is exceeded")

    @property
    def c_e_n_s_per_m(self) -> float:
        return 2.0 * self.zeta_e * math.sqrt(self.k_e_n_per_m * self.m_e_kg)

    def validate(self) -> None:
        if self.integrator == "central_difference":
            check_explicit_stability(self)


@dataclass(frozen=True)
class PlantValues:
    """Realised transfer-system parameters of one run (nominal or perturbed)."""

    beta1: float
    beta2: float
    a3: float
    k_e: float
    c_e: float
    m_e: float
    a1_beta0: float
    a2: float
    gain: float
    seed: int | None = None


class ActuatorCapacityExceeded(RuntimeError):
    """The actuator force exceeded its capacity: the benchmark aborts the run."""


# ---------------------------------------------------------------------------------------------
# data
def data_dir() -> Path:
    """config/benchmark of the source tree or of the installed package."""
    return benchmark_data_dir()


def load_case(case: int) -> dict:
    """M (kg), K (N/m), C (N s/m) and modal damping ratios of a partitioning case."""
    if case not in CASES:
        raise ParameterError(f"case: {case!r} is not allowed; expected one of 1, 2, 3, 4")
    with open(data_dir() / "building_cases.json", encoding="utf-8") as fh:
        raw = json.load(fh)[f"case_{case}"]
    return {"M": np.array(raw["M_kg"], float), "K": np.array(raw["K_N_per_m"], float),
            "C": np.array(raw["C_N_s_per_m"], float), "zeta": np.array(raw["modal_damping_ratios"], float)}


def load_ground_motion(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Time (s) and unscaled ground acceleration (m/s²) of a record, as stored."""
    if name not in EARTHQUAKES:
        raise ParameterError(f"earthquake: {name!r} is not allowed; expected one of {', '.join(EARTHQUAKES)}")
    d = np.loadtxt(data_dir() / f"{name}_accel.csv", delimiter=",", skiprows=1)
    return d[:, 0].copy(), d[:, 1].copy()


def ground_motion(params: BenchmarkParams) -> np.ndarray:
    """Scaled ground acceleration at t_k = k Δt (linear interpolation of the record), k = 0..N-1."""
    t, a = load_ground_motion(params.earthquake)
    t_end = t[-1] if params.duration_s <= 0.0 else min(params.duration_s, t[-1])
    n = int(math.floor(t_end / params.dt_s + 1e-9)) + 1
    return params.ground_motion_scale * np.interp(np.arange(n) * params.dt_s, t, a)


# ---------------------------------------------------------------------------------------------
# discretisation
def zoh(a: np.ndarray, b: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact zero-order-hold discretisation ``x+ = Ad x + Bd u`` of ``x' = A x + B u``.

    The augmented matrix is balanced by a diagonal similarity before the matrix exponential, since the
    plant's coefficients span 20 orders of magnitude."""
    n, m = b.shape
    aug = np.zeros((n + m, n + m))
    aug[:n, :n] = a * dt
    aug[:n, n:] = b * dt
    bal, t = matrix_balance(aug, permute=False, separate=True)
    scale = t[0]
    e = expm(bal)
    e = e * scale[:, None] / scale[None, :]
    return np.ascontiguousarray(e[:n, :n]), np.ascontiguousarray(e[:n, n:])


def structure_matrices(params: BenchmarkParams) -> dict:
    """Continuous state-space (x = [q; q']) of the numerical substructure (inputs [a_g, f_e]) and of the
    reference structure (input a_g), with the nominal specimen."""
    d = load_case(params.case)
    m, k, c = d["M"], d["K"], d["C"]
    e1 = np.zeros(3)
    e1[0] = 1.0
    iota = np.ones(3)
    mn, kn, cn = m.copy(), k.copy(), c.copy()
    mn[0, 0] -= params.m_e_kg
    kn[0, 0] -= params.k_e_n_per_m
    cn[0, 0] -= params.c_e_n_s_per_m

    def ss(mm, kk, cc, inputs):
        minv = np.linalg.inv(mm)
        a = np.zeros((6, 6))
        a[:3, 3:] = np.eye(3)
        a[3:, :3] = -minv @ kk
        a[3:, 3:] = -minv @ cc
        b = np.zeros((6, len(inputs)))
        for j, f in enumerate(inputs):
            b[3:, j] = -minv @ f
        return a, b

    a_n, b_n = ss(mn, kn, cn, [m @ iota, e1])
    a_r, b_r = ss(m, k, c, [m @ iota])
    return {"A_n": a_n, "B_n": b_n, "A_r": a_r, "B_r": b_r, "M": m, "K": k, "C": c,
            "M_n": mn, "K_n": kn, "C_n": cn}


def explicit_stability_limit(params: BenchmarkParams, matrices: dict | None = None) -> tuple[float, float]:
    """``(omega_max dt, 2/omega_max)`` of the numerical substructure's undamped ``M_n, K_n``: the central
    difference is stable for ``omega_max dt < 2`` (seed 001 Table 2.1)."""
    m = structure_matrices(params) if matrices is None else matrices
    limit = CentralDifference.stability_limit_dt(m["M_n"], m["K_n"])
    return 2.0 * params.dt_s / limit, limit


def check_explicit_stability(params: BenchmarkParams, matrices: dict | None = None) -> None:
    """Refuse ``integrator = "central_difference"`` when ``omega_max dt >= 2`` (the run would diverge)."""
    wdt, limit = explicit_stability_limit(params, matrices)
    if not wdt < 2.0:
        raise ParameterError(
            f"integrator: 'central_difference' is not allowed with dt_s = {params.dt_s!r}: omega_max dt = {wdt:.4g} of "
            f"the numerical substructure (M_n, K_n of case {params.case}) is not below 2; expected dt_s < "
            f"{limit:.4g} s or one of 'zoh', 'average_acceleration'")


def plant_values(params: BenchmarkParams, seed: int | None = None) -> PlantValues:
    """Nominal (``seed=None``) or perturbed transfer-system parameters (see module doc)."""
    b1, b2, a3, ke = params.beta1_per_s, params.beta2_per_s2, params.a3_per_s, params.k_e_n_per_m
    if seed is not None:
        n = np.random.default_rng(int(seed)).standard_normal(4)
        b1 += params.sigma_beta1_per_s * n[0]
        b2 += params.sigma_beta2_per_s2 * n[1]
        a3 += params.sigma_a3_per_s * n[2]
        ke += params.sigma_k_e_n_per_m * n[3]
        if ke <= 0.0:
            raise ParameterError(f"plant seed {seed}: drawn k_e = {ke:g} N/m is not positive")
    ce = 2.0 * params.zeta_e * math.sqrt(ke * params.m_e_kg)
    b1, b2, a3, ke = float(b1), float(b2), float(a3), float(ke)
    return PlantValues(beta1=b1, beta2=b2, a3=a3, k_e=ke, c_e=ce, m_e=params.m_e_kg, a1_beta0=params.a1_beta0,
                       a2=params.a2, gain=params.plant_gain, seed=None if seed is None else int(seed))


def plant_state_space(v: PlantValues) -> tuple[np.ndarray, np.ndarray]:
    """Continuous ``z' = A z + B u`` of the control plant, ``z = [v, v', F, x, x']`` (module doc)."""
    a = np.zeros((5, 5))
    a[0, 1] = 1.0
    a[1, 0] = -v.beta2
    a[1, 1] = -v.beta1
    a[1, 3] = -v.a1_beta0
    a[2, 0] = 1.0
    a[2, 2] = -v.a3
    a[2, 4] = -v.a2
    a[3, 4] = 1.0
    a[4, 2] = 1.0 / v.m_e
    a[4, 3] = -v.k_e / v.m_e
    a[4, 4] = -v.c_e / v.m_e
    b = np.zeros((5, 1))
    b[1, 0] = v.a1_beta0 * v.gain
    return a, b


def plant_transfer_function(v: PlantValues) -> tuple[np.ndarray, np.ndarray]:
    """Numerator and denominator (descending powers of s) of ``g Gs G0/(1 + Gs G0)``, built from the
    block polynomials (independent of :func:`plant_state_space`; used to check it)."""
    d0 = np.polyadd(np.polymul([1.0, v.a3], [v.m_e, v.c_e, v.k_e]), [v.a2, 0.0])   # G0 = 1/d0
    den = np.polyadd(np.polymul([1.0, v.beta1, v.beta2], d0), [v.a1_beta0])
    return np.array([v.gain * v.a1_beta0]), den


# ---------------------------------------------------------------------------------------------
# fast-path kernels
@numba.njit(cache=True)
def _advance2(ad, bd, x, u0, u1):
    """x <- Ad x + Bd [u0, u1] in place (Bd with two columns)."""
    n = x.shape[0]
    y = np.empty(n)
    for i in range(n):
        s = bd[i, 0] * u0 + bd[i, 1] * u1
        for j in range(n):
            s += ad[i, j] * x[j]
        y[i] = s
    x[:] = y


@numba.njit(cache=True)
def _quantise(value, per_volt, lsb_v, range_v):
    """Value through a converter: to volts, saturate at ±range, round to the nearest level, back."""
    v = value / per_volt
    if v > range_v:
        v = range_v
    elif v < -range_v:
        v = -range_v
    return np.rint(v / lsb_v) * lsb_v * per_volt


@numba.njit(cache=True)
def _plant_step(ad, bd, z, u, cfg):
    """One plant sample: D/A on u, z <- Ad z + Bd u.  ``cfg`` = [quantise, m/V, N/V, lsb V, range V, k_e,
    c_e, actuator_force]; returns (u applied, |F|, |x|, |x'|)."""
    if cfg[0] != 0.0:
        u = _quantise(u, cfg[1], cfg[3], cfg[4])
    n = z.shape[0]
    y = np.empty(n)
    for i in range(n):
        s = bd[i, 0] * u
        for j in range(n):
            s += ad[i, j] * z[j]
        y[i] = s
    z[:] = y
    return u, abs(z[2]), abs(z[3]), abs(z[4])


@numba.njit(cache=True)
def _plant_measure(z, nx, nf, cfg):
    """Sensors at the current state: (x_m, f_m) with noise (nx m, nf N) and A/D (``cfg`` as above)."""
    x = z[3] + nx
    if cfg[7] != 0.0:
        f = z[2] + nf
    else:
        f = cfg[5] * z[3] + cfg[6] * z[4] + nf
    if cfg[0] != 0.0:
        x = _quantise(x, cfg[1], cfg[3], cfg[4])
        f = _quantise(f, cfg[2], cfg[3], cfg[4])
    return x, f


@numba.njit(cache=True)
def _response(ad, bd, ag):
    """Displacements q (N x 3) of a structure x+ = Ad x + Bd a_g from rest."""
    n = ag.shape[0]
    x = np.zeros(ad.shape[0])
    out = np.zeros((n, 3))
    y = np.empty(ad.shape[0])
    for k in range(n):
        out[k, 0], out[k, 1], out[k, 2] = x[0], x[1], x[2]
        for i in range(ad.shape[0]):
            s = bd[i, 0] * ag[k]
            for j in range(ad.shape[0]):
                s += ad[i, j] * x[j]
            y[i] = s
        x[:] = y
    return out


@numba.njit(cache=True)
def _newmark_advance(mats, load, ncoef, st, scratch, x, a_g, f_meas, first):
    """One Newmark sample of the numerical substructure (:func:`rths_ros.core.numerics.newmark.newmark_sample`):
    load ``f = load[0] a_g + load[1] f_meas``; ``mats`` = [M^-1, S^-1, C, K] (4, n, n); ``ncoef`` = [dt, beta,
    gamma]; state ``st`` (3, n), ``scratch`` (5, n); the command ``[q; q']`` goes to ``x`` (2n,)."""
    n = st.shape[1]
    f = scratch[4]
    for i in range(n):
        f[i] = load[0, i] * a_g + load[1, i] * f_meas
    newmark_sample(st, first, mats[0], mats[1], mats[2], mats[3], ncoef[0], ncoef[1], ncoef[2], f, x[:n], x[n:],
                   scratch[:4])


@numba.njit(cache=True)
def _run_fused(ad_n, bd_n, scheme, mats, load, ncoef, ad_p, bd_p, cfg, ag, noise, coef, lim):
    """The whole run loop of :func:`run_benchmark` for a controller of the linear form of
    ``TrackingController.fast_coefficients`` (same order of operations as the per-step objects).
    ``scheme`` 0 = ZOH map ``ad_n, bd_n``, else Newmark with ``mats, load, ncoef`` (see
    :func:`_newmark_advance`).  ``lim`` = [force capacity, abort_on_stroke_velocity, stroke, velocity].
    Returns the columns, the abort row (-1 = none) and the maxima (|F|, |x|, |x'|)."""
    n = ag.shape[0]
    y = np.zeros((n, 3))
    cols = np.zeros((7, n))   # u, u_applied, x_m, f_m, x, xdot, f_act
    xs = np.zeros(ad_n.shape[0])
    st = np.zeros((3, load.shape[1]))
    scratch = np.zeros((5, load.shape[1]))
    z = np.zeros(ad_p.shape[0])
    l0, l1, ld, fb, p0, p1, pd = coef[0], coef[1], coef[2], coef[3], coef[4], coef[5], coef[6]
    y_prev = r_prev = e_prev = u_prev = 0.0
    xm, fm = _plant_measure(z, noise[0, 0], noise[0, 1], cfg)
    fmax = smax = vmax = 0.0
    abort = -1
    for k in range(n):
        y1 = xs[0]
        y[k, 0], y[k, 1], y[k, 2] = y1, xs[1], xs[2]
        cols[2, k], cols[3, k] = xm, fm
        cols[4, k], cols[5, k], cols[6, k] = z[3], z[4], z[2]
        r = l0 * y1 + l1 * y_prev - ld * r_prev
        e = r - fb * xm
        u = p0 * e + p1 * e_prev - pd * u_prev
        y_prev, r_prev, e_prev, u_prev = y1, r, e, u
        cols[0, k] = u
        if scheme == 0:
            _advance2(ad_n, bd_n, xs, ag[k], fm)
        else:
            _newmark_advance(mats, load, ncoef, st, scratch, xs, ag[k], fm, k == 0)
        if not np.isfinite(u):
            abort = k
            break
        ua, f, x, xd = _plant_step(ad_p, bd_p, z, u, cfg)
        cols[1, k] = ua
        fmax = max(fmax, f)
        smax = max(smax, x)
        vmax = max(vmax, xd)
        if not f <= lim[0]:
            abort = k
            break
        if lim[1] != 0.0 and (x > lim[2] or xd > lim[3]):
            abort = k
            break
        xm, fm = _plant_measure(z, noise[k + 1, 0], noise[k + 1, 1], cfg)
    return y, cols, abort, fmax, smax, vmax


def reference_response(params: BenchmarkParams, ag: np.ndarray) -> np.ndarray:
    """Floor displacements x_r (N x 3, m) of the reference structure (nominal specimen, no actuator)."""
    m = structure_matrices(params)
    ad, bd = zoh(m["A_r"], m["B_r"], params.dt_s)
    return _response(ad, bd, np.ascontiguousarray(ag, dtype=np.float64))


# ---------------------------------------------------------------------------------------------
# per-step objects
class NumericalSubstructure:
    """The building without the specimen; one :meth:`step` per sample (module doc, "Timing").

    ``x`` = ``[q; q']`` (6,) of the current sample, the command; with ``integrator = "zoh"`` it is the state of
    the map ``x <- Ad x + Bd [a_g, f_e]`` (``ad``, ``bd``), with a Newmark scheme the output of
    :func:`rths_ros.core.numerics.newmark.newmark_sample` (state ``state`` = rows ``q, q', q''``).  ``spectral_radius``:
    of ``Ad`` or of the scheme's amplification matrix (free response; <= 1 + round-off when stable)."""

    def __init__(self, params: BenchmarkParams):
        self.params = params
        self.integrator = params.integrator
        if self.integrator not in INTEGRATOR_CHOICES:
            raise ParameterError(f"integrator: {self.integrator!r} is not allowed; expected one of "
                                 + ", ".join(repr(c) for c in INTEGRATOR_CHOICES))
        m = structure_matrices(params)
        self.ad, self.bd = zoh(m["A_n"], m["B_n"], params.dt_s)
        self.x = np.zeros(6)
        self.scheme = INTEGRATOR_CHOICES.index(self.integrator)      # 0 = ZOH (the fused loop's switch)
        #: omega_max dt of the undamped M_n, K_n and the explicit limit 2/omega_max (seed 001 Table 2.1)
        self.omega_max_dt, self.dt_limit_s = explicit_stability_limit(params, m)
        if self.integrator == "zoh":
            self.spectral_radius = float(np.max(np.abs(np.linalg.eigvals(self.ad))))
            beta = gamma = 0.0
            self.mats = np.zeros((4, 3, 3))
        else:
            beta, gamma = NEWMARK_COEFFICIENTS[self.integrator]
            if beta == 0.0:
                check_explicit_stability(params, m)
            self.mats = np.ascontiguousarray(np.stack([
                np.linalg.inv(m["M_n"]), iteration_inverse(m["M_n"], m["C_n"], m["K_n"], params.dt_s, beta, gamma),
                m["C_n"], m["K_n"]]))
            amp = amplification_matrix(m["M_n"], m["C_n"], m["K_n"], params.dt_s, beta, gamma)
            self.spectral_radius = float(np.max(np.abs(np.linalg.eigvals(amp))))
        e1 = np.zeros(3)
        e1[0] = 1.0
        #: load f = load[0] a_g + load[1] f_e = -M iota a_g - e1 f_e (the right-hand side of the module doc)
        self.load = np.ascontiguousarray(np.stack([-m["M"] @ np.ones(3), -e1]))
        self.ncoef = np.array([params.dt_s, beta, gamma])
        self.state = np.zeros((3, 3))
        self._scratch = np.zeros((5, 3))
        self._first = True

    def reset(self) -> None:
        self.x[:] = 0.0
        self.state[:] = 0.0
        self._first = True

    @property
    def command(self) -> float:
        """y1 = q1 (m), the desired actuator displacement at the current sample."""
        return float(self.x[0])

    @property
    def displacements(self) -> np.ndarray:
        """q = [q1, q2, q3] (m) at the current sample (a copy)."""
        return self.x[:3].copy()

    def step(self, f_meas: float, a_g: float) -> float:
        """Advance one sample with the measured force ``f_meas`` (N) and ground acceleration ``a_g``
        (m/s²) of the sample (held over it, or at the scheme's time level); returns the next command y1 (m)."""
        if self.scheme == 0:
            _advance2(self.ad, self.bd, self.x, float(a_g), float(f_meas))
        else:
            _newmark_advance(self.mats, self.load, self.ncoef, self.state, self._scratch, self.x, float(a_g),
                             float(f_meas), self._first)
            self._first = False
        return float(self.x[0])


class ServoHydraulicPlant:
    """Servo-valve, actuator, specimen, sensors and converters; one :meth:`step` per sample."""

    NOISE_BLOCK = 4096

    def __init__(self, params: BenchmarkParams, values: PlantValues | None = None, noise_seed: int | None = None):
        self.params = params
        self.values = values if values is not None else plant_values(params)
        a, b = plant_state_space(self.values)
        self.a_c, self.b_c = a, b
        self.ad, self.bd = zoh(a, b, params.dt_s)
        self.spectral_radius = float(np.max(np.abs(np.linalg.eigvals(self.ad))))
        self.stable = self.spectral_radius < 1.0
        p = params
        self._sx = math.sqrt(p.disp_noise_power_m2_s / p.dt_s) if p.noise_enabled else 0.0
        self._sf = math.sqrt(p.force_noise_power_n2_s / p.dt_s) if p.noise_enabled else 0.0
        self._lsb = 2.0 * p.adc_range_v / 2.0 ** p.adc_bits
        self._actuator = p.specimen_force == "actuator"
        self._cfg = np.array([1.0 if p.quantise else 0.0, p.disp_m_per_v, p.force_n_per_v, self._lsb, p.adc_range_v,
                              self.values.k_e, self.values.c_e, 1.0 if self._actuator else 0.0])
        self._noise_seed = (p.noise_seed, 0 if self.values.seed is None else self.values.seed + 1) \
            if noise_seed is None else (int(noise_seed),)
        self.z = np.zeros(5)
        self.reset()

    def reset(self) -> None:
        self.z[:] = 0.0
        self._rng = np.random.default_rng(self._noise_seed)
        self._noise = []
        self._ni = 0
        self.u_applied = 0.0
        self.max_abs_force_n = 0.0
        self.max_abs_stroke_m = 0.0
        self.max_abs_velocity_m_per_s = 0.0

    # true signals -------------------------------------------------------------------------
    @property
    def displacement(self) -> float:
        """True actuator (= specimen) displacement x (m)."""
        return float(self.z[3])

    @property
    def velocity(self) -> float:
        return float(self.z[4])

    @property
    def actuator_force(self) -> float:
        """Actuator force F = m_e x'' + c_e x' + k_e x (N)."""
        return float(self.z[2])

    @property
    def specimen_force(self) -> float:
        """The force the load cell reports before noise: restoring or actuator force (module doc)."""
        if self._actuator:
            return float(self.z[2])
        return self.values.k_e * float(self.z[3]) + self.values.c_e * float(self.z[4])

    # sampling --------------------------------------------------------------------------------
    def noise_sequence(self, count: int) -> np.ndarray:
        """The first ``count`` (x, f) noise samples a fresh :meth:`reset` would draw (count x 2; m, N)."""
        rng = np.random.default_rng(self._noise_seed)
        blocks = []
        for _ in range(-(-count // self.NOISE_BLOCK)):
            block = rng.standard_normal((self.NOISE_BLOCK, 2))
            block[:, 0] *= self._sx
            block[:, 1] *= self._sf
            blocks.append(block)
        return np.concatenate(blocks)[:count] if blocks else np.zeros((0, 2))

    def _draw(self) -> tuple[float, float]:
        if self._ni >= len(self._noise):
            block = self._rng.standard_normal((self.NOISE_BLOCK, 2))
            block[:, 0] *= self._sx
            block[:, 1] *= self._sf
            self._noise = block.tolist()
            self._ni = 0
        nx, nf = self._noise[self._ni]
        self._ni += 1
        return nx, nf

    def measure(self) -> tuple[float, float]:
        """Sample the sensors at the current instant: (x_m in m, f_m in N), noisy and quantised.  Draws
        one noise sample; call once per sample (``step`` calls it)."""
        nx, nf = self._draw()
        return _plant_measure(self.z, nx, nf, self._cfg)

    def step(self, u: float) -> tuple[float, float]:
        """Apply the command ``u`` (m) through the D/A over one sample, then sample the sensors.

        Raises :class:`ActuatorCapacityExceeded` when |F| exceeds the capacity (and, with
        ``abort_on_stroke_velocity``, when stroke or velocity are exceeded)."""
        u = float(u)
        if not math.isfinite(u):
            raise ActuatorCapacityExceeded(f"command is not finite ({u!r})")
        self.u_applied, f, x, xd = _plant_step(self.ad, self.bd, self.z, u, self._cfg)
        if f > self.max_abs_force_n:
            self.max_abs_force_n = f
        if x > self.max_abs_stroke_m:
            self.max_abs_stroke_m = x
        if xd > self.max_abs_velocity_m_per_s:
            self.max_abs_velocity_m_per_s = xd
        p = self.params
        if not f <= p.force_capacity_n:
            raise ActuatorCapacityExceeded(f"actuator force {self.z[2]:.6g} N beyond the capacity "
                                           f"±{p.force_capacity_n:g} N")
        if p.abort_on_stroke_velocity and (x > p.stroke_m or xd > p.velocity_m_per_s):
            raise ActuatorCapacityExceeded(f"stroke {self.z[3]:.6g} m or velocity {self.z[4]:.6g} m/s beyond "
                                           f"±{p.stroke_m:g} m / ±{p.velocity_m_per_s:g} m/s")
        nx, nf = self._draw()
        return _plant_measure(self.z, nx, nf, self._cfg)


# ---------------------------------------------------------------------------------------------
# in-process runs
def benchmark_params(case: int = 1, earthquake: str = "elcentro", **overrides) -> BenchmarkParams:
    return build(BenchmarkParams, {"case": case, "earthquake": earthquake, **overrides}, section="benchmark")


def run_benchmark(case: int | None = None, earthquake: str | None = None, controller: TrackingController | None = None,
                  perturbed_seed: int | None = None, params: BenchmarkParams | None = None,
                  evaluate: bool = True, convention: str = "paper", fast: bool | None = None,
                  **overrides) -> dict:
    """One benchmark run in process.

    ``controller``: any :class:`TrackingController` (reset before the run; default the reference
    controller).  ``perturbed_seed``: None = nominal plant, else the seeded perturbed plant.  ``params``
    or keyword ``overrides`` change :class:`BenchmarkParams` (``case``/``earthquake`` arguments, when not
    None, win; defaults case 1, El Centro).

    Returns the record: ``t``, ``a_g``, ``y`` (N x 3 numerical DoFs, y[:,0] = y1 command), ``u``
    (controller output), ``u_applied`` (after the D/A), ``x_m``, ``f_m`` (measured), ``x``, ``f``
    (true displacement and fed-back force before the sensors), ``f_act`` (actuator force), ``x_r``
    (N x 3 reference), ``plant`` (the :class:`PlantValues`), ``aborted``, ``abort_reason``,
    ``limits`` and, with ``evaluate``, ``J`` (J1-J9 of :mod:`rths_ros.core.models.building.criteria`).

    ``fast``: None = use the compiled loop when the controller offers ``fast_coefficients()``, True =
    require it, False = always call the per-step objects (the result is the same)."""
    if params is None:
        params = benchmark_params(1 if case is None else case, "elcentro" if earthquake is None else earthquake,
                                  **overrides)
    else:
        if overrides:
            raise ParameterError("benchmark: give either params or keyword overrides, not both")
        params = build(BenchmarkParams, {**{f: getattr(params, f) for f in params.__dataclass_fields__},
                                         **({} if case is None else {"case": case}),
                                         **({} if earthquake is None else {"earthquake": earthquake})},
                       section="benchmark")
    ctrl = controller if controller is not None else ReferenceController(dt_s=params.dt_s)
    if abs(ctrl.dt_s - params.dt_s) > 1e-15:
        raise ParameterError(f"controller dt_s {ctrl.dt_s!r} differs from the benchmark's dt_s {params.dt_s!r}")
    ag = ground_motion(params)
    n = ag.size
    num = NumericalSubstructure(params)
    plant = ServoHydraulicPlant(params, plant_values(params, perturbed_seed))
    num.reset()
    plant.reset()
    ctrl.reset()
    coef = ctrl.fast_coefficients() if fast is not False else None
    if fast and coef is None:
        raise ParameterError("fast: the controller offers no fast_coefficients(); use fast=None or False")
    keys = ("u", "u_applied", "x_m", "f_m", "x", "xdot", "f_act")
    if coef is not None:
        p = params
        lim = np.array([p.force_capacity_n, 1.0 if p.abort_on_stroke_velocity else 0.0, p.stroke_m,
                        p.velocity_m_per_s])
        yarr, carr, abort, fmax, smax, vmax = _run_fused(num.ad, num.bd, num.scheme, num.mats, num.load, num.ncoef,
                                                         plant.ad, plant.bd, plant._cfg, ag,
                                                         plant.noise_sequence(n + 1),
                                                         np.asarray(coef, dtype=float), lim)
        plant.max_abs_force_n, plant.max_abs_stroke_m, plant.max_abs_velocity_m_per_s = fmax, smax, vmax
        aborted = abort >= 0
        k = abort if aborted else n - 1
        reason = ""
        if aborted:
            u_k = carr[0, k]
            reason = (f"step {k}: command is not finite ({u_k!r})" if not math.isfinite(u_k) else
                      f"step {k}: actuator force, stroke or velocity beyond the limits (|F| max {fmax:.6g} N, "
                      f"|x| max {smax:.6g} m, |x'| max {vmax:.6g} m/s)")
        cols = dict(zip(keys, carr))
        y1_, y2_, y3_ = yarr[:, 0], yarr[:, 1], yarr[:, 2]
    else:
        cols = {key: [0.0] * n for key in keys}
        u_, ua_, xm_, fm_, x_, xd_, fa_ = (cols[key] for key in keys)
        y1_, y2_, y3_ = [0.0] * n, [0.0] * n, [0.0] * n
        aborted, reason = False, ""
        xm, fm = plant.measure()
        cstep, pstep, nstep = ctrl.step, plant.step, num.step
        ad_n, bd_n, xs = num.ad, num.bd, num.x
        zoh_map = num.scheme == 0
        z = plant.z
        agl = ag.tolist()
        k = 0
        for k in range(n):
            y1 = xs[0]
            y1_[k], y2_[k], y3_[k] = y1, xs[1], xs[2]
            xm_[k], fm_[k] = xm, fm
            x_[k], xd_[k], fa_[k] = z[3], z[4], z[2]
            u = cstep(y1, xm)
            u_[k] = u
            if zoh_map:
                _advance2(ad_n, bd_n, xs, agl[k], fm)      # NumericalSubstructure.step without the wrapper
            else:
                nstep(fm, agl[k])
            try:
                xm, fm = pstep(u)
            except ActuatorCapacityExceeded as exc:
                aborted, reason = True, f"step {k}: {exc}"
                ua_[k] = plant.u_applied
                break
            ua_[k] = plant.u_applied
    m = (k + 1) if aborted else n
    out = {key: np.asarray(v[:m], dtype=float) for key, v in cols.items()}
    out["y"] = np.column_stack([np.asarray(v[:m], dtype=float) for v in (y1_, y2_, y3_)])
    if params.specimen_force == "actuator":
        out["f"] = out["f_act"].copy()
    else:
        out["f"] = plant.values.k_e * out["x"] + plant.values.c_e * out["xdot"]
    out["t"] = np.arange(m) * params.dt_s
    out["a_g"] = ag[:m]
    out["x_r"] = reference_response(params, ag)[:m]
    out["plant"] = plant.values
    out["params"] = params
    out["aborted"] = aborted
    out["abort_reason"] = reason
    out["limits"] = {"max_abs_force_n": plant.max_abs_force_n, "max_abs_stroke_m": plant.max_abs_stroke_m,
                     "max_abs_velocity_m_per_s": plant.max_abs_velocity_m_per_s,
                     "stroke_exceeded": plant.max_abs_stroke_m > params.stroke_m,
                     "velocity_exceeded": plant.max_abs_velocity_m_per_s > params.velocity_m_per_s}
    if evaluate and not aborted:
        from rths_ros.core.models.building.criteria import evaluate_record
        out["J"] = evaluate_record(out, convention=convention)
    return out


def run_perturbed(case: int = 1, runs: int = 20, earthquake: str = "elcentro",
                  controller: TrackingController | Callable[[], TrackingController] | None = None,
                  seeds: list[int] | None = None, convention: str = "paper", **overrides) -> dict:
    """``runs`` perturbed-plant runs (seeds 1..runs unless given).  Returns per-run J1-J9 (``table``:
    runs x 9, NaN for aborted runs), their ``mean``, ``std`` (sample, ddof=1), ``min``, ``max`` over the
    completed runs, the ``seeds``, the drawn ``plants`` and the ``aborted`` runs' reasons."""
    from rths_ros.core.models.building.criteria import CRITERIA
    seeds = list(range(1, runs + 1)) if seeds is None else [int(s) for s in seeds]
    table = np.full((len(seeds), len(CRITERIA)), np.nan)
    plants, aborted = [], {}
    for i, seed in enumerate(seeds):
        ctrl = controller() if callable(controller) and not isinstance(controller, TrackingController) else controller
        rec = run_benchmark(case, earthquake, ctrl, perturbed_seed=seed, convention=convention, **overrides)
        plants.append(rec["plant"])
        if rec["aborted"]:
            aborted[seed] = rec["abort_reason"]
            continue
        table[i] = [rec["J"][c] for c in CRITERIA]
    ok = ~np.isnan(table[:, 0])
    done = table[ok]
    stat = {}
    for name, fn in (("mean", np.mean), ("min", np.min), ("max", np.max)):
        stat[name] = dict(zip(CRITERIA, fn(done, axis=0))) if done.size else {}
    stat["std"] = dict(zip(CRITERIA, np.std(done, axis=0, ddof=1))) if done.shape[0] > 1 else {}
    return {"case": case, "earthquake": earthquake, "seeds": seeds, "criteria": CRITERIA, "table": table,
            "plants": plants, "aborted": aborted, "convention": convention, **stat}
