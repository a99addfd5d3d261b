"""Studies of Bartl's (2019) two physical experiments on their digital twins (``rths aff-rigs``; docs/bartl_rigs.md).

Cubic-spring rig (§6.2; :mod:`rths_ros.core.models.bartl.loop`):

* :func:`cubic_supervisor_study` -- §6.2.1: the LMS AFF of Table 6.3 (mu_init = 0.1) without and with the power-flow
  supervisor at 10 N / 10 Hz, 40 N / 20 Hz and 40 N / 30 Hz;
* :func:`cubic_combined_study` -- §6.2.2: pure passivity-based control, pure AFF and the combination at the same
  three excitations.

Beams (§6.1; :mod:`rths_ros.core.models.bartl.beams`): :func:`beam_sync_study` (60 / 320 / 800 Hz) and
:func:`beam_square_study` (square wave, 1 / 5 / 9 harmonics), measured by :func:`beam_measures`.

Measures (all from the recorded signals, t_on = start of the adaptation = excitation on):

* ``sat_fraction``  share of the samples after t_on in which the position demand was clipped at the +-25 mm stroke;
* ``p_out_max_w``   largest power outflow ``max(-P_in)`` after t_on, P_in = lambda_VIR g-dot (eq. 5.25);
* ``e_out_j``       energy outflow, the integral of ``max(-P_in, 0)`` after t_on;
* ``t_stab_s``      time from t_on to the peak of the one-period envelope of |g - mean(g)|, counted only if the
  envelope at the end is below a quarter of that peak (else inf): the time after which the gap no longer grows;
* ``sync_error``    |G(Omega)| / |Y_VIR(Omega)| over the last ``t_eval`` seconds (least-squares harmonic fit, the
  offset fitted separately): amplitude and phase error together;
* ``ratio, phase_deg``  |Y_EXP/Y_VIR| and the angle of Y_EXP/Y_VIR at Omega; ``offset_mm`` the mean gap;
* ``unstable``      ``sat_fraction > 0.05`` or ``sync_error > 1``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from rths_ros.core.learning.aff.harmonic_params import HarmonicAffParams
from rths_ros.core.methods.lumped_mass import fit_harmonic, gap_envelope
from rths_ros.core.models.bartl.beams import BeamRig, build_rig, reference_receptance, simulate_beams
from rths_ros.core.models.bartl.cubic_spring import CubicSpringParams, reference_response
from rths_ros.core.models.bartl.loop import simulate_cubic, table63_aff

__all__ = ["CUBIC_CASES", "cubic_measures", "cubic_supervisor_study", "cubic_combined_study", "format_supervisor",
           "format_combined", "write_cubic", "write_json", "beam_aff", "beam_measures", "beam_sync_study",
           "beam_square_study", "beam_learning_study", "format_sync", "format_square", "format_learning",
           "write_beams"]

#: (frequency [Hz], amplitude [N]) of §6.2.1 / §6.2.2
CUBIC_CASES = ((10.0, 10.0), (20.0, 40.0), (30.0, 40.0))
T_EVAL_S = 2.0


def fit_line(t, x, f_hz: float) -> tuple[complex, float]:
    """Least-squares ``x ~ Re(X e^{j w t}) + c`` -> (X, c)."""
    w = 2.0 * math.pi * f_hz
    a = np.column_stack([np.cos(w * t), -np.sin(w * t), np.ones_like(t)])
    coef, *_ = np.linalg.lstsq(a, np.asarray(x, dtype=float), rcond=None)
    return complex(coef[0], coef[1]), float(coef[2])


def cubic_measures(r: dict, t_eval_s: float = T_EVAL_S) -> dict:
    """The measures of the module doc for one run of :func:`simulate_cubic`."""
    t, g, f = r["t"], r["g"], r["f_hz"]
    dt = r["dt_s"]
    on = t >= r["t_on_s"]
    last = t >= t[-1] - t_eval_s
    p_in = r["p_in"][on]
    ge, off = fit_line(t[last], g[last], f)
    yv = fit_harmonic(t[last], r["y_vir"][last], f)
    ye = fit_harmonic(t[last], r["y_exp"][last], f)
    te, env = gap_envelope(t[on], g[on] - off, 1.0 / f)
    i_pk = int(np.argmax(env)) if env.size else 0
    stab = env.size > 1 and env[-1] < 0.25 * env[i_pk]
    sat = float(np.mean(r["saturated"][on])) if on.any() else 0.0
    sync = abs(ge) / abs(yv) if abs(yv) > 0 else math.inf
    return {
        "f_hz": f, "amp_n": r["amp_n"], "strategy": r["strategy"],
        "sat_fraction": sat,
        "p_out_max_w": float(max(0.0, -p_in.min())) if p_in.size else 0.0,
        "e_out_j": float(np.sum(np.clip(-p_in, 0.0, None)) * dt),
        "t_stab_s": float(te[i_pk] - r["t_on_s"]) if stab else math.inf,
        "sync_error": float(sync),
        "ratio": float(abs(ye / yv)) if abs(yv) > 0 else math.inf,
        "phase_deg": float(np.degrees(np.angle(ye / yv))) if abs(yv) > 0 else math.nan,
        "offset_mm": off * 1e3,
        "offset_rel": off / abs(yv) if abs(yv) > 0 else math.inf,
        "y_vir_amp_mm": abs(yv) * 1e3,
        "mu_final": float(r["mu_lms"][-1]),
        "nu_min": float(np.min(r["nu_lms"][on])) if on.any() else 1.0,
        "unstable": bool(sat > 0.05 or sync > 1.0),
    }


def _say(progress, msg):
    if progress:
        progress(msg)


def cubic_supervisor_study(cases=CUBIC_CASES, t_adapt_s: float = 10.0, rig: CubicSpringParams | None = None,
                           progress=None) -> tuple[list[dict], dict]:
    """§6.2.1 (Table 6.3): per case one run without and one with the supervisor.  Returns (rows, records)."""
    rows, recs = [], {}
    for f, a in cases:
        for sup in (False, True):
            ap = table63_aff(f, supervisor=sup)
            r = simulate_cubic("aff", f, a, ap.t_id_s + t_adapt_s, aff=ap, rig=rig)
            m = cubic_measures(r)
            m["supervisor"] = sup
            rows.append(m)
            recs[(f, sup)] = r
            _say(progress, f"{a:g} N / {f:g} Hz, supervisor {'on' if sup else 'off'}: "
                           f"{'unstable' if m['unstable'] else 'stable'}")
    return rows, recs


def cubic_combined_study(cases=CUBIC_CASES, t_adapt_s: float = 10.0, mu_lms: float = 0.001,
                         rig: CubicSpringParams | None = None, progress=None) -> tuple[list[dict], dict]:
    """§6.2.2: pure PBC, pure AFF (LMS, ``mu_lms``, no supervisor) and PBC + AFF per case; each row also holds the
    amplitude of the coupled reference (VIR + spring without actuator) and ``ref_ratio`` = |Y_VIR| / |X_REF|."""
    rows, recs = [], {}
    rp = rig or CubicSpringParams()
    for f, a in cases:
        ref = reference_response(f, a, rp)
        sel = ref["t"] >= ref["t"][-1] - 1.0
        x_ref = abs(fit_harmonic(ref["t"][sel], ref["x"][sel], f))
        for st in ("pbc", "aff", "pbc_aff"):
            ap = table63_aff(f, supervisor=False, mu_lms=mu_lms)
            r = simulate_cubic(st, f, a, ap.t_id_s + t_adapt_s, aff=ap, rig=rp, t_on_s=ap.t_id_s)
            m = cubic_measures(r)
            m.update(ref_amp_mm=x_ref * 1e3, ref_ratio=m["y_vir_amp_mm"] / (x_ref * 1e3))
            rows.append(m)
            recs[(f, st)] = r
            _say(progress, f"{a:g} N / {f:g} Hz, {st}: phase {m['phase_deg']:+.1f} deg, offset "
                           f"{m['offset_mm']:+.2f} mm")
    return rows, recs


def _t(v: float) -> str:
    return "–" if not math.isfinite(v) else f"{v:.2f}"


def format_supervisor(rows: list[dict]) -> str:
    lines = ["| case | supervisor | verdict | saturated | max power outflow [W] | energy outflow [J] | "
             "stabilised after [s] | mu_LMS end | min nu | sync error |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['amp_n']:g} N / {r['f_hz']:g} Hz | {'on' if r['supervisor'] else 'off'} | "
                     f"{'unstable' if r['unstable'] else 'stable'} | {100 * r['sat_fraction']:.0f} % | "
                     f"{r['p_out_max_w']:.2f} | {r['e_out_j']:.2f} | {_t(r['t_stab_s'])} | {r['mu_final']:.4f} | "
                     f"{r['nu_min']:.3f} | {r['sync_error']:.3g} |")
    return "\n".join(lines)


def format_combined(rows: list[dict]) -> str:
    lines = ["| case | strategy | amplitude ratio y_EXP/y_VIR | phase error [deg] | offset [mm] | offset / amplitude "
             "| y_VIR / reference |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['amp_n']:g} N / {r['f_hz']:g} Hz | {r['strategy']} | {r['ratio']:.3f} | "
                     f"{r['phase_deg']:+.1f} | {r['offset_mm']:+.3f} | {r['offset_rel']:+.3f} | "
                     f"{r['ref_ratio']:.3f} |")
    return "\n".join(lines)


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return _clean(v.item())
    return v


def write_json(path: Path, payload: dict) -> Path:
    def fix(o):
        if isinstance(o, dict):
            return {str(k): fix(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [fix(v) for v in o]
        return _clean(o)
    path.write_text(json.dumps(fix(payload), indent=2) + "\n")
    return path


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_supervisor(recs: dict, cases, path: Path) -> Path:
    """Per case (columns): gap, power inflow, mu_LMS and nu_LMS without and with the supervisor."""
    plt = _plt()
    fig, ax = plt.subplots(4, len(cases), figsize=(4.2 * len(cases), 9.5), sharex="col", squeeze=False)
    for j, (f, a) in enumerate(cases):
        for sup, col, lab in ((False, "#d62728", "no supervisor"), (True, "#1f77b4", "supervisor")):
            r = recs[(f, sup)]
            t = r["t"] - r["t_on_s"]
            ax[0, j].plot(t, 1e3 * r["g"], color=col, lw=0.6, label=lab)
            ax[1, j].plot(t, r["p_in"], color=col, lw=0.6, label=lab)
            ax[2, j].plot(t, r["mu_lms"], color=col, lw=1.0, label=lab)
            ax[3, j].plot(t, r["nu_lms"], color=col, lw=1.0, label=lab)
        ax[0, j].set_title(f"{a:g} N / {f:g} Hz")
        ax[1, j].axhline(-0.3, color="k", lw=0.6, ls="--", label="P_lim")
        ax[1, j].set_ylim(-10.0, 10.0)
        ax[3, j].set_xlabel("time after the start of the adaptation [s]")
        ax[3, j].set_xlim(-0.2, 3.0)
    for i, lab in enumerate(("gap g [mm]", "P_in = lambda_VIR g-dot [W]", "mu_LMS", "nu_LMS")):
        ax[i, 0].set_ylabel(lab)
    ax[1, 0].legend(fontsize=7)
    fig.suptitle("Cubic-spring rig: LMS AFF (mu_init = 0.1) without / with power-flow supervision")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_combined(recs: dict, cases, path: Path, t_eval_s: float = T_EVAL_S) -> Path:
    """Synchronisation plots y_EXP over y_VIR (last ``t_eval_s``) per case (rows) and strategy (columns)."""
    plt = _plt()
    names = {"pbc": "pure PBC", "aff": "pure AFF", "pbc_aff": "PBC + AFF"}
    fig, ax = plt.subplots(len(cases), 3, figsize=(10, 3.2 * len(cases)), squeeze=False)
    for i, (f, a) in enumerate(cases):
        for j, st in enumerate(("pbc", "aff", "pbc_aff")):
            r = recs[(f, st)]
            s = r["t"] >= r["t"][-1] - t_eval_s
            yv, ye = 1e3 * r["y_vir"][s], 1e3 * r["y_exp"][s]
            lim = 1.15 * max(np.abs(yv).max(), np.abs(ye).max())
            ax[i, j].plot(yv, ye, lw=0.7)
            ax[i, j].plot([-lim, lim], [-lim, lim], "k--", lw=0.5)
            ax[i, j].axhline(0, color="0.6", lw=0.4)
            ax[i, j].axvline(0, color="0.6", lw=0.4)
            ax[i, j].set_xlim(-lim, lim)
            ax[i, j].set_ylim(-lim, lim)
            ax[i, j].set_aspect("equal")
            ax[i, j].set_title(f"{names[st]}, {a:g} N / {f:g} Hz", fontsize=9)
            ax[i, j].set_xlabel("y_VIR [mm]", fontsize=8)
            ax[i, j].set_ylabel("y_EXP [mm]", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_cubic(out: Path, sup_rows, sup_recs, comb_rows, comb_recs, cases=CUBIC_CASES, plots: bool = True) -> dict:
    """``cubic_spring.json``, ``cubic_spring.md`` and (``plots``) the two figures into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": write_json(out / "cubic_spring.json", {"supervisor": sup_rows, "combined": comb_rows,
                                                           "rig": CubicSpringParams().__dict__})}
    md = out / "cubic_spring.md"
    md.write_text("## Power-flow supervisor (§6.2.1)\n\n" + format_supervisor(sup_rows)
                  + "\n\n## PBC, AFF and PBC + AFF (§6.2.2)\n\n" + format_combined(comb_rows) + "\n")
    paths["md"] = md
    if plots and sup_recs:
        paths["supervisor_png"] = plot_supervisor(sup_recs, cases, out / "cubic_supervisor.png")
    if plots and comb_recs:
        paths["combined_png"] = plot_combined(comb_recs, cases, out / "cubic_combined.png")
    return paths


