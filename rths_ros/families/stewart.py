"""The Stewart platform's parts, shared by the families that ride on it (the 1-D interface and the gait test):
its leg commander, the 1-D force processing, its digital twin and the twin's noise seed.  Built only from the
scenario's attributes (no import of the scenario module: a family's declaration is loaded while the scenario
module builds its parameter table)."""
from __future__ import annotations

from rths_ros.core.plant.sim_plant import SimPlant
from rths_ros.core.platform.commander import PlatformCommander
from rths_ros.core.platform.force_processing import ForceProcessor
from rths_ros.core.platform.interface import InterfaceMap
from rths_ros.core.platform.paths import InterfacePath
from rths_ros.core.platform.stewart import StewartKinematics

__all__ = ["build_platform", "build_force_processor", "stewart_twin", "stewart_seed", "interface_path"]


def build_platform(s) -> tuple[InterfaceMap, PlatformCommander]:
    """Interface map and leg commander of the 1-D interface."""
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    return imap, PlatformCommander(imap, s.platform.commander)


def build_force_processor(s) -> ForceProcessor:
    """Tare, gravity compensation and contact gating of the 1-D interface force."""
    return ForceProcessor(s.ft_sensor)


def stewart_twin(s, start_lengths=None) -> SimPlant:
    """The Stewart platform's digital twin with the scenario's specimen (a trial starts at ``start_lengths``;
    None: at home)."""
    kin = StewartKinematics(s.platform.geometry)
    imap = InterfaceMap(s.platform.interface, kin)
    if s.sim_plant.specimen_kind == "prosthetic_foot":
        return SimPlant(s.sim_plant, kin, imap, s.loop.dt_s, gait_interface=s.platform.gait.interface,
                        start_lengths=start_lengths)
    return SimPlant(s.sim_plant, kin, imap, s.loop.dt_s, start_lengths=start_lengths)


def stewart_seed(s, trial: int) -> int:
    """The twin's noise seed for a trial: loop.seed, sim_plant.noise_seed and the trial index combined."""
    return int(s.loop.seed) * 1_000_003 + int(s.sim_plant.noise_seed) + 7919 * int(trial)


def interface_path(s) -> InterfacePath:
    """The stewart_platform node's path of a 1-D interface: interface map, leg commander, interface limit."""
    imap, commander = build_platform(s)
    return InterfacePath(imap, commander, s.safety.interface_limit_m)
