"""stewart_platform: interface command -> leg commands (inverse kinematics, velocity feedforward,
limits); measured leg lengths -> achieved interface state (forward kinematics).

In:  /rths/interface_command (InterfaceCommand, step k), /rths/leg_state (LegState, step k)
Out: /rths/leg_command (LegCommand, step k), /rths/interface_state (InterfaceState, step k)

A command that would leave the stroke, exceed the leg speed or the joint angle aborts the run
(ABORT event with the limit in the reason) and nothing more is commanded.

Gait test (numerical.model = vpp): the 3-DoF plate-frame command ``[x_IFP - x_ref, y_IFP, alpha_R]`` goes through
:class:`rths_ros.core.models.gait.rths.GaitPlatform` (inverse kinematics with the 7 deg toe-out, velocity feedforward, the
leg-speed policy of platform.gait; stroke and joint-angle limits abort), and the achieved interface state is the
plate-frame pose of the measured legs.  The 1-D ``safety.interface_limit_m`` check does not apply there.

Building benchmark (numerical.model = building): the node runs the tracking controller
(:class:`rths_ros.core.models.building.rths.BuildingPlatform`, ``tracking_controller``): with the desired ``y1_k``
(InterfaceCommand step k, ``position[0]``) and the measured ``x_m,k`` (LegState step k, ``length[0]``) it publishes
``u_k = C(y1_k, x_m,k)`` as LegCommand step k+1 (``length[0]``).  Lockstep: waits for both samples of step k;
realtime: on the leg state, with the newest command.  An exception of the controller aborts the run.
"""
from __future__ import annotations

import time

import numpy as np

from rths_ros.app import factory
from rths_ros.core.platform.commander import LimitViolation
from rths_ros.runtime.node import RthsNode, node_main, stamp_ns

from rths_ros.app.ilc_series import IlcSeries
from rths_ros.runtime.qos import events_qos

from rths_ros.msg import (AdaptiveFilter, IlcFeedforward, InterfaceCommand, InterfaceState, LegCommand,  # noqa
                          LegState, TestEvent)


