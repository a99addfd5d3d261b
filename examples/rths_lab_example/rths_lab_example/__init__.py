"""An example lab package for rths_ros (docs/extending.md).

* :mod:`rths_lab_example.two_mass`: a 2-DoF mass-spring-damper chain as the numerical part of the contact test
  (family ``interface_1d``), added as a model plugin;
* :mod:`rths_lab_example.voice_coil`: a rig family of its own, a single-axis voice-coil actuator with a spring
  specimen, its digital twin and its analysis.

Its scenarios are in ``scenarios/`` (entry-point group ``rths_ros.scenarios``).
"""
from pathlib import Path

#: the package's scenario folder (``rths list`` shows its scenarios, ``rths run NAME`` finds them)
SCENARIOS = Path(__file__).resolve().parent / "scenarios"
