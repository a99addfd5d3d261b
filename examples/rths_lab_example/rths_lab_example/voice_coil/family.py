"""The ``voice_coil`` family: its parameters (``numerical.voice_coil``), its numerical model, its parts and the
family object registered in rths_ros's entry-point group ``rths_ros.families``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.base import OneDofModel
from rths_ros.core.models.oscillator import Oscillator, OscillatorParams
from rths_ros.core.platform.linear_actuator import LinearActuatorPath
from rths_ros.families import Family, FamilyParts, ModelEntry
from rths_ros.families.own_rig import direct_force, validate_own_rig
from rths_ros.families.records import empty_record
from rths_ros.params import ParameterError, param

__all__ = ["VoiceCoilParams", "numerical_part", "FAMILY"]

NAME = "voice_coil"


@dataclass(frozen=True)
class VoiceCoilParams:
    # the numerical part
    m_n_kg: float = param(2.0, "kg", 1e-3, 1e3, "numerical mass m_n")
    k_n_n_per_m: float = param(2000.0, "N/m", 0.0, 1e7, "numerical spring k_n")
    c_n_kg_per_s: float = param(40.0, "kg/s", 0.0, 1e5, "numerical damper c_n")
    drive_amplitude_n: float = param(5.0, "N", 0.0, 1e3, "amplitude F_0 of the harmonic drive of m_n")
    drive_frequency_hz: float = param(3.0, "Hz", 0.0, 100.0, "frequency f_0 of the drive")
    # the rig (the twin)
    m_a_kg: float = param(0.2, "kg", 1e-3, 100.0, "moving mass of coil and rod m_a")
    k_f_n_per_a: float = param(10.0, "N/A", 1e-3, 1e4, "force constant K_f of the coil")
    tau_i_s: float = param(5e-4, "s", 1e-6, 0.1, "time constant tau_i of the current loop")
    i_max_a: float = param(5.0, "A", 1e-3, 1e3, "current limit i_max")
    kp_a_per_m: float = param(2e4, "A/m", 0.0, 1e8, "position controller's proportional gain K_p")
    kd_a_s_per_m: float = param(28.0, "A s/m", 0.0, 1e6, "position controller's derivative gain K_d")
    stroke_m: float = param(0.01, "m", 1e-4, 1.0, "stroke of the rod (beyond it the twin aborts)")
    k_s_n_per_m: float = param(5000.0, "N/m", 0.0, 1e8, "specimen spring k_s")
    c_s_kg_per_s: float = param(5.0, "kg/s", 0.0, 1e5, "specimen damper c_s")
    force_noise_std_n: float = param(0.02, "N", 0.0, 100.0, "standard deviation of the force sensor's noise")
    noise_seed: int = param(1, "", 0, 2**31 - 1, "seed of the sensor noise (plus the trial index)")
    substeps: int = param(10, "", 1, 1000, "sub-steps of the twin per synchronisation step")


def numerical_part(p: VoiceCoilParams, dt_s: float, k_extra: float = 0.0, c_extra: float = 0.0) -> Oscillator:
    """The numerical part ``m_n z'' + c_n z' + k_n z = F_0 sin(2 pi f_0 t) - F_int``: rths_ros's linear oscillator
    (exact for inputs held over a step), ``step(F_int) -> (z, z')``; ``k_extra``, ``c_extra`` add a spring and a
    damper (the reference: the specimen in the numerical part)."""
    return Oscillator(OscillatorParams(mass_kg=p.m_n_kg, stiffness_n_per_m=p.k_n_n_per_m + k_extra,
                                       damping_kg_per_s=p.c_n_kg_per_s + c_extra,
                                       drive_amplitude_n=p.drive_amplitude_n,
                                       drive_frequency_hz=p.drive_frequency_hz), dt_s)


def build(numerical, dt_s: float) -> OneDofModel:
    return OneDofModel(numerical_part(numerical.voice_coil, dt_s))


def reference(numerical, n_rows: int, dt_s: float) -> dict:
    """The coupled system with an ideal actuator and sensor, the same discretisation: ``m_n z'' + (c_n + c_s) z'
    + (k_n + k_s) z = F_0 sin(2 pi f_0 t)``; the specimen is fixed to the rod (always in contact)."""
    p = numerical.voice_coil
    ideal = numerical_part(p, dt_s, p.k_s_n_per_m, p.c_s_kg_per_s)
    z = np.zeros(n_rows)
    for k in range(1, n_rows):
        z[k] = ideal.step(0.0)[0]
    return {"z": z, "contact": np.ones(n_rows, dtype=bool)}


def _plant(s):
    from rths_lab_example.voice_coil.rig import VoiceCoilTwin
    return VoiceCoilTwin(s.numerical.voice_coil, s.loop.dt_s)


def validate(s) -> None:
    """The rig's rules: those of every rig with its own actuator, and a stroke the safety limit fits in."""
    validate_own_rig(s)
    p = s.numerical.voice_coil
    if s.safety.interface_limit_m > p.stroke_m:
        raise ParameterError(f"safety.interface_limit_m: {s.safety.interface_limit_m!r} is not allowed with "
                             f"numerical.voice_coil.stroke_m = {p.stroke_m!r}; expected at most the stroke")


MODELS = {
    "voice_coil_msd": ModelEntry(NAME, build, "mass-spring-damper with a harmonic drive on the lab's voice-coil rig "
                                 "(numerical.voice_coil; the example lab package)", reference),
}

FAMILY = Family(
    name=NAME,
    doc="a single-axis voice-coil actuator with a spring specimen (the example lab package)",
    models=MODELS,
    parts=FamilyParts(lambda s: LinearActuatorPath(s.safety.interface_limit_m), direct_force, _plant,
                      lambda s, trial: int(s.numerical.voice_coil.noise_seed) + int(trial),
                      wrench_axes=(0,), legs=False),
    widths=(1, 1, 1, 1),
    example="lab_voice_coil",
    trial="scalar",
    empty_record=empty_record,
    analyzer="rths_lab_example.voice_coil.analysis:analyze_bag",
    validate=validate,
    sections={"voice_coil": (VoiceCoilParams, "the voice-coil rig of the example lab package: numerical part, "
                             "actuator, controller, specimen, sensor")},
)
