"""Checks at the node boundaries: non-finite values never enter the fast path.

Each node checks what it receives (the sensor driver its wrench, the numerical part its force, the
platform its interface command, the plant its leg command); a NaN or inf aborts the run with the
node, the quantity and the step named.  The in-process virtual run applies the same checks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .params import param


@dataclass(frozen=True)
class FaultParams:
    """Fault injection for tests and drills (the simulated plant only)."""

    nan_wrench_at_step: int = param(-1, "", -1, 10**9, "the plant reports a NaN wrench at this global step "
                                    "(-1 = never)")


def non_finite(what: str, values, step: int) -> str | None:
    """A reason string if any value is NaN or inf, else None."""
    for i, v in enumerate(values):
        if not math.isfinite(v):
            return f"non-finite {what}[{i}] = {float(v)!r} at step {step}"
    return None
