"""Qualification of the transfer system of a scenario on its digital twin (du Bois et al. 2010 §2.2, §3.1).

The transfer system seen by the numerical part is the chain interface command ``z`` -> platform commander
(inverse kinematics) -> six legs under their cascade (the simulated plant, in process) -> measured leg lengths ->
forward kinematics -> achieved interface position ``z'``.  :func:`interface_plant` wraps that chain as the
``simulate(u, dt) -> y`` plant of :func:`rths_ros.core.sysid.qualification.stepped_sine`; :func:`qualify` runs the
stepped-sine test, a random-demand test (Welch PSD, du Bois et al. 2010: 8 Hamming segments) and fits the process models
G1, G1D, G2, G2D (:func:`rths_ros.core.sysid.qualification.fit_process_model`) that the transfer-dynamics
cancellation stage (``platform.commander.coupling.tdc``) inverts.

Only the contact test's chain is supported (``numerical.model`` contact_1d or contact_1d_newmark).

Choices (the source is silent): the test drives the first interface DoF (``z`` in the contact test) about the
home pose; the demanded velocity is the backward difference of the demand; each test point starts from home
with the plant reset (the noise seed of trial 0); the command shaping of the scenario is switched off unless
``with_coupling`` (then the result is the FRF of the compensated chain).  Amplitudes must keep the specimen
out of contact (the contact test's gap h0 is 10 mm), otherwise the FRF mixes the contact force in.  The
random test uses white Gaussian demand low-pass filtered at ``random_cutoff_hz`` (4th-order Butterworth,
seeded).

Model for the inversion (:func:`fit_unit_gain`).  The free fits of ``fit_process_model`` put the static gain
3-5 % above 1 on the contact test's twin: the P-PI cascade has a zero, so the measured gain rises to 1.01 at
0.5 Hz, and a first- or second-order model trades static gain for it.  A position servo with an integrating
plant has static gain exactly 1, and a static gain error in the inverse leaves a proportional tracking error
on the quasi-static part of the demand, so the model handed to the TDC stage has ``K`` fixed to unity
(``K = w0^2`` for G2).  The remaining parameters minimise ``sum w_i |H(j w_i) - G(j w_i)|^2`` with ``w_i`` the
power of the scenario's own demand around ``f_i`` (Welch PSD of ``z_cmd`` of the feedback-only virtual run,
integrated over the band each test frequency represents): this is the mean-square tracking error the model
error leaves on that demand, i.e. the "time-domain error" of du Bois et al. 2010 for the signal of the test.

Tuning in the loop (:func:`qualify` with ``tune=True``): every fitted model (free and unit
gain) is put into the TDC stage and every horizon of ``horizons_s`` into the prediction stage, and the
scenario is run in process (:func:`rths_ros.app.vrths.run_virtual`, the graph's core objects); the table of
``e_track_rel`` against the feedback-only run picks the model and the horizon.  A candidate whose command
leaves the platform limits (the run aborts) is reported as such and never picked.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import signal as sps

from rths_ros.app import factory
from rths_ros.app.scenario import Scenario
from rths_ros.core.methods.tdc import MODEL_KINDS
from rths_ros.core.sysid.qualification import (
    FitResult,
    SteppedSineParams,
    SteppedSineResult,
    fit_process_model,
    plot_frf,
    stepped_sine,
    welch_psd,
)
from rths_ros.families.registry import models as _registered_models

#: numerical models whose interface chain is the 1-D contact test's (one interface DoF z through the hexapod)
#: the models whose interface chain ``qualify`` supports (the model table's ``qualification`` flag)
CONTACT_MODELS = tuple(k for k, e in _registered_models().items() if e.qualification)

__all__ = ["without_coupling", "interface_plant", "rig_interface_plant", "random_test", "demand_weights",
           "fit_unit_gain", "qualify", "QualifyResult", "loop_error", "with_tdc_model", "with_prediction"]


def without_coupling(s: Scenario) -> Scenario:
    """The scenario with the command shaping stage off (the bare transfer system)."""
    c = s.platform.commander.coupling
    c = dataclasses.replace(c, prediction=dataclasses.replace(c.prediction, enabled=False),
                            tdc=dataclasses.replace(c.tdc, enabled=False))
    cmd = dataclasses.replace(s.platform.commander, coupling=c)
    return dataclasses.replace(s, platform=dataclasses.replace(s.platform, commander=cmd))


def interface_plant(s: Scenario):
    """``simulate(u, dt) -> y``: interface demand of DoF 0 -> achieved interface position of DoF 0 on the twin."""
    imap, commander = factory.build_platform(s)
    plant = factory.build_plant(s)
    n = imap.n
    q = np.zeros(n)
    qd = np.zeros(n)

    def simulate(u, dt):
        if abs(dt - s.loop.dt_s) > 1e-15:
            raise ValueError(f"dt = {dt!r} differs from loop.dt_s = {s.loop.dt_s!r}")
        u = np.asarray(u, dtype=np.float64)
        y = np.zeros_like(u)
        plant.reset(factory.plant_seed(s, 0))
        commander.reset()
        prev = 0.0
        for k in range(u.size):
            q[0] = u[k]
            qd[0] = (u[k] - prev) / dt
            prev = u[k]
            cmd = commander.command(q, qd)
            out = plant.step(cmd.length, cmd.feedforward_velocity)
            y[k] = imap.achieved(out.lengths, out.velocities)[0][0]
        return y

    return simulate


def rig_interface_plant(s: Scenario, rig, log=None):
    """``simulate(u, dt) -> y`` on a rig: the interface demand of DoF 0 -> achieved interface position of DoF 0,
    through the rig's own legs.

    ``rig`` is a leg-length client with ``play(lengths (n, 6)) -> {"lengths": (n, 6), "velocities": (n, 6), ...}``
    and ``read_lengths() -> (6,)`` (:class:`rths_ros.runtime.ros2_control_rig.Ros2ControlRig`: a ros2_control
    hexapod or its emulator).  The leg commands come from the demand as in the run (the platform commander's
    inverse kinematics and limits, :func:`rths_ros.app.factory.build_platform`; no velocity feedforward reaches a
    position interface), streamed at ``loop.dt_s``; ``y[k]`` is the forward kinematics of the newest joint state
    after command k went out, so the rig's command and feedback latency is part of the measured transfer system,
    as it is in the loop.  Before every test the legs are ramped to the demand's first pose (the safe-pose ramp's
    cosine profile at ``safety.ramp_speed_m_per_s``, then ``safety.hold_s``)."""
    from rths_ros.core.platform.safety import start_pose_ramp
    imap, commander = factory.build_platform(s)
    n_dof = imap.n
    q = np.zeros(n_dof)
    qd = np.zeros(n_dof)
    sent: list = []           # the last leg command sent (the next ramp starts there: the rig's speed check)

    def simulate(u, dt):
        if abs(dt - s.loop.dt_s) > 1e-15:
            raise ValueError(f"dt = {dt!r} differs from loop.dt_s = {s.loop.dt_s!r}")
        u = np.asarray(u, dtype=np.float64)
        lengths = np.empty((u.size, 6))
        commander.reset()
        prev = 0.0
        for k in range(u.size):
            q[0] = u[k]
            qd[0] = (u[k] - prev) / dt
            prev = u[k]
            lengths[k] = commander.command(q, qd).length
        ramp = start_pose_ramp(sent[-1] if sent else rig.read_lengths(), lengths[0], s.safety, dt)
        if ramp is not None:
            rig.play(np.array([ramp.command(j)[0] for j in range(1, ramp.total_steps + 1)]))
        sent[:] = [lengths[-1].copy()]
        rec = rig.play(lengths)
        y = np.array([imap.achieved(b, v)[0][0] for b, v in zip(rec["lengths"], rec["velocities"])])
        if log is not None:
            log(u, y, rec)
        return y

    return simulate


def random_test(simulate, dt: float, duration_s: float, rms_m: float, cutoff_hz: float, seed: int):
    """Band-limited random demand through ``simulate``; returns ``(u, y)``."""
    n = int(round(duration_s / dt))
    rng = np.random.Generator(np.random.PCG64(seed))
    w = rng.standard_normal(n)
    sos = sps.butter(4, cutoff_hz, fs=1.0 / dt, output="sos")
    u = sps.sosfilt(sos, w)
    u *= rms_m / max(float(np.sqrt(np.mean(u * u))), 1e-300)
    return u, simulate(u, dt)


def demand_weights(s: Scenario, freqs_hz) -> np.ndarray:
    """Power of the scenario's feedback-only demand ``z_cmd`` in the band represented by each frequency
    (edges at the geometric means of neighbours), normalised to sum 1."""
    from rths_ros.app.vrths import run_virtual
    rec = run_virtual(without_coupling(s))
    z = np.asarray(rec["z_cmd"], dtype=float)
    dt = s.loop.dt_s
    fp, pz = sps.welch(z - z.mean(), fs=1.0 / dt, window="hamming", nperseg=z.size, detrend="constant")
    f = np.asarray(freqs_hz, dtype=float).ravel()
    fs, inv, counts = np.unique(np.round(f, 9), return_inverse=True, return_counts=True)
    edges = np.concatenate([[0.0], np.sqrt(fs[1:] * fs[:-1]), [0.5 / dt]])
    df = float(fp[1] - fp[0])
    wu = np.array([float(np.sum(pz[(fp > lo) & (fp <= hi)])) * df for lo, hi in zip(edges[:-1], edges[1:])])
    w = wu[inv] / counts[inv]          # a frequency tested at several amplitudes shares its band
    tot = float(w.sum())
    return w / tot if tot > 0 else np.full(f.size, 1.0 / f.size)


def fit_unit_gain(freqs_hz, frf, kind: str, weights=None, max_delay_s: float = 0.05) -> FitResult:
    """Process model of static gain 1 fitted by weighted least squares (see module doc).

    Returns :class:`~rths_ros.core.sysid.qualification.FitResult` with the weighted cost and the unweighted RMS
    complex error over all points."""
    from scipy import optimize

    from rths_ros.core.methods.tdc import ProcessModelParams
    if kind not in MODEL_KINDS:
        raise ValueError(f"kind must be one of {MODEL_KINDS}")
    f = np.asarray(freqs_hz, dtype=float).ravel()
    h = np.asarray(frf, dtype=complex).ravel()
    w = np.ones(f.size) if weights is None else np.asarray(weights, dtype=float).ravel()
    sw = np.sqrt(np.maximum(w, 0.0))
    s_ = 2j * np.pi * f
    first = kind in ("G1", "G1D")
    delayed = kind in ("G1D", "G2D")

    def model(z):
        if first:
            return ProcessModelParams(kind=kind, gain=1.0, tau_p_s=float(z[0]),
                                      delay_s=float(z[1]) if delayed else 0.0)
        return ProcessModelParams(kind=kind, gain=float(z[1]) ** 2, zeta=float(z[0]), omega0_rad_s=float(z[1]),
                                  delay_s=float(z[2]) if delayed else 0.0)

    def resid(z):
        if first:
            g = 1.0 / (z[0] * s_ + 1.0)
        else:
            g = z[1] ** 2 / (s_ * s_ + 2.0 * z[0] * z[1] * s_ + z[1] ** 2)
        if delayed:
            g = g * np.exp(-s_ * z[-1])
        e = (h - g) * sw
        return np.concatenate([e.real, e.imag])

    if first:
        starts = [[tp] for tp in (0.005, 0.02, 0.05, 0.1)]
        lo, hi = [1e-6], [10.0]
    else:
        starts = [[zt, w0] for zt in (0.5, 1.0, 2.0) for w0 in (20.0, 60.0, 200.0)]
        lo, hi = [1e-3, 0.1], [20.0, 1e5]
    if delayed:
        starts = [z + [d] for z in starts for d in (0.0, 0.005)]
        lo, hi = lo + [0.0], hi + [max_delay_s]
    best = None
    for z0 in starts:
        sol = optimize.least_squares(resid, np.clip(z0, np.add(lo, 1e-9), np.subtract(hi, 1e-9)),
                                     bounds=(lo, hi), x_scale="jac", xtol=1e-12, ftol=1e-12, gtol=1e-12)
        if best is None or sol.cost < best.cost:
            best = sol
    m = model(best.x)
    err = h - m.frequency_response(f)
    return FitResult(m, float(2.0 * best.cost), float(np.sqrt(np.mean(np.abs(err) ** 2))))


def with_tdc_model(s: Scenario, model) -> Scenario:
    """``s`` with the TDC stage on with ``model`` (prediction off)."""
    c = without_coupling(s).platform.commander.coupling
    c = dataclasses.replace(c, tdc=dataclasses.replace(c.tdc, enabled=True, model=model))
    return _with_coupling(s, c)


def with_prediction(s: Scenario, horizon_s: float) -> Scenario:
    """``s`` with the prediction stage on at ``horizon_s`` (TDC off)."""
    c = without_coupling(s).platform.commander.coupling
    c = dataclasses.replace(c, prediction=dataclasses.replace(c.prediction, enabled=True, horizon_s=float(horizon_s)))
    return _with_coupling(s, c)


def _with_coupling(s: Scenario, c) -> Scenario:
    cmd = dataclasses.replace(s.platform.commander, coupling=c)
    return dataclasses.replace(s, platform=dataclasses.replace(s.platform, commander=cmd))


def loop_error(s: Scenario) -> tuple[float, str]:
    """``(e_track_rel, abort_reason)`` of the first trial of the virtual run of ``s`` (NaN if it aborted)."""
    from rths_ros.analysis.metrics import compute_metrics
    from rths_ros.app.vrths import run_virtual, trial_slice
    rec = run_virtual(s)
    if rec["aborted"]:
        return math.nan, str(rec["abort_reason"])
    tr = trial_slice(rec, 0, s.steps + 1)
    return float(compute_metrics(tr, None, s.loop.dt_s)["e_track_rel"]), ""


@dataclass
class QualifyResult:
    frf: SteppedSineResult
    fits: dict[str, FitResult]
    unit_fits: dict[str, FitResult]
    weights: np.ndarray
    best: str
    loop: dict = field(default_factory=dict)
    psd_freq_hz: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    psd: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    files: list[str] = field(default_factory=list)
    where: str = "twin"


def qualify(s: Scenario, sine: SteppedSineParams | None = None, out_dir: str | Path | None = None,
            with_coupling: bool = False, kinds=MODEL_KINDS, random_duration_s: float = 8.0,
            random_rms_m: float = 5e-4, random_cutoff_hz: float = 40.0, max_delay_s: float = 0.05, tune: bool = True,
            horizons_s=(0.01, 0.02, 0.03, 0.04, 0.05, 0.06), plant=None, where: str = "twin") -> QualifyResult:
    """Stepped sine + random test + model fits on the twin of ``s`` (or on ``plant``, a ``simulate(u, dt) -> y``
    of the same chain on a rig: :func:`rig_interface_plant`; ``where`` names it in the outputs); writes plots and
    tables to ``out_dir``.  The in-loop tuning (``tune``) always runs the virtual run of the twin."""
    if not _registered_models()[s.numerical.model].qualification:
        from rths_ros.params import ParameterError
        raise ParameterError(f"numerical.model: {s.numerical.model!r} is not allowed for the qualification of the "
                             f"interface chain; expected one of {', '.join(CONTACT_MODELS)} (the 1-D contact test)")
    s_q = s if with_coupling else without_coupling(s)
    dt = s.loop.dt_s
    sine = sine or SteppedSineParams(frequencies_hz=(0.2, 0.5, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 40.0),
                                     amplitudes=(0.0003, 0.0008), dt_s=dt, settle_time_s=0.5, settle_periods=1,
                                     measure_periods=2, min_measure_time_s=0.5)
    if abs(sine.dt_s - dt) > 1e-15:
        sine = dataclasses.replace(sine, dt_s=dt)
    sim = interface_plant(s_q) if plant is None else plant
    res = stepped_sine(sim, sine)
    f, h = res.flat()
    fits = {k: fit_process_model(f, h, k, max_delay_s=max_delay_s) for k in kinds}
    w = demand_weights(s, f)
    unit = {k: fit_unit_gain(f, h, k, w, max_delay_s) for k in kinds}
    best = min(unit, key=lambda k: unit[k].cost)
    loop: dict = {}
    if tune:
        base, _ = loop_error(without_coupling(s))
        loop = {"feedback_only": {"e_track_rel": base}, "tdc": {}, "prediction": {}}
        for label, fr in [(f"{k} (K = 1)", v) for k, v in unit.items()] + [(f"{k} (free)", v) for k, v in fits.items()]:
            e, why = loop_error(with_tdc_model(s, fr.model))
            loop["tdc"][label] = {"e_track_rel": e, "aborted": why, "model": model_mapping(fr.model)}
        for hz in horizons_s:
            e, why = loop_error(with_prediction(s, hz))
            loop["prediction"][f"{hz:g}"] = {"e_track_rel": e, "aborted": why, "horizon_s": float(hz)}
        ok = {k: v for k, v in loop["tdc"].items() if math.isfinite(v["e_track_rel"])}
        if ok:
            loop["best_tdc"] = min(ok, key=lambda k: ok[k]["e_track_rel"])
        ok = {k: v for k, v in loop["prediction"].items() if math.isfinite(v["e_track_rel"])}
        if ok:
            loop["best_prediction"] = min(ok, key=lambda k: ok[k]["e_track_rel"])
    u, y = random_test(sim, dt, random_duration_s, random_rms_m, random_cutoff_hz, int(s.loop.seed))
    fp, p_u = welch_psd(u, dt)
    _, p_y = welch_psd(y, dt)
    _, p_e = welch_psd(y - u, dt)
    out = QualifyResult(res, fits, unit, w, best, loop, fp, {"demand": p_u, "achieved": p_y, "error": p_e})
    out.where = where
    if out_dir is not None:
        out.files = write_outputs(out, s, Path(out_dir), with_coupling)
    return out


def model_mapping(m) -> dict:
    """A process model as the YAML mapping of ``platform.commander.coupling.tdc.model``."""
    return {"kind": m.kind, "gain": float(m.gain), "tau_p_s": float(m.tau_p_s), "zeta": float(m.zeta),
            "omega0_rad_s": float(m.omega0_rad_s), "delay_s": float(m.delay_s)}


def write_outputs(r: QualifyResult, s: Scenario, out: Path, with_coupling: bool) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    what = "compensated chain" if with_coupling else "transfer system"
    models = {f"{k} (free)": v.model for k, v in r.fits.items()}
    models.update({f"{k} (K = 1, demand-weighted)": v.model for k, v in r.unit_fits.items()})
    files = [plot_frf(r.frf, str(out / "frf.png"), models, f"{s.name}: interface FRF of the {what} ({r.where})")]
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, p in r.psd.items():
        ax.loglog(r.psd_freq_hz[1:], p[1:], label=key)
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("PSD [m^2/Hz]")
    ax.set_title(f"{s.name}: random demand, Welch PSD (8 Hamming segments)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "psd.png", dpi=110)
    plt.close(fig)
    files.append(str(out / "psd.png"))
    rows = ["amplitude_m,frequency_hz,gain,phase_deg,h2_rel,h3_rel"]
    ph = r.frf.phase_deg
    for ia, a in enumerate(r.frf.amplitudes):
        for jf in range(r.frf.frequencies_hz.shape[1]):
            hh = np.abs(r.frf.harmonics[ia, jf])
            h2 = hh[1] if hh.size > 1 else math.nan
            h3 = hh[2] if hh.size > 2 else math.nan
            rows.append(f"{a:.6g},{r.frf.frequencies_hz[ia, jf]:.6g},{r.frf.gain[ia, jf]:.6g},"
                        f"{ph[ia, jf]:.6g},{h2:.3g},{h3:.3g}")
    (out / "frf.csv").write_text("\n".join(rows) + "\n")
    files.append(str(out / "frf.csv"))
    np.savetxt(out / "psd.csv", np.column_stack([r.psd_freq_hz] + list(r.psd.values())), delimiter=",",
               header="frequency_hz," + ",".join(r.psd), comments="")
    files.append(str(out / "psd.csv"))
    doc = {"scenario": s.name, "chain": what, "measured_on": r.where, "best": r.best,
           "free_fits": {k: dict(model_mapping(v.model), rms_error=float(v.rms_error)) for k, v in r.fits.items()},
           "unit_gain_fits": {k: dict(model_mapping(v.model), rms_error=float(v.rms_error),
                                      weighted_cost=float(v.cost)) for k, v in r.unit_fits.items()},
           "platform": {"commander": {"coupling": {"tdc": {"model": dict(model_mapping(r.unit_fits[r.best].model))}}}}}
    if r.loop:
        doc["loop"] = copy.deepcopy(r.loop)
        if "best_tdc" in r.loop:
            doc["platform"]["commander"]["coupling"]["tdc"]["model"] = dict(r.loop["tdc"][r.loop["best_tdc"]]["model"])
        if "best_prediction" in r.loop:
            doc["platform"]["commander"]["coupling"]["prediction"] = {
                "horizon_s": r.loop["prediction"][r.loop["best_prediction"]]["horizon_s"]}
    (out / "models.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    files.append(str(out / "models.yaml"))
    return files
