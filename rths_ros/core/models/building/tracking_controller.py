"""Tracking controllers for the servo-hydraulic benchmark (see docs/benchmark_building.md).

A tracking controller runs once per sample of the benchmark's control loop (Δt = 1/4096 s).  It
receives the displacement the numerical substructure wants at the interface (the *desired*
displacement ``y1``, m) and the displacement measured at the actuator (``x_m``, m: the true
displacement plus the sensor noise), and returns the command ``u`` (m) that the transfer system's
servo-valve receives, held over the sample.  It must be fully discrete and cheap enough to finish
within one sample.

Converters (benchmark specification, "Signals and hardware limits"): the benchmark's controller
model applies 18-bit quantisation (step 1/2^18) and saturation at ±3.8 to the controller's own
signals, i.e. the command into the pre-compensator, its output, the tracking error and the PI output.
The signals are in metres here, so the step is 2^-18 m = 3.81 µm and the saturation ±3.8 m
(:func:`convert`, :class:`ReferenceControllerParams` ``quantise``, ``quantisation_bits``,
``saturation_m``).  Nothing outside the controller converts: the plant applies ``u`` as it is, and
the measured displacement and the fed-back specimen force carry no converter.  A user's controller
that wants the same converters calls :func:`convert` itself.

To drop in your own controller, subclass :class:`TrackingController` and implement
:meth:`~TrackingController.reset` and :meth:`~TrackingController.step`::

    class MyController(TrackingController):
        def __init__(self, dt_s=1/4096, gain=1.02):
            super().__init__(dt_s)
            self.gain = gain
        def reset(self):
            pass
        def step(self, desired, measured):
            return self.gain * desired

    rec = run_benchmark(1, "elcentro", MyController())

Step contract (the same for every implementation):

* ``reset()`` puts every internal state back to rest (all signals zero); the benchmark calls it
  once before each run.
* ``step(desired, measured)`` is called at ``t_k = k Δt`` with ``desired = y1(t_k)`` and
  ``measured = x_m(t_k)``, both in metres; it returns ``u_k`` (metres, float), held constant over
  ``[t_k, t_{k+1})``.  A controller may keep any history it needs; it must not look
  ahead (``desired`` of later steps is unknown).

A controller that is the linear "pre-filter + feedback filter" form of
:meth:`TrackingController.fast_coefficients` may return its coefficients; the in-process benchmark then
runs a compiled loop (same result, about 100 times faster); with converters in that form it also
returns them from :meth:`TrackingController.converter`.

Two implementations ship with the package:

* :class:`ReferenceController`: the benchmark's sample controller, a PI feedback controller
  ``G_C(s) = K_p + K_i/s`` (K_p = 2, K_i = 95 1/s) on the tracking error behind a phase-lead
  pre-compensator ``G_T(s) = K_T (s + z_T)/(s + p_T)`` (K_T = 50.8, z_T = 168.6 rad/s,
  p_T = 8570 rad/s) on the command, both discretised with the Tustin (bilinear) transform at Δt::

      r_k = G_T{y1}_k,   e_k = r_k - x_m,k,   u_k = G_C{e}_k

  with the converter ``Q`` (quantise, then saturate) on ``y1``, ``r``, ``e`` and ``u``: the filters run on
  converted inputs and keep their own (unconverted) outputs as state::

      r_k = G_T{Q(y1)}_k,   e_k = Q(Q(r_k) - x_m,k),   u_k = Q(G_C{e}_k)

* :class:`PassThroughController`: ``u_k = y1_k`` (no compensation and no converters at all; a baseline
  showing the transfer system's own lag).
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

from rths_ros.params import ParameterError, build, param

DT_S = 1.0 / 4096.0
#: the benchmark's converters: 18 bit (step 1/2^18) and saturation at ±3.8 (signals in m here)
CONVERTER_BITS = 18
CONVERTER_SATURATION = 3.8


def convert(value: float, step: float, limit: float) -> float:
    """A converter of the controller model: round ``value`` to the nearest multiple of ``step`` (ties to even, as
    ``numpy.rint``), then saturate it at ``±limit`` (NaN passes).  Same numbers as the compiled loop's
    :func:`rths_ros.core.models.building.kernels._quantise`."""
    if value != value:
        return value
    if value > limit + step:            # saturates whatever the rounding (also inf, or value / step overflowing)
        return limit
    if value < -limit - step:
        return -limit
    q = round(value / step) * step
    if q > limit:
        return limit
    if q < -limit:
        return -limit
    return q


class TrackingController(abc.ABC):
    """Interface of a tracking controller for :mod:`rths_ros.core.models.building.structure` (see module doc)."""

    def __init__(self, dt_s: float = DT_S):
        if not dt_s > 0.0:
            raise ParameterError(f"dt_s: {dt_s!r} is not allowed; expected a positive sample time in s")
        self.dt_s = float(dt_s)

    @abc.abstractmethod
    def reset(self) -> None:
        """Return every internal state to rest (zero signals)."""

    @abc.abstractmethod
    def step(self, desired: float, measured: float) -> float:
        """Command u_k (m) from the desired y1(t_k) (m) and the measured x_m(t_k) (m)."""

    def fast_coefficients(self) -> tuple[float, ...] | None:
        """Optional: ``(l0, l1, ld, fb, p0, p1, pd)`` if the controller is the linear form

        ``r_k = l0 y_k + l1 y_{k-1} - ld r_{k-1};  e_k = r_k - fb x_m,k;  u_k = p0 e_k + p1 e_{k-1} - pd u_{k-1}``

        (from rest).  Then the in-process benchmark may run its compiled loop instead of calling
        :meth:`step`; the result is the same.  ``None`` (the default) always uses :meth:`step`."""
        return None

    def converter(self) -> tuple[float, float] | None:
        """Optional, with :meth:`fast_coefficients`: ``(step, limit)`` if the linear form runs behind converters
        (:func:`convert` on ``y_k``, ``r_k``, ``r_k - fb x_m,k`` and ``u_k``, the filters keeping their own
        unconverted outputs as state, as :class:`ReferenceController`).  ``None`` (the default): no converters."""
        return None


@dataclass(frozen=True)
class ReferenceControllerParams:
    """Gains of the benchmark's sample controller (Silva et al. 2020; PI tuned by Ziegler-Nichols)."""

    kp: float = param(2.0, "-", 0.0, 1e3, "proportional gain K_p of the PI feedback controller")
    ki_per_s: float = param(95.0, "1/s", 0.0, 1e5, "integral gain K_i of the PI feedback controller")
    lead_gain: float = param(50.8, "-", 1e-6, 1e4, "high-frequency gain K_T of the phase-lead pre-compensator")
    lead_zero_rad_s: float = param(168.6, "rad/s", 1e-6, 1e6, "zero z_T of G_T(s) = K_T (s + z_T)/(s + p_T)")
    lead_pole_rad_s: float = param(8570.0, "rad/s", 1e-6, 1e6, "pole p_T of G_T(s)")
    dt_s: float = param(DT_S, "s", 1e-6, 0.1, "controller sample time Δt")
    quantise: bool = param(True, "", doc="converters of the controller model: quantise and saturate the command "
                           "into the pre-compensator, its output, the tracking error and the PI output")
    quantisation_bits: int = param(CONVERTER_BITS, "bit", 2, 52, "converter resolution: quantisation step "
                                   "2^-bits of the controller's signals (in m)")
    saturation_m: float = param(CONVERTER_SATURATION, "m", 1e-6, 1e3, "converter saturation ± of the controller's "
                                "signals")


