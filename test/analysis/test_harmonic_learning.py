"""Bartl 2019 §5.4.4 (LMS vs RLS learning) over sample times: the evidence for docs/harmonic_aff.md's explanation of
why the thesis's numbers are not reproduced at the package's 1 ms step.

Seed: "LMS ... unstable for one value of the adaptation gain"; simultaneous RLS "converges within less than
20 s" with mu_id,RLS = 0.99.  The thesis does not state its sample time.  Held here (each a yes/no outcome of a
200 s run, thresholds 10 % / 1 % of the reference RMS):
- mu_id,RLS = 0.99 winds up at 1 ms (no synchronisation within 100 s for mu_RLS = 0.9999) but converges for every
  forgetting factor at 5 ms (a memory of 0.5 s instead of 0.1 s);
- LMS with the gains 1e-1 ... 1e-4 has 3 of 4 unstable at 1 ms and 2 of 4 at 5 ms;
- even the exact feedforward from the first sample of the adaptation needs more than 18 s to bring the gap below
  10 %: the switch-on transient of the lightly damped loop (zeta_VIR = 0.0025), which a single-harmonic basis
  cannot compensate, is the floor.
"""
from __future__ import annotations

import json
import math

from rths_ros import cli
from rths_ros.analysis.harmonic_learning import study_run
from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
from rths_ros.core.methods.lumped_mass import LumpedMassParams, convergence_time, h_ref, simulate


def _rls(dt, mu, mid):
    return study_run(dt, law="rls", identification="rls", simultaneous=True, mu_rls=mu, mu_id_rls=mid)


def test_thesis_identification_forgetting_factor_needs_a_coarser_step():
    assert math.isinf(_rls(1e-3, 0.9999, 0.99)["t10_s"])
    for mu in (0.9, 0.99, 0.999, 0.9999):
        r = _rls(5e-3, mu, 0.99)
        assert not r["diverged"] and r["t10_s"] < 40.0, (mu, r)


def test_unstable_lms_gains_depend_on_the_step():
    def unstable(dt):
        return sum(study_run(dt, law="lms", identification="lms", simultaneous=False, mu_lms=mu)["diverged"]
                   for mu in (1e-1, 1e-2, 1e-3, 1e-4))
    assert unstable(1e-3) == 3
    assert unstable(5e-3) == 2


def test_exact_feedforward_from_the_start_still_needs_about_20_s():
    plant = LumpedMassParams(dt_s=1e-3)
    base = dict(frequencies_hz=(8.0,), t_id_s=100.0, t_rand_s=2.0, mu_id_lms=0.01, id_amplitude=0.01)
    r = simulate(HarmonicAffParams(law="rls", identification="rls", simultaneous=True, mu_rls=0.999,
                                   mu_id_rls=0.999, **base), 300.0, plant=plant)
    theta = r["theta"][-1].copy()
    frozen = simulate(HarmonicAffParams(law="lms", identification="lms", simultaneous=False, mu_lms=1e-12, **base),
                      200.0, plant=plant, theta0=theta)
    y_rms = abs(h_ref(8.0)) / math.sqrt(2.0)
    t10 = convergence_time(frozen["t"], frozen["g"], 1 / 8.0, 0.1 * y_rms, t_from=100.0)
    assert 18.0 < t10 < 25.0          # measured 19.75 s
    assert convergence_time(frozen["t"], frozen["g"], 1 / 8.0, 0.001 * y_rms, t_from=100.0) < 100.0


def test_cli_writes_the_table(tmp_path, capsys):
    assert cli.main(["aff-learning", "--dt", "0.005", "--mu-id-rls", "0.99", "--out", str(tmp_path)]) == 0
    assert "| 5 | RLS simultaneous | 0.99 |" in capsys.readouterr().out
    rows = json.loads((tmp_path / "aff_learning.json").read_text())
    assert len(rows) == 8 and sum(r["diverged"] for r in rows) == 2
    assert cli.main(["aff-learning", "--dt", "1", "--out", str(tmp_path / "x")]) == 2


def test_fxlms_transient_cli_writes_table_and_plot(tmp_path, capsys):
    """`rths fxlms-transient` (Bartl 2019 §5.5.2): a short run with two lengths; bad lengths exit 2 naming the flag."""
    assert cli.main(["fxlms-transient", "--n-theta", "10,100", "--periods", "100", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| N_theta = 10 |" in out and "| no feedforward |" in out
    doc = json.loads((tmp_path / "fxlms_transient.json").read_text())
    assert set(doc["results"]) == {"no feedforward", "N_theta = 10", "N_theta = 100"}
    assert (tmp_path / "fxlms_transient.png").stat().st_size > 10_000
    assert cli.main(["fxlms-transient", "--n-theta", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--n-theta" in capsys.readouterr().err
