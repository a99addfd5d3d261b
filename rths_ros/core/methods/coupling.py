"""Command shaping between the numerical part and the platform: forward prediction or transfer-dynamics
cancellation (du Bois et al. 2010 §3.2-3.3, Bartl 2019 §4.3) on the interface command.

The numerical part hands the platform the interface state ``(q, qdot)`` it wants at the next step.  The
transfer system (the legs under their cascade) lags behind that demand.  A shaping stage replaces the demand
by a command the transfer system will turn into (approximately) the demand:

* **prediction** (``coupling.prediction``): every interface DoF is extrapolated ``horizon_s`` ahead with the
  least-squares polynomial predictor of :class:`~rths_ros.core.methods.prediction.PolynomialPredictor` (du Bois et al. 2010
  eqs. 2-3), ``q_cmd = q(t + tau)``, ``qdot_cmd = qdot(t + tau)`` (the velocity has its own predictor with the
  same weights).  It cancels a pure delay ``tau``; a lag is only approximated.
* **tdc** (``coupling.tdc``): the identified process model ``G`` (G1, G2, G1D, G2D, du Bois et al. 2010 eq. 1) is inverted
  in the time domain with the delay removed by the predictor,
  :class:`~rths_ros.core.methods.tdc.InverseModelFeedforward` (eqs. 4-8): ``q_cmd = r = G^-1 q(t + tau_d)``.  The
  velocity command is the inverse model applied to the predicted velocity: for G1/G1D
  ``(tau_p x'' + x')/K`` with ``x', x''`` from the three predictions of eqs. 5-8; for G2/G2D (which would need
  the third derivative) the difference quotient ``(r_k - r_{k-1})/dt``.

Choices (the sources are silent): the stages act per interface DoF in interface coordinates (before the inverse
kinematics), so the same identified model serves all legs; the two stages exclude each other (TDC contains its
own predictor); before the predictor history is full the missing past equals the first demand (start from
rest).  The force blending and the power-discrepancy trip of du Bois et al. 2010 §4.4 are not part of this stage (see
docs/methods.md, "In the loop").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.core.methods.prediction import SPACING_CHOICES, PolynomialPredictor, PredictorParams
from rths_ros.core.methods.tdc import InverseModelFeedforward, ProcessModelParams
from rths_ros.params import ParameterError, param

__all__ = ["PredictionStageParams", "TdcStageParams", "CouplingParams", "CommandShaper"]


@dataclass(frozen=True)
class PredictionStageParams:
    """Polynomial forward prediction of the interface command (du Bois et al. 2010 §3.2)."""

    enabled: bool = param(False, "", doc="extrapolate the interface command horizon_s ahead")
    order: int = param(2, "", 0, 12, "polynomial order N")
    window_s: float = param(0.02, "s", 1e-4, 10.0, "T_s: time spanned by the fitted samples")
    n_samples: int = param(21, "", 2, 1000, "n_s: number of fitted samples")
    spacing: str = param("ts_over_ns_minus_1", "", doc="sample spacing T_s/(n_s-1) (du Bois et al. 2010 eq. 2) or T_s/n_s",
                         choices=SPACING_CHOICES)
    horizon_s: float = param(0.02, "s", 0.0, 1.0, "tau: prediction horizon")

    def validate(self) -> None:
        if self.n_samples < self.order + 1:
            raise ParameterError(f"coupling.prediction.n_samples: {self.n_samples!r} is too small; expected >= "
                                 f"order + 1 = {self.order + 1}")

    def predictor(self) -> PredictorParams:
        return PredictorParams(order=self.order, window_s=self.window_s, n_samples=self.n_samples,
                               spacing=self.spacing, horizon_s=self.horizon_s)


@dataclass(frozen=True)
class TdcStageParams:
    """Transfer-dynamics cancellation of the interface command (du Bois et al. 2010 §3)."""

    enabled: bool = param(False, "", doc="invert the process model (with forward prediction of its delay)")
    model: ProcessModelParams = param(ProcessModelParams(), doc="identified process model interface command -> "
                                      "achieved interface position (`rths qualify` fits it)")
    predictor: PredictorParams = param(PredictorParams(), doc="forward predictor of the model delay (its horizon_s "
                                       "is ignored: the horizon is model.delay_s)")


@dataclass(frozen=True)
class CouplingParams:
    """Command shaping stage of the platform commander."""

    dt_s: float = param(0.001, "s", 1e-4, 0.01, "control period of the stage (must equal loop.dt_s)")
    prediction: PredictionStageParams = param(PredictionStageParams(), doc="polynomial forward prediction")
    tdc: TdcStageParams = param(TdcStageParams(), doc="transfer-dynamics cancellation")

    def validate(self) -> None:
        if self.prediction.enabled and self.tdc.enabled:
            raise ParameterError("coupling.tdc.enabled: true is not allowed together with "
                                 "coupling.prediction.enabled: true (the TDC stage has its own predictor)")

    @property
    def active(self) -> bool:
        return self.prediction.enabled or self.tdc.enabled


class CommandShaper:
    """Per-step shaping ``(q, qdot) -> (q_cmd, qdot_cmd)`` for ``n`` interface DoFs (arrays reused)."""

    def __init__(self, params: CouplingParams, n: int) -> None:
        self.params = params
        self.n = int(n)
        self.dt = float(params.dt_s)
        self.q = np.zeros(self.n)
        self.qd = np.zeros(self.n)
        self._pq: list[PolynomialPredictor] = []
        self._pv: list[PolynomialPredictor] = []
        self._inv: list[InverseModelFeedforward] = []
        self._r_prev = np.zeros(self.n)
        self._first = True
        if params.prediction.enabled:
            pp = params.prediction.predictor()
            self._pq = [PolynomialPredictor(pp, self.dt) for _ in range(self.n)]
            self._pv = [PolynomialPredictor(pp, self.dt) for _ in range(self.n)]
        elif params.tdc.enabled:
            m = params.tdc.model
            self._inv = [InverseModelFeedforward(m, params.tdc.predictor, self.dt) for _ in range(self.n)]
            self._g1 = m.order == 1
            self._tau_p = m.tau_p_s
            self._k_inv = 1.0 / m.gain

    def reset(self) -> None:
        for obj in (*self._pq, *self._pv, *self._inv):
            obj.reset()
        self.q.fill(0.0)
        self.qd.fill(0.0)
        self._r_prev.fill(0.0)
        self._first = True

    def shape(self, q, qdot) -> tuple[np.ndarray, np.ndarray]:
        """The shaped command of this step (internal arrays, overwritten by the next call)."""
        if self._pq:
            for i in range(self.n):
                self.q[i] = self._pq[i].push(float(q[i]))[0]
                self.qd[i] = self._pv[i].push(float(qdot[i]))[0]
        elif self._inv:
            for i in range(self.n):
                inv = self._inv[i]
                r = inv.step(float(q[i]))
                self.q[i] = r
                if self._g1:
                    self.qd[i] = self._k_inv * (self._tau_p * inv.a_tau + inv.v_tau)
                else:
                    self.qd[i] = float(qdot[i]) if self._first else (r - self._r_prev[i]) / self.dt
                self._r_prev[i] = r
            self._first = False
        else:
            self.q[:] = q
            self.qd[:] = qdot
        return self.q, self.qd
