"""Independent integration: a multi-rate hybrid-test coupling (du Bois (IMAC, ch. 25), Sect. 25.2).

The numerical substructure is advanced with a coarse explicit step ``H``.  Between its steps a
fast outer loop (2 kHz in the paper) integrates only the interface DoFs with a model linearised
about the latest full-model state, so the actuator demand reacts to the measured force *within*
a model step::

    y'  = y'_0 + J (f - f_0)                 (25.1)  J = d y' / d f   (25.2)
    y  <- y + y' dt                          (25.3)
    y  <- (1 - alpha) y + alpha y_ref        (25.4, corrected; as printed "(alpha - 1) y + alpha y0")

``y'_0``, ``f_0``: interface velocity of the full model and measured force at the latest model
step; ``f``: force measured at the current fast sample; ``alpha``: reconciliation gain applied at
every fast sample.  The full model is then advanced with the **mean** of the forces sampled over
its step.  With ``f == f_0`` throughout, the fast loop reproduces one explicit-Euler step of the
full model (the property the paper states; tested).

Choices where the paper is ambiguous (all selectable, defaults marked):

* ``force_ref`` (``f_0`` in 25.1): ``"mean"`` (default) the force the full model's latest step
  was advanced with, i.e. the mean force of the previous model step (the first sample at the
  first step).  ``y'_0`` was computed from that force and ``J`` is its derivative with respect to
  it, so ``y'_0 + J (f - f_0)`` is the first-order estimate of the model velocity had the force
  been ``f``: a linearisation about the point where ``J`` was taken.  ``"sample"``: the force
  sampled at ``t_k``, a force the model never used; on a pre-loaded contact it differs from the
  model's force by up to the pre-load, and the fast loop then holds that force for a whole step
  (a spurious impulse of up to ``pre-load * H`` per step, the rebounds of the contact example).

* ``jacobian``: ``"step"`` (default) ``J = d v_{k+1} / d f_k`` of the discrete model step,
  obtained by finite differences over perturbed copies of the step (the "parallel" evaluation of
  the paper; ``H/m`` for a 1-DoF explicit-Euler model); ``"growing"`` ``J(t) = J (t - t_k) / H``,
  the continuous sensitivity that grows within the step.
* ``reference`` (``y_ref`` in 25.4): ``"hold"`` (default) the full model's interface position at
  the latest step (the literal ``y_0``); ``"euler_path"`` the full model's explicit-Euler path
  ``y_0 + y'_0 (t - t_k)`` inside the step (with it the ``f == f_0`` equivalence holds for any
  ``alpha``; with ``"hold"`` only for ``alpha = 0``).
* The fast-loop state ``y`` is carried across model steps (the actuator demand must not jump).
* The actuator is ideal (du Bois (IMAC, ch. 25)): the specimen sits at the demanded position and the force is
  sampled there at every fast sample.

The contact example of the paper (Table 25.1) is provided as :class:`ContactExampleParams` with
:func:`simulate_reference` (continuous, variable-step RK45 with the contact switching located by an
event), :func:`simulate_explicit_euler` (conventional coupling: the actuator holds ``x_k`` for the
step and the model uses the force sampled at ``t_k``) and :func:`simulate_independent`.  The
"physical" spring is read as a one-sided spring of stiffness ``K_P`` with its free length at
``x = 0``, held pre-compressed by a stop so that it engages at ``x = 20 mm`` with a force jump of
``K_P * 20 mm = 10 N``; the numerical mass is pushed by a unit step force.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rths_ros.params import ParameterError, param

JACOBIAN_CHOICES = ("step", "growing")
REFERENCE_CHOICES = ("hold", "euler_path")
FORCE_REF_CHOICES = ("mean", "sample")


@dataclass(frozen=True)
class IndependentIntegrationParams:
    """Multi-rate independent integration (du Bois (IMAC, ch. 25))."""

    main_step_s: float = param(0.01, "s", 1e-5, 1.0, "H: step of the full numerical model (seed: 10/20 ms)")
    fast_step_s: float = param(0.0005, "s", 1e-6, 0.1, "dt: step of the interface loop (2 kHz in du Bois (IMAC, ch. 25))")
    alpha: float = param(1e-3, "", 0.0, 1.0, "reconciliation gain per fast step (du Bois (IMAC, ch. 25): 1e-3 and 5e-3)")
    jacobian: str = param("step", "", doc="'step' = dv_{k+1}/df of the discrete model step (finite differences); "
                          "'growing' = that value scaled by (t - t_k)/H", choices=JACOBIAN_CHOICES)
    reference: str = param("hold", "", doc="reconciliation target: 'hold' = model interface position at the "
                           "latest step; 'euler_path' = the model's Euler path inside the step",
                           choices=REFERENCE_CHOICES)
    force_ref: str = param("mean", "", doc="f_0 of eq. 25.1: 'mean' = the force the model's latest step used (mean "
                           "of the previous step's samples); 'sample' = the force sampled at the model step",
                           choices=FORCE_REF_CHOICES)

    def validate(self) -> None:
        n = self.main_step_s / self.fast_step_s
        if abs(n - round(n)) > 1e-6 or round(n) < 1:
            raise ParameterError(f"fast_step_s: {self.fast_step_s!r} must divide main_step_s={self.main_step_s!r} "
                                 "into a whole number of fast steps")

    @property
    def substeps(self) -> int:
        return int(round(self.main_step_s / self.fast_step_s))


class LinearEulerModel:
    """Full numerical model ``M x'' + C x' + K x = f_ext + G^T f_int`` advanced by explicit Euler.

    ``G`` (``n_int x n``) selects the interface DoFs; ``f_int`` is the force the specimen exerts
    on the model at the interface.
    """

    def __init__(self, M, C, K, G=None, x0=None, v0=None) -> None:
        self.M = np.atleast_2d(np.asarray(M, dtype=np.float64))
        n = self.M.shape[0]
        self.C = np.atleast_2d(np.asarray(C, dtype=np.float64)).reshape(n, n)
        self.K = np.atleast_2d(np.asarray(K, dtype=np.float64)).reshape(n, n)
        self.G = np.eye(n) if G is None else np.atleast_2d(np.asarray(G, dtype=np.float64))
        self.Minv = np.linalg.inv(self.M)
        self.x = np.zeros(n) if x0 is None else np.asarray(x0, dtype=np.float64).reshape(n).copy()
        self.v = np.zeros(n) if v0 is None else np.asarray(v0, dtype=np.float64).reshape(n).copy()
        self.n = n
        self.n_int = self.G.shape[0]

    def step_from(self, x, v, f_int, f_ext, H) -> tuple[np.ndarray, np.ndarray]:
        """One explicit-Euler step from ``(x, v)`` (pure; used for the perturbed copies)."""
        force = np.asarray(f_ext, dtype=np.float64) + self.G.T @ np.atleast_1d(np.asarray(f_int, dtype=np.float64))
        acc = self.Minv @ (force - self.C @ v - self.K @ x)
        return x + H * v, v + H * acc

    def step(self, f_int, f_ext, H) -> None:
        self.x, self.v = self.step_from(self.x, self.v, f_int, f_ext, H)

    def velocity_jacobian(self, f_int, f_ext, H, rel_step: float = 1e-6) -> np.ndarray:
        """``J = d (G v_{k+1}) / d f_int`` by one-sided finite differences of ``n_int + 1`` step copies."""
        f0 = np.atleast_1d(np.asarray(f_int, dtype=np.float64))
        _, v_base = self.step_from(self.x, self.v, f0, f_ext, H)
        J = np.zeros((self.n_int, f0.size))
        for j in range(f0.size):
            h = rel_step * max(1.0, abs(f0[j]))
            fp = f0.copy()
            fp[j] += h
            _, vp = self.step_from(self.x, self.v, fp, f_ext, H)
            J[:, j] = self.G @ (vp - v_base) / h
        return J


class IndependentIntegrator:
    """Fast interface loop of du Bois (IMAC, ch. 25) (eqs. 25.1-25.4) with a force accumulator.

    Per model step: :meth:`begin_step` with ``y_0, y'_0``, the force sampled at the model step and
    ``J``; then ``substeps`` calls of :meth:`substep` with the force measured at the current demand,
    each returning the next demand; :meth:`mean_force` gives the force to feed back to the model.
    With ``force_ref = "mean"`` the linearisation force ``f_0`` is the mean of the previous step
    (the force the model was advanced with); at the first step, and with ``"sample"``, it is the
    sample passed to :meth:`begin_step`.
    """

    def __init__(self, params: IndependentIntegrationParams, n_int: int, y_init=None) -> None:
        self.params = params
        self.n = int(n_int)
        self.dt = params.fast_step_s
        self.H = params.main_step_s
        self.y = np.zeros(self.n) if y_init is None else np.asarray(y_init, dtype=np.float64).reshape(self.n).copy()
        self.ydot = np.zeros(self.n)
        self._y0 = np.zeros(self.n)
        self._yd0 = np.zeros(self.n)
        self._f0 = np.zeros(self.n)
        self._J = np.zeros((self.n, self.n))
        self._fsum = np.zeros(self.n)
        self._i = 0

    @property
    def f0(self) -> np.ndarray:
        """Linearisation force ``f_0`` of the current model step."""
        return self._f0

    def begin_step(self, y0, ydot0, f0, J) -> None:
        self._y0[:] = y0
        self._yd0[:] = ydot0
        if self.params.force_ref == "mean" and self._i > 0:
            self._f0[:] = self._fsum / self._i       # the force the model's latest step used
        else:
            self._f0[:] = f0
        self._J[:] = np.atleast_2d(J)
        self._fsum[:] = 0.0
        self._i = 0

    def substep(self, f) -> np.ndarray:
        p = self.params
        f = np.atleast_1d(np.asarray(f, dtype=np.float64))
        self._fsum += f
        J = self._J if p.jacobian == "step" else self._J * (self._i * self.dt / self.H)
        self.ydot = self._yd0 + J @ (f - self._f0)
        self.y = self.y + self.ydot * self.dt
        self._i += 1
        if p.reference == "hold":
            ref = self._y0
        else:
            ref = self._y0 + self._yd0 * (self._i * self.dt)
        self.y = (1.0 - p.alpha) * self.y + p.alpha * ref
        return self.y

    def mean_force(self) -> np.ndarray:
        return self._fsum / max(self._i, 1)


def run_independent(model: LinearEulerModel, params: IndependentIntegrationParams,
                    specimen_force: Callable[[np.ndarray, float], np.ndarray],
                    f_ext: Callable[[float], np.ndarray], duration_s: float) -> dict:
    """Couple ``model`` to an ideal-actuator specimen with independent integration.

    ``specimen_force(y, t)`` is the force the specimen exerts on the model at interface position
    ``y``; ``f_ext(t)`` the external force vector on the model (held over each model step).
    Returns fast-rate ``t_fast, y_phys, f_meas`` and model-rate ``t_main, y_model, f_fed``.
    """
    H, dt, N = params.main_step_s, params.fast_step_s, params.substeps
    n_main = int(round(duration_s / H))
    ii = IndependentIntegrator(params, model.n_int, y_init=model.G @ model.x)
    y_phys = np.zeros((n_main * N + 1, model.n_int))
    f_meas = np.zeros((n_main * N + 1, model.n_int))
    y_model = np.zeros((n_main + 1, model.n_int))
    f_fed = np.zeros((n_main, model.n_int))
    y_phys[0] = ii.y
    y_model[0] = model.G @ model.x
    for k in range(n_main):
        t_k = k * H
        fe = f_ext(t_k)
        f0 = np.atleast_1d(specimen_force(ii.y, t_k))
        J = model.velocity_jacobian(f0, fe, H)
        ii.begin_step(model.G @ model.x, model.G @ model.v, f0, J)
        for i in range(N):
            idx = k * N + i
            f = f0 if i == 0 else np.atleast_1d(specimen_force(ii.y, t_k + i * dt))
            f_meas[idx] = f
            y_phys[idx + 1] = ii.substep(f)
        fm = ii.mean_force()
        f_fed[k] = fm
        model.step(fm, fe, H)
        y_model[k + 1] = model.G @ model.x
    f_meas[-1] = np.atleast_1d(specimen_force(ii.y, n_main * H))
    return {"t_fast": np.arange(n_main * N + 1) * dt, "y_phys": y_phys, "f_meas": f_meas,
            "t_main": np.arange(n_main + 1) * H, "y_model": y_model, "f_fed": f_fed}


# ------------------------------------------------------------------------------------------------
# du Bois (IMAC, ch. 25) contact example
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ContactExampleParams:
    """1-DoF numerical substructure and pre-loaded contact spring of du Bois (IMAC, ch. 25) (Table 25.1)."""

    m_kg: float = param(1.0, "kg", 1e-6, 1e6, "numerical mass m")
    k_n_n_per_m: float = param(40.0, "N/m", 0.0, 1e9, "numerical stiffness k_N")
    c_n_s_per_m: float = param(6.3, "N s/m", 0.0, 1e9, "numerical damping c")
    k_p_n_per_m: float = param(500.0, "N/m", 0.0, 1e12, "physical (contact) spring stiffness K_P")
    contact_m: float = param(0.02, "m", 0.0, 10.0,
                             "position where the pre-compressed spring engages (20 mm pre-compression)")
    step_force_n: float = param(1.0, "N", -1e6, 1e6, "step force applied to the mass at t = 0")

    def contact_force(self, x: float) -> float:
        """Force of the physical spring on the mass at position ``x`` (zero before contact)."""
        return -self.k_p_n_per_m * x if x >= self.contact_m else 0.0


def _model(p: ContactExampleParams) -> LinearEulerModel:
    return LinearEulerModel([[p.m_kg]], [[p.c_n_s_per_m]], [[p.k_n_n_per_m]])


def _rests_on_stop(p: ContactExampleParams) -> bool:
    """True when the step force cannot push through the pre-load nor leave the contact point."""
    net_out = p.step_force_n - p.k_n_n_per_m * p.contact_m
    return 0.0 < net_out < p.k_p_n_per_m * p.contact_m


def simulate_reference(p: ContactExampleParams, duration_s: float, t_eval: np.ndarray | None = None,
                       rest_speed_m_s: float = 1e-5) -> dict:
    """Continuous hybrid system (ideal: infinitely fast model, ideal actuator), RK45 with events.

    Each contact change is located by an event.  The rebounds of the paper's example shrink
    geometrically; once the speed at a contact event is below ``rest_speed_m_s`` the mass is
    taken to rest on the pre-loaded spring (``x = contact_m``), which is where the continuous
    solution converges.
    """
    def rhs(_t, s, in_contact):
        x, v = s
        f = -p.k_p_n_per_m * x if in_contact else 0.0
        return [v, (p.step_force_n - p.k_n_n_per_m * x - p.c_n_s_per_m * v + f) / p.m_kg]

    def crossing(_t, s, _c):
        return s[0] - p.contact_m

    crossing.terminal = True
    t0, state, contact = 0.0, np.array([0.0, 0.0]), False
    xs = []
    while t0 < duration_s:
        from scipy.integrate import solve_ivp  # imported on use
        sol = solve_ivp(rhs, (t0, duration_s), state, args=(contact,), events=crossing, rtol=1e-10, atol=1e-13,
                        max_step=1e-3, dense_output=True)
        t_end = sol.t[-1]
        if sol.status == 1 and sol.t_events[0].size:
            t_end = float(sol.t_events[0][0])
            state = sol.sol(t_end)
            state[0] = p.contact_m
            if abs(state[1]) < rest_speed_m_s and _rests_on_stop(p):
                # rebounds have decayed (they form a geometric series): the mass rests on the
                # pre-loaded spring at the contact point for the rest of the run
                xs.append((sol, t_end))
                xs.append((None, duration_s))
                break
            contact = bool(state[1] > 0.0)
            # step slightly past the switching point so the event does not re-trigger immediately
            rhs_v = rhs(t_end, state, contact)
            eps = 1e-9
            state = state + eps * np.asarray(rhs_v)
            t0 = t_end + eps
        else:
            t0 = duration_s
        xs.append((sol, t_end))
    if t_eval is None:
        t_eval = np.arange(0.0, duration_s + 1e-12, 5e-4)
    x = np.empty_like(t_eval)
    start = 0.0
    for sol, t_end in xs:
        m = (t_eval >= start) & (t_eval <= t_end + 1e-12)
        if m.any():
            x[m] = p.contact_m if sol is None else sol.sol(t_eval[m])[0]
        start = t_end
    return {"t": t_eval, "x": x}


def simulate_explicit_euler(p: ContactExampleParams, main_step_s: float, duration_s: float) -> dict:
    """Conventional coupling: actuator holds ``x_k``; the model steps with ``f_k = F(x_k)``."""
    n = int(round(duration_s / main_step_s))
    x = np.zeros(n + 1)
    v = 0.0
    for k in range(n):
        f = p.contact_force(x[k])
        a = (p.step_force_n - p.k_n_n_per_m * x[k] - p.c_n_s_per_m * v + f) / p.m_kg
        x[k + 1] = x[k] + main_step_s * v
        v = v + main_step_s * a
    return {"t": np.arange(n + 1) * main_step_s, "x": x}


def simulate_independent(p: ContactExampleParams, ip: IndependentIntegrationParams, duration_s: float) -> dict:
    """The contact example with independent integration (ideal actuator at the fast demand)."""
    out = run_independent(_model(p), ip, lambda y, _t: np.array([p.contact_force(float(y[0]))]),
                          lambda _t: np.array([p.step_force_n]), duration_s)
    return {"t": out["t_fast"], "x": out["y_phys"][:, 0], "t_main": out["t_main"], "x_model": out["y_model"][:, 0],
            "f_meas": out["f_meas"][:, 0]}


def held(t_grid: np.ndarray, t_samples: np.ndarray, x_samples: np.ndarray) -> np.ndarray:
    """Zero-order-hold resampling of ``x_samples`` (at ``t_samples``) onto ``t_grid``."""
    idx = np.searchsorted(t_samples, t_grid + 1e-12, side="right") - 1
    return x_samples[np.clip(idx, 0, x_samples.size - 1)]


def rebound_metrics(t: np.ndarray, x: np.ndarray, contact_m: float, window: tuple[float, float]) -> dict:
    """Depth of the rebounds below the contact point and peak-to-peak motion inside ``window``."""
    m = (t >= window[0]) & (t <= window[1])
    xs = x[m]
    return {"rebound_depth_m": float(max(0.0, contact_m - xs.min())), "peak_to_peak_m": float(xs.max() - xs.min())}


def rebounds(t: np.ndarray, x: np.ndarray, contact_m: float, min_depth_m: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Time of the lowest point and depth below ``contact_m`` of every completed excursion out of contact.

    An excursion counts once ``x`` drops more than ``min_depth_m`` below the contact point (so the
    sub-millimetre chatter of a sampled loop resting on the pre-loaded spring is not counted as a
    rebound) and ends when ``x`` is back within ``min_depth_m`` of it.  The start of the record is not an
    excursion (the mass approaches from below).
    """
    below = x < contact_m - min_depth_m
    times, depths = [], []
    i, n = 0, x.size
    while i < n:
        if below[i] and i > 0 and not below[i - 1]:
            j = i
            while j < n and below[j]:
                j += 1
            if j < n:  # completed excursion
                k = i + int(np.argmin(x[i:j]))
                times.append(float(t[k]))
                depths.append(float(contact_m - x[k]))
            i = j
        else:
            i += 1
    return np.asarray(times), np.asarray(depths)


def rebound_depths(t: np.ndarray, x: np.ndarray, contact_m: float, min_depth_m: float = 0.0) -> np.ndarray:
    """Depth below ``contact_m`` of every excursion out of contact (one value per rebound, :func:`rebounds`)."""
    return rebounds(t, x, contact_m, min_depth_m)[1]


def euler_contact_amplification(p: ContactExampleParams, main_step_s: float) -> float:
    """Spectral radius of explicit Euler for the in-contact linear dynamics (``> 1`` grows)."""
    k = p.k_n_n_per_m + p.k_p_n_per_m
    A = np.array([[0.0, 1.0], [-k / p.m_kg, -p.c_n_s_per_m / p.m_kg]])
    return float(np.max(np.abs(np.linalg.eigvals(np.eye(2) + main_step_s * A))))


__all__ = ["IndependentIntegrationParams", "LinearEulerModel", "IndependentIntegrator", "run_independent",
           "ContactExampleParams", "simulate_reference", "simulate_explicit_euler", "simulate_independent",
           "held", "rebound_metrics", "rebounds", "rebound_depths", "euler_contact_amplification",
           "FORCE_REF_CHOICES"]
