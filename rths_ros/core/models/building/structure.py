"""vRTHS benchmark of the RTHS community: a 3-story building on a servo-hydraulic actuator.

Silva, Gomez, Maghareh, Dyke, Spencer, "Benchmark control problem for real-time hybrid simulation",
MSSP 135 (2020); Insam 2022 §12.2 runs it with partitioning case 1 and El Centro.  The model is the one
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
  sample; or one of the Newmark schemes of Bartl 2019 §2.3 (:func:`rths_ros.core.numerics.newmark.newmark_sample`, the
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
  function u -> x is the benchmark's either way.  ``u`` is held over a sample, so the plant is
  discretised with the exact zero-order-hold map (matrix exponential, with balancing because
  ``a1β0`` = 2e13): this *is* the continuous solution, more accurate than the fixed-step RK4 of the
  Simulink package.
* **Fed-back force** (``specimen_force``, benchmark specification "Partition" and "Signals and hardware
  limits"): ``"actuator"`` (default, the specification's) the specimen's force
  ``f_e = F = m_e x'' + c_e x' + k_e x`` (what the load cell between actuator and specimen carries; with it,
  perfect tracking reproduces the reference exactly); ``"restoring"`` ``f_e = k_e x + c_e x'`` (an earlier
  reading, without the specimen's inertia).
* **Sensors**: band-limited white noise of power P per sample, i.e. Gaussian samples of standard deviation
  ``sqrt(P/Δt)``, on displacement and force.  No converter and no saturation on either: the measured
  displacement is ``x_m,k = x(t_k) + n_x,k`` and the force fed back to the numerical substructure is the
  specimen's force plus its noise, delayed ``force_delay_samples`` (default one) samples:
  ``f_m,k = f_e(t_k-1) + n_f,k-1`` (``f_m,0 = 0``, the delay starts at rest).  The converters of the benchmark
  (18 bit, step 1/2^18, saturation ±3.8) belong to the controller model
  (:mod:`rths_ros.core.models.building.tracking_controller`); the plant applies the command ``u`` as it is.
* **Limits**: an actuator force ``|F|`` beyond ``force_capacity_n`` aborts the run
  (:class:`ActuatorCapacityExceeded`); stroke and velocity beyond their limits are recorded
  (``record["limits"]``) and abort only when ``abort_on_stroke_velocity`` is set.
* **Perturbed plants** (:func:`plant_values`): with a seed, ``β1 += 3.3 N1``, ``β2 += 3.3e3 N2``,
  ``a3 += 1.3 N3``, ``k_e += 5e4 N4`` (N_i standard normal from ``numpy.random.default_rng(seed)``,
  drawn in that order); ``c_e = 2 ζ_e sqrt(k_e m_e)`` follows the drawn ``k_e`` (choice).  The
  numerical substructure and the reference keep the nominal specimen.

The building matrices and ground-motion records are read by :mod:`rths_ros.core.models.building.data`, the
per-sample numba kernels are in :mod:`rths_ros.core.models.building.kernels`, and the benchmark run (one run, the
perturbed-plant series and the timing of one sample) is :mod:`rths_ros.core.models.building.benchmark`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.building.data import CASES, EARTHQUAKES, load_case
from rths_ros.core.models.building.kernels import _advance2, _delay, _newmark_advance, _plant_measure, _plant_step
from rths_ros.core.models.building.tracking_controller import DT_S
from rths_ros.core.numerics.newmark import CentralDifference, amplification_matrix, iteration_inverse
from rths_ros.core.plant.base import PlantFault
from rths_ros.params import ParameterError, build, param

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
    specimen_force: str = param("actuator", "", doc=(
        "force fed back to the numerical substructure (no converter, no saturation): 'actuator' = the "
        "specimen's force m_e x'' + c_e x' + k_e x (= the actuator force; the specification's), 'restoring' = "
        "k_e x + c_e x' (without the specimen's inertia)"), choices=SPECIMEN_FORCE_CHOICES)
    force_delay_samples: int = param(1, "-", 0, 1000, "delay of the fed-back force (specimen force plus noise) "
                                     "in samples; the specification's is one")
    noise_enabled: bool = param(True, "", doc="add the band-limited white sensor noise")
    disp_noise_power_m2_s: float = param(6.25e-14, "m^2 s", 0.0, 1.0, "displacement noise power per sample")
    force_noise_power_n2_s: float = param(1.16e-3, "N^2 s", 0.0, 1e6, "force noise power per sample")
    noise_seed: int = param(0, "-", 0, 2**31 - 1, "seed of the sensor noise (with the plant seed)")
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


class ActuatorCapacityExceeded(PlantFault):
    """The actuator force exceeded its capacity: the benchmark aborts the run."""


# ---------------------------------------------------------------------------------------------
# discretisation
def zoh(a: np.ndarray, b: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact zero-order-hold discretisation ``x+ = Ad x + Bd u`` of ``x' = A x + B u``.

    The augmented matrix is balanced by a diagonal similarity before the matrix exponential, since the
    plant's coefficients span 20 orders of magnitude."""
    from scipy.linalg import expm, matrix_balance
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
    difference is stable for ``omega_max dt < 2`` (Bartl 2019 Table 2.1)."""
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
# per-step objects
class NumericalSubstructure:
    """The building without the specimen; one :meth:`step` per sample ("Timing" in the doc of
    :mod:`rths_ros.core.models.building.benchmark`).

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
        #: omega_max dt of the undamped M_n, K_n and the explicit limit 2/omega_max (Bartl 2019 Table 2.1)
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
    """Servo-valve, actuator, specimen and sensors (no converters); one :meth:`step` per sample."""

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
        self._actuator = p.specimen_force == "actuator"
        self._cfg = np.array([self.values.k_e, self.values.c_e, 1.0 if self._actuator else 0.0])
        self._fdelay = np.zeros(p.force_delay_samples)
        self._dpos = 0
        self._noise_seed = (p.noise_seed, 0 if self.values.seed is None else self.values.seed + 1) \
            if noise_seed is None else (int(noise_seed),)
        self.z = np.zeros(5)
        self.reset()

    def reset(self) -> None:
        self.z[:] = 0.0
        self._rng = np.random.default_rng(self._noise_seed)
        self._noise = []
        self._ni = 0
        self._fdelay[:] = 0.0
        self._dpos = 0
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
        """The fed-back force at the current instant, before the noise and the delay: the specimen's (actuator)
        force or the restoring force (``specimen_force``, module doc)."""
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
        """Sample the sensors at the current instant t_k: ``(x_m,k, f_m,k)``, ``x_m,k = x(t_k) + n_x,k`` (m) and the
        fed-back force ``f_m,k = f_e(t_k-d) + n_f,k-d`` (N; d = ``force_delay_samples``, 0 before the first d
        samples), no converter, no saturation.  Draws one noise sample and advances the force delay line; call
        once per sample (``step`` calls it)."""
        nx, nf = self._draw()
        x_m, f_s = _plant_measure(self.z, nx, nf, self._cfg)
        f_m, self._dpos = _delay(self._fdelay, self._dpos, f_s)
        return x_m, f_m

    def step(self, u: float) -> tuple[float, float]:
        """Apply the command ``u`` (m) as it is, held over one sample, then sample the sensors (:meth:`measure`).

        Raises :class:`ActuatorCapacityExceeded` when |F| exceeds the capacity (and, with
        ``abort_on_stroke_velocity``, when stroke or velocity are exceeded)."""
        u = float(u)
        if not math.isfinite(u):
            raise ActuatorCapacityExceeded(f"command is not finite ({u!r})")
        f, x, xd = _plant_step(self.ad, self.bd, self.z, u)
        self.u_applied = u
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
        return self.measure()


# ---------------------------------------------------------------------------------------------
# parameters of a run
def benchmark_params(case: int = 1, earthquake: str = "elcentro", **overrides) -> BenchmarkParams:
    return build(BenchmarkParams, {"case": case, "earthquake": earthquake, **overrides}, section="benchmark")
