"""Builders of the fast-path core objects from a scenario.

The ROS nodes and the in-process virtual run (:mod:`rths_ros.app.vrths`) construct their core
objects only through these functions, so both run exactly the same objects with the same
parameters and seeds.  Each node owns its own instances (as separate processes do); the virtual run
keeps the same separation (the plant's kinematics is not the platform node's kinematics).

What is built is looked up, never chosen by a test of the model's name: the numerical model and the parts that
serve its family (platform path, force path, plant, noise seed) in the scenario's family
(:mod:`rths_ros.families.registry`).
"""
from __future__ import annotations

import numpy as np

from rths_ros.app.scenario import Scenario
from rths_ros.core.models.base import NumericalModel
from rths_ros.core.plant.sim_plant import SimPlant
from rths_ros.core.platform.paths import ForcePath, PlatformPath
from rths_ros.families import registry
from rths_ros.families.base import FamilyParts
from rths_ros.families.stewart import build_force_processor, build_platform, stewart_twin

__all__ = ["FamilyParts", "parts", "build_numerical", "build_platform_path", "build_force_path",
           "build_plant", "build_home_twin", "plant_seed", "start_lengths", "build_force_blend", "build_platform",
           "build_force_processor", "build_passivity", "build_aff", "interface_widths"]


def parts(s: Scenario) -> FamilyParts:
    """The parts that serve the scenario's model family."""
    return registry.family(s).parts


def build_numerical(s: Scenario) -> NumericalModel:
    """The numerical substructure of ``numerical.model`` (:class:`~rths_ros.core.models.base.NumericalModel`)."""
    return registry.model(s.numerical.model).build(s.numerical, s.loop.dt_s)


def build_force_blend(s: Scenario):
    """du Bois et al. 2010 §4.4 force switch and power-discrepancy trip in the numerical node, or None: the family's
    (``FamilyParts.blend``; the contact test's when numerical.force_blend is on, the damper rig's always)."""
    make = parts(s).blend
    return None if make is None else make(s)


def interface_widths(s: Scenario) -> dict[str, int]:
    """{"command", "force", "measured", "state"}: the entries of the interface arrays of the scenario's loop."""
    command, force, measured, state = registry.family(s).widths
    return {"command": command, "force": force, "measured": measured, "state": state}


def build_platform_path(s: Scenario) -> PlatformPath:
    """The stewart_platform node's path of the scenario's model family."""
    return parts(s).platform(s)


def build_force_path(s: Scenario) -> ForcePath:
    """The ft_sensor node's path of the scenario's model family.  A path that needs the leg state of each step in a
    family that declares ``force_reads_legs=False`` is refused (its plant would publish the wrench first)."""
    path = parts(s).force(s)
    if getattr(path, "needs_leg_state", False) and not parts(s).force_reads_legs:
        raise ValueError(f"model family {registry.family(s).name!r}: its force path needs the leg state of each "
                         "step, but the family declares force_reads_legs=False (its plant would publish the "
                         "wrench first); declare it true")
    return path


def build_plant(s: Scenario):
    """The simulated plant (digital twin) of the scenario's model family."""
    return parts(s).plant(s)


def build_home_twin(s: Scenario) -> SimPlant:
    """The Stewart platform's twin starting every trial at home, as a rig's controller does after a RESET."""
    return stewart_twin(s)


def plant_seed(s: Scenario, trial: int = 0) -> int:
    """The plant's noise seed for a trial: loop.seed, sim_plant.noise_seed and the trial index combined
    (every trial has its own noise, and the same run always the same); the building benchmark has its own."""
    return parts(s).seed(s, trial)


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
    make = parts(s).aff
    return None if make is None else make(s)
