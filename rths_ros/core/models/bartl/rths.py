"""The cubic-spring rig of Bartl 2019 §6.2 (:mod:`.cubic_spring`) as a scenario of the node graph.

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

from rths_ros.core.learning.aff.harmonic_interface import InterfaceGapAff
from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
from rths_ros.core.models.bartl.cubic_spring import CubicSpringParams, CubicSpringRig, PeakFilter, spring_force
from rths_ros.core.models.base import OneDofModel
from rths_ros.core.numerics.newmark import newmark_sdof_step
from rths_ros.core.plant.base import PlantOutput
from rths_ros.params import ParameterError, param

__all__ = ["CubicSpringAffParams", "CubicSpringScenarioParams", "VirtualPart", "CubicSpringTwin", "CubicSpringAff", "build", "rig_params",
           "reference", "reference_motion", "strategy_of", "validate_scenario"]


@dataclass(frozen=True)
class CubicSpringAffParams(HarmonicAffParams):
    """The harmonic AFF of §6.2.1 (Table 6.3): one harmonic, LMS with mu_init = 0.1, the supervisor's constants;
    the RLS identification of 1 s (random theta held 0.1 s, +-1 mm) is this package's choice, as in
    :func:`rths_ros.core.models.bartl.loop.table63_aff`."""

    frequencies_hz: tuple[float, ...] = param([10.0], "Hz", 1e-3, 1e4, "basis frequencies; the first must be "
                                              "numerical.cubic_spring.excitation_frequency_hz")
    law: str = param("lms", "", doc="adaptation law of theta: lms (eqs. 5.18-5.20) or rls (QR-RLS, Alg. 3)",
                     choices=("lms", "rls"))
    simultaneous: bool = param(False, "", doc="identify P_gu during the adaptation too (Alg. 5; needs law rls)")
    mu_lms: float = param(0.1, "", 0.0, 100.0, "normalised LMS gain mu_LMS (= mu_init of the supervisor; Table "
                                               "6.3: 0.1)")
    mu_id_rls: float = param(0.9995, "", 1e-6, 1.0, "RLS forgetting factor of the identification")
    t_id_s: float = param(1.0, "s", 0.0, 1e6, "duration of the identification phase (f_ext = 0)")
    t_rand_s: float = param(0.1, "s", 1e-6, 1e6, "hold time of each random identification theta")
    id_amplitude: float = param(1e-3, "m", 0.0, 1e9, "random identification theta uniform in [-a, a]")
    p_lim_w: float = param(-0.3, "W", -1e9, 0.0, "power-inflow limit P_lim (Table 6.3: -0.3 W)")
    da_mu_down: float = param(0.001, "", 0.0, 1.0, "step Delta_down a_mu per violating sample (Table 6.3)")
    b_mu: float = param(2.0, "", 1.0, 100.0, "exponent b_mu of mu = mu_init a_mu^b_mu (Table 6.3: 2)")


@dataclass(frozen=True)
class CubicSpringScenarioParams(CubicSpringParams):
    """The rig (:class:`~rths_ros.core.models.bartl.cubic_spring.CubicSpringParams`: virtual part, spring, motor,
    sensors) and the excitation ``f_ext = A cos(2 pi f t)`` of the virtual part (§6.2.2)."""

    excitation_amplitude_n: float = param(10.0, "N", 0.0, 1e4, "amplitude A of the excitation force on the "
                                          "virtual part (§6.2.2: 10 N at 10 Hz, 40 N at 20 and 30 Hz)")
    excitation_frequency_hz: float = param(10.0, "Hz", 0.0, 500.0, "frequency f of the excitation")
    excitation_on_s: float = param(0.0, "s", 0.0, 1e4, "time the excitation is switched on (a step of the "
                                   "cosine: f_ext = 0 before); with the AFF at least aff.t_id_s + dt_s (its "
                                   "identification needs f_ext = 0)")
    displacement_control: bool = param(True, "", doc="the motor's demand includes y_VIR (displacement control, "
                                       "§4.4); false: pure AFF (§5.2), the demand is the AFF's output alone")
    aff: CubicSpringAffParams = param(CubicSpringAffParams(), doc="harmonic AFF of §6.2.1 (Table 6.3: one harmonic "
                                      "at the excitation frequency, LMS mu_init = 0.1; RLS identification of 1 s), run "
                                      "by the aff_learner node when aff.enabled is true")
    peak_filter: bool = param(True, "", doc="peak filter at the excitation frequency on the AFF output (§6.2.1)")
    peak_bw_hz: float = param(2.0, "Hz", 1e-3, 100.0, "bandwidth of the peak filter (zeta = bw / (2 f))")


def validate_scenario(s) -> None:
    """The rig's own checks of a scenario (``s``: the whole scenario): a demand for the motor, the AFF's basis on
    the excitation frequency, its identification before the excitation."""
    p = s.numerical.cubic_spring
    if not p.displacement_control and not s.aff.enabled:
        raise ParameterError("numerical.cubic_spring.displacement_control: false is not allowed with aff.enabled = "
                             "false (the motor would get no demand); expected true, or the AFF on")
    if not s.aff.enabled:
        return
    f = tuple(p.aff.frequencies_hz)
    if not f or abs(f[0] - p.excitation_frequency_hz) > 1e-9:
        raise ParameterError(f"numerical.cubic_spring.aff.frequencies_hz: {list(f)!r} is not allowed with "
                             f"numerical.cubic_spring.excitation_frequency_hz = {p.excitation_frequency_hz!r}; "
                             "expected the excitation frequency first (the basis of §6.2.1)")
    t_min = p.aff.t_id_s + s.loop.dt_s
    if p.aff.t_id_s > 0.0 and p.excitation_on_s < t_min - 1e-12:
        raise ParameterError(f"numerical.cubic_spring.excitation_on_s: {p.excitation_on_s!r} is too early; expected "
                             f">= numerical.cubic_spring.aff.t_id_s + loop.dt_s = {t_min:g} s (the AFF identifies with f_ext = 0, from "
                             "the first step on)")


def strategy_of(p: CubicSpringScenarioParams, aff: bool, pbc: bool) -> str:
    """The rig study's name of a configuration: pbc, aff, pbc_aff; displacement control without either is ''."""
    if aff:
        return "pbc_aff" if p.displacement_control else "aff"
    return "pbc" if p.displacement_control else ""


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
    """:attr:`~rths_ros.core.models.entry.ModelEntry.reference`: the coupled system's motion; always in
    contact (the spring is fixed to the rod)."""
    t = np.arange(n_rows) * dt_s
    return {"z": reference_motion(numerical.cubic_spring, t), "contact": np.ones(n_rows, dtype=bool)}


