"""Parameters of the substructured damper rig of du Bois et al. 2010.

The paper prints no number for the 2-DOF model, the damper, the actuator or the noise ("data are
normalised for commercial reasons"; the values are only in the missing figures).  Every default below
is a choice, in SI units, made so that the published statements hold (docs/dubois_rig.md):

* the 2-DOF chain ``x0 -(k1, c1)- m1 -(k2, c2)- m2`` with stiffness-proportional damping
  ``c_i = beta k_i`` (the only proportional damping the chain admits, eq. 11) and, with the linear
  Maxwell damper at ``m2``, a hybrid system whose second damped natural frequency is 6.3 Hz and
  whose two modes lie below 10 Hz (§4.3, §4.5);
* a hydraulic damper whose compressibility stiffness ``4 B A^2 / V0`` and mid-range equivalent
  damping give that Maxwell damper (§4.2-4.3);
* a transfer system (Labtronic PID + servo-valve + actuator) whose gain is flat (within 10 %) to
  40 Hz and falls like a heavily damped second-order system beyond, with a few
  milliseconds of delay (§2.2), modelled with the process models of
  :mod:`rths_ros.core.methods.tdc`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from rths_ros.params import param


@dataclass(frozen=True)
class ChainParams:
    """Numerical substructure: two masses on springs and dampers, base displacement ``x0`` (Fig. 8)."""

    m1_kg: float = param(3000.0, "kg", 1e-6, 1e9, "mass m1 (DOF 1)")
    m2_kg: float = param(1500.0, "kg", 1e-6, 1e9, "mass m2 (DOF 2, the interface with the damper)")
    k1_n_per_m: float = param(1.380e6, "N/m", 0.0, 1e12, "spring k1 between x0 and m1")
    k2_n_per_m: float = param(1.380e6, "N/m", 0.0, 1e12, "spring k2 between m1 and m2")
    beta_s: float = param(1e-3, "s", 0.0, 1.0, "stiffness-proportional damping: c_i = beta k_i (eq. 11, alpha = 0)")
    alpha_per_s: float = param(0.0, "1/s", 0.0, 0.0, "mass-proportional damping (must be 0 for the chain, "
                               "see docs/dubois_rig.md)")

    @property
    def c1(self) -> float:
        return self.beta_s * self.k1_n_per_m

    @property
    def c2(self) -> float:
        return self.beta_s * self.k2_n_per_m


@dataclass(frozen=True)
class HydraulicDamperParams:
    """Orifice damper (eq. 16): symmetric piston, compressible oil, laminar-turbulent orifice and poppet loop."""

    area_m2: float = param(3.5e-4, "m^2", 1e-9, 1.0, "A: piston area")
    bulk_modulus_pa: float = param(8e8, "Pa", 1e3, 1e11, "B_eff: effective bulk modulus (oil and body elasticity)")
    volume_m3: float = param(1e-4, "m^3", 1e-12, 1.0, "V0: total oil volume, V1 = V2 = V0/2 (the factor 4 of eq. 17)")
    c1_pa_s_per_m3: float = param(4e10, "Pa s/m^3", 0.0, 1e20, "c1: laminar orifice coefficient, dp = c1 Q + c2 Q^2")
    c2_pa_s2_per_m6: float = param(1.6e15, "Pa s^2/m^6", 1e-30, 1e25, "c2: turbulent orifice coefficient")
    poppet: bool = param(True, "", doc="include the poppet-valve loop")
    poppet_c1_pa_s_per_m3: float = param(4e9, "Pa s/m^3", 0.0, 1e20, "laminar coefficient of the poppet path")
    poppet_c2_pa_s2_per_m6: float = param(8e13, "Pa s^2/m^6", 1e-30, 1e25, "turbulent coefficient of the poppet path")
    poppet_open_pa: float = param(4e6, "Pa", 0.0, 1e9, "pressure difference at which the poppets are half open")
    poppet_width_pa: float = param(4e5, "Pa", 1.0, 1e9, "tanh width of the poppet activation")
    poppet_time_constant_s: float = param(0.002, "s", 1e-6, 1.0, "first-order poppet dynamics on dp")
    substeps: int = param(10, "", 1, 1000, "RK4 sub-steps per control period")

    @property
    def stiffness_n_per_m(self) -> float:
        """Compressibility stiffness ``k = 4 B A^2 / V0`` (eq. 17 with F = A dp)."""
        return 4.0 * self.bulk_modulus_pa * self.area_m2 ** 2 / self.volume_m3

    def equivalent_damping(self, velocity_amplitude_m_s: float) -> float:
        """Viscous damping dissipating the orifice's energy per cycle at a sinusoidal velocity amplitude.

        Incompressible orifice, poppets closed: ``F = A^2 (c1 v + c2 A v|v|)``; the quadratic term's
        describing function is ``8 c2 A V / (3 pi)``.
        """
        return self.area_m2 ** 2 * (self.c1_pa_s_per_m3 + 8.0 / (3.0 * math.pi) * self.c2_pa_s2_per_m6
                                    * self.area_m2 * velocity_amplitude_m_s)


@dataclass(frozen=True)
class MaxwellParams:
    """Linear damper of §4.3: viscous ``c_d`` in series with the compressibility spring ``k_d`` (eqs. 20-23)."""

    c_d_n_s_per_m: float = param(7229.18, "N s/m", 0.0, 1e12, "c_d (default: the hydraulic damper at 0.04 m/s)")
    k_d_n_per_m: float = param(3.92e6, "N/m", 1e-9, 1e15, "k_d (default: 4 B A^2 / V0 of the hydraulic damper)")


@dataclass(frozen=True)
class ActuatorParams:
    """Transfer system: demand -> LVDT displacement of the actuator under its inner PID loop.

    ``x = G r - (1 - G) f / k_load``: ``G`` is the servo (a G2D process model in cascade with a G1 lag,
    static gain 1) and the load ``f`` deflects the actuator by ``f / k_load``, rejected by the loop with
    the sensitivity ``1 - G``.
    """

    omega0_hz: float = param(65.0, "Hz", 0.1, 1e4, "natural frequency of the servo's second-order part")
    zeta: float = param(0.7, "", 0.01, 10.0, "damping ratio of the servo's second-order part")
    delay_s: float = param(0.006, "s", 0.0, 0.1, "pure delay (valve, electronics, converters)")
    tau_p_s: float = param(0.001, "s", 0.0, 1.0, "additional first-order lag")
    k_load_n_per_m: float = param(1e7, "N/m", 1e3, 1e15, "actuator and frame stiffness seen by the load")
    noise_x_m: float = param(2e-6, "m", 0.0, 1.0, "standard deviation of the LVDT noise")
    noise_f_n: float = param(2.0, "N", 0.0, 1e6, "standard deviation of the load-cell noise")


@dataclass(frozen=True)
class RigParams:
    """The whole rig: numerical chain, physical damper, linear damper model, actuator, sample period."""

    chain: ChainParams = param(ChainParams(), doc="2-DOF numerical substructure")
    damper: HydraulicDamperParams = param(HydraulicDamperParams(), doc="physical damper (and its model)")
    maxwell: MaxwellParams = param(MaxwellParams(), doc="linear damper of the hybrid model")
    actuator: ActuatorParams = param(ActuatorParams(), doc="transfer system")
    dt_s: float = param(0.001, "s", 1e-5, 0.01, "control period (1 kHz in du Bois et al. 2010)")
