"""Fixed-step explicit Runge-Kutta integration for small ODE systems.

The numerical substructure of the contact test (Insam 2022, Table A.2) is integrated with
Simulink's fixed-step solver *ode8* at the synchronisation step ``dT = 1 ms``.  This module
provides the same class of method: an 8th-order explicit Dormand-Prince scheme run at a
fixed step.  The Butcher tableau is the 12-stage 8th-order part of DOP853 (Hairer, Norsett
& Wanner); its numbers are read from :mod:`scipy.integrate._ivp.dop853_coefficients`.
(Simulink's ode8 uses the 13-stage RK8(7)13M pair of Prince & Dormand; both are 8th-order
explicit Dormand-Prince methods and agree to round-off on the smooth, slow dynamics of the
1-D contact test at ``dT = 1 ms``.)

Two ways to step:

* :func:`erk_step` - any right-hand side ``fun(t, y)`` (pure Python; for tests and
  offline use).
* :func:`erk_affine_harmonic_step` - a numba kernel for the harmonically forced affine
  system ``y' = A y + b + c cos(w t) + s sin(w t)``, the class of the numerical
  mass-spring-damper with its 1-cos suspension.  :class:`AffineHarmonicRK` wraps it with
  preallocated buffers so a step performs no allocation; it runs in a few microseconds.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np


def _dop853_coefficients():
    """SciPy's module of the DOP853 coefficients, loaded from its file alone: importing it by name imports all of
    ``scipy.integrate`` first (about 0.2 s in every process that loads a scenario); the file needs numpy only.
    Any other layout of SciPy: the import by name."""
    import importlib.util
    from pathlib import Path
    try:
        root = importlib.util.find_spec("scipy").submodule_search_locations[0]
        path = Path(root) / "integrate" / "_ivp" / "dop853_coefficients.py"
        spec = importlib.util.spec_from_file_location("rths_ros._scipy_dop853_coefficients", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if module.N_STAGES and module.A.shape[0] >= module.N_STAGES:
            return module
    except Exception:       # a SciPy laid out otherwise
        pass
    from scipy.integrate._ivp import dop853_coefficients
    return dop853_coefficients


_dop853 = _dop853_coefficients()


@dataclass(frozen=True)
class ButcherTableau:
    """Explicit Runge-Kutta tableau: stage matrix ``a`` (strictly lower), weights ``b``, nodes ``c``."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    order: int
    name: str

    @property
    def stages(self) -> int:
        return int(self.b.shape[0])


def _frozen(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float64).copy()
    x.flags.writeable = False
    return x


_NS = _dop853.N_STAGES
DOP853 = ButcherTableau(a=_frozen(_dop853.A[:_NS, :_NS]), b=_frozen(_dop853.B[:_NS]),
                        c=_frozen(_dop853.C[:_NS]), order=8, name="DOP853 (8th order, 12 stages)")
"""8th-order Dormand-Prince tableau (the propagated solution of DOP853)."""

