"""What every numerical substructure offers the loop: the :class:`NumericalModel` protocol.

The numerical_substructure node and the in-process virtual run drive every model through these few members
and nothing else, so neither knows which model it runs:

* ``force_width``: number of entries of the interface load the model takes (1: the force along the 1-D interface;
  3: the sagittal load ``[F_par, F_perp, M]`` of the gait test);
* ``reset()``: back to the start of a trial;
* ``step(force) -> events``: advance one synchronisation step with ``force`` (a sequence of ``force_width``
  floats) held; returns event bits (0: nothing happened);
* ``command() -> (position, velocity)``: the interface command for the next step (after :meth:`reset`: the
  command of the trial's first step), two float arrays of the command width, owned by the model (copy them to
  keep them);
* ``velocity``: the interface velocity along the first force entry (the passivity controller's damping in
  realtime mode when its own value is late);
* ``abort_reason(events) -> str | None``: why the run must stop after a step that returned ``events`` (None: go on).

:class:`OneDofModel` adapts any one-degree-of-freedom integrator whose ``step(f)`` returns ``(z, z')``; the
contact test's three integrators and the linear oscillator use it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["NumericalModel", "OneDofModel", "OneDofIntegrator"]


@runtime_checkable
class NumericalModel(Protocol):
    force_width: int

    def reset(self) -> None: ...

    def step(self, force: Sequence[float]) -> int: ...

    def command(self) -> tuple[np.ndarray, np.ndarray]: ...

    @property
    def velocity(self) -> float: ...

    def abort_reason(self, events: int) -> str | None: ...


class OneDofIntegrator(Protocol):
    """A 1-DoF numerical part: ``reset()``, ``step(f_int) -> (z_{k+1}, z'_{k+1})``."""

    def reset(self) -> None: ...

    def step(self, f_int: float) -> tuple[float, float]: ...


class OneDofModel:
    """:class:`NumericalModel` of a 1-DoF integrator (``inner``): command = ``([z], [z'])`` of its last step."""

    force_width = 1

    def __init__(self, inner: OneDofIntegrator):
        self.inner = inner
        self._q = np.zeros(1)
        self._qd = np.zeros(1)

    def reset(self) -> None:
        self.inner.reset()
        self._q[0] = self._qd[0] = 0.0

    def step(self, force: Sequence[float]) -> int:
        self._q[0], self._qd[0] = self.inner.step(force[0])
        return 0

    def command(self) -> tuple[np.ndarray, np.ndarray]:
        return self._q, self._qd

    @property
    def velocity(self) -> float:
        v = getattr(self.inner, "velocity", None)
        return float(self._qd[0] if v is None else v)

    def abort_reason(self, events: int) -> str | None:
        return None
