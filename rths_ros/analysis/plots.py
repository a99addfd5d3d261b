"""Figures of a 1-D contact RTHS run (matplotlib, Agg backend, PNG at 120 dpi).

:func:`plot_run` draws the four standard figures of one run (displacement, tracking/reference
error, interface force, power error and NPC damping force); :func:`plot_overlay` compares several
runs (e.g. with/without VFF, ILC iterations, parameter sweeps) against the reference solution.
Lengths are shown in mm, forces in N, powers in mW, energies in mJ.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from rths_ros.analysis.metrics import contact_events, metric_series, record_field, resolve_reference

__all__ = ["plot_run", "plot_overlay", "DPI"]

DPI = 120
_FIGSIZE = (8.0, 4.2)
_C = {"cmd": "#1f77b4", "ach": "#d62728", "ref": "#2ca02c", "meas": "#7f7f7f", "fd": "#9467bd",
      "contact": "#ffbf00"}

_STYLE = {
    "axes.grid": True, "grid.alpha": 0.3, "axes.titlesize": 11, "axes.labelsize": 10,
    "legend.fontsize": 8.5, "xtick.labelsize": 9, "ytick.labelsize": 9, "lines.linewidth": 1.2,
    "axes.spines.top": False, "axes.spines.right": False,
}


def _phases(record: Any, metrics: Mapping | None) -> list[tuple[float, float]]:
    """Contact phases [TD, TO] in s (TO = end of the run when still in contact)."""
    t = np.asarray(record_field(record, "t"), dtype=float)
    if metrics and metrics.get("contact_events_s") is not None:
        ev = metrics["contact_events_s"]
        return [(float(a), float(b) if b is not None else float(t[-1])) for a, b in ev]
    contact = record_field(record, "contact", None)
    if contact is None:
        return []
    return [(e.touchdown_s, e.liftoff_s if e.liftoff_s is not None else float(t[-1]))
            for e in contact_events(contact, t, 0.02)]


def _shade_contact(ax, phases, label: bool = True) -> None:
    for i, (a, b) in enumerate(phases):
        ax.axvspan(a, b, color=_C["contact"], alpha=0.12, lw=0,
                   label="contact (TD..TO)" if (label and i == 0) else None)


def _mark_td_to(ax, phases, span: float) -> None:
    """Dashed lines at TD/TO, labelled at the top of the axes (labels that would overlap are left out)."""
    trans = ax.get_xaxis_transform()
    marks = sorted((x, name) for a, b in phases for x, name in ((a, "TD"), (b, "TO")))
    last = -float("inf")
    for x, name in marks:
        ax.axvline(x, color="k", ls="--", lw=0.8, alpha=0.6)
        if x - last > 0.035 * span:
            ax.text(x, 1.01, name, transform=trans, ha="center", va="bottom", fontsize=8)
            last = x


def _finish(fig, path: Path) -> Path:
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _title(metrics: Mapping | None, what: str) -> str:
    if not metrics:
        return what
    verdict = "stable" if metrics.get("stable") else "UNSTABLE"
    return f"{what} ({verdict})"


def plot_run(record: Any, z_ref: Any, metrics: Mapping | None, out_dir: str | Path,
             prefix: str = "") -> list[Path]:
    """Write the standard figures of one run into ``out_dir`` and return their paths.

    * ``displacement.png``: z (commanded), z' (achieved) and z^r (reference) over t, TD/TO marked;
    * ``tracking_error.png``: e_track = z - z' and e_ref = z^r - z';
    * ``interface_force.png``: F_int (fed to the numerical part) and F'_m (measured), contact shaded;
    * ``power_error.png``: P_error with its running sum E_error(t) (and E_diss(t)); F_d when nonzero.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t = np.asarray(record_field(record, "t"), dtype=float)
    z = np.asarray(record_field(record, "z_cmd"), dtype=float)
    zp = np.asarray(record_field(record, "z_ach"), dtype=float)
    zr = resolve_reference(record, z_ref, t)
    ser = metric_series(record, zr)
    ph = _phases(record, metrics)
    dt = float(metrics["dt_s"]) if metrics and metrics.get("dt_s") else float(np.median(np.diff(t)))
    span = float(t[-1] - t[0]) if t.size > 1 else 1.0
    paths: list[Path] = []

    with plt.rc_context(_STYLE):
        # 1. displacement
        fig, ax = plt.subplots(figsize=_FIGSIZE, layout="constrained")
        _shade_contact(ax, ph)
        if zr is not None:
            ax.plot(t, zr * 1e3, color=_C["ref"], lw=2.4, alpha=0.45, label=r"$z^r$ reference")
        ax.plot(t, z * 1e3, color=_C["cmd"], label=r"$z$ commanded")
        ax.plot(t, zp * 1e3, color=_C["ach"], ls="--", label=r"$z'$ achieved")
        _mark_td_to(ax, ph, span)
        ax.set_xlabel("time t [s]")
        ax.set_ylabel("interface displacement [mm]")
        ax.set_title(_title(metrics, "Interface displacement"), pad=14)
        ax.legend(loc="lower left")
        ax.set_xlim(t[0], t[-1])
        paths.append(_finish(fig, out / f"{prefix}displacement.png"))

        # 2. tracking / reference error
        fig, ax = plt.subplots(figsize=_FIGSIZE, layout="constrained")
        _shade_contact(ax, ph)
        ax.plot(t, ser["e_track"] * 1e3, color=_C["cmd"], label=r"$e_\mathrm{track} = z - z'$")
        if "e_ref" in ser:
            ax.plot(t, ser["e_ref"] * 1e3, color=_C["ref"], alpha=0.8, label=r"$e_\mathrm{ref} = z^r - z'$")
        ax.axhline(0.0, color="k", lw=0.6)
        _mark_td_to(ax, ph, span)
        if metrics and metrics.get("max_abs_tracking_error_m") is not None:
            txt = f"max|e_track| = {metrics['max_abs_tracking_error_m'] * 1e3:.3g} mm"
            if metrics.get("e_track_rel") is not None:
                txt += f"\ne_track,rel = {metrics['e_track_rel']:.3g}"
            if metrics.get("e_ref_rel") is not None:
                txt += f"\ne_ref,rel = {metrics['e_ref_rel']:.3g}"
            ax.text(0.99, 0.97, txt, transform=ax.transAxes, ha="right", va="top", fontsize=8.5,
                    bbox=dict(boxstyle="round", fc="white", ec="0.7", alpha=0.9))
        ax.set_xlabel("time t [s]")
        ax.set_ylabel("error [mm]")
        ax.set_title(_title(metrics, "Tracking and reference error"), pad=14)
        ax.legend(loc="lower left")
        ax.set_xlim(t[0], t[-1])
        paths.append(_finish(fig, out / f"{prefix}tracking_error.png"))

        # 3. interface force
        fig, ax = plt.subplots(figsize=_FIGSIZE, layout="constrained")
        _shade_contact(ax, ph)
        ax.plot(t, np.asarray(record_field(record, "f_int"), dtype=float), color=_C["cmd"], lw=2.0,
                label=r"$F_\mathrm{int}$ fed to the numerical part")
        ax.plot(t, np.asarray(record_field(record, "f_meas"), dtype=float), color="k", lw=0.7, alpha=0.7,
                label=r"$F'_m$ measured (gravity-compensated, ungated)")
        _mark_td_to(ax, ph, span)
        ax.set_xlabel("time t [s]")
        ax.set_ylabel("interface force [N]")
        ax.set_title(_title(metrics, "Interface force"), pad=14)
        ax.legend(loc="lower left")
        ax.set_xlim(t[0], t[-1])
        paths.append(_finish(fig, out / f"{prefix}interface_force.png"))

        # 4. power error (+ F_d)
        f_d = record_field(record, "f_d", None)
        f_d = np.zeros_like(t) if f_d is None else np.asarray(f_d, dtype=float)
        has_fd = bool(np.any(f_d != 0.0))
        nrows = 3 if has_fd else 2
        fig, axes = plt.subplots(nrows, 1, figsize=(8.0, 2.3 * nrows + 0.6), sharex=True, layout="constrained")
        ax = axes[0]
        _shade_contact(ax, ph)
        pe = ser["p_error"]
        ax.plot(t, pe * 1e3, color=_C["ach"], lw=0.9, label=r"$P_\mathrm{error} = F'_m\dot z' - F_\mathrm{int}\dot z$")
        ax.fill_between(t, 0.0, pe * 1e3, where=pe > 0, color=_C["ach"], alpha=0.25, lw=0,
                        label=r"active ($P_\mathrm{error} > 0$)")
        ax.axhline(0.0, color="k", lw=0.6)
        _mark_td_to(ax, ph, span)
        ax.set_ylabel("power [mW]")
        ax.legend(loc="lower left")
        ax.set_title(_title(metrics, "Power error at the transfer system"), pad=14)
        ax = axes[1]
        _shade_contact(ax, ph, label=False)
        ax.plot(t, np.cumsum(pe) * dt * 1e3, color=_C["ach"],
                label=r"$E_\mathrm{error}(t) = \sum P_\mathrm{error}\,\Delta T$")
        if has_fd:
            zd = np.asarray(record_field(record, "zdot_cmd"), dtype=float)
            ax.plot(t, np.cumsum(f_d * zd) * dt * 1e3, color=_C["fd"],
                    label=r"$E_\mathrm{diss}(t) = \sum F_d\,\dot z\,\Delta T$")
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_ylabel("energy [mJ]")
        ax.legend(loc="upper left")
        if has_fd:
            ax = axes[2]
            _shade_contact(ax, ph, label=False)
            ax.plot(t, f_d, color=_C["fd"], label=r"$F_d$ NPC damping force")
            ax.axhline(0.0, color="k", lw=0.6)
            ax.set_ylabel("force [N]")
            ax.legend(loc="lower left")
        axes[-1].set_xlabel("time t [s]")
        axes[-1].set_xlim(t[0], t[-1])
        paths.append(_finish(fig, out / f"{prefix}power_error.png"))
    return paths


