"""Closed-loop identification of the Stewart platform legs (Insam 2022 §4.3.1, Fig. 4.6, eq. 4.1-4.2, Table 4.1).

Procedure of the thesis [T]: with the cascade controllers on, a *segmented multisine* current is injected
behind each leg's velocity controller (current level, ``G_i ~ 1``); the range up to 100 Hz is covered with a
0.5 Hz line spacing in 10 bands ([0.5, 10], [10.5, 20], ..., [90.5, 100] Hz), each band for 200 s, the legs
one after another.  The measured ``P^_i = B'_i(s) / I_i(s)`` (motor current -> leg length) is approximated by
``P_i(s) = k_i w_c,i / (s (s + w_c,i))``; the coherence must exceed 75 %.

Implemented here (choices where the thesis is silent are marked *choice*):

* **Excitation** (:func:`segmented_multisine`): the lines ``f_j = j * spacing_hz`` up to ``f_max_hz`` are split
  into ``n_bands`` contiguous bands of equal line count; every band is one periodic multisine of period
  ``1 / spacing_hz`` (2 s), equal line amplitudes, Schroeder phases ``phi_j = -pi j (j - 1) / J`` (*choice*, low
  crest factor), scaled to ``amplitude_a`` RMS (*choice*: 0.05 A; the thesis gives no amplitude).  A band runs
  for ``band_duration_s`` (a whole number of periods); the first ``settle_periods`` periods are discarded
  (transient).
* **FRF** (:func:`estimate_frf`): per period the DFT of the injection ``r``, the measured current ``u`` and
  the measured length ``y`` at the excited bins; ``P^ = sum_p Y_p R_p* / sum_p U_p R_p*`` (*choice*: the
  closed-loop "joint input-output" estimator, unbiased by noise that circulates in the loop, unlike
  ``S_yu / S_uu``); magnitude-squared coherence of ``u`` and ``y`` over the periods,
  ``gamma^2 = |sum Y U*|^2 / (sum |U|^2 sum |Y|^2)``, and the same for ``r`` and ``y``.
* **Fit** (:func:`fit_leg_model`): lines with ``gamma^2_uy >= coherence_min`` (0.75) enter a least-squares
  fit of the complex logarithm, ``sum |ln P^(jw) - ln P(jw; theta)|^2``, ``theta = (ln k w_c, ln w_c[, tau])``
  (*choice*: log error weights magnitude and phase evenly over the 2.5 decades), optionally with a delay
  ``e^{-s tau}``; started from Levy's linear fit ``P^ (jw)^2 + w_c P^ jw = k w_c``.
* **Result** (:class:`SysIdResult`): per-leg FRF, coherence and fit; :meth:`SysIdResult.plant_config` gives the
  ``sim_plant.legs`` section the digital twin loads (:func:`load_plant_config`), :meth:`SysIdResult.to_yaml`
  the same as YAML with the fit quality (and identified delays, which the twin does not model) as comments.

Rigs (anything with ``dt_s``, ``reset()`` and ``run(leg, injection) -> (current, length)``):

* :class:`TwinRig` - the digital twin's legs (:class:`InjectableLegCascade`, Table 4.1 / Table A.1) with the
  twin's resolver quantisation and, *choice* for "noise on", white current-sensor noise and a white
  disturbance current on every leg (friction-like process noise that circulates in the loop);
* :class:`LinkRig` - the real controller (or its emulator) over :mod:`rths_ros.drivers.platform_link`, which
  carries a current-injection field in every command.

The position command is held at the initial lengths and no feedforward is applied during identification.
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field

import numba
import numpy as np
import yaml
from scipy.linalg import expm
from scipy.optimize import least_squares

from rths_ros.core.plant.legs import N_LEGS, LegCascade, LegCascadeParams, LegPlantParams
from rths_ros.params import ParameterError, _coerce, build, param

__all__ = ["SysIdParams", "sysid_params", "TwinNoiseParams", "Band", "segmented_multisine", "InjectableLegCascade",
           "TwinRig", "LinkRig", "FrfEstimate", "estimate_frf", "LegFit", "fit_leg_model", "SysIdResult", "identify",
           "load_plant_config"]


@dataclass(frozen=True)
class SysIdParams:
    """Segmented multisine identification (Insam 2022 §4.3.1; defaults = the thesis's procedure)."""

    f_max_hz: float = param(100.0, "Hz", 0.1, 5000.0, "highest excited frequency")
    spacing_hz: float = param(0.5, "Hz", 0.01, 100.0, "line spacing = 1 / multisine period")
    n_bands: int = param(10, "", 1, 1000, "number of bands the lines are split into (excited one after another)")
    band_duration_s: float = param(200.0, "s", 0.01, 1e5, "excitation time per band (rounded down to whole periods)")
    settle_periods: int = param(1, "", 0, 1000, "periods discarded at the start of every band")
    amplitude_a: float = param(0.05, "A", 1e-6, 100.0, "RMS of the injected current per band")
    legs: tuple[int, ...] = param([1, 2, 3, 4, 5, 6], "", 1, 6, "legs to identify (1-based, one after another)")
    coherence_min: float = param(0.75, "", 0.0, 1.0, "lines with u-y coherence below this are left out of the fit")
    fit_delay: bool = param(False, "", doc="fit a pure delay e^{-s tau} together with k w_c and w_c")
    fit_f_min_hz: float = param(0.0, "Hz", 0.0, 1e4, "lowest line used in the fit")
    fit_f_max_hz: float = param(1e4, "Hz", 0.0, 1e4, "highest line used in the fit")

    def validate(self, dt_s: float) -> None:
        n = 1.0 / (self.spacing_hz * dt_s)
        if abs(n - round(n)) > 1e-6:
            raise ParameterError(f"spacing_hz: {self.spacing_hz!r} is not allowed; 1/(spacing_hz dt) must be a "
                                 f"whole number of samples (dt = {dt_s!r} s)")
        if self.f_max_hz >= 0.5 / dt_s:
            raise ParameterError(f"f_max_hz: {self.f_max_hz!r} is not below the Nyquist frequency {0.5 / dt_s:g} Hz")
        ratio = self.f_max_hz / self.spacing_hz
        if abs(ratio - round(ratio)) > 1e-6 * max(1.0, ratio):
            raise ParameterError(f"f_max_hz: {self.f_max_hz!r} is not a whole multiple of spacing_hz = "
                                 f"{self.spacing_hz!r} Hz (the highest line is f_max_hz itself)")
        n_lines = int(round(ratio))
        if n_lines < self.n_bands:
            raise ParameterError(f"n_bands: {self.n_bands!r} exceeds the {n_lines} lines up to f_max_hz "
                                 f"(f_max_hz / spacing_hz = {self.f_max_hz!r} / {self.spacing_hz!r}); every band "
                                 f"needs at least one line")
        if self.band_duration_s * self.spacing_hz < self.settle_periods + 1 - 1e-9:
            raise ParameterError(f"band_duration_s: {self.band_duration_s!r} leaves no period after the "
                                 f"{self.settle_periods} settling period(s) of {1.0 / self.spacing_hz:g} s")


def sysid_params(dt_s: float, base: SysIdParams | None = None, **changes) -> SysIdParams:
    """``base`` (default :class:`SysIdParams`) with ``changes``, each checked like a scenario value (type,
    finite, range) and then all together by :meth:`SysIdParams.validate` for the step ``dt_s``.  Raises
    :class:`ParameterError` naming the field."""
    base = base or SysIdParams()
    fields = {f.name: f for f in dataclasses.fields(SysIdParams)}
    hints = typing.get_type_hints(SysIdParams)
    values = {}
    for name, value in changes.items():
        if name not in fields:
            raise ParameterError(f"{name}: unknown key; allowed keys of SysIdParams are {', '.join(sorted(fields))}")
        values[name] = _coerce(name, value, hints[name], fields[name].metadata)
    params = dataclasses.replace(base, **values)
    params.validate(dt_s)
    return params


@dataclass(frozen=True)
class TwinNoiseParams:
    """Noise of the simulated identification experiment ("noise on")."""

    quantisation_m: float = param(2.4e-6, "m", 0.0, 1e-3, "resolver resolution of the measured lengths")
    current_noise_std_a: float = param(0.002, "A", 0.0, 10.0, "white noise of the measured current")
    disturbance_std_a: float = param(0.005, "A", 0.0, 10.0, "white disturbance current on every leg (held per step)")
    seed: int = param(0, "", 0, 2**63 - 1, "seed of the noise generator")


# ----------------------------------------------------------------------------------------------- excitation


@dataclass
class Band:
    """One multisine band: excited lines ``freq_hz`` (DFT bins ``bins`` of one period of ``n_period``
    samples), one period of the signal ``period`` [A] and the number of periods to run."""

    freq_hz: np.ndarray
    bins: np.ndarray
    period: np.ndarray
    n_periods: int

    @property
    def signal(self) -> np.ndarray:
        return np.tile(self.period, self.n_periods)


def segmented_multisine(params: SysIdParams, dt_s: float) -> list[Band]:
    """The bands of the segmented multisine (see the module doc)."""
    params.validate(dt_s)
    n = int(round(1.0 / (params.spacing_hz * dt_s)))
    n_lines = int(round(params.f_max_hz / params.spacing_hz))
    n_periods = int(math.floor(params.band_duration_s * params.spacing_hz + 1e-9))
    t = np.arange(n) * dt_s
    bands = []
    for chunk in np.array_split(np.arange(1, n_lines + 1), params.n_bands):
        k = len(chunk)
        j = np.arange(1, k + 1)
        phase = -np.pi * j * (j - 1) / k
        freq = chunk * params.spacing_hz
        sig = np.sin(2.0 * np.pi * np.outer(freq, t) + phase[:, None]).sum(axis=0)
        sig *= params.amplitude_a / np.sqrt(np.mean(sig ** 2))
        bands.append(Band(freq, chunk.copy(), sig, n_periods))
    return bands


# ----------------------------------------------------------------------------------------------- twin with injection


def _injection_rows(k: float, wc: float, kpp: float, kpv: float, kiv: float, dt: float, substeps: int):
    """Extra rows of the sampled cascade (state x = (b', b'dot, xi), input u = (b_cmd, ff)) for a current ``d``
    added behind the velocity controller and held over one whole step, and for the step-mean motor current:

    ``x+ = M x + N u + n_d d``, last sub-step current ``... + c_d d``, mean current over the step
    ``i_mean = cm_x x + cm_u u + cm_d d`` (the sub-step maps are those of :mod:`rths_ros.core.plant.legs`)."""
    h = dt / substeps
    a = np.array([[0.0, 1.0, 0.0], [0.0, -wc, k], [0.0, 0.0, 0.0]])
    e = expm(a * h)
    phi, gam = e[:2, :2], e[:2, 2]
    c_e = np.array([-kpp, -1.0, 0.0])                       # velocity error e_v = c_e x + d_e u
    d_e = np.array([kpp, 1.0])
    c_i = (kpv + kiv * h) * c_e + np.array([0.0, 0.0, kiv])  # controller current = c_i x + d_i u
    d_i = (kpv + kiv * h) * d_e
    f = np.zeros((3, 3))
    f[:2, :2] = phi
    f[:2, :] += np.outer(gam, c_i)
    f[2, :] = np.array([0.0, 0.0, 1.0]) + h * c_e
    g = np.zeros((3, 2))
    g[:2, :] = np.outer(gam, d_i)
    f[2, :] = np.array([0.0, 0.0, 1.0]) + h * c_e
    g[2, :] = h * d_e
    g_d = np.zeros(3)
    g_d[:2] = gam                                           # the injected current acts on the leg directly
    m, n, nd = np.eye(3), np.zeros((3, 2)), np.zeros(3)
    cm_x, cm_u, cm_d = np.zeros(3), np.zeros(2), 0.0
    c_d = 0.0
    for _ in range(substeps):
        c_d = c_i @ nd + 1.0                                # current of this sub-step: controller + d
        cm_x = cm_x + c_i @ m
        cm_u = cm_u + c_i @ n + d_i
        cm_d += c_d
        m, n, nd = f @ m, f @ n + g, f @ nd + g_d
    return nd, c_d, cm_x / substeps, cm_u / substeps, cm_d / substeps


class InjectableLegCascade(LegCascade):
    """:class:`~rths_ros.core.plant.legs.LegCascade` with a current ``injection`` (6,) [A] added behind each velocity
    controller and held over the step (Fig. 4.6).  With zero injection the state and ``current`` are
    bit-identical to ``LegCascade`` (the injection enters as a separate linear term); ``current`` is the motor
    current of the last sub-step (controller output + injection), ``current_mean`` its mean over the step."""

    def __init__(self, plant_params: LegPlantParams | None = None,
                 cascade_params: LegCascadeParams | None = None, dt_s: float = 1e-3, substeps: int = 10):
        super().__init__(plant_params, cascade_params, dt_s, substeps)
        kpp, kpv, kiv = self.cascade_params.gains
        self._n_d = np.empty((N_LEGS, 3))
        self._c_d = np.empty(N_LEGS)
        self._cm_x = np.empty((N_LEGS, 3))
        self._cm_u = np.empty((N_LEGS, 2))
        self._cm_d = np.empty(N_LEGS)
        for i in range(N_LEGS):
            (self._n_d[i], self._c_d[i], self._cm_x[i], self._cm_u[i],
             self._cm_d[i]) = _injection_rows(self.plant_params.gain_num[i], self.plant_params.omega_c_rad_per_s[i],
                                              kpp, kpv, kiv, self.dt_s, self.substeps)
        self.injection = np.zeros(N_LEGS)
        self.current_mean = np.zeros(N_LEGS)
        self._x0 = np.zeros((N_LEGS, 3))
        self._inj = np.zeros(N_LEGS)

    def reset(self, lengths0) -> None:
        super().reset(lengths0)
        self.current_mean[:] = 0.0

    def step(self, b_cmd, ff_velocity=None) -> None:
        self._x0[:] = self._x
        self._inj[:] = self.injection
        super().step(b_cmd, ff_velocity)
        _injection_update(self._x, self._x0, self._cmd, self._ff, self._inj, self._n_d, self._c_d, self._cm_x,
                          self._cm_u, self._cm_d, self._current, self.current_mean)


@numba.njit(cache=True, nogil=True)
def _injection_update(x, x0, cmd, ff, d, n_d, c_d, cm_x, cm_u, cm_d, current, current_mean):
    """Add the injection terms to the state and the last current; the step-mean current."""
    for i in range(x.shape[0]):
        current_mean[i] = (cm_x[i, 0] * x0[i, 0] + cm_x[i, 1] * x0[i, 1] + cm_x[i, 2] * x0[i, 2]
                           + cm_u[i, 0] * cmd[i] + cm_u[i, 1] * ff[i] + cm_d[i] * d[i])
        if d[i] != 0.0:
            for r in range(3):
                x[i, r] += n_d[i, r] * d[i]
            current[i] += c_d[i] * d[i]


class TwinRig:
    """The digital twin's legs as identification rig (see the module doc)."""

    def __init__(self, plant: LegPlantParams | None = None, cascade: LegCascadeParams | None = None,
                 noise: TwinNoiseParams | None = None, dt_s: float = 1e-3, substeps: int = 10,
                 home_lengths=None):
        self.dt_s = float(dt_s)
        self.noise = noise or TwinNoiseParams()
        self.legs = InjectableLegCascade(plant, cascade, dt_s, substeps)
        self.home = np.zeros(N_LEGS) if home_lengths is None else np.asarray(home_lengths, dtype=float).copy()
        self._rng = np.random.default_rng(self.noise.seed)
        self.current_lead_s = 0.5 * self.dt_s    # step-mean current vs end-of-step length

    def reset(self) -> None:
        self.legs.reset(self.home)
        self.legs.injection[:] = 0.0

    def run(self, leg: int, injection: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inject ``injection`` (n,) [A] on ``leg`` (0-based), hold the position commands; returns the measured
        current and length of that leg after every step (n,) each."""
        nz = self.noise
        n = len(injection)
        legs = self.legs
        dist = self._rng.standard_normal((n, N_LEGS)) * nz.disturbance_std_a
        dist[:, leg] += injection
        cur = np.empty(n)
        length = np.empty(n)
        cmd = self.home
        for j in range(n):
            legs.injection[:] = dist[j]
            legs.step(cmd)
            cur[j] = legs.current_mean[leg]
            length[j] = legs.length[leg]
        legs.injection[:] = 0.0
        cur += self._rng.standard_normal(n) * nz.current_noise_std_a
        q = nz.quantisation_m
        if q > 0.0:
            length = np.rint((length - self.home[leg]) / q) * q + self.home[leg]
        return cur, length


class LinkRig:
    """The platform controller over :class:`~rths_ros.drivers.platform_link.PlatformLinkClient` (lockstep):
    every run starts with RESET, holds the reset lengths as commands and sends the injection with them."""

    def __init__(self, client, dt_s: float = 1e-3):
        self.client = client
        self.dt_s = float(dt_s)
        self.current_lead_s = 0.5 * self.dt_s    # STATE.current is the step mean, STATE.length the end value
        self._home = None

    def reset(self) -> None:
        self._home = self.client.reset().length.copy()

    def run(self, leg: int, injection: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.reset()
        n = len(injection)
        cur = np.empty(n)
        length = np.empty(n)
        inj = np.zeros(N_LEGS)
        for j in range(n):
            inj[leg] = injection[j]
            st = self.client.step(j, self._home, None, inj)
            cur[j] = st.current[leg]
            length[j] = st.length[leg]
        return cur, length


# ----------------------------------------------------------------------------------------------- estimation


@dataclass
class FrfEstimate:
    """FRF ``frf`` [m/A] at ``freq_hz`` with coherences u-y and r-y and the number of averaged periods."""

    freq_hz: np.ndarray
    frf: np.ndarray
    coherence: np.ndarray
    coherence_ry: np.ndarray
    n_periods: int


def estimate_frf(r: np.ndarray, u: np.ndarray, y: np.ndarray, band: Band, settle_periods: int,
                 current_lead_s: float = 0.0) -> FrfEstimate:
    """Closed-loop FRF of one band from the injection ``r``, current ``u`` and length ``y`` (module doc).
    Periods in which ``u`` or ``y`` hold a NaN are left out of the averages (fewer than two left: NaN lines).
    ``current_lead_s``: how much earlier the current sample represents than the length sample (a current
    averaged over a step against the length at its end: half a step); the FRF is corrected by
    ``e^{-j w current_lead_s}``."""
    n = len(band.period)
    p = band.n_periods - settle_periods
    if p < 1:
        raise ValueError("no period left after the settling periods")
    sl = slice(settle_periods * n, band.n_periods * n)
    # a period holding a NaN (left out by the rig, e.g. one a stall disturbed) is not averaged
    keep = np.isfinite(np.asarray(u[sl], dtype=float).reshape(p, n)).all(axis=1) & \
        np.isfinite(np.asarray(y[sl], dtype=float).reshape(p, n)).all(axis=1)
    if not keep.all():
        if keep.sum() < 2:      # no average left: nothing estimated (the lines get no coherence)
            nan = np.full(len(band.bins), np.nan)
            return FrfEstimate(band.freq_hz.copy(), nan + 0j, nan, nan.copy(), int(keep.sum()))
        p = int(keep.sum())

    def spec(x):
        rows = np.asarray(x[sl], dtype=float).reshape(-1, n)
        return np.fft.rfft(rows if keep.all() else rows[keep], axis=1)[:, band.bins]

    rr, uu, yy = spec(r), spec(u), spec(y)
    syr = np.sum(yy * rr.conj(), axis=0)
    sur = np.sum(uu * rr.conj(), axis=0)
    syu = np.sum(yy * uu.conj(), axis=0)
    suu = np.sum(np.abs(uu) ** 2, axis=0)
    syy = np.sum(np.abs(yy) ** 2, axis=0)
    srr = np.sum(np.abs(rr) ** 2, axis=0)
    if p > 1:
        coh = np.abs(syu) ** 2 / (suu * syy)
        coh_ry = np.abs(syr) ** 2 / (srr * syy)
    else:       # one period: no averaging, coherence undefined -> 1 by convention (nothing to compare)
        coh = np.ones(len(band.bins))
        coh_ry = np.ones(len(band.bins))
    frf = syr / sur * np.exp(-2j * np.pi * band.freq_hz * current_lead_s)
    return FrfEstimate(band.freq_hz.copy(), frf, coh, coh_ry, p)


@dataclass
class LegFit:
    """Fit of ``P(s) = gain_num / (s (s + omega_c)) e^{-s delay}`` to one leg's FRF."""

    leg: int                     # 1-based
    gain_num: float              # k w_c [m/(A s^2)]
    omega_c_rad_per_s: float
    delay_s: float
    rms_log_error: float         # RMS of |ln P^ - ln P| over the fitted lines
    n_lines: int
    min_coherence: float         # over the fitted lines

    @property
    def k_m_per_a(self) -> float:
        return self.gain_num / self.omega_c_rad_per_s

    def frf(self, freq_hz) -> np.ndarray:
        s = 2j * np.pi * np.asarray(freq_hz, dtype=float)
        return self.gain_num / (s * (s + self.omega_c_rad_per_s)) * np.exp(-s * self.delay_s)


def fit_leg_model(freq_hz, frf, weights=None, fit_delay: bool = False, leg: int = 0,
                  coherence=None) -> LegFit:
    """Least-squares fit of the complex log of ``frf`` (module doc); ``weights`` (>= 0) per line."""
    f = np.asarray(freq_hz, dtype=float)
    h = np.asarray(frf, dtype=complex)
    w = np.ones(len(f)) if weights is None else np.asarray(weights, dtype=float)
    use = w > 0
    if use.sum() < 3:
        raise ValueError(f"leg {leg}: {int(use.sum())} usable lines; at least 3 are needed for the fit")
    f, h, w = f[use], h[use], w[use]
    s = 2j * np.pi * f
    # Levy: h s^2 = num - wc h s  -> real linear least squares in (num, wc)
    a = np.column_stack([np.ones(len(s)), -h * s]) * w[:, None]
    b = h * s * s * w
    sol, *_ = np.linalg.lstsq(np.vstack([a.real, a.imag]), np.concatenate([b.real, b.imag]), rcond=None)
    num0 = abs(sol[0]) if sol[0] != 0 else 1.0
    wc0 = abs(sol[1]) if sol[1] != 0 else 1.0
    lh = np.log(h)

    def resid(theta):
        num, wc = np.exp(theta[0]), np.exp(theta[1])
        tau = theta[2] if fit_delay else 0.0
        lm = np.log(num / (s * (s + wc))) - s * tau
        d = lh - lm
        d = d.real + 1j * np.angle(np.exp(1j * d.imag))     # phase difference wrapped to (-pi, pi]
        return np.concatenate([d.real * w, d.imag * w])

    x0 = [math.log(num0), math.log(wc0)] + ([0.0] if fit_delay else [])
    res = least_squares(resid, x0, method="lm" if len(f) * 2 > len(x0) else "trf")
    num, wc = float(np.exp(res.x[0])), float(np.exp(res.x[1]))
    tau = float(res.x[2]) if fit_delay else 0.0
    r = res.fun
    rms = float(np.sqrt(np.sum(r ** 2) / max(np.sum(w ** 2), 1e-300)))
    cmin = float(np.min(np.asarray(coherence)[use])) if coherence is not None else float("nan")
    return LegFit(leg, num, wc, tau, rms, int(len(f)), cmin)


# ----------------------------------------------------------------------------------------------- result


@dataclass
class SysIdResult:
    """FRFs (one row per identified leg) and fits of an identification run."""

    params: SysIdParams
    legs: tuple[int, ...]
    freq_hz: np.ndarray
    frf: np.ndarray               # (n_legs, n_lines) complex [m/A]
    coherence: np.ndarray         # (n_legs, n_lines) u-y
    coherence_ry: np.ndarray      # (n_legs, n_lines) r-y
    fits: list[LegFit] = field(default_factory=list)

    def plant_parameters(self, base: LegPlantParams | None = None) -> LegPlantParams:
        """Table 4.1-style leg models: identified legs replaced, the others taken from ``base``."""
        base = base or LegPlantParams()
        num, wc = list(base.gain_num), list(base.omega_c_rad_per_s)
        for fit in self.fits:
            num[fit.leg - 1] = fit.gain_num
            wc[fit.leg - 1] = fit.omega_c_rad_per_s
        return LegPlantParams(gain_num=tuple(num), omega_c_rad_per_s=tuple(wc))

    def plant_config(self, base: LegPlantParams | None = None) -> dict:
        """``{"sim_plant": {"legs": {...}}}``: merge into a scenario to make the twin use the identified legs."""
        lp = self.plant_parameters(base)
        return {"sim_plant": {"legs": {"gain_num": [float(v) for v in lp.gain_num],
                                       "omega_c_rad_per_s": [float(v) for v in lp.omega_c_rad_per_s]}}}

    def to_yaml(self, base: LegPlantParams | None = None) -> str:
        p = self.params
        lines = ["# Leg models P_i(s) = gain_num_i / (s (s + omega_c_i)) identified in closed loop",
                 f"# segmented multisine: {p.n_bands} bands up to {p.f_max_hz:g} Hz, spacing {p.spacing_hz:g} Hz, "
                 f"{p.band_duration_s:g} s per band, {p.amplitude_a:g} A rms",
                 "# leg  k*w_c [m/(A s^2)]  w_c [rad/s]  k [m/A]  delay [ms]  rms ln-error  lines  min coherence"]
        for f in self.fits:
            lines.append(f"#  {f.leg}   {f.gain_num:12.2f}   {f.omega_c_rad_per_s:9.3f}  {f.k_m_per_a:8.4f}  "
                         f"{f.delay_s * 1e3:8.4f}  {f.rms_log_error:10.4f}  {f.n_lines:5d}  {f.min_coherence:8.3f}")
        lines.append("# (the digital twin models no current-to-length delay; a fitted delay is for information)")
        return "\n".join(lines) + "\n" + yaml.safe_dump(self.plant_config(base), sort_keys=False)

    def write_yaml(self, path, base: LegPlantParams | None = None) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_yaml(base))


def load_plant_config(source) -> LegPlantParams:
    """Leg models from a plant configuration (a dict as :meth:`SysIdResult.plant_config` returns, or the path
    of a YAML written by :meth:`SysIdResult.write_yaml`), validated like any scenario section."""
    if not isinstance(source, dict):
        with open(source, encoding="utf-8") as fh:
            source = yaml.safe_load(fh)
    try:
        legs = source["sim_plant"]["legs"]
    except (KeyError, TypeError):
        raise ParameterError("plant configuration: expected a mapping sim_plant: {legs: {...}}") from None
    return build(LegPlantParams, legs, section="sim_plant.legs")


def identify(rig, params: SysIdParams | None = None, progress=None) -> SysIdResult:
    """Run the segmented multisine on every leg of ``params.legs`` in turn (each band from rest) and fit."""
    p = params or SysIdParams()
    bands = segmented_multisine(p, rig.dt_s)
    freq = np.concatenate([b.freq_hz for b in bands])
    legs = tuple(p.legs)
    frf = np.empty((len(legs), len(freq)), dtype=complex)
    coh = np.empty((len(legs), len(freq)))
    coh_ry = np.empty((len(legs), len(freq)))
    fits = []
    for row, leg in enumerate(legs):
        col = 0
        for bi, band in enumerate(bands):
            rig.reset()
            r = band.signal
            u, y = rig.run(leg - 1, r)
            est = estimate_frf(r, u, y, band, p.settle_periods, getattr(rig, "current_lead_s", 0.0))
            m = len(band.bins)
            frf[row, col:col + m] = est.frf
            coh[row, col:col + m] = est.coherence
            coh_ry[row, col:col + m] = est.coherence_ry
            col += m
            if progress is not None:
                progress(leg, bi, est)
        wts = ((coh[row] >= p.coherence_min) & (freq >= p.fit_f_min_hz) & (freq <= p.fit_f_max_hz)).astype(float)
        fits.append(fit_leg_model(freq, frf[row], wts, p.fit_delay, leg, coh[row]))
    return SysIdResult(p, legs, freq, frf, coh, coh_ry, fits)
