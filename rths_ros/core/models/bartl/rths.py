"""The cubic-spring rig of seed 001 §6.2 (:mod:`.cubic_spring`) as a scenario of the node graph.

``numerical.model = cubic_spring`` is the model of the ``linear_motor`` family: one interface DoF, the rod
position of a linear motor that carries the force sensor and the cubic spring, instead of the Stewart platform.
The fast-path nodes drive the objects here through the same protocols as every other rig
(:mod:`rths_ros.app.factory` builds them; :class:`rths_ros.app.vrths.VirtualRun` drives them in the 1-D loop):

====================== ============================================ ===========================================
node                   object                                       what it does at sample k
====================== ============================================ ===========================================
numerical_substructure :class:`VirtualPart` (in ``OneDofModel``)    ``F_int,k`` -> ``y_VIR,k+1`` by Newmark
                                                                    (beta = 1/4, gamma = 1/2) with
                                                                    ``f_ext(t_k+1) - F_int,k``
stewart_platform       :class:`~rths_ros.core.platform.             ``y_VIR,k`` -> position demand ``x_d``
                       linear_actuator.LinearActuatorPath`          (LegCommand ``length[0]``)
sim_plant              :class:`CubicSpringTwin`                     ``x_d`` held one sample -> measured rod
                                                                    position and spring force
ft_sensor              :class:`~rths_ros.core.platform.             the measured force, unchanged
                       linear_actuator.DirectForce`
passivity_controller   :class:`~rths_ros.core.methods.passivity.    ``F_d,k = alpha_k y_VIR-dot_k`` added to the
                       PassivityController`                         measured force (PBC, §4.4)
====================== ============================================ ===========================================

The order is that of :func:`rths_ros.core.models.bartl.loop.simulate_cubic` with ``strategy = "pbc"``: the
virtual part's step k -> k+1 uses the force measured after the demand ``y_VIR,k`` was held for one sample (the
force "at the same sample", eq. 2.48), and the passivity controller's ``F_d`` observes the powers of the step
before.  The twin's sample 0 is the rig held one sample at rest, so the graph's sample k is the loop's sample
k+1 of the force and position and the records agree to floating-point accuracy
(``test/core/models/test_cubic_spring_scenario.py``).

Message mapping: LegCommand ``length[0]`` = ``x_d`` (m), ``velocity[0]`` = ``y_VIR-dot``; LegState
``length[0]`` = measured rod position, ``length[1]`` = true position, ``velocity[0]`` = backward difference of
the measured position (what the passivity controller sees as the achieved velocity), ``velocity[1]`` = true
velocity, ``current[0]`` = motor force (N), ``current[1]`` = 1 when the demand was clipped at the stroke;
RawWrench ``force.x`` = measured spring force (bias and noise included), ``force.y`` = true spring force.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.bartl.cubic_spring import CubicSpringParams, CubicSpringRig, spring_force
from rths_ros.core.models.base import OneDofModel
from rths_ros.core.numerics.newmark import newmark_sdof_step
from rths_ros.core.plant.base import PlantOutput
from rths_ros.params import ParameterError, param

__all__ = ["CubicSpringScenarioParams", "VirtualPart", "CubicSpringTwin", "build", "rig_params", "reference",
           "reference_motion"]


@dataclass(frozen=True)
class CubicSpringScenarioParams(CubicSpringParams):
    """The rig (:class:`~rths_ros.core.models.bartl.cubic_spring.CubicSpringParams`: virtual part, spring, motor,
    sensors) and the excitation ``f_ext = A cos(2 pi f t)`` of the virtual part (§6.2.2)."""

    excitation_amplitude_n: float = param(10.0, "N", 0.0, 1e4, "amplitude A of the excitation force on the "
                                          "virtual part (§6.2.2: 10 N at 10 Hz, 40 N at 20 and 30 Hz)")
    excitation_frequency_hz: float = param(10.0, "Hz", 0.0, 500.0, "frequency f of the excitation")
    excitation_on_s: float = param(0.0, "s", 0.0, 1e4, "time the excitation is switched on (a step of the "
                                   "cosine: f_ext = 0 before)")


def rig_params(p: CubicSpringScenarioParams) -> CubicSpringParams:
    """The rig's own parameters of a scenario section."""
    names = [f.name for f in dataclasses.fields(CubicSpringParams)]
    return CubicSpringParams(**{n: getattr(p, n) for n in names})


