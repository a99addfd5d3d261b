"""What the families with their own actuators instead of the Stewart platform share (the linear motor, the damper
rig, the two shakers, and a lab's single-axis rig): the actuator's path and force of one DoF, and the checks of a
scenario on such a rig."""
from __future__ import annotations

from rths_ros.core.platform.paths import ScalarForcePath
from rths_ros.params import ParameterError

__all__ = ["validate_own_rig", "direct_force"]


def direct_force(s) -> ScalarForcePath:
    """The force sensor on the actuator's rod, passed on as measured (one DoF)."""
    from rths_ros.core.platform.linear_actuator import DirectForce
    return ScalarForcePath(DirectForce())


def validate_own_rig(s) -> None:
    """A rig with its own actuators: simulated plant, no leg-space learners, the rig's sample time = loop.dt_s, the
    model's own rules (its ``validate``); no adaptive feedforward unless the model has its own."""
    from rths_ros.families.registry import model as model_entry
    model = s.numerical.model
    if s.plant != "sim":
        raise ParameterError(f"plant: {s.plant!r} is not allowed with numerical.model = {model!r}; expected "
                             "'sim' (the rig has no hardware driver)")
    if s.ilc.enabled:
        raise ParameterError(f"ilc.enabled: true is not allowed with numerical.model = {model!r} (the ILC adds "
                             "leg-space feedforward of the Stewart platform)")
    entry = model_entry(model)
    entry.build(s.numerical, s.loop.dt_s)                 # names the rig's sample time if it differs
    if entry.validate is not None:
        entry.validate(s)                                 # the model's own rules (e.g. its AFF)
    elif s.aff.enabled:
        raise ParameterError(f"aff.enabled: true is not allowed with numerical.model = {model!r} (the rig has "
                             "no adaptive feedforward filter; expected false)")
