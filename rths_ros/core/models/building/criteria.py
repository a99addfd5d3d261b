"""Evaluation criteria J1-J9 of the servo-hydraulic building benchmark (Silva et al. 2020).

Signals (all sampled at Δt, same length N): ``y1`` = command of the numerical substructure for DoF 1,
``x_m`` = measured actuator displacement, ``y2``, ``y3`` = numerical DoFs 2 and 3, ``x_r`` (N x 3) =
reference-structure response.  ``‖·‖`` is a norm over the whole record.

Two conventions, because the paper and the published MATLAB evaluation differ:

``"paper"`` (default; the table of the specification)
    ``‖s‖`` = RMS (mean *not* removed); J4, J5, J6 = normalised RMS errors of floors 1, 2, 3;
    J7, J8, J9 = normalised peak errors of floors 1, 2, 3.  J1 = the lag (ms, a multiple of Δt, not
    rounded) in 0 ... ``max_lag_s`` (default 0.1 s) that maximises the Pearson correlation of
    ``x_m[k]`` with ``y1[k - lag]``.
``"matlab"`` (the package's evaluation script)
    ``‖s‖`` = standard deviation (mean removed); order J4 = RMS floor 1, J5 = peak floor 1, J6, J7 =
    RMS floors 2, 3, J8, J9 = peak floors 2, 3.  J1 searches 0 ... 49 samples and is rounded to 0.1 ms.

Formulas (``e`` = error, ``%`` = times 100)::

    J2 = ‖x_m - y1‖ / ‖y1‖ %           J3 = max|x_m - y1| / max|y1| %
    floor 1: ‖x_m - x_r1‖ / ‖x_r1‖ %,  max|x_m - x_r1| / max|x_r1| %
    floor i = 2, 3: ‖y_i - x_ri‖ / ‖x_ri‖ %,  max|y_i - x_ri| / max|x_ri| %

A normalised error whose reference signal is identically zero (e.g. a record cut before the motion
starts) is NaN.  For a J1 found at the upper end of the search window the true delay may be larger; :func:`evaluate`
reports that as ``J1_at_window_edge``.
"""
from __future__ import annotations

import numpy as np

CRITERIA = ("J1", "J2", "J3", "J4", "J5", "J6", "J7", "J8", "J9")
CONVENTIONS = ("paper", "matlab")


def _rms(s: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(s))))


def _std(s: np.ndarray) -> float:
    return float(np.std(s))


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    den = np.sqrt(np.dot(a, a) * np.dot(b, b))
    return float(np.dot(a, b) / den) if den > 0.0 else 0.0


def pearson_by_lag_direct(y1: np.ndarray, x_m: np.ndarray, max_lag: int) -> np.ndarray:
    """Pearson correlation of x_m[lag:] with y1[:N-lag] for lag = 0 ... max_lag, one lag at a time
    (reference implementation of :func:`pearson_by_lag`)."""
    n = y1.size
    return np.array([_pearson(x_m[lag:], y1[: n - lag]) for lag in range(int(max_lag) + 1)])


def pearson_by_lag(y1: np.ndarray, x_m: np.ndarray, max_lag: int) -> np.ndarray:
    """Same as :func:`pearson_by_lag_direct`, with the cross products of all lags from one FFT and the
    partial sums from cumulative sums (O(N log N))."""
    x = np.asarray(x_m, float)
    y = np.asarray(y1, float)
    x = x - x.mean()   # Pearson is shift-invariant; centring keeps the sums well conditioned
    y = y - y.mean()
    n = y.size
    lags = np.arange(int(max_lag) + 1)
    m = n - lags
    nfft = 1 << int(np.ceil(np.log2(2 * n)))
    sxy = np.fft.irfft(np.fft.rfft(x, nfft) * np.conj(np.fft.rfft(y, nfft)), nfft)[lags]
    cx = np.concatenate(([0.0], np.cumsum(x)))
    cxx = np.concatenate(([0.0], np.cumsum(x * x)))
    cy = np.concatenate(([0.0], np.cumsum(y)))
    cyy = np.concatenate(([0.0], np.cumsum(y * y)))
    sx = cx[n] - cx[lags]          # sum of x[lag:]
    sxx = cxx[n] - cxx[lags]
    sy = cy[m]                     # sum of y[:n-lag]
    syy = cyy[m]
    cov = sxy - sx * sy / m
    var = (sxx - sx * sx / m) * (syy - sy * sy / m)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(var > 0.0, cov / np.sqrt(np.where(var > 0.0, var, 1.0)), 0.0)
    return rho


def tracking_delay(y1: np.ndarray, x_m: np.ndarray, max_lag: int) -> tuple[int, np.ndarray]:
    """Lag (samples, 0 ... max_lag) maximising the Pearson correlation of x_m[k] with y1[k - lag], and the
    correlation per lag."""
    y1 = np.asarray(y1, float)
    x_m = np.asarray(x_m, float)
    max_lag = min(int(max_lag), y1.size - 2)
    rho = pearson_by_lag(y1, x_m, max_lag)
    return int(np.argmax(rho)), rho


def evaluate(y1, x_m, y2, y3, x_r, dt_s: float, convention: str = "paper", max_lag_s: float = 0.1) -> dict:
    """J1 (ms) and J2-J9 (%) of one run; see the module doc for the conventions."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention: {convention!r} is not allowed; expected one of {', '.join(CONVENTIONS)}")
    y1, x_m, y2, y3 = (np.asarray(v, float) for v in (y1, x_m, y2, y3))
    x_r = np.asarray(x_r, float)
    n = y1.size
    if not (x_m.size == y2.size == y3.size == n and x_r.shape == (n, 3)):
        raise ValueError("evaluate: y1, x_m, y2, y3 need the same length N and x_r the shape (N, 3)")
    norm = _rms if convention == "paper" else _std
    max_lag = int(round(max_lag_s / dt_s)) if convention == "paper" else 49
    max_lag = min(max_lag, n - 2)
    lag, _ = tracking_delay(y1, x_m, max_lag)
    j1 = lag * dt_s * 1e3
    if convention == "matlab":
        j1 = round(j1, 1)

    def rel(a, b):
        den = norm(b)
        return 100.0 * norm(a - b) / den if den > 0.0 else float("nan")

    def peak(a, b):
        den = float(np.max(np.abs(b)))
        return 100.0 * float(np.max(np.abs(a - b))) / den if den > 0.0 else float("nan")

    floors = (x_m, y2, y3)
    rms_f = [rel(floors[i], x_r[:, i]) for i in range(3)]
    peak_f = [peak(floors[i], x_r[:, i]) for i in range(3)]
    out = {"J1": j1, "J2": rel(x_m, y1), "J3": peak(x_m, y1)}
    if convention == "paper":
        out.update(J4=rms_f[0], J5=rms_f[1], J6=rms_f[2], J7=peak_f[0], J8=peak_f[1], J9=peak_f[2])
    else:
        out.update(J4=rms_f[0], J5=peak_f[0], J6=rms_f[1], J7=rms_f[2], J8=peak_f[1], J9=peak_f[2])
    out["J1_at_window_edge"] = lag == max_lag
    out["convention"] = convention
    return out


def evaluate_record(rec: dict, convention: str = "paper", max_lag_s: float = 0.1) -> dict:
    """:func:`evaluate` on a record of :func:`rths_ros.core.models.building.benchmark.run_benchmark`."""
    y = rec["y"]
    dt = float(rec["t"][1] - rec["t"][0])
    return evaluate(y[:, 0], rec["x_m"], y[:, 1], y[:, 2], rec["x_r"], dt, convention, max_lag_s)
