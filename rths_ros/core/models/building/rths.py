"""The servo-hydraulic building benchmark (:mod:`rths_ros.core.models.building.structure`) as a scenario of the node graph.

``numerical.model = "building"`` runs the vRTHS benchmark of Silva et al. (2020) through the same four
fast-path nodes as every other scenario, at ``loop.dt_s = 1/4096 s``.  The objects here give each node the
interface it already drives (:mod:`rths_ros.app.factory` builds them; the in-process
:class:`rths_ros.app.vrths.VirtualRun` drives the same objects in the same order):

====================== ====================================== ==============================================
node                   object                                 what it does at sample k
====================== ====================================== ==============================================
sim_plant              :class:`ServoActuatorTwin`             ``u_k`` (LegCommand step k+1, ``length[0]``) ->
                                                              plant over ``[t_k, t_k+1)`` -> ``x_m,k+1``,
                                                              ``f_m,k+1`` (LegState / RawWrench step k+1)
ft_sensor              :class:`BuildingForce`                 ``f_m,k`` (``force.x``) -> InterfaceForce step k
numerical_substructure :class:`BuildingNumerical`             ``f_m,k``, ``a_g,k`` -> ``y_{k+1}`` (InterfaceCommand
                                                              step k+1, ``position = [y1, y2, y3]``)
stewart_platform       :class:`BuildingPlatform`              ``y1_k`` (InterfaceCommand step k) and ``x_m,k``
                                                              (LegState step k) -> ``u_k = C(y1_k, x_m,k)``
====================== ====================================== ==============================================

This is the timing of :func:`rths_ros.core.models.building.benchmark.run_benchmark` ("Timing of one sample k" in its module doc),
so a lockstep graph run reproduces the in-process core run bit for bit (``test/graph/test_benchmark_graph.py``).

Message mapping (the loop messages keep their types; the benchmark uses element 0 of the 6-vectors):

* LegCommand ``length[0]`` = ``u_k`` (m, the controller's output after its own converter); the other elements
  and the velocities are 0.  The platform publishes it, stamped step k+1, once it holds both ``y1_k`` and
  ``x_m,k`` (lockstep: waits for both; realtime: on ``x_m,k`` with the newest ``y1``).  No command follows the
  trial's last sample.
* LegState ``length[0]`` = ``x_m`` (measured: true displacement + noise, no converter), ``length[1]`` = true
  displacement ``x``, ``velocity[0]`` = true velocity ``x'``, ``current[0]`` = actuator force ``F`` (N),
  ``current[1]`` = the command that drove the plant into this sample (``u_{k-1}``, m; the plant has no
  converter).  Only ``length[0]`` enters the loop; the rest is recorded for the analysis.
* RawWrench ``force.x`` = ``f_m`` (the fed-back force: the specimen force plus noise, delayed one sample, no
  converter, no saturation), ``force.y`` = the specimen force at this sample before noise and delay (the
  actuator or the restoring force, ``specimen_force``).
* InterfaceForce ``force = measured = [f_m]``, ``contact`` = true.
* InterfaceCommand ``position = [q1, q2, q3]``, ``velocity = [q1', q2', q3']`` of the numerical substructure;
  ``position[0] = y1`` is the actuator's desired displacement, DoFs 2 and 3 ride along for J5-J9.
* InterfaceState ``position = [x_m]``, ``velocity = [x']``.

Choices (documented in docs/benchmark_building.md):

* The ground acceleration is not on the wire: the numerical node evaluates the record itself
  (:func:`rths_ros.core.models.building.benchmark.ground_motion`), ``a_g,k`` at its own sample index; beyond the record 0.
* Sensor noise: trial j draws from ``noise_seed + j`` (trial 0 is the core run's stream); ``loop.seed`` is not
  used by the benchmark.  The perturbed plant of ``plant_seed`` (>= 0) is drawn once per run
  (:func:`rths_ros.core.models.building.structure.plant_values`); ``-1`` = the nominal plant.
* An actuator force beyond the capacity (or, with ``abort_on_stroke_velocity``, stroke or velocity beyond
  their limits) aborts the run from the sim_plant node with the reason; there is no safe-pose ramp (the
  virtual actuator just stops).
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.building.benchmark import ground_motion, reference_response
from rths_ros.core.models.building.kernels import _run_trial
from rths_ros.core.models.building.structure import (
    ActuatorCapacityExceeded,
    BenchmarkParams,
    NumericalSubstructure,
    ServoHydraulicPlant,
    plant_values,
)
from rths_ros.core.models.building.tracking_controller import (
    DT_S,
    PassThroughController,
    ReferenceController,
    TrackingController,
    TrackingControllerParams,
)
from rths_ros.core.plant.base import PlantOutput as TwinOutput
from rths_ros.core.platform.commander import CommandRejected, LegCommandArrays
from rths_ros.params import ParameterError, param

CRITERIA_CONVENTIONS = ("paper", "matlab")

#: rows of the benchmark record (per sample k); ``y`` and ``ydot`` have three columns
BUILDING_KEYS = ("x_m", "f_m", "u", "u_da", "x", "xdot", "f_act", "f_true")


@dataclass(frozen=True)
class BuildingScenarioParams(BenchmarkParams):
    """The benchmark's parameters (:class:`rths_ros.core.models.building.structure.BenchmarkParams`) plus the run's plant draw."""

    plant_seed: int = param(-1, "-", -1, 2**31 - 1, "perturbed transfer system drawn with this seed (the "
                            "benchmark's N(0,1) perturbations of beta1, beta2, a3, k_e); -1 = the nominal plant")
    criteria_convention: str = param("paper", "", doc="J1-J9 definitions of the analysis: 'paper' (RMS, J4-J6 RMS "
                                     "errors of floors 1-3, J7-J9 peaks) or 'matlab' (standard deviation, the "
                                     "package's order)", choices=CRITERIA_CONVENTIONS)

    def validate(self) -> None:
        super().validate()
        if self.duration_s != 0.0:
            raise ParameterError(f"duration_s: {self.duration_s!r} is not allowed in a scenario; expected 0 (the "
                                 "run's length is loop.duration_s)")


def core_params(p: BuildingScenarioParams, duration_s: float = 0.0) -> BenchmarkParams:
    """The :class:`BenchmarkParams` of a scenario section (for :func:`rths_ros.core.models.building.benchmark.run_benchmark`)."""
    names = [f.name for f in dataclasses.fields(BenchmarkParams)]
    return BenchmarkParams(**{**{n: getattr(p, n) for n in names}, "duration_s": float(duration_s)})


def plant_draw(p: BuildingScenarioParams):
    """The realised transfer-system values of the run (nominal or perturbed)."""
    return plant_values(p, None if p.plant_seed < 0 else p.plant_seed)


def load_controller_class(class_path: str) -> type:
    module_name, sep, cls_name = str(class_path).partition(":")
    where = "tracking_controller.class_path"
    if not sep or not module_name or not cls_name:
        raise ParameterError(f"{where}: {class_path!r} is not allowed; expected 'module:Class', e.g. "
                             "'my_lab.controllers:MyController'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ParameterError(f"{where}: module {module_name!r} cannot be imported ({exc})") from None
    cls = getattr(module, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, TrackingController)):
        raise ParameterError(f"{where}: {class_path!r} is not a subclass of "
                             "rths_ros.core.models.building.tracking_controller.TrackingController")
    return cls


def make_controller(c: TrackingControllerParams, dt_s: float) -> TrackingController:
    """A fresh tracking controller of the scenario; its sample time must be ``dt_s``."""
    if c.kind == "reference":
        ctrl = ReferenceController(c.reference)
    elif c.kind == "passthrough":
        ctrl = PassThroughController(dt_s)
    else:
        ctrl = load_controller_class(c.class_path)()
    if abs(ctrl.dt_s - dt_s) > 1e-15:
        raise ParameterError(f"tracking_controller: the controller's dt_s {ctrl.dt_s!r} differs from loop.dt_s = "
                             f"{dt_s!r}")
    return ctrl


# ---------------------------------------------------------------------------------------------
class BuildingNumerical:
    """numerical_substructure: the building without the specimen, driven by the measured force and the record."""

    def __init__(self, p: BuildingScenarioParams):
        self.sub = NumericalSubstructure(p)
        self.a_g = ground_motion(p)          # the whole record (duration_s = 0)
        self.k = 0

    def reset(self) -> None:
        self.sub.reset()
        self.k = 0

    @property
    def q(self) -> np.ndarray:
        """[q1, q2, q3] (m) at the current sample; q1 = y1, the actuator's desired displacement."""
        return self.sub.x[:3].copy()

    @property
    def qd(self) -> np.ndarray:
        return self.sub.x[3:].copy()

    def step(self, f_meas: float) -> tuple[float, float]:
        """Advance one sample with ``f_m,k`` and ``a_g,k`` (0 beyond the record); returns (y1, y1')."""
        a = self.a_g[self.k] if self.k < self.a_g.size else 0.0
        self.sub.step(f_meas, a)
        self.k += 1
        return float(self.sub.x[0]), float(self.sub.x[3])


