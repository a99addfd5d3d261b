"""Model families: the rigs and interfaces the loop serves, one folder each, registered as plugins.

:mod:`rths_ros.families.base` defines :class:`Family`; :mod:`rths_ros.families.registry` finds the registered
families and models (entry-point groups ``rths_ros.families`` and ``rths_ros.models``).  docs/extending.md shows
how a lab adds its own from its own package.
"""
from rths_ros.families.base import Family, FamilyParts, ModelEntry

__all__ = ["Family", "FamilyParts", "ModelEntry"]
