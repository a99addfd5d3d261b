"""Transfer-dynamics cancellation (du Bois et al. 2010: du Bois, Titurus & Lieven, ISMA 2010).

The actuator with its inner displacement loop is described by a low-order *process model*
(du Bois et al. 2010 eq. 1)::

    G1  = K / (tau_p s + 1)                 G1D = G1 e^{-tau_d s}
    G2  = K / (s^2 + 2 zeta w0 s + w0^2)    G2D = G2 e^{-tau_d s}

(for G2/G2D the static gain is ``K / w0^2``, so unity tracking needs ``K ~ w0^2``).  The model is
identified from stepped-sine frequency responses (:func:`rths_ros.core.sysid.qualification.fit_process_model`)
and inverted as an open-loop feedforward (:class:`InverseModelFeedforward`): the delay is
cancelled by the polynomial forward predictor (:mod:`rths_ros.core.methods.prediction`, du Bois et al. 2010 eqs. 2-3)
and the lag by the inverse transfer function in the time domain (eq. 4)::

    r = (tau_p x_tau' + x_tau) / K                      (G1, G1D; the printed "+ 1" is a typo)
    r = (x_tau'' + 2 zeta w0 x_tau' + w0^2 x_tau) / K   (G2, G2D)

with derivatives from three predictions one control period ``delta`` apart (eqs. 5-8, with the
divisions by ``delta`` that the print omits)::

    x'(tau - delta/2)   = (x(tau) - x(tau - delta)) / delta
    x'(tau - 3 delta/2) = (x(tau - delta) - x(tau - 2 delta)) / delta
    x''(tau)  ~ x''(tau - delta) = (x'(tau - delta/2) - x'(tau - 3 delta/2)) / delta
    x'(tau)   = x'(tau - delta/2) + x''(tau - delta) delta / 2

Without delay (G1, G2) ``x(tau)`` etc. are the last three demand samples.

Coupling switches and safety (du Bois et al. 2010 §4.4):

* force switch ``gamma``: ``f = gamma f_p + (1 - gamma) f_n`` (eq. 25), ``f_p`` measured,
  ``f_n`` the force of a numerical model of the specimen; displacement switch ``s_x`` scales the
  demand.  Both move continuously towards their targets at a bounded rate (:class:`RampedSwitch`).
* power-discrepancy trip: ``dP = f (v_num - v_phys)``, ``e = LPF(dP^2)``; when ``e`` exceeds a
  threshold the trip latches and ``gamma`` is ramped to 0 "continuously but quickly".

The paper gives no numbers for the trip filter, threshold or ramp, nor for any identified model;
the defaults below are choices (documented in docs/methods.md).  The LPF is the exact
discretisation of ``1/(T s + 1)`` under a zero-order hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.methods.prediction import PolynomialPredictor, PredictorParams
from rths_ros.params import param

MODEL_KINDS = ("G1", "G2", "G1D", "G2D")


@dataclass(frozen=True)
class ProcessModelParams:
    """Process model of the actuator + inner loop (du Bois et al. 2010 eq. 1)."""

    kind: str = param("G1D", "", doc="model structure: G1, G2 (lag) or G1D, G2D (lag + delay)",
                      choices=MODEL_KINDS)
    gain: float = param(1.0, "- (G1) or rad^2/s^2 (G2)", 1e-9, 1e12,
                        "K: numerator gain (static gain K for G1, K/w0^2 for G2)")
    tau_p_s: float = param(0.005, "s", 0.0, 10.0, "tau_p: first-order time constant (G1, G1D)")
    zeta: float = param(0.7, "", 0.0, 10.0, "zeta: damping ratio (G2, G2D)")
    omega0_rad_s: float = param(188.5, "rad/s", 1e-3, 1e6, "w0: undamped natural frequency (G2, G2D)")
    delay_s: float = param(0.005, "s", 0.0, 1.0, "tau_d: pure delay (G1D, G2D; ignored for G1, G2)")

    @property
    def order(self) -> int:
        return 1 if self.kind in ("G1", "G1D") else 2

    @property
    def has_delay(self) -> bool:
        return self.kind in ("G1D", "G2D") and self.delay_s > 0.0

    @property
    def effective_delay_s(self) -> float:
        return self.delay_s if self.kind in ("G1D", "G2D") else 0.0

    @property
    def static_gain(self) -> float:
        return self.gain if self.order == 1 else self.gain / self.omega0_rad_s ** 2

    def num_den(self) -> tuple[np.ndarray, np.ndarray]:
        """Numerator and denominator of the rational part (descending powers of ``s``)."""
        if self.order == 1:
            return np.array([self.gain]), np.array([self.tau_p_s, 1.0])
        w = self.omega0_rad_s
        return np.array([self.gain]), np.array([1.0, 2.0 * self.zeta * w, w * w])

    def frequency_response(self, freqs_hz) -> np.ndarray:
        """``G(j 2 pi f)``."""
        s = 2j * np.pi * np.asarray(freqs_hz, dtype=np.float64)
        num, den = self.num_den()
        return np.polyval(num, s) / np.polyval(den, s) * np.exp(-s * self.effective_delay_s)

    def simulate(self, u, dt: float) -> np.ndarray:
        """Response to the sampled input ``u`` (zero initial state).

        Rational part: exact zero-order-hold discretisation.  Delay: whole samples plus linear
        interpolation for the fractional part (an approximation of ``e^{-tau_d s}`` that is exact
        at multiples of ``dt``).  Usable as the ``simulate(u, dt)`` plant of the qualification tools.
        """
        u = np.asarray(u, dtype=np.float64)
        tau = self.effective_delay_s
        if tau > 0.0:
            nd = int(math.floor(tau / dt + 1e-12))
            frac = tau / dt - nd
            ud = np.zeros_like(u)
            if nd < u.size:
                ud[nd:] = (1.0 - frac) * u[:u.size - nd]
            if nd + 1 < u.size and frac > 0.0:
                ud[nd + 1:] += frac * u[:u.size - nd - 1]
            u = ud
        num, den = self.num_den()
        if self.order == 1 and self.tau_p_s == 0.0:
            return self.gain * u
        from scipy import signal  # imported on use: scipy.signal is slow to import
        bd, ad, _ = signal.cont2discrete((num, den), dt, method="zoh")
        return signal.lfilter(np.ravel(bd), ad, u)


@dataclass(frozen=True)
class SwitchParams:
    """Continuous coupling switches (du Bois et al. 2010 §4.4)."""

    gamma_initial: float = param(0.0, "", 0.0, 1.0, "force switch gamma at start (0 = simulated specimen force)")
    gamma_target: float = param(1.0, "", 0.0, 1.0, "force switch gamma to ramp to (1 = measured force)")
    gamma_rate_per_s: float = param(0.5, "1/s", 0.0, 1e6, "maximum rate of change of gamma while engaging")
    sx_initial: float = param(0.0, "", 0.0, 1.0, "displacement switch s_x at start (0 = specimen at rest)")
    sx_target: float = param(1.0, "", 0.0, 1.0, "displacement switch s_x to ramp to")
    sx_rate_per_s: float = param(0.5, "1/s", 0.0, 1e6, "maximum rate of change of s_x")


@dataclass(frozen=True)
class TripParams:
    """Power-discrepancy stability trip (du Bois et al. 2010 §4.4)."""

    enabled: bool = param(True, "", doc="monitor dP = f (v_num - v_phys) and trip on its filtered square")
    lpf_time_constant_s: float = param(0.05, "s", 1e-5, 100.0, "time constant T of the LPF 1/(T s + 1) on dP^2")
    threshold_w2: float = param(1.0, "W^2", 0.0, 1e18, "trip when LPF(dP^2) exceeds this value")
    ramp_time_s: float = param(0.05, "s", 1e-6, 100.0, "after a trip, gamma falls from 1 to 0 in this time")


@dataclass(frozen=True)
class TDCParams:
    """Transfer-dynamics cancellation coupling (du Bois et al. 2010)."""

    model: ProcessModelParams = param(ProcessModelParams(), doc="identified process model")
    predictor: PredictorParams = param(PredictorParams(), doc="forward predictor (horizon = model delay)")
    switches: SwitchParams = param(SwitchParams(), doc="force / displacement coupling switches")
    trip: TripParams = param(TripParams(), doc="power-discrepancy trip")
    dt_s: float = param(0.001, "s", 1e-6, 0.1, "control period delta")


class InverseModelFeedforward:
    """Streaming inverse process model with forward prediction: ``step(x_dem) -> r``."""

    def __init__(self, model: ProcessModelParams, predictor: PredictorParams | None, dt_s: float) -> None:
        self.model = model
        self.dt = float(dt_s)
        self._pred = None
        if model.has_delay:
            pp = predictor or PredictorParams()
            tau = model.delay_s
            self._pred = PolynomialPredictor(pp, self.dt, horizons_s=[tau, tau - self.dt, tau - 2.0 * self.dt])
        self._hist = np.zeros(3)
        self._n = 0
        num, den = model.num_den()
        self._k_inv = 1.0 / model.gain
        self._c = den[::-1].copy()  # ascending: [c0, c1(, c2)] of x, x', x''
        self.x_tau = 0.0
        self.v_tau = 0.0
        self.a_tau = 0.0

    def reset(self) -> None:
        if self._pred is not None:
            self._pred.reset()
        self._hist[:] = 0.0
        self._n = 0

    def step(self, x_dem: float) -> float:
        d = self.dt
        if self._pred is not None:
            x0, x1, x2 = self._pred.push(x_dem)
        else:
            if self._n == 0:
                self._hist[:] = x_dem
            self._hist[2] = self._hist[1]
            self._hist[1] = self._hist[0]
            self._hist[0] = x_dem
            x0, x1, x2 = self._hist
        self._n += 1
        va = (x0 - x1) / d
        vb = (x1 - x2) / d
        acc = (va - vb) / d
        vel = va + 0.5 * d * acc
        self.x_tau, self.v_tau, self.a_tau = x0, vel, acc
        c = self._c
        if c.size == 2:
            return self._k_inv * (c[0] * x0 + c[1] * vel)
        return self._k_inv * (c[0] * x0 + c[1] * vel + c[2] * acc)


class RampedSwitch:
    """A value in [0, 1] that moves towards ``target`` by at most ``rate * dt`` per step."""

    def __init__(self, value: float, target: float, rate_per_s: float) -> None:
        self.value = float(value)
        self.target = float(target)
        self.rate = float(rate_per_s)

    def step(self, dt: float) -> float:
        dv = self.target - self.value
        lim = self.rate * dt
        self.value += max(-lim, min(lim, dv))
        return self.value


def blend_force(gamma: float, f_phys: float, f_model: float) -> float:
    """du Bois et al. 2010 eq. (25): ``f = gamma f_p + (1 - gamma) f_n``."""
    return gamma * f_phys + (1.0 - gamma) * f_model


class PowerTrip:
    """``e = LPF(dP^2)`` with ``dP = f (v_num - v_phys)``; latches when ``e > threshold``."""

    def __init__(self, params: TripParams, dt_s: float) -> None:
        self.params = params
        self._a = 1.0 - math.exp(-dt_s / params.lpf_time_constant_s)
        self.power_discrepancy_w = 0.0
        self.filtered_w2 = 0.0
        self.tripped = False
        self.trip_step = -1
        self._k = 0

    def update(self, force_n: float, v_num: float, v_phys: float) -> bool:
        dp = force_n * (v_num - v_phys)
        self.power_discrepancy_w = dp
        self.filtered_w2 += self._a * (dp * dp - self.filtered_w2)
        if self.params.enabled and not self.tripped and self.filtered_w2 > self.params.threshold_w2:
            self.tripped = True
            self.trip_step = self._k
        self._k += 1
        return self.tripped


class TransferDynamicsCancellation:
    """Per-sample coupling object for a node (du Bois et al. 2010 §4, pseudo-code 004.10 (c)).

    Each control tick:

    1. ``f = coupling_force(f_p, f_n)`` - blended force for the numerical substructure;
    2. advance the numerical substructure with ``f`` (caller);
    3. ``r = command(x_num, v_num, v_phys)`` - actuator demand from the scaled numerical
       interface displacement through predictor + inverse model; updates the trip with
       ``dP = f (v_num - v_phys)`` and advances both switches by one period.
    """

    def __init__(self, params: TDCParams) -> None:
        self.params = params
        self.dt = params.dt_s
        self.inverse = InverseModelFeedforward(params.model, params.predictor, self.dt)
        sw = params.switches
        self.gamma = RampedSwitch(sw.gamma_initial, sw.gamma_target, sw.gamma_rate_per_s)
        self.sx = RampedSwitch(sw.sx_initial, sw.sx_target, sw.sx_rate_per_s)
        self.trip = PowerTrip(params.trip, self.dt)
        self.force = 0.0
        self.demand = 0.0

    @property
    def tripped(self) -> bool:
        return self.trip.tripped

    def coupling_force(self, f_phys: float, f_model: float) -> float:
        self.force = blend_force(self.gamma.value, f_phys, f_model)
        return self.force

    def command(self, x_num: float, v_num: float, v_phys: float) -> float:
        self.demand = self.inverse.step(self.sx.value * x_num)
        if self.trip.update(self.force, v_num, v_phys) and self.gamma.target != 0.0:
            self.gamma.target = 0.0
            self.gamma.rate = 1.0 / self.params.trip.ramp_time_s
        self.gamma.step(self.dt)
        self.sx.step(self.dt)
        return self.demand


# ------------------------------------------------------------------------------------------------
# force blending and power-discrepancy trip on the contact test (numerical.force_blend)
# ------------------------------------------------------------------------------------------------

SPECIMEN_MODEL_CHOICES = ("quasi_static", "sticky", "cor", "penalty")


@dataclass(frozen=True)
class ForceBlendParams:
    """du Bois et al. 2010 §4.4 in the loop of the contact test: the numerical part is driven by
    ``f = gamma f_p + (1 - gamma) f_n`` (eq. 25) with ``f_p`` the measured interface force and ``f_n`` the force of a
    numerical model of the specimen driven by the numerical interface position; the power-discrepancy trip ramps
    ``gamma`` to 0 (the test then runs on the model force)."""

    enabled: bool = param(False, "", doc="blend the measured force with a specimen model's force and watch the "
                                         "power discrepancy (contact-test models only)")
    specimen_model: str = param("quasi_static", "", doc="contact law of the specimen model that gives f_n (the "
                                "specimen parameters are those of numerical.contact_1d): quasi_static = unilateral "
                                "spring k_EXP behind the gap h0, as the reference solution",
                                choices=SPECIMEN_MODEL_CHOICES)
    gamma_initial: float = param(0.0, "", 0.0, 1.0, "gamma at the start of each trial (0 = the model force)")
    gamma_target: float = param(1.0, "", 0.0, 1.0, "gamma to ramp to (1 = the measured force)")
    gamma_rate_per_s: float = param(2.0, "1/s", 0.0, 1e6, "maximum rate of change of gamma while engaging")
    trip: TripParams = param(TripParams(), doc="power-discrepancy trip: dP = f (z'_num - z'_ach)")


class ForceSwitch:
    """Eq. (25) with the power-discrepancy trip, one synchronisation step per :meth:`switch`: ``f = gamma f_p +
    (1 - gamma) f_n``, the trip sees ``dP = f (v_num - v_phys)``, then ``gamma`` moves one step towards its target
    (0 at ``1 / trip.ramp_time_s`` once tripped).  The contact test's :class:`ForceBlend` and the damper rig's
    blend (rths_ros.core.models.dubois.rths) supply ``f_n`` from their specimen models."""

    def start_switch(self, gamma_initial: float, gamma_target: float, gamma_rate_per_s: float, trip: TripParams,
                     dt_s: float) -> None:
        self._trip_params = trip
        self._switch_dt = float(dt_s)
        self.gamma = RampedSwitch(gamma_initial, gamma_target, gamma_rate_per_s)
        self.trip = PowerTrip(trip, dt_s)
        self.force_n = 0.0
        self.gamma_used = self.gamma.value

    @property
    def tripped(self) -> bool:
        return self.trip.tripped

    def switch(self, f_phys: float, f_model: float, v_num: float, v_phys: float) -> float:
        self.gamma_used = self.gamma.value
        f = blend_force(self.gamma_used, float(f_phys), f_model)
        self.force_n = f
        if self.trip.update(f, float(v_num), float(v_phys)) and self.gamma.target != 0.0:
            self.gamma.target = 0.0
            self.gamma.rate = 1.0 / self._trip_params.ramp_time_s
        self.gamma.step(self._switch_dt)
        return f


class ForceBlend(ForceSwitch):
    """Force switch, specimen model and trip of du Bois et al. 2010 §4.4 for the 1-D contact test.

    Per synchronisation step ``k`` (before the numerical part steps): ``f = force(f_p, z, z', z'_ach)`` with
    ``f_p`` the measured (gated) interface force, ``z, z'`` the numerical interface state of step ``k`` (the
    command) and ``z'_ach`` the achieved interface velocity.  The specimen model is advanced from ``z_{k-1}`` to
    ``z_k`` and gives ``f_n`` in the units of the force processor (gravity compensated: ``m_EXP g`` in flight,
    ``m_EXP g - N`` in contact); ``f = gamma f_p + (1 - gamma) f_n``; the trip sees ``dP = f (z' - z'_ach)``; then
    ``gamma`` moves one step towards its target (0 at ``1 / trip.ramp_time_s`` once tripped).
    """

    def __init__(self, params: ForceBlendParams, contact, dt_s: float) -> None:
        from rths_ros.core.plant.specimen import Specimen1D, Specimen1DParams
        self.params = params
        self.dt = float(dt_s)
        sp = Specimen1DParams(k_exp_n_per_m=contact.k_exp_n_per_m, m_exp_kg=contact.m_exp_kg, l0_m=contact.l0_m,
                              h0_m=contact.h0_m, g_m_per_s2=contact.g_m_per_s2, contact_model=params.specimen_model,
                              ground_stiffness_n_per_m=contact.ground_stiffness_n_per_m,
                              ground_damping_kg_per_s=contact.ground_damping_kg_per_s,
                              substeps=1000 if params.specimen_model == "penalty" else 1)
        self.specimen = Specimen1D(sp, self.dt)
        self._two_w = 2.0 * contact.m_exp_kg * contact.g_m_per_s2
        self.reset()

    def reset(self) -> None:
        p = self.params
        self.specimen.reset(0.0)
        self.start_switch(p.gamma_initial, p.gamma_target, p.gamma_rate_per_s, p.trip, self.dt)
        self.k = 0
        self._z_prev = 0.0
        self.f_model = 0.5 * self._two_w

    def force(self, f_phys: float, z_num: float, v_num: float, v_phys: float) -> float:
        if self.k > 0:
            self.f_model = self.specimen.step(self._z_prev, z_num) + self._two_w
        self._z_prev = float(z_num)
        f = self.switch(f_phys, self.f_model, v_num, v_phys)
        self.k += 1
        return f
