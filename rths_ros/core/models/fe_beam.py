"""A finite-element virtual part as the numerical substructure: a steel cantilever with a tip mass, reduced by
Craig-Bampton (or modal truncation, or not at all) and integrated by implicit Newmark or HHT-alpha, its tip
deflection coupled to the specimen on the Stewart platform (the 1-D interface of the contact test).

    M q'' + D q' + K q = G^T (F_0 sin(2 pi f_0 t) - F_int),      z = G q  (the tip deflection)

The FE library is :mod:`rths_ros.core.models.fe` (Bartl 2019 §2.2-2.3: beam matrices, reduction, the steppers with a
pre-factorised effective matrix); this module only assembles the scenario's beam and wraps the stepper as a
1-DoF integrator.  The defaults give the beam the static tip stiffness of the linear oscillator example (about
4000 N/m: 1 m long, 50 x 11.5 mm, 210 GPa) and a 9 kg tip mass, so the 52 N drive at 0.25 Hz swings the tip
about 13 mm and the specimen touches the ground in the second half of the 4 s trial.  Mass-proportional Rayleigh
damping of 25 1/s gives the tip about 250 kg/s, close to the contact test's d_NUM = 200 kg/s; with 12 1/s
(about 120 kg/s) the coupled test is unstable in contact on the PPI1 platform, as the contact test is with
d_NUM = 50 kg/s (docs/fe_virtual_parts.md).  No reference solution of the coupled system: the analysis reports no
reference error for it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from rths_ros.core.models.base import OneDofModel
from rths_ros.core.models.fe.integrators import NewmarkStepper, hht_parameters
from rths_ros.core.models.fe.matrices import BeamParams, FEModel, cantilever_beam, rayleigh
from rths_ros.core.models.fe.reduction import craig_bampton, modal_truncation
from rths_ros.params import param

__all__ = ["FeBeamParams", "FeBeam", "beam_model", "build"]


@dataclass(frozen=True)
class FeBeamParams:
    length_m: float = param(1.0, "m", 0.05, 20.0, "beam length")
    width_m: float = param(0.05, "m", 1e-3, 2.0, "cross-section width")
    height_m: float = param(0.0115, "m", 1e-4, 1.0, "cross-section height (bending direction)")
    youngs_pa: float = param(210e9, "Pa", 1e6, 1e13, "Young's modulus E")
    density_kg_m3: float = param(7850.0, "kg/m^3", 1.0, 1e5, "density")
    n_elements: int = param(20, "", 1, 2000, "Euler-Bernoulli elements")
    tip_mass_kg: float = param(9.0, "kg", 0.0, 1e4, "point mass at the tip (the interface point)")
    damping_a_per_s: float = param(25.0, "1/s", 0.0, 1e4, "mass-proportional Rayleigh damping a (D = a M + b K)")
    damping_b_s: float = param(1e-4, "s", 0.0, 1.0, "stiffness-proportional Rayleigh damping b")
    reduction: str = param("craig_bampton", "", doc="craig_bampton (tip DoF + fixed-interface modes), modal "
                           "(lowest free-interface modes) or none (the full model)",
                           choices=("craig_bampton", "modal", "none"))
    n_modes: int = param(10, "", 1, 500, "modes kept by the reduction")
    integrator: str = param("newmark", "", doc="newmark (average acceleration) or hht (HHT-alpha, numerical "
                            "damping of the high modes)", choices=("newmark", "hht"))
    hht_alpha: float = param(0.1, "", 0.0, 1.0 / 3.0, "HHT alpha (Bartl 2019 convention; beta, gamma from it)")
    drive_amplitude_n: float = param(52.0, "N", 0.0, 1e6, "amplitude F_0 of the harmonic force at the tip")
    drive_frequency_hz: float = param(0.25, "Hz", 0.0, 100.0, "frequency f_0 of the drive")


def beam_model(p: FeBeamParams) -> FEModel:
    """The scenario's beam with its tip mass and damping, reduced as configured (interface: the tip deflection)."""
    full = cantilever_beam(BeamParams(length_m=p.length_m, width_m=p.width_m, height_m=p.height_m,
                                      youngs_pa=p.youngs_pa, density_kg_m3=p.density_kg_m3,
                                      n_elements=p.n_elements))
    tip = int(full.info["io_dofs"][0])
    M = sp.csc_matrix(full.M) + sp.csc_matrix(([p.tip_mass_kg], ([tip], [tip])), shape=full.M.shape)
    model = FEModel(M.tocsc(), full.K, rayleigh(M, full.K, p.damping_a_per_s, p.damping_b_s), full.G,
                    "fe_beam", {**full.info, "tip_dof": tip})
    if p.reduction == "none":
        return model
    n = min(p.n_modes, model.n_dof - 1)
    if p.reduction == "modal":
        red = modal_truncation(model, n)
        red.D = np.asarray(red.info["R"].T @ (model.D @ red.info["R"]))
        return red
    return craig_bampton(model, [tip], n)


class FeBeam:
    """The reduced beam's stepper as a 1-DoF integrator: ``step(F_int) -> (z_{k+1}, z'_{k+1})``."""

    def __init__(self, p: FeBeamParams, dt_s: float):
        self.params = p
        self.dt_s = float(dt_s)
        self.model = beam_model(p)
        kw = {}
        if p.integrator == "hht":
            beta, gamma = hht_parameters(p.hht_alpha)
            kw = {"alpha": p.hht_alpha, "beta": beta, "gamma": gamma}
        self.stepper = NewmarkStepper.from_model(self.model, self.dt_s, **kw)
        self._g = np.asarray(self.model.G.todense() if sp.issparse(self.model.G) else self.model.G, dtype=float)
        self._w = 2.0 * math.pi * p.drive_frequency_hz
        self.k = 0

    def reset(self) -> None:
        self.stepper.reset()
        self.k = 0

    def step(self, f_int: float) -> tuple[float, float]:
        self.k += 1
        u = self.params.drive_amplitude_n * math.sin(self._w * self.k * self.dt_s) - float(f_int)
        z = float(self.stepper.step(np.array([u]))[0])
        return z, self.velocity

    @property
    def velocity(self) -> float:
        return float((self._g @ self.stepper.qd)[0])


def build(numerical, dt_s: float) -> OneDofModel:
    """``numerical.model = fe_beam_1d`` (``numerical.fe_beam_1d``)."""
    return OneDofModel(FeBeam(numerical.fe_beam_1d, dt_s))
