"""The ``interface_1d`` family: declaration and parts (see the package doc)."""
from __future__ import annotations

from rths_ros.core.methods.tdc import ForceBlendParams
from rths_ros.core.models import contact1d, fe_beam, oscillator
from rths_ros.core.models.contact1d.independent import IndependentContact1DParams
from rths_ros.core.models.contact1d.model import Contact1DParams
from rths_ros.core.numerics.newmark import NewmarkParams
from rths_ros.core.platform.paths import ScalarForcePath
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.families.base import Family, FamilyParts, ModelEntry
from rths_ros.families.records import empty_record
from rths_ros.families.stewart import build_force_processor, interface_path, stewart_seed, stewart_twin

NAME = "interface_1d"

MODELS = {
    "contact_1d": ModelEntry(NAME, contact1d.build_rk, "mass-spring-damper with contact, DOP853 "
                             "(numerical.contact_1d; Insam 2022 ch. 4)", contact1d.reference, qualification=True,
                             reference_report=contact1d.reference_report),
    "contact_1d_newmark": ModelEntry(NAME, contact1d.build_newmark, "the contact test's numerical part "
                                     "integrated by Newmark (numerical.newmark; Bartl 2019 §2.3)", contact1d.reference,
                                     section="newmark", params=NewmarkParams, qualification=True,
                                     reference_report=contact1d.reference_report),
    "contact_1d_independent": ModelEntry(NAME, contact1d.build_independent, "the contact test's numerical "
                                         "part with independent integration (numerical.independent; du Bois (IMAC, "
                                         "ch. 25))", contact1d.reference, section="independent", params=IndependentContact1DParams,
                                         reference_report=contact1d.reference_report),
    "oscillator_1d": ModelEntry(NAME, oscillator.build, "linear single-DoF oscillator with a harmonic "
                                "drive (numerical.oscillator_1d; the worked example of docs/architecture.md)",
                                section="oscillator_1d", params=oscillator.OscillatorParams),
    "fe_beam_1d": ModelEntry(NAME, fe_beam.build, "finite-element cantilever with a tip mass, Craig-Bampton "
                             "reduced, Newmark or HHT-alpha (numerical.fe_beam_1d; Bartl 2019 §2.2-2.3)",
                             section="fe_beam_1d", params=fe_beam.FeBeamParams),
}


def _contact_blend(s):
    """du Bois et al. 2010 §4.4 force switch with the contact test's specimen model, when numerical.force_blend is on."""
    if not s.numerical.force_blend.enabled:
        return None
    from rths_ros.core.methods.tdc import ForceBlend
    return ForceBlend(s.numerical.force_blend, s.numerical.contact_1d, s.loop.dt_s)


def _leg_aff(s):
    """The leg filters of the Stewart platform: FIR filtered-x LMS or the harmonic basis."""
    from rths_ros.core.learning.aff.fxlms import FxlmsAff
    home = StewartKinematics(s.platform.geometry).home_lengths
    if s.aff.kind == "harmonic":     # Bartl 2019: harmonic basis on the harmonics of the test frequency f_d
        from rths_ros.core.learning.aff.harmonic_legs import HarmonicLegAff
        return HarmonicLegAff(s.aff, s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff,
                              s.loop.dt_s, home_lengths=home, f_d_hz=s.numerical.contact_1d.f_d_hz)
    return FxlmsAff(s.aff, s.sim_plant.legs, s.sim_plant.cascade, s.platform.commander.vff, s.loop.dt_s,
                    home_lengths=home)


#: one physical quantity used by several nodes: the specimen of the 1-D contact test in the twin, the numerical
#: model's copy for the reference solution, the force sensor's gravity compensation
SAME_QUANTITIES = (
    ("specimen mass m_EXP", ("sim_plant.specimen.m_exp_kg", "numerical.contact_1d.m_exp_kg", "ft_sensor.m_exp_kg")),
    ("specimen stiffness k_EXP", ("sim_plant.specimen.k_exp_n_per_m", "numerical.contact_1d.k_exp_n_per_m")),
    ("initial gap h0 of the specimen", ("sim_plant.specimen.h0_m", "numerical.contact_1d.h0_m")),
)


#: the sections of the contact test's integrators besides numerical.contact_1d (their models use its specimen)
_CONTACT_TEST_SECTIONS = ("", "newmark", "independent")


def _key_in_use(s, key: str) -> bool:
    """The contact test (its specimen in the twin, the numerical model's own contact_1d section, the sensor's
    compensation of the same specimen) uses the keys of SAME_QUANTITIES."""
    if s.sim_plant.specimen_kind != "contact_1d":
        return False
    if key.startswith("numerical.contact_1d."):
        from rths_ros.families.registry import model
        # the contact test's own integrators use numerical.contact_1d; a model with a section of its own has its
        # own parameters (the oscillator, the beam)
        return model(s.numerical.model).section in _CONTACT_TEST_SECTIONS
    return True


FAMILY = Family(
    name=NAME,
    doc="one interface DoF z on the Stewart platform, force along it; the contact test's plant and metrics",
    models=MODELS,
    parts=FamilyParts(interface_path, lambda s: ScalarForcePath(build_force_processor(s)), stewart_twin,
                      stewart_seed, blend=_contact_blend, aff=_leg_aff, force_reads_legs=False),
    widths=(1, 1, 1, 1),
    example="contact_1d",
    trial="scalar",
    empty_record=empty_record,
    analyzer="rths_ros.families.interface_1d.analysis:analyze_bag",
    stewart=True, added_delay=True,
    sections={
        "contact_1d": (Contact1DParams, "mass-spring-damper with contact (Insam 2022 ch. 4)"),
        "force_blend": (ForceBlendParams, "force switch f = gamma f_p + (1 - gamma) f_n with a specimen model and the "
                        "power-discrepancy trip (du Bois et al. 2010 §4.4), models of the interface_1d family"),
    },
    same_quantities=SAME_QUANTITIES,
    key_in_use=_key_in_use,
)
