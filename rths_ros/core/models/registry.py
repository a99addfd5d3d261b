"""The table of numerical models: ``numerical.model`` -> :class:`ModelEntry`.

A model belongs to a *family* that says how the rest of the loop serves it: ``interface_1d`` (one interface
DoF z on the Stewart platform, force along it, the contact test's plant and metrics), ``gait`` (the 3-DoF
sagittal interface of the prosthetic-foot test), ``building`` (the servo-hydraulic benchmark's actuator and
tracking controller), ``linear_motor`` (one interface DoF on a linear motor's axis instead of the Stewart
platform: Bartl's (2019) cubic-spring rig) and ``damper_rig`` (a servo-hydraulic actuator driving a hydraulic damper
with transfer-dynamics cancellation: du Bois et al.'s (2010) rig) and ``shaker_pair`` (a two-DoF interface driven by two
force-controlled shakers: Bartl's (2019) coupled beams).  :mod:`rths_ros.app.factory` maps each family to its platform path, force path and plant;
the analysis maps it to its metrics.  A new model of an existing family is one module in this folder and one
line of :data:`MODELS` (docs/architecture.md shows it with the linear oscillator).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rths_ros.core.models import building, contact1d, fe_beam, gait, oscillator
from rths_ros.core.models.bartl import beams_rths
from rths_ros.core.models.bartl import rths as bartl_rths
from rths_ros.core.models.base import NumericalModel
from rths_ros.core.models.dubois import rths as dubois_rths

__all__ = ["ModelEntry", "MODELS", "FAMILIES", "entry", "family_of", "require_family"]

#: the model families (see the module doc)
FAMILIES = ("interface_1d", "gait", "building", "linear_motor", "damper_rig", "shaker_pair")


@dataclass(frozen=True)
class ModelEntry:
    """One numerical model: its family, its builder ``(scenario.numerical, loop.dt_s) -> NumericalModel``, a
    one-line description, optionally its reference solution ``(scenario.numerical, n_rows, dt_s) -> {"z": z^r,
    "contact": gate}`` (the interface motion of the ideal coupled system and its contact state, arrays of n_rows;
    None: the analysis reports no reference error) and optionally
    its own parameter section ``numerical.<section>`` of dataclass ``params``.  ``qualification``: the transfer-system
    qualification on the twin (``rths qualify``, rths_ros.analysis.twin_qualification) supports the model.
    ``reference_report`` ``(scenario.numerical, dt_s, t_end_s) -> dict``: the reference solution as ``rths reference``
    prints and plots it (keys ``title, t, contact, series, events, marks, method``; see
    :func:`rths_ros.core.models.contact1d.reference_report`), None when the model has none.  ``validate``
    ``(scenario) -> None``: the model's own checks of a whole scenario (raise ParameterError naming the key)."""

    family: str
    build: Callable[[Any, float], NumericalModel]
    doc: str
    reference: Callable[[Any, int, float], dict] | None = None
    section: str = ""
    params: type | None = None
    qualification: bool = False
    reference_report: Callable[[Any, float, float], dict] | None = None
    validate: Callable[[Any], None] | None = None


MODELS: dict[str, ModelEntry] = {
    "contact_1d": ModelEntry("interface_1d", contact1d.build_rk, "mass-spring-damper with contact, DOP853 "
                             "(numerical.contact_1d; Insam 2022 ch. 4)", contact1d.reference, qualification=True,
                             reference_report=contact1d.reference_report),
    "contact_1d_newmark": ModelEntry("interface_1d", contact1d.build_newmark, "the contact test's numerical part "
                                     "integrated by Newmark (numerical.newmark; Bartl 2019 §2.3)", contact1d.reference,
                                     qualification=True, reference_report=contact1d.reference_report),
    "contact_1d_independent": ModelEntry("interface_1d", contact1d.build_independent, "the contact test's numerical "
                                         "part with independent integration (numerical.independent; du Bois (IMAC, ch. 25))",
                                         contact1d.reference, reference_report=contact1d.reference_report),
    "vpp": ModelEntry("gait", gait.build, "VPP amputee walker of the prosthetic-foot gait test (numerical.vpp, "
                      "numerical.gait; Insam 2022 ch. 15-17)"),
    "building": ModelEntry("building", building.build, "the servo-hydraulic vRTHS building benchmark "
                           "(numerical.building, tracking_controller)"),
    "oscillator_1d": ModelEntry("interface_1d", oscillator.build, "linear single-DoF oscillator with a harmonic "
                                "drive (numerical.oscillator_1d; the worked example of docs/architecture.md)",
                                section="oscillator_1d", params=oscillator.OscillatorParams),
    "fe_beam_1d": ModelEntry("interface_1d", fe_beam.build, "finite-element cantilever with a tip mass, Craig-Bampton "
                             "reduced, Newmark or HHT-alpha (numerical.fe_beam_1d; Bartl 2019 §2.2-2.3)",
                             section="fe_beam_1d", params=fe_beam.FeBeamParams),
    "cubic_spring": ModelEntry("linear_motor", bartl_rths.build, "mass-spring-damper with a harmonic force, Newmark, "
                               "coupled to a cubic spring on a linear motor (numerical.cubic_spring; Bartl 2019 §6.2)",
                               bartl_rths.reference, section="cubic_spring",
                               params=bartl_rths.CubicSpringScenarioParams, validate=bartl_rths.validate_scenario),
    "dubois_damper": ModelEntry("damper_rig", dubois_rths.build, "2-DOF chain with base excitation as modal "
                                "transfer functions (RK4), coupled to a hydraulic damper on a servo-hydraulic "
                                "actuator (numerical.dubois_damper; du Bois et al. 2010)", section="dubois_damper",
                                params=dubois_rths.DuboisScenarioParams),
    "coupled_beams": ModelEntry("shaker_pair", beams_rths.build, "Craig-Bampton cantilever (Newmark) coupled through "
                                "a two-DoF plate interface to a second beam driven by two shakers, harmonic AFF "
                                "(numerical.coupled_beams; Bartl 2019 §6.1)", section="coupled_beams",
                                params=beams_rths.CoupledBeamsParams, validate=beams_rths.validate_scenario),
}


def entry(model: str) -> ModelEntry:
    """The table entry of ``model`` (KeyError names the allowed models)."""
    try:
        return MODELS[model]
    except KeyError:
        raise KeyError(f"numerical.model: {model!r} is not a known model; expected one of "
                       f"{', '.join(MODELS)}") from None


def family_of(model: str) -> str:
    return entry(model).family


def require_family(model: str, family: str, what: str) -> None:
    """Raise ValueError naming ``what`` unless ``model`` belongs to ``family`` (readers of one family's records)."""
    if family_of(model) != family:
        raise ValueError(f"{what} is not a run of the {family} family (numerical.model = {model!r}, family "
                         f"{family_of(model)})")
