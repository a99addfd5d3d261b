"""The same sources build with colcon as in a ROS 2 workspace (here against the venv's ROS 2 wheels)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from rths_ros.launch_support import node_specs

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("CMakeLists.txt", "package.xml", "setup.py", "msg", "rths_ros", "launch", "config", "scripts")


def test_colcon_builds_the_package_into_an_install_space(tmp_path):
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
    install = tmp_path / "ws" / "install" / "rths_ros"
    site = next(install.glob("lib/python3*/site-packages"))
    code = ("import rths_ros.msg, rths_ros.core.scenario as s, rths_ros.nodes.sim_plant; "
            "print(rths_ros.core.scenario.__file__); print(s.config_dir())")
    env2 = {"PATH": env["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(site),
            "AMENT_PREFIX_PATH": f"{install}:{venv}"}
    q = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env2, cwd=tmp_path,
                       timeout=120)
    assert q.returncode == 0, q.stderr
    assert str(tmp_path) in q.stdout                          # the installed copy, not the source tree
    share = install / "share" / "rths_ros"
    assert (share / "launch" / "rths.launch.py").exists()
    assert (share / "config" / "scenarios" / "contact_1d.yaml").exists()
    for spec in node_specs("contact_1d")[1]:          # what the launch file starts exists
        assert (install / "lib" / "rths_ros" / spec.executable).exists(), spec.executable
