"""What `launch/rths.launch.py` starts, computed without the `launch` package.

The launch file is kept thin: it asks :func:`node_specs` which executables to start with which
arguments, so the same logic is tested here without a ROS 2 distribution (``launch`` and
``launch_ros`` are not installable from PyPI).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .core import scenario as scn

#: Hardware driver nodes replacing the simulated plant when plant = hardware.
HARDWARE_NODES: dict[str, tuple[str, ...]] = {"sim_plant": ("hardware_plant",)}


@dataclass(frozen=True)
class NodeSpec:
    name: str          # node name (also the ROS node name)
    executable: str    # installed executable in lib/rths_ros (the venv console script is rths_<name>)
    arguments: tuple[str, ...]


def node_specs(scenario: str, plant: str = "", mode: str = "", out: str = "", overrides: tuple[str, ...] = ()
               ) -> tuple[scn.Scenario, list[NodeSpec]]:
    """Validate the scenario with the launch arguments applied and list the nodes to start."""
    s = scn.load(scenario, overrides, mode or None, plant or None)
    extra = list(overrides) + ([f"plant={plant}"] if plant else [])
    if s.plant == "hardware":
        missing = [n for n in s.run_nodes if n in HARDWARE_NODES and not HARDWARE_NODES[n]]
        if missing:
            raise scn.ParameterError(f"plant: 'hardware' is not available yet for {', '.join(missing)}; "
                                     "expected 'sim'")
    args = ["--scenario", str(scn.resolve_path(scenario))]
    for o in extra:
        args += ["--set", o]
    if mode:
        args += ["--mode", mode]
    if out:
        args += ["--out", str(Path(out))]
    specs = [NodeSpec(n, n, tuple(args)) for n in s.run_nodes]   # lib/rths_ros/<node> (CMakeLists.txt)
    return s, specs
