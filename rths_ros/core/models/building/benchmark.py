"""The vRTHS building benchmark run in process: one run (:func:`run_benchmark`) and the perturbed-plant
series (:func:`run_perturbed`) of the models of :mod:`rths_ros.core.models.building.structure`, the scaled ground motion
and the reference structure's response.

Timing of one sample k (t_k = k Δt), the order a ROS graph must follow::

    x_m,k, f_m,k   = sensors at t_k                     (ServoHydraulicPlant.measure / previous step)
    u_k            = controller.step(y1_k, x_m,k)        (TrackingController, with its converters)
    y1_{k+1}       = numerical.step(f_m,k, a_g,k)        (NumericalSubstructure; ZOH on f_m, a_g, or Newmark)
    x_m,k+1, f_m,k+1 = plant.step(u_k)                   (plant over [t_k, t_k+1), noise, force delay)

``x_m,k = x(t_k) + n_x,k``; the fed-back force is the specimen's force plus its noise delayed one sample,
``f_m,k = f_e(t_k-1) + n_f,k-1`` (benchmark specification, "Signals and hardware limits"; no converter, no
saturation), so ``y1_{k+1}`` depends on the specimen force up to ``t_k-1`` and the command ``y1_k`` on forces up
to ``t_k-2``.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from rths_ros.core.models.building.data import load_ground_motion
from rths_ros.core.models.building.kernels import _advance2, _response, _run_fused
from rths_ros.core.models.building.structure import (
    ActuatorCapacityExceeded,
    BenchmarkParams,
    NumericalSubstructure,
    ServoHydraulicPlant,
    benchmark_params,
    plant_values,
    structure_matrices,
    zoh,
)
from rths_ros.core.models.building.tracking_controller import ReferenceController, TrackingController
from rths_ros.params import ParameterError, build


def ground_motion(params: BenchmarkParams) -> np.ndarray:
    """Scaled ground acceleration at t_k = k Δt (linear interpolation of the record), k = 0..N-1."""
    t, a = load_ground_motion(params.earthquake)
    t_end = t[-1] if params.duration_s <= 0.0 else min(params.duration_s, t[-1])
    n = int(math.floor(t_end / params.dt_s + 1e-9)) + 1
    return params.ground_motion_scale * np.interp(np.arange(n) * params.dt_s, t, a)


def reference_response(params: BenchmarkParams, ag: np.ndarray) -> np.ndarray:
    """Floor displacements x_r (N x 3, m) of the reference structure (nominal specimen, no actuator)."""
    m = structure_matrices(params)
    ad, bd = zoh(m["A_r"], m["B_r"], params.dt_s)
    return _response(ad, bd, np.ascontiguousarray(ag, dtype=np.float64))


def run_benchmark(case: int | None = None, earthquake: str | None = None, controller: TrackingController | None = None,
                  perturbed_seed: int | None = None, params: BenchmarkParams | None = None,
                  evaluate: bool = True, convention: str = "paper", fast: bool | None = None,
                  **overrides) -> dict:
    """One benchmark run in process.

    ``controller``: any :class:`TrackingController` (reset before the run; default the reference
    controller with its converters).  ``perturbed_seed``: None = nominal plant, else the seeded perturbed
    plant.  ``params`` or keyword ``overrides`` change :class:`BenchmarkParams` (``case``/``earthquake``
    arguments, when not None, win; defaults case 1, El Centro).

    Returns the record: ``t``, ``a_g``, ``y`` (N x 3 numerical DoFs, y[:,0] = y1 command), ``u``
    (controller output), ``u_applied`` (what the plant applied: ``u``, the plant has no converter), ``x_m``,
    ``f_m`` (measured displacement; fed-back force, ``f_m[k] = f[k-1]`` plus noise), ``x``, ``f`` (true
    displacement and specimen force at t_k, before noise and delay), ``f_act`` (actuator force), ``x_r``
    (N x 3 reference), ``plant`` (the :class:`PlantValues`), ``aborted``, ``abort_reason``,
    ``limits`` and, with ``evaluate``, ``J`` (J1-J9 of :mod:`rths_ros.core.models.building.criteria`).

    ``fast``: None = use the compiled loop when the controller offers ``fast_coefficients()``, True =
    require it, False = always call the per-step objects (the result is the same)."""
    if params is None:
        params = benchmark_params(1 if case is None else case, "elcentro" if earthquake is None else earthquake,
                                  **overrides)
    else:
        if overrides:
            raise ParameterError("benchmark: give either params or keyword overrides, not both")
        params = build(BenchmarkParams, {**{f: getattr(params, f) for f in params.__dataclass_fields__},
                                         **({} if case is None else {"case": case}),
                                         **({} if earthquake is None else {"earthquake": earthquake})},
                       section="benchmark")
    ctrl = controller if controller is not None else ReferenceController(dt_s=params.dt_s)
    if abs(ctrl.dt_s - params.dt_s) > 1e-15:
        raise ParameterError(f"controller dt_s {ctrl.dt_s!r} differs from the benchmark's dt_s {params.dt_s!r}")
    ag = ground_motion(params)
    n = ag.size
    num = NumericalSubstructure(params)
    plant = ServoHydraulicPlant(params, plant_values(params, perturbed_seed))
    num.reset()
    plant.reset()
    ctrl.reset()
    coef = ctrl.fast_coefficients() if fast is not False else None
    if fast and coef is None:
        raise ParameterError("fast: the controller offers no fast_coefficients(); use fast=None or False")
    keys = ("u", "u_applied", "x_m", "f_m", "x", "xdot", "f_act")
    if coef is not None:
        p = params
        lim = np.array([p.force_capacity_n, 1.0 if p.abort_on_stroke_velocity else 0.0, p.stroke_m,
                        p.velocity_m_per_s])
        qc = ctrl.converter()
        conv = np.array([0.0, 1.0, 1.0] if qc is None else [1.0, float(qc[0]), float(qc[1])])
        yarr, carr, abort, fmax, smax, vmax = _run_fused(num.ad, num.bd, num.scheme, num.mats, num.load, num.ncoef,
                                                         plant.ad, plant.bd, plant._cfg,
                                                         np.zeros(p.force_delay_samples), ag,
                                                         plant.noise_sequence(n + 1),
                                                         np.asarray(coef, dtype=float), conv, lim)
        plant.max_abs_force_n, plant.max_abs_stroke_m, plant.max_abs_velocity_m_per_s = fmax, smax, vmax
        aborted = abort >= 0
        k = abort if aborted else n - 1
        reason = ""
        if aborted:
            u_k = carr[0, k]
            reason = (f"step {k}: command is not finite ({u_k!r})" if not math.isfinite(u_k) else
                      f"step {k}: actuator force, stroke or velocity beyond the limits (|F| max {fmax:.6g} N, "
                      f"|x| max {smax:.6g} m, |x'| max {vmax:.6g} m/s)")
        cols = dict(zip(keys, carr))
        y1_, y2_, y3_ = yarr[:, 0], yarr[:, 1], yarr[:, 2]
    else:
        cols = {key: [0.0] * n for key in keys}
        u_, ua_, xm_, fm_, x_, xd_, fa_ = (cols[key] for key in keys)
        y1_, y2_, y3_ = [0.0] * n, [0.0] * n, [0.0] * n
        aborted, reason = False, ""
        xm, fm = plant.measure()
        cstep, pstep, nstep = ctrl.step, plant.step, num.step
        ad_n, bd_n, xs = num.ad, num.bd, num.x
        zoh_map = num.scheme == 0
        z = plant.z
        agl = ag.tolist()
        k = 0
        for k in range(n):
            y1 = xs[0]
            y1_[k], y2_[k], y3_[k] = y1, xs[1], xs[2]
            xm_[k], fm_[k] = xm, fm
            x_[k], xd_[k], fa_[k] = z[3], z[4], z[2]
            u = cstep(y1, xm)
            u_[k] = u
            if zoh_map:
                _advance2(ad_n, bd_n, xs, agl[k], fm)      # NumericalSubstructure.step without the wrapper
            else:
                nstep(fm, agl[k])
            try:
                xm, fm = pstep(u)
            except ActuatorCapacityExceeded as exc:
                aborted, reason = True, f"step {k}: {exc}"
                ua_[k] = plant.u_applied
                break
            ua_[k] = plant.u_applied
    m = (k + 1) if aborted else n
    out = {key: np.asarray(v[:m], dtype=float) for key, v in cols.items()}
    out["y"] = np.column_stack([np.asarray(v[:m], dtype=float) for v in (y1_, y2_, y3_)])
    if params.specimen_force == "actuator":
        out["f"] = out["f_act"].copy()
    else:
        out["f"] = plant.values.k_e * out["x"] + plant.values.c_e * out["xdot"]
    out["t"] = np.arange(m) * params.dt_s
    out["a_g"] = ag[:m]
    out["x_r"] = reference_response(params, ag)[:m]
    out["plant"] = plant.values
    out["params"] = params
    out["aborted"] = aborted
    out["abort_reason"] = reason
    out["limits"] = {"max_abs_force_n": plant.max_abs_force_n, "max_abs_stroke_m": plant.max_abs_stroke_m,
                     "max_abs_velocity_m_per_s": plant.max_abs_velocity_m_per_s,
                     "stroke_exceeded": plant.max_abs_stroke_m > params.stroke_m,
                     "velocity_exceeded": plant.max_abs_velocity_m_per_s > params.velocity_m_per_s}
    if evaluate and not aborted:
        from rths_ros.core.models.building.criteria import evaluate_record
        out["J"] = evaluate_record(out, convention=convention)
    return out


def run_perturbed(case: int = 1, runs: int = 20, earthquake: str = "elcentro",
                  controller: TrackingController | Callable[[], TrackingController] | None = None,
                  seeds: list[int] | None = None, convention: str = "paper", **overrides) -> dict:
    """``runs`` perturbed-plant runs (seeds 1..runs unless given).  Returns per-run J1-J9 (``table``:
    runs x 9, NaN for aborted runs), their ``mean``, ``std`` (sample, ddof=1), ``min``, ``max`` over the
    completed runs, the ``seeds``, the drawn ``plants`` and the ``aborted`` runs' reasons."""
    from rths_ros.core.models.building.criteria import CRITERIA
    seeds = list(range(1, runs + 1)) if seeds is None else [int(s) for s in seeds]
    table = np.full((len(seeds), len(CRITERIA)), np.nan)
    plants, aborted = [], {}
    for i, seed in enumerate(seeds):
        ctrl = controller() if callable(controller) and not isinstance(controller, TrackingController) else controller
        rec = run_benchmark(case, earthquake, ctrl, perturbed_seed=seed, convention=convention, **overrides)
        plants.append(rec["plant"])
        if rec["aborted"]:
            aborted[seed] = rec["abort_reason"]
            continue
        table[i] = [rec["J"][c] for c in CRITERIA]
    ok = ~np.isnan(table[:, 0])
    done = table[ok]
    stat = {}
    for name, fn in (("mean", np.mean), ("min", np.min), ("max", np.max)):
        stat[name] = dict(zip(CRITERIA, fn(done, axis=0))) if done.size else {}
    stat["std"] = dict(zip(CRITERIA, np.std(done, axis=0, ddof=1))) if done.shape[0] > 1 else {}
    return {"case": case, "earthquake": earthquake, "seeds": seeds, "criteria": CRITERIA, "table": table,
            "plants": plants, "aborted": aborted, "convention": convention, **stat}
