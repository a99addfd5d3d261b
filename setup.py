"""Python packaging of rths_ros for the venv route (scripts/setup_env.sh).

The messages are built by CMake (CMakeLists.txt) into the environment's site-packages/rths_ros; this
file installs the pure-Python sources editable (compat mode: the repository root goes on sys.path
through a .pth file) and creates the console scripts. A ROS 2 distribution build (colcon, ament_cmake)
does not use it. Runtime dependencies are pinned in requirements/ and installed by
scripts/setup_env.sh, so none are declared here.
"""
import configparser
import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).resolve().parent

# Same list as rths_nodes in CMakeLists.txt: console script rths_<node> -> rths_ros.nodes.<node>:main
# (`composed` is the process that holds several nodes).
NODES = (
    "numerical_substructure",
    "stewart_platform",
    "ft_sensor",
    "passivity_controller",
    "ilc_learner",
    "aff_learner",
    "sim_plant",
    "hardware_plant",
    "ros2_control_plant",
    "ros2_control_emulator",
    "recorder",
    "supervisor",
    "live_view",
    "smoke_talker",
    "smoke_listener",
    "composed",
)


def package_version() -> str:
    """Version from package.xml, the single place it is kept."""
    text = (HERE / "package.xml").read_text(encoding="utf-8")
    match = re.search(r"<version>\s*([^<\s]+)\s*</version>", text)
    if match is None:
        raise RuntimeError("package.xml has no <version>")
    return match.group(1)


def plugin_entry_points() -> dict[str, list[str]]:
    """The plugin groups of entry_points.txt (the shipped model families), the single place they are kept."""
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str
    parser.read(HERE / "entry_points.txt", encoding="utf-8")
    return {group: [f"{name} = {value}" for name, value in parser.items(group)] for group in parser.sections()}


setup(
    name="rths_ros",
    version=package_version(),
    description="Robot-based real-time hybrid substructuring (RTHS) on ROS 2",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=("rths_ros", "rths_ros.*")),
    zip_safe=False,
    entry_points={
        "console_scripts": ["rths = rths_ros.cli:console_main"]
        + [f"rths_{node} = rths_ros.nodes.{node}:main" for node in NODES],
        **plugin_entry_points(),
    },
)
