"""The 1-D contact RTHS test of Insam 2022 on the simulated plant: the thesis's stability pattern
(lockstep, in-process virtual run = the same core objects the graph runs), judged from the metrics."""
from __future__ import annotations

import pytest

from rths_ros.analysis.metrics import compute_metrics
from rths_ros.analysis.run_analysis import reference_for
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual


def _metrics(*overrides):
    s = scn.load("contact_1d", list(overrides))
    rec = run_virtual(s)
    return compute_metrics(rec, reference_for(s, rec["k"].size), s.loop.dt_s)


D = "numerical.contact_1d.d_num_kg_per_s"
VFF = "platform.commander.vff"
PPI2 = "sim_plant.cascade.preset=PPI2"


def test_d200_feedback_only_is_stable():
    m = _metrics(f"{D}=200", f"{VFF}=false")
    assert m["stable"], m["stability_reason"]
    assert m["max_abs_tracking_error_m"] < 1e-3
    assert m["touchdown_s"] == pytest.approx(1.216, abs=0.08)   # later than ideal: the PPI1 lag of ~50 ms
    assert m["liftoff_s"] == pytest.approx(2.78, abs=0.08)


def test_d50_feedback_only_is_unstable_with_growing_oscillation_near_5_5_hz():
    m = _metrics(f"{D}=50", f"{VFF}=false")
    assert not m["stable"], m
    assert 4.5 <= m["dominant_osc_freq_hz"] <= 7.0, m["dominant_osc_freq_hz"]
    assert m["Ec_error_J"] > 0          # the transfer system injects energy during contact


def test_d50_with_vff_is_stable():
    m = _metrics(f"{D}=50", f"{VFF}=true")
    assert m["stable"], m["stability_reason"]
    assert m["max_abs_tracking_error_m"] < 0.3e-3


def test_d5_with_vff_is_unstable():
    m = _metrics(f"{D}=5", f"{VFF}=true")
    assert not m["stable"], m


def test_ppi2_d50_feedback_only_is_unstable():
    m = _metrics(f"{D}=50", f"{VFF}=false", PPI2)
    assert not m["stable"], m


def test_ppi2_d50_with_vff_is_stable():
    m = _metrics(f"{D}=50", f"{VFF}=true", PPI2)
    assert m["stable"], m["stability_reason"]
