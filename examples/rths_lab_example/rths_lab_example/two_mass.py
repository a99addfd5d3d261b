"""A 2-DoF chain as the numerical part of the contact test: the lab's upper body (m1) and shank (m2).

Vertical chain, top to bottom: the moving suspension ``z_d(t)`` of the contact test, the spring-damper
``k1 || d1``, the mass ``m1``, the spring-damper ``k2 || d2``, the mass ``m2`` (the interface DoF) and below it,
on the rig, the specimen and the ground.  Deviation form about the rest state (every coordinate zero at rest,
positive up), as the contact test's own model::

    m1 z1'' = k1 (z_d - z1) + d1 (z_d' - z1') - k2 (z1 - z2) - d2 (z1' - z2')
    m2 z2'' = k2 (z1 - z2) + d2 (z1' - z2') + m_EXP g - F_int

``F_int`` is the force the chain exerts on the specimen (``m_EXP g`` in flight), so the chain rests with
``F_int = m_EXP g``.  The suspension, the specimen mass and g are those of ``numerical.contact_1d`` (the rig's
test), so the twin's specimen and this model agree: ``z_d(t) = -(h0 + dz_max)/2 (1 - cos 2 pi f_d t)``.

Integration: exact for inputs held over a step (zero-order hold of ``z_d``, ``z_d'`` at the step's start and
of ``F_int``), one matrix exponential at construction.  Interface command: ``(z2, z2')``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.base import OneDofModel
from rths_ros.families import ModelEntry
from rths_ros.params import param

__all__ = ["TwoMassParams", "TwoMassChain", "build", "MODEL"]


@dataclass(frozen=True)
class TwoMassParams:
    m1_kg: float = param(5.0, "kg", 1e-3, 1e4, "upper mass m1")
    k1_n_per_m: float = param(1e4, "N/m", 0.0, 1e8, "suspension spring k1 (suspension to m1)")
    d1_kg_per_s: float = param(250.0, "kg/s", 0.0, 1e5, "suspension damper d1")
    m2_kg: float = param(4.62, "kg", 1e-3, 1e4, "lower mass m2 (the interface DoF)")
    k2_n_per_m: float = param(2e4, "N/m", 0.0, 1e8, "spring k2 between m1 and m2")
    d2_kg_per_s: float = param(400.0, "kg/s", 0.0, 1e5, "damper d2 between m1 and m2")


class TwoMassChain:
    """The chain's integrator: ``step(F_int) -> (z2, z2')`` (module doc)."""

    def __init__(self, p: TwoMassParams, contact, dt_s: float):
        self.dt_s = float(dt_s)
        m1, m2 = p.m1_kg, p.m2_kg
        k1, d1, k2, d2 = p.k1_n_per_m, p.d1_kg_per_s, p.k2_n_per_m, p.d2_kg_per_s
        # x = [z1, z2, z1', z2'], u = [z_d, z_d', m_EXP g - F_int]
        a = np.array([[0.0, 0.0, 1.0, 0.0],
                      [0.0, 0.0, 0.0, 1.0],
                      [-(k1 + k2) / m1, k2 / m1, -(d1 + d2) / m1, d2 / m1],
                      [k2 / m2, -k2 / m2, d2 / m2, -d2 / m2]])
        b = np.array([[0.0, 0.0, 0.0],
                      [0.0, 0.0, 0.0],
                      [k1 / m1, d1 / m1, 0.0],
                      [0.0, 0.0, 1.0 / m2]])
        aug = np.zeros((7, 7))
        aug[:4, :4], aug[:4, 4:] = a, b
        # (imported here, not with the module: every process that loads a scenario imports the lab's family, and
        # only a run of this model needs it)
        from scipy.linalg import expm
        e = expm(aug * self.dt_s)
        self._ad, self._bd = e[:4, :4].copy(), e[:4, 4:].copy()
        self._amp = 0.5 * (contact.h0_m + contact.dz_max_m)
        self._w = 2.0 * math.pi * contact.f_d_hz
        self._weight = contact.m_exp_kg * contact.g_m_per_s2
        self.x = np.zeros(4)
        self.k = 0

    def reset(self) -> None:
        self.x[:] = 0.0
        self.k = 0

    def step(self, f_int: float) -> tuple[float, float]:
        wt = self._w * self.k * self.dt_s
        u = np.array([-self._amp * (1.0 - math.cos(wt)), -self._amp * self._w * math.sin(wt),
                      self._weight - float(f_int)])
        self.x = self._ad @ self.x + self._bd @ u
        self.k += 1
        return float(self.x[1]), float(self.x[3])

    @property
    def velocity(self) -> float:
        return float(self.x[3])


def build(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = two_mass_contact`` (``numerical.two_mass_contact``, the suspension and specimen of
    ``numerical.contact_1d``)."""
    return OneDofModel(TwoMassChain(numerical.two_mass_contact, numerical.contact_1d, dt_s))


#: the entry of the model (entry-point group rths_ros.models, name two_mass_contact)
MODEL = ModelEntry("interface_1d", build, "2-DoF chain (upper body, shank) on the contact test's suspension "
                   "(numerical.two_mass_contact; the example lab package)", section="two_mass_contact",
                   params=TwoMassParams)