RK4 = ButcherTableau(a=_frozen(np.array([[0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0],
                                         [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])),
                     b=_frozen(np.array([1.0, 2.0, 2.0, 1.0]) / 6.0),
                     c=_frozen(np.array([0.0, 0.5, 0.5, 1.0])), order=4, name="classic RK4")
"""Classic 4th-order Runge-Kutta tableau (reference for tests and cheap runs)."""


def erk_step(fun: Callable[[float, np.ndarray], np.ndarray], t: float, y: np.ndarray, h: float,
             tableau: ButcherTableau = DOP853) -> np.ndarray:
    """One explicit Runge-Kutta step ``y(t) -> y(t + h)`` for an arbitrary ``fun(t, y)``."""
    y = np.asarray(y, dtype=np.float64)
    a, b, c = tableau.a, tableau.b, tableau.c
    k = np.empty((tableau.stages, y.size))
    for i in range(tableau.stages):
        yi = y + h * (a[i, :i] @ k[:i]) if i else y
        k[i] = fun(t + c[i] * h, yi)
    return y + h * (b @ k)


def integrate_fixed(fun: Callable[[float, np.ndarray], np.ndarray], t0: float, y0: np.ndarray, h: float,
                    n_steps: int, tableau: ButcherTableau = DOP853) -> np.ndarray:
    """``n_steps`` fixed steps of :func:`erk_step`; returns the states, shape ``(n_steps + 1, n)``."""
    y = np.asarray(y0, dtype=np.float64).copy()
    out = np.empty((n_steps + 1, y.size))
    out[0] = y
    for i in range(n_steps):
        y = erk_step(fun, t0 + i * h, y, h, tableau)
        out[i + 1] = y
    return out


@numba.njit(cache=True, fastmath=False)
def erk_affine_harmonic_step(ta, tb, tc, A, b, cvec, svec, omega, t, h, y, kbuf, out):  # pragma: no cover - numba
    """One explicit RK step of ``y' = A y + b + cvec cos(omega t) + svec sin(omega t)``.

    ``ta, tb, tc``: Butcher tableau (stage matrix, weights, nodes).  ``kbuf`` is a work
    array of shape ``(stages, n)``; the result is written into ``out`` (may not alias ``y``).
    The forcing is evaluated at every stage time ``t + c_i h``.
    """
    ns = tb.shape[0]
    n = y.shape[0]
    for i in range(ns):
        ti = t + tc[i] * h
        co = np.cos(omega * ti)
        si = np.sin(omega * ti)
        # stage state
        for r in range(n):
            acc = y[r]
            for j in range(i):
                acc += h * ta[i, j] * kbuf[j, r]
            out[r] = acc
        for r in range(n):
            acc = b[r] + cvec[r] * co + svec[r] * si
            for q in range(n):
                acc += A[r, q] * out[q]
            kbuf[i, r] = acc
    for r in range(n):
        acc = 0.0
        for i in range(ns):
            acc += tb[i] * kbuf[i, r]
        out[r] = y[r] + h * acc


class AffineHarmonicRK:
    """Fixed-step RK integrator of ``y' = A y + b + c cos(omega t) + s sin(omega t)``.

    ``A``, ``c``, ``s`` and ``omega`` are fixed at construction; the constant input ``b``
    may be changed between steps (:attr:`b` is a writable array, e.g. for a force held by a
    zero-order hold).  :meth:`step` allocates nothing except the returned view.
    """

    def __init__(self, A: np.ndarray, b: np.ndarray, c: np.ndarray, s: np.ndarray, omega: float,
                 tableau: ButcherTableau = DOP853) -> None:
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        n = self.A.shape[0]
        if self.A.shape != (n, n):
            raise ValueError("A must be square")
        self.b = np.ascontiguousarray(b, dtype=np.float64).reshape(n).copy()
        self.c = np.ascontiguousarray(c, dtype=np.float64).reshape(n).copy()
        self.s = np.ascontiguousarray(s, dtype=np.float64).reshape(n).copy()
        self.omega = float(omega)
        self.tableau = tableau
        self._ta = np.ascontiguousarray(tableau.a)
        self._tb = np.ascontiguousarray(tableau.b)
        self._tc = np.ascontiguousarray(tableau.c)
        self._k = np.zeros((tableau.stages, n))
        self._out = np.zeros(n)
        # compile / load the kernel now, not inside the real-time loop
        self.step(0.0, np.zeros(n), 1e-3)

    def step(self, t: float, y: np.ndarray, h: float) -> np.ndarray:
        """State at ``t + h`` from ``y`` at ``t`` (returned array is reused by the next call)."""
        if y is self._out:
            y = y.copy()
        erk_affine_harmonic_step(self._ta, self._tb, self._tc, self.A, self.b, self.c, self.s,
                                 self.omega, t, h, y, self._k, self._out)
        return self._out
