"""The leg commander's added delay (``platform.commander.added_delay_steps``): a pure delay of the finished leg
commands by n steps, the degradation of a FACE sweep that acts on every plant (docs/fidelity.md, "FACE on your
rig")."""
import numpy as np
import pytest

from rths_ros.core.platform.commander import LimitViolation, PlatformCommander, PlatformCommanderParams
from rths_ros.core.platform.interface import InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.stewart import StewartKinematics
from rths_ros.params import ParameterError, build

DT = 0.001


def _commands(n: int, vff: bool, z: np.ndarray, dofs=("z",)) -> list[tuple[np.ndarray, ...]]:
    """(length, velocity, feedforward velocity, feedforward position) of every call, for the interface
    trajectory z (each DoF gets z scaled by its index + 1), through a commander with ``added_delay_steps = n``."""
    kin = StewartKinematics()
    cmdr = PlatformCommander(InterfaceMap(InterfaceMapParams(dofs=dofs), kin),
                             PlatformCommanderParams(vff=vff, added_delay_steps=n))
    zd = np.gradient(z, DT)
    scale = np.arange(1, len(dofs) + 1, dtype=float)
    out = []
    for _trial in range(2):             # the second trial after a reset: the delay line starts empty again
        cmdr.reset()
        for k in range(z.size):
            c = cmdr.command(z[k] * scale, zd[k] * scale)
            out.append((c.length.copy(), c.velocity.copy(), c.feedforward_velocity.copy(),
                        c.feedforward_position.copy()))
    return out


@pytest.mark.parametrize("n, vff, dofs", [(1, False, ("z",)), (3, True, ("z",)), (7, True, ("x", "z", "rx"))])
def test_the_added_delay_shifts_every_command_by_n_steps_and_starts_at_home(n, vff, dofs):
    t = np.arange(400) * DT
    z = -0.006 * np.sin(2 * np.pi * 2.0 * t) ** 2
    plain = _commands(0, vff, z, dofs)
    late = _commands(n, vff, z, dofs)
    home = StewartKinematics().home_lengths
    for trial in range(2):
        lo = trial * z.size
        for k in range(z.size):
            got = late[lo + k]
            if k < n:               # nothing computed n steps ago: the start pose, at rest
                assert np.array_equal(got[0], home) and not np.any(got[1]) and not np.any(got[2]), (trial, k)
            else:                   # exactly the command of step k - n (bit for bit)
                want = plain[lo + k - n]
                assert all(np.array_equal(a, b) for a, b in zip(got, want)), (trial, k)
    assert not np.array_equal(late[n + 10][0], plain[n + 10][0])      # the test can tell them apart


def test_without_added_delay_the_commands_are_those_of_the_default_commander():
    t = np.arange(300) * DT
    z = 0.004 * np.sin(2 * np.pi * 3.0 * t)
    kin = StewartKinematics()
    a = PlatformCommander(InterfaceMap(InterfaceMapParams(), kin), PlatformCommanderParams(vff=True))
    b = PlatformCommander(InterfaceMap(InterfaceMapParams(), kin), build(PlatformCommanderParams,
                                                                          {"vff": True, "added_delay_steps": 0}))
    assert a.added_delay_steps == b.added_delay_steps == 0
    zd = np.gradient(z, DT)
    for k in range(z.size):
        ca, cb = a.command(z[k:k + 1], zd[k:k + 1]), b.command(z[k:k + 1], zd[k:k + 1])
        assert np.array_equal(ca.length, cb.length) and np.array_equal(ca.velocity, cb.velocity)
        assert np.array_equal(ca.feedforward_velocity, cb.feedforward_velocity)


def test_a_command_beyond_the_limits_is_refused_when_it_is_computed_not_when_it_leaves():
    kin = StewartKinematics()
    cmdr = PlatformCommander(InterfaceMap(InterfaceMapParams(), kin), PlatformCommanderParams(added_delay_steps=5))
    cmdr.command(np.array([0.001]), np.array([0.0]))
    with pytest.raises(LimitViolation):
        cmdr.command(np.array([0.0]), np.array([50.0]))        # 50 m/s: beyond the leg speed


@pytest.mark.parametrize("value", [-1, 1001, 2.5])
def test_a_bad_added_delay_is_refused_naming_the_key(value):
    with pytest.raises(ParameterError) as e:
        build(PlatformCommanderParams, {"added_delay_steps": value})
    assert "added_delay_steps" in str(e.value)
