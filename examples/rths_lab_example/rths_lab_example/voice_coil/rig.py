"""The digital twin of the voice-coil rig (the ``sim_plant`` of the family): actuator, position controller,
specimen and force sensor, stepped in sub-steps of the synchronisation step.

Per sub-step h (semi-implicit Euler for the rod, exact for the current loop)::

    i_cmd = clip(K_p (x_d - x) - K_d x', -i_max, i_max)         position controller (A)
    i    <- i_cmd + (i - i_cmd) exp(-h / tau_i)                  current loop, first order
    x''   = (K_f i - k_s x - c_s x') / m_a                       rod with the coil, the specimen to the ground

The measurement at the end of the step: rod position and velocity, coil current, and the sensor's force
``k_s x + c_s x'`` plus white noise.  A rod beyond ``stroke_m`` raises PlantFault: the run aborts.
"""
from __future__ import annotations

import math

import numpy as np

from rths_ros.core.plant.base import PlantFault, PlantOutput

__all__ = ["VoiceCoilTwin"]


class VoiceCoilTwin:
    """sim_plant of the ``voice_coil`` family (the plant protocol of rths_ros.core.plant.base): ``reset(seed)``,
    ``step(length, feedforward_velocity)`` with the position demand in ``length[0]``."""

    kinematics = None

    def __init__(self, p, dt_s: float):
        self.p = p
        self.dt_s = float(dt_s)
        self.n_sub = int(p.substeps)
        self.h = self.dt_s / self.n_sub
        self._decay = math.exp(-self.h / p.tau_i_s)
        self.start_lengths = np.zeros(6)
        self._rng = np.random.default_rng(0)
        self.x = self.v = self.i = 0.0

    def _measure(self) -> PlantOutput:
        p = self.p
        lengths, vel, cur, w = np.zeros(6), np.zeros(6), np.zeros(6), np.zeros(6)
        lengths[0], vel[0], cur[0] = self.x, self.v, self.i
        f_true = p.k_s_n_per_m * self.x + p.c_s_kg_per_s * self.v
        w[0] = f_true + (p.force_noise_std_n * self._rng.standard_normal() if p.force_noise_std_n > 0 else 0.0)
        w[1] = f_true
        return PlantOutput(lengths, vel, cur, w)

    def reset(self, noise_seed: int) -> PlantOutput:
        """At rest, the noise stream ``noise_seed``; sample 0 is the rig at rest."""
        self._rng = np.random.default_rng(int(noise_seed))
        self.x = self.v = self.i = 0.0
        return self._measure()

    def step(self, length, feedforward_velocity=None) -> PlantOutput:
        p = self.p
        x_d = float(length[0])
        for _ in range(self.n_sub):
            i_cmd = min(max(p.kp_a_per_m * (x_d - self.x) - p.kd_a_s_per_m * self.v, -p.i_max_a), p.i_max_a)
            self.i = i_cmd + (self.i - i_cmd) * self._decay
            acc = (p.k_f_n_per_a * self.i - p.k_s_n_per_m * self.x - p.c_s_kg_per_s * self.v) / p.m_a_kg
            self.v += self.h * acc
            self.x += self.h * self.v
        if not abs(self.x) <= p.stroke_m:
            raise PlantFault(f"voice coil: rod at {self.x:.6g} m, beyond its stroke of {p.stroke_m:g} m")
        return self._measure()
