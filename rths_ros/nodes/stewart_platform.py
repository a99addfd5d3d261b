"""stewart_platform: interface command -> leg commands (inverse kinematics, velocity feedforward,
limits); measured leg lengths -> achieved interface state (forward kinematics).

In:  /rths/interface_command (InterfaceCommand, step k), /rths/leg_state (LegState, step k)
Out: /rths/leg_command (LegCommand, step k), /rths/interface_state (InterfaceState, step k)

A command that would leave the stroke, exceed the leg speed or the joint angle aborts the run
(ABORT event with the limit in the reason) and nothing more is commanded.

The work is the model family's :class:`~rths_ros.core.platform.paths.PlatformPath`
(:func:`rths_ros.app.factory.build_platform_path`); the node never asks which model runs.  An *open-loop* path
turns the interface command of step k into the leg command of step k (the 1-D interface: the
``safety.interface_limit_m`` check, inverse kinematics, velocity feedforward, limits; the gait test: the
plate-frame pose ``[x_IFP - x_ref, y_IFP, alpha_R]`` with the 7 deg toe-out and the leg-speed policy).  A
*closed-loop* path is a feedback controller: with the interface command of step k and the measured legs of step k
it publishes the leg command of step k+1 (the building benchmark: ``u_k = C(y1_k, x_m,k)``, ``length[0]``);
lockstep: it waits for both samples of step k; realtime: it runs on the leg state with the newest command.  Either
way the legs of a trial's first step are the path's start pose, and the leg commands of steps 1..N are published.
A rejected command (a limit, an exception of a user's controller) aborts the run.
"""
from __future__ import annotations

import time

import numpy as np
from builtin_interfaces.msg import Time

from rths_ros.app import factory
from rths_ros.app.ilc_series import IlcSeries
from rths_ros.core.platform.commander import CommandRejected
from rths_ros.msg import (
    AdaptiveFilter,
    IlcFeedforward,
    InterfaceCommand,
    InterfaceState,
    LegCommand,
    LegState,
    TestEvent,
)
from rths_ros.runtime.node import RthsNode, node_main, stamp_ns
from rths_ros.runtime.qos import events_qos


