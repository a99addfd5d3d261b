"""PD-type Iterative Learning Control (ILC) of the leg feedforward, per leg, trial to trial.

Insam 2022, ch. 6, eq. 6.2, §6.2.2, Table A.4.  One ILC
iteration (trial) ``j`` is one complete RTHS test (one bump, ``t_end = 1/f_d``).  During the trial the
feedforward ``f_j`` (one value per leg and synchronisation step) is added to the leg commands; after the
trial, during the pause ``t_pause`` in which every state is reset, the whole record of the leg errors
``e_j = b_j - b'_j`` gives the feedforward of the next trial (eq. 6.2)::

    f_{j+1} = Q ( beta e_j + gamma de_j/dt + f_j ),      f_1 = 0

* ``L = beta + gamma d/dt`` is the PD learning function (``beta`` [1/s], ``gamma`` [-]).
* ``Q`` is the robustness filter: a Butterworth low pass of order ``q_order`` and cut-off ``f_Q,cut``
  applied forward and backward over the whole record (``scipy.signal.filtfilt``), i.e. zero phase with the
  magnitude ``|H(jw)|^2`` (order 1 reproduces the thesis's convergence numbers).  It runs
  offline, between trials, so the non-causal filter is allowed.
* Padding of ``Q``: odd extension (``x(-k) = 2 x(0) - x(k)``, likewise at the end) over
  ``q_pad_time_constants`` time constants ``1/(2 pi f_Q,cut)`` of the filter (bounded by the record
  length).  The odd extension keeps the end values and slopes, so a record that starts at rest
  (``e = f = 0``) keeps ``f_{j+1}(0) ~ 0`` instead of a start-up transient of the filter.
* ``de/dt``: ``derivative='central'`` uses the second-order central difference
  ``(e_{k+1} - e_{k-1}) / (2 dt)`` inside the record and one-sided first-order differences at its two ends
  (``numpy.gradient``, zero phase like ``Q``); ``'backward'`` uses ``(e_k - e_{k-1}) / dt`` with
  ``e_{-1} = 0`` (the trial starts at rest).

Injection level (§6.2.2).  ``injection='velocity'`` (default, thesis): ``f`` [m/s] is added after the
position controller, ``v_cmd = K_Pp (b - b') + f``.  ``injection='position'`` ("serial ILC", for closed
controllers): ``f`` [m] is added to the length command, ``b_cmd = b + f``.  With the gains scaled by
``1/K_Pp`` (``beta -> beta/K_Pp``, ``gamma -> gamma/K_Pp``, done here, so ``beta_per_s`` and ``gamma`` are
always given at velocity level as in Table A.4) both are mathematically equivalent:
``K_Pp (b + f_pos - b') = K_Pp (b - b') + f_vel`` with ``f_pos = f_vel / K_Pp``.

Alignment of the samples (used by the trial loops of the ROS node, the in-process runs and the tests).
Sample ``n = 0 .. n_samples-1`` of a trial belongs to loop step ``n``: the leg command computed in step
``n`` is ``b_{n+1} = IK(z_{n+1})`` and is held by the plant over ``t_n -> t_{n+1}``; ``f_j[:, n]`` is added
to that same command, and ``e_j[:, n] = b_{n+1} - b'_{n+1}`` with ``b'_{n+1}`` the measured lengths of the
measurement ``m_{n+1}`` that ends the step.  Both terms of the error belong to ``t_{n+1}``, and ``f[n]``
acts on ``e[n]`` within the same sample, so no extra time shift is applied in ``L``.

Divergence rule (the thesis aborted a diverging series after 10 iterations, §6.3.1).  Per trial a scalar
metric ``m_j`` is recorded (the interface ``e_track,rel`` when the caller passes it, else the RMS of the leg
error).  A series is stopped, :meth:`PdIlc.check_divergence` returning ``(True, reason)``, when

1. ``m_j`` is not finite, or
2. ``m_j > max_ratio_to_first * m_1`` (a bad transient far above feedback-only; 0 disables), or
3. the last ``consecutive_trials`` trial-to-trial ratios ``m_i / m_{i-1}`` all exceed ``growth_factor``
   (monotonic growth; the series' minimum then necessarily lies before those trials).

A converging series (decreasing, then levelling off in a noise band) never meets 3 as long as the band's
trial-to-trial scatter stays below ``growth_factor - 1`` (10 %); a frequency component with a loop gain of
eq. 6.18 above 0 dB grows geometrically and meets it once it dominates the metric.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rths_ros.params import ParameterError, param

__all__ = ["IlcParams", "PdIlc", "divergence_rule", "q_filter_coefficients", "q_filter_magnitude"]

INJECTIONS = ("velocity", "position")
DERIVATIVES = ("central", "backward")


@dataclass(frozen=True)
class IlcParams:
    """PD-type ILC (Insam 2022 eq. 6.2, Table A.4) and the divergence rule of a series."""

    enabled: bool = param(False, "", doc="learn a feedforward (False: f stays 0, the error norms are still recorded)")
    beta_per_s: float = param(10.0, "1/s", 0.0, 1e4,
                              "P-gain beta of the learning function L = beta + gamma s (velocity level, Table A.4)")
    gamma: float = param(1.0, "", 0.0, 1e3, "D-gain gamma of L (velocity level, Table A.4)")
    f_q_cut_hz: float = param(6.0, "Hz", 0.0, 1e4,
                              "cut-off f_Q,cut of the zero-phase Butterworth robustness filter Q; "
                              "0 = no filter (Q = 1)")
    q_order: int = param(1, "", 1, 8, "order of the Butterworth filter applied forward and backward (|Q| = |H|^2)")
    q_pad_time_constants: float = param(5.0, "", 0.0, 1e3,
                                        "odd padding of Q at both ends, in time constants 1/(2 pi f_Q,cut)")
    injection: str = param("velocity", "", doc="where f is added: 'velocity' after K_Pp (thesis) or 'position' to "
                           "the length command, then with beta/K_Pp and gamma/K_Pp", choices=INJECTIONS)
    derivative: str = param("central", "", doc="finite difference for de/dt: 'central' (numpy.gradient, "
                            "one-sided at the ends) or 'backward' (e_-1 = 0)", choices=DERIVATIVES)
    growth_factor: float = param(1.1, "", 1.0, 100.0,
                                 "divergence: a trial-to-trial growth of the metric above this factor counts")
    consecutive_trials: int = param(2, "", 1, 100,
                                    "divergence: this many consecutive growing trials stop the series")
    max_ratio_to_first: float = param(3.0, "", 0.0, 1e6,
                                      "divergence: stop when the metric exceeds this multiple of trial 1 (0 = off)")
    pause_s: float = param(1.0, "s", 0.0, 60.0, "pause t_pause between trials (states reset, update computed)")

    def validate(self) -> None:
        """No cross-field constraint: the Nyquist bound of ``f_q_cut_hz`` needs the step ``dt`` and is
        checked by :class:`PdIlc` (and :func:`q_filter_coefficients`)."""


def q_filter_coefficients(f_cut_hz: float, order: int, dt_s: float):
    """Butterworth low pass ``(b, a)`` of the robustness filter (applied forward-backward), or ``None``
    for ``f_cut_hz == 0`` (Q = 1)."""
    if f_cut_hz == 0.0:
        return None
    nyq = 0.5 / dt_s
    if not 0.0 < f_cut_hz < nyq:
        raise ParameterError(f"f_q_cut_hz: {f_cut_hz!r} is not allowed; expected 0 (no filter) or a value in "
                             f"(0, {nyq:g}) Hz (below the Nyquist frequency of dt = {dt_s:g} s)")
    from scipy import signal as _sig  # imported on use: scipy.signal is slow to import
    return _sig.butter(int(order), f_cut_hz, btype="low", fs=1.0 / dt_s)


def q_filter_magnitude(freq_hz, f_cut_hz: float, order: int, dt_s: float) -> np.ndarray:
    """``|Q(e^{jw dt})|`` of the zero-phase (forward-backward) filter = ``|H|^2`` of the digital Butterworth."""
    f = np.asarray(freq_hz, dtype=float)
    ba = q_filter_coefficients(f_cut_hz, order, dt_s)
    if ba is None:
        return np.ones_like(f)
    from scipy import signal as _sig
    _, h = _sig.freqz(ba[0], ba[1], worN=f, fs=1.0 / dt_s)
    return np.abs(h) ** 2


def divergence_rule(series, growth_factor: float = 1.1, consecutive_trials: int = 2,
                    max_ratio_to_first: float = 3.0) -> tuple[bool, str]:
    """Apply the divergence rule of the module doc to the per-trial metric ``series`` (trial 1 first)."""
    m = [float(v) for v in series]
    if not m:
        return False, "no trial yet"
    j = len(m)
    if not math.isfinite(m[-1]):
        return True, f"trial {j}: metric is {m[-1]!r}"
    if max_ratio_to_first > 0.0 and m[0] > 0.0 and m[-1] > max_ratio_to_first * m[0]:
        return True, (f"trial {j}: metric {m[-1]:.4g} exceeds {max_ratio_to_first:g} x trial 1 ({m[0]:.4g})")
    c = int(consecutive_trials)
    if j > c:
        i_min = int(np.argmin(m))
        tail = range(j - c, j)                    # 0-based indices of the last c trials
        ratios = [m[i] / m[i - 1] if m[i - 1] > 0.0 else math.inf for i in tail]
        if all(r > growth_factor for r in ratios):       # implies the minimum lies before these trials
            rs = ", ".join(f"{r:.3f}" for r in ratios)
            return True, (f"trial {j}: metric grew by more than {growth_factor:g}x in each of the last {c} trials "
                          f"(ratios {rs}) after its minimum {m[i_min]:.4g} at trial {i_min + 1}")
    return False, f"trial {j}: metric {m[-1]:.4g} (minimum {min(m):.4g}), no divergence"


class PdIlc:
    """PD-type ILC learner for ``n_legs`` legs and trials of ``n_samples`` synchronisation steps.

    ``k_pp_per_s`` (the position gain K_Pp of the cascade) is only used by ``injection='position'``.
    """

    def __init__(self, params: IlcParams | None, n_legs: int, n_samples: int, dt_s: float,
                 k_pp_per_s: float = 20.0):
        self.params = params if params is not None else IlcParams()
        self.params.validate()
        if int(n_legs) != n_legs or n_legs < 1:
            raise ParameterError(f"n_legs: {n_legs!r} is not allowed; expected an integer >= 1")
        if int(n_samples) != n_samples or n_samples < 2:
            raise ParameterError(f"n_samples: {n_samples!r} is not allowed; expected an integer >= 2")
        if not dt_s > 0.0:
            raise ParameterError(f"dt_s: {dt_s!r} is not allowed; expected a number > 0 s")
        p = self.params
        if p.injection == "position" and not k_pp_per_s > 0.0:
            raise ParameterError(f"k_pp_per_s: {k_pp_per_s!r} is not allowed with injection 'position'; "
                                 "expected K_Pp > 0 1/s")
        self.n_legs = int(n_legs)
        self.n_samples = int(n_samples)
        self.dt_s = float(dt_s)
        self.k_pp_per_s = float(k_pp_per_s)
        self._ba = q_filter_coefficients(p.f_q_cut_hz, p.q_order, self.dt_s)
        if self._ba is None:
            self.q_padlen = 0
        else:
            tau_samples = 1.0 / (2.0 * math.pi * p.f_q_cut_hz * self.dt_s)
            self.q_padlen = int(min(self.n_samples - 1, math.ceil(p.q_pad_time_constants * tau_samples)))
        scale = 1.0 / self.k_pp_per_s if p.injection == "position" else 1.0
        #: learning gains at the injection level (beta/K_Pp, gamma/K_Pp for position injection)
        self._scale = scale
        self.beta = p.beta_per_s * scale
        self.gamma = p.gamma * scale
        self._f = np.zeros((self.n_legs, self.n_samples))
        self._view = self._f.view()
        self._view.flags.writeable = False
        self.reset()

    def set_gains(self, beta_per_s: float | None = None, gamma: float | None = None) -> None:
        """New learning gains for the next update (a series tuned between trials): ``beta_per_s`` [1/s] and
        ``gamma`` as in :class:`IlcParams` (scaled to the injection level as at construction)."""
        if beta_per_s is not None:
            self.beta = float(beta_per_s) * self._scale
        if gamma is not None:
            self.gamma = float(gamma) * self._scale

    # ------------------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Start a new series: ``f_1 = 0``, trial 1, empty histories."""
        self._f.fill(0.0)
        self.trial = 1
        #: RMS over legs and samples of each trial's leg error [m]
        self.error_rms_history: list[float] = []
        #: max |e| of each trial [m]
        self.error_max_history: list[float] = []
        #: the metric of :meth:`check_divergence` per checked trial
        self.metric_history: list[float] = []

    @property
    def feedforward(self) -> np.ndarray:
        """``f_j`` (n_legs, n_samples), read-only: the values added in the coming trial, sample ``n`` to the
        command of step ``n`` ([m/s] for velocity injection, [m] for position injection)."""
        return self._view

    @property
    def feedforward_velocity_level(self) -> np.ndarray:
        """``f_j`` expressed at velocity level [m/s] (times K_Pp for position injection)."""
        if self.params.injection == "position":
            return self._f * self.k_pp_per_s
        return self._f.copy()

    def derivative(self, e: np.ndarray) -> np.ndarray:
        """``de/dt`` of a record (n_legs, n_samples) by the configured finite difference."""
        if self.params.derivative == "central":
            return np.gradient(e, self.dt_s, axis=1)
        d = np.empty_like(e)
        d[:, 0] = e[:, 0]
        d[:, 1:] = np.diff(e, axis=1)
        return d / self.dt_s

    def q_filter(self, x: np.ndarray) -> np.ndarray:
        """The robustness filter Q (zero phase, along the samples) applied to ``x`` (n_legs, n_samples)."""
        if self._ba is None:
            return np.array(x, dtype=float, copy=True)
        b, a = self._ba
        from scipy import signal as _sig
        return _sig.filtfilt(b, a, x, axis=-1, padtype="odd" if self.q_padlen > 0 else None,
                             padlen=self.q_padlen if self.q_padlen > 0 else None)

    def update(self, error) -> np.ndarray:
        """Learn from the trial just run: ``error`` = ``b - b'`` (n_legs, n_samples) [m] aligned as in the
        module doc.  Sets and returns ``f_{j+1} = Q(beta e_j + gamma de_j/dt + f_j)`` (eq. 6.2) and advances the
        trial counter.  With ``enabled`` False only the error norms are recorded and ``f`` stays 0."""
        e = np.asarray(error, dtype=float)
        if e.shape != self._f.shape:
            raise ValueError(f"error has shape {e.shape}; expected {self._f.shape} (n_legs, n_samples)")
        self.error_rms_history.append(float(np.sqrt(np.mean(e * e))))
        self.error_max_history.append(float(np.max(np.abs(e))))
        if self.params.enabled:
            u = self.beta * e + self._f
            if self.gamma != 0.0:
                u += self.gamma * self.derivative(e)
            self._f[:] = self.q_filter(u)
        self.trial += 1
        return self.feedforward

    def check_divergence(self, metric: float | None = None) -> tuple[bool, str]:
        """Record the metric of the trial just run (default: the RMS of its leg error) and apply the
        divergence rule (module doc).  Returns ``(stop, reason)``."""
        if metric is None:
            if not self.error_rms_history:
                return False, "no trial yet"
            metric = self.error_rms_history[-1]
        self.metric_history.append(float(metric))
        p = self.params
        return divergence_rule(self.metric_history, p.growth_factor, p.consecutive_trials, p.max_ratio_to_first)

    # ------------------------------------------------------------------------------------------------
    def save(self, path) -> Path:
        """Store the current feedforward with its parameters (npz) for reuse in later tests."""
        path = Path(path)
        meta = {"params": dataclasses.asdict(self.params), "n_legs": self.n_legs, "n_samples": self.n_samples,
                "dt_s": self.dt_s, "k_pp_per_s": self.k_pp_per_s, "trial": self.trial,
                "error_rms_history": self.error_rms_history, "metric_history": self.metric_history}
        with open(path, "wb") as fh:
            np.savez(fh, feedforward=self._f, meta=np.array(json.dumps(meta)))
        return path

    def load(self, path) -> None:
        """Load a stored feedforward as ``f`` of the coming trial.  The record shape and ``dt`` must match; a
        feedforward stored at the other injection level is converted with the stored and the own K_Pp."""
        with np.load(Path(path), allow_pickle=False) as data:
            f = np.array(data["feedforward"], dtype=float)
            meta = json.loads(str(data["meta"]))
        if f.shape != self._f.shape:
            raise ParameterError(f"feedforward in {path}: shape {f.shape} is not allowed; expected {self._f.shape}")
        if abs(meta["dt_s"] - self.dt_s) > 1e-12:
            raise ParameterError(f"feedforward in {path}: dt_s {meta['dt_s']!r} is not allowed; expected {self.dt_s!r}")
        stored = meta["params"]["injection"]
        if stored == "position":
            f = f * float(meta["k_pp_per_s"])
        if self.params.injection == "position":
            f = f / self.k_pp_per_s
        self._f[:] = f
