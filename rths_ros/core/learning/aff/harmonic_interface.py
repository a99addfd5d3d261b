"""The harmonic AFF of a rig whose filter adapts with the interface gap (a model family with ``aff_gap =
"interface"``), split into the node graph's two halves: the aff_learner adapts, the stewart_platform outputs.

It has the interface of the leg filters (``kind``, ``coefficients``, ``reset``, ``feedforward``, ``home_lengths``)
plus ``adapt_interface``.  A rig supplies the gaps (:meth:`InterfaceGapAff.gaps`: g = y_EXP - y_VIR, g_ext and
lambda_VIR of the study's sample k+1 from the interface command of step k+1, the interface state and the measured
force of step k) and what resets with a trial (:meth:`InterfaceGapAff.reset_rig`, e.g. its f_ext-only virtual
part); the cubic-spring rig (rths_ros.core.models.bartl.rths.CubicSpringAff) also filters the output.

Learner half after step k (:meth:`adapt_interface`): :class:`~rths_ros.core.learning.aff.harmonic.HarmonicAff`
adapts theta with the basis at t_k+1 (its first call starts the identification).  Platform half
(:meth:`feedforward`): u = W(t_k+1) theta per actuator, from the published coefficients.  Together they are one
sample of the harmonic AFF kernel, the same numbers bit for bit.

``coefficients`` (6, 2 n_Omega): row r < n_int is actuator r's ``[Re psi_1,r, Im psi_1,r, Re psi_2,r, ...]`` (theta
of eq. 5.13 regrouped per actuator; the message carries six rows, the others stay 0).
"""
from __future__ import annotations

import numpy as np

from rths_ros.core.learning.aff.harmonic import HarmonicAff
from rths_ros.core.learning.aff.harmonic_legs import harmonic_feedforward_kernel
from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams

__all__ = ["InterfaceGapAff"]


class InterfaceGapAff:
    """Both halves of the interface-gap harmonic AFF (module doc); ``output_filter``: a callable applied to the
    output (with ``reset()``; one interface DoF only: it holds one channel's state), or None."""

    kind = "harmonic"
    uses_output = False
    supervised = False

    def __init__(self, params: HarmonicAffParams, dt_s: float, output_filter=None):
        self.dt_s = float(dt_s)
        self.filt = HarmonicAff(params)
        self.omegas = self.filt.omegas
        self.n = int(params.n_int)
        if output_filter is not None and self.n != 1:
            raise ValueError(f"an output filter holds one channel; n_int = {self.n}")
        self.output_filter = output_filter
        nf = len(params.frequencies_hz)
        # theta index of coefficient [r, 2h + c]: frequency h, cosine (c = 0) or sine (c = 1) block, row r
        self._perm = np.array([[2 * h * self.n + c * self.n + r for h in range(nf) for c in (0, 1)]
                               for r in range(self.n)])
        self._coef = np.zeros((6, 2 * nf))
        self._un = np.zeros(self.n)
        self._u = np.zeros(6)
        self.home_lengths = np.zeros(6)

    # -- what a rig supplies ---------------------------------------------------------------------------------------
    def gaps(self, z_cmd_next, z_ach, f_meas) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(g, g_ext, lambda_VIR) of the study's sample k+1, arrays of n_int (called once per step, in order)."""
        raise NotImplementedError

    def reset_rig(self) -> None:
        """What of the rig's side starts again with a trial."""

    # -- both halves -------------------------------------------------------------------------------------------------
    @property
    def coefficients(self) -> np.ndarray:
        self._coef[:self.n] = self.filt.theta_app[self._perm]
        return self._coef

    @property
    def gains(self) -> tuple[float, ...]:
        """(mu_LMS, nu_LMS) of an LMS adaptation (the supervisor's current values), () for RLS."""
        return (self.filt.mu_lms, self.filt.nu_lms) if self.filt.params.law == "lms" else ()

    def reset(self, home_lengths=None) -> None:
        self.filt.reset()
        self.reset_rig()
        if self.output_filter is not None:
            self.output_filter.reset()
        self._u[:] = 0.0

    def adapt_interface(self, z_cmd_next, z_ach, f_meas, step: int) -> None:
        """Learner half after step ``step`` = k (local): adapt with the gap of the study's sample k+1 (sequences of
        the interface width)."""
        g, ge, lam = self.gaps(z_cmd_next, z_ach, f_meas)
        self.filt.step((step + 1) * self.dt_s, g, ge, lam)

    def feedforward(self, b=None, theta=None, step: int = 0) -> np.ndarray:
        """Platform half: u = W(t_step) theta for the demand of step ``step`` (local), at indices 0 .. n_int-1 of a
        6-array; ``theta``: the published coefficients (default: this filter's own)."""
        th = self.coefficients[:self.n] if theta is None else np.asarray(theta, dtype=float).reshape(6, -1)[:self.n]
        harmonic_feedforward_kernel(np.ascontiguousarray(th), self.omegas, step * self.dt_s, self._un)
        pf = self.output_filter
        for r in range(self.n):
            u = float(self._un[r])
            self._u[r] = pf(u) if pf is not None else u
        return self._u
