"""Fidelity and accuracy measures of RTHS tests (Insam 2022, ch. 10 and §11.3).

Every function works on recorded arrays sampled at ``dt`` (z = commanded, z' = achieved interface
displacement, forces in N).  Groups:

Tracking errors (§10.3.1, eqs. 10.1-10.4; Part I eq. 4.4)
    :func:`e_track_rel` (RMS(z - z') normalised by RMS(z), or by MAX|z| as in Part I),
    :func:`e_track_mte`, :func:`e_track_peak`, :func:`e_track_freq` and :func:`tracking_errors`;
    the reference-error analogues (§10.3.5) are the same functions with z replaced by z^r
    (:func:`reference_errors`).  Eqs. 10.2/10.3 print ``max(z)``; for signals that move in the
    negative direction (gravity drop) that is 0, so ``MAX|z|`` is used.

Frequency Evaluation Index (§10.3.1, eqs. 10.5-10.9; §11.3.1), :func:`fei`
    one-sided spectra Z, Z' (bins j = 0 .. n/2), weights W_j = |Z_j|^l (l = 2)::

        FEI   = sum_j (Z'_j / Z_j) W_j / sum_j W_j          A_FEI = |FEI|, Phi_FEI = atan2(Im, Re)
        f_eq  = sum_j W_j f_j / sum_j W_j                  tau_FEI = -Phi_FEI / (2 pi f_eq)

    ``mode="standard"`` sums over every bin up to Nyquist; the thesis's sum starts at j = 1 in
    1-based (MATLAB) indexing, i.e. it includes the DC bin, which is why it reports f_eq = 0.02 Hz for
    a drop test; that is the default (``remove_mean=False``).  ``mode="adapted"`` (§11.3.1) first
    detects the fundamental frequency(ies) as the largest local maxima of |Z| above ``f_min_hz`` and
    then sums only over the bins within ``band_half_width_hz`` of them ("a range of 3 Hz around them":
    the default 1.5 Hz half width gives a 3 Hz band).  Whether the band also restricts the FEI ratio
    itself is not stated; ``mask_fei=True`` (default) applies it to eqs. 10.5 and 10.8 alike.

Energy monitors (Part I eqs. 5.1-5.6; §10.3.2, eqs. 10.10-10.11)
    ``P_error = F'_m z'_dot - F_int z_dot`` (> 0: the TS injects energy), ``E_error = sum P_error dT``,
    ``HSEM^S = s E_error / E_strain`` with ``E_strain = 1/2 k_EXP z_max^2`` and
    ``HSEM^I = s E_error / (E_strain + E_input)``, ``E_input = int F_ext dz``.  The sign ``s`` is the
    convention: §12.1.5 calls ``HSEM^S > 0`` "the transfer system damped energy", the opposite of the
    Part I sign of ``P_error``; ``positive="dissipated"`` (default, s = -1) follows §12.1.5,
    ``positive="injected"`` (s = +1) follows Part I.  Rule of thumb [Mosqueda]: |HSEM^S| <= 0.05.

Robust indicator (§10.3.3, eqs. 10.12-10.14), :func:`robust_indicator`
    ``T_o = G_EXP G_NUM / (1 + G_EXP G_NUM)``, ``Delta = G_ACT - 1``; ``||T_o Delta||_inf`` on a
    frequency grid; < 0 dB robust stability, < -20 dB robust performance (the "-20 dB" of eq. 10.13,
    not the "< 20 dB" of one caption).  Models are transfer functions ``(num, den)`` (coefficients,
    highest power first) or complex frequency responses on the grid.

Synchronisation subspace plot (§10.3.1), :func:`plot_ssp`, with the signed enclosed area
:func:`ssp_area` (tracking indicator; > 0 = counter-clockwise in the (z, z') axes = z' lags).

Quantities of interest (§11.3)
    :func:`fft_peak` (amplitude 2|X|/N of the one-sided spectrum without DC, mean removed, and its
    frequency), :func:`decay_fit` (x(t) = c + A e^{-delta t} cos(w t + phi), least squares) with
    :func:`damping_from_decay` (d = 2 delta m_total), and :func:`matrix_pencil` (time-domain
    complex-exponential fit for short windows, the thesis's recommendation in §12.3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize
from scipy import signal as _sig

from rths_ros.params import ParameterError

__all__ = [
    "rms", "e_track_rel", "e_track_mte", "e_track_peak", "e_track_freq", "tracking_errors",
    "reference_errors", "FeiResult", "fei", "fundamental_frequencies", "one_sided_spectrum",
    "power_error", "energy_error", "hsem", "tf_response", "robust_indicator", "ssp_area", "plot_ssp",
    "window", "fft_peak", "DecayFit", "decay_fit", "damping_from_decay", "PencilMode", "matrix_pencil",
]


def _arr(x: Any, name: str = "signal") -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1:
        raise ParameterError(f"{name}: expected a 1-D array, got shape {a.shape}")
    return a


def _pair(z: Any, z2: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _arr(z, "z"), _arr(z2, "z_ach")
    if a.shape != b.shape:
        raise ParameterError(f"z_ach: length {b.size} differs from z (length {a.size})")
    return a, b


def rms(x: Any) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.sqrt(np.mean(x * x))) if x.size else math.nan


def _ratio(num: float, den: float) -> float:
    return num / den if (math.isfinite(den) and den > 0.0) else math.nan


# ------------------------------------------------------------------------------------------------
# tracking errors


def e_track_rel(z: Any, z_ach: Any, norm: str = "rms") -> float:
    """RMS(z - z') / RMS(z) (eq. 10.1, ``norm="rms"``) or / MAX|z| (Part I eq. 4.4, ``norm="max"``)."""
    a, b = _pair(z, z_ach)
    if norm == "rms":
        return _ratio(rms(a - b), rms(a))
    if norm == "max":
        return _ratio(rms(a - b), float(np.max(np.abs(a))) if a.size else math.nan)
    raise ParameterError(f"norm: {norm!r} is not allowed; expected one of 'rms', 'max'")


def e_track_mte(z: Any, z_ach: Any) -> float:
    """Maximum tracking error max|z - z'| / MAX|z| (eq. 10.2)."""
    a, b = _pair(z, z_ach)
    return _ratio(float(np.max(np.abs(a - b))), float(np.max(np.abs(a))))


def e_track_peak(z: Any, z_ach: Any) -> float:
    """Peak error |MAX|z| - MAX|z'|| / MAX|z| (eq. 10.3)."""
    a, b = _pair(z, z_ach)
    za, zb = float(np.max(np.abs(a))), float(np.max(np.abs(b)))
    return _ratio(abs(za - zb), za)


def e_track_freq(z: Any, z_ach: Any) -> float:
    """Frequency-domain error RMS(|Z| - |Z'|) / RMS(|Z|) (eq. 10.4), one-sided spectra."""
    a, b = _pair(z, z_ach)
    za, zb = np.abs(np.fft.rfft(a)), np.abs(np.fft.rfft(b))
    return _ratio(rms(za - zb), rms(za))


def tracking_errors(z: Any, z_ach: Any) -> dict:
    """All tracking measures of §10.3.1 (eqs. 10.1-10.4 and the MAX-normalised Part I form)."""
    return {"e_track_rel": e_track_rel(z, z_ach, "rms"), "e_track_rel_max": e_track_rel(z, z_ach, "max"),
            "e_track_mte": e_track_mte(z, z_ach), "e_track_peak": e_track_peak(z, z_ach),
            "e_track_freq": e_track_freq(z, z_ach)}


def reference_errors(z_ref: Any, z_ach: Any) -> dict:
    """Reference errors of §10.3.5: the tracking measures with z replaced by the reference z^r."""
    return {"e_ref_rel": e_track_rel(z_ref, z_ach, "rms"), "e_ref_rel_max": e_track_rel(z_ref, z_ach, "max"),
            "e_ref_mre": e_track_mte(z_ref, z_ach), "e_ref_peak": e_track_peak(z_ref, z_ach),
            "e_ref_freq": e_track_freq(z_ref, z_ach)}


# ------------------------------------------------------------------------------------------------
# FEI


def one_sided_spectrum(x: Any, dt: float, remove_mean: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(f_j, X_j) for j = 0 .. n/2 of the DFT of ``x`` (mean removed if asked)."""
    x = _arr(x)
    if remove_mean:
        x = x - np.mean(x)
    return np.fft.rfftfreq(x.size, dt), np.fft.rfft(x)


def fundamental_frequencies(freqs: np.ndarray, mag: np.ndarray, n: int = 1, f_min_hz: float = 0.5,
                            f_max_hz: float | None = None) -> list[float]:
    """The ``n`` largest local maxima of ``mag`` in (f_min_hz, f_max_hz], strongest first.

    A local maximum is a bin larger than both neighbours; the low-frequency skirt of a step-like
    signal falls monotonically and has none, so the oscillation peak is found even when the skirt is
    larger.  If there is no local maximum the largest bin in the range is returned.
    """
    freqs = np.asarray(freqs, dtype=float)
    mag = np.asarray(mag, dtype=float)
    sel = freqs > f_min_hz
    if f_max_hz is not None:
        sel &= freqs <= f_max_hz
    idx = np.flatnonzero(sel)
    if idx.size == 0:
        return []
    peaks, _ = _sig.find_peaks(mag)
    peaks = peaks[sel[peaks]]
    if peaks.size == 0:
        return [float(freqs[idx[np.argmax(mag[idx])]])]
    order = peaks[np.argsort(mag[peaks])[::-1]]
    return [float(freqs[i]) for i in order[:n]]


@dataclass
class FeiResult:
    """Result of :func:`fei`."""

    fei: complex
    amplitude: float            # A_FEI
    phase_rad: float            # Phi_FEI
    f_eq_hz: float
    tau_s: float                # tau_FEI
    mode: str
    fundamentals_hz: list = field(default_factory=list)
    bins_used: int = 0

    def as_dict(self) -> dict:
        return {"fei_re": self.fei.real, "fei_im": self.fei.imag, "amplitude": self.amplitude,
                "phase_rad": self.phase_rad, "f_eq_hz": self.f_eq_hz, "tau_s": self.tau_s, "mode": self.mode,
                "fundamentals_hz": list(self.fundamentals_hz), "bins_used": self.bins_used}


def fei(z: Any, z_ach: Any, dt: float, mode: str = "adapted", l: float = 2.0,
        band_half_width_hz: float = 1.5, mask_fei: bool = True, remove_mean: bool | None = None,
        n_fundamentals: int = 1, f_min_hz: float = 0.5, f_max_hz: float | None = None,
        hann: bool = False) -> FeiResult:
    """Frequency Evaluation Index, equivalent frequency and equivalent delay (see module doc).

    ``remove_mean`` defaults to False for ``standard`` (the thesis's sum includes DC) and True for
    ``adapted`` (irrelevant unless a band reaches 0 Hz).  ``hann`` applies a Hann window to both
    signals before the transform.
    """
    if mode not in ("standard", "adapted"):
        raise ParameterError(f"mode: {mode!r} is not allowed; expected one of 'standard', 'adapted'")
    if not dt > 0:
        raise ParameterError(f"dt: {dt!r} is not allowed; expected a number > 0 s")
    a, b = _pair(z, z_ach)
    if remove_mean is None:
        remove_mean = mode == "adapted"
    if remove_mean:
        a, b = a - np.mean(a), b - np.mean(b)
    if hann:
        w = np.hanning(a.size)
        a, b = a * w, b * w
    f = np.fft.rfftfreq(a.size, dt)
    za, zb = np.fft.rfft(a), np.fft.rfft(b)
    mag = np.abs(za)
    weight = mag ** l
    fund: list[float] = []
    band = np.ones(f.size, dtype=bool)
    if mode == "adapted":
        fund = fundamental_frequencies(f, mag, n_fundamentals, f_min_hz, f_max_hz)
        if not fund:
            return FeiResult(complex(math.nan, math.nan), math.nan, math.nan, math.nan, math.nan, mode)
        band = np.zeros(f.size, dtype=bool)
        for f0 in fund:
            band |= np.abs(f - f0) <= band_half_width_hz + 1e-12
    ok = mag > 1e-300 * max(float(np.max(mag)), 1e-300)
    sel_fei = (band if mask_fei else np.ones(f.size, dtype=bool)) & ok
    w_fei = weight[sel_fei]
    if w_fei.sum() <= 0.0:
        return FeiResult(complex(math.nan, math.nan), math.nan, math.nan, math.nan, math.nan, mode, fund)
    val = complex(np.sum(zb[sel_fei] / za[sel_fei] * w_fei) / np.sum(w_fei))
    w_eq = weight[band]
    f_eq = float(np.sum(w_eq * f[band]) / np.sum(w_eq))
    phase = math.atan2(val.imag, val.real)
    tau = -phase / (2.0 * math.pi * f_eq) if f_eq > 0.0 else math.nan
    return FeiResult(val, abs(val), phase, f_eq, tau, mode, fund, int(np.count_nonzero(band)))


# ------------------------------------------------------------------------------------------------
# energy


def power_error(f_int: Any, zdot: Any, f_meas: Any, zdot_ach: Any) -> np.ndarray:
    """P_error = F'_m z'_dot - F_int z_dot per sample (Part I eq. 5.3); > 0: the TS injects energy."""
    return (np.asarray(f_meas, dtype=float) * np.asarray(zdot_ach, dtype=float)
            - np.asarray(f_int, dtype=float) * np.asarray(zdot, dtype=float))


def energy_error(p_error: Any, dt: float) -> float:
    """E_error = sum_k P_error(t_k) dT over the samples given (Part I eq. 5.7; eq. 5.6 over a contact phase)."""
    return float(np.sum(np.asarray(p_error, dtype=float)) * dt)


def hsem(e_error: float, z: Any, k_exp: Any, f_ext: Any = None, positive: str = "dissipated") -> dict:
    """HSEM^S and HSEM^I (eqs. 10.10-10.11).

    ``z``: interface displacement history (n,) or (n, dof); ``z_max`` is the sample of largest norm.
    ``k_exp``: EXP (initial) stiffness, scalar or (dof, dof).  ``f_ext``: external force on NUM (same
    shape as ``z``) for ``E_input = sum F_ext(t_k) (z_k+1 - z_k)``; without it HSEM^I is NaN.
    ``positive``: "dissipated" (§12.1.5: > 0 = the TS damped energy) or "injected" (Part I sign).
    With ``E_strain = 0`` (no EXP stiffness) the ratios are NaN.
    """
    if positive not in ("dissipated", "injected"):
        raise ParameterError(f"positive: {positive!r} is not allowed; expected one of 'dissipated', 'injected'")
    s = -1.0 if positive == "dissipated" else 1.0
    zz = np.asarray(z, dtype=float)
    if zz.ndim == 1:
        zz = zz[:, None]
    kk = np.atleast_2d(np.asarray(k_exp, dtype=float))
    zmax = zz[int(np.argmax(np.linalg.norm(zz, axis=1)))]
    e_strain = 0.5 * float(zmax @ kk @ zmax)
    e_input = math.nan
    if f_ext is not None:
        ff = np.asarray(f_ext, dtype=float)
        if ff.ndim == 1:
            ff = ff[:, None]
        e_input = float(np.sum(ff[:-1] * np.diff(zz, axis=0)))
    hs = s * e_error / e_strain if e_strain > 0 else math.nan
    den = e_strain + e_input
    hi = s * e_error / den if (math.isfinite(den) and den != 0.0) else math.nan
    return {"hsem_s": hs, "hsem_i": hi, "e_error_j": float(e_error), "e_strain_j": e_strain,
            "e_input_j": e_input, "positive": positive, "accept_rule_of_thumb": bool(abs(hs) <= 0.05)
            if math.isfinite(hs) else None}


# ------------------------------------------------------------------------------------------------
# robust indicator


def tf_response(model: Any, freq_hz: Any) -> np.ndarray:
    """Complex response on ``freq_hz`` of a model: ``(num, den)`` polynomial coefficients (highest
    power first), a complex array of the grid's length, or a callable ``f(s) -> complex array``."""
    f = np.asarray(freq_hz, dtype=float)
    s = 2j * np.pi * f
    if callable(model):
        return np.asarray(model(s), dtype=complex)
    if isinstance(model, tuple) and len(model) == 2:
        num = np.atleast_1d(np.asarray(model[0], dtype=float))
        den = np.atleast_1d(np.asarray(model[1], dtype=float))
        if not np.any(den):
            raise ParameterError("den: all coefficients are zero")
        return np.polyval(num, s) / np.polyval(den, s)
    arr = np.asarray(model, dtype=complex)
    if arr.shape != f.shape:
        raise ParameterError(f"model: a response of shape {arr.shape} does not match the grid {f.shape}; "
                             "expected (num, den), a callable of s, or a complex array on the grid")
    return arr


def robust_indicator(g_num: Any, g_exp: Any, g_act: Any, freq_hz: Any) -> dict:
    """``||T_o Delta||_inf`` (eqs. 10.12-10.14) on the grid ``freq_hz``.

    Returns the peak (absolute and dB), its frequency, the verdicts ``robust_stability`` (< 0 dB) and
    ``robust_performance`` (< -20 dB) and the arrays ``freq_hz``, ``to_delta_db``.
    """
    f = np.asarray(freq_hz, dtype=float)
    gn, ge, ga = tf_response(g_num, f), tf_response(g_exp, f), tf_response(g_act, f)
    loop = gn * ge
    t_o = loop / (1.0 + loop)
    mag = np.abs(t_o * (ga - 1.0))
    i = int(np.argmax(mag))
    peak = float(mag[i])
    db = 20.0 * np.log10(np.maximum(mag, 1e-300))
    return {"norm_inf": peak, "norm_inf_db": float(db[i]), "peak_freq_hz": float(f[i]),
            "robust_stability": bool(db[i] < 0.0), "robust_performance": bool(db[i] < -20.0),
            "freq_hz": f, "to_delta_db": db}


# ------------------------------------------------------------------------------------------------
# synchronisation subspace plot


def ssp_area(z: Any, z_ach: Any) -> float:
    """Signed area enclosed by the SSP curve with z on the horizontal and z' on the vertical axis
    (shoelace over the closed polygon), in m^2; the tracking indicator of §10.3.1.

    > 0: counter-clockwise, which in these axes means z' LAGS z (z = sin wt, z' = sin(wt - phi) runs
    (0, -sin phi) -> (1, cos phi) -> (0, sin phi)); < 0: z' leads.  The thesis's wording ("lead ->
    counterclockwise") holds with the axes swapped.  Scales with the amplitude squared.
    """
    a, b = _pair(z, z_ach)
    return float(0.5 * np.sum(a * np.roll(b, -1) - np.roll(a, -1) * b))


def plot_ssp(z: Any, z_ach: Any, path: str | Path | None = None, ax=None, label: str = "", title: str = ""):
    """Synchronisation subspace plot z' over z with the unit-slope line of perfect tracking.
    Saves a PNG when ``path`` is given and returns the path, else the figure."""
    import matplotlib
    if ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    a, b = _pair(z, z_ach)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(5, 5))
    lo, hi = float(min(a.min(), b.min())), float(max(a.max(), b.max()))
    ax.plot([lo * 1e3, hi * 1e3], [lo * 1e3, hi * 1e3], "k--", lw=0.8, label="perfect tracking")
    ax.plot(a * 1e3, b * 1e3, lw=0.8, label=label or "z' over z")
    ax.set_xlabel("commanded z [mm]")
    ax.set_ylabel("achieved z' [mm]")
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(True, lw=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title or f"SSP (signed area {ssp_area(a, b) * 1e6:.3g} mm²)")
    if fig is not None and path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
    return fig if fig is not None else ax


# ------------------------------------------------------------------------------------------------
# quantities of interest


def window(x: Any, dt: float, window_s: Any = None) -> np.ndarray:
    """Samples of ``x`` in the time window: None = all, a number T = the first T seconds,
    ``(t0, t1)`` = t0 <= t < t1 (t = k dt)."""
    x = _arr(x)
    if window_s is None:
        return x
    if isinstance(window_s, (int, float)):
        t0, t1 = 0.0, float(window_s)
    else:
        t0, t1 = (float(v) for v in window_s)
    if not (t1 > t0 >= 0.0):
        raise ParameterError(f"window_s: {window_s!r} is not allowed; expected T > 0 or (t0, t1) with 0 <= t0 < t1")
    i0, i1 = int(round(t0 / dt)), int(round(t1 / dt))
    if i1 > x.size:
        raise ParameterError(f"window_s: {window_s!r} ends after the record ({x.size * dt:g} s)")
    return x[i0:i1]


def fft_peak(x: Any, dt: float, window_s: Any = None, hann: bool = False, f_min_hz: float = 0.0,
             f_max_hz: float | None = None) -> tuple[float, float]:
    """(amplitude, frequency) of the largest bin j >= 1 of the one-sided amplitude spectrum
    ``2 |X_j| / N`` of the windowed, mean-removed signal (the QoI magnitude ``a`` and frequency ``f``
    of §11.3).  With ``hann`` the spectrum is scaled by the window's coherent gain, ``2|X|/sum(w)``.
    ``f_min_hz``/``f_max_hz`` restrict the search.  Frequency resolution is 1/T."""
    seg = window(x, dt, window_s)
    if seg.size < 4 or not np.all(np.isfinite(seg)):
        return math.nan, math.nan
    seg = seg - np.mean(seg)
    w = np.hanning(seg.size) if hann else np.ones(seg.size)
    spec = 2.0 * np.abs(np.fft.rfft(seg * w)) / np.sum(w)
    f = np.fft.rfftfreq(seg.size, dt)
    sel = (f > max(f_min_hz, 0.0)) & (np.arange(f.size) >= 1)
    if f_max_hz is not None:
        sel &= f <= f_max_hz
    idx = np.flatnonzero(sel)
    if idx.size == 0:
        return math.nan, math.nan
    i = idx[int(np.argmax(spec[idx]))]
    return float(spec[i]), float(f[i])


@dataclass
class DecayFit:
    """x(t) = offset + amplitude e^{-delta t} cos(omega t + phase), fitted by least squares."""

    delta_per_s: float
    omega_rad_per_s: float
    amplitude: float
    phase_rad: float
    offset: float
    rms_residual: float

    @property
    def frequency_hz(self) -> float:
        return self.omega_rad_per_s / (2.0 * math.pi)


def decay_fit(x: Any, dt: float, window_s: Any = None, f_guess_hz: float | None = None,
              offset: float | None = None) -> DecayFit:
    """Fit a damped cosine to the transient (the "parameter tuning of the exponent", §12.1.2).

    Start values: frequency from :func:`fft_peak` (or ``f_guess_hz``), decay rate from the matrix
    pencil.  ``offset`` fixes the final value (e.g. the known rest position), otherwise it is fitted.
    Time starts at the window's first sample.
    """
    seg = window(x, dt, window_s)
    t = np.arange(seg.size) * dt
    if f_guess_hz is None:
        _, f_guess_hz = fft_peak(seg, dt)
    w0 = 2.0 * math.pi * (f_guess_hz if f_guess_hz and math.isfinite(f_guess_hz) else 1.0)
    c0 = float(np.mean(seg[-max(seg.size // 10, 1):])) if offset is None else float(offset)
    d0 = 1.0
    a0 = float(seg[0] - c0)
    ph0 = 0.0
    try:
        step = max(1, seg.size // 600)          # the pencil on <= 600 samples: start values only
        modes = matrix_pencil(seg[::step] - c0, dt * step, n_modes=2)
        osc = [m for m in modes if m.frequency_hz > 0.1]
        if osc:
            d0 = max(osc[0].delta_per_s, 1e-3)
            w0 = 2.0 * math.pi * osc[0].frequency_hz
            a0, ph0 = osc[0].amplitude, osc[0].phase_rad
    except (np.linalg.LinAlgError, ValueError):
        pass

    def model(pv):
        c = c0 if offset is not None else pv[4]
        return c + pv[0] * np.exp(-pv[1] * t) * np.cos(pv[2] * t + pv[3])

    p0 = [a0 if a0 != 0 else float(np.std(seg)), d0, w0, 0.0] + ([] if offset is not None else [c0])
    t_len = max(t[-1], dt)
    # bounds keep exp(-delta t) finite over the window (growth of at most e^20) and omega positive
    lo = [-np.inf, -20.0 / t_len, 1e-6, -4 * math.pi] + ([] if offset is not None else [-np.inf])
    hi = [np.inf, np.inf, math.pi / dt, 4 * math.pi] + ([] if offset is not None else [np.inf])
    p0[1] = min(max(p0[1], lo[1] * 0.99), 1e6)
    best = None
    for ph in (ph0, ph0 + math.pi / 2, ph0 - math.pi / 2, ph0 + math.pi):
        p0[3] = (ph + math.pi) % (2 * math.pi) - math.pi
        try:
            res = optimize.least_squares(lambda pv: model(pv) - seg, p0, method="trf", bounds=(lo, hi),
                                         x_scale="jac", max_nfev=2000)
        except ValueError:
            continue
        if best is None or res.cost < best.cost:
            best = res
        if best.cost <= 1e-6 * max(float(np.sum((seg - c0) ** 2)), 1e-300):
            break                                # good fit from the pencil's start values
    pv = best.x
    amp, ph = pv[0], pv[3]
    if amp < 0:
        amp, ph = -amp, ph + math.pi
    ph = (ph + math.pi) % (2 * math.pi) - math.pi
    c = c0 if offset is not None else pv[4]
    return DecayFit(float(pv[1]), float(abs(pv[2])), float(amp), float(ph), float(c),
                    float(np.sqrt(np.mean(best.fun ** 2))))


def damping_from_decay(delta_per_s: float, m_total_kg: float) -> float:
    """Overall viscous damping d = 2 delta m_total [kg/s] of a one-DoF oscillator with decay rate delta."""
    return 2.0 * delta_per_s * m_total_kg


@dataclass
class PencilMode:
    """One complex-exponential mode x_k = Re(amplitude e^{s k dt}), s = -delta + j omega."""

    frequency_hz: float
    delta_per_s: float
    amplitude: float
    phase_rad: float


def matrix_pencil(x: Any, dt: float, n_modes: int | None = None, pencil: int | None = None,
                  rel_tol: float = 1e-6) -> list[PencilMode]:
    """Matrix-pencil estimate of damped complex exponentials in a (short) sampled signal.

    ``x`` is modelled as ``sum_i c_i z_i^k`` with ``z_i = e^{s_i dt}``.  The Hankel matrix of the data
    with pencil parameter L (default N/3) is reduced by an SVD to ``M`` singular values (``2 n_modes``
    for real oscillations, or those above ``rel_tol`` times the largest), the poles are the
    eigenvalues of ``pinv(V1) V2`` and the amplitudes follow by least squares.  Conjugate pairs are
    merged into real modes (amplitude = 2|c|); modes are returned strongest first.  Unlike the FFT
    its frequency resolution is not limited to 1/T.
    """
    x = _arr(x)
    n = x.size
    if n < 8:
        raise ParameterError(f"x: {n} samples are too few for the matrix pencil (need >= 8)")
    L = pencil or max(2, n // 3)
    if not 1 <= L < n - 1:
        raise ParameterError(f"pencil: {L!r} is not allowed; expected 1 <= L < {n - 1}")
    y = np.lib.stride_tricks.sliding_window_view(x, L + 1)          # (n-L, L+1)
    _, sv, vh = np.linalg.svd(y, full_matrices=False)
    if n_modes is None:
        m = int(np.count_nonzero(sv > rel_tol * sv[0]))
    else:
        m = min(2 * int(n_modes), sv.size)
    m = max(m, 1)
    v = vh[:m].conj().T                                             # (L+1, m)
    v1, v2 = v[:-1], v[1:]
    zs = np.linalg.eigvals(np.linalg.pinv(v1) @ v2)
    k = np.arange(n)
    basis = zs[None, :] ** k[:, None]
    c, *_ = np.linalg.lstsq(basis, x.astype(complex), rcond=None)
    modes: list[PencilMode] = []
    used = np.zeros(zs.size, dtype=bool)
    for i in range(zs.size):
        if used[i]:
            continue
        used[i] = True
        s = np.log(zs[i]) / dt
        amp = abs(c[i])
        if abs(zs[i].imag) > 1e-12:
            # merge with its conjugate partner
            j = np.argmin(np.abs(zs - np.conj(zs[i])) + used * 1e9)
            if not used[j]:
                used[j] = True
            amp = 2.0 * abs(c[i])
        modes.append(PencilMode(abs(s.imag) / (2.0 * math.pi), float(-s.real), float(amp),
                                float(np.angle(c[i]) if s.imag >= 0 else -np.angle(c[i]))))
    modes.sort(key=lambda md: md.amplitude, reverse=True)
    return modes