# ------------------------------------------------------------------------------------------------------- beams
BEAM_EVAL_S = 0.5


def beam_aff(freqs_hz, t_id_s: float, **over) -> HarmonicAffParams:
    """§6.1's filter: QR-RLS with simultaneous identification, mu_ad = 0.999, mu_id = 0.9999, two interface DOFs.
    The random identification (theta uniform in +-0.5 N, held 0.5 s) is this package's choice."""
    kw = dict(frequencies_hz=tuple(float(f) for f in freqs_hz), n_int=2, law="rls", identification="rls",
              simultaneous=True, mu_rls=0.999, mu_id_rls=0.9999, t_id_s=t_id_s, t_rand_s=0.5, id_amplitude=0.5)
    kw.update(over)
    return HarmonicAffParams(**kw)


def _nmse(g, y) -> float:
    """Eq. 6.4 averaged over the samples: g^T g / (y_max^T y_max), y_max the per-channel peak of y_VIR."""
    ymax = np.abs(y).max(axis=0)
    return float(np.mean(np.sum(g * g, axis=1)) / float(ymax @ ymax))


def beam_measures(r: dict, rig: BeamRig, t_eval_s: float = BEAM_EVAL_S) -> dict:
    """Synchronisation of one beam run over its last ``t_eval_s``: per actuator point the amplitude ratio and phase
    of y_EXP/y_VIR at f0, ``sync_error`` = ||G(f0)|| / ||Y_VIR(f0)||, the NMSE (6.4), ``rel_rms`` =
    rms|g| / rms|y_VIR|, and the interface motion against the coupled reference (``ref_ratio_z``, ``ref_ratio_alpha``:
    |z_B| and |alpha_B| of the virtual part over the reference's)."""
    t, f0 = r["t"], r["f0_hz"]
    s = t >= t[-1] - t_eval_s
    g, yv, ye = r["g"][s], r["y_vir"][s], r["y_exp"][s]
    G = np.array([fit_line(t[s], g[:, i], f0)[0] for i in range(2)])
    Y = np.array([fit_line(t[s], yv[:, i], f0)[0] for i in range(2)])
    E = np.array([fit_line(t[s], ye[:, i], f0)[0] for i in range(2)])
    zb = np.array([fit_line(t[s], r["zb_vir"][s, i], f0)[0] for i in range(2)])
    ref = reference_receptance(rig, f0)[0] * r["amp_n"]
    return {"f0_hz": f0, "sync_error": float(np.linalg.norm(G) / np.linalg.norm(Y)),
            "ratio": [float(abs(E[i] / Y[i])) for i in range(2)],
            "phase_deg": [float(np.degrees(np.angle(E[i] / Y[i]))) for i in range(2)],
            "nmse": _nmse(g, yv), "rel_rms": float(math.sqrt(np.mean(np.sum(g * g, 1)) / np.mean(np.sum(yv * yv, 1)))),
            "ref_ratio_z": float(abs(zb[0]) / abs(ref[0])), "ref_ratio_alpha": float(abs(zb[1]) / abs(ref[1])),
            "y_amp_um": [float(1e6 * abs(Y[i])) for i in range(2)]}


