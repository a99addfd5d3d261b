"""Builders of the fast-path core objects from a scenario.

The ROS nodes and the in-process virtual run (:mod:`rths_ros.app.vrths`) construct their core
objects only through these functions, so both run exactly the same objects with the same
parameters and seeds.  Each node owns its own instances (as separate processes do); the virtual run
keeps the same separation (the plant's kinematics is not the platform node's kinematics).

What is built is looked up in tables, never chosen by a test of the model's name: the numerical model in
:data:`rths_ros.core.models.registry.MODELS`, and the parts that serve its family (platform path, force path,
plant, noise seed) in :data:`FAMILY_PARTS`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rths_ros.app.scenario import Scenario
from rths_ros.core.models.base import NumericalModel
from rths_ros.core.models.registry import MODELS
from rths_ros.core.plant.sim_plant import SimPlant
from rths_ros.core.platform.commander import PlatformCommander
from rths_ros.core.platform.force_processing import ForceProcessor
from rths_ros.core.platform.interface import InterfaceMap
from rths_ros.core.platform.paths import ForcePath, InterfacePath, PlatformPath, ScalarForcePath
from rths_ros.core.platform.stewart import StewartKinematics

__all__ = ["FAMILY_PARTS", "FamilyParts", "build_numerical", "build_platform_path", "build_force_path",
           "build_plant", "build_home_twin", "plant_seed", "start_lengths", "build_force_blend", "build_platform",
           "build_force_processor", "build_gait_platform", "gait_start_lengths", "build_passivity", "build_aff",
           "INTERFACE_WIDTHS", "interface_widths"]


def build_numerical(s: Scenario) -> NumericalModel:
    """The numerical substructure of ``numerical.model`` (:class:`~rths_ros.core.models.base.NumericalModel`)."""
    return MODELS[s.numerical.model].build(s.numerical, s.loop.dt_s)


def build_force_blend(s: Scenario):
    """du Bois et al. 2010 §4.4 force switch and power-discrepancy trip in the numerical node, or None: the family's
    (``FamilyParts.blend``; the contact test's when numerical.force_blend is on, the damper rig's always)."""
    make = FAMILY_PARTS[s.numerical.family].blend
    return None if make is None else make(s)


def _contact_blend(s: Scenario):
    if not s.numerical.force_blend.enabled:
        return None
    from rths_ros.core.methods.tdc import ForceBlend
    return ForceBlend(s.numerical.force_blend, s.numerical.contact_1d, s.loop.dt_s)


# --- the 1-D interface on the Stewart platform ---------------------------------------------------------------------
def build_platform(s: Scenario) -> tuple[InterfaceMap, PlatformCommander]:
    """Interface map and leg commander of the 1-D interface."""
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    return imap, PlatformCommander(imap, s.platform.commander)


def build_force_processor(s: Scenario) -> ForceProcessor:
    """Tare, gravity compensation and contact gating of the 1-D interface force."""
    return ForceProcessor(s.ft_sensor)


def _stewart_twin(s: Scenario, start_lengths=None) -> SimPlant:
    """The Stewart platform's digital twin with the scenario's specimen (a trial starts at ``start_lengths``;
    None: at home)."""
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    if s.sim_plant.specimen_kind == "prosthetic_foot":
        return SimPlant(s.sim_plant, kin, imap, s.loop.dt_s, gait_interface=s.platform.gait.interface,
                        start_lengths=start_lengths)
    return SimPlant(s.sim_plant, kin, imap, s.loop.dt_s, start_lengths=start_lengths)


def _stewart_seed(s: Scenario, trial: int) -> int:
    return int(s.loop.seed) * 1_000_003 + int(s.sim_plant.noise_seed) + 7919 * int(trial)


def _interface_path(s: Scenario) -> InterfacePath:
    imap, commander = build_platform(s)
    return InterfacePath(imap, commander, s.safety.interface_limit_m)


# --- the gait test ------------------------------------------------------------------------------------------------
def build_gait_platform(s: Scenario):
    """GaitPlatform of the gait test, with its start pose = inverse kinematics of the model's initial command."""
    from rths_ros.core.models.gait.rths import GaitNumerical, GaitPlatform
    plat = GaitPlatform(s.platform.gait, StewartKinematics(s.platform.geometry), s.platform.commander.vff,
                        s.loop.dt_s)
    q0 = GaitNumerical(s.numerical.vpp, s.numerical.gait, s.loop.dt_s).q
    plat.set_start(q0)
    return plat


