"""The contact test's numerical part with independent integration (du Bois (IMAC, ch. 25), Sect. 25.2), selectable as
``numerical.model = contact_1d_independent`` (section ``numerical.independent``).

Same model as :class:`rths_ros.core.models.contact1d.model.NumericalMSD` (``m_NUM`` on ``k_NUM || d_NUM`` driven by the 1 - cos
suspension, deviation form, parameters from ``numerical.contact_1d``)::

    m_NUM z'' + d_NUM z' + k_NUM z = k_NUM z_d(t) + d_NUM z_d'(t) + m_EXP g + lam,     lam = -F_int

(``lam`` = the force the specimen exerts on the numerical mass).  The model is **slow**: it is advanced by explicit
Euler with the step ``H = main_step_s = n * loop.dt_s`` (the suspension terms taken at the start of each step), as
the full numerical model of du Bois (IMAC, ch. 25).  The synchronisation loop (``loop.dt_s``) is the fast interface loop.  One
call of :meth:`IndependentMSD.step` per synchronisation step, ``step(F_int[k]) -> (z_{k+1}, z'_{k+1})`` like
``NumericalMSD``; ``k = j n + i`` (model step ``j``, fast sample ``i``).

``scheme = "independent"`` (du Bois (IMAC, ch. 25) eqs. 25.1-25.4;
:class:`rths_ros.core.numerics.independent_integration.IndependentIntegrator`):

* ``i = 0``: ``lam_0`` = the mean force the model's latest step used (``force_ref = "mean"``; ``-F_int[0]`` at the
  first step) or ``-F_int[k]`` (``"sample"``), ``y'_0 = z'_j`` of the model, ``J = d z'_{j+1} / d lam`` of the
  model's Euler step by finite differences (``H / m_NUM``), reconciliation target ``y_0`` (``reference``);
* every ``i``: ``y' = y'_0 + J (lam - lam_0)``, ``y <- y + y' dt``, ``y <- (1 - alpha) y + alpha y_ref``; the
  demand is ``(y, y')``;
* ``i = n - 1``: the model takes its Euler step ``j -> j+1`` with the **mean** of the ``n`` forces of the step.

With a constant force the demand at every model step equals the model's Euler position (``alpha = 0`` or
``reference = euler_path``), and the model equals an explicit-Euler integration (tested).

``scheme = "explicit_euler"``: the conventional coupling of du Bois (IMAC, ch. 25) (Fig. 25.3) at the same ``H``.  At ``i = 0``
the model steps with the force of that sample, ``lam = -F_int[jn]``; the demand holds ``z_j`` over the step and
moves to ``z_{j+1}`` at ``t_{j+1}``.  The velocity demand is the model's velocity at the latest model step (``z'_j``,
then ``z'_{j+1}``): the conventional scheme hands the model state to the actuator.

Choices (the paper is silent or differs):

* Fast loop rate: the synchronisation step of the graph, ``loop.dt_s`` = 1 ms (1 kHz), instead of the paper's
  2 kHz.  ``alpha`` is applied per fast sample as in the paper, so its reconciliation time constant is
  ``dt / alpha``: 0.5 s for ``alpha = 2e-3`` at 1 kHz (= the paper's ``alpha = 1e-3`` at 2 kHz), 0.1 s for 1e-2
  (= 5e-3 at 2 kHz).  The default ``alpha = 2e-3`` keeps the paper's time constant of ``alpha = 1e-3``.
* The actuator is not ideal here: the force ``F_int[k]`` is measured at the achieved position of the platform
  (the simulated plant with its cascade), so the fast loop reacts to the force the lagging platform produces.
* ``jacobian``, ``reference``, ``force_ref``: the readings of :mod:`rths_ros.core.numerics.independent_integration`
  (``step`` / ``hold`` / ``mean`` by default; the scenario uses ``euler_path``).
* The initial state is the rest state (``z = z' = 0``, ``F_int = m_EXP g``), where the model stays at rest.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.contact1d.model import Contact1DParams, SteppedMSD
from rths_ros.core.numerics.independent_integration import (
    FORCE_REF_CHOICES,
    JACOBIAN_CHOICES,
    REFERENCE_CHOICES,
    IndependentIntegrationParams,
    IndependentIntegrator,
    LinearEulerModel,
)
from rths_ros.params import ParameterError, param

__all__ = ["IndependentContact1DParams", "IndependentMSD", "SCHEME_CHOICES"]

SCHEME_CHOICES = ("independent", "explicit_euler")


@dataclass(frozen=True)
class IndependentContact1DParams:
    """Multi-rate integration of the contact test's numerical part (numerical.model = contact_1d_independent)."""

    scheme: str = param("independent", "", doc="'independent' = du Bois (IMAC, ch. 25) independent integration (fast interface "
                        "loop at loop.dt_s, reconciliation, mean-force feedback); 'explicit_euler' = conventional "
                        "coupling at the same main step (demand held over the step)", choices=SCHEME_CHOICES)
    main_step_s: float = param(0.01, "s", 1e-4, 1.0, "H: explicit-Euler step of the numerical model, a whole "
                               "multiple of loop.dt_s (du Bois (IMAC, ch. 25): 10 and 20 ms)")
    alpha: float = param(2e-3, "", 0.0, 1.0, "reconciliation gain per synchronisation step (du Bois (IMAC, ch. 25): 1e-3 and "
                         "5e-3 at 2 kHz; 2e-3 at 1 kHz keeps the 0.5 s time constant of 1e-3)")
    jacobian: str = param("step", "", doc="'step' = dz'_{j+1}/dF of the model's Euler step (finite differences, "
                          "H/m_NUM); 'growing' = that value scaled by (t - t_j)/H", choices=JACOBIAN_CHOICES)
    reference: str = param("hold", "", doc="reconciliation target: 'hold' = model position at the latest model "
                           "step; 'euler_path' = the model's Euler path inside the step", choices=REFERENCE_CHOICES)
    force_ref: str = param("mean", "", doc="lam_0 of eq. 25.1: 'mean' = the force the model's latest step used (mean "
                           "of the previous step's samples); 'sample' = the force sampled at the model step",
                           choices=FORCE_REF_CHOICES)