class BuildingModel:
    """The benchmark's :class:`~rths_ros.core.models.base.NumericalModel`: :class:`BuildingNumerical` (``inner``)
    fed the measured specimen force; command = ``[q1, q2, q3]`` (``q1 = y1``) and the velocities."""

    force_width = 1

    def __init__(self, inner: BuildingNumerical):
        self.inner = inner

    def reset(self) -> None:
        self.inner.reset()

    def step(self, force) -> int:
        self.inner.step(force[0])
        return 0

    def command(self) -> tuple[np.ndarray, np.ndarray]:
        return self.inner.q, self.inner.qd

    @property
    def velocity(self) -> float:
        return float(self.inner.sub.x[3])

    def abort_reason(self, events: int) -> str | None:
        return None


class BuildingForce:
    """ft_sensor: the fed-back force of the twin (specimen force + noise, delayed one sample, no converter) is the
    interface force, unchanged."""

    def reset(self) -> None:
        pass

    def process(self, wrench) -> tuple[float, float, bool]:
        f = float(wrench[0])
        return f, f, True


class BuildingPlatform:
    """stewart_platform: the tracking controller between the numerical command and the actuator.  The benchmark's
    closed-loop :class:`~rths_ros.core.platform.paths.PlatformPath`: ``u_k = C(y1_k, x_m,k)`` is the actuator
    command of step k+1 (``length[0]``)."""

    closed_loop = True
    commander = None

    def __init__(self, controller: TrackingController):
        self.controller = controller
        self.start_lengths = np.zeros(6)
        self._out = LegCommandArrays()

    def reset(self) -> None:
        self.controller.reset()

    def control(self, y1: float, x_m: float) -> float:
        """``u_k = C(y1_k, x_m,k)``."""
        return float(self.controller.step(float(y1), float(x_m)))

    def command(self, position, velocity, measured: float | None = None) -> LegCommandArrays:
        """The actuator command from the desired ``y1 = position[0]`` and the measured ``x_m``; an exception of a
        user's controller becomes :class:`~rths_ros.core.platform.commander.CommandRejected`."""
        try:
            u = self.control(position[0], measured)
        except Exception as exc:   # a user's controller failed: nothing more is commanded
            raise CommandRejected(f"tracking controller: {type(exc).__name__}: {exc}") from exc
        self._out.length[0] = u
        return self._out

    def check(self, cmd: LegCommandArrays) -> None:
        """The actuator has no leg limits here (its capacity is the twin's: ActuatorCapacityExceeded)."""

    @staticmethod
    def achieved(lengths, velocities) -> tuple[list, list]:
        return [float(lengths[0])], [float(velocities[0])]