def beam_sync_study(freqs=(60.0, 320.0, 800.0), t_id_s: float = 5.0, t_adapt_s: float = 5.0, amp_n: float = 1.0,
                    rig: BeamRig | None = None, progress=None) -> tuple[list[dict], dict]:
    """§6.1.2: one sine run per frequency (1 N at P by default; the thesis gives no amplitude)."""
    rig = rig or build_rig()
    rows, recs = [], {}
    for f in freqs:
        r = simulate_beams(beam_aff((f,), t_id_s), f, amp_n, t_id_s + t_adapt_s, rig=rig)
        m = beam_measures(r, rig)
        rows.append(m)
        recs[f] = r
        _say(progress, f"{f:g} Hz: sync error {m['sync_error']:.2e}")
    return rows, recs


def beam_square_study(f0_hz: float = 40.0, harmonics=(1, 5, 9), t_id_s: float = 20.0, t_adapt_s: float = 5.0,
                      amp_n: float = 1.0, mu_ad: float = 0.999, rig: BeamRig | None = None,
                      progress=None) -> tuple[list[dict], dict]:
    """§6.1.5: square wave of ``amp_n`` at P, basis Omega_k = k Omega_0, k = 1..n for each n in ``harmonics``.  Each
    row adds the gap's amplitude at the odd harmonics 1..15 of f0 (``gap_k_um``)."""
    rig = rig or build_rig()
    rows, recs = [], {}
    for n in harmonics:
        r = simulate_beams(beam_aff([k * f0_hz for k in range(1, n + 1)], t_id_s, mu_rls=mu_ad), f0_hz, amp_n,
                           t_id_s + t_adapt_s, square=True, rig=rig)
        t = r["t"]
        s = t >= t[-1] - BEAM_EVAL_S
        g, yv = r["g"][s], r["y_vir"][s]
        gk = {k: float(1e6 * np.linalg.norm([abs(fit_line(t[s], g[:, i], k * f0_hz)[0]) for i in range(2)]))
              for k in range(1, 16, 2)}
        m = {"f0_hz": f0_hz, "n_harmonics": n, "mu_ad": mu_ad, "nmse": _nmse(g, yv),
             "rel_rms": float(math.sqrt(np.mean(np.sum(g * g, 1)) / np.mean(np.sum(yv * yv, 1)))), "gap_k_um": gk}
        rows.append(m)
        recs[n] = r
        _say(progress, f"square wave {f0_hz:g} Hz, {n} harmonics: rms gap / rms y_VIR {m['rel_rms']:.3f}")
    return rows, recs


