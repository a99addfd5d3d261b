"""Qualification and identification tools for a transfer system (du Bois et al. 2010 §2.2 and §3.1).

* :func:`stepped_sine` - single-harmonic demands over a frequency x amplitude grid applied to a
  plant given as a callable ``simulate(u_array, dt) -> y_array`` (a simulated plant, or a wrapper
  that plays a recorded test).  Each point settles before it is measured, and the response is
  reduced to Fourier coefficients over an **integer number of periods** (du Bois et al. 2010: "Fourier
  coefficients of input and response over an integer number of periods").
* :func:`fourier_coefficient` - ``X = (2/N) sum x[n] e^{-j w n dt}`` over the record.
* :func:`welch_psd` - PSD with ``scipy.signal.welch``: 8 segments, Hamming window (du Bois et al. 2010 §2.2).
* :func:`plot_frf` - gain/phase plot of the FRF surface (one curve per amplitude), PNG output.
* :func:`fit_process_model` - nonlinear least-squares fit of G1/G2/G1D/G2D
  (:class:`rths_ros.core.methods.tdc.ProcessModelParams`) to an estimated FRF.

Choices where the source is silent:

* **Frequency snapping.**  A period of an arbitrary frequency is generally not an integer number
  of samples.  Each test frequency is moved to the nearest ``f = P / (N dt)`` (``P`` periods in
  exactly ``N`` samples), so the Fourier sum is leakage-free; the snapped frequencies are reported.
* **Settling.**  The settle time is ``max(settle_time_s, settle_periods / f)``; the sine starts
  at zero phase at ``t = 0`` and runs through settle and record without interruption.
* **Fit cost.**  The source fits by minimising "a time-domain error" against the empirical
  transfer functions.  For a unit sinusoidal input the mean-square steady-state time-domain error
  is ``|H_emp - G|^2 / 2``, so the cost is ``sum |H_emp(j w_i) - G(j w_i)|^2`` over all points
  (absolute weighting; ``weighting="relative"`` divides each term by ``|H_emp|^2``).  Several
  start points (delay, lag / natural frequency) are tried and the best is kept.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from scipy import signal as sps

from rths_ros.core.methods.tdc import MODEL_KINDS, ProcessModelParams
from rths_ros.params import ParameterError, param

Plant = Callable[[np.ndarray, float], np.ndarray]


@dataclass(frozen=True)
class SteppedSineParams:
    """Stepped-sine qualification test (du Bois et al. 2010 §2.2)."""

    frequencies_hz: tuple[float, ...] = param([1.0, 2.0, 5.0, 10.0, 20.0, 40.0], "Hz", 1e-3, 1e4,
                                              "test frequencies (snapped to an integer-period grid)")
    amplitudes: tuple[float, ...] = param([0.001], "input unit", 0.0, 1e9, "demand amplitudes")
    dt_s: float = param(0.001, "s", 1e-6, 1.0, "sample period (1 kHz in du Bois et al. 2010)")
    settle_time_s: float = param(1.0, "s", 0.0, 1e4, "minimum settling time before recording")
    settle_periods: int = param(5, "", 0, 100000, "minimum number of periods to settle")
    measure_periods: int = param(10, "", 1, 100000, "minimum number of periods recorded")
    min_measure_time_s: float = param(0.5, "s", 0.0, 1e4, "minimum recorded time (more periods at high f)")
    n_harmonics: int = param(3, "", 1, 50, "response harmonics reported (1 = fundamental only)")

    def validate(self) -> None:
        nyq = 0.5 / self.dt_s
        bad = [f for f in self.frequencies_hz if f >= nyq]
        if bad:
            raise ParameterError(f"frequencies_hz: {bad[0]!r} is not below the Nyquist frequency {nyq:g} Hz")


@dataclass
class SteppedSineResult:
    """FRF surface: arrays of shape ``(n_amplitudes, n_frequencies)``."""

    frequencies_hz: np.ndarray
    amplitudes: np.ndarray
    frf: np.ndarray
    harmonics: np.ndarray = field(repr=False)
    offset: np.ndarray = field(repr=False)

    @property
    def gain(self) -> np.ndarray:
        return np.abs(self.frf)

    @property
    def phase_deg(self) -> np.ndarray:
        return np.degrees(np.unwrap(np.angle(self.frf), axis=-1))

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """All (frequency, FRF) points, for fitting one model to every amplitude."""
        return self.frequencies_hz.ravel(), self.frf.ravel()


def fourier_coefficient(x: np.ndarray, freq_hz: float, dt: float) -> complex:
    """``(2/N) sum_n x[n] e^{-j 2 pi f n dt}``: complex amplitude of ``freq_hz`` in ``x``.

    Exact (leakage-free) when ``x`` spans an integer number of periods; ``x = A sin(w t + p)``
    gives ``A e^{j (p - pi/2)}``.
    """
    x = np.asarray(x, dtype=np.float64)
    n = np.arange(x.size)
    return complex(2.0 / x.size * np.sum(x * np.exp(-2j * np.pi * freq_hz * dt * n)))


def snap_frequency(freq_hz: float, dt: float, min_periods: int, min_time_s: float) -> tuple[float, int, int]:
    """``(f_snapped, periods, samples)`` with ``periods`` periods in exactly ``samples`` samples."""
    periods = max(int(min_periods), int(math.ceil(min_time_s * freq_hz)))
    samples = int(round(periods / (freq_hz * dt)))
    return periods / (samples * dt), periods, samples


def stepped_sine(simulate: Plant, params: SteppedSineParams | None = None, **overrides) -> SteppedSineResult:
    """Run the stepped-sine test on ``simulate(u, dt) -> y`` and return the FRF surface."""
    p = params or SteppedSineParams()
    if overrides:
        from dataclasses import replace
        p = replace(p, **{k: (tuple(v) if isinstance(v, (list, np.ndarray)) else v) for k, v in overrides.items()})
        p.validate()
    dt = p.dt_s
    na, nf = len(p.amplitudes), len(p.frequencies_hz)
    freqs = np.zeros((na, nf))
    frf = np.zeros((na, nf), dtype=complex)
    harm = np.zeros((na, nf, p.n_harmonics), dtype=complex)
    offset = np.zeros((na, nf))
    for ia, amp in enumerate(p.amplitudes):
        for jf, f0 in enumerate(p.frequencies_hz):
            f, per, n_rec = snap_frequency(f0, dt, p.measure_periods, p.min_measure_time_s)
            n_set = int(math.ceil(max(p.settle_time_s, p.settle_periods / f) / dt))
            k = np.arange(n_set + n_rec)
            u = amp * np.sin(2.0 * np.pi * f * dt * k)
            y = np.asarray(simulate(u, dt), dtype=np.float64)
            if y.shape != u.shape:
                raise ValueError(f"simulate returned shape {y.shape}, expected {u.shape}")
            ur, yr = u[n_set:], y[n_set:]
            u1 = fourier_coefficient(ur, f, dt)
            freqs[ia, jf] = f
            frf[ia, jf] = fourier_coefficient(yr, f, dt) / u1
            for h in range(p.n_harmonics):
                if (h + 1) * f < 0.5 / dt:
                    harm[ia, jf, h] = fourier_coefficient(yr, (h + 1) * f, dt) / abs(u1)
            offset[ia, jf] = float(np.mean(yr))
    return SteppedSineResult(freqs, np.asarray(p.amplitudes, dtype=float), frf, harm, offset)


def welch_psd(y: np.ndarray, dt: float, n_segments: int = 8, window: str = "hamming",
              overlap: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """One-sided PSD of ``y`` (units^2/Hz): ``n_segments`` segments, ``window``, ``scipy.signal.welch``."""
    y = np.asarray(y, dtype=np.float64)
    # segment length so that n_segments segments with the given fractional overlap span the record
    nper = max(8, int(y.size / (1 + (n_segments - 1) * (1.0 - overlap))))
    return sps.welch(y, fs=1.0 / dt, window=window, nperseg=nper, noverlap=int(overlap * nper),
                     detrend="constant", scaling="density")


def plot_frf(result: SteppedSineResult, path: str, models: dict | None = None, title: str = "") -> str:
    """Gain and phase (one curve per amplitude), optional fitted models ``{label: ProcessModelParams}``.

    Writes a PNG to ``path`` and returns the path.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_g, ax_p) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    for ia, amp in enumerate(result.amplitudes):
        f = result.frequencies_hz[ia]
        ax_g.semilogx(f, 20 * np.log10(result.gain[ia]), "o-", ms=3, label=f"A = {amp:g}")
        ax_p.semilogx(f, result.phase_deg[ia], "o-", ms=3)
    if models:
        fm = np.geomspace(result.frequencies_hz.min(), result.frequencies_hz.max(), 300)
        for label, m in models.items():
            g = m.frequency_response(fm)
            ax_g.semilogx(fm, 20 * np.log10(np.abs(g)), "--", label=label)
            ax_p.semilogx(fm, np.degrees(np.unwrap(np.angle(g))), "--")
    ax_g.set_ylabel("gain [dB]")
    ax_p.set_ylabel("phase [deg]")
    ax_p.set_xlabel("frequency [Hz]")
    ax_g.grid(True, which="both", alpha=0.3)
    ax_p.grid(True, which="both", alpha=0.3)
    ax_g.legend(fontsize=8)
    if title:
        ax_g.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@dataclass
