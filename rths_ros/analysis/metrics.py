"""Fidelity measures of a 1-D contact RTHS run (Insam thesis, Insam 2022, §4.4 and ch. 5).

All functions work on a recorded run, indexed by the synchronisation step ``k`` (``t_k = k*dt``).
The record is a mapping (or an object with attributes) of equally long arrays:

``t``            time of step k [s]
``z_cmd``        commanded interface displacement z (numerical part output for step k) [m]
``zdot_cmd``     commanded interface velocity z-dot [m/s]
``z_ach``        achieved interface displacement z' (forward kinematics of measured leg lengths) [m]
``zdot_ach``     achieved interface velocity z'-dot [m/s]
``f_int``        interface force F_int fed to the numerical part [N]
``f_meas``       gravity-compensated measured force F'_m before contact gating [N]
``contact``      contact flag (bool)
``f_d``          NPC damping force F_d [N] (optional, zeros without passivity control)
``z_ref``        reference solution z^r at the same t [m] (optional; may be passed separately)
``aborted``      optional flag, ``abort_reason`` optional text
``loop``         optional dict of loop timing (steps, deadline_miss_ratio, step_latency_p50_s, ...)

Conventions (interface coordinate, Insam 2022 §4.1 as set by the project):

* z is the displacement of the numerical mass from its initial rest position, positive up, z(0) = 0.
* F_int is the force the numerical part exerts on the experimental part (tension of k_EXP positive);
  the numerical mass feels -F_int.

Power flows (eqs. 5.1-5.3).  The numerical part pushes on the interface with +F_int, so the power it
hands to the transfer system (TS) is P^NUM-TS = F_int * z-dot.  The experimental part receives the
measured force through the achieved motion, P^TS-EXP = F'_m * z'-dot.  Their difference

    P_error = P^TS-EXP - P^NUM-TS = F'_m z'-dot - F_int z-dot

is the power the TS injects into the coupled system (> 0: "active phase").  With an ideal TS
(z'-dot = z-dot, F'_m = F_int) it is exactly zero; with a lagging actuator and a spring
experimental part it is positive on average (delayed stiffness is generative, thesis §5.1).

Errors (eqs. 4.3-4.6, 6.22): e_track = z - z', e_ref = z^r - z', normalised by MAX|z| (MAX|z^r|,
MAX|z-dot|).  The thesis leaves the origin of z open; the primary keys use z as defined above
(MAX|z| ~ 12.7 mm for Table A.2), the ``*_abs_origin`` keys add the absolute height offset
h0 + l0 of the upper mass above the ground (MAX ~ 81 mm).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from scipy import signal as _sig

from rths_ros.params import ParameterError, param

__all__ = [
    "MetricsParams", "ContactEvent", "StabilityVerdict",
    "rms", "max_abs", "relative_rms_error", "power_flows", "energy",
    "contact_events", "bandpass", "moving_amplitude", "dominant_frequency",
    "judge_stability", "compute_metrics", "metric_series", "record_field",
    "resolve_reference", "NORMALISATION", "NORMALISATION_ABS",
]

NORMALISATION = ("MAX|z| with z = displacement of the numerical mass from its initial rest "
                 "position (z(0) = 0, positive up)")
NORMALISATION_ABS = "MAX|z + (h0 + l0)|, z measured from the ground (absolute height of the upper mass)"

_SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class MetricsParams:
    """Tunable values of the fidelity measures and of the stability rule (see docs/metrics.md)."""

    origin_offset_m: float = param(0.081, "m", 0.0, 10.0,
                                   "h0 + l0: height of the upper mass above the ground at rest, used by the "
                                   "*_abs_origin normalisation (Table A.2: 0.01 + 0.071)")
    contact_merge_gap_s: float = param(0.02, "s", 0.0, 1.0,
                                       "contact intervals separated by a shorter gap are one contact event")
    contact_hold_s: float = param(0.3, "s", 0.0, 100.0,
                                  "a contact interval at least this long is a ground contact: the first fall "
                                  "after it is the take-off TO, and later gate openings without such an "
                                  "interval are not contact phases (0: off)")
    osc_band_lo_hz: float = param(2.0, "Hz", 0.01, 1000.0, "lower edge of the oscillation band")
    osc_band_hi_hz: float = param(20.0, "Hz", 0.02, 1000.0, "upper edge of the oscillation band")
    osc_filter_order: int = param(4, "", 1, 10, "Butterworth order of the zero-phase band-pass")
    osc_window_s: float = param(0.2, "s", 0.01, 10.0, "moving-RMS window of the oscillation envelope")
    edge_trim_s: float = param(0.1, "s", 0.0, 10.0, "ignored at both ends of the run (filter transients)")
    min_phase_s: float = param(0.3, "s", 0.0, 100.0,
                               "shortest contact phase on which the growth of the oscillation is judged")
    growth_ratio: float = param(1.5, "", 1.0, 1e6,
                                "unstable if the oscillation RMS in the last third of a phase is at least this "
                                "multiple of the RMS in the first third")
    growth_min_amplitude_m: float = param(5e-5, "m", 0.0, 1.0,
                                          "a growth only counts once the late amplitude exceeds this value")
    osc_amplitude_rel: float = param(0.04, "", 0.0, 10.0,
                                     "unstable if the oscillation amplitude exceeds this fraction of the "
                                     "commanded motion range (max z - min z)")
    osc_amplitude_floor_m: float = param(1e-4, "m", 0.0, 1.0,
                                         "lower bound of the oscillation amplitude threshold")
    tracking_loss_rel: float = param(0.5, "", 0.0, 100.0,
                                     "unstable if max|e_track| exceeds this fraction of the commanded motion range")

    def validate(self) -> None:
        if self.osc_band_hi_hz <= self.osc_band_lo_hz:
            raise ParameterError(
                f"osc_band_hi_hz: {self.osc_band_hi_hz!r} is not allowed; expected a number greater than "
                f"osc_band_lo_hz = {self.osc_band_lo_hz!r}")


class ContactEvent(NamedTuple):
    """One contact phase: samples ``start .. stop-1`` are in contact (``stop`` exclusive)."""

    start: int
    stop: int
    touchdown_s: float
    liftoff_s: float | None  # None: still in contact at the end of the run


@dataclass(frozen=True)
class StabilityVerdict:
    stable: bool
    reason: str
    oscillation_amplitude_m: float | None = None
    oscillation_threshold_m: float | None = None
    oscillation_growth_ratio: float | None = None
    oscillation_freq_hz: float | None = None
    judged_from_s: float | None = None
    judged_to_s: float | None = None


# ----------------------------------------------------------------------------------------------
# small pure functions
# ----------------------------------------------------------------------------------------------

def rms(x: Any) -> float:
    """RMS(xi) = sqrt(1/n_t sum xi(k)^2) (thesis §4.4).  NaN for an empty signal."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return math.nan
    return float(np.sqrt(np.mean(x * x)))