class StewartPlatformNode(RthsNode):
    role = "stewart_platform"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.map, self.commander = factory.build_platform(scenario)
        self.commander.reset()
        self.gait = factory.build_gait_platform(scenario) if factory.is_gait(scenario) else None
        self.building = factory.build_building_platform(scenario) if factory.is_building(scenario) else None
        self.y1_by_step: dict[int, float] = {}
        self.xm_by_step: dict[int, tuple] = {}
        self.y1_latest = 0.0
        self.leg_pub = self.control_publisher(LegCommand, "/rths/leg_command")
        self.state_pub = self.control_publisher(InterfaceState, "/rths/interface_state")
        self.control_subscription(InterfaceCommand, "/rths/interface_command", self.on_command)
        self.control_subscription(LegState, "/rths/leg_state", self.on_leg_state)
        self.leg_msg = LegCommand()
        self.state_msg = InterfaceState()
        self.faulted = False
        sp, fp = scenario.safety, scenario.faults
        dofs = scenario.platform.interface.dofs
        self._lin = [i for i, d in enumerate(dofs) if d in ("x", "y", "z")]
        self._q_lim = sp.interface_limit_m
        self._offset_at, self._offset_m = fp.leg_command_offset_at_step, fp.leg_command_offset_m
        # ILC: the feedforward of each trial comes from the ilc_learner before the trial starts
        self.ilc = IlcSeries(scenario) if "ilc_learner" in scenario.run_nodes else None
        self.ilc_ff: dict[int, np.ndarray] = {0: np.zeros((6, scenario.steps))}
        self.pending: list[InterfaceCommand] = []
        if self.ilc is not None:
            self.create_subscription(IlcFeedforward, "/rths/ilc_feedforward", self.on_ilc, events_qos())
        # AFF: the coefficients adapted after measurement k are applied to the command of step k+1
        self.aff = factory.build_aff(scenario) if "aff_learner" in scenario.run_nodes else None
        self.theta: dict[int, np.ndarray] = {}
        self.theta_latest = None
        if self.aff is not None:
            self.control_subscription(AdaptiveFilter, "/rths/aff_coefficients", self.on_theta)

    def on_theta(self, msg: AdaptiveFilter) -> None:
        th = np.asarray(msg.coefficients, dtype=float).reshape(msg.n_legs, msg.n_coefficients)
        self.theta[int(msg.step)] = th
        self.theta_latest = th
        if self.pending:
            pending, self.pending = self.pending, []
            for m in pending:
                self.on_command(m)

    def _theta_for(self, step: int):
        """Coefficients for the command of ``step`` (those adapted after measurement step-1)."""
        th = self.theta.pop(step - 1, None)
        if th is None and self.mode == "realtime":
            th = self.theta_latest
        return th

    def on_ilc(self, msg: IlcFeedforward) -> None:
        self.ilc_ff[int(msg.trial)] = np.asarray(msg.data, dtype=float).reshape(msg.n_legs, msg.n_samples)
        pending, self.pending = self.pending, []
        for m in pending:
            self.on_command(m)

    def reset_for_trial(self, trial: int) -> None:
        self.commander.reset()
        if self.building is not None:
            self.building.reset()
            start = trial * self.trial_len
            self.y1_by_step = {k: v for k, v in self.y1_by_step.items() if k >= start}
            self.xm_by_step = {k: v for k, v in self.xm_by_step.items() if k >= start}
            self.y1_latest = 0.0
        if self.gait is not None:
            self.gait.reset()
        if self.aff is not None:
            self.aff.reset()
            start = trial * self.trial_len
            self.theta = {k: v for k, v in self.theta.items() if k >= start}

    def on_command(self, msg: InterfaceCommand) -> None:
        if self.done or self.faulted or not self.enter_trial(msg.step):
            return
        if self.building is not None:
            k = int(msg.step)
            self.y1_latest = float(msg.position[0])
            if self.mode != "realtime":
                self.y1_by_step[k] = self.y1_latest
                self.building_step(k)
            return
        local = self.local_step(msg.step)
        if local == 0:  # the first step of a trial: the platform is at home
            return
        trial = self.trial_of(msg.step)
        if (self.ilc is not None and trial not in self.ilc_ff) or (
                self.aff is not None and self.mode != "realtime" and (msg.step - 1) not in self.theta):
            self.pending.append(msg)  # the trial's ILC feedforward / the AFF coefficients are on their way
            return
        t0 = time.perf_counter_ns()
        self.timing.tick()
        if self.gait is not None:
            self.on_gait_command(msg, t0)
            return
        for i in self._lin:
            if abs(msg.position[i]) > self._q_lim:
                self._fault(msg.step, f"interface displacement {float(msg.position[i]):.6g} m beyond "
                                      f"safety.interface_limit_m = {self._q_lim:g} m")
                return
        try:
            cmd = self.commander.command(msg.position, msg.velocity)
        except LimitViolation as exc:
            self._fault(msg.step, str(exc))
            return
        try:
            if self.aff is not None:
                th = self._theta_for(msg.step)
                if th is not None:
                    u = self.aff.feedforward(cmd.length, th, step=local)
                    factory.apply_position_feedforward(self.commander, cmd, u)
            if self.ilc is not None:
                self.ilc.apply(local, self.ilc_ff[trial], cmd.length, cmd.feedforward_velocity,
                               cmd.feedforward_position)
            if (self.aff is not None or self.ilc is not None) and self.commander.params.enforce_limits:
                self.commander.check_command(cmd)   # the command as sent, after every feedforward
            if 0 <= self._offset_at <= msg.step:     # injected fault: a wrong leg command
                cmd.length[0] += self._offset_m
                self.commander.check(cmd.length, cmd.velocity)
        except LimitViolation as exc:
            self._fault(msg.step, f"feedforward: {exc}")
            return
        m = self.leg_msg
        m.header.stamp = msg.header.stamp
        m.step = msg.step
        m.length = cmd.length
        m.velocity = cmd.velocity
        m.feedforward_velocity = cmd.feedforward_velocity
        m.feedforward_position = cmd.feedforward_position
        m.origin_stamp = msg.origin_stamp
        self.leg_pub.publish(m)
        self.timing.latency((time.time_ns() - stamp_ns(msg.origin_stamp)) * 1e-9)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(msg.step)

    def on_gait_command(self, msg: InterfaceCommand, t0: int) -> None:
        g = self.gait
        try:
            cmd = g.command(msg.position, msg.velocity)
            if 0 <= self._offset_at <= msg.step:     # injected fault: a wrong leg command
                cmd.length[0] += self._offset_m
                g._checker.check(cmd.length, cmd.velocity, g.gi.last_tcp_pose)
        except LimitViolation as exc:
            self._fault(msg.step, str(exc))
            return
        m = self.leg_msg
        m.header.stamp = msg.header.stamp
        m.step = msg.step
        m.length = cmd.length
        m.velocity = cmd.velocity
        m.feedforward_velocity = cmd.feedforward_velocity
        m.feedforward_position = cmd.feedforward_position
        m.origin_stamp = msg.origin_stamp
        self.leg_pub.publish(m)
        self.timing.latency((time.time_ns() - stamp_ns(msg.origin_stamp)) * 1e-9)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(msg.step)

    def _fault(self, step: int, what: str) -> None:
        """A command the platform must not execute: nothing more is commanded, the run aborts."""
        self.faulted = True
        self.abort_reason = f"step {step}: {what}"
        self.emit(TestEvent.ABORT, step, self.abort_reason)

    def building_step(self, k: int) -> None:
        """The benchmark: u_k from y1_k and x_m,k once both are here (lockstep) -> LegCommand step k+1."""
        if self.done or self.faulted:
            return
        if self.mode == "realtime":
            y1 = self.y1_latest
            meas = self.xm_by_step.pop(k, None)
        else:
            if k not in self.y1_by_step or k not in self.xm_by_step:
                return
            y1 = self.y1_by_step.pop(k)
            meas = self.xm_by_step.pop(k)
        if meas is None or self.local_step(k) == self.trial_len - 1:   # no command after the trial's last sample
            return
        x_m, stamp = meas
        t0 = time.perf_counter_ns()
        self.timing.tick()
        try:
            u = self.building.command(y1, x_m)
        except Exception as exc:   # a user's controller failed: nothing more is commanded
            self._fault(k, f"tracking controller: {type(exc).__name__}: {exc}")
            return
        m = self.leg_msg
        m.header.stamp = stamp
        m.step = k + 1
        m.length = [u, 0.0, 0.0, 0.0, 0.0, 0.0]
        m.velocity = [0.0] * 6
        m.feedforward_velocity = [0.0] * 6
        m.feedforward_position = [0.0] * 6
        m.origin_stamp = stamp
        self.leg_pub.publish(m)
        self.timing.latency((time.time_ns() - stamp_ns(stamp)) * 1e-9)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(k)

    def on_leg_state(self, msg: LegState) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        if self.building is not None:
            q, qd = self.building.achieved(msg.length, msg.velocity)
            m = self.state_msg
            m.header.stamp = msg.header.stamp
            m.step = msg.step
            m.position = q
            m.velocity = qd
            self.state_pub.publish(m)
            k = int(msg.step)
            st = msg.header.stamp
            from builtin_interfaces.msg import Time
            self.xm_by_step[k] = (float(msg.length[0]), Time(sec=st.sec, nanosec=st.nanosec))
            self.building_step(k)
            return
        if self.gait is not None:
            q, qd = self.gait.achieved(msg.length, msg.velocity)
        else:
            q, qd = self.map.achieved(msg.length, msg.velocity)
        m = self.state_msg
        m.header.stamp = msg.header.stamp
        m.step = msg.step
        m.position = q
        m.velocity = qd
        self.state_pub.publish(m)


def main(argv=None) -> int:
    return node_main([StewartPlatformNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