class ServoActuatorTwin:
    """sim_plant: servo-valve, actuator, specimen and sensors (:class:`ServoHydraulicPlant`; the converters are the
    tracking controller's)."""

    def __init__(self, p: BuildingScenarioParams):
        self.params = p
        self.values = plant_draw(p)
        self.start_lengths = np.zeros(6)
        self.kinematics = None        # no safe-pose ramp after an abort
        self.plant: ServoHydraulicPlant | None = None
        self._noise_seed: int | None = None

    def reset(self, noise_seed: int) -> TwinOutput:
        """Back to rest with the sensor-noise stream ``noise_seed``; the measurement of sample 0."""
        noise_seed = int(noise_seed)
        if self.plant is None or noise_seed != self._noise_seed:
            self.plant = ServoHydraulicPlant(dataclasses.replace(self.params, noise_seed=noise_seed), self.values)
            self._noise_seed = noise_seed
        self.plant.reset()
        return self._output(*self.plant.measure())

    def step(self, length, feedforward_velocity=None) -> TwinOutput:
        """Apply ``u = length[0]`` over one sample; raises :class:`ActuatorCapacityExceeded`."""
        return self._output(*self.plant.step(float(length[0])))

    def _output(self, x_m: float, f_m: float) -> TwinOutput:
        pl = self.plant
        lengths = np.zeros(6)
        vel = np.zeros(6)
        cur = np.zeros(6)
        w = np.zeros(6)
        lengths[0], lengths[1] = x_m, pl.displacement
        vel[0] = pl.velocity
        cur[0], cur[1] = pl.actuator_force, pl.u_applied
        w[0], w[1] = f_m, pl.specimen_force
        return TwinOutput(lengths, vel, cur, w)


# ---------------------------------------------------------------------------------------------
#: record columns of :func:`run_trial_compiled`, in the row order of its kernel
_TRIAL_COLUMNS = ("x_m", "f_m", "u", "u_da", "x", "xdot", "f_act", "f_true")