LMS_GAINS = (0.1, 0.01, 0.001)
RLS_FACTORS = (0.99, 0.999, 0.9999)


def beam_learning_study(freqs=(60.0, 320.0), t_id_s: float = 5.0, t_adapt_s: float = 5.0, amp_n: float = 1.0,
                        rig: BeamRig | None = None, progress=None) -> tuple[list[dict], dict]:
    """§6.1.4: LMS (gains ``LMS_GAINS``, RLS identification of 5 s, no simultaneous identification) against QR-RLS
    with simultaneous identification (forgetting factors ``RLS_FACTORS``) at each frequency.  A run is ``unstable``
    if a gap exceeded 10 mm (the run stops there)."""
    rig = rig or build_rig()
    rows, recs = [], {}
    for f in freqs:
        runs = [("LMS", g, dict(law="lms", simultaneous=False, mu_lms=g)) for g in LMS_GAINS]
        runs += [("RLS", g, dict(mu_rls=g)) for g in RLS_FACTORS]
        for law, gain, over in runs:
            r = simulate_beams(beam_aff((f,), t_id_s, **over), f, amp_n, t_id_s + t_adapt_s, rig=rig)
            row = {"f0_hz": f, "law": law, "gain": gain, "unstable": bool(r["diverged"])}
            row["sync_error"] = math.inf if r["diverged"] else beam_measures(r, rig)["sync_error"]
            rows.append(row)
            recs[(f, law, gain)] = r
        _say(progress, f"learning curves at {f:g} Hz: {sum(r['unstable'] for r in rows if r['f0_hz'] == f)} of "
                       f"{len(runs)} unstable")
    return rows, recs


