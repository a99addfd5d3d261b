"""The NPC paper (Insam et al. 2021) on the twin: its K_d pattern and its G_P sweep.

The paper's rig made K_d = 50 kg/s unstable although velocity feedforward was on; the thesis's rig and the
twin are stable there (Insam 2022 §5.4.1).  The paper's Table 1 is missing, so the presets ``npc_kd`` and
``npc_gp`` of ``rths compare`` give the twin 8 ms of extra command delay (docs/passivity.md, "The NPC
paper").  Each run is one 4 s bump in process (well under a second).
"""
from __future__ import annotations

import pytest

from rths_ros.analysis.compare import PRESETS
from rths_ros.analysis.metrics import compute_metrics
from rths_ros.analysis.run_analysis import reference_for
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual


def _run(preset: str, variant: str) -> dict:
    pre = PRESETS[preset]
    s = scn.load("contact_1d", pre["base"] + pre["variants"][variant])
    rec = run_virtual(s)
    assert rec["t"].size == s.steps + 1, rec.get("abort_reason")
    return compute_metrics(rec, z_ref=reference_for(s, s.steps + 1))


def test_kd_50_100_150_unstable_transition_stable():
    """Insam et al. 2021 §3: K_d = 50 unstable, 100 in the transition zone, 150 stable (no NPC).  Transition here:
    judged stable, but the contact-phase oscillation neither decays like K_d = 150 (growth ratio < 0.5)
    nor grows past the unstable verdict's 1.5: ratio in [0.8, 1.5)."""
    m = {d: _run("npc_kd", f"K_d={d}") for d in (50, 100, 150)}
    assert not m[50]["stable"], m[50]["stability_reason"]
    assert m[100]["stable"] and 0.8 <= m[100]["oscillation_growth_ratio"] < 1.5, m[100]["stability_reason"]
    assert m[150]["stable"] and m[150]["oscillation_growth_ratio"] < 0.5, m[150]["stability_reason"]


def test_gp_energy_error_crosses_zero_near_2800():
    """Insam et al. 2021 §4: E_error after one bump (4000 steps) falls towards zero as G_P grows and is slightly
    negative from G_P ≈ 3000 kg/s; E_error ≈ 0 marks the optimum, ≈ 2800 kg/s.  Held: G_P = 0 unstable,
    E_error > 0 at 2400 kg/s and < 0 at 3200 kg/s (the zero within 2800 ± 400 kg/s), and E_diss grows
    from 2400 to 3200 kg/s."""
    assert not _run("npc_gp", "G_P=0")["stable"]
    lo, hi = _run("npc_gp", "G_P=2400"), _run("npc_gp", "G_P=3200")
    assert lo["stable"] and hi["stable"]
    assert lo["E_error_J"] > 0.0 > hi["E_error_J"], (lo["E_error_J"], hi["E_error_J"])
    assert hi["E_diss_J"] > lo["E_diss_J"]


def test_gp_hardly_changes_the_stable_system():
    """Insam et al. 2021 §4: for K_d = 150 kg/s (stable without NPC) the influence of G_P is small.  Held: e_ref_rel
    at G_P = 2800 kg/s within 10 % of G_P = 0."""
    pre = PRESETS["npc_gp"]
    out = []
    for g in (0, 2800):
        s = scn.load("contact_1d", pre["base"] + ["numerical.contact_1d.d_num_kg_per_s=150",
                                                   f"passivity.g_p_kg_per_s={g}"])
        out.append(compute_metrics(run_virtual(s), z_ref=reference_for(s, s.steps + 1))["e_ref_rel"])
    assert out[1] == pytest.approx(out[0], rel=0.10), out


@pytest.mark.xfail(strict=True, reason="not reproduced: the twin's fidelity optimum is G_P = 600-800 kg/s, the "
                                       "paper's ≈ 2800 kg/s (docs/passivity.md, 'The NPC paper')")
def test_gp_fidelity_optimum_near_2800():
    """Insam et al. 2021 §4, Fig. 7: the relative RMS error of K_d = 50 is smallest at G_P ≈ 2800 kg/s, and
    G_P = 600 kg/s leaves large oscillations (Fig. 5).  Held (expected to fail): e_ref_rel at 2800 kg/s
    no larger than at 600 kg/s."""
    assert _run("npc_gp", "G_P=2800")["e_ref_rel"] <= _run("npc_gp", "G_P=600")["e_ref_rel"]
