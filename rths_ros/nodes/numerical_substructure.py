"""numerical_substructure: integrates the numerical part from the interface force and publishes
the commanded interface motion (seed 000 §2.8 step 3).

In:  /rths/interface_force (InterfaceForce, step k)
     /rths/passivity (PassivityState, step k) when passivity control is on: F_int = F'_m + F_d
     /rths/interface_state (InterfaceState, step k) when force blending is on
Out: /rths/interface_command (InterfaceCommand, step k+1) -- z_{k+1}, zdot_{k+1}

In lockstep mode a force sample waits for the damping force of the same step (it is computed in
parallel by the passivity_controller, so this costs no hop); in realtime mode the newest damping
coefficient is applied to the current velocity if the step's own value is not there yet.

Force blending (numerical.force_blend, seed 004 §4.4; :class:`rths_ros.core.methods.tdc.ForceBlend`): the model is fed
``gamma F'_m + (1 - gamma) f_n (+ F_d)`` with ``f_n`` from a specimen model driven by the commanded interface
position, and the power-discrepancy trip watches ``f (z'_cmd - z'_ach)``; the achieved velocity of step k comes
from /rths/interface_state (InterfaceState, step k), which a force sample waits for in lockstep (realtime: the
newest value).

The model is built by :func:`rths_ros.app.factory.build_numerical` (same object as the virtual
run).  If a force sample is missing in realtime mode the model is advanced over the gap with the
last force held, so simulated time stays aligned with the step index; the gap is counted as lost.

Gait test (numerical.model = vpp, :class:`rths_ros.core.models.gait.rths.GaitNumerical`): the force message carries
the sagittal load ``[F_par, F_perp, M]`` and the command the plate-frame interface pose
``[x_IFP - x_ref, y_IFP, alpha_R]`` with its rates.  A fall of the walker (event bit 16) aborts the run with
the reason.

Building benchmark (numerical.model = building, :class:`rths_ros.core.models.building.rths.BuildingNumerical`): the force
is the measured specimen force ``f_m,k``; the ground acceleration ``a_g,k`` comes from the record itself; the command
carries ``position = [q1, q2, q3]`` (``q1 = y1``, the actuator's desired displacement) and the velocities.
"""
from __future__ import annotations

import time

import numpy as np

from rths_ros.app import factory
from rths_ros.runtime.node import RthsNode, node_main, set_stamp, stamp_ns

from rths_ros.core.platform.safety import non_finite

from rths_ros.msg import InterfaceCommand, InterfaceForce, InterfaceState, PassivityState, TestEvent  # noqa: E402


