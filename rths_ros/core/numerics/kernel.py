"""The decorator of the loop's numba kernels that neither allocate nor return an array: :func:`kernel`.

numba counts references to every array a compiled function receives, binds or slices (``NRT_incref`` and
``NRT_decref``, one atomic instruction each).  A kernel called many times per step with many array arguments (the
VPP model's right-hand side, four times per RK4 sub-step, five sub-steps per step; the forward kinematics' Newton
iterations) spent more time counting than computing: half of the in-process gait run's time, measured with
``perf`` (docs/performance.md).  A kernel that only reads and writes the arrays it is given needs no counting:
``kernel`` compiles it without numba's runtime (its ``_nrt=False`` option), so none is emitted.  numba refuses to
compile such a kernel if it allocates (``np.zeros``, ``np.dot``, ...): those stay ``njit(cache=True)``.  The
arithmetic is the same, so the results are the same bit for bit (test/app/test_vrths_compiled_gait.py and the
graph-equals-virtual tests compare them).
"""
from __future__ import annotations

from numba import njit


def kernel(fn=None, **options):
    """``njit(cache=True, _nrt=False, **options)``; use as ``@kernel`` or ``@kernel(nogil=True)``."""
    decorate = njit(cache=True, _nrt=False, **options)
    return decorate if fn is None else decorate(fn)


__all__ = ["kernel"]
