"""Interface force from the raw 6-axis wrench: tare, gravity compensation and contact gating.

Insam 2022, §4.2.4.  The specimen is mounted upside down on the force/torque sensor, so the
sensor's z force is ``F'_m = F_z = -m_EXP g`` in flight and ``-(m_EXP g + N)`` in contact.  The gravity
compensation of the thesis::

    f_meas = F'_m + 2 m_EXP g          (= m_EXP g in flight, m_EXP g - N in contact)

gives the force "as if the experimental part was hanging".  In flight the sensor noise exceeds the
inertia forces of the specimen, so the thesis gates the force::

    f_int = f_meas   if contact
    f_int = m_EXP g  otherwise

The thesis does not state its contact-detection rule.  Here: contact is declared when
``|f_meas - m_EXP g| > contact_threshold_n`` and released when it falls below
``release_threshold_n`` (hysteresis against chattering on noise).

Tare: a piezoelectric sensor drifts and has no reliable static zero.  With ``tare`` on, the first
``tare_samples`` wrenches (specimen known at rest, out of contact) estimate the bias of every channel;
the expected static load ``-m_EXP g`` on ``F_z`` is not bias and is subtracted from that channel's mean.
During the tare window the output is the flight value (``f_int = f_meas = m_EXP g``, no contact).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.core.numerics.kernel import kernel
from rths_ros.params import ParameterError, param

#: entries of the state array of :func:`force_step`
F_CONTACT, F_COUNT, F_TARED, F_BIAS_Z = 0, 1, 2, 3


@dataclass(frozen=True)
class ForceProcessorParams:
    """Tare, gravity compensation and contact gating of the measured force (Insam 2022 §4.2.4)."""

    m_exp_kg: float = param(0.38, "kg", 0.0, 1e3, "specimen mass m_EXP used in the gravity compensation")
    g_m_per_s2: float = param(9.81, "m/s^2", 0.0, 100.0, "gravitational acceleration g")
    tare: bool = param(True, "", doc="estimate the sensor bias over the first tare_samples wrenches")
    tare_samples: int = param(100, "", 1, 1000000, "number of samples of the tare window")
    gating: bool = param(True, "", doc="force gating: f_int = m_EXP g while no contact is detected")
    contact_threshold_n: float = param(0.5, "N", 0.0, 1e4,
                                       "contact when |f_meas - m_EXP g| exceeds this")
    release_threshold_n: float = param(0.3, "N", 0.0, 1e4,
                                       "contact released when |f_meas - m_EXP g| falls below this")

    def validate(self) -> None:
        if self.release_threshold_n > self.contact_threshold_n:
            raise ParameterError(
                f"release_threshold_n: {self.release_threshold_n!r} is not allowed; expected <= "
                f"contact_threshold_n ({self.contact_threshold_n!r})")


@kernel
def force_step(st, acc, bias, wrench, weight, tare_samples, gating, contact_n, release_n):
    """One sample of :meth:`ForceProcessor.process` on the state ``st`` = [contact, samples of the tare window so
    far, tared, bias of F_z] (floats; 1.0 = true), the tare sums ``acc`` (6,) and the bias ``bias`` (6,).
    Returns ``(f_int, f_meas, contact)``."""
    if st[F_TARED] == 0.0:
        for i in range(6):
            acc[i] = acc[i] + wrench[i]
        st[F_COUNT] += 1.0
        if st[F_COUNT] >= tare_samples:
            for i in range(6):
                bias[i] = acc[i] / st[F_COUNT]
            bias[2] = bias[2] + weight          # the static load -m_EXP g is not bias
            st[F_BIAS_Z] = bias[2]
            st[F_TARED] = 1.0
        return weight, weight, False
    f_meas = wrench[2] - st[F_BIAS_Z] + 2.0 * weight
    dev = abs(f_meas - weight)
    if st[F_CONTACT] != 0.0:
        if dev < release_n:
            st[F_CONTACT] = 0.0
    elif dev > contact_n:
        st[F_CONTACT] = 1.0
    contact = st[F_CONTACT] != 0.0
    if contact or not gating:
        return f_meas, f_meas, contact
    return weight, f_meas, False


class ForceProcessor:
    """Per-sample processing of the raw wrench into (f_int, f_meas, contact)."""

    def __init__(self, params: ForceProcessorParams | None = None):
        self.params = params or ForceProcessorParams()
        self.params.validate()
        self._weight = self.params.m_exp_kg * self.params.g_m_per_s2
        self._bias = np.zeros(6)
        self._acc = np.zeros(6)
        self.state = np.zeros(4)
        self.reset()
        force_step(np.zeros(4), np.zeros(6), np.zeros(6), np.zeros(6), 1.0, 1, True, 1.0, 1.0)   # compile/load

    @property
    def constants(self) -> tuple[float, int, bool, float, float]:
        """(weight, tare_samples, gating, contact_threshold_n, release_threshold_n) of :func:`force_step`."""
        p = self.params
        return (self._weight, int(p.tare_samples), bool(p.gating), float(p.contact_threshold_n),
                float(p.release_threshold_n))

    def reset(self) -> None:
        """Forget the contact state and (if tare is on) the bias; the next samples re-tare."""
        self._acc[:] = 0.0
        self._bias[:] = 0.0
        self.state[:] = 0.0
        self.state[F_TARED] = 0.0 if self.params.tare else 1.0

    @property
    def bias(self) -> np.ndarray:
        """Estimated sensor bias [Fx, Fy, Fz, Mx, My, Mz] (zeros before/without tare)."""
        return self._bias.copy()

    @property
    def tared(self) -> bool:
        """True once the bias is known (immediately if tare is off)."""
        return bool(self.state[F_TARED] != 0.0)

    @property
    def contact(self) -> bool:
        return bool(self.state[F_CONTACT] != 0.0)

    def process(self, wrench) -> tuple[float, float, bool]:
        """One sample: ``wrench`` = raw [Fx, Fy, Fz, Mx, My, Mz] in the sensor frame.

        Returns ``(f_int, f_meas, contact)``: the (gated) interface force handed to the numerical part,
        the gravity-compensated measured force ``F'_m + 2 m_EXP g`` and the contact flag.
        """
        f_int, f_meas, contact = force_step(self.state, self._acc, self._bias, np.asarray(wrench, dtype=np.float64),
                                            *self.constants)
        return float(f_int), float(f_meas), bool(contact)

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        return f"ForceProcessor(contact={self.contact}, bias_z={self.state[F_BIAS_Z]:.4g}, tared={self.tared})"

