"""Adaptive feedforward filter (AFF): leaky normalised filtered-x LMS with one FIR filter per leg.

Insam 2022, ch. 7, eqs. 7.1-7.5, Table A.5.  Per leg i (index dropped):

* reference (regressor) ``b`` = the desired leg lengths of the last N_FIR steps, newest first,
  here as deviations from the home leg length (see "Regressor" below);
* filtered reference ``b~`` = the same history passed through a model S of the secondary path (the
  closed-loop transfer function of the leg from desired to achieved length, built from Table 4.1 and
  the cascade gains of Table A.1, not identified online);
* gap ``g = b - b'`` between the UN-augmented desired length and the measured length;
* leaky normalised update (eq. 7.4 with the filtered regressor, the normalisation of §7.3)::

      mu_bar = mu / (delta + b~ . b~)
      Theta <- nu Theta + mu_bar g b~

  (``nu = 1 - mu gamma_LMS`` is the leakage of the regularised cost 7.1);
* output (eq. 7.5), a displacement added to the leg position command (position-level injection)::

      u = Theta . b                    b_cmd = b + u

  The filter runs on the raw reference and adapts with the filtered one (standard FXLMS; the OCR'd
  eqs. 7.4/7.5 show b and b-hat, which the text explains as the secondary-path filtering of b).

Modified FXLMS (``algorithm='modified'``, the default).  Eq. 7.4 as printed adapts with the measured gap,
which answers a change of Theta only through the closed-loop leg, 30-50 ms later; that delay inside the
adaptation loop makes mu = 0.1 unstable in the twin.  The modified form forms the gap the current
coefficients would have left, ``e_k = g_k + S(u)_k - Theta . b~_k`` (``S(u)``: the secondary-path model
driven by the applied output), and adapts with it; for an exact model this is plain NLMS on a static
regression, stable for 0 < mu < 2, with the same Wiener solution.  ``algorithm='fxlms'`` keeps the
printed form.

Timing (fast-path step k, see docs/aff.md).  ``step(b_desired, b_measured)`` is called once per step with
``b_measured = b'_k`` (the measurement m_k) and ``b_desired = b_{k+1} = IK(z_{k+1})`` (the un-augmented
command that will be held over t_k -> t_{k+1}):

1. adapt with ``g_k = b_k - b'_k``, where ``b_k`` is the desired length passed at the previous call (the
   command held over t_{k-1} -> t_k, i.e. the length b'_k should have reached); the filtered buffer holds
   ``[b~_k, b~_{k-1}, ...]`` at that moment, so the gap and the regressor refer to the same instant;
2. push ``b_{k+1}`` into the raw buffer and ``b~_{k+1} = S(b_{k+1})`` into the filtered buffer;
3. return ``u_{k+1} = Theta . [b_{k+1}, b_k, ...]``; the caller commands ``b_{k+1} + u_{k+1}``.

Secondary path.  The closed loop of the leg from desired to measured length (T_VFF if the platform uses
velocity feedforward, else T_fb).  With the command for t_{k+1} held over
t_k -> t_{k+1}, the sample b'_{k+1} depends on b_{k+1}; the zero-order-hold discretisation
(x_{n+1} = A x_n + B u_n, y_n = C x_n) of the continuous closed loop is therefore used one sample advanced,
``b~_{k+1} = C (A x_k + B b_{k+1})``, i.e. the state space (A, B, C A, C B).  Its unit-step samples are
exactly those of the continuous closed loop driven by the held command; its frequency response is the
continuous one times e^{+j w dt/2} (half a sample ahead) to within 0.07 % up to 20 Hz and 0.4 % at
50 Hz (with VFF 0.33 % and 0.9 %).
'identity' uses S = 1.

Regressor.  The thesis feeds the leg lengths.  Absolute lengths (about 0.7 m against motions of a few mm)
make every tap of the regressor almost the constant b_home: b~ ~ b ~ b_home, mu_bar ~ mu / (N_FIR b_home^2),
all taps get the same update and the filter degenerates to an integral action on the gap,
``u_{k+1} ~ nu u_k + mu g_k``, whatever N_FIR and the secondary-path model (it is no longer a filtered-x
FIR filter, and a static gap offset at rest winds it up).  The deviations ``b - b_home`` carry only the
motion: at rest nothing is output or adapted, the output is a linear filter of the motion, and the taps
carry the shape of the motion with the older taps smaller (as described for Fig. 7.7a).
``regressor='absolute'`` is kept for comparison; test/core/learning/test_core_aff.py checks both properties.  In the
twin the absolute (integral-action) version tracks better at equal mu, with the same stability limit
(docs/aff.md, "Results").

The per-step work (six legs x N_FIR taps: update, shift, FIR output) is one numba kernel operating on
preallocated arrays.
"""
from __future__ import annotations

import numba
import numpy as np

from rths_ros.core.learning.aff.params import AffParams
from rths_ros.core.learning.aff.secondary_path import SecondaryPath, _sp_leg
from rths_ros.core.plant.legs import N_LEGS, LegCascadeParams, LegPlantParams

