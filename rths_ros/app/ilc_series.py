"""ILC across the trials of a run: collects each trial's leg errors, updates the feedforward in the
pause, and applies the divergence rule.  Used by the ilc_learner node and the in-process virtual
run, so both learn exactly the same feedforward.

Alignment (docs/ilc.md): sample n of a trial (n = 0..N-1) belongs to the leg command of local step
n+1; ``e[:, n] = b_{n+1} - b'_{n+1}``, where ``b`` is the desired leg length without any
position-level feedforward and ``b'`` the measured length at that step.  ``f[:, n]`` is added to
the command of local step n+1: to its velocity feedforward (velocity injection) or to its length
(position injection).

Divergence metric: the interface e_track_rel of the trial (RMS(z - z') / max|z|), the quantity the
thesis watches.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rths_ros.app.scenario import Scenario
from rths_ros.core.learning.ilc.learner import PdIlc


class IlcSeries:
    def __init__(self, s: Scenario):
        self.s = s
        self.n = s.steps
        self.ilc = PdIlc(s.ilc, 6, self.n, s.loop.dt_s, s.sim_plant.cascade.gains[0])
        self.position = s.ilc.injection == "position"
        self.e = np.zeros((6, self.n))
        self.z = np.zeros(self.n + 1)
        self.z_ach = np.zeros(self.n + 1)
        self.trial = 0
        self.history: list[dict] = []
        self.stopped = False
        self.stop_reason = ""

    # -- the fast path side ----------------------------------------------------------------
    def feedforward(self) -> np.ndarray:
        """f_j of the current trial, (6, N)."""
        return self.ilc.feedforward

    def apply(self, local: int, f: np.ndarray, length: np.ndarray, ff_velocity: np.ndarray,
              ff_position: np.ndarray) -> None:
        """Add sample local-1 of ``f`` (6, N) to the leg command of local step ``local`` (in place)."""
        if local < 1 or local > self.n:
            return
        col = f[:, local - 1]
        if self.position:
            length += col
            ff_position += col
        else:
            ff_velocity += col

    # -- recording -------------------------------------------------------------------------
    def record_legs(self, local: int, b_desired: np.ndarray, b_measured: np.ndarray) -> None:
        if 1 <= local <= self.n:
            self.e[:, local - 1] = b_desired - b_measured

    def record_interface(self, local: int, z: float, z_ach: float) -> None:
        if 0 <= local <= self.n:
            self.z[local] = z
            self.z_ach[local] = z_ach

    # -- between trials --------------------------------------------------------------------
    def end_trial(self) -> tuple[np.ndarray, bool, str]:
        """Update with the trial just run; returns (f for the next trial, stop, reason)."""
        zmax = float(np.max(np.abs(self.z))) or 1.0
        metric = float(np.sqrt(np.mean((self.z - self.z_ach) ** 2)) / zmax)
        f_next = self.ilc.update(self.e)
        stop, reason = self.ilc.check_divergence(metric)
        self.history.append({"trial": self.trial, "e_track_rel": metric,
                             "leg_error_rms_m": self.ilc.error_rms_history[-1], "stop": stop, "reason": reason})
        self.trial += 1
        self.e[:] = 0.0
        if stop:
            self.stopped, self.stop_reason = True, f"ILC divergence rule: {reason}"
        return f_next, stop, reason

    def save(self, out_dir: Path) -> Path:
        return self.ilc.save(Path(out_dir) / "ilc_feedforward.npz")