def max_abs(x: Any) -> float:
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return math.nan
    return float(np.max(np.abs(x)))


def relative_rms_error(target: Any, achieved: Any, norm: float | None = None) -> float:
    """RMS(target - achieved) / norm, norm defaulting to MAX|target| (eqs. 4.4, 4.6, 6.22).

    Returns NaN when the normalisation is zero or not finite.
    """
    target = np.asarray(target, dtype=float)
    achieved = np.asarray(achieved, dtype=float)
    if norm is None:
        norm = max_abs(target)
    if not (math.isfinite(norm) and norm > 0.0):
        return math.nan
    return rms(target - achieved) / norm


def power_flows(f_int: Any, zdot_cmd: Any, f_meas: Any, zdot_ach: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(P^NUM-TS, P^TS-EXP, P_error) per step (eqs. 5.1-5.3), in W.

    P^NUM-TS = F_int z-dot, P^TS-EXP = F'_m z'-dot, P_error = P^TS-EXP - P^NUM-TS.  With NPC,
    F_int = F'_m + F_d, which gives eq. 5.4.  P_error > 0 means the transfer system injects energy.
    """
    p_num_ts = np.asarray(f_int, dtype=float) * np.asarray(zdot_cmd, dtype=float)
    p_ts_exp = np.asarray(f_meas, dtype=float) * np.asarray(zdot_ach, dtype=float)
    return p_num_ts, p_ts_exp, p_ts_exp - p_num_ts


def energy(power: Any, dt: float, mask: Any = None) -> float:
    """Rectangle sum E = sum_k P(t_k) dT over the run or over the samples where ``mask`` is true (eqs. 5.6-5.8)."""
    p = np.asarray(power, dtype=float)
    if mask is not None:
        p = p[np.asarray(mask, dtype=bool)]
    return float(np.sum(p) * dt)


def contact_events(contact: Any, t: Any, merge_gap_s: float = 0.0, hold_s: float = 0.0) -> list[ContactEvent]:
    """Contact phases (touch-down TD .. lift-off TO) from the contact flag.

    TD is the time of the first sample in contact, TO the time of the first sample out of contact
    after it (None if the run ends in contact).  Phases separated by a gap shorter than
    ``merge_gap_s`` (flicker of the contact gate around TD/TO) are merged into one.

    ``hold_s > 0``: an unbroken contact interval of at least ``hold_s`` is a ground contact.  A phase
    ends at the first fall of the flag after such an interval (the take-off; later openings of the
    gate are not merged into it), and, if the run has any ground contact, phases without one (the
    gate opening on the specimen's ringing in flight) are left out.
    """
    c = np.asarray(contact, dtype=bool)
    t = np.asarray(t, dtype=float)
    if c.size == 0:
        return []
    d = np.diff(c.astype(np.int8))
    starts = list(np.flatnonzero(d == 1) + 1)
    stops = list(np.flatnonzero(d == -1) + 1)
    if c[0]:
        starts.insert(0, 0)
    if c[-1]:
        stops.append(c.size)
    step = float(t[-1] - t[-2]) if t.size > 1 else 0.0

    def t_at(i: int) -> float:
        return float(t[i]) if i < c.size else float(t[-1]) + step

    merged: list[list] = []   # [start, stop, holds a ground contact]
    for s, e in zip(starts, stops):
        held = hold_s > 0.0 and t_at(e) - t_at(s) >= hold_s
        if merged and not merged[-1][2] and (t[s] - t[merged[-1][1]]) < merge_gap_s:
            merged[-1][1] = e
            merged[-1][2] = held
        else:
            merged.append([s, e, held])
    if any(m[2] for m in merged):
        merged = [m for m in merged if m[2]]
    return [ContactEvent(int(s), int(e), round(float(t[s]), 9), round(float(t[e]), 9) if e < c.size else None)
            for s, e, _ in merged]


def bandpass(x: Any, dt: float, f_lo: float, f_hi: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth band-pass (forward-backward, so no lag is added)."""
    x = np.asarray(x, dtype=float)
    nyq = 0.5 / dt
    if not 0.0 < f_lo < f_hi < nyq:
        raise ValueError(f"band [{f_lo}, {f_hi}] Hz must lie inside (0, {nyq}) Hz")
    sos = _sig.butter(order, [f_lo, f_hi], btype="bandpass", fs=1.0 / dt, output="sos")
    return _sig.sosfiltfilt(sos, x)


def moving_amplitude(x: Any, dt: float, window_s: float) -> np.ndarray:
    """Centred moving RMS times sqrt(2): the amplitude of a sinusoid with the same local RMS."""
    x = np.asarray(x, dtype=float)
    n = max(1, int(round(window_s / dt)))
    n = min(n, x.size) if x.size else 1
    ms = np.convolve(x * x, np.full(n, 1.0 / n), mode="same")
    return _SQRT2 * np.sqrt(np.maximum(ms, 0.0))


def dominant_frequency(x: Any, dt: float, f_min: float | None = None, f_max: float | None = None,
                       pad_factor: int = 4) -> float:
    """Frequency (Hz) of the largest peak of the Hann-windowed amplitude spectrum of ``x`` without DC.

    The (window-weighted) mean is removed, bins below ``f_min`` (default: one resolution bin
    1/(n dt), the DC main lobe) and above ``f_max`` are ignored, the spectrum is zero-padded by
    ``pad_factor`` and the peak refined by a parabola through the log magnitudes of its neighbours.
    NaN for a signal that is too short or without any content.
    """
    x = np.asarray(x, dtype=float)
    n = x.size
    if n < 8 or not np.all(np.isfinite(x)):
        return math.nan
    w = np.hanning(n)
    xw = (x - np.sum(x * w) / np.sum(w)) * w
    nfft = int(2 ** math.ceil(math.log2(n * max(1, pad_factor))))
    mag = np.abs(np.fft.rfft(xw, nfft))
    f = np.fft.rfftfreq(nfft, dt)
    lo = 1.0 / (n * dt) if f_min is None else max(f_min, 0.0)
    sel = (f >= lo) & (f > 0.0)
    if f_max is not None:
        sel &= f <= f_max
    idx = np.flatnonzero(sel)
    if idx.size == 0 or not np.any(mag[idx] > 0.0):
        return math.nan
    i = int(idx[np.argmax(mag[idx])])
    if 0 < i < mag.size - 1 and mag[i - 1] > 0 and mag[i + 1] > 0:
        a, b, c = np.log(mag[i - 1]), np.log(mag[i]), np.log(mag[i + 1])
        den = a - 2.0 * b + c
        shift = 0.5 * (a - c) / den if den < 0 else 0.0
        return float(f[i] + np.clip(shift, -0.5, 0.5) * (f[1] - f[0]))
    return float(f[i])


# ----------------------------------------------------------------------------------------------
# stability rule
# ----------------------------------------------------------------------------------------------

def _mm(x: float) -> str:
    return f"{x * 1e3:.3g} mm"


def _hz(f: float) -> str:
    return f", ~{f:.3g} Hz" if math.isfinite(f) else ""


def judge_stability(t: Any, z_cmd: Any, z_ach: Any, dt: float, contact: Any = None, *,
                    aborted: bool = False, abort_reason: str = "", extra: Mapping[str, Any] | None = None,
                    params: MetricsParams | None = None) -> StabilityVerdict:
    """Classify a run as stable or unstable (rule in docs/metrics.md).

    Unstable if (checked in this order):

    1. the run was aborted;
    2. any of z, z' (or the arrays in ``extra``) is NaN/inf;
    3. the tracking is lost: max|e_track| > ``tracking_loss_rel`` * (max z - min z);
    4. sustained large oscillation: the amplitude (sqrt 2 * moving RMS over ``osc_window_s``) of the
       band-passed (``osc_band_lo_hz`` .. ``osc_band_hi_hz``, zero-phase) tracking error exceeds
       max(``osc_amplitude_rel`` * (max z - min z), ``osc_amplitude_floor_m``) anywhere in the run;
    5. growing oscillation: in a contact phase (TD..TO, at least ``min_phase_s`` long; the whole run if
       there is none) the RMS of the band-passed tracking error in the last third is at least
       ``growth_ratio`` times that in the first third and its amplitude exceeds ``growth_min_amplitude_m``.

    ``edge_trim_s`` at both ends of the run is excluded from 4 and 5 (filter transients).
    """
    p = params or MetricsParams()
    t = np.asarray(t, dtype=float)
    z = np.asarray(z_cmd, dtype=float)
    zp = np.asarray(z_ach, dtype=float)
    if aborted:
        why = f": {abort_reason}" if abort_reason else ""
        return StabilityVerdict(False, f"run aborted{why}")
    arrays = {"z_cmd": z, "z_ach": zp}
    arrays.update({k: np.asarray(v, dtype=float) for k, v in (extra or {}).items() if v is not None})
    bad = [k for k, v in arrays.items() if not np.all(np.isfinite(v))]
    if bad:
        return StabilityVerdict(False, "non-finite values (NaN/inf) in " + ", ".join(bad))

    e = z - zp
    span = float(np.max(z) - np.min(z)) if z.size else 0.0
    e_max = max_abs(e) if e.size else 0.0
    if span > 0.0 and e_max > p.tracking_loss_rel * span:
        return StabilityVerdict(False, f"tracking lost: max|z - z'| = {_mm(e_max)} exceeds "
                                       f"{p.tracking_loss_rel:g} x commanded motion range {_mm(span)}")

    n = e.size
    n_trim = int(round(p.edge_trim_s / dt))
    n_min = 2 * n_trim + max(int(round(3.0 / (p.osc_band_lo_hz * dt))), 30)
    if n < n_min or p.osc_band_hi_hz >= 0.5 / dt:
        return StabilityVerdict(True, "finite and not aborted; run too short (or band above Nyquist) to judge "
                                      "oscillation growth")

    bp = bandpass(e, dt, p.osc_band_lo_hz, p.osc_band_hi_hz, p.osc_filter_order)
    amp = moving_amplitude(bp, dt, p.osc_window_s)
    lo_i, hi_i = n_trim, n - n_trim
    i_peak = lo_i + int(np.argmax(amp[lo_i:hi_i]))
    a_peak = float(amp[i_peak])
    thr = max(p.osc_amplitude_rel * span, p.osc_amplitude_floor_m)

    # phases on which growth is judged
    phases = []
    if contact is not None:
        for ev in contact_events(contact, t, p.contact_merge_gap_s, p.contact_hold_s):
            s, st = max(ev.start, lo_i), min(ev.stop, hi_i)
            if (st - s) * dt >= p.min_phase_s:
                phases.append((s, st))
    if not phases:
        phases = [(lo_i, hi_i)]
    cands = []  # (late amplitude counts, ratio, late amplitude, start, stop); the worst phase is judged
    for s, st in phases:
        third = max((st - s) // 3, 1)
        r_early = rms(bp[s:s + third])
        r_late = rms(bp[st - third:st])
        ratio = r_late / r_early if r_early > 0 else (math.inf if r_late > 0 else 1.0)
        cands.append((_SQRT2 * r_late >= p.growth_min_amplitude_m, ratio, _SQRT2 * r_late, s, st))
    _, ratio, late_amp, s_b, st_b = max(cands, key=lambda c: (c[0], c[1]))
    freq = dominant_frequency(bp[s_b:st_b], dt, p.osc_band_lo_hz, p.osc_band_hi_hz)
    common = dict(oscillation_amplitude_m=a_peak, oscillation_threshold_m=thr,
                  oscillation_growth_ratio=float(ratio), oscillation_freq_hz=freq,
                  judged_from_s=float(t[s_b]), judged_to_s=float(t[st_b - 1]))
    band = f"{p.osc_band_lo_hz:g}-{p.osc_band_hi_hz:g} Hz"
    if a_peak > thr:
        return StabilityVerdict(False, f"sustained large oscillation: {band} tracking-error amplitude {_mm(a_peak)} "
                                       f"at t = {t[i_peak]:.3f} s exceeds {_mm(thr)}{_hz(freq)}", **common)
    if ratio >= p.growth_ratio and late_amp >= p.growth_min_amplitude_m:
        return StabilityVerdict(False, f"growing oscillation: {band} tracking-error RMS grows {ratio:.3g}x from the "
                                       f"first to the last third of t = {t[s_b]:.3f}..{t[st_b - 1]:.3f} s "
                                       f"(late amplitude {_mm(late_amp)}{_hz(freq)})", **common)
    return StabilityVerdict(True, f"no growing or large oscillation: {band} tracking-error amplitude "
                                  f"{_mm(a_peak)} <= {_mm(thr)}, growth {ratio:.3g}x over "
                                  f"t = {t[s_b]:.3f}..{t[st_b - 1]:.3f} s "
                                  f"(unstable from {p.growth_ratio:g}x above {_mm(p.growth_min_amplitude_m)})",
                            **common)


# ----------------------------------------------------------------------------------------------
# the whole set
# ----------------------------------------------------------------------------------------------

_MISSING = object()


def record_field(record: Any, key: str, default: Any = _MISSING) -> Any:
    """``record[key]`` for a mapping, ``record.key`` otherwise; ``default`` (or KeyError) when absent."""
    if isinstance(record, Mapping):
        if key in record:
            return record[key]
    elif hasattr(record, key):
        return getattr(record, key)
    if default is _MISSING:
        raise KeyError(f"run record has no '{key}'")
    return default


def _num(x: Any) -> float | None:
    """Plain float (None for a missing value)."""
    return None if x is None else float(x)


def resolve_reference(record: Any, z_ref: Any, t: np.ndarray) -> np.ndarray | None:
    """z^r on the record's time base.

    ``z_ref`` may be an array of the record's length, a mapping with ``t`` and ``z`` (as returned
    by the reference simulation; linearly interpolated onto the record's t), or None (then the
    record's own ``z_ref`` is used if it has one).
    """
    if z_ref is None:
        z_ref = record_field(record, "z_ref", None)
        if z_ref is None:
            return None
    if isinstance(z_ref, Mapping):
        tr = np.asarray(z_ref["t"], dtype=float)
        zr = np.asarray(z_ref["z"], dtype=float)
        if tr.shape == t.shape and np.allclose(tr, t, rtol=0.0, atol=1e-9):
            return zr.copy()
        return np.interp(t, tr, zr)
    zr = np.asarray(z_ref, dtype=float)
    if zr.shape != t.shape:
        raise ValueError(f"z_ref has {zr.size} samples, the run {t.size}")
    return zr


def compute_metrics(record: Any, z_ref: Any = None, dt: float | None = None, loop: Mapping | None = None,
                    params: MetricsParams | None = None) -> dict:
    """All fidelity measures of one run, as a JSON-serialisable dict in SI units.

    Keys (see docs/metrics.md for the full list): e_track_rel, e_ref_rel, edot_track_rel (and their
    ``*_abs_origin`` variants), max_abs_tracking_error_m, E_error_J, Ec_error_J, E_diss_J,
    touchdown_s, liftoff_s, stable, stability_reason, dominant_error_freq_hz,
    peak_damping_force_n, normalisation, loop.
    """
    p = params or MetricsParams()
    t = np.asarray(record_field(record, "t"), dtype=float)
    if dt is None:
        dt = record_field(record, "dt", None)
        if dt is None:
            dt = float(np.median(np.diff(t))) if t.size > 1 else math.nan
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0.0):
        raise ValueError(f"dt must be a positive number, got {dt!r}")
    z = np.asarray(record_field(record, "z_cmd"), dtype=float)
    zd = np.asarray(record_field(record, "zdot_cmd"), dtype=float)
    zp = np.asarray(record_field(record, "z_ach"), dtype=float)
    zpd = np.asarray(record_field(record, "zdot_ach"), dtype=float)
    f_int = np.asarray(record_field(record, "f_int"), dtype=float)
    f_meas = np.asarray(record_field(record, "f_meas"), dtype=float)
    contact = np.asarray(record_field(record, "contact"), dtype=bool)
    f_d = record_field(record, "f_d", None)
    f_d = np.zeros_like(t) if f_d is None else np.asarray(f_d, dtype=float)
    n = t.size
    if n < 2:
        raise ValueError(f"the run record has {n} samples; at least 2 are needed")
    for name, a in (("z_cmd", z), ("zdot_cmd", zd), ("z_ach", zp), ("zdot_ach", zpd), ("f_int", f_int),
                    ("f_meas", f_meas), ("contact", contact), ("f_d", f_d)):
        if a.shape != t.shape:
            raise ValueError(f"{name} has shape {a.shape}, t has {t.shape}")
    zr = resolve_reference(record, z_ref, t)
    if loop is None:
        loop = record_field(record, "loop", None)
    aborted = bool(record_field(record, "aborted", False))
    abort_reason = str(record_field(record, "abort_reason", "") or "")

    off = p.origin_offset_m
    e_track = z - zp
    m: dict[str, Any] = {
        "n_steps": int(n),
        "dt_s": dt,
        "duration_s": float(n * dt),
        "normalisation": NORMALISATION,
        "normalisation_abs_origin": NORMALISATION_ABS,
        "origin_offset_m": off,
        "max_abs_z_cmd_m": max_abs(z),
        "e_track_rel": relative_rms_error(z, zp),
        "e_track_rel_abs_origin": relative_rms_error(z + off, zp + off),
        "edot_track_rel": relative_rms_error(zd, zpd),
        "rms_tracking_error_m": rms(e_track),
        "max_abs_tracking_error_m": max_abs(e_track),
        "max_abs_tracking_error_at_s": round(float(t[int(np.nanargmax(np.abs(e_track)))]), 9)
        if np.any(np.isfinite(e_track)) else None,
    }
    if zr is not None:
        e_ref = zr - zp
        m.update({
            "e_ref_rel": relative_rms_error(zr, zp),
            "e_ref_rel_abs_origin": relative_rms_error(zr + off, zp + off),
            "rms_reference_error_m": rms(e_ref),
            "max_abs_reference_error_m": max_abs(e_ref),
        })
    else:
        m.update({"e_ref_rel": None, "e_ref_rel_abs_origin": None, "rms_reference_error_m": None,
                  "max_abs_reference_error_m": None})

    p_num_ts, p_ts_exp, p_err = power_flows(f_int, zd, f_meas, zpd)
    events = contact_events(contact, t, p.contact_merge_gap_s, p.contact_hold_s)
    in_phase = np.zeros(n, dtype=bool)
    for ev in events:
        in_phase[ev.start:ev.stop] = True
    m.update({
        "E_error_J": energy(p_err, dt),
        "Ec_error_J": energy(p_err, dt, in_phase),
        "E_diss_J": energy(f_d * zd, dt),
        "E_num_ts_J": energy(p_num_ts, dt),
        "E_ts_exp_J": energy(p_ts_exp, dt),
        "active_fraction": float(np.mean(p_err > 0.0)),
        "peak_power_error_w": max_abs(p_err),
        "peak_damping_force_n": max_abs(f_d),
        "touchdown_s": events[0].touchdown_s if events else None,
        "liftoff_s": events[0].liftoff_s if events else None,
        "n_contact_events": len(events),
        "contact_events_s": [[ev.touchdown_s, ev.liftoff_s] for ev in events],
        # ground reaction N = m_EXP g - F'_m, with m_EXP g taken as the mean gated force in flight
        "peak_contact_force_n": max_abs(f_int[~contact].mean() - f_meas[contact])
        if np.any(contact) and np.any(~contact) else None,
        "dominant_error_freq_hz": dominant_frequency(e_track, dt),
    })

    verdict = judge_stability(t, z, zp, dt, contact, aborted=aborted, abort_reason=abort_reason,
                              extra={"zdot_cmd": zd, "zdot_ach": zpd, "f_int": f_int, "f_meas": f_meas, "f_d": f_d},
                              params=p)
    m.update({
        "stable": bool(verdict.stable),
        "stability_reason": verdict.reason,
        "oscillation_amplitude_m": _num(verdict.oscillation_amplitude_m),
        "oscillation_threshold_m": _num(verdict.oscillation_threshold_m),
        "oscillation_growth_ratio": _num(verdict.oscillation_growth_ratio),
        "dominant_osc_freq_hz": _num(verdict.oscillation_freq_hz),
        "aborted": aborted,
        "stability_rule": {k: v for k, v in dataclasses.asdict(p).items() if k != "origin_offset_m"},
        "loop": dict(loop) if loop is not None else None,
    })
    return plain(m)


def plain(x: Any, json_safe: bool = False) -> Any:
    """numpy scalars/arrays -> Python numbers/lists, recursively.  ``json_safe``: also non-finite floats
    -> None and paths -> str (for metrics.json)."""
    if isinstance(x, Mapping):
        return {str(k): plain(v, json_safe) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v, json_safe) for v in x]
    if isinstance(x, np.ndarray):
        return [plain(v, json_safe) for v in x.tolist()]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if json_safe and not math.isfinite(x) else x
    if json_safe and isinstance(x, Path):
        return str(x)
    return x


def metric_series(record: Any, z_ref: Any = None) -> dict[str, np.ndarray]:
    """Time series behind the scalar measures (for plots): e_track, e_ref, P^NUM-TS, P^TS-EXP, P_error."""
    t = np.asarray(record_field(record, "t"), dtype=float)
    z = np.asarray(record_field(record, "z_cmd"), dtype=float)
    zp = np.asarray(record_field(record, "z_ach"), dtype=float)
    p_num_ts, p_ts_exp, p_err = power_flows(record_field(record, "f_int"), record_field(record, "zdot_cmd"),
                                            record_field(record, "f_meas"), record_field(record, "zdot_ach"))
    zr = resolve_reference(record, z_ref, t)
    out = {"t": t, "e_track": z - zp, "p_num_ts": p_num_ts, "p_ts_exp": p_ts_exp, "p_error": p_err}
    if zr is not None:
        out["z_ref"] = zr
        out["e_ref"] = zr - zp
    return out

