"""Normalized Passivity Control (NPC) of the transfer system, ROS-free core.

Insam 2022 ch. 5, eqs. 5.1-5.5, and Insam et al. 2021, eqs. (1)-(3); the method
is Peiris et al.'s power-based time-domain passivity control in impedance causality.

The passivity observer (PO) watches the two ports of the transfer system (TS)::

    P^NUM-TS = F_int  * z-dot         power the numerical part hands to the TS    (5.1)
    P^TS-EXP = F'_m   * z'-dot        power the TS hands to the experimental part  (5.2)
    P_error  = P^TS-EXP - P^NUM-TS    > 0: the TS injects energy ("active")        (5.3, 5.4)
    P_tot    = P^TS-EXP + P^NUM-TS    total power throughput

and the passivity controller (PC) adds a damping force to the measured force::

    F_int(t_k) = F'_m(t_k) + F_d(t_k),   F_d(t_k) = alpha(t_k) * z-dot(t_k)
    alpha(t_k) = G_P * P~_error(t_{k-1}) / |P~_tot(t_{k-1})|   if P~_error(t_{k-1}) > 0, else 0

(tilde = first-order low pass, time constants ``T_error`` and ``T_tot``).  Sign convention of the
package: ``F_int`` is the force the numerical part exerts on the experimental part along +z and the
numerical mass feels ``-F_int``; with ``alpha >= 0`` the extra ``-alpha z-dot`` on the numerical mass
is a viscous damper and the PC dissipates ``F_d z-dot = alpha z-dot^2 >= 0``.

Timing (one call per synchronisation step ``k``, before the numerical part is stepped):

* the arguments ``*_prev`` are the signals of step ``k-1``: ``F'_m``, ``z-dot``, ``z'-dot`` and the
  ``F_int = F'_m + F_d`` that was actually applied then;
* ``P_error(t_{k-1})`` and ``P_tot(t_{k-1})`` are formed from them and filtered;
* ``alpha(t_k)`` uses both filtered values of ``t_{k-1}``.  Eq. 5.5 of Insam 2022 writes
  ``P~_tot(t_k)``, but ``P_tot(t_k)`` contains ``F_int(t_k) = F'_m(t_k) + F_d(t_k)``, which needs
  ``alpha(t_k)``: a circular definition.  Insam et al. 2021 eq. (1) takes ``t_{k-1}`` for both, which is what
  is done here;
* the returned ``F_d(t_k) = alpha(t_k) z-dot(t_k)`` uses the commanded velocity of step ``k``.

The gate tests the FILTERED power error: ``alpha`` is then never negative (no generative
"damping", whatever the raw sign of the last sample), and it does not chatter with the sign of the
raw ``P_error`` (which the damping itself pushes through zero, eq. 5.4).  The normalisation has a
floor, ``alpha = G_P P~_error / max(|P~_tot|, p_tot_min_w)`` (bounded and continuous where the
throughput passes through zero, no division spike), and ``alpha`` is capped at
``alpha_max_kg_per_s``.  See docs/passivity.md, also for the readings of the sources that were checked
against the ILC + NPC series.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from rths_ros.params import param

FILTER_CHOICES = ("backward_euler", "exponential")


@dataclass(frozen=True)
class PassivityParams:
    """Normalized Passivity Control (Table A.3 of Insam 2022 for G_P, T_error, T_tot)."""

    enabled: bool = param(False, "", doc="apply the damping force F_d; when off the power observer still runs "
                                         "and F_d = 0")
    g_p_kg_per_s: float = param(1600.0, "kg/s", 0.0, 1e6, "damping scaling value G_P (eq. 5.5)")
    t_error_s: float = param(0.1, "s", 0.0, 10.0, "time constant T_error of the low pass on P_error (0 = none)")
    t_tot_s: float = param(0.01, "s", 0.0, 10.0, "time constant T_tot of the low pass on P_tot (0 = none)")
    p_tot_min_w: float = param(1e-2, "W", 0.0, 1e6,
                               "floor of the normalisation: alpha = G_P P~_error / max(|P~_tot|, this). "
                               "Contact-test throughput is ~0.1-0.5 W; without a floor alpha spikes where P~_tot "
                               "passes zero (turning points)")
    alpha_max_kg_per_s: float = param(1e4, "kg/s", 0.0, 1e9,
                                      "upper bound of alpha; ~m_NUM/dT of the contact test (9.6e3 kg/s): above "
                                      "2 m_NUM/dT the damping force held over a step is itself unstable")
    filter: str = param("backward_euler", "", doc=(
        "discretisation of 1/(T s + 1): 'backward_euler' y_k = y_{k-1} + dt/(T+dt) (u_k - y_{k-1}); "
        "'exponential' y_k = y_{k-1} + (1 - exp(-dt/T)) (u_k - y_{k-1})"), choices=FILTER_CHOICES)
    dt_s: float = param(0.001, "s", 1e-5, 0.1, "synchronisation step dT (one update per step)")


def lowpass_gain(time_constant_s: float, dt_s: float, method: str = "backward_euler") -> float:
    """Gain ``c`` of the first-order low pass ``y_k = y_{k-1} + c (u_k - y_{k-1})`` for ``1/(T s + 1)``.

    ``backward_euler``: ``c = dT / (T + dT)`` (s -> (1 - z^-1)/dT); the equivalent continuous time
    constant is ``dT / ln(1 + dT/T) ~ T + dT/2``.  ``exponential``: ``c = 1 - exp(-dT/T)``, the exact
    response to an input held over each step, so the step response is exactly ``1 - exp(-t/T)`` at
    the samples.  ``T = 0`` gives ``c = 1`` (no filtering).
    """
    if method not in FILTER_CHOICES:
        raise ValueError(f"method {method!r}; expected one of {FILTER_CHOICES}")
    if time_constant_s < 0.0 or dt_s <= 0.0:
        raise ValueError(f"time constant {time_constant_s!r} must be >= 0 and dt {dt_s!r} > 0")
    if time_constant_s == 0.0:
        return 1.0
    if method == "backward_euler":
        return dt_s / (time_constant_s + dt_s)
    return -math.expm1(-dt_s / time_constant_s)


class PassivityController:
    """Power observer + normalised passivity controller, one :meth:`update` per step (module doc).

    Latest values (read-only attributes, SI units), all zero after :meth:`reset`:

    ``p_num_ts, p_ts_exp, p_error, p_tot``   powers of step k-1 [W] (eqs. 5.1-5.4)
    ``p_error_filtered, p_tot_filtered``     P~_error(t_{k-1}), P~_tot(t_{k-1}) [W]
    ``alpha``                                damping coefficient alpha(t_k) [kg/s]
    ``f_d``                                  damping force F_d(t_k) [N]
    ``e_error_j``                            sum of P_error(t_{j-1}) dT over the updates so far [J]
    ``e_diss_j``                             sum of F_d(t_j) z-dot(t_j) dT over the updates so far [J] (>= 0)
    ``k``                                    number of updates since the reset
    """

    __slots__ = ("params", "_c_err", "_c_tot", "_gain", "_guard", "_cap", "_dt",
                 "p_num_ts", "p_ts_exp", "p_error", "p_tot", "p_error_filtered", "p_tot_filtered",
                 "alpha", "f_d", "e_error_j", "e_diss_j", "k",
                 "_f_prev", "_zd_prev", "_zda_prev", "_fint_prev")

    def __init__(self, params: PassivityParams | None = None) -> None:
        p = params or PassivityParams()
        self.params = p
        self._c_err = lowpass_gain(p.t_error_s, p.dt_s, p.filter)
        self._c_tot = lowpass_gain(p.t_tot_s, p.dt_s, p.filter)
        self._gain = float(p.g_p_kg_per_s) if p.enabled else 0.0
        self._guard = float(p.p_tot_min_w)
        self._cap = float(p.alpha_max_kg_per_s)
        self._dt = float(p.dt_s)
        self.reset()

    @property
    def g_p(self) -> float:
        """The damping scaling value G_P in use [kg/s] (0 while the damping force is off)."""
        return self._gain

    @property
    def alpha_max(self) -> float:
        """The upper bound of alpha in use [kg/s]."""
        return self._cap

    def set_gains(self, g_p_kg_per_s: float | None = None, alpha_max_kg_per_s: float | None = None) -> None:
        """New G_P and/or alpha bound from the next :meth:`update` on (the observer's filters keep their state);
        G_P stays 0 while ``enabled`` is off."""
        if g_p_kg_per_s is not None and self.params.enabled:
            self._gain = float(g_p_kg_per_s)
        if alpha_max_kg_per_s is not None:
            self._cap = float(alpha_max_kg_per_s)

    def reset(self) -> None:
        """Clear filters, accumulators and the latest values (the state of a new trial)."""
        self.p_num_ts = self.p_ts_exp = self.p_error = self.p_tot = 0.0
        self.p_error_filtered = self.p_tot_filtered = 0.0
        self.alpha = self.f_d = 0.0
        self.e_error_j = self.e_diss_j = 0.0
        self.k = 0
        self._f_prev = self._zd_prev = self._zda_prev = self._fint_prev = 0.0

    def update(self, f_prev: float, zdot_cmd_prev: float, zdot_ach_prev: float, f_int_prev: float,
               zdot_cmd_now: float) -> float:
        """One step k: observe step k-1, return ``F_d(t_k) = alpha(t_k) z-dot(t_k)`` [N].

        ``f_prev`` = F'_m(t_{k-1}), the gated, gravity-compensated measured force as fed to the
        numerical part before the damping is added; ``zdot_cmd_prev`` = z-dot(t_{k-1}) (commanded);
        ``zdot_ach_prev`` = z'-dot(t_{k-1}) (achieved); ``f_int_prev`` = F_int(t_{k-1}) =
        F'_m(t_{k-1}) + F_d(t_{k-1}) as applied (eq. 5.4); ``zdot_cmd_now`` = z-dot(t_k).
        At k = 0 pass the rest state (velocities 0): the powers are then 0.
        The caller applies ``F_int(t_k) = F'_m(t_k) + F_d(t_k)`` to the numerical part.
        """
        p_num_ts = f_int_prev * zdot_cmd_prev
        p_ts_exp = f_prev * zdot_ach_prev
        p_err = p_ts_exp - p_num_ts
        p_tot = p_ts_exp + p_num_ts
        pe = self.p_error_filtered + self._c_err * (p_err - self.p_error_filtered)
        pt = self.p_tot_filtered + self._c_tot * (p_tot - self.p_tot_filtered)
        self.p_num_ts = p_num_ts
        self.p_ts_exp = p_ts_exp
        self.p_error = p_err
        self.p_tot = p_tot
        self.p_error_filtered = pe
        self.p_tot_filtered = pt
        apt = pt if pt >= 0.0 else -pt
        if apt < self._guard:   # floor of the normalisation: no spike where the throughput passes zero
            apt = self._guard
        if pe > 0.0 and apt > 0.0:
            alpha = self._gain * pe / apt
            if alpha > self._cap:
                alpha = self._cap
        else:
            alpha = 0.0
        f_d = alpha * zdot_cmd_now
        self.alpha = alpha
        self.f_d = f_d
        dt = self._dt
        self.e_error_j += p_err * dt
        self.e_diss_j += f_d * zdot_cmd_now * dt
        self.k += 1
        return f_d

    def step(self, f_now: float, zdot_cmd_now: float, zdot_ach_now: float) -> float:
        """Same as :meth:`update`, keeping the step-(k-1) values itself.

        ``f_now`` = F'_m(t_k), ``zdot_cmd_now`` = z-dot(t_k), ``zdot_ach_now`` = z'-dot(t_k).  Returns
        ``F_d(t_k)``; the caller applies ``F_int(t_k) = f_now + F_d(t_k)``.  The first call after
        :meth:`reset` observes the rest state (zero powers).
        """
        f_d = self.update(self._f_prev, self._zd_prev, self._zda_prev, self._fint_prev, zdot_cmd_now)
        self._f_prev = f_now
        self._zd_prev = zdot_cmd_now
        self._zda_prev = zdot_ach_now
        self._fint_prev = f_now + f_d
        return f_d

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return (f"PassivityController(k={self.k}, alpha={self.alpha:.4g} kg/s, f_d={self.f_d:.4g} N, "
                f"e_diss={self.e_diss_j:.4g} J)")