__all__ = ["FxlmsAff"]


@numba.njit(cache=True, nogil=True)
def fxlms_adapt_kernel(theta, filt, b_k, b_meas, ref, sp_a, sp_b, sp_c, sp_d, sp_x, xn, mu, nu, delta, gap_out,
                       modified, u_k, sp_xu):
    """Adaptation half of one AFF step, all legs, in place: push b~_k = S(b_k - ref) into the
    filtered regressor, then adapt with the gap g_k = b_k - b'_k (eq. 7.4, normalised).

    ``modified``: adapt with e_k = g_k + S(u)_k - Theta . b~_k instead of g_k, where ``u_k`` is the output
    applied with b_k and ``sp_xu`` the state of the secondary-path model driven by it (see the module doc)."""
    n_legs, n = theta.shape
    for i in range(n_legs):
        y = _sp_leg(sp_a, sp_b, sp_c, sp_d, sp_x, i, b_k[i] - ref[i], xn)
        for j in range(n - 1, 0, -1):
            filt[i, j] = filt[i, j - 1]
        filt[i, 0] = y
        g = b_k[i] - b_meas[i]
        gap_out[i] = g
        e = g
        if modified:
            e += _sp_leg(sp_a, sp_b, sp_c, sp_d, sp_xu, i, u_k[i], xn)
            for j in range(n):
                e -= theta[i, j] * filt[i, j]
        nrm = 0.0
        for j in range(n):
            nrm += filt[i, j] * filt[i, j]
        step = mu / (delta + nrm) * e
        for j in range(n):
            theta[i, j] = nu * theta[i, j] + step * filt[i, j]


@numba.njit(cache=True, nogil=True)
def fxlms_output_kernel(theta, raw, b_next, ref, u_out):
    """Output half: push b_{k+1} - ref into the raw regressor, u_{k+1} = Theta . raw (eq. 7.5)."""
    n_legs, n = theta.shape
    for i in range(n_legs):
        for j in range(n - 1, 0, -1):
            raw[i, j] = raw[i, j - 1]
        raw[i, 0] = b_next[i] - ref[i]
        u = 0.0
        for j in range(n):
            u += theta[i, j] * raw[i, j]
        u_out[i] = u