def gait_start_lengths(s: Scenario):
    """Leg lengths of the gait test's start pose (the same numbers the platform node computes)."""
    return build_gait_platform(s).start_lengths.copy()


def _gait_force(s: Scenario):
    from rths_ros.core.models.gait.rths import GaitForceProcessor
    return GaitForceProcessor(s.platform.gait, StewartKinematics(s.platform.geometry))


# --- the building benchmark ---------------------------------------------------------------------------------------
def _building_platform(s: Scenario):
    """The benchmark's tracking controller (rths_ros.core.models.building.rths.BuildingPlatform)."""
    from rths_ros.core.models.building.rths import BuildingPlatform, make_controller
    return BuildingPlatform(make_controller(s.tracking_controller, s.loop.dt_s))


def _building_force(s: Scenario) -> ScalarForcePath:
    from rths_ros.core.models.building.rths import BuildingForce
    return ScalarForcePath(BuildingForce())


def _building_plant(s: Scenario):
    """The benchmark's servo-hydraulic actuator and specimen."""
    from rths_ros.core.models.building.rths import ServoActuatorTwin
    return ServoActuatorTwin(s.numerical.building)


def _building_seed(s: Scenario, trial: int) -> int:
    """The benchmark's own numerical.building.noise_seed + trial (trial 0 draws the noise of the core
    run_benchmark)."""
    return int(s.numerical.building.noise_seed) + int(trial)


# --- the linear-motor rig (Bartl 2019 §6.2) ---------------------------------------------------------------------------
def _actuator_path(s: Scenario) -> PlatformPath:
    from rths_ros.core.platform.linear_actuator import LinearActuatorPath
    return LinearActuatorPath(s.safety.interface_limit_m,
                              follow_command=s.numerical.cubic_spring.displacement_control)


def _cubic_spring_aff(s: Scenario):
    """The rig's harmonic AFF with the interface gap (rths_ros.core.models.bartl.rths.CubicSpringAff)."""
    from rths_ros.core.models.bartl.rths import CubicSpringAff
    return CubicSpringAff(s.numerical.cubic_spring, s.loop.dt_s)


def _actuator_force(s: Scenario) -> ScalarForcePath:
    from rths_ros.core.platform.linear_actuator import DirectForce
    return ScalarForcePath(DirectForce())


def _cubic_spring_plant(s: Scenario):
    """The linear motor with the cubic spring (rths_ros.core.models.bartl.rths.CubicSpringTwin)."""
    from rths_ros.core.models.bartl.rths import CubicSpringTwin
    return CubicSpringTwin(s.numerical.cubic_spring)


def _cubic_spring_seed(s: Scenario, trial: int) -> int:
    """The rig's own numerical.cubic_spring.seed + trial (trial 0 draws the noise of the in-process rig study)."""
    return int(s.numerical.cubic_spring.seed) + int(trial)


# --- the damper rig (du Bois et al. 2010) ---------------------------------------------------------------------------------------
def _damper_path(s: Scenario) -> PlatformPath:
    from rths_ros.core.models.dubois.rths import TdcShaper
    from rths_ros.core.platform.linear_actuator import LinearActuatorPath
    return LinearActuatorPath(s.safety.interface_limit_m, TdcShaper(s.numerical.dubois_damper, s.loop.dt_s))


