"""Builders of the fast-path core objects from a scenario.

The ROS nodes and the in-process virtual run (:mod:`rths_ros.core.vrths`) construct their core
objects only through these functions, so both run exactly the same objects with the same
parameters and seeds.  Each node owns its own instances (as separate processes do); the virtual run
keeps the same separation (the plant's kinematics is not the platform node's kinematics).
"""
from __future__ import annotations

from .contact1d import NumericalMSD
from .force_processing import ForceProcessor
from .interface import InterfaceMap
from .platform import PlatformCommander
from .scenario import Scenario
from .sim_plant import SimPlant
from .stewart import StewartKinematics


def build_numerical(s: Scenario) -> NumericalMSD:
    p = s.numerical.contact_1d
    if abs(p.dt_s - s.loop.dt_s) > 1e-15:
        from .params import ParameterError
        raise ParameterError(f"numerical.contact_1d.dt_s: {p.dt_s!r} differs from loop.dt_s = {s.loop.dt_s!r}; "
                             "they must be equal (one integration step per synchronisation step)")
    return NumericalMSD(p)


def build_platform(s: Scenario) -> tuple[InterfaceMap, PlatformCommander]:
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    return imap, PlatformCommander(imap, s.platform.commander)


def build_plant(s: Scenario) -> SimPlant:
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    return SimPlant(s.sim_plant, kin, imap, s.loop.dt_s)


def plant_seed(s: Scenario, trial: int = 0) -> int:
    """The plant's noise seed for a trial: loop.seed, sim_plant.noise_seed and the trial index combined
    (every trial has its own noise, and the same run always the same)."""
    return int(s.loop.seed) * 1_000_003 + int(s.sim_plant.noise_seed) + 7919 * int(trial)


def build_force_processor(s: Scenario) -> ForceProcessor:
    return ForceProcessor(s.ft_sensor)


def build_passivity(s: Scenario):
    from .passivity import PassivityController
    return PassivityController(s.passivity)


def build_aff(s: Scenario):
    """The adaptive feedforward filter (both halves: the learner adapts, the platform path outputs)."""
    from .aff import FxlmsAff
    home = StewartKinematics(s.platform.geometry).home_lengths
    return FxlmsAff(s.aff, s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff, s.loop.dt_s,
                    home_lengths=home)


def apply_position_feedforward(commander: PlatformCommander, cmd, u) -> None:
    """Add a position-level feedforward u (6,) to a leg command and re-check the limits: feedforward can
    never push a leg past its stroke."""
    cmd.length += u
    cmd.feedforward_position += u
    if commander.params.enforce_limits:
        commander.check(cmd.length, cmd.velocity)
