"""``rths stability``: the stability maps of feedback-coupled tests (Bartl 2019 ch. 4), printed and drawn.

The numbers come from :mod:`rths_ros.core.methods.delay_stability`; this module evaluates them over grids and
draws ``stability_map.png`` (the largest stable delay over the mass and stiffness ratios, first-order Padé, one
panel per damping level, as the thesis's Fig. 4.8 / 4.22) and ``p_loop.png`` (the Routh-Hurwitz determinant of the
proportional actuator loop over the gain ratio, and the minimum virtual damping over gain and stiffness ratio,
as Figs. 4.18 / 4.19), and ``stability.json`` with every number printed.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from rths_ros.core.methods.delay_stability import (
    DelayCase,
    PLoopCase,
    p_loop_hurwitz,
    p_loop_min_zeta_vir,
    p_loop_unstable_band,
    tau_crit_exact,
    tau_max_map,
    tau_max_pade,
)

__all__ = ["stability_summary", "format_summary", "plot_delay_map", "plot_p_loop", "write_stability"]

#: the upper end of the colour scale of the delay map; a larger (or unlimited) stable delay is drawn at this value
TAU_CAP = 0.5
_LEVELS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4)


def _num(v: float):
    return None if not math.isfinite(v) else float(v)


def stability_summary(case: DelayCase, pcase: PLoopCase) -> dict:
    """The printed numbers: the delay limits of ``case`` and the unstable gain band of ``pcase``."""
    bands = p_loop_unstable_band(pcase)
    return {
        "delay": {"coupling": case.coupling, "phi": case.phi, "kappa": case.kappa, "zeta_vir": case.zeta_vir,
                  "zeta_exp": case.zeta_exp, "tau_max_pade": _num(tau_max_pade(case)),
                  "tau_crit_exact": _num(tau_crit_exact(case))},
        "p_loop": {"kappa_exp": pcase.kappa_exp, "kappa_act": pcase.kappa_act, "phi_act": pcase.phi_act,
                   "zeta_vir": pcase.zeta_vir, "zeta_act": pcase.zeta_act,
                   "unstable_kappa_p": [[_num(lo), _num(hi)] for lo, hi in bands]},
    }


def _tau(v) -> str:
    if v is None:
        return "unlimited (stable for every delay)"
    return "0 (unstable for any delay)" if v == 0.0 else f"{v:.4f}"


def format_summary(s: dict) -> str:
    d, p = s["delay"], s["p_loop"]
    lines = [f"{d['coupling']} control, pure delay (Bartl 2019 §4.2.2): phi = m_VIR/m_EXP = {d['phi']:g}, "
             f"kappa = k_VIR/k_EXP = {d['kappa']:g}, zeta_VIR = {d['zeta_vir']:g}, zeta_EXP = {d['zeta_exp']:g}",
             f"  largest stable delay tau (delay / coupled period), first-order Pade : {_tau(d['tau_max_pade'])}",
             f"  largest stable delay tau, exact delay (phase margin)             : {_tau(d['tau_crit_exact'])}",
             f"proportional actuator loop, phi_EXP = 0 (Bartl 2019 §4.2.3, Routh-Hurwitz): kappa_EXP = "
             f"{p['kappa_exp']:g}, kappa_ACT = {p['kappa_act']:g}, phi_ACT = {p['phi_act']:g}, zeta_VIR = "
             f"{p['zeta_vir']:g}, zeta_ACT = {p['zeta_act']:g}"]
    if not p["unstable_kappa_p"]:
        lines.append("  stable for every gain ratio kappa_P >= 0")
    for lo, hi in p["unstable_kappa_p"]:
        lines.append(f"  unstable for {lo:.4f} < kappa_P < {'inf' if hi is None else f'{hi:.4f}'}")
    return "\n".join(lines)


def plot_delay_map(path: Path, coupling: str, zetas: tuple[float, ...], mark: DelayCase | None = None,
                   n: int = 121) -> dict:
    """The Padé delay map over phi, kappa in [0.1, 10] (log grid of ``n`` points), one panel per damping."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    phi = np.logspace(-1, 1, n)
    kappa = np.logspace(-1, 1, n)
    cols = 2 if len(zetas) > 1 else 1
    rows = int(math.ceil(len(zetas) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.4 * rows), squeeze=False)
    stable_share = {}
    for ax, z in zip(axes.flat, zetas):
        tau = tau_max_map(phi, kappa, z, coupling)
        stable_share[f"{z:g}"] = float(np.mean(tau > 0.0))
        shown = np.minimum(tau, TAU_CAP)
        cf = ax.contourf(phi, kappa, shown, levels=np.linspace(0.0, TAU_CAP, 11), cmap="viridis")
        cs = ax.contour(phi, kappa, shown, levels=_LEVELS, colors="w", linewidths=0.7)
        ax.clabel(cs, fmt="%g", fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("phi = m_VIR / m_EXP")
        ax.set_ylabel("kappa = k_VIR / k_EXP")
        ax.set_title(f"zeta_VIR = zeta_EXP = {z:g}", fontsize=10)
        if mark is not None:
            ax.plot(mark.phi, mark.kappa, "r+", ms=10)
        fig.colorbar(cf, ax=ax, label=f"largest stable tau (>= {TAU_CAP:g} drawn at {TAU_CAP:g})")
    for ax in list(axes.flat)[len(zetas):]:
        ax.axis("off")
    fig.suptitle(f"{coupling} control with delay, first-order Pade: largest stable delay tau = T_d / T_0 "
                 "(0: unstable for any delay)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return stable_share


def plot_p_loop(path: Path, pcase: PLoopCase, zeta_act_map: float = 10.0, n: int = 81) -> None:
    """Left: Delta(kappa_P) of ``pcase`` with its sign; right: minimum zeta_VIR over (kappa_P, kappa_EXP) with
    ``zeta_act_map`` (Fig. 4.19's caption prints zeta_ACT = 10)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    kp = np.logspace(-2, 2, 400)
    delta = np.array([p_loop_hurwitz(pcase.with_(kappa_p=float(k))) for k in kp])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11.0, 4.4))
    a1.semilogx(kp, delta, lw=1.3)
    a1.axhline(0.0, color="k", lw=0.7)
    for lo, hi in p_loop_unstable_band(pcase):
        a1.axvspan(max(lo, kp[0]), min(hi, kp[-1]), color="r", alpha=0.15, lw=0,
                   label=f"unstable {lo:.2f} < kappa_P < {hi:.2f}")
    a1.set_yscale("symlog", linthresh=1e-3)
    a1.set_xlabel("kappa_P = k_P / k_VIR")
    a1.set_ylabel("Delta = a1 a2 a3 - a1^2 a4 - a3^2")
    a1.set_title(f"Routh-Hurwitz, kappa_EXP={pcase.kappa_exp:g}, kappa_ACT={pcase.kappa_act:g}, "
                 f"phi_ACT={pcase.phi_act:g}, zeta_VIR={pcase.zeta_vir:g}, zeta_ACT={pcase.zeta_act:g}", fontsize=8)
    a1.legend(fontsize=8)
    kpg = np.logspace(-1, 2, n)
    keg = np.logspace(-1, 1, n)
    zmin = np.array([[p_loop_min_zeta_vir(pcase.with_(kappa_p=float(k), kappa_exp=float(e), zeta_act=zeta_act_map))
                      for k in kpg] for e in keg])
    cf = a2.contourf(kpg, keg, zmin, levels=12, cmap="magma_r")
    cs = a2.contour(kpg, keg, zmin, levels=(0.001, 0.003, 0.01, 0.03, 0.1), colors="k", linewidths=0.6)
    a2.clabel(cs, fmt="%g", fontsize=7)
    a2.set_xscale("log")
    a2.set_yscale("log")
    a2.set_xlabel("kappa_P")
    a2.set_ylabel("kappa_EXP = k_EXP / k_VIR")
    a2.set_title(f"minimum zeta_VIR for stability (kappa_ACT={pcase.kappa_act:g}, phi_ACT={pcase.phi_act:g}, "
                 f"zeta_ACT={zeta_act_map:g})", fontsize=8)
    fig.colorbar(cf, ax=a2, label="min zeta_VIR")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_stability(summary: dict, out: Path, zetas: tuple[float, ...], case: DelayCase, pcase: PLoopCase,
                    plots: bool = True, grid: int = 121) -> dict[str, Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "stability.json"}
    doc = dict(summary)
    if plots:
        paths["map"] = out / "stability_map.png"
        paths["p_loop"] = out / "p_loop.png"
        doc["map"] = {"zetas": list(zetas), "grid": grid,
                      "stable_share": plot_delay_map(paths["map"], case.coupling, zetas, case, grid)}
        plot_p_loop(paths["p_loop"], pcase)
    paths["json"].write_text(json.dumps(doc, indent=2) + "\n")
    return paths