class CubicSpringAff(InterfaceGapAff):
    """The harmonic AFF of the cubic-spring rig through the node graph
    (:class:`~rths_ros.core.learning.aff.harmonic_interface.InterfaceGapAff`, both halves; the family's
    ``aff_gap = "interface"``): the gap of the rig study's sample k+1, ``g = y_EXP - y_VIR`` = the rod position
    measured after the demand of step k (interface state k) minus the interface command of step k+1,
    ``lambda_VIR`` = minus the force measured with it (interface force k) and ``g_ext`` = minus a second virtual
    part driven by f_ext alone; the output goes through the peak filter.  This is
    :func:`rths_ros.core.models.bartl.loop.simulate_cubic` split in two: the signals agree bit for bit."""

    def __init__(self, p: CubicSpringScenarioParams, dt_s: float):
        f = p.excitation_frequency_hz
        pf = PeakFilter(f, dt_s, p.peak_bw_hz / (2.0 * f)) if p.peak_filter and f > 0.0 else None
        super().__init__(p.aff, dt_s, pf)
        self.p = p
        self.pf = pf
        self.external = VirtualPart(p, dt_s)          # the virtual part under f_ext alone: g_ext = -x
        self._g, self._ge, self._lam = np.zeros(1), np.zeros(1), np.zeros(1)
        self.reset()

    def reset_rig(self) -> None:
        self.external.reset()

    def gaps(self, z_cmd_next, z_ach, f_meas):
        x_ext, _ = self.external.step(0.0)
        self._g[0] = float(z_ach[0]) - float(z_cmd_next[0])
        self._ge[0] = -x_ext
        self._lam[0] = -float(f_meas[0])
        return self._g, self._ge, self._lam