def format_learning(rows: list[dict]) -> str:
    lines = ["| f | law | gain | verdict | sync error at the end |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['f0_hz']:g} Hz | {r['law']} | {r['gain']:g} | "
                     f"{'unstable' if r['unstable'] else 'stable'} | "
                     f"{'–' if r['unstable'] else format(r['sync_error'], '.2e')} |")
    return "\n".join(lines)


def plot_beam_learning(recs: dict, path: Path) -> Path:
    """NMSE (6.4) envelopes over the adaptation, one panel per frequency."""
    plt = _plt()
    fs = sorted({k[0] for k in recs})
    fig, ax = plt.subplots(1, len(fs), figsize=(5.5 * len(fs), 4), squeeze=False)
    for j, f in enumerate(fs):
        for (ff, law, gain), r in recs.items():
            if ff != f:
                continue
            t = r["t"]
            ok = np.isfinite(t) & (t >= r["t_on_s"])
            if ok.sum() < 2:
                continue
            g, yv = r["g"][ok], r["y_vir"][ok]
            ymax = np.abs(yv).max(axis=0)
            te, env = gap_envelope(t[ok], np.sum(g ** 2, axis=1) / float(ymax @ ymax), 1.0 / f)
            ax[0, j].semilogy(te - r["t_on_s"], env, ls="-" if law == "RLS" else "--", label=f"{law} {gain:g}")
        ax[0, j].set_title(f"{f:g} Hz", fontsize=9)
        ax[0, j].set_xlabel("time after the start of the adaptation [s]", fontsize=8)
        ax[0, j].set_ylabel("NMSE envelope (6.4)", fontsize=8)
        ax[0, j].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def format_sync(rows: list[dict]) -> str:
    lines = ["| f | sync error | y_EXP/y_VIR act. 1 | act. 2 | phase act. 1 / 2 [deg] | NMSE (6.4) | z_B / reference | "
             "alpha_B / reference |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['f0_hz']:g} Hz | {r['sync_error']:.2e} | {r['ratio'][0]:.4f} | {r['ratio'][1]:.4f} | "
                     f"{r['phase_deg'][0]:+.2f} / {r['phase_deg'][1]:+.2f} | {r['nmse']:.1e} | "
                     f"{r['ref_ratio_z']:.3f} | {r['ref_ratio_alpha']:.3f} |")
    return "\n".join(lines)


