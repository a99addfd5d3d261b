"""FACE: Fidelity Assessment based on Convergence and Extrapolation (seed 000, Insam, ch. 11-13).

A sweep degrades the transfer system step by step (extra command delay tau_add in whole samples, or a
controller gain), runs one test per value, reduces every run to an error measure ``e`` and a result
``q``, fits ``q = h(e)`` in the explorable range and extrapolates to ``e = 0``::

    q_pred = h(0)                           predicted reference (no reference needed)
    error estimate   = |q_min - q_pred| / |q_pred|        q_min = q of the run with the smallest e
    prediction error = |q_pred - q_ref| / |q_ref|         (only when a reference q_ref is known)
    test error       = |q_min  - q_ref| / |q_ref|

``h`` is a polynomial fitted by least squares, optionally to 20 log10(q) ("db", magnitude), with
``h'(0) = 0`` (frequency, §11.3.2), or constant (``h = q(e_min)``, so q_pred = q_min as the thesis
does when the points are flat near e_min); its degree must be below the number of points
used.  The checks of §11.3.2 are reported: constant curvature sign on [0, e_max] and, for the
magnitude, |h'(0)| <= |h'(e_min)|.  Runs flagged unstable or with NPC activity (nonzero ``f_d``) are
dropped, as the thesis requires.  Fewer than 4 usable points is an error, more than 20 a warning.

The engine is independent of how a point is run: it takes a callable ``run_point(params) -> record``
(a dict of recorded arrays ``t, z_cmd, z_ach, ...`` plus optional ``dt``, ``unstable``).  Provided:
:class:`rths_ros.core.methods.linear_vrths.LinearPointRunner` (linear vRTHS of §12.1) and
:class:`ScenarioPointRunner` (a project scenario, in process or through the ROS graph, one lockstep run
with its bag per point in ``OUT/runs/<point>``) and :class:`BuildingPointRunner` (the building benchmark
of §12.2, in process; tau_add delays the desired displacement by whole samples before the controller, a
choice: the thesis does not say where its delay was inserted).  Points run in parallel in a
``ProcessPoolExecutor`` or on a Dask distributed cluster (``cluster="local:N"`` or a scheduler address);
each record is saved to ``OUT/points/point_NNN.npz`` so :func:`reanalyse` can refit (other e, q or fit
settings) without running again.  When the sweep varies an added delay, every run's tau_FEI is also
computed in both forms and drawn against tau_add (:func:`plot_tau_fei`, ``tau_fei.png``; §11.3.1: the
adapted form follows slope 1, the standard form flattens).

Sweep file (YAML, validated; a bad key or value raises ParameterError naming key, value and range)::

    name: system1_magnitude
    runner: linear_vrths          # linear_vrths | vrths | graph | building
    scenario: system1             # linear system name, or scenario name/path for vrths/graph
    overrides: {vff: false}       # fixed settings of every point (flat keys; dotted keys for scenarios)
    vary: {parameter: tau_add_steps, values: [0, 1, 2, 3, 4, 5]}
    e: {measure: tau_fei_adapted, band_half_width_hz: 1.5}
    q: {measure: peak_amplitude, window_s: [0.0, 0.35]}
    fit: {degree: 2, db: true}
    reference: {source: runner}   # none | value | runner (analytic reference of the linear runner)
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import yaml

from rths_ros.params import ParameterError, build, param, to_dict
from rths_ros.core.models.building.tracking_controller import TrackingController

from rths_ros.analysis import measures as ms

__all__ = ["SweepSpec", "VarySpec", "EMeasureSpec", "QMeasureSpec", "FitSpec", "ReferenceSpec",
           "load_sweep", "sweep_from_data", "e_value", "q_value", "FitResult", "fit_h", "analyse",
           "run_sweep", "reanalyse", "write_outputs", "plot_convergence", "plot_tau_fei", "tau_fei_pair",
           "tau_fei_summary", "added_delay_s", "DELAY_PARAMETERS", "ScenarioPointRunner",
           "BuildingPointRunner", "point_tag",
           "make_runner", "open_cluster", "DelayedCommandController", "main"]

E_MEASURES = ("tau_fei_adapted", "tau_fei_standard", "e_track_rel", "e_track_rel_max", "inverse_parameter",
              "parameter")
Q_MEASURES = ("peak_amplitude", "peak_frequency", "damping", "decay_rate", "pencil_frequency")
RUNNERS = ("linear_vrths", "vrths", "graph", "building")
MIN_POINTS = 4
MAX_USEFUL_POINTS = 20


# ------------------------------------------------------------------------------------------------
# sweep description


@dataclass(frozen=True)
class VarySpec:
    parameter: str = param("tau_add_steps", "", doc="degraded parameter: a key of the runner's parameters "
                           "(e.g. tau_add_steps, k_pp_per_s; dotted for scenarios: sim_plant.command_delay_steps)")
    values: tuple[float, ...] = param([], "", -1e9, 1e9, "its values, the undegraded (best) one included")

    def validate(self) -> None:
        if not self.parameter.strip():
            raise ParameterError("parameter: '' is not allowed; expected a parameter key")
        if len(self.values) < MIN_POINTS:
            raise ParameterError(f"values: {len(self.values)} values given; expected at least {MIN_POINTS} "
                                 "(FACE needs >= 4 tests, §11.3.2)")
        if len(set(self.values)) != len(self.values):
            raise ParameterError(f"values: {list(self.values)!r} repeats a value")


@dataclass(frozen=True)
class EMeasureSpec:
    measure: str = param("tau_fei_adapted", "", doc="error measure e", choices=E_MEASURES)
    band_half_width_hz: float = param(1.5, "Hz", 0.01, 1e3, "adapted FEI: half width of the band around each fundamental")
    weight_exponent: float = param(2.0, "", 0.0, 10.0, "FEI weight exponent l")
    mask_fei: bool = param(True, "", doc="adapted FEI: restrict the FEI ratio (eq. 10.5) to the band as well")
    f_min_hz: float = param(0.5, "Hz", 0.0, 1e3, "adapted FEI: lowest frequency searched for a fundamental")
    window_s: tuple[float, ...] = param([], "s", 0.0, 1e5, "[] = whole record, [T] = first T s, [t0, t1]")
    scale: float = param(1.0, "", -1e9, 1e9, "factor applied to 'parameter' / 'inverse_parameter' (e.g. dt)")


@dataclass(frozen=True)
class QMeasureSpec:
    measure: str = param("peak_amplitude", "", doc="result measure q", choices=Q_MEASURES)
    signal: str = param("z_ach", "", doc="recorded signal q is taken from", choices=("z_ach", "z_cmd"))
    window_s: tuple[float, ...] = param([], "s", 0.0, 1e5, "[] = whole record, [T] = first T s, [t0, t1]")
    hann: bool = param(False, "", doc="Hann window before the FFT (the thesis used none)")
    f_min_hz: float = param(0.0, "Hz", 0.0, 1e3, "lowest frequency of the FFT peak search (and of the "
                            "pencil_frequency modes)")
    m_total_kg: float = param(0.0, "kg", 0.0, 1e6, "total mass for damping d = 2 delta m (0: taken from the record)")
    pencil_modes: int = param(2, "", 1, 20, "pencil_frequency: number of real modes fitted")


@dataclass(frozen=True)
class FitSpec:
    degree: int = param(1, "", 0, 10, "polynomial degree of h (must be < number of points)")
    db: bool = param(False, "", doc="fit 20 log10(q) instead of q (magnitude)")
    zero_slope_at_zero: bool = param(False, "", doc="constrain h'(0) = 0 (frequency, §11.3.2)")
    constant: bool = param(False, "", doc="h = const = q(e_min): q_pred = q_min (flat convergence, §12.1.2)")
    parameter_range: tuple[float, ...] = param([], "", -1e9, 1e9, "use only points with lo <= parameter <= hi "
                                               "([] = all)")
    e_max: float = param(0.0, "", 0.0, 1e9, "use only points with e <= e_max (0 = no limit)")

    def validate(self) -> None:
        if self.parameter_range and len(self.parameter_range) != 2:
            raise ParameterError(f"parameter_range: {list(self.parameter_range)!r} is not allowed; expected [] or [lo, hi]")
        if self.parameter_range and self.parameter_range[0] > self.parameter_range[1]:
            raise ParameterError(f"parameter_range: {list(self.parameter_range)!r} is not allowed; expected lo <= hi")
        if self.zero_slope_at_zero and self.degree == 1:
            raise ParameterError("degree: 1 is not allowed with zero_slope_at_zero (h would be constant); "
                                 "expected 0 or >= 2")


@dataclass(frozen=True)
class ReferenceSpec:
    source: str = param("none", "", doc="reference q: none, a given value, or the runner's reference solution",
                        choices=("none", "value", "runner"))
    value: float = param(0.0, "", -1e12, 1e12, "reference q for source = value")


@dataclass(frozen=True)
class SweepSpec:
    name: str = param("face", "", doc="sweep name")
    description: str = param("", "", doc="one-line description")
    runner: str = param("linear_vrths", "", doc="how a point is run", choices=RUNNERS)
    scenario: str = param("spring_12_1_2", "", doc="linear system name, scenario name/path, or building case "
                          "('case1'..'case4', optionally 'case1/kobe')")
    overrides: dict = param({}, "", doc="fixed settings of every point (key: value)")
    vary: VarySpec = param(VarySpec(), doc="degraded parameter and its values")
    e: EMeasureSpec = param(EMeasureSpec(), doc="error measure")
    q: QMeasureSpec = param(QMeasureSpec(), doc="result measure")
    fit: FitSpec = param(FitSpec(), doc="interpolation/extrapolation model h")
    reference: ReferenceSpec = param(ReferenceSpec(), doc="optional reference for prediction/test errors")

    def validate(self) -> None:
        if not isinstance(self.overrides, Mapping):
            raise ParameterError(f"overrides: {self.overrides!r} is not allowed; expected a mapping key: value")
        if self.vary.parameter in self.overrides:
            raise ParameterError(f"overrides.{self.vary.parameter}: is the varied parameter; remove it from overrides")
        n = _n_selected(self)
        deg = 0 if self.fit.constant else self.fit.degree
        if n < MIN_POINTS:
            raise ParameterError(f"fit.parameter_range: {list(self.fit.parameter_range)!r} keeps {n} points; "
                                 f"expected at least {MIN_POINTS}")
        if deg >= n:
            raise ParameterError(f"fit.degree: {deg!r} is not allowed with {n} points; expected a degree < {n}")
        if self.q.measure == "damping" and self.runner != "linear_vrths" and self.q.m_total_kg <= 0:
            raise ParameterError("q.m_total_kg: 0 is not allowed for q = damping with this runner; expected the "
                                 "total oscillating mass in kg")


def _n_selected(spec: SweepSpec) -> int:
    pr = spec.fit.parameter_range
    return sum(1 for v in spec.vary.values if not pr or pr[0] <= v <= pr[1])


def sweep_from_data(data: Mapping[str, Any]) -> SweepSpec:
    return build(SweepSpec, data, section="")


def load_sweep(path: str | Path) -> tuple[SweepSpec, dict]:
    """(validated spec, raw data) from a sweep YAML."""
    from rths_ros.app.scenario import safe_yaml
    p = Path(path)
    if not p.exists():
        raise ParameterError(f"sweep: file {str(path)!r} does not exist")
    data = safe_yaml(p.read_text(encoding="utf-8"), f"sweep {p}") or {}
    if not isinstance(data, dict):
        raise ParameterError(f"sweep {p}: top level must be a mapping, got {type(data).__name__}")
    data.setdefault("name", p.stem)
    return sweep_from_data(data), data


# ------------------------------------------------------------------------------------------------
# e and q of one record


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
DELAY_PARAMETERS = {"tau_add_steps": "steps", "command_delay_steps": "steps", "tau_add_s": "s"}


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


# ------------------------------------------------------------------------------------------------
# fit


@dataclass
class FitResult:
    coefficients: list          # c_0 .. c_deg of h(u), u = e / e_scale, in the transformed space
    e_scale: float
    db: bool
    q_pred: float
    h0: float                   # h(0) in the transformed space
    constant_curvature: bool
    gradient_check: bool | None  # |h'(0)| <= |h'(e_min)| (q space); None when not applicable
    rms_residual: float

    def h(self, e: Any) -> np.ndarray:
        """h(e) in q units."""
        return self.derivatives(e)[0]

    def derivatives(self, e: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """h, dh/de, d2h/de2 in q units (analytic; chain rule through the dB transform)."""
        u = np.asarray(e, dtype=float) / self.e_scale
        c = np.asarray(self.coefficients[::-1], dtype=float)
        y = np.polyval(c, u)
        y1 = np.polyval(np.polyder(c), u) / self.e_scale if c.size > 1 else np.zeros_like(u)
        y2 = np.polyval(np.polyder(c, 2), u) / self.e_scale ** 2 if c.size > 2 else np.zeros_like(u)
        if not self.db:
            return y, y1, y2
        k = math.log(10.0) / 20.0
        q = 10.0 ** (y / 20.0)
        return q, q * k * y1, q * (k * k * y1 * y1 + k * y2)


def fit_h(e: Any, q: Any, spec: FitSpec, magnitude: bool = False) -> FitResult:
    """Least-squares polynomial ``h`` (see module doc) through the points (e, q)."""
    e = np.asarray(e, dtype=float)
    q = np.asarray(q, dtype=float)
    if e.size != q.size:
        raise ParameterError(f"q: {q.size} values for {e.size} values of e")
    if spec.db and np.any(q <= 0):
        raise ParameterError("fit.db: true needs q > 0 for every point")
    y = 20.0 * np.log10(q) if spec.db else q
    if spec.constant:       # §12.1.2: "no interpolation is required and f_pred = f_min (h = const)"
        y0 = float(y[int(np.argmin(e))])
        q0 = 10.0 ** (y0 / 20.0) if spec.db else y0
        return FitResult([y0], float(np.max(np.abs(e))) or 1.0, spec.db, float(q0), y0, True,
                         None if not magnitude else True, float(np.sqrt(np.mean((y - y0) ** 2))))
    deg = spec.degree
    if deg >= e.size:
        raise ParameterError(f"fit.degree: {deg!r} is not allowed with {e.size} points; expected a degree < {e.size}")
    scale = float(np.max(np.abs(e))) or 1.0
    u = e / scale
    powers = [p for p in range(deg + 1) if not (spec.zero_slope_at_zero and p == 1)]
    a = np.stack([u ** p for p in powers], axis=1)
    sol, *_ = np.linalg.lstsq(a, y, rcond=None)
    coef = np.zeros(deg + 1)
    coef[powers] = sol
    res = y - a @ sol
    h0 = float(coef[0])
    q_pred = 10.0 ** (h0 / 20.0) if spec.db else h0
    # checks of §11.3.2, evaluated in q space on [0, e_max]
    fr = FitResult(list(map(float, coef)), scale, spec.db, float(q_pred), h0, True, None,
                   float(np.sqrt(np.mean(res ** 2))))
    grid = np.linspace(0.0, float(np.max(e)), 401)
    hq, d1, d2 = fr.derivatives(grid)
    tol = 1e-9 * max(float(np.max(np.abs(hq))), 1e-300) / max(float(np.max(e)), 1e-300) ** 2
    signs = np.sign(d2[np.abs(d2) > tol])
    fr.constant_curvature = bool(signs.size == 0 or np.all(signs == signs[0]))
    if magnitude:
        e_min = float(np.min(e))
        fr.gradient_check = bool(abs(d1[0]) <= abs(float(np.interp(e_min, grid, d1))) * (1 + 1e-9) + 1e-300)
    return fr


# ------------------------------------------------------------------------------------------------
# analysis of a set of records


def _usable(rec: Mapping) -> tuple[bool, str]:
    if bool(np.asarray(rec.get("unstable", False))):
        return False, "unstable"
    if bool(np.asarray(rec.get("aborted", False))):
        return False, "aborted"
    fd = rec.get("f_d")
    if fd is not None and np.any(np.abs(np.asarray(fd, dtype=float)) > 0.0):
        return False, "NPC active"
    for key in ("z_cmd", "z_ach"):
        if key not in rec or not np.all(np.isfinite(np.asarray(rec[key], dtype=float))):
            return False, f"{key} missing or not finite"
    return True, ""


def analyse(spec: SweepSpec, records: list[Mapping], values: list[float], q_ref: float | None = None) -> dict:
    """e, q of every record, the fit and the FACE numbers (a JSON-ready dict)."""
    pr = spec.fit.parameter_range
    points = []
    for i, (rec, v) in enumerate(zip(records, values)):
        ok, why = _usable(rec)
        row = {"index": i, "parameter": float(v), "e": math.nan, "q": math.nan, "used": False, "reason": why,
               "tau_add_s": None, "tau_fei_adapted_s": math.nan, "tau_fei_standard_s": math.nan}
        if ok:
            row["tau_add_s"] = added_delay_s(rec, spec.vary.parameter, v)
            try:
                row["tau_fei_adapted_s"], row["tau_fei_standard_s"] = tau_fei_pair(rec, spec.e)
            except ParameterError:
                pass                    # the record ended before the e window; reported below with e
            try:
                row["e"] = float(e_value(rec, spec.e, v))
                row["q"] = float(q_value(rec, spec.q))
            except ParameterError as exc:      # e.g. an analysis window beyond a record that ended early
                row["reason"] = f"e or q not computable: {exc}"
                points.append(row)
                continue
            if not (math.isfinite(row["e"]) and math.isfinite(row["q"])):
                row["reason"] = "e or q not finite"
            elif pr and not pr[0] <= v <= pr[1]:
                row["reason"] = "outside fit.parameter_range"
            elif spec.fit.e_max > 0 and row["e"] > spec.fit.e_max:
                row["reason"] = "e > fit.e_max"
            else:
                row["used"] = True
        points.append(row)
    used = [p for p in points if p["used"]]
    warnings = []
    if len(used) < MIN_POINTS:
        raise ParameterError(f"vary.values: only {len(used)} usable points (unstable, NPC or excluded runs dropped); "
                             f"expected at least {MIN_POINTS}")
    if len(used) > MAX_USEFUL_POINTS:
        warnings.append(f"{len(used)} points used; more than {MAX_USEFUL_POINTS} are not needed (§11.3.2)")
    e = np.array([p["e"] for p in used])
    q = np.array([p["q"] for p in used])
    fr = fit_h(e, q, spec.fit, magnitude=spec.q.measure == "peak_amplitude")
    if not fr.constant_curvature:
        warnings.append("the curvature of h changes sign on [0, e_max]; choose another h (§11.3.2)")
    if fr.gradient_check is False:
        warnings.append("|h'(0)| > |h'(e_min)| for the magnitude: the gradient rule of §11.3.2 (stated for an error "
                        "that destabilises) is violated; check that h is plausible")
    best = used[int(np.argmin(e))]
    q_min, e_min = best["q"], best["e"]
    out = {
        "name": spec.name, "description": spec.description, "parameter": spec.vary.parameter,
        "e_measure": spec.e.measure, "q_measure": spec.q.measure, "points": points,
        "n_used": len(used), "e_min": e_min, "q_min": q_min, "q_pred": fr.q_pred,
        "error_estimate": abs(q_min - fr.q_pred) / abs(fr.q_pred) if fr.q_pred else math.nan,
        "fit": {"degree": 0 if spec.fit.constant else spec.fit.degree, "db": spec.fit.db,
                "zero_slope_at_zero": spec.fit.zero_slope_at_zero, "constant": spec.fit.constant,
                "coefficients_u": fr.coefficients, "e_scale": fr.e_scale, "rms_residual": fr.rms_residual,
                "constant_curvature": fr.constant_curvature, "gradient_check": fr.gradient_check},
        "q_ref": q_ref, "prediction_error": None, "test_error": None, "warnings": warnings,
    }
    if q_ref is not None and math.isfinite(q_ref) and q_ref != 0:
        out["prediction_error"] = abs(fr.q_pred - q_ref) / abs(q_ref)
        out["test_error"] = abs(q_min - q_ref) / abs(q_ref)
    out["tau_fei"] = tau_fei_summary(points)
    out["_fit"] = fr
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> float | None:
    return float(np.polyfit(x, y, 1)[0]) if x.size >= 2 and np.ptp(x) > 0 else None


def tau_fei_summary(points: list[Mapping]) -> dict | None:
    """Adapted and standard tau_FEI against the added delay tau_add (§11.3.1), from the rows of
    :func:`analyse`; None unless the sweep varies a delay and at least 3 runs give both forms.

    ``slope_adapted``: least-squares slope d tau_FEI / d tau_add over the runs with tau_add > 0 (the
    thesis's check uses tau_add = 2..22 ms; expected 1).  ``slope_standard`` over the same runs, and
    ``slope_standard_low`` / ``slope_standard_high`` over the lower and upper half of the tau_add range
    (both including its midpoint): a standard form that flattens has ``high < low``."""
    rows = [p for p in points if p.get("tau_add_s") is not None
            and math.isfinite(p.get("tau_fei_adapted_s", math.nan))
            and math.isfinite(p.get("tau_fei_standard_s", math.nan))]
    if len(rows) < 3:
        return None
    rows.sort(key=lambda p: p["tau_add_s"])
    x = np.array([p["tau_add_s"] for p in rows])
    ad = np.array([p["tau_fei_adapted_s"] for p in rows])
    st = np.array([p["tau_fei_standard_s"] for p in rows])
    pos = x > 0 if np.count_nonzero(x > 0) >= 2 else np.ones(x.size, dtype=bool)
    mid = 0.5 * (x[0] + x[-1])
    lo, hi = x <= mid + 1e-12, x >= mid - 1e-12
    return {"tau_add_s": x.tolist(), "adapted_s": ad.tolist(), "standard_s": st.tolist(),
            "slope_adapted": _slope(x[pos], ad[pos]), "slope_standard": _slope(x[pos], st[pos]),
            "slope_standard_low": _slope(x[lo], st[lo]), "slope_standard_high": _slope(x[hi], st[hi]),
            "tau_add_range_s": [float(x[0]), float(x[-1])], "tau_add_mid_s": float(mid)}


# ------------------------------------------------------------------------------------------------
# runners


def _set_dotted(data: dict, key: str, value: Any) -> None:
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            raise ParameterError(f"{key}: {part} is not a section")
        node = nxt
    node[parts[-1]] = value


def point_tag(point: Mapping) -> str:
    """Directory name of a point's run: ``<last key part>=<value>`` joined by ``_``, e.g.
    ``command_delay_steps=3``."""
    return "_".join(f"{k.split('.')[-1]}={v}" for k, v in point.items())


class ScenarioPointRunner:
    """``run_point`` for a project scenario: the scenario with ``overrides`` and the point's dotted keys
    (e.g. ``sim_plant.command_delay_steps``, ``sim_plant.cascade.k_pp_per_s`` with
    ``sim_plant.cascade.preset: custom``), run in process (``backend="vrths"``,
    :func:`rths_ros.app.vrths.run_virtual`) or through the ROS graph (``backend="graph"``).

    Graph backend: every point is one :func:`rths_ros.runner.run_scenario` in ``out_dir/runs/<point>``
    (see :func:`point_tag`), always in lockstep mode with recording on (a FACE point must be
    reproducible, and the record is read back from the bag with
    :func:`rths_ros.analysis.run_analysis.record_from_bag`).  A run that fails or aborts is returned
    flagged ``aborted`` (with the reason) so that :func:`analyse` drops it; a run where the passivity
    controller intervened carries its nonzero ``f_d`` and is dropped as well.  Each run leases its own
    ROS domain id, so points can run in parallel."""

    def __init__(self, scenario: str, overrides: Mapping | None = None, backend: str = "vrths",
                 out_dir: str | Path | None = None):
        from rths_ros.app import scenario as scn
        if backend not in ("vrths", "graph"):
            raise ParameterError(f"backend: {backend!r} is not allowed; expected 'vrths' or 'graph'")
        if backend == "graph" and out_dir is None:
            raise ParameterError("out_dir: required for backend = graph")
        self.data = scn.load_data(scenario)
        for k, v in (overrides or {}).items():
            _set_dotted(self.data, k, v)
        if backend == "graph":
            _set_dotted(self.data, "loop.mode", "lockstep")
            _set_dotted(self.data, "recording.enabled", True)
        self.backend = backend
        self.out_dir = Path(out_dir).resolve() if out_dir is not None else None
        self.scenario(None)             # validate now

    def scenario(self, point: Mapping | None):
        from rths_ros.app import scenario as scn
        import copy
        data = copy.deepcopy(self.data)
        for k, v in (point or {}).items():
            _set_dotted(data, k, v)
        return scn.from_data(data)

    def __call__(self, point: Mapping) -> dict:
        s = self.scenario(point)
        if self.backend == "vrths":
            from rths_ros.app.vrths import run_virtual
            rec = run_virtual(s)
        else:
            rec = self._run_graph(s, point)
        rec = {k: v for k, v in rec.items() if not k.startswith("_")}
        rec["dt"] = s.loop.dt_s
        return rec

    def _run_graph(self, s, point: Mapping) -> dict:
        from rths_ros.analysis.run_analysis import record_from_bag
        from rths_ros.runner import RunError, run_scenario
        out = self.out_dir / "runs" / point_tag(point)
        empty = {"t": np.zeros(0), "z_cmd": np.zeros(0), "z_ach": np.zeros(0), "aborted": True}
        try:
            res = run_scenario(s, out, progress=False, log=lambda *_: None)
        except RunError as exc:
            return {**empty, "abort_reason": f"run failed to start: {exc}"}
        bag = out / "bag"
        if not bag.exists():
            return {**empty, "abort_reason": res.message or "no bag recorded"}
        try:
            rec, _, _ = record_from_bag(bag)
        except Exception as exc:  # noqa: BLE001 - an unreadable bag is a lost point, not a lost sweep
            return {**empty, "abort_reason": f"bag not readable: {exc}"}
        if res.code != 0:
            rec["aborted"] = True
            rec["abort_reason"] = rec.get("abort_reason") or res.message.splitlines()[0]
        rec.pop("missing_samples", None)
        rec["wall_s"] = res.wall_s
        return rec

    def reference(self, point: Mapping | None = None) -> dict:
        """The reference solution z^r of the contact test (thesis §4.4, pure simulation with an ideal
        transfer system) as a record (``z_cmd = z_ach = z^r``), for ``reference.source: runner``."""
        s = self.scenario(point)
        if s.numerical.model != "contact_1d":
            raise ParameterError(f"reference.source: 'runner' is not allowed for numerical.model = "
                                 f"{s.numerical.model!r}; only the contact_1d model has a reference solution")
        from rths_ros.core.models.contact1d.model import reference_solution
        dt = s.loop.dt_s
        ref = reference_solution(s.numerical.contact_1d, t_end_s=s.steps * dt)
        z = np.array(ref["z"], dtype=float)[: s.steps + 1]
        return {"t": np.arange(z.size) * dt, "z_cmd": z, "z_ach": z.copy(),
                "contact": np.array(ref["contact"], dtype=float)[: z.size], "dt": dt}


class DelayedCommandController(TrackingController):
    """Wraps a tracking controller and delays its desired displacement by ``n`` samples (tau_add of the
    building benchmark): the command path gets a pure extra delay, the feedback loop is unchanged."""

    def __init__(self, inner: TrackingController, n: int):
        super().__init__(inner.dt_s)
        self.inner, self.n = inner, int(n)
        self.reset()

    def reset(self) -> None:
        self.inner.reset()
        self._buf = [0.0] * (self.n + 1)
        self._i = 0

    def step(self, desired: float, measured: float) -> float:
        self._buf[self._i] = desired
        self._i = (self._i + 1) % (self.n + 1)
        return self.inner.step(self._buf[self._i], measured)


BUILDING_CONTROLLER_KEYS = ("kp", "ki_per_s", "lead_gain", "lead_zero_rad_s", "lead_pole_rad_s")


class BuildingPointRunner:
    """``run_point`` for the building benchmark (seed 000 §12.2) in process with
    :func:`rths_ros.core.models.building.structure.run_benchmark` and its reference controller.

    ``scenario``: ``case1``..``case4``, optionally with the ground motion, ``case1/kobe``.  Keys of a
    point or of the overrides: ``tau_add_s`` (extra delay of the desired displacement y1 before the
    controller, rounded to whole samples of 1/4096 s), the controller gains ``kp``, ``ki_per_s``,
    ``lead_*`` (:class:`rths_ros.core.models.building.tracking_controller.ReferenceControllerParams`), or any field of
    :class:`rths_ros.core.models.building.structure.BenchmarkParams`.  Record: ``z_cmd`` = y1 (numerical DoF 1, the
    desired actuator displacement), ``z_ach`` = x_m (measured actuator displacement); the thesis's
    floor-1 magnitude is q on ``z_cmd`` (the numerical substructure's response)."""

    def __init__(self, scenario: str = "case1", overrides: Mapping | None = None):
        head, _, quake = str(scenario).partition("/")
        if not head.startswith("case") or not head[4:].isdigit():
            raise ParameterError(f"scenario: {scenario!r} is not allowed with runner = building; expected "
                                 "'case1'..'case4' or 'case1/elcentro'")
        self.case = int(head[4:])
        self.earthquake = quake or "elcentro"
        self.overrides = dict(overrides or {})
        self._split({})                 # validate now

    def _split(self, point: Mapping):
        from rths_ros.core.models.building.structure import benchmark_params
        from rths_ros.core.models.building.tracking_controller import ReferenceController
        merged = {**self.overrides, **point}
        tau = float(merged.pop("tau_add_s", 0.0))
        gains = {k: merged.pop(k) for k in list(merged) if k in BUILDING_CONTROLLER_KEYS}
        params = benchmark_params(self.case, self.earthquake, **merged)
        if tau < 0:
            raise ParameterError(f"tau_add_s: {tau!r} is not allowed; expected >= 0 s")
        n = int(round(tau / params.dt_s))
        inner = ReferenceController(dt_s=params.dt_s, **gains)
        ctrl = inner if n == 0 else DelayedCommandController(inner, n)
        return params, ctrl, n

    def __call__(self, point: Mapping) -> dict:
        from rths_ros.core.models.building.structure import run_benchmark
        params, ctrl, n = self._split(point)
        rec = run_benchmark(controller=ctrl, params=params, evaluate=False)
        return {"t": rec["t"], "z_cmd": rec["y"][:, 0], "z_ach": rec["x_m"], "x_r1": rec["x_r"][:, 0],
                "aborted": bool(rec["aborted"]), "abort_reason": rec["abort_reason"], "dt": params.dt_s,
                "delay_samples": n}

    def reference(self, point: Mapping | None = None) -> dict:
        """The reference structure's floor-1 response x_r1 (``z_cmd = z_ach = x_r1``)."""
        rec = self({})
        return {"t": rec["t"], "z_cmd": rec["x_r1"], "z_ach": rec["x_r1"].copy(), "dt": rec["dt"]}


def make_runner(spec: SweepSpec, out_dir: str | Path | None = None) -> Callable[[dict], dict]:
    """The ``run_point`` callable named by the sweep's ``runner``."""
    if spec.runner == "linear_vrths":
        from rths_ros.core.methods.linear_vrths import LinearPointRunner
        return LinearPointRunner(spec.scenario, **dict(spec.overrides))
    if spec.runner == "building":
        return BuildingPointRunner(spec.scenario, spec.overrides)
    return ScenarioPointRunner(spec.scenario, spec.overrides, backend=spec.runner, out_dir=out_dir)


def _reference_q(spec: SweepSpec, run_point: Any, out_dir: Path | None) -> float | None:
    if spec.reference.source == "value":
        return spec.reference.value
    if spec.reference.source == "runner":
        ref = getattr(run_point, "reference", None)
        if ref is None:
            raise ParameterError(f"reference.source: 'runner' is not allowed with runner = {spec.runner}; "
                                 "this runner has no reference solution (use source: value)")
        rec = ref({spec.vary.parameter: spec.vary.values[0]})
        if out_dir is not None:
            _save_record(out_dir / "points" / "reference.npz", rec)
        return float(q_value(rec, spec.q))
    return None


# ------------------------------------------------------------------------------------------------
# running, saving, re-analysis


def _save_record(path: Path, rec: Mapping) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for k, v in rec.items():
        a = np.asarray(v)
        if a.dtype == object:
            continue
        arrays[k] = a
    np.savez_compressed(path, **arrays)


def _load_record(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        out = {}
        for k in z.files:
            a = z[k]
            out[k] = a.item() if a.ndim == 0 else a
    return out


def _call(run_point, point):
    return run_point(point)


def open_cluster(address: str):
    """(client, cluster) of a Dask distributed cluster.  ``local:N`` starts a LocalCluster of N worker
    processes (one thread each, on 127.0.0.1, no dashboard) that is closed with the client; any other
    value is the address of a running scheduler (e.g. ``tcp://host:8786``), whose cluster is left running."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:    # pragma: no cover - the packages are in requirements/runtime.txt
        raise ParameterError("cluster: the packages dask and distributed are not installed "
                             "(pip install -r requirements/runtime.txt)") from None
    address = str(address).strip()
    if address.startswith("local:"):
        n = address[len("local:"):]
        if not n.isdigit() or not 1 <= int(n) <= 256:
            raise ParameterError(f"cluster: {address!r} is not allowed; expected local:N with N in 1..256")
        cluster = LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None)
        return Client(cluster), cluster
    if not address:
        raise ParameterError("cluster: '' is not allowed; expected local:N or a scheduler address")
    return Client(address), None


def run_sweep(spec: SweepSpec, out_dir: str | Path, run_point: Callable[[dict], dict] | None = None,
              workers: int = 1, progress: Callable[[str], None] | None = print, raw: Mapping | None = None,
              cluster: str | None = None) -> dict:
    """Run every point, save them, analyse, write the outputs.

    Points run one after the other (``workers = 1``), in a ``ProcessPoolExecutor`` of ``workers``
    processes, or, with ``cluster`` (``local:N`` or a scheduler address), as tasks of a Dask distributed
    cluster (:func:`open_cluster`).  ``run_point`` must be picklable for the last two; with a remote
    cluster the output directory must be reachable by the workers under the same path (graph runs write
    their bags there)."""
    out = Path(out_dir)
    (out / "points").mkdir(parents=True, exist_ok=True)
    (out / "sweep.yaml").write_text(yaml.safe_dump(dict(raw) if raw is not None else _spec_data(spec),
                                                   sort_keys=False))
    run_point = run_point if run_point is not None else make_runner(spec, out)
    values = list(spec.vary.values)
    points = [{spec.vary.parameter: _plain_number(v)} for v in values]
    records: list[Any] = [None] * len(points)
    t0 = time.monotonic()
    done = 0

    def report() -> None:
        if progress is not None:
            n = len(points)
            bar = "#" * (30 * done // n) + "-" * (30 - 30 * done // n)
            progress(f"  FACE {spec.name}: [{bar}] {done}/{n} points done  {time.monotonic() - t0:6.1f} s")

    if cluster:
        from distributed import as_completed as dask_completed
        client, local = open_cluster(cluster)
        try:
            futs = {client.submit(_call, run_point, pt, pure=False, key=f"face-{spec.name}-{i}-{time.time_ns()}"): i
                    for i, pt in enumerate(points)}
            for fut in dask_completed(list(futs)):
                i = futs[fut]
                records[i] = fut.result()
                _save_record(out / "points" / f"point_{i:03d}.npz", records[i])
                done += 1
                report()
        finally:
            client.close()
            if local is not None:
                local.close()
    elif workers > 1:
        with cf.ProcessPoolExecutor(max_workers=workers) as pool:
            futs = {pool.submit(_call, run_point, pt): i for i, pt in enumerate(points)}
            for fut in cf.as_completed(futs):
                i = futs[fut]
                records[i] = fut.result()
                _save_record(out / "points" / f"point_{i:03d}.npz", records[i])
                done += 1
                report()
    else:
        for i, pt in enumerate(points):
            records[i] = run_point(pt)
            _save_record(out / "points" / f"point_{i:03d}.npz", records[i])
            done += 1
            report()
    (out / "points" / "index.json").write_text(json.dumps(
        {"parameter": spec.vary.parameter, "values": values,
         "files": [f"point_{i:03d}.npz" for i in range(len(points))]}, indent=1))
    q_ref = _reference_q(spec, run_point, out)
    result = analyse(spec, records, values, q_ref)
    write_outputs(result, out, spec)
    return result


def _plain_number(v: float):
    return int(v) if float(v).is_integer() else float(v)


def _spec_data(spec: SweepSpec) -> dict:
    d = to_dict(spec)
    d["overrides"] = dict(spec.overrides)
    return d


def reanalyse(out_dir: str | Path, spec: SweepSpec | None = None) -> dict:
    """Analyse saved points again (no run).  ``spec`` may change e, q, fit or reference settings; its
    ``vary`` must match the saved points.  Default: the sweep.yaml saved with the points."""
    out = Path(out_dir)
    index = json.loads((out / "points" / "index.json").read_text())
    if spec is None:
        spec, _ = load_sweep(out / "sweep.yaml")
    if spec.vary.parameter != index["parameter"] or [float(v) for v in spec.vary.values] != \
            [float(v) for v in index["values"]]:
        raise ParameterError(f"vary: {spec.vary.parameter} = {list(spec.vary.values)} does not match the saved "
                             f"points ({index['parameter']} = {index['values']})")
    records = [_load_record(out / "points" / f) for f in index["files"]]
    q_ref = None
    if spec.reference.source == "value":
        q_ref = spec.reference.value
    elif spec.reference.source == "runner":
        ref_path = out / "points" / "reference.npz"
        if not ref_path.exists():
            raise ParameterError(f"reference.source: 'runner' but {ref_path.name} was not saved with the points")
        q_ref = float(q_value(_load_record(ref_path), spec.q))
    result = analyse(spec, records, index["values"], q_ref)
    write_outputs(result, out, spec)
    return result


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


def _json_safe(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items() if not k.startswith("_")}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(float(x)) else None
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def write_outputs(result: Mapping, out_dir: str | Path, spec: SweepSpec | None = None) -> dict:
    """face.json, convergence.png, report.md and, for a sweep of an added delay, tau_fei.png
    (:func:`plot_tau_fei`) in ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "face.json").write_text(json.dumps(_json_safe(dict(result)), indent=1))
    png = plot_convergence(result, out / "convergence.png")
    lines = [f"# FACE: {result['name']}", ""]
    if result.get("description"):
        lines += [result["description"], ""]
    lines += [f"Degraded parameter `{result['parameter']}`; e = `{result['e_measure']}`, q = `{result['q_measure']}`; "
              f"h: degree {result['fit']['degree']}{' in dB' if result['fit']['db'] else ''}"
              f"{', h′(0) = 0' if result['fit']['zero_slope_at_zero'] else ''}"
              f"{', constant' if result['fit']['constant'] else ''}; {result['n_used']} points used.", "",
              "| quantity | value |", "|---|---|",
              f"| e_min | {result['e_min']:.5g} |", f"| q_min | {result['q_min']:.5g} |",
              f"| q_pred = h(0) | {result['q_pred']:.5g} |",
              f"| error estimate \\|q_min − q_pred\\| / q_pred | {_pct(result['error_estimate'])} |"]
    if result.get("q_ref") is not None:
        lines += [f"| reference q̂ | {result['q_ref']:.5g} |",
                  f"| prediction error \\|q_pred − q̂\\| / q̂ | {_pct(result['prediction_error'])} |",
                  f"| test error \\|q_min − q̂\\| / q̂ | {_pct(result['test_error'])} |"]
    lines += [f"| constant curvature on [0, e_max] | {result['fit']['constant_curvature']} |",
              f"| magnitude gradient check | {result['fit']['gradient_check']} |", "",
              "## Points", "", "| # | parameter | e | q | used |", "|---|---|---|---|---|"]
    for p in result["points"]:
        lines.append(f"| {p['index']} | {p['parameter']:g} | {p['e']:.5g} | {p['q']:.5g} | "
                     f"{'yes' if p['used'] else 'no: ' + p['reason']} |")
    if result.get("warnings"):
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in result["warnings"]]
    lines += ["", f"![convergence plot]({png.name})", ""]
    paths = {"json": out / "face.json", "png": png, "report": out / "report.md"}
    tf = result.get("tau_fei")
    if tf:
        paths["tau_fei_png"] = plot_tau_fei(result, out / "tau_fei.png")
        fmt = lambda v: "–" if v is None else f"{v:.3f}"     # noqa: E731
        lines += ["## Equivalent delay against the added delay (§11.3.1)", "",
                  "| form | slope d τ_FEI / d τ_add | slope, lower half | slope, upper half |", "|---|---|---|---|",
                  f"| adapted | {fmt(tf['slope_adapted'])} | | |",
                  f"| standard | {fmt(tf['slope_standard'])} | {fmt(tf['slope_standard_low'])} | "
                  f"{fmt(tf['slope_standard_high'])} |", "",
                  f"Slopes over the runs with τ_add > 0; halves split at τ_add = {1e3 * tf['tau_add_mid_s']:.4g} ms.",
                  "", "![tau_FEI against tau_add](tau_fei.png)", ""]
    elif (out / "tau_fei.png").exists():
        (out / "tau_fei.png").unlink()          # left from an earlier analysis of another sweep
    (out / "report.md").write_text("\n".join(lines))
    return paths


def main(argv: list[str] | None = None, prog: str = "face") -> int:
    """``python -m rths_ros.analysis.face SWEEP.yaml --out DIR [--workers N] [--reanalyse] [--cluster ADDRESS]``
    (also ``rths face``)."""
    import argparse
    ap = argparse.ArgumentParser(prog=prog, description="FACE fidelity assessment sweep")
    ap.add_argument("sweep", help="sweep YAML (with --reanalyse: optional, default OUT/sweep.yaml)", nargs="?")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parallel processes (default: the number of cores)")
    ap.add_argument("--reanalyse", action="store_true", help="analyse the saved points again, do not run")
    ap.add_argument("--cluster", default=None, metavar="ADDRESS",
                    help="run the points on a Dask distributed cluster: local:N (N local worker processes) or a "
                         "scheduler address such as tcp://host:8786")
    a = ap.parse_args(argv)
    try:
        if a.reanalyse:
            spec = load_sweep(a.sweep)[0] if a.sweep else None
            res = reanalyse(a.out, spec)
        else:
            if not a.sweep:
                ap.error("a sweep file is required unless --reanalyse")
            spec, raw = load_sweep(a.sweep)
            res = run_sweep(spec, a.out, workers=max(1, a.workers), raw=raw, cluster=a.cluster)
    except ParameterError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    print(f"q_min = {res['q_min']:.5g}, q_pred = {res['q_pred']:.5g}, error estimate "
          f"{_pct(res['error_estimate'])}" + (f", prediction error {_pct(res['prediction_error'])}"
                                              if res.get("prediction_error") is not None else ""))
    tf = res.get("tau_fei")
    if tf and tf["slope_adapted"] is not None and tf["slope_standard"] is not None:
        print(f"tau_FEI against tau_add: slope {tf['slope_adapted']:.3f} (adapted), {tf['slope_standard']:.3f} "
              f"(standard)")
    for w in res["warnings"]:
        print(f"warning: {w}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