class FxlmsAff:
    """Six leaky normalised FXLMS FIR filters (Insam 2022 ch. 7), one per leg.

    Parameters
    ----------
    params:
        :class:`AffParams` (Table A.5 defaults).
    leg_plant_params, cascade_params:
        Table 4.1 leg models and Table A.1 gains, for the secondary-path model.
    vff:
        whether the platform adds the desired leg velocity (VFF); selects T_VFF instead of T_fb as the
        closed-loop secondary path.
    dt_s:
        synchronisation step.
    home_lengths:
        (6,) leg lengths at the home pose (regressor reference, and the desired length before the first
        call).  ``None``: taken from ``b_measured`` of the first call after :meth:`reset` (the platform is at
        rest at home at the start of a trial).

    Per step call :meth:`step`; the attributes ``coefficients`` (6, N_FIR), ``gap`` (6,) and ``output``
    (6,) are views of internal buffers, updated in place.
    """

    kind = "fir"

    def __init__(self, params: AffParams | None = None, leg_plant_params: LegPlantParams | None = None,
                 cascade_params: LegCascadeParams | None = None, vff: bool = False, dt_s: float = 1e-3,
                 home_lengths=None):
        self.params = params if params is not None else AffParams()
        p = self.params
        self.path = SecondaryPath(p.secondary_path, leg_plant_params, cascade_params, vff, dt_s)
        self.dt_s = self.path.dt_s
        n = int(p.n_taps)
        self._theta = np.zeros((N_LEGS, n))
        self._raw = np.zeros((N_LEGS, n))
        self._filt = np.zeros((N_LEGS, n))
        self._b_prev = np.zeros(N_LEGS)
        self._ref = np.zeros(N_LEGS)
        self._home = np.zeros(N_LEGS)
        self._gap = np.zeros(N_LEGS)
        self._u = np.zeros(N_LEGS)
        self._b_des = np.zeros(N_LEGS)
        self._b_meas = np.zeros(N_LEGS)
        self._u_k = np.zeros(N_LEGS)
        self._modified = p.algorithm == "modified"
        self._xu = np.zeros_like(self.path.x)
        self._fixed_home = None if home_lengths is None else np.array(home_lengths, dtype=float).reshape(N_LEGS)
        self._mu = float(p.mu)
        self._nu = float(p.nu)
        self._delta = float(p.delta)
        # warm up the kernel on scratch copies (compiles or loads from the cache)
        pth = self.path
        z6 = np.zeros(N_LEGS)
        fxlms_adapt_kernel(self._theta.copy(), self._filt.copy(), z6, z6, z6, pth.a, pth.b, pth.c, pth.d,
                           pth.x.copy(), pth.scratch, self._mu, self._nu, self._delta, z6.copy(), True, z6,
                           pth.x.copy())
        fxlms_output_kernel(self._theta.copy(), self._raw.copy(), z6, z6, z6.copy())
        self.reset()

    # ------------------------------------------------------------------------------------------------
    @property
    def coefficients(self) -> np.ndarray:
        """FIR coefficients Theta, (6, N_FIR), tap 0 weights the newest sample (view; updated in place)."""
        return self._theta

    @property
    def gap(self) -> np.ndarray:
        """Leg gaps g_k = b_k - b'_k used in the last adaptation [m] (view)."""
        return self._gap

    @property
    def gains(self) -> tuple[float, ...]:
        """Changing adaptation gains: none (the step size and leakage are fixed)."""
        return ()

    @property
    def output(self) -> np.ndarray:
        """Last output u_{k+1} [m] (view)."""
        return self._u

    @property
    def uses_output(self) -> bool:
        """True for the modified algorithm: :meth:`adapt` needs the output u_k applied with b_k."""
        return self._modified

    @property
    def home_lengths(self) -> np.ndarray | None:
        return None if self._need_home else self._home

    def reset(self, home_lengths=None) -> None:
        """Coefficients zero (start of a test, §7.4); regressor history = at rest at home.

        ``home_lengths`` (6,) overrides the constructor's; if neither is given, the home lengths are taken
        from the first measurement passed to :meth:`step`.
        """
        self._theta[:] = 0.0
        self._gap[:] = 0.0
        self._u[:] = 0.0
        self._xu[:] = 0.0
        if home_lengths is not None:
            self._fixed_home = np.array(home_lengths, dtype=float).reshape(N_LEGS)
        if self._fixed_home is None:
            self._need_home = True
            self._raw[:] = 0.0
            self._filt[:] = 0.0
            self.path.reset()
        else:
            self._set_home(self._fixed_home)

    def _set_home(self, home: np.ndarray) -> None:
        self._need_home = False
        self._home[:] = home
        self._b_prev[:] = home
        if self.params.regressor == "deviation":
            self._ref[:] = home
            self._raw[:] = 0.0
            self._filt[:] = 0.0
            self.path.reset()
        else:
            self._ref[:] = 0.0
            self._raw[:] = home[:, None]
            self._filt[:] = home[:, None]    # S has unit DC gain: at rest the filtered history equals the raw one
            self.path.reset(home)

    def adapt(self, b_desired_k, b_measured_k, u_k=None, step: int | None = None) -> np.ndarray:
        """Adaptation half (the aff_learner's job): ``b_desired_k`` = un-augmented desired lengths b_k of
        the command held over t_{k-1} -> t_k, ``b_measured_k`` = b'_k, ``u_k`` = the filter output that was
        added to b_k (default: the last :meth:`feedforward` output of this object).  Updates
        ``coefficients``; returns the gap g_k (view).  ``step`` (the step index) is not used by the FIR
        filter (accepted for the interface of the harmonic filter)."""
        if not self.params.enabled:
            return self._gap
        self._b_meas[:] = b_measured_k
        if self._need_home:
            self._set_home(self._b_meas)
        self._b_des[:] = b_desired_k
        self._u_k[:] = self._u if u_k is None else u_k
        pth = self.path
        fxlms_adapt_kernel(self._theta, self._filt, self._b_des, self._b_meas, self._ref, pth.a, pth.b, pth.c,
                           pth.d, pth.x, pth.scratch, self._mu, self._nu, self._delta, self._gap,
                           self._modified, self._u_k, self._xu)
        return self._gap

    def feedforward(self, b_desired_next, theta=None, step: int | None = None) -> np.ndarray:
        """Output half (the fast path's job): push b_{k+1} and return u_{k+1} = Theta . raw, with this
        filter's coefficients or the given ``theta`` (6, N_FIR) published by the learner.  ``step`` is not
        used (the FIR output does not depend on time)."""
        if not self.params.enabled:
            return self._u
        if self._need_home:
            raise RuntimeError("FxlmsAff.feedforward before the home lengths are known: pass home_lengths "
                               "to the constructor or reset(), or call adapt() first")
        self._b_des[:] = b_desired_next
        fxlms_output_kernel(self._theta if theta is None else theta, self._raw, self._b_des, self._ref, self._u)
        return self._u

    def step(self, b_desired, b_measured) -> np.ndarray:
        """One synchronisation step (see the module doc for the timing): :meth:`adapt` with the previous
        desired lengths b_k and the measurement b'_k, then :meth:`feedforward` with b_{k+1}.

        ``b_desired``: (6,) un-augmented desired leg lengths b_{k+1} of the command about to be sent [m];
        ``b_measured``: (6,) measured leg lengths b'_k of this step [m].
        Returns u_{k+1} (6,) [m] to add to the leg length command (internal buffer, overwritten next call).
        With ``enabled`` False the output stays 0 and nothing adapts.
        """
        if not self.params.enabled:
            return self._u
        if self._need_home:
            self._set_home(np.asarray(b_measured, dtype=float))
        self.adapt(self._b_prev, b_measured)
        self._b_prev[:] = b_desired
        return self.feedforward(b_desired)
