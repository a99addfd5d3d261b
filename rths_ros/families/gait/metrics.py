"""Gait analysis of a prosthetic-foot RTHS record (Insam 2022, ch. 15, ch. 17, fig. 16.3, figs. 17.1-17.4).

Input is a :class:`GaitRecord` of plain arrays (model frame: x forward, y up; SI units):

* ``t`` [s], ``com_x``, ``com_y`` [m], ``trunk_angle`` [rad] (phi_VPP, forward lean positive);
* per leg n in ("L", "R"): ``grf_x[n]``, ``grf_y[n]`` [N] (ground reaction on the body), ``grf_x_vpp[n]``,
  ``grf_y_vpp[n]`` [N] (optional: the model's ground reaction directed through the VPP, eqs. 16.2/16.4, when
  ``grf_x``/``grf_y`` hold the measured plate force of the prosthetic leg), ``hip_torque[n]``
  [N m] (total hip torque tau_h,n on the trunk, counter-clockwise positive = extending the stance hip),
  ``hip_torque_vpp[n]`` [N m] (optional: the VPP controller's share tau_VPP,n, eq. 16.3), ``cop_x[n]`` [m] (model x of the centre of pressure), ``foot_x[n]`` [m] (foot point x_FP,n),
  ``contact[n]`` (bool).  Any per-leg entry may be missing; the derived quantities that need it are then skipped.

Quantities (:func:`gait_metrics`), with the definitions chosen where the thesis is not explicit:

* CoM: ``com_peak_to_peak_m = max y - min y`` and ``com_amplitude_m`` = half of it (the amplitude of the
  sinusoid; ch. 15 quotes about 2.5 cm for humans, ch. 17 reports "about 0.04 m" for the RTHS stride without
  saying which measure, so both are given); the local maxima of y (mid-stance apexes) with their x positions.
* Events: touch-down (TD) / toe-off (TO) = rising / falling edges of the contact flags.
* Stride (gait cycle) duration: time between two successive TDs of the reference leg; if that leg has fewer than
  two TDs, of the other leg; otherwise the record length (``stride_source`` says which).
* Stance fraction of a leg: its contact time inside the stride window divided by the stride duration (the thesis'
  "stance of the right leg takes 85 % of the gait cycle"); double support fraction likewise.
* x-velocity trend: least-squares slope of x'(t) [m/s^2] (x' from ``com_xd`` or the central difference of x),
  with the start, end and mean values.
* Trunk angle: min, max, range and the net change end - start (negative = rotated backwards).
* GRF normalised by the body weight m g; for the reference leg's longest stance phase the first and second peak of
  GRF_y (maxima of the first and second half of the phase), the basin between them and max |GRF_x|; the same
  (keys ``grf_vpp_*``) for the GRF through the VPP if given.
* Hip torque normalised by m g l0 (fig. 16.3 / 17.2b) with its extreme values and, for the reference leg's longest
  stance, its mean over the first and the second half of the stance and the number of sign changes (ignoring
  |tau| < 0.001 BW l0) within it (the thesis describes the sign pattern: extension first, flexion later; it gives no
  number); likewise tau_VPP if given.
* CoP path: during the reference leg's longest stance, CoP x relative to the foot point (if given) at start and
  end, travel end - start and the fraction of forward steps (1 = monotone heel -> toe).

Figures (matplotlib, Agg, PNG): :func:`plot_gait` (CoM, GRF, hip torque, CoP), :func:`animate_stick_figure`
(GIF via PillowWriter), :func:`plot_reproducibility` (several trials on a common time base, mean +- spread).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import animation

__all__ = ["GaitRecord", "gait_metrics", "contact_events", "plot_gait", "animate_stick_figure",
           "plot_reproducibility", "reproducibility_stats", "LEGS"]

LEGS = ("L", "R")
_PER_LEG = ("grf_x", "grf_y", "grf_x_vpp", "grf_y_vpp", "hip_torque", "hip_torque_vpp", "cop_x", "foot_x", "contact")
DPI = 120
_COL = {"L": "#1f77b4", "R": "#d62728", "mean": "#000000"}


@dataclass
class GaitRecord:
    """Arrays of one gait record (see module doc).  Per-leg quantities are dicts keyed by "L"/"R"."""

    t: np.ndarray
    com_x: np.ndarray
    com_y: np.ndarray
    trunk_angle: np.ndarray | None = None
    com_xd: np.ndarray | None = None
    grf_x: dict = field(default_factory=dict)
    grf_y: dict = field(default_factory=dict)
    grf_x_vpp: dict = field(default_factory=dict)
    grf_y_vpp: dict = field(default_factory=dict)
    hip_torque: dict = field(default_factory=dict)
    hip_torque_vpp: dict = field(default_factory=dict)
    cop_x: dict = field(default_factory=dict)
    foot_x: dict = field(default_factory=dict)
    contact: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.t = np.asarray(self.t, dtype=float)
        n = self.t.size
        if n < 3 or np.any(np.diff(self.t) <= 0.0):
            raise ValueError("t: expected at least 3 strictly increasing samples")
        for name in ("com_x", "com_y", "trunk_angle", "com_xd"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v, dtype=float)
                if v.shape != (n,):
                    raise ValueError(f"{name}: expected shape ({n},), got {v.shape}")
                setattr(self, name, v)
        for name in _PER_LEG:
            d = dict(getattr(self, name) or {})
            for leg, v in list(d.items()):
                if leg not in LEGS:
                    raise ValueError(f"{name}: leg {leg!r} is not one of {LEGS}")
                v = np.asarray(v, dtype=bool if name == "contact" else float)
                if v.shape != (n,):
                    raise ValueError(f"{name}[{leg}]: expected shape ({n},), got {v.shape}")
                d[leg] = v
            setattr(self, name, d)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any]) -> GaitRecord:
        """Build from flat keys: t, com_x, com_y, trunk_angle, com_xd and ``grf_x_L``, ``contact_R``, ... ."""
        kw: dict[str, Any] = {k: m[k] for k in ("t", "com_x", "com_y", "trunk_angle", "com_xd") if k in m}
        for name in _PER_LEG:
            kw[name] = {leg: m[f"{name}_{leg}"] for leg in LEGS if f"{name}_{leg}" in m}
        return cls(**kw)

    def velocity_x(self) -> np.ndarray:
        return self.com_xd if self.com_xd is not None else np.gradient(self.com_x, self.t)


def contact_events(t: np.ndarray, contact: np.ndarray) -> tuple[list[float], list[float]]:
    """Touch-down and toe-off times [s]: rising and falling edges of the contact flags (time of the first sample
    of the new state)."""
    c = np.asarray(contact, dtype=bool)
    d = np.diff(c.astype(np.int8))
    td = [float(t[i + 1]) for i in np.flatnonzero(d == 1)]
    to = [float(t[i + 1]) for i in np.flatnonzero(d == -1)]
    return td, to


def _phases(t: np.ndarray, contact: np.ndarray) -> list[tuple[int, int]]:
    """Index ranges [i0, i1) of contact phases."""
    c = np.asarray(contact, dtype=bool).astype(np.int8)
    edges = np.diff(np.concatenate([[0], c, [0]]))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)))


def _time_in(t: np.ndarray, mask: np.ndarray, t0: float, t1: float) -> float:
    """Time during which ``mask`` holds in [t0, t1] (sample-and-hold: sample i covers [t_i, t_i+1))."""
    edges = np.append(t, t[-1] + (t[-1] - t[-2]))
    lo = np.clip(edges[:-1], t0, t1)
    hi = np.clip(edges[1:], t0, t1)
    return float(np.sum((hi - lo)[np.asarray(mask, dtype=bool)]))


def _local_maxima(y: np.ndarray) -> np.ndarray:
    i = np.flatnonzero((y[1:-1] > y[:-2]) & (y[1:-1] >= y[2:])) + 1
    return i


def gait_metrics(rec: GaitRecord, mass_kg: float, leg_length_m: float, g_m_per_s2: float = 9.81,
                 leg: str = "R") -> dict:
    """Gait quantities of one record (see module doc).  ``leg`` is the reference (prosthetic) leg."""
    if leg not in LEGS:
        raise ValueError(f"leg: {leg!r} is not one of {LEGS}")
    if not (mass_kg > 0.0 and leg_length_m > 0.0 and g_m_per_s2 > 0.0):
        raise ValueError("mass_kg, leg_length_m and g_m_per_s2 must be > 0")
    t = rec.t
    bw = mass_kg * g_m_per_s2
    out: dict[str, Any] = {"body_weight_n": bw}
    y = rec.com_y
    out["com_peak_to_peak_m"] = float(np.ptp(y))
    out["com_amplitude_m"] = 0.5 * float(np.ptp(y))
    im = _local_maxima(y)
    out["com_maxima"] = [{"t_s": float(t[i]), "x_m": float(rec.com_x[i]), "y_m": float(y[i])} for i in im]
    out["distance_m"] = float(rec.com_x[-1] - rec.com_x[0])
    # events and stride
    events = {n: contact_events(t, rec.contact[n]) for n in LEGS if n in rec.contact}
    out["events"] = {n: {"touch_down_s": ev[0], "toe_off_s": ev[1]} for n, ev in events.items()}
    other = "L" if leg == "R" else "R"
    t0, t1, src = float(t[0]), float(t[-1]), "record"
    for n in (leg, other):
        if n in events and len(events[n][0]) >= 2:
            t0, t1, src = events[n][0][0], events[n][0][1], f"touch_down_{n}"
            break
    out["stride_duration_s"] = t1 - t0
    out["stride_window_s"] = (t0, t1)
    out["stride_source"] = src
    for n in LEGS:
        if n in rec.contact:
            out[f"stance_fraction_{n}"] = _time_in(t, rec.contact[n], t0, t1) / (t1 - t0)
    if all(n in rec.contact for n in LEGS):
        out["double_support_fraction"] = _time_in(t, rec.contact["L"] & rec.contact["R"], t0, t1) / (t1 - t0)
    # forward speed
    xd = rec.velocity_x()
    slope, icpt = np.polyfit(t - t[0], xd, 1)
    out.update(xd_start_m_per_s=float(xd[0]), xd_end_m_per_s=float(xd[-1]), xd_mean_m_per_s=float(np.mean(xd)),
               xd_trend_m_per_s2=float(slope))
    if rec.trunk_angle is not None:
        ph = rec.trunk_angle
        out.update(trunk_min_rad=float(ph.min()), trunk_max_rad=float(ph.max()), trunk_range_rad=float(np.ptp(ph)),
                   trunk_change_rad=float(ph[-1] - ph[0]))
    # reference-leg stance phase
    phase = None
    if leg in rec.contact:
        phs = _phases(t, rec.contact[leg])
        if phs:
            phase = max(phs, key=lambda p: t[p[1] - 1] - t[p[0]])
    for pre, dy, dx in (("grf", rec.grf_y, rec.grf_x), ("grf_vpp", rec.grf_y_vpp, rec.grf_x_vpp)):
        if leg in dy:
            gy = dy[leg] / bw
            out[f"{pre}_y_max_bw"] = float(gy.max())
            if phase is not None and phase[1] - phase[0] >= 4:
                i0, i1 = phase
                mid = (i0 + i1) // 2
                a = i0 + int(np.argmax(gy[i0:mid]))
                b = mid + int(np.argmax(gy[mid:i1]))
                out[f"{pre}_y_first_peak_bw"] = float(gy[a])
                out[f"{pre}_y_second_peak_bw"] = float(gy[b])
                out[f"{pre}_y_basin_bw"] = float(gy[a:b + 1].min())
                out[f"{pre}_y_first_peak_t_s"] = float(t[a])
                out[f"{pre}_y_second_peak_t_s"] = float(t[b])
        if leg in dx:
            gx = dx[leg] / bw
            out.update({f"{pre}_x_max_abs_bw": float(np.abs(gx).max()), f"{pre}_x_min_bw": float(gx.min()),
                        f"{pre}_x_max_bw": float(gx.max())})
    for key, d in (("hip_torque", rec.hip_torque), ("hip_torque_vpp", rec.hip_torque_vpp)):
        if leg in d:
            tau = d[leg] / (bw * leg_length_m)
            out[f"{key}_min_norm"] = float(tau.min())
            out[f"{key}_max_norm"] = float(tau.max())
            if phase is not None and phase[1] - phase[0] >= 4:
                i0, i1 = phase
                mid = (i0 + i1) // 2
                out[f"{key}_first_half_mean_norm"] = float(tau[i0:mid].mean())
                out[f"{key}_second_half_mean_norm"] = float(tau[mid:i1].mean())
                sg = np.sign(tau[i0:i1][np.abs(tau[i0:i1]) > 1e-3])     # ignore |tau| < 0.001 BW l0
                out[f"{key}_sign_changes"] = int(np.count_nonzero(sg[1:] != sg[:-1]))
    if leg in rec.cop_x and phase is not None:
        i0, i1 = phase
        c = rec.cop_x[leg][i0:i1]
        if leg in rec.foot_x:
            c = c - rec.foot_x[leg][i0:i1]
        c = c[np.isfinite(c)]
        if c.size >= 2:
            steps = np.diff(c)
            out.update(cop_start_m=float(c[0]), cop_end_m=float(c[-1]), cop_travel_m=float(c[-1] - c[0]),
                       cop_forward_fraction=float(np.mean(steps >= 0.0)))
    return out


# ----------------------------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------------------------

def _shade_contacts(ax, rec: GaitRecord) -> None:
    for n in LEGS:
        if n in rec.contact:
            for i0, i1 in _phases(rec.t, rec.contact[n]):
                ax.axvspan(rec.t[i0], rec.t[i1 - 1], color=_COL[n], alpha=0.07, lw=0)


def plot_gait(rec: GaitRecord, out_dir: str | Path, mass_kg: float, leg_length_m: float,
              g_m_per_s2: float = 9.81, prefix: str = "gait") -> list[Path]:
    """CoM, GRF (in BW), hip torque (in BW l0) and CoP figures as PNG in ``out_dir``; returns the paths written
    (figures whose data is missing are skipped)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bw = mass_kg * g_m_per_s2
    paths: list[Path] = []

    fig, axs = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True)
    axs[0].plot(rec.t, rec.com_y, color="k")
    axs[0].set_ylabel("CoM height y [m]")
    axs[1].plot(rec.t, rec.velocity_x(), color="k")
    axs[1].set_ylabel("forward speed x' [m/s]")
    if rec.trunk_angle is not None:
        axs[2].plot(rec.t, np.degrees(rec.trunk_angle), color="k")
    axs[2].set_ylabel("trunk angle phi [deg]")
    axs[2].set_xlabel("t [s]")
    for ax in axs:
        _shade_contacts(ax, rec)
        ax.grid(alpha=0.3)
    fig.suptitle("Centre of mass and trunk (shaded: stance L blue, R red)")
    fig.tight_layout()
    paths.append(out / f"{prefix}_com.png")
    fig.savefig(paths[-1], dpi=DPI)
    plt.close(fig)

    if rec.grf_x or rec.grf_y:
        fig, axs = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
        for n in LEGS:
            if n in rec.grf_y:
                axs[0].plot(rec.t, rec.grf_y[n] / bw, color=_COL[n], label=f"GRF_y,{n}")
            if n in rec.grf_x:
                axs[1].plot(rec.t, rec.grf_x[n] / bw, color=_COL[n], label=f"GRF_x,{n}")
            for ax, d, c in ((axs[0], rec.grf_y_vpp, "y"), (axs[1], rec.grf_x_vpp, "x")):
                if n in d:
                    ax.plot(rec.t, d[n] / bw, color=_COL[n], ls="--", lw=0.9,
                            label=f"GRF_{c},{n} through the VPP (model, eqs. 16.2/16.4)")
        axs[0].axhline(1.0, color="k", ls="--", lw=0.8)
        axs[0].set_ylabel("GRF_y / BW")
        axs[1].set_ylabel("GRF_x / BW")
        axs[1].set_xlabel("t [s]")
        for ax in axs:
            ax.grid(alpha=0.3)
            ax.legend(loc="best", fontsize=8)
        fig.tight_layout()
        paths.append(out / f"{prefix}_grf.png")
        fig.savefig(paths[-1], dpi=DPI)
        plt.close(fig)

    if rec.hip_torque:
        fig, ax = plt.subplots(figsize=(8, 4))
        for n in LEGS:
            if n in rec.hip_torque:
                ax.plot(rec.t, rec.hip_torque[n] / (bw * leg_length_m), color=_COL[n], label=f"tau_h,{n}")
            if n in rec.hip_torque_vpp:
                ax.plot(rec.t, rec.hip_torque_vpp[n] / (bw * leg_length_m), color=_COL[n], ls="--", lw=0.9,
                        label=f"tau_VPP,{n} = tau_h,{n} + F_perp l_{n} (16.3)")
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_ylabel("hip torque / (BW l0)")
        ax.set_xlabel("t [s]")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
        fig.tight_layout()
        paths.append(out / f"{prefix}_hip_torque.png")
        fig.savefig(paths[-1], dpi=DPI)
        plt.close(fig)

    if rec.cop_x:
        fig, ax = plt.subplots(figsize=(8, 4))
        for n in LEGS:
            if n in rec.cop_x:
                c = rec.cop_x[n] - rec.foot_x[n] if n in rec.foot_x else rec.cop_x[n]
                m = rec.contact[n] if n in rec.contact else np.ones_like(c, dtype=bool)
                ax.plot(rec.t[m], 1e3 * c[m], ".", ms=2, color=_COL[n], label=f"CoP {n}")
        ax.set_ylabel("x_CoP - x_FP [mm]" if rec.foot_x else "x_CoP [mm]")
        ax.set_xlabel("t [s]")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
        fig.tight_layout()
        paths.append(out / f"{prefix}_cop.png")
        fig.savefig(paths[-1], dpi=DPI)
        plt.close(fig)
    return paths


