"""``rths aff-learning``: Bartl 2019 §5.4.4's LMS-vs-RLS learning study on the Table B.1 system, over sample times.

The thesis does not state the sample time of its chapter-5 simulations, and the outcome of this study depends on
it: the LMS gains are per sample, and the RLS identification's forgetting factor ``mu_id,RLS`` sets a memory of
``dt / (1 - mu_id)`` seconds.  This module runs the study's grid (four LMS gains with LMS identification; four RLS
forgetting factors with simultaneous RLS identification, for each ``mu_id,RLS``) at each sample time and reports,
per run, whether it diverged and the time from the start of the adaptation until the one-period envelope of the
gap stays below 10 % and 1 % of the reference RMS (rths_ros.core.methods.lumped_mass).  docs/harmonic_aff.md
holds the table and what it shows.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
from rths_ros.core.methods.lumped_mass import LumpedMassParams, convergence_time, h_ref, simulate

__all__ = ["LMS_GAINS", "RLS_FACTORS", "study_run", "learning_study", "format_study", "write_study"]

LMS_GAINS = (1e-1, 1e-2, 1e-3, 1e-4)
RLS_FACTORS = (0.9, 0.99, 0.999, 0.9999)
T_ID_S, T_END_S, F_HZ = 100.0, 200.0, 8.0


def study_run(dt_s: float, **aff) -> dict:
    """One run of the §5.4.4 setting (Omega_0 = 2 pi 8 1/s, f_ext = cos from the end of the 100 s identification,
    t_rand = 2 s, mu_id,LMS = 0.01) at sample time ``dt_s`` with the AFF settings ``aff``."""
    plant = LumpedMassParams(dt_s=dt_s)
    p = HarmonicAffParams(frequencies_hz=(F_HZ,), t_id_s=T_ID_S, t_rand_s=2.0, mu_id_lms=0.01, **aff)
    every = max(1, int(round(1e-3 / dt_s)))
    r = simulate(p, T_END_S, amp_n=1.0, plant=plant, record_every=every, divergence_limit_m=1.0)
    y_rms = abs(h_ref(F_HZ)) / math.sqrt(2.0)
    t = {thr: convergence_time(r["t"], r["g"], 1.0 / F_HZ, thr * y_rms, t_from=T_ID_S) for thr in (0.1, 0.01)}
    return {"diverged": bool(r["diverged"]), "t10_s": t[0.1], "t1_s": t[0.01]}


def learning_study(dts: tuple[float, ...], mu_ids: tuple[float, ...], progress=None) -> list[dict]:
    rows = []
    for dt in dts:
        for mu in LMS_GAINS:
            rows.append({"dt_s": dt, "law": "LMS", "mu_id": 0.01, "gain": mu,
                         **study_run(dt, law="lms", identification="lms", simultaneous=False, mu_lms=mu)})
        for mid in mu_ids:
            for mu in RLS_FACTORS:
                rows.append({"dt_s": dt, "law": "RLS simultaneous", "mu_id": mid, "gain": mu,
                             **study_run(dt, law="rls", identification="rls", simultaneous=True, mu_rls=mu,
                                         mu_id_rls=mid)})
        if progress:
            progress(f"dt = {dt:g} s done")
    return rows


def _t(v: float) -> str:
    return "–" if math.isinf(v) else f"{v:.1f}"


def format_study(rows: list[dict]) -> str:
    """One line per (dt, law, mu_id): the verdict of each gain (unstable / seconds to 10 % / 1 %)."""
    lines = ["| dt [ms] | law | mu_id | " + " | ".join(f"g{i + 1}" for i in range(4)) + " | unstable |",
             "|---|---|---|---|---|---|---|---|"]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dt_s"], r["law"], r["mu_id"]), []).append(r)
    for (dt, law, mid), rs in groups.items():
        cells = [f"{r['gain']:g}: " + ("unstable" if r["diverged"] else f"{_t(r['t10_s'])} / {_t(r['t1_s'])} s")
                 for r in rs]
        lines.append(f"| {dt * 1e3:g} | {law} | {mid:g} | " + " | ".join(cells)
                     + f" | {sum(r['diverged'] for r in rs)} of {len(rs)} |")
    lines.append("(each cell: gain: time after the start of the adaptation until the gap envelope stays below 10 % / "
                 "1 % of the reference RMS; – = not within the 100 s)")
    return "\n".join(lines)


def write_study(rows: list[dict], out: Path) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clean = [{k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in r.items()} for r in rows]
    path = out / "aff_learning.json"
    path.write_text(json.dumps(clean, indent=2) + "\n")
    (out / "aff_learning.md").write_text(format_study(rows) + "\n")
    return path