#: tracking_controller.kind of a scenario
CONTROLLER_KINDS = ("reference", "passthrough", "python")


@dataclass(frozen=True)
class TrackingControllerParams:
    kind: str = param("reference", "", doc="tracking controller of the benchmark (numerical.model = building): "
                      "'reference' = the benchmark's PI + phase lead, 'passthrough' = u = y1, 'python' = the "
                      "TrackingController subclass at class_path", choices=CONTROLLER_KINDS)
    class_path: str = param("", "", doc="kind = python: 'module:Class' of a "
                            "rths_ros.core.models.building.tracking_controller.TrackingController subclass, importable by every node "
                            "process (e.g. on PYTHONPATH); constructed with no arguments")
    reference: ReferenceControllerParams = param(ReferenceControllerParams(), doc="gains of the reference controller")


def tustin_first_order(b1: float, b0: float, a0: float, dt: float) -> tuple[float, float, float]:
    """Tustin discretisation of ``(b1 s + b0)/(s + a0)``: returns ``(n0, n1, d1)`` of
    ``y_k = n0 u_k + n1 u_{k-1} - d1 y_{k-1}``."""
    c = 2.0 / dt
    den = c + a0
    return (b1 * c + b0) / den, (b0 - b1 * c) / den, (a0 - c) / den