def _damper_plant(s: Scenario):
    """The actuator with the hydraulic damper (rths_ros.core.models.dubois.rths.DamperRigTwin), the sensor noise
    drawn for the trial's steps."""
    from rths_ros.core.models.dubois.rths import DamperRigTwin
    return DamperRigTwin(s.numerical.dubois_damper, s.loop.dt_s, s.steps + 1)


def _damper_blend(s: Scenario):
    from rths_ros.core.models.dubois.rths import DamperBlend
    return DamperBlend(s.numerical.dubois_damper, s.loop.dt_s)


# --- the coupled beams on two shakers (Bartl 2019 §6.1) -----------------------------------------------------------------
def _shaker_path(s: Scenario) -> PlatformPath:
    from rths_ros.core.models.bartl.beams_rths import ShakerPath
    return ShakerPath(s.safety.interface_limit_m, s.numerical.coupled_beams.force_limit_n)


def _plate_force(s: Scenario) -> ForcePath:
    from rths_ros.core.models.bartl.beams_rths import PlateForce
    return PlateForce()


def _beam_plant(s: Scenario):
    """The EXP beam with the plate and the two shakers (rths_ros.core.models.bartl.beams_rths.BeamRigTwin)."""
    from rths_ros.core.models.bartl.beams_rths import BeamRigTwin
    return BeamRigTwin(s.numerical.coupled_beams, s.loop.dt_s)


def _beam_aff(s: Scenario):
    """The rig's two-DoF harmonic AFF with the interface gap (rths_ros.core.models.bartl.beams_rths.CoupledBeamsAff)."""
    from rths_ros.core.models.bartl.beams_rths import CoupledBeamsAff
    return CoupledBeamsAff(s.numerical.coupled_beams, s.loop.dt_s)


def _leg_aff(s: Scenario):
    """The leg filters of the Stewart platform: FIR filtered-x LMS or the harmonic basis."""
    from rths_ros.core.learning.aff.fxlms import FxlmsAff
    home = StewartKinematics(s.platform.geometry).home_lengths
    if s.aff.kind == "harmonic":     # Bartl 2019: harmonic basis on the harmonics of the test frequency f_d
        from rths_ros.core.learning.aff.harmonic_legs import HarmonicLegAff
        return HarmonicLegAff(s.aff, s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff,
                              s.loop.dt_s, home_lengths=home, f_d_hz=s.numerical.contact_1d.f_d_hz)
    return FxlmsAff(s.aff, s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff, s.loop.dt_s,
                    home_lengths=home)


@dataclass(frozen=True)
class FamilyParts:
    """What serves a model family: the stewart_platform node's path, the ft_sensor node's path, the simulated
    plant and its noise seed per trial; ``wrench_axes``: the wrench component of each interface force entry (None:
    the axes of ``platform.interface.dofs``); ``legs``: the plant has Stewart legs (a JointState of six legs);
    ``blend``: the numerical node's force blend (or None); ``aff``: the adaptive feedforward filter of
    ``aff.enabled`` (both halves; None: the family has none); ``aff_gap``: what its learner reads, ``legs`` (the
    leg command and state) or ``interface`` (the interface command, state and force)."""

    platform: Callable[[Scenario], PlatformPath]
    force: Callable[[Scenario], ForcePath]
    plant: Callable[[Scenario], Any]
    seed: Callable[[Scenario, int], int]
    wrench_axes: tuple[int, ...] | None = None
    legs: bool = True
    blend: Callable[[Scenario], Any] | None = None
    aff: Callable[[Scenario], Any] | None = None
    aff_gap: str = "legs"


