"""The interface widths the loop's message validation expects (rths_ros.app.factory.INTERFACE_WIDTHS) are what the
objects of each model family produce: the model's command and load, the force path's force and measured arrays,
the platform path's achieved state."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.core.models.registry import FAMILIES

SCENARIO_OF_FAMILY = {"interface_1d": "contact_1d", "gait": "gait_vpp", "building": "benchmark_building",
                      "linear_motor": "cubic_spring_pbc", "damper_rig": "dubois_damper",
                      "shaker_pair": "coupled_beams_aff"}


def test_every_family_has_widths():
    assert set(factory.INTERFACE_WIDTHS) == set(FAMILIES) == set(SCENARIO_OF_FAMILY)


@pytest.mark.parametrize("family", sorted(SCENARIO_OF_FAMILY))
def test_the_widths_are_those_of_the_built_objects(family):
    s = scn.load(SCENARIO_OF_FAMILY[family])
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
