"""The interface widths the loop's message validation expects (each family's ``widths``) are what the objects of
each registered model family produce: the model's command and load, the force path's force and measured arrays,
the platform path's achieved state."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.families import registry

FAMILIES = sorted(registry.families())


def test_every_family_names_an_example_scenario_of_its_own():
    for name, fam in registry.families().items():
        assert fam.example, name
        assert scn.load(fam.example).numerical.family == name


@pytest.mark.parametrize("family", FAMILIES)
def test_the_widths_are_those_of_the_built_objects(family):
    s = scn.load(registry.family(family).example)
    assert s.numerical.family == family
    w = factory.interface_widths(s)
    model = factory.build_numerical(s)
    model.reset()
    position, velocity = model.command()
    assert len(position) == len(velocity) == w["command"]
    assert model.force_width == w["force"]
    path = factory.build_platform_path(s)
    path.reset()
    lengths = np.array(path.start_lengths, dtype=float)
    q, qd = path.achieved(lengths, np.zeros(6))
    assert len(q) == len(qd) == w["state"]
    fp = factory.build_force_path(s)
    fp.reset()
    force, measured, _ = fp.process(np.zeros(6), lengths if fp.needs_leg_state else None)
    assert len(force) == w["force"] and len(measured) == w["measured"]