def run_trial_compiled(num: BuildingNumerical, plat: BuildingPlatform, twin: ServoActuatorTwin, noise_seed: int,
                       n_steps: int, rec: dict, base: int) -> bool:
    """One trial (samples 0 .. ``n_steps``, rows ``base`` ..) of the objects' step loop in the compiled kernel
    :func:`rths_ros.core.models.building.kernels._run_trial`, for a controller of the linear form
    (``fast_coefficients``); the same numbers as the objects stepped one by one.  Returns False, with the record
    rows undefined, when the controller has no such form or the plant refused a command: then step the objects
    (which give the abort its message)."""
    ctrl = plat.controller
    coef = ctrl.fast_coefficients()
    if coef is None:
        return False
    twin.reset(noise_seed)
    plant, sub = twin.plant, num.sub
    p = plant.params
    lim = np.array([p.force_capacity_n, 1.0 if p.abort_on_stroke_velocity else 0.0, p.stroke_m, p.velocity_m_per_s])
    qc = ctrl.converter()
    conv = np.array([0.0, 1.0, 1.0] if qc is None else [1.0, float(qc[0]), float(qc[1])])
    ag = np.zeros(n_steps)
    m = min(n_steps, num.a_g.size)
    ag[:m] = num.a_g[:m]
    rows = slice(base, base + n_steps + 1)
    cols = np.empty((len(_TRIAL_COLUMNS), n_steps + 1))
    cols[2] = rec["u"][rows]
    abort = _run_trial(sub.ad, sub.bd, sub.scheme, sub.mats, sub.load, sub.ncoef, plant.ad, plant.bd, plant._cfg,
                       np.zeros(p.force_delay_samples), ag, plant.noise_sequence(n_steps + 1),
                       np.asarray(coef, dtype=float), conv, lim, n_steps, rec["y"][rows], rec["ydot"][rows], cols)
    if abort >= 0:
        return False
    for key, col in zip(_TRIAL_COLUMNS, cols):
        rec[key][rows] = col
    return True


def empty_building_record(n: int) -> dict:
    rec = {"k": np.arange(n), "t": np.zeros(n), "y": np.zeros((n, 3)), "ydot": np.zeros((n, 3))}
    for key in BUILDING_KEYS:
        rec[key] = np.zeros(n)
    rec["u"][:] = np.nan          # no command follows the last sample of a trial
    return rec


def benchmark_view(rec: dict, p: BuildingScenarioParams, dt_s: float) -> dict:
    """A graph or virtual-run record (one trial) in the layout of :func:`rths_ros.core.models.building.benchmark.run_benchmark`'s
    record: adds ``a_g`` and the reference response ``x_r`` of the same length."""
    n = rec["k"].size
    ag_full = ground_motion(p)
    ag = np.zeros(n)
    m = min(n, ag_full.size)
    ag[:m] = ag_full[:m]
    out = {key: np.asarray(rec[key], float) for key in BUILDING_KEYS + ("y", "ydot")}
    out["f"] = out["f_true"]
    out["u_applied"] = np.append(out["u_da"][1:], np.nan)     # u_k as the plant applied it over [t_k, t_k+1)
    out["t"] = np.arange(n) * dt_s
    out["a_g"] = ag
    out["x_r"] = reference_response(p, ag)
    return out


def limits_of(view: dict, p: BuildingScenarioParams) -> dict:
    """Peak actuator force, stroke and velocity of a record, as :func:`run_benchmark`'s ``limits``.  The
    graph records the state at the samples; the core's maxima are over the same samples."""
    fmax = float(np.max(np.abs(view["f_act"]))) if view["f_act"].size else 0.0
    smax = float(np.max(np.abs(view["x"]))) if view["x"].size else 0.0
    vmax = float(np.max(np.abs(view["xdot"]))) if view["xdot"].size else 0.0
    return {"max_abs_force_n": fmax, "max_abs_stroke_m": smax, "max_abs_velocity_m_per_s": vmax,
            "stroke_exceeded": smax > p.stroke_m, "velocity_exceeded": vmax > p.velocity_m_per_s}


__all__ = ["ActuatorCapacityExceeded", "BuildingForce", "BuildingNumerical", "BuildingPlatform",
           "BuildingScenarioParams", "ServoActuatorTwin", "TrackingControllerParams", "DT_S", "benchmark_view",
           "core_params", "empty_building_record", "limits_of", "make_controller", "plant_draw",
           "run_trial_compiled"]
