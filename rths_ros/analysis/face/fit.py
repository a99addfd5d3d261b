"""FACE fit: ``q = h(e)`` in the explorable range, extrapolated to ``e = 0`` (Insam 2022, ch. 11-13)::

    q_pred = h(0)                           predicted reference (no reference needed)
    error estimate   = |q_min - q_pred| / |q_pred|        q_min = q of the usable run with the smallest e
                                                          (also when fit.parameter_range keeps it out of h)
    prediction error = |q_pred - q_ref| / |q_ref|         (only when a reference q_ref is known)
    test error       = |q_min  - q_ref| / |q_ref|

``h`` is a polynomial fitted by least squares, optionally to 20 log10(q) ("db", magnitude), with
``h'(0) = 0`` (frequency, §11.3.2), or constant (``h = q(e_min)``, so q_pred = q_min as the thesis
does when the points are flat near e_min); its degree must be below the number of points
used.  The checks of §11.3.2 are reported: constant curvature sign on [0, e_max] and, for the
magnitude, |h'(0)| <= |h'(e_min)|.  Runs flagged unstable or with NPC activity (nonzero ``f_d``) are
dropped, as the thesis requires.  Fewer than 4 usable points is an error, more than 20 a warning.

When the sweep varies an added delay, every run's tau_FEI is also computed in both forms and summarised
against tau_add (:func:`tau_fei_summary`; §11.3.1: the adapted form follows slope 1, the standard form
flattens).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rths_ros.analysis.face.measures import added_delay_s, e_value, q_value, tau_fei_pair
from rths_ros.analysis.face.spec import MAX_USEFUL_POINTS, MIN_POINTS, FitSpec, SweepSpec, VerdictSpec
from rths_ros.params import ParameterError


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



_OUT_OF_RANGE, _ABOVE_E_MAX = "outside fit.parameter_range", "e > fit.e_max"


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


def point_row(spec: SweepSpec, index: int, rec: Mapping, value: float) -> dict:
    """The analysis of one point's record (e, q, the delays, whether the fit uses it and why not): what
    :func:`analyse_rows` needs of it, so that a sweep's worker can analyse its points where it ran them and send
    this row instead of the record.  ``_abort_reason`` (the run's, for the message of too few usable points) is
    taken out by :func:`analyse_rows`."""
    ok, why = _usable(rec)
    row = {"index": int(index), "parameter": float(value), "e": math.nan, "q": math.nan, "used": False, "reason": why,
           "tau_add_s": None, "tau_fei_adapted_s": math.nan, "tau_fei_standard_s": math.nan,
           "_abort_reason": str(rec.get("abort_reason", "") or "")}
    if not ok:
        return row
    pr = spec.fit.parameter_range
    row["tau_add_s"] = added_delay_s(rec, spec.vary.parameter, value)
    try:
        row["tau_fei_adapted_s"], row["tau_fei_standard_s"] = tau_fei_pair(rec, spec.e)
    except ParameterError:
        pass                    # the record ended before the e window; reported below with e
    try:
        row["e"] = float(e_value(rec, spec.e, value))
        row["q"] = float(q_value(rec, spec.q))
    except ParameterError as exc:      # e.g. an analysis window beyond a record that ended early
        row["reason"] = f"e or q not computable: {exc}"
        return row
    if not (math.isfinite(row["e"]) and math.isfinite(row["q"])):
        row["reason"] = "e or q not finite"
    elif pr and not pr[0] <= value <= pr[1]:
        row["reason"] = _OUT_OF_RANGE
    elif spec.fit.e_max > 0 and row["e"] > spec.fit.e_max:
        row["reason"] = _ABOVE_E_MAX
    else:
        row["used"] = True
    return row


def analyse(spec: SweepSpec, records: list[Mapping], values: list[float], q_ref: float | None = None,
            setup: Mapping | None = None) -> dict:
    """e, q of every record, the fit, the FACE numbers and the verdict (a JSON-ready dict); ``setup``: how the
    points ran (plant, mode; from the runner), for the verdict's wording."""
    return analyse_rows(spec, [point_row(spec, i, rec, v) for i, (rec, v) in enumerate(zip(records, values))],
                        q_ref, setup)


def analyse_rows(spec: SweepSpec, rows: list[dict], q_ref: float | None = None, setup: Mapping | None = None) -> dict:
    """:func:`analyse` from the points' rows (:func:`point_row`, in the order of the sweep's values)."""
    aborts = {r["index"]: r.pop("_abort_reason", "") for r in rows}
    points = rows
    used = [p for p in points if p["used"]]
    warnings = []
    if len(used) < MIN_POINTS:
        dropped = "; ".join(f"{p['parameter']:g}: {p['reason']}" + (f" ({r})" if (r := aborts.get(p["index"]))
                                                                    else "") for p in points if not p["used"])
        raise ParameterError(f"vary.values: only {len(used)} usable points (unstable, NPC or excluded runs dropped); "
                             f"expected at least {MIN_POINTS}" + (f"; dropped: {dropped}" if dropped else ""))
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
    # q_min is the test itself: the run with the smallest e of all usable runs, also when fit.parameter_range
    # leaves it out of h (§12.2 fits tau_add = 1..6 ms and compares with the run without added delay)
    tested = [p for p in points if p["used"] or p["reason"] in (_OUT_OF_RANGE, _ABOVE_E_MAX)]
    best = min(tested, key=lambda p: p["e"])
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
    out["setup"] = dict(setup or {})
    out["verdict"] = verdict(out, spec.verdict, out["setup"])
    out["_fit"] = fr
    return out


def verdict(result: Mapping, thresholds: VerdictSpec, setup: Mapping | None = None) -> dict:
    """The fidelity verdict of an analysed sweep with the thresholds it used.

    Acceptable when the error estimate |q_min - q_pred| / |q_pred| (the undegraded test against the extrapolation
    q(0) = h(0)) is at most ``max_error_estimate``, where a reference is known the prediction error
    |q_pred - q_ref| / |q_ref| is at most ``max_prediction_error``, and (``monotonic_e``) e rises or falls
    monotonically with the degraded parameter over the used points.  ``text`` is the one-line statement, e.g.
    ``rig fidelity acceptable (plant ros2_control, realtime): error estimate |q_min - q(0)|/|q(0)| = 4.1 % <=
    threshold 10 % (q(0) = 6.84, q_min = 6.56) ...``; ``checks`` lists each check with its value and threshold."""
    setup = dict(setup or {})
    plant = setup.get("plant")
    what = "rig" if plant in ("hardware", "ros2_control") else ("twin" if plant == "sim" else "test")
    where = f" (plant {plant}, {setup.get('mode')})" if plant else ""
    checks = []
    ee = result.get("error_estimate")
    checks.append({"name": "error estimate |q_min - q(0)| / |q(0)|", "value": ee,
                   "threshold": thresholds.max_error_estimate,
                   "passed": bool(ee is not None and math.isfinite(ee) and ee <= thresholds.max_error_estimate)})
    pe = result.get("prediction_error")
    if pe is not None:
        checks.append({"name": "prediction error |q(0) - q_ref| / |q_ref|", "value": pe,
                       "threshold": thresholds.max_prediction_error,
                       "passed": bool(math.isfinite(pe) and pe <= thresholds.max_prediction_error)})
    if thresholds.monotonic_e:
        used = sorted((p for p in result.get("points", []) if p.get("used")), key=lambda p: p["parameter"])
        de = np.diff([p["e"] for p in used])
        mono = bool(de.size == 0 or np.all(de > 0) or np.all(de < 0))
        checks.append({"name": f"e monotonic in {result.get('parameter', 'the parameter')}", "value": mono,
                       "threshold": None, "passed": mono})
    ok = all(c["passed"] for c in checks)

    def pct(x):
        return "n/a" if x is None or not math.isfinite(x) else f"{100 * x:.1f} %"
    parts = [f"{c['name']} = {pct(c['value'])} {'<=' if c['passed'] else '>'} threshold {pct(c['threshold'])}"
             if c["threshold"] is not None else f"{c['name']}: {'yes' if c['value'] else 'no'}" for c in checks]
    text = (f"{what} fidelity {'acceptable' if ok else 'NOT acceptable'}{where}: " + "; ".join(parts)
            + f" (extrapolated q(0) = {result['q_pred']:.5g}, test q_min = {result['q_min']:.5g}"
            + (f", reference q_ref = {result['q_ref']:.5g}" if result.get("q_ref") is not None else "") + ")")
    return {"acceptable": ok, "text": text, "checks": checks,
            "thresholds": {"max_error_estimate": thresholds.max_error_estimate,
                           "max_prediction_error": thresholds.max_prediction_error,
                           "monotonic_e": thresholds.monotonic_e}}


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
