"""numerical_substructure: integrates the numerical part from the interface force and publishes
the commanded interface motion (Insam 2022 §2.8 step 3).

In:  /rths/interface_force (InterfaceForce, step k)
     /rths/passivity (PassivityState, step k) when passivity control is on: F_int = F'_m + F_d
     /rths/interface_state (InterfaceState, step k) when force blending is on
Out: /rths/interface_command (InterfaceCommand, step k+1) -- z_{k+1}, zdot_{k+1}

In lockstep mode a force sample waits for the damping force of the same step (it is computed in
parallel by the passivity_controller, so this costs no hop); in realtime mode the newest damping
coefficient is applied to the current velocity if the step's own value is not there yet.

Force blending (numerical.force_blend, du Bois et al. 2010 §4.4; :class:`rths_ros.core.methods.tdc.ForceBlend`): the model is fed
``gamma F'_m + (1 - gamma) f_n (+ F_d)`` with ``f_n`` from a specimen model driven by the commanded interface
position, and the power-discrepancy trip watches ``f (z'_cmd - z'_ach)``; the achieved velocity of step k comes
from /rths/interface_state (InterfaceState, step k), which a force sample waits for in lockstep (realtime: the
newest value).

The model is built by :func:`rths_ros.app.factory.build_numerical` (same object as the virtual
run) and driven only through the :class:`~rths_ros.core.models.base.NumericalModel` protocol: the first
``force_width`` entries of the force message are its load, ``command()`` fills the command message, and an
``abort_reason`` after a step (the gait test's walker fell) aborts the run with that reason.  What the entries
mean is the model's: the 1-D interface force; the sagittal load ``[F_par, F_perp, M]`` and the plate-frame pose
``[x_IFP - x_ref, y_IFP, alpha_R]`` of the gait test; the measured specimen force and ``[q1, q2, q3]``
(``q1 = y1``, the actuator's desired displacement) of the building benchmark.  Passivity damping and force
blending act on the first entry (the scenario allows them for the 1-D interface only).  If a force sample is
missing in realtime mode the model is advanced over the gap with the last load held, so simulated time stays
aligned with the step index; the gap is counted as lost.
"""
from __future__ import annotations

import time

from rths_ros.app import factory
from rths_ros.core.platform.safety import non_finite
from rths_ros.msg import InterfaceCommand, InterfaceForce, InterfaceState, PassivityState, TestEvent
from rths_ros.runtime.node import RthsNode, node_main, set_stamp, stamp_ns


