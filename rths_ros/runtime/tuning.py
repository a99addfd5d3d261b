"""Live tuning: a small, declared set of gains a test engineer may change while a realtime run goes on, with
``ros2 param set`` (or any client of the node's parameter services), as in ControlDesk on the lab's dSPACE rig.

* :data:`TUNABLES` declares them per node: the passivity controller's G_P and alpha bound (Insam 2022 eq. 5.5)
  and the ILC's learning gains beta and gamma (eq. 6.2).  Each keeps the range its scenario key declares; the
  passivity gains are rate-limited (a jump of G_P or of the alpha bound is a jump of the damping force), the ILC
  gains take effect at the next learning update, between trials.  Every other parameter stays read-only: a set
  is refused with a message that names the tunable ones.
* A change is taken by the node's parameter callback and applied by the node at its next step boundary
  (:meth:`LiveTuning.tick`), never in the middle of a step.  Each change is an event on /rths/events
  (``TestEvent.TUNED``, recorded in the bag and in events.json) with the step it took effect, and a second one
  when a ramp reaches its target; the analysis lists them (metrics ``tuning``, report "Live tuning").
* Lockstep runs are deterministic: there a change is refused (set the key with ``--set`` for the next run).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rcl_interfaces.msg import SetParametersResult


@dataclass(frozen=True)
class Tunable:
    key: str
    #: the fastest change [key's unit per second] toward a new value (None: applied at once)
    max_rate_per_s: float | None
    #: when a new value takes effect (shown in ``ros2 param describe`` and the docs)
    takes_effect: str


#: node -> its tunable parameters (docs/live.md, "Live tuning")
TUNABLES: dict[str, tuple[Tunable, ...]] = {
    "passivity_controller": (
        Tunable("passivity.g_p_kg_per_s", 2000.0, "at the next step, ramped at most 2000 kg/s per second"),
        Tunable("passivity.alpha_max_kg_per_s", 20000.0, "at the next step, ramped at most 20000 kg/s per second"),
    ),
    "ilc_learner": (
        Tunable("ilc.beta_per_s", None, "at the next learning update (the end of the current trial)"),
        Tunable("ilc.gamma", None, "at the next learning update (the end of the current trial)"),
    ),
}


def tunables_of(role: str) -> dict[str, Tunable]:
    return {t.key: t for t in TUNABLES.get(role, ())}


def _num(v: float) -> str:
    return f"{v:.6g}"


class LiveTuning:
    """The tunable parameters of one node: takes requests (:meth:`on_set`), refuses the rest
    (:meth:`refusal`), applies at step boundaries (:meth:`tick`) through ``apply(key, value)`` and reports each
    change through ``emit(step, trial, reason)``.  ``current``: {key: the value in use at the start}."""

    def __init__(self, role: str, mode: str, dt_s: float, current: dict[str, float],
                 apply: Callable[[str, float], None], emit: Callable[[int, int, str], None]):
        self.role, self.mode, self.dt_s = role, mode, float(dt_s)
        self.tunables = tunables_of(role)
        self.current = {k: float(current[k]) for k in self.tunables}
        self.apply, self.emit = apply, emit
        self.pending: dict[str, float] = {}          # key -> requested target
        self._started: dict[str, int] = {}           # key -> index in changes of the request being applied
        self.changes: list[dict] = []                # what took effect, for the node's timing summary

    def names(self) -> str:
        return ", ".join(self.tunables) or "none"

    def refusal(self, names: list[str]) -> str | None:
        """Why a set of these parameters is refused, or None: a read-only one, or any set in lockstep."""
        fixed = [n for n in names if n not in self.tunables]
        if fixed:
            where = (f"on {self.role}: {self.names()}" if self.tunables else "only " + "; ".join(
                f"on {role}: {', '.join(t.key for t in ts)}" for role, ts in TUNABLES.items()))
            return (f"{', '.join(fixed)}: read-only during a run (a scenario value); tunable {where} "
                    "(docs/live.md)")
        if self.mode != "realtime":
            return (f"{', '.join(names)}: a lockstep run is deterministic and takes no change while it runs; set it "
                    f"for the next run (rths run --set {names[0]}=VALUE, or overrides:=)")
        return None

    def on_set(self, params) -> SetParametersResult:
        """rclpy's on-set-parameters callback: queue each accepted value for the next step boundary.  It sees only
        what rclpy let through (a read-only parameter never gets here; a service's set of any other parameter is
        refused before, by :class:`TunableParameters`), and the node's own declarations, which pass."""
        params = [p for p in params if p.name in self.tunables]
        if not params:
            return SetParametersResult(successful=True)
        why = self.refusal([p.name for p in params])
        if why:
            return SetParametersResult(successful=False, reason=why)
        for p in params:
            value = float(p.value)
            if not math.isfinite(value):
                return SetParametersResult(successful=False, reason=f"{p.name}: {p.value!r} is not a finite number")
        for p in params:
            self.pending[p.name] = float(p.value)
            self._started.pop(p.name, None)          # a new request: reported anew at its first step
        return SetParametersResult(successful=True, reason="applied at the next step boundary")

    def tick(self, step: int, trial: int = 0, steps: int = 1) -> None:
        """A step boundary (``steps`` steps since the last call; the ILC's learning update passes its trial's):
        move every pending value toward its target, at most its rate allows, and apply it.  The first step a
        request acts on is reported, and, for a ramp, the step it reached its target."""
        for key in list(self.pending):
            target = self.pending[key]
            old = self.current[key]
            rate = self.tunables[key].max_rate_per_s
            new = target
            if rate is not None:
                room = rate * self.dt_s * max(1, steps)
                new = old + max(-room, min(room, target - old))
            if new != old:
                self.apply(key, new)
                self.current[key] = new
            done = new == target
            if key not in self._started:
                self._started[key] = len(self.changes)
                how = "" if done else f", ramping at {_num(rate)} per second"
                self.emit(step, trial, f"tuned {key}: {_num(old)} -> {_num(target)} requested; {_num(new)} from "
                                       f"step {step}{how}")
                self.changes.append({"key": key, "from": old, "target": target, "step": step, "trial": trial,
                                     "reached_step": step if done else None})
            elif done:
                self.emit(step, trial, f"tuned {key}: reached {_num(target)} at step {step}")
                self.changes[self._started[key]]["reached_step"] = step
            if done:
                del self.pending[key]
                del self._started[key]


