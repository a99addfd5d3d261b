"""FIR and IIR virtual parts built from impulse responses (Bartl 2019 §2.4).

Impulse responses (§2.4.1, eq. 2.58): ``H[n] = C [q_1[n] .. q_nu[n]]``, the output response to a unit Dirac on
input ``j``, computed with the implicit Newmark (or HHT) stepper of
:mod:`rths_ros.core.models.fe.integrators`, all inputs at once.  Three discrete Diracs (:func:`impulse_response`):

* ``"velocity"`` (eq. 2.61): ``q[0] = 0``, ``q'[0] = M^-1 B 1_j``, ``q''[0] = -M^-1 D q'[0]``, no force;
* ``"force_first"`` (eq. 2.62): ``f[0] = 2/dt B 1_j`` with ``q''[0] = 2/dt M^-1 B 1_j``, force zero afterwards;
* ``"force_second"`` (eq. 2.63): ``f[1] = 1/dt B 1_j`` from rest (no factor of ``M``), shifted back one step.
  This one makes the discrete convolution reproduce the stepper exactly: from rest,
  ``y_Newmark[n] = sum_{k=0}^{n} H[k] u[n-k] dt`` (the ``k = 0`` term is the stepper's direct feed-through).

FIR (§2.4.2): ``b[k] = H[k] w[k] dt`` (rectangle rule, eq. 2.64) with a truncation window ``w`` (eq. 2.74-2.76:
rectangular, cosine ``cos(pi k / 2M)``, Hann ``cos^2(pi k / 2M)``, zero beyond ``M``), and
``y[n] = sum_{k=1}^{M} b[k] u[n-k]`` (eq. 2.66): only past inputs.  :class:`FIRFilter` runs it as predictor and
corrector (eq. 2.72/2.73): ``y*[n+1] = sum_{k=2}^{M} b[k] u[n+1-k]`` is prepared after the step, the step itself is
``y[n+1] = y*[n+1] + b[1] u[n]``.

Split (§2.4.3): the lowest ``N_L`` free modes ``L = [Phi_R Phi_X]`` (rigid and slow, mass-normalised) are removed
from the impulse responses by ``Q = I - L L^T M`` (eq. 2.81), ``H_fast[n] = C Q q[n]`` (eq. 2.83), which the FIR
runs; the slow part ``zeta`` (eq. 2.84/2.85, ``zeta'' + 2 delta zeta' + omega^2 zeta = L^T B u``) runs as IIR
filters by impulse invariance (§2.4.4, App. A), ``y = C L zeta + y_fast`` (eq. 2.82/2.91).

IIR coefficients (:func:`iir_coefficients`), ``h(z) = b1 z^-1 / (1 + a1 z^-1 + a2 z^-2)`` with ``h[n] = h(n dt)``
of ``H(s) = 1 / (s^2 + 2 delta s + omega^2)``.  Table A.1 as printed has a wrong rigid-body row; derived here from
App. A.1 (``h(t) = (1 - e^{-2 delta t}) / (2 delta)``) it is ``b1 = (1 - p) / (2 delta)``, ``a1 = -(1 + p)``,
``a2 = p`` with ``p = e^{-2 delta dt}`` (the ``omega -> 0`` limit of the overdamped row), and for ``delta = 0``
(``h = t``) ``b1 = dt``, ``a1 = -2``, ``a2 = 1``.  The printed time-stepping formula (eq. 2.90) is garbled; the
difference equation of ``h(z)`` with the convolution's ``dt`` (rectangle rule, as the FIR) is

    zeta[n+1] = dt b1 chi[n] - a1 zeta[n] - a2 zeta[n-1],      chi = L^T B u.

Both parts are strictly causal: ``step(u[n])`` returns ``y[n+1]`` (the steppers return ``y[n+1]`` for ``u[n+1]``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from rths_ros.core.models.fe.integrators import NewmarkStepper, factorise
from rths_ros.core.models.fe.matrices import FEModel
from rths_ros.core.models.fe.reduction import free_modes

__all__ = ["IMPULSE_METHODS", "WINDOWS", "impulse_response", "window", "fir_taps", "fir_convolve", "FIRFilter",
           "iir_coefficients", "modal_impulse_response", "ModalIIR", "SplitFilter", "split_filter", "fir_filter",
           "fast_projector", "modal_damping"]

IMPULSE_METHODS = ("velocity", "force_first", "force_second")
WINDOWS = ("rect", "cosine", "hann")


def _dense(A) -> np.ndarray:
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=float)


def impulse_response(model: FEModel, dt: float, n_steps: int, method: str = "force_first", beta: float = 0.25,
                     gamma: float = 0.5, alpha: float = 0.0, basis: np.ndarray | None = None) -> np.ndarray:
    """``H`` (n_steps + 1, n_y, n_u), ``H[n]`` at ``t = n dt``, by Newmark (``alpha > 0``: HHT) with the chosen Dirac
    approximation (module doc).  ``basis`` = ``L``: the projected responses ``C Q q[n]`` (eq. 2.83)."""
    if method not in IMPULSE_METHODS:
        raise ValueError(f"method must be one of {IMPULSE_METHODS}")
    st = NewmarkStepper.from_model(model, dt, beta=beta, gamma=gamma, alpha=alpha)
    Bd = _dense(model.G).T                     # (n, n_u)
    n, nu = Bd.shape
    M = st.M
    if basis is None:
        out = lambda q: np.asarray(st.C @ q)
    else:
        CL = np.asarray(st.C @ basis)
        out = lambda q: np.asarray(st.C @ q) - CL @ (basis.T @ (M @ q))
    H = np.zeros((n_steps + 1, st.C.shape[0], nu))
    zero = np.zeros((n, nu))
    if method == "force_second":
        st.reset(width=nu)
        st.step_force(Bd / dt)
        H[0] = out(st.q)
        for k in range(1, n_steps + 1):
            st.step_force(zero)
            H[k] = out(st.q)
        return H
    lu_m = factorise(M.tocsc() if sp.issparse(M) else M)
    if method == "velocity":
        qd0 = lu_m.solve(Bd)
        st.set_state(zero, qd0, -lu_m.solve(np.asarray(st.D @ qd0)), zero)
    else:
        st.set_state(zero, zero, (2.0 / dt) * lu_m.solve(Bd), (2.0 / dt) * Bd)
    for k in range(1, n_steps + 1):
        st.step_force(zero)
        H[k] = out(st.q)
    return H


def window(kind: str, M: int) -> np.ndarray:
    """Truncation window ``w[0..M]`` (eq. 2.74-2.76); zero beyond ``M`` is implied by the length."""
    k = np.arange(M + 1)
    if kind == "rect":
        return np.ones(M + 1)
    if kind == "cosine":
        return np.cos(np.pi * k / (2 * M))
    if kind == "hann":
        return np.cos(np.pi * k / (2 * M)) ** 2
    raise ValueError(f"window must be one of {WINDOWS}")


def fir_taps(H: np.ndarray, dt: float, M: int, kind: str = "rect") -> np.ndarray:
    """FIR coefficients ``b[k] = H[k] w[k] dt``, k = 0..M (eq. 2.64 with the window); ``b[0]`` is only used by
    :func:`fir_convolve` with ``feedthrough=True``."""
    if H.shape[0] < M + 1:
        raise ValueError(f"the impulse response has {H.shape[0]} samples, {M + 1} are needed")
    return H[:M + 1] * (window(kind, M) * dt)[:, None, None]


def fir_convolve(b: np.ndarray, u: np.ndarray, feedthrough: bool = False) -> np.ndarray:
    """Offline ``y[n] = sum_k b[k] u[n-k]`` (``k`` from 1, or from 0 with ``feedthrough``), inputs before ``n = 0``
    zero; ``u`` (N, n_u) -> ``y`` (N, n_y)."""
    u = np.asarray(u, dtype=float)
    N = u.shape[0]
    y = np.zeros((N, b.shape[1]))
    for k in range(0 if feedthrough else 1, min(b.shape[0], N)):
        y[k:] += u[:N - k] @ b[k].T
    return y


class FIRFilter:
    """Strictly causal FIR virtual part, predictor-corrector form (eq. 2.72/2.73).

    :meth:`correct` (``u[n]`` -> ``y[n+1]``, one ``n_y x n_u`` product) is what must happen inside the step;
    :meth:`predict` (the remaining ``M - 1`` taps) can run after the output has been sent.  ``step`` = both."""

    def __init__(self, b: np.ndarray):
        b = np.asarray(b, dtype=float)
        if b.ndim != 3 or b.shape[0] < 2:
            raise ValueError("b must be (M + 1, n_y, n_u) with M >= 1")
        self.M = b.shape[0] - 1
        self.ny, self.nu = b.shape[1], b.shape[2]
        self.b1 = b[1].copy()
        self.L = max(self.M - 1, 1)
        tail = b[2:] if self.M >= 2 else np.zeros((1, self.ny, self.nu))
        self.Bst = np.ascontiguousarray(np.transpose(tail, (1, 0, 2)).reshape(self.ny, -1))  # [b2 b3 .. bM]
        self.reset()

    def reset(self) -> None:
        self.buf = np.zeros((2 * self.L, self.nu))    # inputs, newest first, stored twice (contiguous window)
        self.p = 0
        self.y_star = np.zeros(self.ny)

    def correct(self, u) -> np.ndarray:
        return self.y_star + self.b1 @ u

    def predict(self, u) -> None:
        """Store ``u[n]`` and prepare ``y*[n+2] = sum_{k=2}^{M} b[k] u[n+2-k]``."""
        self.p = (self.p - 1) % self.L
        self.buf[self.p] = u
        self.buf[self.p + self.L] = u
        self.y_star = self.Bst @ self.buf[self.p:self.p + self.L].ravel()

    def step(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        y = self.correct(u)
        self.predict(u)
        return y

    def run(self, u: np.ndarray) -> np.ndarray:
        self.reset()
        return np.array([self.step(uk) for uk in np.asarray(u, dtype=float)])


# ----------------------------------------------------------------------------------------------------- IIR
def _cases(omega, delta, crit_tol):
    omega, delta = np.broadcast_arrays(np.asarray(omega, dtype=float), np.asarray(delta, dtype=float))
    rigid = omega == 0.0
    crit = ~rigid & (np.abs(delta - omega) <= crit_tol * omega)
    under = ~rigid & ~crit & (delta < omega)
    over = ~rigid & ~crit & (delta > omega)
    return omega, delta, rigid, crit, under, over


def iir_coefficients(omega, delta, dt: float, crit_tol: float = 1e-9):
    """``(b1, a1, a2)`` per mode by impulse invariance (Table A.1, rigid-body row corrected; module doc).  A mode
    with ``|delta - omega| <= crit_tol omega`` is taken as critically damped."""
    omega, delta, rigid, crit, under, over = _cases(omega, delta, crit_tol)
    if np.any(delta < 0) or np.any(omega < 0):
        raise ValueError("omega and delta must be non-negative")
    b1, a1, a2 = (np.zeros(omega.shape) for _ in range(3))
    r = np.exp(-delta * dt)
    # rigid-body modes: h = (1 - exp(-2 delta t)) / (2 delta), or h = t for delta = 0
    rd = rigid & (delta > 0)
    p = np.exp(-2.0 * delta[rd] * dt)
    b1[rd], a1[rd], a2[rd] = (1.0 - p) / (2.0 * delta[rd]), -(1.0 + p), p
    r0 = rigid & (delta == 0)
    b1[r0], a1[r0], a2[r0] = dt, -2.0, 1.0
    wd = omega[under] * np.sqrt(1.0 - (delta[under] / omega[under]) ** 2)
    b1[under] = np.sin(wd * dt) * r[under] / wd
    a1[under] = -2.0 * np.cos(wd * dt) * r[under]
    a2[under] = r[under] ** 2
    e = np.exp(-omega[crit] * dt)
    b1[crit], a1[crit], a2[crit] = dt * e, -2.0 * e, e * e
    wo = omega[over] * np.sqrt((delta[over] / omega[over]) ** 2 - 1.0)
    b1[over] = np.sinh(wo * dt) * r[over] / wo
    a1[over] = -2.0 * np.cosh(wo * dt) * r[over]
    a2[over] = r[over] ** 2
    return b1, a1, a2


def modal_impulse_response(omega: float, delta: float, t: np.ndarray, crit_tol: float = 1e-9) -> np.ndarray:
    """Analytic ``h(t)`` of ``1 / (s^2 + 2 delta s + omega^2)`` (App. A.1-A.4), for checks."""
    t = np.asarray(t, dtype=float)
    if omega == 0.0:
        return t.copy() if delta == 0.0 else (1.0 - np.exp(-2.0 * delta * t)) / (2.0 * delta)
    if abs(delta - omega) <= crit_tol * omega:
        return t * np.exp(-omega * t)
    if delta < omega:
        wd = omega * math.sqrt(1.0 - (delta / omega) ** 2)
        return np.exp(-delta * t) * np.sin(wd * t) / wd
    wo = omega * math.sqrt((delta / omega) ** 2 - 1.0)
    return np.exp(-delta * t) * np.sinh(wo * t) / wo


class ModalIIR:
    """Second-order IIR filter per modal coordinate (eq. 2.85-2.91): ``chi = P_in u``, ``y = P_out zeta``.

    ``step(u[n])`` -> ``y[n+1]``; as the FIR, split into :meth:`correct` and :meth:`predict`."""

    def __init__(self, omega, delta, dt: float, P_in: np.ndarray, P_out: np.ndarray):
        self.b1, self.a1, self.a2 = iir_coefficients(omega, delta, dt)
        self.gain = dt * self.b1[:, None] * np.asarray(P_in, dtype=float)   # dt b1 L^T B
        self.P_out = np.asarray(P_out, dtype=float)
        self.reset()

    def reset(self) -> None:
        n = self.b1.size
        self.z, self.z_prev = np.zeros(n), np.zeros(n)
        self.z_star = np.zeros(n)

    def correct(self, u) -> np.ndarray:
        self.z_prev, self.z = self.z, self.z_star + self.gain @ u
        return self.P_out @ self.z

    def predict(self) -> None:
        self.z_star = -self.a1 * self.z - self.a2 * self.z_prev

    def step(self, u) -> np.ndarray:
        y = self.correct(np.asarray(u, dtype=float))
        self.predict()
        return y


# --------------------------------------------------------------------------------------------------- split
def modal_damping(L: np.ndarray, D, tol: float = 1e-4) -> np.ndarray:
    """``delta_i`` from ``L^T D L = diag(2 delta_i)``; raises if ``D`` does not decouple the modes (non-proportional
    damping cannot be run as independent modal IIR filters)."""
    d = L.T @ (D @ L)
    diag = np.diag(d).copy()
    off = d - np.diag(diag)
    if np.abs(off).max(initial=0.0) > tol * max(np.abs(diag).max(initial=0.0), 1e-300):
        raise ValueError("the damping matrix couples the modes of L (not proportional damping)")
    return np.clip(0.5 * diag, 0.0, None)


def fast_projector(L: np.ndarray, M) -> np.ndarray:
    """Dense ``Q = I - L L^T M`` (eq. 2.81), for small models; large ones apply it as ``q - L (L^T (M q))``."""
    return np.eye(L.shape[0]) - L @ (L.T @ _dense(M))


@dataclass
class SplitFilter:
    """Slow modes by IIR plus fast remainder by FIR: ``step(u[n])`` -> ``y[n+1]`` (module doc)."""

    fir: FIRFilter
    iir: ModalIIR
    info: dict = field(default_factory=dict)

    def reset(self) -> None:
        self.fir.reset()
        self.iir.reset()

    def step(self, u) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        y = self.fir.correct(u) + self.iir.correct(u)
        self.fir.predict(u)
        self.iir.predict()
        return y

    def run(self, u: np.ndarray) -> np.ndarray:
        self.reset()
        return np.array([self.step(uk) for uk in np.asarray(u, dtype=float)])


def split_filter(model: FEModel, dt: float, n_slow: int = 11, n_taps: int = 58, kind: str = "hann",
                 method: str = "force_first", beta: float = 0.25, gamma: float = 0.5,
                 shift: float = -1.0) -> SplitFilter:
    """The thesis's FIR/IIR virtual part: the lowest ``n_slow`` free modes (rigid-body modes included) by IIR, the
    rest by an FIR of ``n_taps`` taps from the projected impulse responses."""
    omega, L = free_modes(model.M, model.K, n_slow, shift)
    delta = modal_damping(L, model.D)
    H = impulse_response(model, dt, n_taps, method, beta, gamma, basis=L)
    b = fir_taps(H, dt, n_taps, kind)
    CL = np.asarray(model.G @ L)
    iir = ModalIIR(omega, delta, dt, CL.T, CL)      # collocated: L^T B = (C L)^T
    full_tail = float(np.abs(H[-1]).max() / max(np.abs(H).max(), 1e-300))
    info = {"omega": omega, "delta": delta, "n_rigid": int(np.sum(omega == 0.0)), "n_taps": n_taps, "window": kind,
            "method": method, "tail_ratio": full_tail, "L": L}
    return SplitFilter(FIRFilter(b), iir, info)


def fir_filter(model: FEModel, dt: float, n_taps: int, kind: str = "rect", method: str = "force_first",
               beta: float = 0.25, gamma: float = 0.5) -> FIRFilter:
    """Plain FIR virtual part (no split), for damped models without rigid-body modes."""
    return FIRFilter(fir_taps(impulse_response(model, dt, n_taps, method, beta, gamma), dt, n_taps, kind))