FAMILY_PARTS: dict[str, FamilyParts] = {
    "interface_1d": FamilyParts(_interface_path, lambda s: ScalarForcePath(build_force_processor(s)),
                                _stewart_twin, _stewart_seed, blend=_contact_blend, aff=_leg_aff),
    "gait": FamilyParts(build_gait_platform, _gait_force, lambda s: _stewart_twin(s, gait_start_lengths(s)),
                        _stewart_seed, wrench_axes=(0, 1, 5)),
    "building": FamilyParts(_building_platform, _building_force, _building_plant, _building_seed, wrench_axes=(0,),
                            legs=False),
    "linear_motor": FamilyParts(_actuator_path, _actuator_force, _cubic_spring_plant, _cubic_spring_seed,
                                wrench_axes=(0,), legs=False, aff=_cubic_spring_aff, aff_gap="interface"),
    "damper_rig": FamilyParts(_damper_path, _actuator_force, _damper_plant,
                              lambda s, trial: int(s.numerical.dubois_damper.noise_seed) + int(trial),
                              wrench_axes=(0,), legs=False, blend=_damper_blend),
    # the twin is noise-free: the trial index is its seed
    "shaker_pair": FamilyParts(_shaker_path, _plate_force, _beam_plant, lambda s, trial: int(trial),
                               wrench_axes=(2, 4), legs=False, aff=_beam_aff, aff_gap="interface"),
}


#: entries of the interface arrays on the loop topics, per model family: (InterfaceCommand position and velocity
#: = the model's command, InterfaceForce force = the model's load, InterfaceForce measured, InterfaceState position
#: and velocity = the platform path's achieved state).  The loop's message validation (rths_ros.runtime.guard)
#: rejects any other length; test/app/test_factory_widths.py checks the table against the built objects.
INTERFACE_WIDTHS: dict[str, tuple[int, int, int, int]] = {
    "interface_1d": (1, 1, 1, 1),
    "gait": (3, 3, 3, 3),
    "building": (3, 1, 1, 1),
    "linear_motor": (1, 1, 1, 1),
    "damper_rig": (1, 1, 1, 1),
    "shaker_pair": (2, 2, 2, 2),
}


def interface_widths(s: Scenario) -> dict[str, int]:
    """{"command", "force", "measured", "state"}: the entries of the interface arrays of the scenario's loop."""
    command, force, measured, state = INTERFACE_WIDTHS[s.numerical.family]
    return {"command": command, "force": force, "measured": measured, "state": state}


def build_platform_path(s: Scenario) -> PlatformPath:
    """The stewart_platform node's path of the scenario's model family."""
    return FAMILY_PARTS[s.numerical.family].platform(s)


def build_force_path(s: Scenario) -> ForcePath:
    """The ft_sensor node's path of the scenario's model family."""
    return FAMILY_PARTS[s.numerical.family].force(s)


def build_plant(s: Scenario):
    """The simulated plant (digital twin) of the scenario's model family."""
    return FAMILY_PARTS[s.numerical.family].plant(s)


def build_home_twin(s: Scenario) -> SimPlant:
    """The Stewart platform's twin starting every trial at home, as a rig's controller does after a RESET."""
    return _stewart_twin(s)


def plant_seed(s: Scenario, trial: int = 0) -> int:
    """The plant's noise seed for a trial: loop.seed, sim_plant.noise_seed and the trial index combined
    (every trial has its own noise, and the same run always the same); the building benchmark has its own."""
    return FAMILY_PARTS[s.numerical.family].seed(s, trial)


def start_lengths(s: Scenario) -> np.ndarray:
    """Leg lengths a trial starts from (the gait test's start pose, otherwise home)."""
    return np.array(build_platform_path(s).start_lengths, dtype=float)


# --- the learners and the passivity controller --------------------------------------------------------------------
def build_passivity(s: Scenario):
    from rths_ros.core.methods.passivity import PassivityController
    return PassivityController(s.passivity)


def build_aff(s: Scenario):
    """The adaptive feedforward filter of the scenario's family (both halves: the learner adapts, the platform path
    outputs); None where the family has none."""
    make = FAMILY_PARTS[s.numerical.family].aff
    return None if make is None else make(s)