def format_square(rows: list[dict]) -> str:
    ks = list(range(1, 16, 2))
    lines = ["| harmonics in W | rms gap / rms y_VIR | NMSE (6.4) | " + " | ".join(f"gap at {k} f0 [um]" for k in ks)
             + " |", "|---" * (3 + len(ks)) + "|"]
    for r in rows:
        lines.append(f"| {r['n_harmonics']} | {r['rel_rms']:.4f} | {r['nmse']:.2e} | "
                     + " | ".join(f"{r['gap_k_um'][k]:.3f}" for k in ks) + " |")
    return "\n".join(lines)


def plot_beam_sync(recs: dict, path: Path) -> Path:
    """Synchronisation plots (last 0.5 s) per frequency and actuator point, and the NMSE learning curves."""
    plt = _plt()
    fs = list(recs)
    fig, ax = plt.subplots(3, len(fs), figsize=(4.0 * len(fs), 10), squeeze=False)
    for j, f in enumerate(fs):
        r = recs[f]
        s = r["t"] >= r["t"][-1] - BEAM_EVAL_S
        for i in range(2):
            yv, ye = 1e6 * r["y_vir"][s, i], 1e6 * r["y_exp"][s, i]
            lim = 1.15 * max(np.abs(yv).max(), np.abs(ye).max())
            a = ax[i, j]
            a.plot(yv, ye, lw=0.7)
            a.plot([-lim, lim], [-lim, lim], "k--", lw=0.5)
            a.set_xlim(-lim, lim)
            a.set_ylim(-lim, lim)
            a.set_aspect("equal")
            a.set_title(f"{f:g} Hz, actuator point {i + 1}", fontsize=9)
            a.set_xlabel("y_VIR [um]", fontsize=8)
            a.set_ylabel("y_EXP [um]", fontsize=8)
        g, yv = r["g"], r["y_vir"]
        s = r["t"] >= r["t_on_s"]
        ymax = np.abs(yv[r["t"] >= r["t"][-1] - BEAM_EVAL_S]).max(axis=0)
        te, env = gap_envelope(r["t"][s], np.sum(g[s] ** 2, axis=1) / float(ymax @ ymax), 1.0 / f)
        ax[2, j].semilogy(te - r["t_on_s"], env)
        ax[2, j].set_xlabel("time after the start of the adaptation [s]", fontsize=8)
        ax[2, j].set_ylabel("NMSE envelope (6.4)", fontsize=8)
    fig.suptitle("Coupled beams: QR-RLS AFF with simultaneous identification")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_beam_square(recs: dict, path: Path) -> Path:
    """Square wave: y_VIR and y_EXP (actuator point 1) over two periods, and the synchronisation plot, per basis."""
    plt = _plt()
    ns = list(recs)
    fig, ax = plt.subplots(2, len(ns), figsize=(4.0 * len(ns), 7), squeeze=False)
    for j, n in enumerate(ns):
        r = recs[n]
        t = r["t"]
        s = t >= t[-1] - 2.0 / r["f0_hz"]
        ax[0, j].plot(1e3 * (t[s] - t[s][0]), 1e6 * r["y_vir"][s, 0], label="y_VIR")
        ax[0, j].plot(1e3 * (t[s] - t[s][0]), 1e6 * r["y_exp"][s, 0], "--", label="y_EXP")
        ax[0, j].set_title(f"{n} harmonic{'s' if n > 1 else ''} in W", fontsize=9)
        ax[0, j].set_xlabel("time [ms]", fontsize=8)
        ax[0, j].set_ylabel("actuator point 1 [um]", fontsize=8)
        ax[0, j].legend(fontsize=7)
        yv, ye = 1e6 * r["y_vir"][s, 0], 1e6 * r["y_exp"][s, 0]
        lim = 1.15 * max(np.abs(yv).max(), np.abs(ye).max())
        ax[1, j].plot(yv, ye, lw=0.7)
        ax[1, j].plot([-lim, lim], [-lim, lim], "k--", lw=0.5)
        ax[1, j].set_aspect("equal")
        ax[1, j].set_xlabel("y_VIR [um]", fontsize=8)
        ax[1, j].set_ylabel("y_EXP [um]", fontsize=8)
    fig.suptitle("Coupled beams, square-wave excitation")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_beams(out: Path, sync_rows, sync_recs, sq_rows, sq_recs, plots: bool = True, learn_rows=(),
                learn_recs=None) -> dict:
    """``beams.json``, ``beams.md`` and (``plots``) the figures into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": write_json(out / "beams.json", {"sync": sync_rows, "square": sq_rows,
                                                    "learning": list(learn_rows)})}
    md = out / "beams.md"
    md.write_text("## Synchronisation (§6.1.2)\n\n" + format_sync(sync_rows)
                  + "\n\n## Learning curves (§6.1.4)\n\n" + format_learning(list(learn_rows))
                  + "\n\n## Square wave (§6.1.5)\n\n" + format_square(sq_rows) + "\n")
    paths["md"] = md
    if plots and sync_recs:
        paths["sync_png"] = plot_beam_sync(sync_recs, out / "beams_sync.png")
    if plots and sq_recs:
        paths["square_png"] = plot_beam_square(sq_recs, out / "beams_square.png")
    if plots and learn_recs:
        paths["learning_png"] = plot_beam_learning(learn_recs, out / "beams_learning.png")
    return paths