class NumericalSubstructureNode(RthsNode):
    role = "numerical_substructure"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.model = factory.build_numerical(scenario)
        self.model.reset()
        self.width = int(self.model.force_width)
        self.pub = self.control_publisher(InterfaceCommand, "/rths/interface_command")
        self.control_subscription(InterfaceForce, "/rths/interface_force", self.on_force)
        self.npc = "passivity_controller" in scenario.run_nodes
        self.pending: dict[int, InterfaceForce] = {}
        self.fd_by_step: dict[int, float] = {}
        self.alpha_latest = 0.0
        if self.npc:
            self.control_subscription(PassivityState, "/rths/passivity", self.on_passivity)
        # du Bois et al. 2010 §4.4: force switch and power-discrepancy trip (needs the achieved interface velocity)
        self.blend = factory.build_force_blend(scenario)
        self.v_ach: dict[int, float] = {}
        self.v_ach_latest = 0.0
        if self.blend is not None:
            self.control_subscription(InterfaceState, "/rths/interface_state", self.on_state)
        self.msg = InterfaceCommand()
        self.next_k = 0          # step index of the next force sample we expect
        self.f = [0.0] * self.width
        self.f_last = [0.0] * self.width

    def reset_for_trial(self, trial: int) -> None:
        """Back to rest; announce the command of the trial's first step (the rest position)."""
        self.model.reset()
        start = trial * self.trial_len
        self.next_k = start
        self.f_last = [0.0] * self.width
        if self.blend is not None:
            self.blend.reset()
            self.v_ach = {k: v for k, v in self.v_ach.items() if k >= start}
            self.v_ach_latest = 0.0
        self.publish_command(start, start, time.time_ns())

    def publish_command(self, k: int, origin_k: int, origin_ns: int) -> None:
        m = self.msg
        set_stamp(m.header.stamp, time.time_ns())     # (the wall clock, as every loop stamp)
        m.step = k
        m.position, m.velocity = self.model.command()
        m.origin_step = origin_k
        set_stamp(m.origin_stamp, origin_ns)
        self.pub.publish(m)

    def on_passivity(self, msg: PassivityState) -> None:
        self.fd_by_step[int(msg.step)] = float(msg.damping_force)
        self.alpha_latest = float(msg.alpha)
        self._drain()

    def on_state(self, msg: InterfaceState) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        self.v_ach[int(msg.step)] = self.v_ach_latest = float(msg.velocity[0])
        self._drain()

    def _drain(self) -> None:
        """Process the waiting force samples whose damping force / achieved velocity has arrived, in order."""
        while self.pending:
            k = min(self.pending)
            if not self._ready(k):
                return
            self.on_force(self.pending.pop(k))

    def _ready(self, k: int) -> bool:
        """Lockstep: the inputs of step k besides the force are here (F_d, and z'_ach with force blending)."""
        if self.mode == "realtime":
            return True
        if self.npc and self.local_step(k) != 0 and k not in self.fd_by_step:
            return False
        return self.blend is None or k in self.v_ach

    def damping(self, k: int) -> float | None:
        """F_d(t_k), or None if it must still arrive (lockstep)."""
        if not self.npc or self.local_step(k) == 0:
            return 0.0
        f_d = self.fd_by_step.pop(k, None)
        if f_d is not None:
            return f_d
        if self.mode == "realtime":
            return self.alpha_latest * self.model.velocity
        return None

    def _abort(self, step: int, reason: str) -> None:
        self.abort_reason = f"numerical_substructure: {reason}"
        self.emit(TestEvent.ABORT, step, self.abort_reason)
        self.finish(3)

    def on_force(self, msg: InterfaceForce) -> None:
        if self.done:
            return
        if not self._ready(int(msg.step)) or (self.pending and int(msg.step) > min(self.pending)):
            self.pending[int(msg.step)] = msg
            return
        t0 = time.perf_counter_ns()
        self.timing.tick()
        k = int(msg.step)
        if not self.enter_trial(k):
            return
        if k < self.next_k:
            self.timing.late_messages += 1
            return
        if self.local_step(k + 1) == 0:   # the trial's last sample: nothing more to command in this trial
            self.next_k = k + 1
            return
        model = self.model
        while self.next_k < k:  # realtime gap: hold the last load over the missing steps
            model.step(self.f_last)
            self.next_k += 1
        f = self.f
        for i in range(self.width):
            f[i] = float(msg.force[i])
        if self.blend is not None:   # f = gamma F'_m + (1 - gamma) f_n, power-discrepancy trip (du Bois et al. 2010 §4.4)
            v_ach = self.v_ach.pop(k, self.v_ach_latest)
            q, qd = model.command()   # the command of this step: the numerical interface state (z_k, z'_k)
            f[0] = self.blend.force(f[0], float(q[0]), float(qd[0]), v_ach)
            if len(self.v_ach) > 100:   # realtime: states of skipped steps
                for old in [j for j in self.v_ach if j < k]:
                    del self.v_ach[old]
        if self.npc:
            f[0] = f[0] + self.damping(k)
        bad = non_finite("interface force", f, k)
        if bad:
            self._abort(k, bad)
            return
        events = model.step(f)
        self.f_last = list(f)
        self.next_k = k + 1
        if events:
            reason = model.abort_reason(events)
            if reason is not None:
                self._abort(k + 1, f"step {k + 1}: {reason}")
                return
        origin_ns = stamp_ns(msg.origin_stamp)
        self.publish_command(k + 1, k, origin_ns)
        self.timing.latency((time.time_ns() - origin_ns) * 1e-9)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(k)


def main(argv=None) -> int:
    return node_main([NumericalSubstructureNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