class NumericalSubstructureNode(RthsNode):
    role = "numerical_substructure"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.model = factory.build_numerical(scenario)
        self.model.reset()
        self.gait = factory.is_gait(scenario)
        self.building = factory.is_building(scenario)
        self.f3_last = (0.0, 0.0, 0.0)
        self.pub = self.control_publisher(InterfaceCommand, "/rths/interface_command")
        self.control_subscription(InterfaceForce, "/rths/interface_force", self.on_force)
        self.npc = "passivity_controller" in scenario.run_nodes
        self.pending: dict[int, InterfaceForce] = {}
        self.fd_by_step: dict[int, float] = {}
        self.alpha_latest = 0.0
        if self.npc:
            self.control_subscription(PassivityState, "/rths/passivity", self.on_passivity)
        # seed 004 §4.4: force switch and power-discrepancy trip (needs the achieved interface velocity)
        self.blend = factory.build_force_blend(scenario) if not (self.gait or self.building) else None
        self.v_ach: dict[int, float] = {}
        self.v_ach_latest = 0.0
        self._z_cmd = 0.0        # the command of the current step (z_k, z'_k): the numerical interface state
        self._zd_cmd = 0.0
        if self.blend is not None:
            self.control_subscription(InterfaceState, "/rths/interface_state", self.on_state)
        self.msg = InterfaceCommand()
        self.next_k = 0          # step index of the next force sample we expect
        self.f_last = 0.0
        self._pos = np.zeros(1)
        self._vel = np.zeros(1)

    def reset_for_trial(self, trial: int) -> None:
        """Back to rest; announce the command of the trial's first step (the rest position)."""
        self.model.reset()
        start = trial * self.trial_len
        self.next_k = start
        self.f_last = 0.0
        if self.blend is not None:
            self.blend.reset()
            self.v_ach = {k: v for k, v in self.v_ach.items() if k >= start}
            self.v_ach_latest = 0.0
        if self.gait:
            self.f3_last = (0.0, 0.0, 0.0)
            self.publish_gait_command(start, start, time.time_ns())
            return
        self.publish_command(start, start, 0.0, 0.0, time.time_ns())

    def publish_gait_command(self, k: int, origin_k: int, origin_ns: int) -> None:
        m = self.msg
        m.header.stamp = self.get_clock().now().to_msg()
        m.step = k
        m.position = self.model.q
        m.velocity = self.model.qd
        m.origin_step = origin_k
        set_stamp(m.origin_stamp, origin_ns)
        self.pub.publish(m)

    def on_gait_force(self, msg: InterfaceForce, k: int, t0: int) -> None:
        from rths_ros.core.models.gait.rths import FALL_EVENT
        while self.next_k < k:  # realtime gap: hold the last load over the missing steps
            self.model.step(*self.f3_last)
            self.next_k += 1
        f = (float(msg.force[0]), float(msg.force[1]), float(msg.force[2]))
        bad = non_finite("interface force", f, k)
        if bad:
            self.abort_reason = f"numerical_substructure: {bad}"
            self.emit(TestEvent.ABORT, k, self.abort_reason)
            self.finish(3)
            return
        ev = self.model.step(*f)
        self.f3_last = f
        self.next_k = k + 1
        if ev & FALL_EVENT:
            self.abort_reason = (f"numerical_substructure: step {k + 1}: the walker fell (VPP model, "
                                 f"t = {self.model.t:.3f} s)")
            self.emit(TestEvent.ABORT, k + 1, self.abort_reason)
            self.finish(3)
            return
        origin_ns = stamp_ns(msg.origin_stamp)
        self.publish_gait_command(k + 1, k, origin_ns)
        self.timing.latency((time.time_ns() - origin_ns) * 1e-9)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(k)

    def publish_command(self, k: int, origin_k: int, z: float, zd: float, origin_ns: int) -> None:
        m = self.msg
        m.header.stamp = self.get_clock().now().to_msg()
        m.step = k
        if self.building:    # the benchmark: all three numerical DoFs, position[0] = y1 (building_rths)
            m.position = self.model.q
            m.velocity = self.model.qd
        else:
            self._pos[0], self._vel[0] = z, zd
            self._z_cmd, self._zd_cmd = z, zd
            m.position = self._pos
            m.velocity = self._vel
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
        if self.gait:
            self.on_gait_force(msg, k, t0)
            return
        while self.next_k < k:  # realtime gap: hold the last force over the missing steps
            self.model.step(self.f_last)
            self.next_k += 1
        f_p = float(msg.force[0])
        if self.blend is not None:   # f = gamma F'_m + (1 - gamma) f_n, power-discrepancy trip (seed 004 §4.4)
            v_ach = self.v_ach.pop(k, self.v_ach_latest)
            f_p = self.blend.force(f_p, self._z_cmd, self._zd_cmd, v_ach)
            if len(self.v_ach) > 100:   # realtime: states of skipped steps
                for old in [j for j in self.v_ach if j < k]:
                    del self.v_ach[old]
        f_int = f_p + self.damping(k)
        bad = non_finite("interface force", (f_int,), k)
        if bad:
            self.abort_reason = f"numerical_substructure: {bad}"
            self.emit(TestEvent.ABORT, k, self.abort_reason)
            self.finish(3)
            return
        z, zd = self.model.step(f_int)
        self.f_last = f_int
        self.next_k = k + 1
        origin_ns = stamp_ns(msg.origin_stamp)
        self.publish_command(k + 1, k, z, zd, origin_ns)
        self.timing.latency((time.time_ns() - origin_ns) * 1e-9)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(k)


def main(argv=None) -> int:
    return node_main([NumericalSubstructureNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
