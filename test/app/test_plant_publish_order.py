"""The order of a plant's two loop messages of a step (rths_ros.runtime.beat.wrench_first): the raw wrench first
where the ft_sensor does not pair it with the leg state of the same step, over separate processes only; each
shipped family declares truly whether its force path reads the legs, and a family that says it does not while
its path does is refused."""
from __future__ import annotations

import dataclasses

import pytest

from rths_ros.app import factory
from rths_ros.app import scenario as scn
from rths_ros.families import registry
from rths_ros.runtime.beat import wrench_first

SHIPPED = scn.scenario_names(plugins=False)


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_family_says_truly_whether_its_force_path_reads_the_legs(name):
    s = scn.load(name, [], "lockstep")
    assert factory.parts(s).force_reads_legs == factory.build_force_path(s).needs_leg_state, name


@pytest.mark.parametrize(("name", "mode", "sets", "local_bus", "expected"), [
    ("contact_1d", "lockstep", [], False, True),
    ("contact_1d", "realtime", [], False, True),
    ("contact_1d", "lockstep", [], True, False),           # composed: every hand-over is a call
    ("benchmark_building", "lockstep", [], False, True),
    ("gait_vpp", "lockstep", [], False, False),            # the gait's force path pairs the wrench with the legs
    ("contact_1d", "realtime", ["standard_interfaces.wrench_input_topic=/ft/wrench"], False, False),
])
def test_the_wrench_goes_first_only_where_nothing_waits_for_the_leg_state(name, mode, sets, local_bus, expected):
    assert wrench_first(scn.load(name, sets, mode), local_bus) is expected


def test_a_family_that_hides_that_its_force_path_reads_the_legs_is_refused(monkeypatch):
    s = scn.load("gait_vpp", [], "lockstep")
    fam = registry.family(s)
    lying = dataclasses.replace(fam, parts=dataclasses.replace(fam.parts, force_reads_legs=False))
    monkeypatch.setattr(registry, "family", lambda _s: lying)
    with pytest.raises(ValueError, match="'gait'.*force_reads_legs=False"):
        factory.build_force_path(s)
