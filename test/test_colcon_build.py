"""The same sources build with colcon as in a ROS 2 workspace (here against the venv's ROS 2 wheels)."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rths_ros.launch_support import node_specs
from rths_ros.runner import DomainLease

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("CMakeLists.txt", "package.xml", "setup.py", "entry_points.txt", "msg", "rths_ros", "launch", "config",
           "scripts")


@pytest.fixture(scope="module")
def colcon_install(tmp_path_factory):
    """A colcon workspace with rths_ros built from a copy of the sources: (workspace, install/rths_ros)."""
    tmp_path = tmp_path_factory.mktemp("colcon")
    venv = Path(sys.prefix)
    colcon = venv / "bin" / "colcon"
    assert colcon.exists(), "colcon is part of requirements/test.txt"
    src = tmp_path / "ws" / "src" / "rths_ros"
    src.mkdir(parents=True)
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif p.exists():
            shutil.copy2(p, src / name)
    env = dict(os.environ, AMENT_PREFIX_PATH=str(venv), CMAKE_PREFIX_PATH=str(venv),
               PATH=f"{venv / 'bin'}:{os.environ.get('PATH', '')}")
    p = subprocess.run([str(colcon), "build", "--packages-select", "rths_ros", "--cmake-args", f"-DPython3_EXECUTABLE={sys.executable}"],
                       cwd=tmp_path / "ws", env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return tmp_path, tmp_path / "ws" / "install" / "rths_ros"


def _install_env(install: Path) -> dict:
    venv = Path(sys.prefix)
    site = next(install.glob("lib/python3*/site-packages"))
    return {"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}", "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": str(site), "AMENT_PREFIX_PATH": f"{install}:{venv}"}


def test_colcon_builds_the_package_into_an_install_space(colcon_install):
    tmp_path, install = colcon_install
    code = ("import rths_ros.msg, rths_ros.app.scenario as s, rths_ros.nodes.sim_plant; "
            "print(rths_ros.app.scenario.__file__); print(rths_ros.resources.config_dir())")
    env2 = _install_env(install)
    q = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env2, cwd=tmp_path,
                       timeout=120)
    assert q.returncode == 0, q.stderr
    assert str(tmp_path) in q.stdout                          # the installed copy, not the source tree
    share = install / "share" / "rths_ros"
    assert (share / "launch" / "rths.launch.py").exists()
    assert (share / "config" / "scenarios" / "contact_1d.yaml").exists()
    for spec in node_specs("contact_1d")[1]:          # what the launch file starts exists
        assert (install / "lib" / "rths_ros" / spec.executable).exists(), spec.executable
    # the model families are plugins: the install's metadata registers them as setup.py does in the venv
    eps = list(install.glob("lib/python3*/site-packages/rths_ros-*.egg-info/entry_points.txt"))
    assert len(eps) == 1 and "[rths_ros.families]" in eps[0].read_text()
    assert eps[0].read_text() == (ROOT / "entry_points.txt").read_text()


@pytest.mark.skipif(importlib.util.find_spec("ros2launch") is None,
                    reason="no ros2 launch here: scripts/setup_env.sh installs it from ../shared/ros2-tooling")
def test_ros2_launch_runs_a_scenario_from_the_colcon_install(colcon_install):
    """`ros2 launch rths_ros rths.launch.py` finds the launch file in the colcon install space and runs a
    short scenario with the installed sources and node executables."""
    tmp_path, install = colcon_install
    out = tmp_path / "run"
    lease = DomainLease()
    env = dict(_install_env(install), ROS_DOMAIN_ID=str(lease.domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    try:
        p = subprocess.run([str(Path(sys.prefix) / "bin" / "ros2"), "launch", "rths_ros", "rths.launch.py",
                            "scenario:=contact_1d", f"out:={out}", "overrides:=loop.duration_s=0.5"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240,
                           stdin=subprocess.DEVNULL)
    finally:
        lease.close()
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    prefix = subprocess.run([str(Path(sys.prefix) / "bin" / "ros2"), "pkg", "prefix", "rths_ros"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert prefix.stdout.strip() == str(install), prefix.stdout + prefix.stderr   # the package ros2 launch found
    m = json.loads((out / "metrics.json").read_text())
    assert m["n_steps"] == 501 and m["aborted"] is False
