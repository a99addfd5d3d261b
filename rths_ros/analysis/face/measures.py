"""FACE measures of one record: the error measure ``e``, the result measure ``q``, the equivalent delay
tau_FEI in both forms and the added delay tau_add of a run."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rths_ros.analysis import measures as ms
from rths_ros.analysis.face.spec import EMeasureSpec, QMeasureSpec
from rths_ros.params import ParameterError


def _dt(rec: Mapping) -> float:
    if "dt" in rec and np.ndim(rec["dt"]) == 0:
        return float(rec["dt"])
    t = np.asarray(rec["t"], dtype=float)
    return float(np.median(np.diff(t)))


def _win(w: tuple) -> Any:
    if not w:
        return None
    if len(w) == 1:
        return float(w[0])
    if len(w) == 2:
        return (float(w[0]), float(w[1]))
    raise ParameterError(f"window_s: {list(w)!r} is not allowed; expected [], [T] or [t0, t1]")


def e_value(rec: Mapping, spec: EMeasureSpec, parameter_value: float) -> float:
    """The error measure e of one run."""
    m = spec.measure
    if m == "parameter":
        return float(parameter_value) * spec.scale
    if m == "inverse_parameter":
        if parameter_value == 0:
            raise ParameterError("vary.values: 0 is not allowed with e = inverse_parameter")
        return spec.scale / float(parameter_value)
    dt = _dt(rec)
    w = _win(spec.window_s)
    z = ms.window(rec["z_cmd"], dt, w)
    za = ms.window(rec["z_ach"], dt, w)
    if m == "e_track_rel":
        return ms.e_track_rel(z, za, "rms")
    if m == "e_track_rel_max":
        return ms.e_track_rel(z, za, "max")
    return _tau_fei(z, za, dt, spec, "adapted" if m == "tau_fei_adapted" else "standard")


def _tau_fei(z: np.ndarray, za: np.ndarray, dt: float, spec: EMeasureSpec, mode: str) -> float:
    return ms.fei(z, za, dt, mode=mode, l=spec.weight_exponent, band_half_width_hz=spec.band_half_width_hz,
                  mask_fei=spec.mask_fei, f_min_hz=spec.f_min_hz).tau_s


def tau_fei_pair(rec: Mapping, spec: EMeasureSpec | None = None) -> tuple[float, float]:
    """(adapted, standard) tau_FEI of one record in s, over the e window and with the e settings of
    ``spec`` (band, weight exponent, mask, lowest fundamental)."""
    spec = spec or EMeasureSpec()
    dt = _dt(rec)
    w = _win(spec.window_s)
    z = ms.window(rec["z_cmd"], dt, w)
    za = ms.window(rec["z_ach"], dt, w)
    return _tau_fei(z, za, dt, spec, "adapted"), _tau_fei(z, za, dt, spec, "standard")


#: varied parameters that are an added delay, with their unit ("steps" of the record's dt, or "s")
DELAY_PARAMETERS = {"tau_add_steps": "steps", "command_delay_steps": "steps", "added_delay_steps": "steps",
                    "tau_add_s": "s"}


def added_delay_s(rec: Mapping, parameter: str, value: float) -> float | None:
    """The extra delay tau_add of a run in s: the record's own ``tau_add_s`` (linear vRTHS) or
    ``delay_samples`` (building runner), else the varied parameter when it is a delay
    (:data:`DELAY_PARAMETERS`); None when the sweep does not vary a delay."""
    if "tau_add_s" in rec:
        return float(np.asarray(rec["tau_add_s"]))
    if "delay_samples" in rec:
        return float(np.asarray(rec["delay_samples"])) * _dt(rec)
    unit = DELAY_PARAMETERS.get(parameter.split(".")[-1])
    if unit == "steps":
        return float(value) * _dt(rec)
    if unit == "s":
        return float(value)
    return None


def q_value(rec: Mapping, spec: QMeasureSpec) -> float:
    """The result measure q of one run."""
    dt = _dt(rec)
    x = np.asarray(rec[spec.signal], dtype=float)
    w = _win(spec.window_s)
    m = spec.measure
    if m in ("peak_amplitude", "peak_frequency"):
        if spec.detrend_degree > 0:     # remove a slow trend (e.g. the contact-phase shape) before the FFT
            seg = ms.window(x, dt, w)
            u = np.linspace(-1.0, 1.0, seg.size)
            x, w = seg - np.polyval(np.polyfit(u, seg, spec.detrend_degree), u), None
        a, f = ms.fft_peak(x, dt, w, hann=spec.hann, f_min_hz=spec.f_min_hz)
        return a if m == "peak_amplitude" else f
    if m in ("damping", "decay_rate"):
        fit = ms.decay_fit(x, dt, w)
        if m == "decay_rate":
            return fit.delta_per_s
        mass = spec.m_total_kg or float(np.asarray(rec.get("m_total_kg", 0.0)))
        if mass <= 0:
            raise ParameterError("q.m_total_kg: 0 is not allowed; the record has no m_total_kg either")
        return ms.damping_from_decay(fit.delta_per_s, mass)
    # pencil_frequency: strongest oscillatory mode of the mean-free windowed signal
    seg = ms.window(x, dt, w)
    seg = seg - seg[-max(seg.size // 10, 1):].mean()
    osc = [md for md in ms.matrix_pencil(seg, dt, n_modes=spec.pencil_modes)
           if md.frequency_hz > max(0.1, spec.f_min_hz)]
    return osc[0].frequency_hz if osc else math.nan
