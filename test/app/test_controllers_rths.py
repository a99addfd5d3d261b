"""Insam 2022 Part I actuator control on the simulated plant (lockstep virtual run = the graph's core
objects; test_controllers_graph.py shows the graph reproduces it): NPC, ILC, ILC + NPC."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.analysis.metrics import compute_metrics, dominant_frequency
from rths_ros.analysis.run_analysis import reference_for
from rths_ros.app import scenario as scn
from rths_ros.app.vrths import run_virtual, trial_slice

D50 = "numerical.contact_1d.d_num_kg_per_s=50"


def _trials(s, rec):
    L = s.steps + 1
    z_ref = reference_for(s, L)
    out = []
    for j in range(int(np.ceil(rec["k"].size / L))):
        tr = trial_slice(rec, j, L)
        out.append((tr, compute_metrics(tr, z_ref[: tr["k"].size], s.loop.dt_s)))
    return out


def test_npc_stabilises_d50_feedback_only_and_gp_sweep_trends():
    rows = {}
    for gp in (0, 400, 800, 1600, 3200):
        s = scn.load("contact_1d", [D50, "passivity.enabled=true", f"passivity.g_p_kg_per_s={gp}",
                                    "passivity.t_error_s=0.1", "passivity.t_tot_s=0.1"])
        (_, m), = _trials(s, run_virtual(s))
        rows[gp] = m
    assert not rows[0]["stable"]
    assert rows[1600]["stable"]
    e_diss = [rows[g]["E_diss_J"] for g in (0, 400, 800, 1600, 3200)]
    assert all(b > a for a, b in zip(e_diss, e_diss[1:])), e_diss
    e_ref = [rows[g]["e_ref_rel"] for g in (0, 400, 800, 1600, 3200)]
    i_min = int(np.argmin(e_ref))
    assert 0 < i_min < 4, e_ref            # interior minimum: stabilisation first, then over-damping


def test_ilc_fq2_converges():
    s = scn.load("contact_1d", ["ilc.enabled=true", "ilc.beta_per_s=16", "ilc.gamma=1", "ilc.f_q_cut_hz=2",
                                "loop.trials=12"])
    rec = run_virtual(s)
    assert not rec["aborted"], rec["abort_reason"]
    e = [m["e_track_rel"] for _, m in _trials(s, rec)]
    assert len(e) == 12
    assert e[-1] < 0.3 * e[0]
    assert abs(e[4] - e[-1]) < 0.1 * e[0]           # levelled off by trial 5
    assert max(e[5:]) < 1.2 * min(e[5:]) + 1e-4     # no transient growth afterwards


def test_ilc_fq12_diverges_at_about_5_hz_and_is_stopped():
    s = scn.load("contact_1d", ["ilc.enabled=true", "ilc.beta_per_s=16", "ilc.gamma=1", "ilc.f_q_cut_hz=12",
                                "loop.trials=30"])
    rec = run_virtual(s)
    assert rec["aborted"] and "divergence" in rec["abort_reason"], rec.get("abort_reason")
    trials = _trials(s, rec)
    assert len(trials) < 30                          # the series was stopped
    e = [m["e_track_rel"] for _, m in trials]
    i_min = int(np.argmin(e))
    assert i_min <= 3 and e[-1] > 1.5 * e[i_min]     # grows from about the 3rd trial
    # the growing component: spectrum of the last trial's error minus the best trial's
    last, best = trials[-1][0], trials[i_min][0]
    grow = (last["z_cmd"] - last["z_ach"]) - (best["z_cmd"] - best["z_ach"])
    f = dominant_frequency(grow, s.loop.dt_s, f_min=1.0, f_max=20.0)
    assert 4.0 <= f <= 6.0, f


ILC_NPC = [D50, "ilc.enabled=true", "ilc.beta_per_s=10", "ilc.gamma=2", "ilc.f_q_cut_hz=2",
           "passivity.enabled=true", "passivity.g_p_kg_per_s=1600", "passivity.t_error_s=0.1",
           "passivity.t_tot_s=0.1", "loop.trials=8"]          # Insam 2022 §6.4


def _series(overrides):
    s = scn.load("contact_1d", overrides)
    return _trials(s, run_virtual(s))


@pytest.fixture(scope="module")
def ilc_npc():
    return _series(ILC_NPC)


def _max_step_change(f_d):
    return float(np.max(np.abs(np.diff(f_d))))


def test_ilc_with_npc_is_stable_and_learns(ilc_npc):
    trials = ilc_npc
    assert all(m["stable"] for _, m in trials), [m["stability_reason"] for _, m in trials]
    e_ref = [m["e_ref_rel"] for _, m in trials]
    assert e_ref[-1] < 0.5 * e_ref[0], e_ref
    assert all(b < a for a, b in zip(e_ref[:6], e_ref[1:6])), e_ref     # falls while the ILC learns
    assert max(e_ref[5:]) < 1.1 * min(e_ref[5:]), e_ref                # then levels off
    # NPC works hardest while the ILC has not learned yet: the damping force falls over the trials
    # (the single-sample peak is noisy; its early maximum and the contact-phase RMS are the robust view)
    peak_fd = [m["peak_damping_force_n"] for _, m in trials]
    assert max(peak_fd[:2]) > max(peak_fd[-3:]), peak_fd
    rms_fd = [float(np.sqrt(np.mean(tr["f_d"][tr["contact"]] ** 2))) for tr, _ in trials]
    assert rms_fd[-1] < 0.7 * rms_fd[0], rms_fd
    assert max(peak_fd) < 5.0                        # no normalisation spikes (floor of |P~_tot|)


def test_ilc_with_npc_floor_prevents_normalisation_spikes(ilc_npc):
    """alpha = G_P P~_error / max(|P~_tot|, floor): with the floor F_d rises over many steps to a few N; without
    it (cap kept) alpha jumps to the cap where P~_tot passes zero and F_d spikes within one step."""
    fd_floor = [tr["f_d"] for tr, _ in ilc_npc]
    fd_raw = [tr["f_d"] for tr, _ in _series([*ILC_NPC, "passivity.p_tot_min_w=0"])]
    peak_floor = max(float(np.max(np.abs(f))) for f in fd_floor)
    for f in fd_floor:
        assert _max_step_change(f) < 0.25 * float(np.max(np.abs(f)))          # no one-step rise
    spikes = [f for f in fd_raw if _max_step_change(f) > 0.5 * float(np.max(np.abs(f)))]
    assert spikes, [_max_step_change(f) for f in fd_raw]
    assert max(float(np.max(np.abs(f))) for f in fd_raw) > 3.0 * peak_floor
