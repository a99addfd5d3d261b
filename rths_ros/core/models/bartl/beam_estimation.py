"""Interface force and moment of the beam rig (Bartl 2019 §6.1) through its transmission simulator, estimated three
ways: projected forces (eq. 3.15), inverse dynamics (eq. 3.14) and the augmented-state Kalman filter
(eqs. 3.16-3.19, :class:`rths_ros.core.sysid.interface_estimation.AugmentedKalman`).

The experimental side of the rig (:func:`rths_ros.core.models.bartl.beams.build_rig`) is the EXP beam, the rigid
steel plate at B and two shakers at the actuator points ``z_A = T [z_B; alpha_B]``.  The specimen, whose model the
estimators do not use, is the EXP beam.  The transmission simulator (TS) is the part with a known model that
carries the actuators and sensors, on coordinates ``q = [z_B, alpha_B]`` (so ``G = I``):

- ``ts_model = "plate"`` (default): the rigid plate alone, ``M = diag(m, theta_y)``, no stiffness or damping.  The
  actuator forces are the stinger forces ``F_A`` measured by the impedance heads at the actuator points (the
  thesis's instrumentation, eq. 6.3), ``B_A = T^T``; the shakers' armatures stay outside the TS;
- ``ts_model = "plate_shakers"``: the plate with the two armatures (moving mass, suspension); the actuator forces
  are the shakers' coil forces ``u`` (current control), which the TS's model turns into stinger forces.

The interface force ``lambda = [F_Bz, M_By]`` is the force and moment the EXP beam puts on the plate
(``-lambda_EXP`` of beams.py, eq. 6.2).  Its true value comes from the beam's own reduced model,
``-(M_EXP q'' + D_EXP q' + K_EXP q)`` at its boundary DoFs.

Sensors (this package's choice; the thesis's rig has the impedance heads' accelerometers and integrates them):
accelerometers (impedance heads) and displacement sensors at both actuator points, ``C_a = C_d = T``.  Each
signal gets uniform noise ``c r``, ``r ~ U[-1, 1]`` (as §3.2): ``c_nf`` on the actuator forces, ``c_nd`` on the
displacements, ``c_na`` on the accelerations.  The rig is integrated exactly for piecewise-constant shaker
demands ``u`` (zero-order hold at dt = 0.2 ms, the loop's sample time).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from rths_ros.core.models.bartl.beams import BeamRig, BeamRigParams, build_rig
from rths_ros.core.sysid.interface_estimation import (
    AugmentedKalman,
    TransmissionSimulator,
    _van_loan_q,
    augmented_model,
    discretise_zoh,
    inverse_dynamics_force,
    projected_force,
)
from rths_ros.params import ParameterError, build, param

__all__ = ["BeamEstimationParams", "CHANNELS", "beam_ts", "rig_continuous", "simulate_rig", "run_kalman",
           "relative_rms", "hf_noise", "lag_s", "estimate_beam_interface", "validated"]

CHANNELS = ("F_Bz [N]", "M_By [N m]")


@dataclass(frozen=True)
class BeamEstimationParams:
    """Excitation, sensor noise and filter settings of the beam-rig estimation study (docs/interface_estimation.md,
    "On the beam rig")."""

    ts_model: str = param("plate", "", doc="transmission simulator: the plate with the impedance heads' stinger "
                          "forces, or the plate with the shakers' armatures and coil forces",
                          choices=("plate", "plate_shakers"))
    excitation: str = param("sine", "", doc="shaker demand: the §6.1 sines (60 and 320 Hz) or band-limited noise",
                            choices=("sine", "random"))
    amp_low_n: float = param(0.5, "N", 0.0, 100.0, "amplitude of the 60 Hz sine per shaker")
    amp_high_n: float = param(3.0, "N", 0.0, 100.0, "amplitude of the 320 Hz sine per shaker")
    f_low_hz: float = param(60.0, "Hz", 0.1, 2000.0, "lower sine frequency (§6.1: 60 Hz)")
    f_high_hz: float = param(320.0, "Hz", 0.1, 2000.0, "higher sine frequency (§6.1: 320 Hz)")
    random_rms_n: float = param(1.0, "N", 0.0, 100.0, "RMS of each shaker's random demand")
    random_band_hz: float = param(400.0, "Hz", 1.0, 2000.0, "corner of the random demand's low-pass")
    duration_s: float = param(1.0, "s", 0.2, 60.0, "simulated time")
    skip_s: float = param(0.1, "s", 0.0, 10.0, "errors are taken after this time (filter start-up)")
    c_nf: float = param(0.05, "N", 0.0, 100.0, "uniform noise bound on the actuator forces")
    c_nd: float = param(2e-6, "m", 0.0, 0.01, "uniform noise bound on the displacements")
    c_na: float = param(1.0, "m/s^2", 0.0, 100.0, "uniform noise bound on the accelerations")
    q_force: float = param(100.0, "N^2/s", 1e-6, 1e14, "Kalman Q: spectral density of the interface forces' random "
                           "walk (the moment's is q_force times moment_scale^2)")
    moment_scale_m: float = param(0.04, "m", 1e-4, 1.0, "Kalman Q: lever that turns the force's random walk into "
                                  "the moment's")
    q_accel: float = param(0.0, "(m/s^2)^2 s", 0.0, 1e8, "Kalman Q: white noise on the TS accelerations")
    r_scale: float = param(1.0, "", 1e-6, 1e6, "Kalman R: factor on the sensors' noise variances c^2/3")
    seed: int = param(1, "", 0, 2 ** 31 - 1, "seed of the sensor noise and of the random demand")

    def validate(self) -> None:
        if self.skip_s >= self.duration_s - 0.05:
            raise ParameterError(f"skip_s: {self.skip_s!r} s; must end at least 0.05 s before duration_s = "
                                 f"{self.duration_s!r} s")
        if self.c_nd <= 0.0 or self.c_na <= 0.0:
            raise ParameterError(f"c_nd, c_na: {self.c_nd!r}, {self.c_na!r}; the Kalman filter's R needs noise "
                                 "bounds > 0")


def validated(p: BeamEstimationParams) -> BeamEstimationParams:
    """``p`` checked against its declared ranges and choices (a ParameterError names the key, value and range)."""
    return build(BeamEstimationParams, {f.name: getattr(p, f.name) for f in dataclasses.fields(p)})


def beam_ts(rig: BeamRig, ts_model: str = "plate") -> TransmissionSimulator:
    """The rig's transmission simulator on ``q = [z_B, alpha_B]`` (module doc); sensors at the actuator points."""
    p, T = rig.p, rig.T
    M = np.diag([p.m_plate_kg, p.theta_plate_kg_m2])
    D = np.zeros((2, 2))
    K = np.zeros((2, 2))
    if ts_model == "plate_shakers":
        M = M + p.m_shaker_kg * T.T @ T
        D = p.d_shaker_n_s_per_m * T.T @ T
        K = p.k_shaker_n_per_m * T.T @ T
    elif ts_model != "plate":
        raise ParameterError(f"ts_model: {ts_model!r} is not allowed; expected one of 'plate', 'plate_shakers'")
    return TransmissionSimulator(M=M, D=D, K=K, G=np.eye(2), B_A=T.T.copy(), C_d=T.copy(), C_a=T.copy())