class TunableParameters:
    """Mixin of a node (before rclpy's Node): a parameter set names the tunables when it refuses a read-only
    parameter (rclpy's own refusal does not), and goes to :class:`LiveTuning` otherwise."""

    tuning: LiveTuning | None = None

    def apply_tuning(self, key: str, value: float) -> None:
        """Use ``value`` for ``key`` from now on (a node with tunables overrides this)."""
        raise RuntimeError(f"{self.role}: {key} is not tunable here")

    def set_parameters_atomically(self, parameter_list):
        if self.tuning is not None:
            why = self.tuning.refusal([p.name for p in parameter_list])
            if why:
                return SetParametersResult(successful=False, reason=why)
        return super().set_parameters_atomically(parameter_list)


def attach_tuning(node) -> LiveTuning:
    """The live tuning of an RthsNode (its scenario parameters are declared): takes its parameter sets and
    reports each change as a TUNED event."""
    from rths_ros.msg import TestEvent
    from rths_ros.runtime.ros_parameters import scenario_values
    values = scenario_values(node.scenario)
    t = LiveTuning(node.role, node.mode, node.dt, {k: values[k] for k in tunables_of(node.role)},
                   node.apply_tuning, lambda step, trial, reason: node.emit(TestEvent.TUNED, step, reason, trial))
    node.add_on_set_parameters_callback(t.on_set)
    return t


__all__ = ["attach_tuning", "TUNABLES", "Tunable", "LiveTuning", "TunableParameters", "tunables_of"]
