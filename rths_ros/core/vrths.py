"""In-process virtual RTHS (vRTHS): the whole fast path in one Python loop, no ROS.

It calls the same core objects, built by :mod:`rths_ros.core.fastpath`, in the same order as the
node graph does in lockstep mode (see docs/architecture.md, "one step"), so the ROS graph must
reproduce its result to floating-point accuracy.  Used for fast studies and as the equivalence
reference of the graph.
"""
from __future__ import annotations

import numpy as np

from . import fastpath
from .platform import LimitViolation
from .scenario import Scenario

RECORD_KEYS = ("k", "t", "z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas", "contact", "f_d")


def empty_record(n: int) -> dict:
    rec = {key: np.zeros(n) for key in RECORD_KEYS}
    rec["k"] = np.arange(n)
    rec["contact"] = np.zeros(n, dtype=bool)
    for key in ("b_cmd", "b_meas", "bdot_meas", "current", "ff_velocity"):
        rec[key] = np.zeros((n, 6))
    rec["wrench"] = np.zeros((n, 6))
    return rec


def run_virtual(s: Scenario, progress=None) -> dict:
    """Run one trial of the scenario in process.  Returns the record (arrays indexed by step k)."""
    numerical = fastpath.build_numerical(s)
    imap, commander = fastpath.build_platform(s)
    plant = fastpath.build_plant(s)
    force = fastpath.build_force_processor(s)
    n_steps = s.steps
    rec = empty_record(n_steps + 1)
    rec["t"] = rec["k"] * s.loop.dt_s

    out = plant.reset(fastpath.plant_seed(s))
    numerical.reset()
    commander.reset()
    force.reset()
    z, zd = 0.0, 0.0
    b_cmd = np.array(imap.kinematics.home_lengths, dtype=float)
    ff = np.zeros(6)
    q = np.zeros(1)
    qd = np.zeros(1)
    for k in range(n_steps + 1):
        f_int, f_meas, contact = force.process(out.wrench)
        q_ach, qd_ach = imap.achieved(out.lengths, out.velocities)
        rec["z_cmd"][k] = z
        rec["zdot_cmd"][k] = zd
        rec["z_ach"][k] = q_ach[0]
        rec["zdot_ach"][k] = qd_ach[0]
        rec["f_int"][k] = f_int
        rec["f_meas"][k] = f_meas
        rec["contact"][k] = contact
        rec["b_cmd"][k] = b_cmd
        rec["ff_velocity"][k] = ff
        rec["b_meas"][k] = out.lengths
        rec["bdot_meas"][k] = out.velocities
        rec["current"][k] = out.currents
        rec["wrench"][k] = out.wrench
        if k == n_steps:
            break
        z, zd = numerical.step(f_int)
        q[0], qd[0] = z, zd
        try:
            cmd = commander.command(q, qd)
        except LimitViolation as exc:  # the node aborts the run here; so does the virtual run
            rec = {key: (v[: k + 1] if hasattr(v, "shape") else v) for key, v in rec.items()}
            rec["aborted"] = True
            rec["abort_reason"] = f"step {k + 1}: {exc}"
            return rec
        b_cmd = cmd.length.copy()
        ff = cmd.feedforward_velocity.copy()
        out = plant.step(cmd.length, cmd.feedforward_velocity)
        if progress is not None and k % 1000 == 0:
            progress(k, n_steps)
    rec["aborted"] = False
    rec["abort_reason"] = ""
    return rec