class FitResult:
    model: ProcessModelParams
    cost: float
    rms_error: float


def _model_from(kind: str, z: np.ndarray) -> ProcessModelParams:
    if kind in ("G1", "G1D"):
        return ProcessModelParams(kind=kind, gain=float(np.exp(z[0])), tau_p_s=float(np.exp(z[1])),
                                  delay_s=float(z[2]) if kind == "G1D" else 0.0)
    return ProcessModelParams(kind=kind, gain=float(np.exp(z[0])), zeta=float(z[1]), omega0_rad_s=float(np.exp(z[2])),
                              delay_s=float(z[3]) if kind == "G2D" else 0.0)


def fit_process_model(freqs_hz, frf, kind: str, weighting: str = "absolute",
                      max_delay_s: float = 0.1) -> FitResult:
    """Fit ``kind`` (G1, G2, G1D, G2D) to measured ``frf`` at ``freqs_hz`` (see module doc for the cost).

    Returns the best model, its cost ``sum |H - G|^2 w`` and the RMS complex error.
    """
    if kind not in MODEL_KINDS:
        raise ValueError(f"kind must be one of {MODEL_KINDS}")
    f = np.asarray(freqs_hz, dtype=np.float64).ravel()
    h = np.asarray(frf, dtype=complex).ravel()
    if weighting == "absolute":
        w = np.ones_like(f)
    elif weighting == "relative":
        w = 1.0 / np.maximum(np.abs(h), 1e-300)
    else:
        raise ValueError("weighting must be 'absolute' or 'relative'")
    s = 2j * np.pi * f
    delayed = kind in ("G1D", "G2D")

    def resid(z):
        if kind in ("G1", "G1D"):
            g = np.exp(z[0]) / (np.exp(z[1]) * s + 1.0)
            tau = z[2] if delayed else 0.0
        else:
            w0 = np.exp(z[2])
            g = np.exp(z[0]) / (s * s + 2.0 * z[1] * w0 * s + w0 * w0)
            tau = z[3] if delayed else 0.0
        e = (h - g * np.exp(-s * tau)) * w
        return np.concatenate([e.real, e.imag])

    k0 = float(np.abs(h[np.argmin(f)]))
    fmin, fmax = float(f.min()), float(f.max())
    lags = np.geomspace(1.0 / (2 * np.pi * fmax * 3), 1.0 / (2 * np.pi * fmin), 6)
    delays = np.linspace(0.0, min(max_delay_s, 0.25 / fmin), 5) if delayed else [0.0]
    starts = []
    for d in delays:
        if kind in ("G1", "G1D"):
            for tp in lags:
                starts.append([math.log(max(k0, 1e-12)), math.log(tp)] + ([d] if delayed else []))
        else:
            for w0 in 1.0 / lags:
                for z in (0.3, 0.8):
                    starts.append([math.log(max(k0, 1e-12) * w0 * w0), z, math.log(w0)] + ([d] if delayed else []))
    if kind in ("G1", "G1D"):
        lo = [-60.0, math.log(1e-7)] + ([0.0] if delayed else [])
        hi = [60.0, math.log(1e3)] + ([max_delay_s] if delayed else [])
    else:
        lo = [-60.0, 1e-4, math.log(1e-2)] + ([0.0] if delayed else [])
        hi = [80.0, 10.0, math.log(1e6)] + ([max_delay_s] if delayed else [])
    best = None
    for z0 in starts:
        z0 = np.clip(np.asarray(z0, dtype=float), np.asarray(lo) + 1e-9, np.asarray(hi) - 1e-9)
        sol = optimize.least_squares(resid, z0, bounds=(lo, hi), x_scale="jac", xtol=1e-12, ftol=1e-12,
                                     gtol=1e-12, max_nfev=2000)
        if best is None or sol.cost < best.cost:
            best = sol
    model = _model_from(kind, best.x)
    err = h - model.frequency_response(f)
    return FitResult(model, float(2.0 * best.cost), float(np.sqrt(np.mean(np.abs(err) ** 2))))
