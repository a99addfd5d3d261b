"""The virtual run's record layouts: the 1-D interface's and a multi-DoF interface's (a family's
``empty_record`` builds on them)."""
from __future__ import annotations

import numpy as np

__all__ = ["RECORD_KEYS", "VECTOR_KEYS", "empty_record", "empty_vector_record"]

RECORD_KEYS = ("k", "t", "z_cmd", "zdot_cmd", "z_ach", "zdot_ach", "f_int", "f_meas", "contact", "f_d")


def empty_record(n: int) -> dict:
    rec = {key: np.zeros(n) for key in RECORD_KEYS}
    rec["k"] = np.arange(n)
    rec["contact"] = np.zeros(n, dtype=bool)
    for key in ("b_cmd", "b_meas", "bdot_meas", "current", "ff_velocity"):
        rec[key] = np.zeros((n, 6))
    rec["wrench"] = np.zeros((n, 6))
    return rec


VECTOR_KEYS = ("q_cmd", "qd_cmd", "q_ach", "qd_ach", "force", "measured")


def empty_vector_record(n: int, width: int) -> dict:
    """Record of a multi-DoF interface: command / achieved state / load per step (``width`` entries each), contact,
    and the leg and wrench channels."""
    rec = {"k": np.arange(n), "t": np.zeros(n), "contact": np.zeros(n, dtype=bool)}
    for key in VECTOR_KEYS:
        rec[key] = np.zeros((n, width))
    for key in ("b_cmd", "b_meas", "bdot_meas", "current", "ff_velocity", "wrench"):
        rec[key] = np.zeros((n, 6))
    return rec
