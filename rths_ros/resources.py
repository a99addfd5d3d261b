"""Where the package's files are: the source tree's (or the installed package's) config/ and msg/.

A leaf module: it imports nothing of rths_ros, so every layer may use it.
"""
from __future__ import annotations

import os
from pathlib import Path


def package_root() -> Path:
    return Path(__file__).resolve().parents[1]


def config_dir() -> Path:
    """config/ of the source tree, or share/rths_ros/config of an installed package."""
    env = os.environ.get("RTHS_CONFIG_DIR")
    if env:
        return Path(env)
    here = package_root() / "config"
    if here.is_dir():
        return here
    try:  # installed with colcon in a ROS 2 workspace
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory("rths_ros")) / "config"
    except Exception:  # pragma: no cover - depends on the installation
        return here


def benchmark_data_dir() -> Path:
    """config/benchmark: the vRTHS building benchmark's structure and ground-motion data."""
    return config_dir() / "benchmark"
