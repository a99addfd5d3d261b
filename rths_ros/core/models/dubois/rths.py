"""du Bois et al.'s (2010) substructured damper rig (:mod:`.rig`) as a scenario of the node graph.

``numerical.model = dubois_damper`` is the model of the ``damper_rig`` family: one interface DoF, the piston of a
hydraulic damper driven by a servo-hydraulic actuator (its transfer system), instead of the Stewart platform.
The nodes drive the objects here through the same protocols as every other rig (:mod:`rths_ros.app.factory`):

====================== ================================ =====================================================
node                   object                           at step k
====================== ================================ =====================================================
numerical_substructure :class:`DamperBlend`, then       ``f = gamma f_p + (1 - gamma) f_n`` (eq. 25; ``f_n``: the
                       :class:`ModalChain`              damper model driven by ``x2``), the power-discrepancy
                                                        trip; one RK4 step of the modal chain with ``[0, -f]``
                                                        and the base motion ``x0``
stewart_platform       ``LinearActuatorPath`` with      actuator demand ``r`` = inverse process model with
                       :class:`TdcShaper`               forward prediction of ``s_x x2`` (transfer-dynamics
                                                        cancellation, §3-4); ``s_x`` ramps from 0 to 1
sim_plant              :class:`DamperRigTwin`           the actuator under its loop and the physical damper;
                                                        LVDT and load cell with noise
ft_sensor              ``DirectForce``                  the load cell is the interface force
====================== ================================ =====================================================

The order of the calls is that of :func:`rths_ros.core.models.dubois.rig.run_substructured`, with one
difference: the trip there sees the numerical velocity after the step, here the one of step k (the numerical
node blends before it steps).  While the trip does not fire (or is off) the records are those of
``run_substructured`` bit for bit (``test/core/models/dubois/test_dubois_scenario.py``).

Message mapping: LegCommand ``length[0]`` = the demand ``r`` (m); LegState ``length[0]`` = LVDT (with noise),
``length[1]`` = true actuator displacement, ``velocity[0]`` = backward difference of the LVDT (``v_p``);
RawWrench ``force.x`` = load cell (damper force + noise), ``force.y`` = true damper force.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.core.methods.prediction import PredictorParams
from rths_ros.core.methods.tdc import (
    ForceSwitch,
    InverseModelFeedforward,
    ProcessModelParams,
    RampedSwitch,
    SwitchParams,
    TripParams,
)
from rths_ros.core.models.base import OneDofModel
from rths_ros.core.models.dubois.actuator import Actuator
from rths_ros.core.models.dubois.damper import HydraulicDamper
from rths_ros.core.models.dubois.modal import ModalSubstructure
from rths_ros.core.models.dubois.params import RigParams
from rths_ros.core.models.dubois.rig import base_motion as rig_base_motion
from rths_ros.core.plant.base import PlantOutput
from rths_ros.params import ParameterError, param

__all__ = ["DuboisScenarioParams", "ModalChain", "base_motion", "build", "DamperBlend", "TdcShaper",
           "DamperRigTwin"]

#: the G2 process model fitted on the twin's standard damper (`rths damper-rig qualify`, seed 1; rounded): the mode
#: the paper found best ("acceptable beyond 20 Hz"); static gain K / w0^2 = 1.003
G2_FIT = ProcessModelParams(kind="G2", gain=16024.0, tau_p_s=0.005, zeta=0.4824, omega0_rad_s=126.41, delay_s=0.0)


@dataclass(frozen=True)
class DuboisScenarioParams:
    """The rig (:class:`~rths_ros.core.models.dubois.params.RigParams`), the base excitation and the coupling."""

    rig: RigParams = param(RigParams(), doc="chain, damper, Maxwell model, actuator, control period")
    amplitude_m: float = param(0.001, "m", 0.0, 0.02, "amplitude A of the base displacement x0 = A e(t) sin(2 pi f t)")
    frequency_hz: float = param(5.0, "Hz", 0.0, 100.0, "frequency f of the base displacement")
    ramp_s: float = param(1.0, "s", 0.0, 100.0, "smooth start e(t) = (1 - cos(pi t / ramp_s)) / 2 for t < ramp_s")
    model: ProcessModelParams = param(G2_FIT, doc="process model whose inverse shapes the demand (identity: kind "
                                      "G1, gain 1, tau_p_s 0 = no cancellation; G1D/G2D: with forward prediction)")
    predictor: PredictorParams = param(PredictorParams(order=6, window_s=0.1, n_samples=20),
                                       doc="forward predictor of the delayed models (du Bois et al.'s (2010) test predictor)")
    switches: SwitchParams = param(SwitchParams(gamma_rate_per_s=2.0, sx_rate_per_s=2.0), doc="force switch gamma "
                                   "and displacement switch s_x, ramped from 0 to 1")
    trip: TripParams = param(TripParams(enabled=False), doc="power-discrepancy trip dP = f (x2' - v_p) (off: the "
                             "paper's substructuring tests ran without it)")
    noise_seed: int = param(1, "", 0, 2**31 - 1, "seed of the LVDT and load-cell noise (trial j: noise_seed + j)")


def base_motion(p: DuboisScenarioParams):
    """``t -> (x0, x0', x0'')`` with the smooth start of :func:`~rths_ros.core.models.dubois.rig.run_substructured`."""
    return rig_base_motion(p.amplitude_m, p.frequency_hz, p.ramp_s)


class ModalChain:
    """The 2-DOF chain as modal transfer functions (RK4): ``step(f) -> (x2, x2')`` with ``[0, -f]`` on the masses
    and the base motion."""

    def __init__(self, p: DuboisScenarioParams, dt_s: float):
        self.sub = ModalSubstructure.from_chain(p.rig.chain, dt_s)
        self.base = base_motion(p)
        self._f = np.zeros(2)

    def reset(self) -> None:
        self.sub.reset()

    def step(self, f_int: float) -> tuple[float, float]:
        self._f[1] = -float(f_int)
        self.sub.step(self._f, self.base)
        return float(self.sub.displacement(1)[0]), float(self.sub.velocity(1)[0])

    @property
    def velocity(self) -> float:
        return float(self.sub.velocity(1)[0])


def build(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = dubois_damper`` (``numerical.dubois_damper``)."""
    p = numerical.dubois_damper
    if abs(p.rig.dt_s - dt_s) > 1e-15:
        raise ParameterError(f"numerical.dubois_damper.rig.dt_s: {p.rig.dt_s!r} differs from loop.dt_s = {dt_s!r}; "
                             "they must be equal (the rig's control period is the synchronisation step)")
    return OneDofModel(ModalChain(p, dt_s))


class DamperBlend(ForceSwitch):
    """Eq. (25) and the power-discrepancy trip in the numerical node: ``force(f_p, x2, x2', v_p) -> f``.  The damper
    model ``f_n`` follows the numerical ``x2`` (advanced to ``x2`` of step k before the blend, as the rig advances
    it after the step before); once tripped, gamma falls to 0 in ``trip.ramp_time_s``."""

    def __init__(self, p: DuboisScenarioParams, dt_s: float):
        self.p = p
        self.dt = float(dt_s)
        self.model = HydraulicDamper(p.rig.damper, dt_s)
        self.reset()

    def reset(self) -> None:
        sw = self.p.switches
        self.model.reset()
        self.start_switch(sw.gamma_initial, sw.gamma_target, sw.gamma_rate_per_s, self.p.trip, self.dt)
        self.k = 0
        self.f_model = 0.0

    def force(self, f_phys: float, z_num: float, v_num: float, v_phys: float) -> float:
        if self.k > 0:
            self.f_model = self.model.step(z_num)
        f = self.switch(f_phys, self.f_model, v_num, v_phys)
        self.k += 1
        return f


class TdcShaper:
    """Transfer-dynamics cancellation on the platform path: ``r = G^-1 (prediction of s_x x2)``, then ``s_x``
    moves one period towards its target."""

    def __init__(self, p: DuboisScenarioParams, dt_s: float):
        self.p = p
        self.dt = float(dt_s)
        self.inverse = InverseModelFeedforward(p.model, p.predictor, dt_s)
        self.reset()

    def reset(self) -> None:
        sw = self.p.switches
        self.inverse.reset()
        self.sx = RampedSwitch(sw.sx_initial, sw.sx_target, sw.sx_rate_per_s)

    def __call__(self, x_num: float) -> float:
        r = self.inverse.step(self.sx.value * x_num)
        self.sx.step(self.dt)
        return r


class DamperRigTwin:
    """sim_plant of the ``damper_rig`` family: the transfer system (actuator under its loop, loaded by the damper)
    and the physical hydraulic damper, with the LVDT and load-cell noise of ``noise_seed`` drawn for the trial
    (``n_samples`` samples, as the rig study draws them; beyond them the sensors are noise-free).  No legs: no leg
    limits and no safe-pose ramp."""

    def __init__(self, p: DuboisScenarioParams, dt_s: float, n_samples: int):
        self.p = p
        self.dt = float(dt_s)
        self.n = int(n_samples)
        self.act = Actuator(p.rig.actuator, dt_s)
        self.phys = HydraulicDamper(p.rig.damper, dt_s)
        self.start_lengths = np.zeros(6)
        self.kinematics = None

    def reset(self, noise_seed: int) -> PlantOutput:
        a = self.p.rig.actuator
        rng = np.random.default_rng(int(noise_seed))
        self.nx = rng.normal(0.0, a.noise_x_m, self.n) if a.noise_x_m > 0 else np.zeros(self.n)
        self.nf = rng.normal(0.0, a.noise_f_n, self.n) if a.noise_f_n > 0 else np.zeros(self.n)
        self.act.reset()
        self.phys.reset()
        self.f_true = 0.0
        self.k = 0
        self._x_prev = 0.0
        return self._output()

    def step(self, length, feedforward_velocity=None) -> PlantOutput:
        """Apply the demand ``length[0]`` for one control period."""
        x = self.act.step(float(length[0]), self.f_true)
        self.f_true = self.phys.step(x)
        self.k += 1
        return self._output()

    def _output(self) -> PlantOutput:
        k = self.k
        x_m = self.act.x + (float(self.nx[k]) if k < self.n else 0.0)
        f_m = self.f_true + (float(self.nf[k]) if k < self.n else 0.0)
        lengths, vel, cur, w = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
        lengths[0], lengths[1] = x_m, self.act.x
        vel[0] = (x_m - self._x_prev) / self.dt if k > 0 else 0.0
        w[0], w[1] = f_m, self.f_true
        self._x_prev = x_m
        return PlantOutput(lengths, vel, cur, w)