def rig_continuous(rig: BeamRig) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(A, B, (M_EXP, D_EXP, K_EXP))``: the rig's state equation ``x' = A x + B u`` (x = [q; q'] of the reduced
    EXP beam, boundary DoFs z_B, alpha_B first, with plate and shakers; the assembly of build_rig) and the
    beam's own matrices."""
    p, T = rig.p, rig.T
    Me, De, Ke = (np.array(x, dtype=float) for x in (rig.exp.M, rig.exp.D, rig.exp.K))
    n = Me.shape[0]
    M, D, K = Me.copy(), De.copy(), Ke.copy()
    M[:2, :2] += np.diag([p.m_plate_kg, p.theta_plate_kg_m2]) + p.m_shaker_kg * T.T @ T
    D[:2, :2] += p.d_shaker_n_s_per_m * T.T @ T
    K[:2, :2] += p.k_shaker_n_per_m * T.T @ T
    mi = np.linalg.inv(M)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-mi @ K, -mi @ D]])
    Bu = np.zeros((n, 2))
    Bu[:2] = T.T
    B = np.vstack([np.zeros((n, 2)), mi @ Bu])
    return A, B, (Me, De, Ke)


def _demand(p: BeamEstimationParams, t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if p.excitation == "sine":
        # both shakers at both frequencies, the second shifted so that translation and rotation are excited
        u = np.empty((t.size, 2))
        for j, (ph_lo, ph_hi) in enumerate(((0.0, 0.0), (0.5 * math.pi, math.pi / 3.0))):
            u[:, j] = (p.amp_low_n * np.sin(2 * math.pi * p.f_low_hz * t + ph_lo)
                       + p.amp_high_n * np.sin(2 * math.pi * p.f_high_hz * t + ph_hi))
        return u
    from scipy.signal import butter, lfilter
    dt = float(t[1] - t[0])
    b, a = butter(4, min(p.random_band_hz, 0.45 / dt), fs=1.0 / dt)
    u = lfilter(b, a, rng.standard_normal((t.size, 2)), axis=0)
    return u * (p.random_rms_n / np.sqrt(np.mean(u ** 2, axis=0)))


def simulate_rig(p: BeamEstimationParams, rig: BeamRig | None = None) -> dict:
    """Truth and noisy measurements of one run (module doc).  Returns per sample: ``t``, ``u`` (shaker demands),
    ``lam`` (true interface force and moment on the plate), ``f_a`` (true actuator forces of the TS: stinger forces
    or coil forces), ``f_meas``, ``y_d``, ``y_a`` (noisy sensors), ``q``, ``qd``, ``qdd`` (true TS coordinates),
    and ``ts``."""
    rig = rig or build_rig(BeamRigParams())
    rp, T = rig.p, rig.T
    dt = rp.dt_s
    A, B, (Me, De, Ke) = rig_continuous(rig)
    ad, bd = discretise_zoh(A, B, dt)
    n_dof = Me.shape[0]
    n = int(round(p.duration_s / dt))
    t = np.arange(n + 1) * dt
    rng = np.random.default_rng(p.seed)
    u = _demand(p, t, rng)
    X = np.empty((n + 1, 2 * n_dof))
    x = np.zeros(2 * n_dof)
    for k in range(n + 1):
        X[k] = x
        x = ad @ x + bd @ u[k]
    qdd_all = X @ A[n_dof:].T + u @ B[n_dof:].T        # accelerations at each sample (u of that sample held)
    q_all, qd_all = X[:, :n_dof], X[:, n_dof:]
    lam = -(qdd_all @ Me[:2].T + qd_all @ De[:2].T + q_all @ Ke[:2].T)      # the beam's force on the plate
    q, qd, qdd = q_all[:, :2], qd_all[:, :2], qdd_all[:, :2]
    if p.ts_model == "plate":
        za, zad, zadd = q @ T.T, qd @ T.T, qdd @ T.T
        f_a = u - rp.m_shaker_kg * zadd - rp.d_shaker_n_s_per_m * zad - rp.k_shaker_n_per_m * za
    else:
        f_a = u.copy()
    ts = beam_ts(rig, p.ts_model)
    y_d = q @ ts.C_d.T + p.c_nd * rng.uniform(-1.0, 1.0, (n + 1, 2))
    y_a = qdd @ ts.C_a.T + p.c_na * rng.uniform(-1.0, 1.0, (n + 1, 2))
    f_meas = f_a + p.c_nf * rng.uniform(-1.0, 1.0, (n + 1, 2))
    return {"t": t, "u": u, "lam": lam, "f_a": f_a, "f_meas": f_meas, "y_d": y_d, "y_a": y_a, "q": q, "qd": qd,
            "qdd": qdd, "ts": ts, "dt": dt}


def run_kalman(sim: dict, q_force: float, r_scale: float = 1.0, q_accel: float = 0.0, moment_scale_m: float = 0.04,
               c_nd: float = 2e-6, c_na: float = 1.0) -> np.ndarray:
    """The augmented-state Kalman estimate of ``lambda`` over a run of :func:`simulate_rig`.  ``q_force`` (N^2/s) is
    the force's random-walk density; the moment's is ``q_force * moment_scale_m^2``.  ``R = r_scale *
    diag(c_nd^2/3, c_na^2/3)``."""
    for key, v in (("q_force", q_force), ("r_scale", r_scale), ("moment_scale_m", moment_scale_m)):
        if not (math.isfinite(v) and v > 0.0):
            raise ParameterError(f"{key}: {v!r} must be finite and > 0")
    if not (math.isfinite(q_accel) and q_accel >= 0.0):
        raise ParameterError(f"q_accel: {q_accel!r} must be finite and >= 0")
    ts = sim["ts"]
    kf = AugmentedKalman(ts, sim["dt"], q_force=q_force, q_accel=q_accel, r_disp=r_scale * c_nd * c_nd / 3.0,
                         r_acc=r_scale * c_na * c_na / 3.0)
    # the moment's random walk has its own density, q_force * moment_scale_m^2 (Van Loan again with that Q_c)
    n = ts.n
    qc = np.diag([0.0] * n + [q_accel] * n + [q_force, q_force * moment_scale_m ** 2])
    kf.Q = _van_loan_q(augmented_model(ts)[0], qc, sim["dt"])
    f, y_d, y_a = sim["f_meas"], sim["y_d"], sim["y_a"]
    out = np.zeros((f.shape[0], ts.n_l))
    for k in range(1, f.shape[0]):
        out[k] = kf.step(f[k - 1], f[k], y_d[k], y_a[k])
    return out


def _inverse_dynamics(sim: dict) -> np.ndarray:
    ts = sim["ts"]
    q_s = sim["y_d"] @ np.linalg.pinv(ts.C_d).T
    qdd_s = sim["y_a"] @ np.linalg.pinv(ts.C_a).T
    qd_s = np.cumsum(qdd_s, axis=0) * sim["dt"]          # integrated from zero, as in the thesis (§3.2)
    return inverse_dynamics_force(ts, q_s, qd_s, qdd_s, sim["f_meas"])


def relative_rms(est: np.ndarray, truth: np.ndarray, k0: int) -> np.ndarray:
    """Per channel: RMS of ``est - truth`` over samples ``k0:`` divided by the truth's RMS there."""
    e = np.sqrt(np.mean((est[k0:] - truth[k0:]) ** 2, axis=0))
    return e / np.sqrt(np.mean(truth[k0:] ** 2, axis=0))


def hf_noise(est: np.ndarray, truth: np.ndarray, k0: int, dt: float, f_hz: float = 1000.0) -> np.ndarray:
    """Per channel: RMS of the part of ``est - truth`` above ``f_hz`` (well above the excitation; zero-phase 4th-order
    Butterworth high-pass) over samples ``k0:``, divided by the truth's RMS there: how noisy an estimate is."""
    from scipy.signal import butter, sosfiltfilt
    sos = butter(4, f_hz, btype="highpass", fs=1.0 / dt, output="sos")
    e = sosfiltfilt(sos, est - truth, axis=0)[k0:]
    return np.sqrt(np.mean(e ** 2, axis=0)) / np.sqrt(np.mean(truth[k0:] ** 2, axis=0))


def lag_s(est: np.ndarray, truth: np.ndarray, k0: int, dt: float, max_lag_s: float = 1.5e-3) -> np.ndarray:
    """Per channel: the delay (s) of ``est`` behind ``truth`` that maximises their cross-correlation over samples
    ``k0:`` (searched within +- ``max_lag_s``, parabolic sub-sample refinement)."""
    m = max(1, int(round(max_lag_s / dt)))
    out = np.zeros(truth.shape[1])
    for c in range(truth.shape[1]):
        a, b = truth[k0:, c], est[k0:, c]
        lags = np.arange(-m, m + 1)
        cc = np.array([np.dot(a[max(0, -j):a.size - max(0, j)], b[max(0, j):b.size - max(0, -j)]) for j in lags])
        i = int(np.argmax(cc))
        frac = 0.0
        if 0 < i < cc.size - 1:
            den = cc[i - 1] - 2 * cc[i] + cc[i + 1]
            frac = 0.5 * (cc[i - 1] - cc[i + 1]) / den if den != 0.0 else 0.0
        out[c] = (lags[i] + frac) * dt
    return out


def estimate_beam_interface(p: BeamEstimationParams | None = None, q_forces=(), r_scales=(), rig: BeamRig | None
                            = None, progress=None) -> dict:
    """Simulate one run and compare the three estimators on it; then the Kalman filter over the grid ``q_forces x
    r_scales`` (the nominal ``q_force``/``r_scale`` row is always computed).  Returns the signals, the relative RMS
    errors per channel (after ``skip_s``), their parts above 1 kHz (``hf_noise``), the delays behind the truth and the
    grid ``sweep`` (rows: q_force, r_scale, relative error, noise, lag)."""
    p = validated(p or BeamEstimationParams())
    for key, values, lo, hi in (("q_forces", q_forces, 1e-6, 1e14), ("r_scales", r_scales, 1e-6, 1e6)):
        for v in values:
            if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                raise ParameterError(f"{key}: {v!r} is out of range; expected numbers in [{lo:g}, {hi:g}]")
    say = progress or (lambda _m: None)
    sim = simulate_rig(p, rig)
    k0 = int(round(p.skip_s / sim["dt"]))
    lam = sim["lam"]
    kw = {"q_accel": p.q_accel, "moment_scale_m": p.moment_scale_m, "c_nd": p.c_nd, "c_na": p.c_na}
    est = {"kalman": run_kalman(sim, p.q_force, p.r_scale, **kw),
           "inverse_dynamics": _inverse_dynamics(sim),
           "projected": projected_force(sim["ts"], sim["f_meas"])}
    err = {k: relative_rms(v, lam, k0) for k, v in est.items()}
    noise = {k: hf_noise(v, lam, k0, sim["dt"]) for k, v in est.items()}
    lags = {k: lag_s(v, lam, k0, sim["dt"]) for k, v in est.items()}
    grid = [(qf, rs) for qf in (q_forces or (p.q_force,)) for rs in (r_scales or (p.r_scale,))]
    sweep = []
    for i, (qf, rs) in enumerate(grid):
        say(f"Kalman {i + 1}/{len(grid)}: q_force = {qf:g} N^2/s, R scale = {rs:g}")
        e = est["kalman"] if (qf, rs) == (p.q_force, p.r_scale) else run_kalman(sim, qf, rs, **kw)
        sweep.append({"q_force": float(qf), "r_scale": float(rs), "rel_rms_error": relative_rms(e, lam, k0).tolist(),
                      "hf_noise": hf_noise(e, lam, k0, sim["dt"]).tolist(),
                      "lag_s": lag_s(e, lam, k0, sim["dt"]).tolist()})
    return {"params": p, "sim": sim, "estimates": est, "k0": k0,
            "rms_truth": np.sqrt(np.mean(lam[k0:] ** 2, axis=0)), "rel_rms_error": err, "hf_noise": noise, "lag_s": lags,
            "sweep": sweep}
