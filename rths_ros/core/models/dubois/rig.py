"""The virtual substructured damper rig of du Bois et al. 2010 §4 (one stepped-sine test point per call).

Per 1 kHz tick ``k`` (pseudo-code of §4.4-4.5):

1. read the load cell ``f_p`` (physical damper force + noise) and the LVDT ``x_p`` (+ noise);
   ``v_p`` is the backward difference of ``x_p``;
2. ``f = gamma f_p + (1 - gamma) f_n`` (eq. 25), ``f_n`` the damper model driven by the numerical ``x2``;
3. advance the modal substructure one step with ``[0, -f]`` and the base motion ``x0(t)`` (eq. 15);
4. ``r`` = transfer-dynamics cancellation of ``s_x x2`` (inverse process model with forward prediction,
   :class:`rths_ros.core.methods.tdc.TransferDynamicsCancellation`, which also ramps the switches and
   watches the power discrepancy ``f (v_num - v_p)``);
5. the actuator moves (``x = G r - (1 - G) f / k_load``) and the physical damper follows it.

"No cancellation" is the identity process model (G1, ``K = 1``, ``tau_p = 0``: ``r = x2``), "prediction
only" the identity with a delay (``r = x2(t + tau)`` from the predictor).

:func:`open_loop_plant` is the transfer system alone as a ``simulate(u, dt) -> y`` plant for
:func:`rths_ros.core.sysid.qualification.stepped_sine`, optionally behind an inverse process model fed
with the known demand shifted by the model's delay (the verification of §3.2).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from rths_ros.core.methods.prediction import PredictorParams
from rths_ros.core.methods.tdc import (
    InverseModelFeedforward,
    ProcessModelParams,
    SwitchParams,
    TDCParams,
    TransferDynamicsCancellation,
    TripParams,
)
from rths_ros.core.models.dubois.actuator import Actuator
from rths_ros.core.models.dubois.damper import HydraulicDamper
from rths_ros.core.models.dubois.modal import ModalSubstructure
from rths_ros.core.models.dubois.params import HydraulicDamperParams, RigParams

__all__ = ["IDENTITY", "prediction_model", "SPECIMENS", "specimen_params", "shift_sinusoid", "open_loop_plant",
           "RunRecord", "base_motion", "run_substructured"]

#: the process model whose inverse is the identity (r = x): no cancellation
IDENTITY = ProcessModelParams(kind="G1", gain=1.0, tau_p_s=0.0, delay_s=0.0)

#: rig configurations of §2.2: no damper, the standard orifice, a larger orifice (coefficients / 4)
SPECIMENS = ("empty", "standard", "large_orifice")


def prediction_model(horizon_s: float) -> ProcessModelParams:
    """Forward prediction alone: the identity with a delay (``r = x(t + horizon)``)."""
    return ProcessModelParams(kind="G1D", gain=1.0, tau_p_s=0.0, delay_s=horizon_s)


def specimen_params(p: HydraulicDamperParams, specimen: str) -> HydraulicDamperParams | None:
    if specimen not in SPECIMENS:
        raise ValueError(f"specimen must be one of {SPECIMENS}")
    if specimen == "empty":
        return None
    if specimen == "large_orifice":
        return replace(p, c1_pa_s_per_m3=p.c1_pa_s_per_m3 / 4.0, c2_pa_s2_per_m6=p.c2_pa_s2_per_m6 / 4.0)
    return p


def shift_sinusoid(u, dt: float, tau_s: float) -> np.ndarray:
    """``u(t + tau)`` for a sampled pure sinusoid ``u`` (the known demand of §3.2), exact.

    The frequency follows from ``u[n+1] + u[n-1] = 2 cos(w dt) u[n]`` (least squares); then
    ``u(t + tau) = u[n] cos(w tau) + (u[n+1] - u[n] cos(w dt)) sin(w tau) / sin(w dt)``.
    """
    u = np.asarray(u, dtype=np.float64)
    if tau_s == 0.0 or u.size < 3:
        return u.copy()
    mid = u[1:-1]
    den = 2.0 * float(mid @ mid)
    c = float(mid @ (u[2:] + u[:-2])) / den if den > 0.0 else 1.0
    c = min(max(c, -1.0 + 1e-15), 1.0 - 1e-15)
    wdt = math.acos(c)
    u_next = np.empty_like(u)
    u_next[:-1] = u[1:]
    u_next[-1] = 2.0 * c * u[-1] - u[-2]
    wt = wdt * tau_s / dt
    return u * math.cos(wt) + (u_next - u * c) * math.sin(wt) / math.sin(wdt)


def open_loop_plant(rig: RigParams, specimen: str = "standard", model: ProcessModelParams | None = None,
                    seed: int = 0, noise: bool = True):
    """``simulate(u, dt) -> y``: demand -> measured LVDT displacement with the specimen mounted.

    With ``model``, the demand is the known ``u`` shifted by the model's delay and passed through the
    delay-free inverse of the model (eqs. 4-8 with ``tau_d = 0`` on the shifted signal).
    """
    dp = specimen_params(rig.damper, specimen)

    def simulate(u, dt):
        u = np.asarray(u, dtype=np.float64)
        if model is not None:
            inv = InverseModelFeedforward(replace(model, kind="G1" if model.order == 1 else "G2", delay_s=0.0),
                                          None, dt)
            xs = shift_sinusoid(u, dt, model.effective_delay_s)
            u = np.array([inv.step(v) for v in xs])
        act = Actuator(rig.actuator, dt)
        damper = HydraulicDamper(dp, dt) if dp is not None else None
        y = np.empty_like(u)
        f = 0.0
        for k, r in enumerate(u.tolist()):
            x = act.step(r, f)
            if damper is not None:
                f = damper.step(x)
            y[k] = x
        if noise and rig.actuator.noise_x_m > 0.0:
            y += np.random.default_rng(seed).normal(0.0, rig.actuator.noise_x_m, y.size)
        return y
    return simulate


@dataclass
class RunRecord:
    """Signals of one substructured test point (arrays of one sample per tick)."""

    t: np.ndarray
    x0: np.ndarray
    x2_num: np.ndarray
    x2_phys: np.ndarray       # measured (LVDT with noise)
    x2_phys_true: np.ndarray
    v2_num: np.ndarray
    f_phys: np.ndarray        # measured (load cell with noise)
    f_model: np.ndarray
    force: np.ndarray         # fed back, eq. (25)
    demand: np.ndarray
    gamma: np.ndarray
    tripped: bool
    trip_time_s: float
    diverged: bool
    trip_peak_w2: float       # largest low-passed squared power discrepancy seen


def base_motion(amplitude_m: float, freq_hz: float, ramp_s: float):
    """``t -> (x0, x0', x0'')`` of ``x0 = A e(t) sin(2 pi f t)`` with the smooth start
    ``e(t) = (1 - cos(pi t / ramp_s)) / 2`` for ``t < ramp_s``, then 1."""
    w = 2.0 * math.pi * freq_hz

    def base(t):
        sn, cs = math.sin(w * t), math.cos(w * t)
        if t >= ramp_s or ramp_s <= 0.0:
            return amplitude_m * sn, amplitude_m * w * cs, -amplitude_m * w * w * sn
        a = math.pi / ramp_s
        e, de, dde = 0.5 * (1.0 - math.cos(a * t)), 0.5 * a * math.sin(a * t), 0.5 * a * a * math.cos(a * t)
        return (amplitude_m * e * sn, amplitude_m * (de * sn + e * w * cs),
                amplitude_m * (dde * sn + 2.0 * de * w * cs - e * w * w * sn))
    return base


def run_substructured(rig: RigParams, model: ProcessModelParams, predictor: PredictorParams, amplitude_m: float,
                      freq_hz: float, duration_s: float, switches: SwitchParams | None = None,
                      trip: TripParams | None = None, seed: int = 0, limit_m: float = 0.05,
                      ramp_s: float = 1.0) -> RunRecord:
    """Substructured test with the base excitation ``x0 = A e(t) sin(2 pi f t)`` for ``duration_s``.

    ``e(t) = (1 - cos(pi t / ramp_s)) / 2`` for ``t < ramp_s``, then 1 (a smooth start: an abrupt sine
    would kick the lightly damped modes).  The run stops early (``diverged``) when the demand or a
    displacement exceeds ``limit_m``.
    """
    dt = rig.dt_s
    n = int(round(duration_s / dt))
    sub = ModalSubstructure.from_chain(rig.chain, dt)
    act = Actuator(rig.actuator, dt)
    phys = HydraulicDamper(rig.damper, dt)
    sim = HydraulicDamper(rig.damper, dt)
    tdc = TransferDynamicsCancellation(TDCParams(model=model, predictor=predictor, dt_s=dt,
                                                 switches=switches or SwitchParams(),
                                                 trip=trip or TripParams(enabled=False)))
    rng = np.random.default_rng(seed)
    nx = (rng.normal(0.0, rig.actuator.noise_x_m, n) if rig.actuator.noise_x_m > 0 else np.zeros(n)).tolist()
    nf = (rng.normal(0.0, rig.actuator.noise_f_n, n) if rig.actuator.noise_f_n > 0 else np.zeros(n)).tolist()
    o = {k: np.zeros(n) for k in ("x0", "x2n", "x2p", "x2t", "v2n", "fp", "fn", "f", "r", "g")}

    base = base_motion(amplitude_m, freq_hz, ramp_s)
    trip_peak = 0.0
    x_meas_prev = 0.0
    f_true = 0.0
    x2n = v2n = 0.0
    diverged = False
    fext = np.zeros(2)
    k_end = n
    for k in range(n):
        x_meas = act.x + nx[k]
        v_p = (x_meas - x_meas_prev) / dt if k > 0 else 0.0
        x_meas_prev = x_meas
        f_p = f_true + nf[k]
        f_n = sim.force_n
        o["g"][k] = tdc.gamma.value
        f = tdc.coupling_force(f_p, f_n)
        o["x0"][k], o["x2n"][k], o["x2p"][k], o["x2t"][k], o["v2n"][k] = base(k * dt)[0], x2n, x_meas, act.x, v2n
        o["fp"][k], o["fn"][k], o["f"][k] = f_p, f_n, f
        fext[1] = -f
        sub.step(fext, base)
        x2n = float(sub.displacement(1)[0])
        v2n = float(sub.velocity(1)[0])
        sim.step(x2n)
        r = tdc.command(x2n, v2n, v_p)
        trip_peak = max(trip_peak, tdc.trip.filtered_w2)
        o["r"][k] = r
        x_act = act.step(r, f_true)
        f_true = phys.step(x_act)
        if not (abs(r) < limit_m and abs(x2n) < limit_m and abs(x_act) < limit_m):
            diverged = True
            k_end = k + 1
            break
    o = {k: v[:k_end] for k, v in o.items()}
    trip_t = tdc.trip.trip_step * dt if tdc.tripped else float("nan")
    return RunRecord(np.arange(k_end) * dt, o["x0"], o["x2n"], o["x2p"], o["x2t"], o["v2n"], o["fp"], o["fn"],
                     o["f"], o["r"], o["g"], tdc.tripped, trip_t, diverged, trip_peak)
