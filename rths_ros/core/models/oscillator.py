"""A linear single-DoF oscillator as the numerical part: the worked example of a fourth model
(docs/architecture.md, "Adding a numerical model").

    m z'' + c z' + k z = F_0 sin(2 pi f_0 t) - F_int

The interface force ``F_int`` (from the specimen, through the force/torque sensor) is held over each
synchronisation step, as is the drive, so the step is exact: ``x_{k+1} = A_d x_k + B_d u_k`` with ``x = [z, z']``,
``u_k = F_0 sin(2 pi f_0 t_k) - F_int,k`` and ``A_d = e^{A dT}``, ``B_d = A^-1 (A_d - I) B`` (zero-order hold,
computed once with one matrix exponential of the augmented matrix).  It starts at rest.  The defaults
(10 kg, 4000 N/m, 400 kg/s: critically damped; 52 N at 0.25 Hz) swing it about 13 mm down, so on the contact test's rig (specimen 10 mm
above the ground) the specimen touches the ground for about a quarter of the 4 s trial and pushes back.  The model has no
reference solution of the coupled system, so the analysis reports no reference error for it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.base import OneDofModel
from rths_ros.params import param

__all__ = ["OscillatorParams", "Oscillator", "build"]


@dataclass(frozen=True)
class OscillatorParams:
    mass_kg: float = param(10.0, "kg", 1e-3, 1e5, "mass m")
    stiffness_n_per_m: float = param(4000.0, "N/m", 0.0, 1e9, "spring k")
    damping_kg_per_s: float = param(400.0, "kg/s", 0.0, 1e7, "viscous damper c")
    drive_amplitude_n: float = param(52.0, "N", 0.0, 1e6, "amplitude F_0 of the harmonic drive force")
    drive_frequency_hz: float = param(0.25, "Hz", 0.0, 100.0, "frequency f_0 of the drive")


class Oscillator:
    """The oscillator's 1-DoF integrator: ``step(F_int) -> (z_{k+1}, z'_{k+1})`` (module doc)."""

    def __init__(self, p: OscillatorParams, dt_s: float):
        from scipy.linalg import expm
        self.params = p
        self.dt_s = float(dt_s)
        a = np.array([[0.0, 1.0, 0.0],
                      [-p.stiffness_n_per_m / p.mass_kg, -p.damping_kg_per_s / p.mass_kg, 1.0 / p.mass_kg],
                      [0.0, 0.0, 0.0]])
        e = expm(a * self.dt_s)             # [[A_d, B_d], [0, 1]]
        self._ad = e[:2, :2].copy()
        self._bd = e[:2, 2].copy()
        self._w = 2.0 * math.pi * p.drive_frequency_hz
        self.x = np.zeros(2)
        self.k = 0

    def reset(self) -> None:
        self.x[:] = 0.0
        self.k = 0

    def step(self, f_int: float) -> tuple[float, float]:
        u = self.params.drive_amplitude_n * math.sin(self._w * self.k * self.dt_s) - float(f_int)
        self.x = self._ad @ self.x + self._bd * u
        self.k += 1
        return float(self.x[0]), float(self.x[1])

    @property
    def velocity(self) -> float:
        return float(self.x[1])


def build(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = oscillator_1d`` (``numerical.oscillator_1d``)."""
    return OneDofModel(Oscillator(numerical.oscillator_1d, dt_s))