class VirtualPart:
    """VIR of Table 6.2: ``m x'' + d x' + k x = f_ext(t) - F_int`` by Newmark (average acceleration) with the
    force at the new time level; ``step(F_int,k) -> (x_k+1, x'_k+1)`` applies ``f_ext(t_k+1) - F_int,k``."""

    def __init__(self, p: CubicSpringScenarioParams, dt_s: float):
        self.p = p
        self.dt_s = float(dt_s)
        self._w = 2.0 * math.pi * p.excitation_frequency_hz
        self.state = np.zeros(3)
        self._scratch = np.zeros(3)
        self.k = 0

    def reset(self) -> None:
        self.state[:] = 0.0
        self.k = 0

    def excitation(self, t: float) -> float:
        p = self.p
        return p.excitation_amplitude_n * math.cos(self._w * t) if t >= p.excitation_on_s - 1e-12 else 0.0

    def step(self, f_int: float) -> tuple[float, float]:
        p = self.p
        self.k += 1
        f = self.excitation(self.k * self.dt_s)
        newmark_sdof_step(self.state, p.m_vir_kg, p.d_vir_n_s_per_m, p.k_vir_n_per_m, self.dt_s, 0.25, 0.5,
                          f - float(f_int), self._scratch)
        return float(self.state[0]), float(self.state[1])

    @property
    def velocity(self) -> float:
        return float(self.state[1])


def build(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = cubic_spring`` (``numerical.cubic_spring``)."""
    p = numerical.cubic_spring
    if abs(p.dt_s - dt_s) > 1e-15:
        raise ParameterError(f"numerical.cubic_spring.dt_s: {p.dt_s!r} differs from loop.dt_s = {dt_s!r}; they "
                             "must be equal (the rig's sample is the synchronisation step)")
    return OneDofModel(VirtualPart(p, dt_s))


class CubicSpringTwin:
    """sim_plant of the ``linear_motor`` family: the linear motor under its cascade control with the cubic spring
    and the sensors (:class:`~rths_ros.core.models.bartl.cubic_spring.CubicSpringRig`).  No legs: no leg limits and
    no safe-pose ramp; the rig clips the demand at its stroke (§6.2) as the real drive does."""

    def __init__(self, p: CubicSpringScenarioParams):
        self.rig = CubicSpringRig(rig_params(p))
        self.start_lengths = np.zeros(6)
        self.kinematics = None
        self._x_prev = 0.0

    def reset(self, noise_seed: int) -> PlantOutput:
        """Back to rest with the noise stream ``noise_seed``; sample 0 is the rig held one sample at rest."""
        self.rig.reset(noise_seed)
        self._x_prev = 0.0
        return self.step(self.start_lengths)

    def step(self, length, feedforward_velocity=None) -> PlantOutput:
        """Hold the demand ``length[0]`` over one sample; the measurement at its end."""
        rig = self.rig
        x_m, f_m = rig.advance(float(length[0]))
        lengths = np.zeros(6)
        vel = np.zeros(6)
        cur = np.zeros(6)
        w = np.zeros(6)
        lengths[0], lengths[1] = x_m, rig.x
        vel[0], vel[1] = (x_m - self._x_prev) / rig.p.dt_s, rig.v
        cur[0], cur[1] = rig.force, 1.0 if rig.saturated else 0.0
        w[0], w[1] = f_m, spring_force(rig.x, rig.p)
        self._x_prev = x_m
        return PlantOutput(lengths, vel, cur, w)


def reference_motion(p: CubicSpringScenarioParams, t: np.ndarray) -> np.ndarray:
    """The coupled reference system (virtual part + cubic spring, ideal actuator and sensors) from rest:
    ``m x'' + d x' + (k_VIR + k_EXP) x + k3 x^3 = f_ext(t)``, at the times ``t``, by a tight-tolerance Runge-Kutta
    method (DOP853) started again at the excitation's switch-on."""
    from scipy.integrate import solve_ivp

    w = 2.0 * math.pi * p.excitation_frequency_hz
    k = p.k_vir_n_per_m + p.k_exp_n_per_m

    def rhs(tt, s, amp):
        x, v = s
        return (v, (amp * math.cos(w * tt) - p.d_vir_n_s_per_m * v - k * x - p.k3_exp_n_per_m3 * x ** 3)
                / p.m_vir_kg)

    x = np.zeros(t.size)
    on = t >= p.excitation_on_s - 1e-12
    if np.any(on) and p.excitation_amplitude_n != 0.0:
        tt = t[on]
        t0 = min(float(p.excitation_on_s), float(tt[0]))
        sol = solve_ivp(rhs, (t0, float(tt[-1]) + 1e-12), (0.0, 0.0), t_eval=tt, rtol=1e-10, atol=1e-13,
                        method="DOP853", args=(p.excitation_amplitude_n,))
        x[on] = sol.y[0]
    return x


def reference(numerical, n_rows: int, dt_s: float) -> dict:
    """:attr:`~rths_ros.core.models.registry.ModelEntry.reference`: the coupled system's motion; always in
    contact (the spring is fixed to the rod)."""
    t = np.arange(n_rows) * dt_s
    return {"z": reference_motion(numerical.cubic_spring, t), "contact": np.ones(n_rows, dtype=bool)}