def animate_stick_figure(rec: GaitRecord, path: str | Path, r_h_m: float = 0.1, r_vpp_m: float = 0.25,
                         trunk_length_m: float = 0.6, max_frames: int = 60, fps: int = 15) -> Path:
    """Stick-figure GIF of the record: trunk through the CoM (angle phi from vertical, forward lean positive),
    hip r_h below the CoM on the trunk axis, VPP r_vpp above it, and each leg in contact drawn from the hip to its
    foot point (``foot_x``, else ``cop_x``).  Swing legs are not drawn (as fig. 17.3).  At most ``max_frames``
    evenly spaced frames."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = rec.t.size
    idx = np.unique(np.linspace(0, n - 1, min(max_frames, n)).astype(int))
    phi = rec.trunk_angle if rec.trunk_angle is not None else np.zeros(n)
    s, c = np.sin(phi), np.cos(phi)
    hip = np.stack([rec.com_x - r_h_m * s, rec.com_y - r_h_m * c])
    top = np.stack([rec.com_x + (trunk_length_m - r_h_m) * s, rec.com_y + (trunk_length_m - r_h_m) * c])
    vpp = np.stack([rec.com_x + r_vpp_m * s, rec.com_y + r_vpp_m * c])
    feet = {}
    for leg in LEGS:
        fx = rec.foot_x.get(leg, rec.cop_x.get(leg))
        if fx is not None:
            feet[leg] = (fx, rec.contact.get(leg, np.ones(n, dtype=bool)))
    fig, ax = plt.subplots(figsize=(6, 4))
    x_lo = float(min(rec.com_x.min(), *(np.nanmin(f[0]) for f in feet.values()))) - 0.4 if feet else \
        float(rec.com_x.min()) - 0.6
    x_hi = float(rec.com_x.max()) + 0.6
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(-0.05, float(top[1].max()) + 0.1)
    ax.set_aspect("equal")
    ax.axhline(0.0, color="k", lw=1.0)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    trunk, = ax.plot([], [], "k-", lw=3)
    com, = ax.plot([], [], "ko", ms=6)
    vp, = ax.plot([], [], "x", color="#2ca02c", ms=7)
    legs = {leg: ax.plot([], [], "-", color=_COL[leg], lw=2)[0] for leg in LEGS}
    title = ax.set_title("")

    def draw(k):
        i = idx[k]
        trunk.set_data([hip[0, i], top[0, i]], [hip[1, i], top[1, i]])
        com.set_data([rec.com_x[i]], [rec.com_y[i]])
        vp.set_data([vpp[0, i]], [vpp[1, i]])
        for leg, line in legs.items():
            if leg in feet and feet[leg][1][i] and np.isfinite(feet[leg][0][i]):
                line.set_data([hip[0, i], feet[leg][0][i]], [hip[1, i], 0.0])
            else:
                line.set_data([], [])
        title.set_text(f"t = {rec.t[i]:.3f} s")
        return (trunk, com, vp, title, *legs.values())

    anim = animation.FuncAnimation(fig, draw, frames=len(idx), blit=False)
    anim.save(str(path), writer=animation.PillowWriter(fps=fps), dpi=80)
    plt.close(fig)
    return path


def _series(rec: GaitRecord, key: str) -> np.ndarray | None:
    if hasattr(rec, key) and not isinstance(getattr(rec, key), dict):
        return getattr(rec, key)
    name, _, leg = key.rpartition("_")
    d = getattr(rec, name, None)
    if isinstance(d, dict):
        return d.get(leg)
    return None


def reproducibility_stats(records: Sequence[GaitRecord], quantities: Sequence[str] = ("com_y", "grf_y_R"),
                          n_grid: int = 500) -> dict:
    """Trials resampled (linear interpolation) on a common time base ``t`` (the overlap of all records, relative
    to each record's start).  Per quantity: ``mean``, ``std`` (population standard deviation across trials),
    ``min``/``max`` envelopes and ``max_std``, ``rms_std``; keys as in :class:`GaitRecord` (``grf_y_R``, ...)."""
    if len(records) < 2:
        raise ValueError("records: expected at least two trials")
    dur = min(r.t[-1] - r.t[0] for r in records)
    tg = np.linspace(0.0, dur, n_grid)
    out: dict[str, Any] = {"t": tg, "n_trials": len(records)}
    for q in quantities:
        rows = []
        for r in records:
            v = _series(r, q)
            if v is None:
                raise ValueError(f"{q}: missing in a record")
            rows.append(np.interp(tg, r.t - r.t[0], v))
        a = np.vstack(rows)
        sd = a.std(axis=0)
        out[q] = {"trials": a, "mean": a.mean(axis=0), "std": sd, "min": a.min(axis=0), "max": a.max(axis=0),
                  "max_std": float(sd.max()), "rms_std": float(np.sqrt(np.mean(sd ** 2)))}
    return out


def plot_reproducibility(records: Sequence[GaitRecord], path: str | Path,
                         quantities: Sequence[str] = ("com_y", "grf_y_R", "hip_torque_R", "trunk_angle"),
                         labels: Sequence[str] | None = None, n_grid: int = 500) -> tuple[Path, dict]:
    """Overlay of several trials (thin lines), their mean (black) and mean +- one standard deviation (band), one
    panel per quantity (fig. 17.4).  Returns the PNG path and :func:`reproducibility_stats`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    st = reproducibility_stats(records, quantities, n_grid)
    tg = st["t"]
    fig, axs = plt.subplots(len(quantities), 1, figsize=(8, 2.4 * len(quantities)), sharex=True, squeeze=False)
    for ax, q in zip(axs[:, 0], quantities):
        s = st[q]
        for k, row in enumerate(s["trials"]):
            ax.plot(tg, row, lw=0.8, alpha=0.8, label=(labels[k] if labels else f"trial {k + 1}"))
        ax.fill_between(tg, s["mean"] - s["std"], s["mean"] + s["std"], color="0.5", alpha=0.3, lw=0,
                        label="mean +- std")
        ax.plot(tg, s["mean"], color=_COL["mean"], lw=1.2, label="mean")
        ax.set_ylabel(q)
        ax.grid(alpha=0.3)
    axs[0, 0].legend(loc="best", fontsize=7, ncol=3)
    axs[-1, 0].set_xlabel("t - t_start [s]")
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path, st
