"""Builders of the fast-path core objects from a scenario.

The ROS nodes and the in-process virtual run (:mod:`rths_ros.app.vrths`) construct their core
objects only through these functions, so both run exactly the same objects with the same
parameters and seeds.  Each node owns its own instances (as separate processes do); the virtual run
keeps the same separation (the plant's kinematics is not the platform node's kinematics).
"""
from __future__ import annotations

from rths_ros.core.models.contact1d.model import NumericalMSD
from rths_ros.core.platform.force_processing import ForceProcessor
from rths_ros.core.platform.interface import InterfaceMap
from rths_ros.core.platform.commander import PlatformCommander
from rths_ros.app.scenario import Scenario
from rths_ros.core.plant.sim_plant import SimPlant
from rths_ros.core.platform.stewart import StewartKinematics


def is_gait(s: Scenario) -> bool:
    """True for the prosthetic-foot gait test (numerical.model = vpp)."""
    return s.numerical.model == "vpp"


def is_building(s: Scenario) -> bool:
    """True for the servo-hydraulic building benchmark (numerical.model = building)."""
    return s.numerical.model == "building"


def build_building_platform(s: Scenario):
    """The benchmark's tracking controller, as the platform node's object (rths_ros.core.models.building.rths)."""
    from rths_ros.core.models.building.rths import BuildingPlatform, make_controller
    return BuildingPlatform(make_controller(s.tracking_controller, s.loop.dt_s))


def build_numerical(s: Scenario):
    """The numerical substructure: NumericalMSD (contact_1d), GaitNumerical (vpp) or BuildingNumerical (building)."""
    if is_building(s):
        from rths_ros.core.models.building.rths import BuildingNumerical
        return BuildingNumerical(s.numerical.building)
    if is_gait(s):
        from rths_ros.core.models.gait.rths import GaitNumerical
        return GaitNumerical(s.numerical.vpp, s.numerical.gait, s.loop.dt_s)
    if s.numerical.model == "contact_1d_newmark":
        from rths_ros.core.models.contact1d.newmark import NewmarkMSD
        return NewmarkMSD(s.numerical.contact_1d, s.numerical.newmark, s.loop.dt_s)
    if s.numerical.model == "contact_1d_independent":
        from rths_ros.core.models.contact1d.independent import IndependentMSD
        return IndependentMSD(s.numerical.contact_1d, s.numerical.independent, s.loop.dt_s)
    p = s.numerical.contact_1d
    if abs(p.dt_s - s.loop.dt_s) > 1e-15:
        from rths_ros.params import ParameterError
        raise ParameterError(f"numerical.contact_1d.dt_s: {p.dt_s!r} differs from loop.dt_s = {s.loop.dt_s!r}; "
                             "they must be equal (one integration step per synchronisation step)")
    return NumericalMSD(p)


def build_force_blend(s: Scenario):
    """Seed 004 §4.4 force switch and power-discrepancy trip of the contact test, or None when off."""
    if not s.numerical.force_blend.enabled:
        return None
    from rths_ros.core.methods.tdc import ForceBlend
    return ForceBlend(s.numerical.force_blend, s.numerical.contact_1d, s.loop.dt_s)


def build_platform(s: Scenario) -> tuple[InterfaceMap, PlatformCommander]:
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    return imap, PlatformCommander(imap, s.platform.commander)


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


def build_gait_force_processor(s: Scenario):
    from rths_ros.core.models.gait.rths import GaitForceProcessor
    return GaitForceProcessor(s.platform.gait, StewartKinematics(s.platform.geometry))


def build_plant(s: Scenario) -> SimPlant:
    if is_building(s):    # the benchmark's servo-hydraulic actuator and specimen
        from rths_ros.core.models.building.rths import ServoActuatorTwin
        return ServoActuatorTwin(s.numerical.building)
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    if s.sim_plant.specimen_kind == "prosthetic_foot":
        start = gait_start_lengths(s) if is_gait(s) else None
        return SimPlant(s.sim_plant, kin, imap, s.loop.dt_s, gait_interface=s.platform.gait.interface,
                        start_lengths=start)
    return SimPlant(s.sim_plant, kin, imap, s.loop.dt_s)


def plant_seed(s: Scenario, trial: int = 0) -> int:
    """The plant's noise seed for a trial: loop.seed, sim_plant.noise_seed and the trial index combined
    (every trial has its own noise, and the same run always the same).  The building benchmark: its own
    numerical.building.noise_seed + trial (trial 0 draws the noise of the core run_benchmark)."""
    if is_building(s):
        return int(s.numerical.building.noise_seed) + int(trial)
    return int(s.loop.seed) * 1_000_003 + int(s.sim_plant.noise_seed) + 7919 * int(trial)


def build_force_processor(s: Scenario) -> ForceProcessor:
    if is_building(s):
        from rths_ros.core.models.building.rths import BuildingForce
        return BuildingForce()
    return ForceProcessor(s.ft_sensor)


def build_passivity(s: Scenario):
    from rths_ros.core.methods.passivity import PassivityController
    return PassivityController(s.passivity)


def build_aff(s: Scenario):
    """The adaptive feedforward filter (both halves: the learner adapts, the platform path outputs)."""
    from rths_ros.core.learning.aff.fxlms import FxlmsAff
    home = StewartKinematics(s.platform.geometry).home_lengths
    if s.aff.kind == "harmonic":     # seed 001: harmonic basis on the harmonics of the test frequency f_d
        from rths_ros.core.learning.aff.harmonic_legs import HarmonicLegAff
        return HarmonicLegAff(s.aff, s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff,
                              s.loop.dt_s, home_lengths=home, f_d_hz=s.numerical.contact_1d.f_d_hz)
    return FxlmsAff(s.aff, s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff, s.loop.dt_s,
                    home_lengths=home)


def apply_position_feedforward(commander: PlatformCommander, cmd, u) -> None:
    """Add a position-level feedforward u (6,) to a leg command and re-check the limits: feedforward can
    never push a leg past its stroke."""
    cmd.length += u
    cmd.feedforward_position += u
    if commander.params.enforce_limits:
        commander.check(cmd.length, cmd.velocity)
