"""``rths fxlms-transient``: Bartl 2019 §5.5.2, the FIR filtered-x LMS coupling under random excitation for several
filter lengths (rths_ros.core.methods.fxlms_transient): the table of gaps, the synchronisation plot (y_EXP over
y_VIR, Fig. 5.25) and the learning curves (Fig. 5.24)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from rths_ros.core.methods.fxlms_transient import FxlmsCase, simulate

__all__ = ["gap_measures", "run_study"]


def gap_measures(r: dict, tail: float = 0.2) -> dict:
    """RMS of the gap and of y_EXP - y_ref over the last ``tail`` of the run, and the slope and correlation of
    y_EXP over y_VIR there, all relative to the reference's RMS."""
    n = r["g"].size
    sel = slice(int((1.0 - tail) * n), None)
    yv, ye = r["y_vir"][sel], r["y_exp"][sel]
    rms = r["y_rms_ref"]
    slope = float(np.dot(yv, ye) / np.dot(yv, yv))
    return {"gap_rms_rel": float(np.sqrt(np.mean(r["g"][sel] ** 2)) / rms),
            "ref_error_rms_rel": float(np.sqrt(np.mean((ye - r["y_ref"][sel]) ** 2)) / rms),
            "slope": slope, "correlation": float(np.corrcoef(yv, ye)[0, 1])}


def run_study(base: FxlmsCase, lengths: tuple[int, ...], out: Path, progress=None) -> tuple[str, dict]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs, res = {}, {}
    for n in (0, *lengths):
        c = dataclasses.replace(base, n_theta=max(1, n), mu=base.mu if n else 1e-12)
        r = simulate(c)
        key = "no feedforward" if n == 0 else f"N_theta = {n}"
        runs[key], res[key] = r, gap_measures(r)
        if progress:
            progress(f"{key}: gap {res[key]['gap_rms_rel']:.3f} y_rms")
    doc = {"settings": dataclasses.asdict(base), "lengths": list(lengths), "results": res}
    (out / "fxlms_transient.json").write_text(json.dumps(doc, indent=2) + "\n")
    _plot(runs, out / "fxlms_transient.png", base.samples_per_period)
    lines = ["| filter | gap RMS / y_rms | (y_EXP - y_ref) RMS / y_rms | slope y_EXP over y_VIR | correlation |",
             "|---|---|---|---|---|"]
    for k, m in res.items():
        lines.append(f"| {k} | {m['gap_rms_rel']:.4f} | {m['ref_error_rms_rel']:.4f} | {m['slope']:.3f} | "
                     f"{m['correlation']:.4f} |")
    return "\n".join(lines), doc


def _plot(runs: dict, path: Path, spp: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = [k for k in runs if k != "no feedforward"]
    fig, axes = plt.subplots(1, len(keys) + 1, figsize=(4.0 * (len(keys) + 1), 4.0))
    for ax, k in zip(axes[:-1], keys):
        r = runs[k]
        n = r["g"].size
        sel = slice(int(0.8 * n), None)
        s = r["y_rms_ref"]
        ax.plot(r["y_vir"][sel] / s, r["y_exp"][sel] / s, lw=0.3)
        lim = 1.1 * float(np.max(np.abs(r["y_vir"][sel]))) / s
        ax.plot([-lim, lim], [-lim, lim], "k--", lw=0.8)
        ax.set_title(f"{k} (last 20 %)", fontsize=9)
        ax.set_xlabel("y_VIR / y_rms")
        ax.set_ylabel("y_EXP / y_rms")
        ax.set_aspect("equal")
    ax = axes[-1]
    for k, r in runs.items():
        w = spp
        g = np.abs(r["g"]) / r["y_rms_ref"]
        m = g.size // w
        env = g[: m * w].reshape(m, w).max(axis=1)
        ax.semilogy(np.arange(m), env, lw=0.9, label=k)
    ax.set_xlabel("t / T_0")
    ax.set_ylabel("gap envelope / y_rms (one period)")
    ax.set_title("learning curves", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