class StewartPlatformNode(RthsNode):
    role = "stewart_platform"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.path = factory.build_platform_path(scenario)
        self.path.reset()
        self.closed_loop = bool(self.path.closed_loop)
        self.lead = 1 if self.closed_loop else 0       # leg command step = input step + lead
        self.cmd_by_step: dict[int, InterfaceCommand] = {}
        self.meas_by_step: dict[int, tuple[float, Time]] = {}
        self.cmd_latest: InterfaceCommand | None = None
        self.leg_pub = self.control_publisher(LegCommand, "/rths/leg_command")
        self.state_pub = self.control_publisher(InterfaceState, "/rths/interface_state")
        self.control_subscription(InterfaceCommand, "/rths/interface_command", self.on_command)
        self.control_subscription(LegState, "/rths/leg_state", self.on_leg_state)
        self.leg_msg = LegCommand()
        self.state_msg = InterfaceState()
        self.faulted = False
        fp = scenario.faults
        self._offset_at, self._offset_m = fp.leg_command_offset_at_step, fp.leg_command_offset_m
        # ILC: the feedforward of each trial comes from the ilc_learner before the trial starts
        self.ilc = IlcSeries(scenario) if "ilc_learner" in scenario.run_nodes else None
        self.ilc_ff: dict[int, np.ndarray] = {0: np.zeros((6, scenario.steps))}
        self.pending: list[InterfaceCommand] = []
        if self.ilc is not None:
            topic = "/rths/ilc_feedforward"
            self.guard.subscription(IlcFeedforward, topic, self.guard.validated(topic, self.on_ilc), events_qos())
        # AFF: the coefficients adapted after measurement k are applied to the command of step k+1
        self.aff = factory.build_aff(scenario) if "aff_learner" in scenario.run_nodes else None
        self.theta: dict[int, np.ndarray] = {}
        self.theta_latest = None
        if self.aff is not None:
            self.guard.widths["aff_coefficients"] = int(self.aff.coefficients.size)
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
        self.path.reset()
        start = trial * self.trial_len
        self.cmd_by_step = {k: v for k, v in self.cmd_by_step.items() if k >= start}
        self.meas_by_step = {k: v for k, v in self.meas_by_step.items() if k >= start}
        self.cmd_latest = None
        if self.aff is not None:
            self.aff.reset()
            self.theta = {k: v for k, v in self.theta.items() if k >= start}

    def on_command(self, msg: InterfaceCommand) -> None:
        if self.done or self.faulted or not self.enter_trial(msg.step):
            return
        k = int(msg.step)
        if self.closed_loop:     # the controller runs when the measurement of step k is here as well
            self.cmd_latest = msg
            if self.mode != "realtime":
                self.cmd_by_step[k] = msg
                self._closed_loop_step(k)
            return
        local = self.local_step(k)
        if local == 0:  # the first step of a trial: the platform is at its start pose
            return
        trial = self.trial_of(k)
        if (self.ilc is not None and trial not in self.ilc_ff) or (
                self.aff is not None and self.mode != "realtime" and (k - 1) not in self.theta):
            self.pending.append(msg)  # the trial's ILC feedforward / the AFF coefficients are on their way
            return
        t0 = time.perf_counter_ns()
        self.timing.tick()
        self._command(k, msg, None, msg.header.stamp, msg.origin_stamp, t0)

    def _closed_loop_step(self, k: int) -> None:
        """The leg command of step k+1 from the interface command and the measured legs of step k, once both are
        here (lockstep); realtime: with the newest interface command."""
        if self.done or self.faulted:
            return
        if self.mode == "realtime":
            msg = self.cmd_latest
            meas = self.meas_by_step.pop(k, None)
        else:
            if k not in self.cmd_by_step or k not in self.meas_by_step:
                return
            msg = self.cmd_by_step.pop(k)
            meas = self.meas_by_step.pop(k)
        if meas is None or self.local_step(k) == self.trial_len - 1:   # no command after the trial's last sample
            return
        x_m, stamp = meas
        t0 = time.perf_counter_ns()
        self.timing.tick()
        if msg is None:
            position, velocity = (0.0,), (0.0,)
        else:
            position, velocity = msg.position, msg.velocity
        self._command(k + 1, None, (position, velocity, x_m), stamp, stamp, t0)

    def _command(self, step: int, msg, closed, stamp, origin_stamp, t0: int) -> None:
        """Compute, change (feedforward learners, injected fault), check and publish the leg command of ``step``."""
        path = self.path
        try:
            if closed is None:
                cmd = path.command(msg.position, msg.velocity)
            else:
                cmd = path.command(*closed)
        except CommandRejected as exc:
            self._fault(step - self.lead, str(exc))
            return
        try:
            local = self.local_step(step)
            if self.aff is not None:
                th = self._theta_for(step)
                if th is not None:
                    path.add_feedforward(cmd, self.aff.feedforward(cmd.length, th, step=local))
            if self.ilc is not None:
                self.ilc.apply(local, self.ilc_ff[self.trial_of(step)], cmd.length, cmd.feedforward_velocity,
                               cmd.feedforward_position)
            if (self.aff is not None or self.ilc is not None) and path.commander is not None \
                    and path.commander.params.enforce_limits:
                path.commander.check_command(cmd)   # the command as sent, after every feedforward
        except CommandRejected as exc:
            self._fault(step, f"feedforward: {exc}")
            return
        if 0 <= self._offset_at <= step:     # injected fault: a wrong leg command
            cmd.length[0] += self._offset_m
            try:
                path.check(cmd)
            except CommandRejected as exc:
                self._fault(step, f"injected leg command offset: {exc}")
                return
        m = self.leg_msg
        m.header.stamp = stamp
        m.step = step
        m.length = cmd.length
        m.velocity = cmd.velocity
        m.feedforward_velocity = cmd.feedforward_velocity
        m.feedforward_position = cmd.feedforward_position
        m.origin_stamp = origin_stamp
        self.leg_pub.publish(m)
        self.timing.latency((time.time_ns() - stamp_ns(origin_stamp)) * 1e-9)
        self.timing.compute(time.perf_counter_ns() - t0)
        self.sync_readers(step - self.lead)

    def _fault(self, step: int, what: str) -> None:
        """A command the platform must not execute: nothing more is commanded, the run aborts."""
        self.faulted = True
        self.abort_reason = f"step {step}: {what}"
        self.emit(TestEvent.ABORT, step, self.abort_reason)

    def on_leg_state(self, msg: LegState) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        q, qd = self.path.achieved(msg.length, msg.velocity)
        m = self.state_msg
        m.header.stamp = msg.header.stamp
        m.step = msg.step
        m.position = q
        m.velocity = qd
        self.state_pub.publish(m)
        if self.closed_loop:
            k = int(msg.step)
            st = msg.header.stamp
            self.meas_by_step[k] = (float(msg.length[0]), Time(sec=st.sec, nanosec=st.nanosec))
            self._closed_loop_step(k)


def main(argv=None) -> int:
    return node_main([StewartPlatformNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
