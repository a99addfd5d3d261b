"""The contact test's numerical part integrated by Newmark (Bartl 2019 §2.3), selectable as
``numerical.model = contact_1d_newmark``.

Same model as :class:`rths_ros.core.models.contact1d.model.NumericalMSD` (``m_NUM`` on ``k_NUM || d_NUM`` driven by the
1 - cos suspension, deviation form, parameters from ``numerical.contact_1d``)::

    m_NUM z'' + d_NUM z' + k_NUM z = k_NUM z_d(t) + d_NUM z_d'(t) + (F_ext^NUM - m_NUM g) - F_int

written as ``M q'' + C q' + K q = G^T lam + f_ext`` with ``lam = -F_int`` (the force the specimen exerts on the
numerical mass, Bartl's (2019) ``lam_VIR = -lam_EXP``), ``G = 1`` and ``f_ext(t) = k z_d + d z_d' + m_EXP g``
(``F_ext^NUM - m_NUM g = m_EXP g``).  One integration step per synchronisation step; ``F_int`` of step k is the
last measured force.  ``step(F_int) -> (z_{k+1}, z'_{k+1})`` like ``NumericalMSD``:

* ``average_acceleration`` (:class:`~rths_ros.core.numerics.newmark.AverageAcceleration`, eq. 2.48): the force is
  held over the step (as in ``NumericalMSD``), i.e. ``lam[k+1] = -F_int[k]`` at the new time level, with
  ``f_ext(t_{k+1})``; no iteration.  Unconditionally stable.
* ``central_difference`` (:class:`~rths_ros.core.numerics.newmark.CentralDifference`, eq. 2.46, feedback coupling): the
  force of step k gives ``z''_k`` and the explicit ``z_{k+1}``.  The scheme knows ``z'`` only up to ``t_k``; the
  velocity handed on is the explicit ``z'_k + dt z''_k`` (a choice: the thesis's scheme needs no ``z'_{k+1}``,
  the platform's velocity command does).

The initial state is the rest state; the first force acts from ``t = 0+`` (for the implicit scheme the initial
acceleration is taken from it, otherwise its first step would see a force ramp and drop to first order).
"""
from __future__ import annotations

from rths_ros.core.models.contact1d.model import Contact1DParams, SteppedMSD
from rths_ros.core.numerics.newmark import AverageAcceleration, CentralDifference, NewmarkParams
from rths_ros.params import ParameterError

__all__ = ["NewmarkMSD"]


class NewmarkMSD(SteppedMSD):
    """Numerical part of the contact test advanced by a Newmark scheme (see module doc)."""

    def __init__(self, params: Contact1DParams, newmark: NewmarkParams, dt_s: float) -> None:
        if abs(newmark.dt_s - dt_s) > 1e-15 or abs(params.dt_s - dt_s) > 1e-15:
            raise ParameterError(f"numerical.newmark.dt_s: {newmark.dt_s!r} (and numerical.contact_1d.dt_s = "
                                 f"{params.dt_s!r}) must equal loop.dt_s = {dt_s!r} (one integration step per "
                                 "synchronisation step)")
        self._set_model(params, dt_s)
        self.newmark = newmark
        self._rest_lam = -params.m_exp_kg * params.g_m_per_s2
        self._int = None
        self.reset()
        self.step(-self._rest_lam)      # exercise once, then start over
        self.reset()

    def reset(self) -> None:
        """Rest state ``z = z' = 0`` at ``k = 0``."""
        M, C, K = [[self._m]], [[self._d]], [[self._k]]
        if self.newmark.scheme == "central_difference":
            self._int = CentralDifference(M, C, K, self.dt)
        else:
            self._int = AverageAcceleration(M, C, K, self.dt, f_ext0=[self._f_ext(0.0)], lam0=[self._rest_lam])
        self._z = 0.0
        self._zd = 0.0
        self.k = 0

    def step(self, f_int: float) -> tuple[float, float]:
        """Advance one step with the measured interface force ``F_int``; returns ``(z_{k+1}, z'_{k+1})``."""
        integ = self._int
        lam = [-float(f_int)]
        if self.newmark.scheme == "central_difference":
            q = integ.step(lam, [self._f_ext(self.k * self.dt)])
            z, zd = float(q[0]), float(integ.qd[0] + self.dt * integ.qdd[0])
        else:
            if self.k == 0:     # the force acts from t = 0+: initial acceleration from it (rest state)
                integ.qdd[0] = (self._f_ext(0.0) + lam[0]) / self._m
            q = integ.step(lam, [self._f_ext((self.k + 1) * self.dt)])
            z, zd = float(q[0]), float(integ.qd[0])
        self.k += 1
        self._z, self._zd = z, zd
        return z, zd