def plot_overlay(records: Mapping[str, Any], out_dir: str | Path, z_ref: Any = None,
                 name: str = "overlay", t_ref: Any = None) -> list[Path]:
    """Compare several runs: achieved displacement z' (with z^r) and tracking error e_track.

    ``records`` maps a legend label to a run record (each with its own ``t``).  ``z_ref`` may be a
    reference mapping (``t``, ``z``), an array on ``t_ref`` or on the first record's time base, or None.
    Writes ``<name>_displacement.png`` and ``<name>_tracking_error.png``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not records:
        raise ValueError("plot_overlay needs at least one record")
    first = next(iter(records.values()))
    if z_ref is not None and not isinstance(z_ref, Mapping):
        tr = np.asarray(t_ref if t_ref is not None else record_field(first, "t"), dtype=float)
        ref = {"t": tr, "z": np.asarray(z_ref, dtype=float)}
    else:
        ref = z_ref
    cmap = plt.get_cmap("viridis" if len(records) > 6 else "tab10")
    colors = [cmap(i / max(len(records) - 1, 1)) if len(records) > 6 else cmap(i) for i in range(len(records))]
    t_all = [np.asarray(record_field(rec, "t"), dtype=float) for rec in records.values()]
    xlim = (min(float(tt[0]) for tt in t_all), max(float(tt[-1]) for tt in t_all))
    paths = []
    with plt.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=_FIGSIZE, layout="constrained")
        if ref is not None:
            ax.plot(np.asarray(ref["t"]), np.asarray(ref["z"]) * 1e3, color="k", lw=2.4, alpha=0.35,
                    label=r"$z^r$ reference")
        for c, (label, rec) in zip(colors, records.items()):
            ax.plot(record_field(rec, "t"), np.asarray(record_field(rec, "z_ach"), dtype=float) * 1e3, color=c,
                    label=f"$z'$ {label}")
        ax.set_xlabel("time t [s]")
        ax.set_ylabel("achieved interface displacement [mm]")
        ax.set_title("Achieved displacement, run comparison")
        ax.set_xlim(*xlim)
        ax.legend(loc="lower left", ncol=2 if len(records) > 4 else 1)
        paths.append(_finish(fig, out / f"{name}_displacement.png"))

        fig, ax = plt.subplots(figsize=_FIGSIZE, layout="constrained")
        for c, (label, rec) in zip(colors, records.items()):
            e = (np.asarray(record_field(rec, "z_cmd"), dtype=float)
                 - np.asarray(record_field(rec, "z_ach"), dtype=float))
            ax.plot(record_field(rec, "t"), e * 1e3, color=c, label=label)
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_xlabel("time t [s]")
        ax.set_ylabel(r"tracking error $z - z'$ [mm]")
        ax.set_title("Tracking error, run comparison")
        ax.set_xlim(*xlim)
        ax.legend(loc="lower left", ncol=2 if len(records) > 4 else 1)
        paths.append(_finish(fig, out / f"{name}_tracking_error.png"))
    return paths


def plot_trials(record: Any, per_trial: list, trial_len: int, dt: float, out_dir: str | Path) -> list[Path]:
    """Trial series (ILC iterations): e_track_rel and e_ref_rel over the trial index j, and the
    amplitude spectrum of the tracking error of every trial (growing frequencies stand out)."""
    out_dir = Path(out_dir)
    j = np.array([t["trial"] for t in per_trial]) + 1
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.semilogy(j, [t["e_track_rel"] for t in per_trial], "o-", label=r"$e_{track,rel}$")
    ax.semilogy(j, [t["e_ref_rel"] for t in per_trial], "s--", label=r"$e_{ref,rel}$")
    ax.set_xlabel("trial (ILC iteration) j")
    ax.set_ylabel("relative RMS error [-]")
    ax.set_title("Errors over the trials")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    paths = [_finish(fig, out_dir / "trials_errors.png")]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    cmap = plt.get_cmap("viridis")
    n = len(per_trial)
    for i in range(n):
        e = record["z_cmd"][i * trial_len:(i + 1) * trial_len] - record["z_ach"][i * trial_len:(i + 1) * trial_len]
        if e.size < 8:
            continue
        spec = 2.0 * np.abs(np.fft.rfft(e - e.mean())) / e.size
        f = np.fft.rfftfreq(e.size, dt)
        sel = (f > 0) & (f <= 20.0)
        ax.semilogy(f[sel], 1e3 * spec[sel], color=cmap(i / max(n - 1, 1)), lw=1.0, label=f"j={i + 1}")
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("|FFT(z - z')| [mm]")
    ax.set_title("Tracking-error spectrum per trial")
    ax.grid(True, which="both", alpha=0.3)
    if n <= 12:
        ax.legend(ncol=2, fontsize=8)
    paths.append(_finish(fig, out_dir / "trials_fft.png"))
    return paths
