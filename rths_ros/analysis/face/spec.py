"""FACE sweep description: the sweep file, its sections and their validation (Insam 2022, ch. 11-13).

Sweep file (YAML, validated; a bad key or value raises ParameterError naming key, value and range)::

    name: system1_magnitude
    runner: linear_vrths          # linear_vrths | vrths | graph | building
    scenario: system1             # linear system name, or scenario name/path for vrths/graph
    mode: ''                      # graph: clock mode of every run ('' = lockstep); realtime for a rig
    plant: ''                     # graph: sim | hardware | ros2_control ('' = the scenario's)
    overrides: {vff: false}       # fixed settings of every point (flat keys; dotted keys for scenarios)
    vary: {parameter: tau_add_steps, values: [0, 1, 2, 3, 4, 5]}
    e: {measure: tau_fei_adapted, band_half_width_hz: 1.5}
    q: {measure: peak_amplitude, window_s: [0.0, 0.35]}
    fit: {degree: 2, db: true}
    reference: {source: runner}   # none | value | runner (analytic reference of the linear runner)
    verdict: {max_error_estimate: 0.1, max_prediction_error: 0.2}   # thresholds of the verdict
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rths_ros.families import registry
from rths_ros.params import ParameterError, build, param

E_MEASURES = ("tau_fei_adapted", "tau_fei_standard", "e_track_rel", "e_track_rel_max", "inverse_parameter",
              "parameter")
Q_MEASURES = ("peak_amplitude", "peak_frequency", "damping", "decay_rate", "pencil_frequency")
#: the generic runners, then the families that bring their own in-process runner (Family.face_runner)
RUNNERS = ("linear_vrths", "vrths", "graph") + tuple(n for n, f in registry.families().items() if f.face_runner)
MODES = ("", "lockstep", "realtime")
PLANTS = ("", "sim", "hardware", "ros2_control")
MIN_POINTS = 4
MAX_USEFUL_POINTS = 20


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
    detrend_degree: int = param(0, "", 0, 10, "peak_amplitude / peak_frequency: degree of the least-squares "
                                "polynomial removed from the windowed signal before the FFT (0 = only the mean, "
                                "as the thesis)")
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
class VerdictSpec:
    """Thresholds of the sweep's verdict (a choice of this package: the thesis gives no number).  The test is of
    acceptable fidelity when the error estimate |q_min - q_pred| / |q_pred| (how far the undegraded test lies from
    the extrapolation to e = 0) is at most ``max_error_estimate`` and, where a reference q_ref is known, the
    prediction error |q_pred - q_ref| / |q_ref| is at most ``max_prediction_error`` (else the extrapolation itself
    is not trusted), and (``monotonic_e``) e grows or falls monotonically with the degraded parameter."""

    max_error_estimate: float = param(0.1, "", 0.0, 100.0, "largest acceptable error estimate "
                                      "|q_min - q_pred| / |q_pred| (fraction, 0.1 = 10 %)")
    max_prediction_error: float = param(0.2, "", 0.0, 100.0, "largest acceptable prediction error "
                                        "|q_pred - q_ref| / |q_ref| where a reference is known (fraction)")
    monotonic_e: bool = param(True, "", doc="require e to change monotonically with the degraded parameter over "
                              "the used points (else the degradation is lost in the rig's own variation, e.g. its "
                              "timing jitter, and the extrapolation is not trusted)")


@dataclass(frozen=True)
class SweepSpec:
    name: str = param("face", "", doc="sweep name")
    description: str = param("", "", doc="one-line description")
    runner: str = param("linear_vrths", "", doc="how a point is run", choices=RUNNERS)
    scenario: str = param("spring_12_1_2", "", doc="linear system name, scenario name/path, or building case "
                          "('case1'..'case4', optionally 'case1/kobe')")
    mode: str = param("", "", doc="graph runner: clock mode of every run ('' = lockstep, reproducible; realtime "
                      "for a rig, whose points run one at a time)", choices=MODES)
    plant: str = param("", "", doc="graph runner: the plant of every run ('' = the scenario's; hardware or "
                       "ros2_control need mode: realtime)", choices=PLANTS)
    composed: bool = param(False, "", doc="graph runner: every node of a run in one process (realtime: no "
                           "inter-process hops on the fast path)")
    overrides: dict = param({}, "", doc="fixed settings of every point (key: value)")
    vary: VarySpec = param(VarySpec(), doc="degraded parameter and its values")
    e: EMeasureSpec = param(EMeasureSpec(), doc="error measure")
    q: QMeasureSpec = param(QMeasureSpec(), doc="result measure")
    fit: FitSpec = param(FitSpec(), doc="interpolation/extrapolation model h")
    reference: ReferenceSpec = param(ReferenceSpec(), doc="optional reference for prediction/test errors")
    verdict: VerdictSpec = param(VerdictSpec(), doc="thresholds of the fidelity verdict")

    def validate(self) -> None:
        if not isinstance(self.overrides, Mapping):
            raise ParameterError(f"overrides: {self.overrides!r} is not allowed; expected a mapping key: value")
        if self.vary.parameter in self.overrides:
            raise ParameterError(f"overrides.{self.vary.parameter}: is the varied parameter; remove it from overrides")
        for key, where in (("plant", "plant"), ("loop.mode", "mode")):
            if key in self.overrides and self.runner in ("vrths", "graph"):
                raise ParameterError(f"overrides.{key}: is not allowed; expected the sweep's own key {where}: (it "
                                     "decides how the points run)")
        if self.runner not in ("vrths", "graph"):
            for key in ("mode", "plant"):
                if getattr(self, key):
                    raise ParameterError(f"{key}: {getattr(self, key)!r} is not allowed with runner = "
                                         f"{self.runner!r}; expected '' (only scenario runners have a plant and a mode)")
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
