"""Data of the vRTHS building benchmark (:mod:`rths_ros.core.models.building.structure`): the building matrices of the
partitioning cases (``building_cases.json``) and the ground-motion records (``<name>_accel.csv``) under
``config/benchmark/``."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rths_ros.params import ParameterError
from rths_ros.resources import benchmark_data_dir

EARTHQUAKES = ("elcentro", "kobe", "morgan")
CASES = (1, 2, 3, 4)


def data_dir() -> Path:
    """config/benchmark of the source tree or of the installed package."""
    return benchmark_data_dir()


def load_case(case: int) -> dict:
    """M (kg), K (N/m), C (N s/m) and modal damping ratios of a partitioning case."""
    if case not in CASES:
        raise ParameterError(f"case: {case!r} is not allowed; expected one of 1, 2, 3, 4")
    with open(data_dir() / "building_cases.json", encoding="utf-8") as fh:
        raw = json.load(fh)[f"case_{case}"]
    return {"M": np.array(raw["M_kg"], float), "K": np.array(raw["K_N_per_m"], float),
            "C": np.array(raw["C_N_s_per_m"], float), "zeta": np.array(raw["modal_damping_ratios"], float)}


def load_ground_motion(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Time (s) and unscaled ground acceleration (m/s²) of a record, as stored."""
    if name not in EARTHQUAKES:
        raise ParameterError(f"earthquake: {name!r} is not allowed; expected one of {', '.join(EARTHQUAKES)}")
    d = np.loadtxt(data_dir() / f"{name}_accel.csv", delimiter=",", skiprows=1)
    return d[:, 0].copy(), d[:, 1].copy()
