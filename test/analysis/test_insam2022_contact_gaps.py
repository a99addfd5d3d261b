"""Insam 2022 results of the 1-D contact test that the twin does not reach, and the experiments that explain
them (docs/passivity.md, "Contact-phase energy error"; docs/controllers.md, "Chapter 8 comparison").

- §5.4.1: E^c_error (eq. 5.6, d_NUM = 50 kg/s, NPC off) is −1.54e-5 J with VFF and 3.5e-3 J without.
- §8.2: the VFF and VFF+ILC maxima of the tracking error lie at t = 2 s, the turning point, where the
  rig's leg friction dominates (§8.1); the twin's legs have no friction (§4.2.2).

Every run is one in-process 4 s bump (well under a second each).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import signal

from rths_ros.analysis.metrics import compute_metrics, power_flows
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual

D50 = ["numerical.contact_1d.d_num_kg_per_s=50"]
VFF = ["platform.commander.vff=true"]
#: Table 4.1 legs twice as fast: numerator and corner frequency of every P_i doubled
FAST_LEGS = ["sim_plant.legs.gain_num=[2022.0,2106.2,2247.0,1561.8,1976.2,2141.8]",
             "sim_plant.legs.omega_c_rad_per_s=[245.8,111.0,109.4,110.6,132.4,118.0]"]
DT = 1e-3


def _run(overrides):
    rec = run_virtual(scn.load("contact_1d", overrides))
    return rec, compute_metrics(rec)


def _window(m):
    return int(round(m["touchdown_s"] / DT)), int(round(m["liftoff_s"] / DT))


def test_vff_contact_window_ends_at_take_off():
    """With VFF the contact gate opens again and again after take-off (the undamped specimen rings at
    24 Hz).  E^c_error (eq. 5.6) must still sum over [TD, TO) of the one contact phase: TO within 3 ms of
    the reference's 2.7815 s, and Ec_error_J equal to that sum (rel 1e-12)."""
    rec, m = _run(D50 + VFF)
    c = rec["contact"].astype(bool)
    i0, i1 = _window(m)
    assert m["liftoff_s"] == pytest.approx(2.7815, abs=3e-3)
    assert np.count_nonzero(np.diff(c[i1:].astype(int)) == 1) >= 10      # the chatter the rule handles
    p_err = power_flows(rec["f_int"], rec["zdot_cmd"], rec["f_meas"], rec["zdot_ach"])[2]
    assert m["Ec_error_J"] == pytest.approx(float(np.sum(p_err[i0:i1]) * DT), rel=1e-12)


def test_vff_contact_energy_error_parts_and_faster_legs():
    """The twin's E^c_error with VFF (+2.1e-4 J, seed: −1.54e-5 J) splits into a passive part below 2 Hz
    (the bump itself, < 0 as on the rig) and an active part from the lightly damped 7 Hz contact mode
    (> 0).  With the legs twice as fast the active part shrinks and E^c_error is negative, the source's sign;
    with d_NUM = 100 kg/s too.  Held: signs only, and the twin's value within 2.1e-4 J ± 30 %."""
    rec, m = _run(D50 + VFF)
    assert m["Ec_error_J"] == pytest.approx(2.1e-4, rel=0.3)
    i0, i1 = _window(m)
    sos = signal.butter(2, 2.0, fs=1.0 / DT, output="sos")
    f, ev = rec["f_meas"], rec["zdot_ach"] - rec["zdot_cmd"]
    low = signal.sosfiltfilt(sos, f) * signal.sosfiltfilt(sos, ev)
    e_low = float(np.sum(low[i0:i1]) * DT)
    e_high = float(np.sum((f * ev - low)[i0:i1]) * DT)
    assert e_low < 0.0 < e_high, (e_low, e_high)
    assert _run(D50 + VFF + FAST_LEGS)[1]["Ec_error_J"] < 0.0
    assert _run(["numerical.contact_1d.d_num_kg_per_s=100"] + VFF)[1]["Ec_error_J"] < 0.0


@pytest.mark.xfail(strict=True, reason="not reproduced: the twin's contact mode with VFF is more active than "
                                       "the rig's (docs/passivity.md, 'Contact-phase energy error')")
def test_vff_contact_energy_error_has_the_thesis_sign():
    """Insam 2022 §5.4.1: E^c_error = −1.54e-5 J with VFF (d_NUM = 50 kg/s).  Held (expected to fail): < 0."""
    assert _run(D50 + VFF)[1]["Ec_error_J"] < 0.0


def test_no_vff_contact_energy_error_is_the_oscillation_energy():
    """Without VFF the twin is unstable and E^c_error is 0.26 J (seed: 3.5e-3 J).  The energy balance of
    the contact phase explains the size: E^c_error equals what d_NUM dissipates of the 2-20 Hz motion plus
    the growth of that motion's energy (within 15 %).  The source's 3.5e-3 J therefore bounds the rig's
    contact oscillation to a mean amplitude of about 0.2 mm; the twin's is above 1 mm."""
    rec, m = _run(D50)
    assert not m["stable"]
    i0, i1 = _window(m)
    sos = signal.butter(4, [2.0, 20.0], btype="bandpass", fs=1.0 / DT, output="sos")
    zb, zdb = signal.sosfiltfilt(sos, rec["z_cmd"]), signal.sosfiltfilt(sos, rec["zdot_cmd"])
    k, m_num = 1e4 + 8650.0, 9.62

    def e_osc(i):
        return 0.5 * k * zb[i] ** 2 + 0.5 * m_num * zdb[i] ** 2

    dissipated = 50.0 * float(np.sum(zdb[i0:i1] ** 2)) * DT
    assert m["Ec_error_J"] == pytest.approx(dissipated + e_osc(i1 - 1) - e_osc(i0), rel=0.15)
    assert np.sqrt(2.0 * np.mean(zb[i0:i1] ** 2)) > 1e-3


def _vff_ppi2_npc():
    return _run(D50 + VFF + ["sim_plant.cascade.preset=PPI2", "passivity.enabled=true"])


def test_chapter8_vff_error_peaks_at_touch_down_not_at_the_turning_point():
    """Insam 2022 §8.2: VFF 0.03 mm at t = 2 s.  The twin reaches the size (0.03 ± 0.01 mm) but its maximum
    lies in the touch-down transient (within 0.1 s after TD); at the turning point (1.9-2.1 s), where the
    rig's friction acts, its error is less than half of that."""
    rec, m = _vff_ppi2_npc()
    e = np.abs(rec["z_cmd"] - rec["z_ach"])
    t = rec["t"]
    assert m["max_abs_tracking_error_m"] == pytest.approx(3e-5, abs=1e-5)
    assert 0.0 <= m["max_abs_tracking_error_at_s"] - m["touchdown_s"] < 0.1
    assert e[(t >= 1.9) & (t <= 2.1)].max() < 0.5 * m["max_abs_tracking_error_m"]


@pytest.mark.xfail(strict=True, reason="not reproduced: the twin's legs have no friction, so no error peak at "
                                       "the turning point (docs/controllers.md, 'Chapter 8 comparison')")
def test_chapter8_vff_maximum_at_the_turning_point():
    """Insam 2022 §8.2: the VFF maximum lies at t = 2 s.  Held (expected to fail): within 1.9-2.1 s."""
    assert 1.9 <= _vff_ppi2_npc()[1]["max_abs_tracking_error_at_s"] <= 2.1
