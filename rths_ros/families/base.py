"""What a model family is: :class:`Family`, the one object through which the rest of the loop serves it.

A *family* is a kind of rig and interface: the 1-D interface on the Stewart platform, the gait test's 3-DoF
interface, a linear motor, a damper on a servo-hydraulic actuator, ...  Its object holds everything the loop,
the virtual run and the analysis need to know about it: its numerical models, the parts that serve them (the
platform path of the stewart_platform node, the force path of the ft_sensor node, the simulated plant and its
noise seed, the interface widths on the loop topics), the virtual run's trial loop and record, the bag
analyser, and the family's checks of a scenario.  No module outside a family's folder names a family: they look
it up by ``numerical.model`` (:mod:`rths_ros.families.registry`).

Families and models are plugins: a package registers a family in the entry-point group ``rths_ros.families``
(an object of this class) and a model of an existing family in ``rths_ros.models`` (a
:class:`~rths_ros.core.models.entry.ModelEntry` whose ``family`` names it).  The families shipped with this
package register the same way (setup.py); docs/extending.md is the tutorial.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rths_ros.core.models.entry import ModelEntry

__all__ = ["Family", "FamilyParts", "ModelEntry", "resolve", "TRIAL_LOOPS"]

#: the virtual run's trial loops (rths_ros.app.vrths): ``scalar`` serves every one-DoF interface (the contact
#: test's, the linear motor's, the damper's; with the 1-D controllers NPC, ILC, force blend), ``vector`` a
#: multi-DoF interface; a family with a loop of its own names it ``"module:function"`` instead
#: (``function(virtual_run, trial, record) -> bool``, False when the trial aborted)
TRIAL_LOOPS = ("scalar", "vector")


@dataclass(frozen=True)
class FamilyParts:
    """What serves a family's models in the loop, each built from the scenario ``s``: the stewart_platform
    node's path ``platform(s)`` (a :class:`~rths_ros.core.platform.paths.PlatformPath`), the ft_sensor node's path
    ``force(s)``, the simulated plant ``plant(s)`` and its noise seed ``seed(s, trial)``.  ``wrench_axes``: the
    wrench component of each interface force entry (None: the axes of ``platform.interface.dofs``); ``legs``: the
    plant has Stewart legs (a JointState of six legs); ``blend``: the numerical node's force blend (or None);
    ``aff``: the adaptive feedforward filter of ``aff.enabled`` (both halves; None: the family has none);
    ``aff_gap``: what its learner reads, ``legs`` (the leg command and state) or ``interface`` (the interface
    command, state and force); ``force_reads_legs``: the ft_sensor's path needs the measured legs of the same step
    (its ``needs_leg_state``; the ft_sensor refuses a path that needs them where this is false): the plant then
    publishes a step's leg state before its raw wrench, else the wrench first, the next hop of the loop (a run over
    separate processes; docs/performance.md)."""

    platform: Callable[[Any], Any]
    force: Callable[[Any], Any]
    plant: Callable[[Any], Any]
    seed: Callable[[Any, int], int]
    wrench_axes: tuple[int, ...] | None = None
    legs: bool = True
    blend: Callable[[Any], Any] | None = None
    aff: Callable[[Any], Any] | None = None
    aff_gap: str = "legs"
    force_reads_legs: bool = True


@dataclass(frozen=True)
class Family:
    """One model family (see the module doc).

    ``widths``: entries of the interface arrays on the loop topics, (InterfaceCommand position and velocity = the
    model's command, InterfaceForce force = the model's load, InterfaceForce measured, InterfaceState position and
    velocity = the platform path's achieved state); the loop's message validation rejects any other length.
    ``trial``: the virtual run's trial loop (one of :data:`TRIAL_LOOPS`, or ``module:function``); ``empty_record(n)``: the virtual run's
    record of n rows.  ``analyzer``: ``"module:function"`` of the bag analysis ``function(bag, out) -> dict``
    (imported when a bag is analysed, so the family's declaration stays below the analysis layer).
    ``validate(scenario)``: the family's own checks of a whole scenario (raise ParameterError naming the key).
    ``stewart``: the family runs on the Stewart platform (its geometry, the leg commander and the hardware and
    ros2_control rigs apply); ``added_delay``: platform.commander.added_delay_steps applies to it.  ``sections``: parameter sections ``numerical.<name>`` the
    family brings besides its models' own, name -> (dataclass, one-line doc).  ``bench``: ``"module:function"`` of
    ``function(scenario, n) -> dict``, the per-step cost of the family's core objects (``rths bench core``; None:
    the 1-D interface's objects).  ``face_runner``: ``"module:Class"`` of the family's own in-process
    FACE point runner ``Class(scenario, overrides)`` (a sweep names it by ``runner: <family>``).  ``example``: the name of a scenario of the family
    (the checks of every registered family build their objects from it).  ``geometry_note``: what ``rths geometry`` adds
    about the family's use of the platform.  ``same_quantities``: one
    physical quantity held by several keys, (what it is, the keys), which must agree where ``key_in_use(scenario,
    key)`` says the scenario uses the key (unless named in ``deliberate_mismatches``)."""

    name: str
    doc: str
    models: Mapping[str, ModelEntry]
    parts: FamilyParts
    widths: tuple[int, int, int, int]
    trial: str
    empty_record: Callable[[int], dict]
    analyzer: str
    validate: Callable[[Any], None] | None = None
    stewart: bool = False
    added_delay: bool = False
    sections: Mapping[str, tuple[type, str]] = field(default_factory=dict)
    same_quantities: tuple[tuple[str, tuple[str, ...]], ...] = ()
    key_in_use: Callable[[Any, str], bool] | None = None
    bench: str | None = None
    geometry_note: str = ""
    example: str = ""
    face_runner: str | None = None

    def __post_init__(self) -> None:
        if self.trial not in TRIAL_LOOPS and ":" not in self.trial:
            raise ValueError(f"family {self.name!r}: trial = {self.trial!r}; expected one of {', '.join(TRIAL_LOOPS)} "
                             "or 'module:function'")
        if len(self.widths) != 4 or any(int(w) < 1 for w in self.widths):
            raise ValueError(f"family {self.name!r}: widths = {self.widths!r}; expected four positive integers "
                             "(command, force, measured, state)")
        if ":" not in self.analyzer:
            raise ValueError(f"family {self.name!r}: analyzer = {self.analyzer!r}; expected 'module:function'")
        for name, model in self.models.items():
            if model.family != self.name:
                raise ValueError(f"family {self.name!r}: model {name!r} names family {model.family!r}")

    def analyze_bag(self, bag: Path, out: Path) -> dict:
        """The family's analysis of the run in ``bag`` into ``out`` (metrics, report, plots)."""
        return resolve(self.analyzer)(Path(bag), Path(out))


def resolve(ref: str):
    """The object ``"package.module:attribute"`` names."""
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