class IndependentMSD(SteppedMSD):
    """Numerical part of the contact test, slow explicit-Euler model with a fast interface loop (module doc)."""

    def __init__(self, params: Contact1DParams, independent: IndependentContact1DParams, dt_s: float) -> None:
        if abs(params.dt_s - dt_s) > 1e-15:
            raise ParameterError(f"numerical.contact_1d.dt_s: {params.dt_s!r} differs from loop.dt_s = {dt_s!r}; "
                                 "they must be equal (one fast sample per synchronisation step)")
        H = independent.main_step_s
        n = H / dt_s
        if abs(n - round(n)) > 1e-6 * max(1.0, n) or round(n) < 1:
            raise ParameterError(f"numerical.independent.main_step_s: {H!r} is not a whole multiple of loop.dt_s = "
                                 f"{dt_s!r}")
        self._set_model(params, dt_s)
        self.independent = independent
        self.n_sub = int(round(n))
        self.H = self.n_sub * self.dt
        self._ip = IndependentIntegrationParams(main_step_s=self.H, fast_step_s=self.dt, alpha=independent.alpha,
                                                jacobian=independent.jacobian, reference=independent.reference,
                                                force_ref=independent.force_ref)
        self._euler = independent.scheme == "explicit_euler"
        self._fe = np.zeros(1)
        self._lam = np.zeros(1)
        self.k = 0
        self.reset()

    def reset(self) -> None:
        """Rest state ``z = z' = 0`` at ``k = 0`` (model and fast loop)."""
        self.model = LinearEulerModel([[self._m]], [[self._d]], [[self._k]])
        self.loop = IndependentIntegrator(self._ip, 1)
        self._z = 0.0
        self._zd = 0.0
        self.k = 0

    @property
    def model_position(self) -> float:
        """Interface position of the slow model at its latest step."""
        return float(self.model.x[0])

    @property
    def model_velocity(self) -> float:
        return float(self.model.v[0])

    def step(self, f_int: float) -> tuple[float, float]:
        """One synchronisation step with the measured interface force ``F_int[k]``; returns ``(z_{k+1}, z'_{k+1})``."""
        i = self.k % self.n_sub
        last = i == self.n_sub - 1
        lam = self._lam
        lam[0] = -float(f_int)
        model = self.model
        if i == 0:
            self._fe[0] = self._f_ext(self.k * self.dt)
        if self._euler:
            if i == 0:
                self._z, self._zd = float(model.x[0]), float(model.v[0])   # demand held over the step
                model.step(lam, self._fe, self.H)
            if last:
                self._z, self._zd = float(model.x[0]), float(model.v[0])
        else:
            ii = self.loop
            if i == 0:
                J = model.velocity_jacobian(lam, self._fe, self.H)
                ii.begin_step(model.x, model.v, lam, J)
            y = ii.substep(lam)
            self._z, self._zd = float(y[0]), float(ii.ydot[0])
            if last:
                model.step(ii.mean_force(), self._fe, self.H)
        self.k += 1
        return self._z, self._zd
