"""The FE cantilever as a numerical-substructure model (numerical.model = fe_beam_1d): its static tip stiffness,
the Craig-Bampton and modal reductions against the full model, HHT-alpha, and the model table's line."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.core.models.base import NumericalModel
from rths_ros.core.models.fe_beam import FeBeam, FeBeamParams
from rths_ros.families.registry import models
from rths_ros.params import ParameterError


def _run(p: FeBeamParams, f: np.ndarray, dt: float = 1e-3) -> np.ndarray:
    b = FeBeam(p, dt)
    return np.array([b.step(fk)[0] for fk in f])


def test_static_tip_stiffness_is_3EI_over_L3():
    """Under a constant 10 N the tip settles at -10 N / (3 E I / L^3) (within 0.1 %; 3992 N/m by default)."""
    p = FeBeamParams(drive_amplitude_n=0.0)
    z = _run(p, np.full(20000, 10.0))
    k = 3.0 * p.youngs_pa * p.width_m * p.height_m ** 3 / 12.0 / p.length_m ** 3
    assert -10.0 / z[-1] == pytest.approx(k, rel=1e-3)


def test_reductions_follow_the_full_model():
    """A random held force for 2 s: Craig-Bampton with 10 modes within 0.1 % (RMS, relative) of the full
    120-DoF model; modal truncation with 10 modes within 1 %."""
    rng = np.random.default_rng(5)
    f = np.repeat(rng.normal(0.0, 20.0, 200), 10)
    full = _run(FeBeamParams(reduction="none", drive_amplitude_n=0.0, n_elements=60), f)
    cb = _run(FeBeamParams(reduction="craig_bampton", n_modes=10, drive_amplitude_n=0.0, n_elements=60), f)
    modal = _run(FeBeamParams(reduction="modal", n_modes=10, drive_amplitude_n=0.0, n_elements=60), f)
    rms = np.sqrt(np.mean(full ** 2))
    assert np.sqrt(np.mean((cb - full) ** 2)) < 1e-3 * rms
    assert np.sqrt(np.mean((modal - full) ** 2)) < 1e-2 * rms


def test_hht_damps_only_the_high_modes():
    """HHT-alpha 0.1 against Newmark: the tip response to the drive differs by less than 1 % (RMS)."""
    f = np.zeros(3000)
    nm = _run(FeBeamParams(), f)
    ht = _run(FeBeamParams(integrator="hht", hht_alpha=0.1), f)
    assert np.sqrt(np.mean((ht - nm) ** 2)) < 1e-2 * np.sqrt(np.mean(nm ** 2))


def test_the_table_line_is_all_the_scenario_needs():
    assert models()["fe_beam_1d"].family == "interface_1d"
    s = scn.load("contact_1d", ["numerical.model=fe_beam_1d", "numerical.fe_beam_1d.n_modes=6"])
    model = factory.build_numerical(s)
    assert isinstance(model, NumericalModel) and model.force_width == 1
    with pytest.raises(ParameterError, match="numerical.fe_beam_1d.reduction"):
        scn.load("contact_1d", ["numerical.model=fe_beam_1d", "numerical.fe_beam_1d.reduction=guyan"])
    with pytest.raises(ParameterError, match="numerical.fe_beam_1d.hht_alpha"):
        scn.load("contact_1d", ["numerical.model=fe_beam_1d", "numerical.fe_beam_1d.hht_alpha=0.5"])
