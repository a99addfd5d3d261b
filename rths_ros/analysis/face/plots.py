"""FACE plots: the convergence plot (fig. 11.1) and tau_FEI against the added delay (§11.3.1)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from rths_ros.analysis.face.fit import FitResult
from rths_ros.analysis.face.measures import DELAY_PARAMETERS
from rths_ros.params import ParameterError


def plot_convergence(result: Mapping, path: str | Path) -> Path:
    """Convergence plot (fig. 11.1): points, h on [e_min, e_max], dashed extrapolation to 0, q_pred,
    reference (cross) and excluded points (hollow)."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    fr: FitResult = result["_fit"]
    pts = result["points"]
    used = [p for p in pts if p["used"]]
    other = [p for p in pts if not p["used"] and math.isfinite(p["e"]) and math.isfinite(p["q"])]
    e = np.array([p["e"] for p in used])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(e, [p["q"] for p in used], "o", color="C0", label="tests (used)")
    if other:
        ax.plot([p["e"] for p in other], [p["q"] for p in other], "o", mfc="none", color="C0", label="tests (not used)")
    g1 = np.linspace(float(e.min()), float(e.max()), 200)
    g0 = np.linspace(0.0, float(e.min()), 50)
    ax.plot(g1, fr.h(g1), "-", color="C0", label="h(e)")
    ax.plot(g0, fr.h(g0), "--", color="C0", label="extrapolation")
    ax.plot([0.0], [result["q_pred"]], "s", color="C1", label=f"q_pred = {result['q_pred']:.4g}")
    if result.get("q_ref") is not None:
        ax.plot([0.0], [result["q_ref"]], "kx", ms=9, mew=2, label=f"reference = {result['q_ref']:.4g}")
    ax.set_xlabel(f"e = {result['e_measure']}")
    ax.set_ylabel(f"q = {result['q_measure']}")
    ax.set_xlim(left=min(0.0, float(e.min())) - 0.02 * float(e.max() or 1.0))
    ax.grid(True, lw=0.3)
    ax.legend(fontsize=8, loc="best")
    ax.set_title(f"FACE {result['name']}: error estimate {100 * result['error_estimate']:.1f} %")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_tau_fei(result: Mapping, path: str | Path) -> Path:
    """tau_FEI in the adapted and the standard form against the added delay tau_add (§11.3.1), with
    the slope-1 line tau_FEI(tau_add_min) + tau_add that the adapted form should follow.  ``result`` is
    a FACE result (:func:`analyse`, or face.json read back) of a sweep that varies a delay."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    tf = result.get("tau_fei")
    if not tf:
        raise ParameterError(f"vary.parameter: {result.get('parameter')!r} is not an added delay (or fewer than "
                             "3 runs give tau_FEI); expected one of " + ", ".join(DELAY_PARAMETERS))
    x = np.asarray(tf["tau_add_s"]) * 1e3
    ad = np.asarray(tf["adapted_s"]) * 1e3
    st = np.asarray(tf["standard_s"]) * 1e3

    def slope(key: str) -> str:
        return "–" if tf.get(key) is None else f"{tf[key]:.2f}"

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(x, ad[0] + (x - x[0]), ":", color="0.4", lw=1.0, label="τ_FEI(τ_add,min) + τ_add (slope 1)")
    ax.plot(x, ad, "o-", color="C0", ms=4, label=f"adapted (slope {slope('slope_adapted')})")
    ax.plot(x, st, "s-", color="C3", ms=4, label=f"standard (slope {slope('slope_standard_low')} up to "
                                                f"{1e3 * tf['tau_add_mid_s']:.3g} ms, {slope('slope_standard_high')} "
                                                "above)")
    ax.set_xlabel("added delay τ_add [ms]")
    ax.set_ylabel("equivalent delay τ_FEI [ms]")
    ax.set_xlim(left=min(0.0, float(x[0])))
    ax.set_ylim(bottom=0.0)
    ax.grid(True, lw=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(f"FACE {result.get('name', '')}: τ_FEI against τ_add")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