class ReferenceController(TrackingController):
    """The benchmark's PI + phase-lead tracking controller, Tustin-discretised (see module doc)."""

    def __init__(self, params: ReferenceControllerParams | None = None, **overrides):
        p = params if params is not None else build(ReferenceControllerParams, overrides, section="controller")
        if params is not None and overrides:
            raise ParameterError("controller: give either params or keyword overrides, not both")
        super().__init__(p.dt_s)
        self.params = p
        # lead: K_T (s + z)/(s + p) = (K_T s + K_T z)/(s + p)
        self._l0, self._l1, self._ld = tustin_first_order(p.lead_gain, p.lead_gain * p.lead_zero_rad_s,
                                                          p.lead_pole_rad_s, p.dt_s)
        # PI: (K_p s + K_i)/s
        self._p0, self._p1, self._pd = tustin_first_order(p.kp, p.ki_per_s, 0.0, p.dt_s)
        self._conv = (2.0 ** -p.quantisation_bits, p.saturation_m) if p.quantise else None
        self.reset()

    def reset(self) -> None:
        self._y_prev = 0.0   # desired y1 at k-1 (converted: the lead's input)
        self._r_prev = 0.0   # lead output at k-1 (the filter's own, unconverted)
        self._e_prev = 0.0   # tracking error at k-1 (converted: the PI's input)
        self._u_prev = 0.0   # PI output at k-1 (the filter's own, unconverted)
        self.reference = 0.0  # lead output r_k of the last step, converted (for recording)

    def step(self, desired: float, measured: float) -> float:
        if self._conv is None:
            r = self._l0 * desired + self._l1 * self._y_prev - self._ld * self._r_prev
            e = r - measured
            u = self._p0 * e + self._p1 * self._e_prev - self._pd * self._u_prev
            self._y_prev, self._r_prev, self._e_prev, self._u_prev = desired, r, e, u
            self.reference = r
            return u
        step, lim = self._conv
        y = convert(desired, step, lim)
        r = self._l0 * y + self._l1 * self._y_prev - self._ld * self._r_prev
        rq = convert(r, step, lim)
        e = convert(rq - measured, step, lim)
        u = self._p0 * e + self._p1 * self._e_prev - self._pd * self._u_prev
        self._y_prev, self._r_prev, self._e_prev, self._u_prev = y, r, e, u
        self.reference = rq
        return convert(u, step, lim)

    def fast_coefficients(self) -> tuple[float, ...]:
        return (self._l0, self._l1, self._ld, 1.0, self._p0, self._p1, self._pd)

    def converter(self) -> tuple[float, float] | None:
        return self._conv


class PassThroughController(TrackingController):
    """``u_k = y1_k``: the command is the desired displacement, unmodified (no converters)."""

    def reset(self) -> None:
        pass

    def step(self, desired: float, measured: float) -> float:
        return float(desired)

    def fast_coefficients(self) -> tuple[float, ...]:
        return (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0)
