"""aff_learner: the adapting half of the adaptive feedforward filter (aff.kind = fir: Insam 2022 ch. 7, leaky
normalised filtered-x LMS, one FIR filter per leg; aff.kind = harmonic: Bartl 2019 ch. 5, harmonic basis on the
harmonics of f_d, LMS or QR-RLS per leg, rths_ros.core.learning.aff.harmonic_legs).

After each measurement b'_k it adapts the coefficients with the gap g_k = b_k - b'_k (b_k = the
un-augmented desired leg lengths of the command held over the step, filtered through the
secondary-path model; harmonic: with the basis W(t_k)) and publishes them on /rths/aff_coefficients
(AdaptiveFilter, step k, kind "fir" or "harmonic").  The stewart_platform applies them to the next command
(FIR: u_{k+1} = Theta . [b_{k+1}, b_k, ...]; harmonic: u_{k+1} = W(t_{k+1}) theta_k), so the learner works in
parallel with the sensor and numerical part, not as a hop of the fast path.

Harmonic AFF with the power-flow supervisor (aff.harmonic.supervisor.enabled, Bartl 2019 Alg. 2): the learner also
reads the interface force F_int[k] (InterfaceForce), the commanded z_cmd[k] (InterfaceCommand) and the achieved
z_ach[k] (InterfaceState) of the same step, and the supervisor takes P_in = lam_VIR . d/dt (z_ach - z_cmd) with
lam_VIR = -F_int (the force on the numerical part); lockstep waits for all five messages of step k, realtime uses
the newest interface values if the step's own are not there.

A filter that adapts with the interface gap (the family's ``aff_gap = "interface"``: the cubic-spring rig's AFF on
a linear motor, rths_ros.core.models.bartl.rths.CubicSpringAff; the coupled beams' two-DoF AFF on two shakers,
rths_ros.core.models.bartl.beams_rths.CoupledBeamsAff) reads no leg topics: after step k it takes the
achieved z_ach[k] (InterfaceState), the measured force F[k] (InterfaceForce, ``measured``) and the command
z_cmd[k+1] (InterfaceCommand), adapts, and publishes the coefficients of step k for the command of step k+1.  The
last step of a trial has no next command: its coefficients are published unchanged.

In:  /rths/leg_command (LegCommand, k), /rths/leg_state (LegState, k); with the supervisor also
     /rths/interface_force (InterfaceForce, k), /rths/interface_command (InterfaceCommand, k),
     /rths/interface_state (InterfaceState, k); interface-gap filters: only the three interface topics
Out: /rths/aff_coefficients (AdaptiveFilter, k)
"""
from __future__ import annotations

import time

import numpy as np

from rths_ros.app import factory
from rths_ros.msg import AdaptiveFilter, InterfaceCommand, InterfaceForce, InterfaceState, LegCommand, LegState
from rths_ros.runtime.node import RthsNode, node_main, set_stamp


class AffLearnerNode(RthsNode):
    role = "aff_learner"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.aff = factory.build_aff(scenario)
        self.home = np.array(self.aff.home_lengths, dtype=float)
        self.pub = self.control_publisher(AdaptiveFilter, "/rths/aff_coefficients")
        self.interface_gap = factory.parts(scenario).aff_gap == "interface"
        if not self.interface_gap:
            self.control_subscription(LegCommand, "/rths/leg_command", self.on_leg_command)
            self.control_subscription(LegState, "/rths/leg_state", self.on_leg_state)
        self.b_des: dict[int, np.ndarray] = {}
        self.b_meas: dict[int, np.ndarray] = {}
        # the power-flow supervisor of the harmonic AFF needs the interface force and gap of every step
        self.supervised = bool(getattr(self.aff, "supervised", False))
        # interface values per step, arrays of the interface widths (the supervisor uses entry 0)
        self.f_int: dict[int, np.ndarray] = {}
        self.z_cmd: dict[int, np.ndarray] = {}
        self.z_ach: dict[int, np.ndarray] = {}
        w = factory.interface_widths(scenario)
        self._widths = (w["measured"], w["command"], w["state"])
        self._latest = [np.zeros(n) for n in self._widths]      # F_int, z_cmd, z_ach (realtime: newest values)
        if self.supervised or self.interface_gap:
            force_field = "measured" if self.interface_gap else "force"
            for i, (typ, topic, store, field) in enumerate((
                    (InterfaceForce, "/rths/interface_force", self.f_int, force_field),
                    (InterfaceCommand, "/rths/interface_command", self.z_cmd, "position"),
                    (InterfaceState, "/rths/interface_state", self.z_ach, "position"))):
                self.control_subscription(typ, topic, self._interface_input(i, store, field))
        self.next_k = 0
        self.start = 0
        self._stop_by: float | None = None    # lockstep STOP came before the last step's inputs: wait until then
        self.create_timer(0.05, self._check_stop)
        self.msg = AdaptiveFilter()
        self.msg.kind = self.aff.kind
        self.msg.n_legs, self.msg.n_coefficients = self.aff.coefficients.shape

    def on_stop(self) -> None:
        """Lockstep: STOP travels on the events topic, the last step's inputs on the loop topics, so STOP can
        overtake them; the coefficients of every step up to the last are published before the node ends (or
        after safety.watchdog_s, with a warning)."""
        if self.mode == "lockstep" and self.stop_step is not None and self.next_k <= self.stop_step:
            if self._stop_by is None:
                self._stop_by = time.monotonic() + self.scenario.safety.watchdog_s
            return
        super().on_stop()

    def _check_stop(self) -> None:
        if self._stop_by is None or self.done:
            return
        if self.next_k > self.stop_step:
            super().on_stop()
        elif time.monotonic() > self._stop_by:
            self.get_logger().warning(f"STOP: the inputs of steps {self.next_k}..{self.stop_step} never came")
            super().on_stop()

    def reset_for_trial(self, trial: int) -> None:
        self.aff.reset()
        start = trial * self.trial_len
        self.next_k = start
        self.start = start
        self.b_des = {k: v for k, v in self.b_des.items() if k >= start}
        self.b_meas = {k: v for k, v in self.b_meas.items() if k >= start}
        self.b_des[start] = self.home     # the platform is at home at the start of a trial
        for d in (self.f_int, self.z_cmd, self.z_ach):      # in place: the callbacks hold these dicts
            for old in [k for k in d if k < start]:
                del d[old]
        self._latest[:] = [np.zeros(n) for n in self._widths]

    def _interface_input(self, i: int, store: dict, field: str):
        """Callback of one interface topic: its values at step k (an array of the interface width), kept for the
        filter (``_latest[i]`` is the newest value, used in realtime when a step's own is missing)."""
        def cb(msg) -> None:
            if self.done or not self.enter_trial(msg.step):
                return
            store[int(msg.step)] = self._latest[i] = np.array(getattr(msg, field), dtype=float)
            self._try()
        return cb

    def _interface_ready(self, k: int) -> bool:
        return (not self.supervised or self.mode == "realtime"
                or (k in self.f_int and k in self.z_cmd and k in self.z_ach))

    def on_leg_command(self, msg: LegCommand) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        self.b_des[int(msg.step)] = np.asarray(msg.length) - np.asarray(msg.feedforward_position)
        self._try()

    def on_leg_state(self, msg: LegState) -> None:
        if self.done or not self.enter_trial(msg.step):
            return
        self.b_meas[int(msg.step)] = np.asarray(msg.length, dtype=float)
        self._try()

    def _publish(self, k: int, t0: int) -> None:
        """The coefficients after step k; the next step is due."""
        m = self.msg
        set_stamp(m.header.stamp, time.time_ns())     # (the wall clock, as every loop stamp)
        m.step = k
        m.coefficients = self.aff.coefficients.ravel()
        m.gains = [float(g) for g in self.aff.gains]
        self.pub.publish(m)
        self.next_k = k + 1
        self.timing.compute(time.perf_counter_ns() - t0)

    def _try_interface(self) -> None:
        """Interface-gap filter: step k needs z_ach[k], F[k] and z_cmd[k+1]; a trial's last step has no next
        command (its coefficients go out unchanged).  Realtime: each new command z_cmd[k+1] adapts with the
        step's own z_ach[k] and F[k] if they came, else the newest ones (a lost sample is counted)."""
        if self.mode == "realtime":
            self._try_interface_realtime()
            return
        last = self.trial_len - 1
        while True:
            k = self.next_k
            if k - self.start > last:
                break
            final = k - self.start == last        # no command follows the trial's last step: nothing to adapt
            if not (k in self.z_ach and k in self.f_int and (final or k + 1 in self.z_cmd)):
                break
            t0 = time.perf_counter_ns()
            self.timing.tick()
            if final:
                self.z_ach.pop(k)
                self.f_int.pop(k)
            else:
                self.aff.adapt_interface(self.z_cmd.pop(k + 1), self.z_ach.pop(k), self.f_int.pop(k),
                                         step=k - self.start)
            self.z_cmd.pop(k, None)
            self._publish(k, t0)
        if self._stop_by is not None and self.next_k > self.stop_step and not self.done:
            super().on_stop()

    def _try_interface_realtime(self) -> None:
        last = self.start + self.trial_len - 1
        for kc in sorted(j for j in self.z_cmd if self.next_k < j <= last):
            k = kc - 1
            t0 = time.perf_counter_ns()
            self.timing.tick()
            if k > self.next_k:
                self.timing.lost_messages += k - self.next_k
            f = self.f_int.pop(k, self._latest[0])
            za = self.z_ach.pop(k, self._latest[2])
            self.aff.adapt_interface(self.z_cmd.pop(kc), za, f, step=k - self.start)
            self._publish(k, t0)
        for d in (self.f_int, self.z_cmd, self.z_ach):      # drop what can no longer be used
            for old in [j for j in d if j < self.next_k]:
                del d[old]

    def _try(self) -> None:
        if self.interface_gap:
            self._try_interface()
            return
        if len(self.b_meas) > 20 and self.next_k not in self.b_meas:   # realtime: a sample was lost
            common = sorted(set(self.b_des) & set(self.b_meas))
            if common:
                self.timing.lost_messages += common[0] - self.next_k
                self.next_k = common[0]
        while self.next_k in self.b_des and self.next_k in self.b_meas and self._interface_ready(self.next_k):
            k = self.next_k
            t0 = time.perf_counter_ns()
            self.timing.tick()
            b_k = self.b_des.pop(k)
            if self.aff.uses_output and k > self.start:
                # u_k = Theta_{k-1} . [b_k, b_{k-1}, ...]: the output the platform added to b_k
                self.aff.feedforward(b_k, step=k - self.start)
            if self.supervised:
                f = float(self.f_int.pop(k, self._latest[0])[0])
                zc = float(self.z_cmd.pop(k, self._latest[1])[0])
                za = float(self.z_ach.pop(k, self._latest[2])[0])
                self.aff.adapt(b_k, self.b_meas.pop(k), step=k - self.start, lam_vir=-f, gap_interface=za - zc)
                if len(self.f_int) + len(self.z_cmd) + len(self.z_ach) > 300:   # realtime: drop skipped steps
                    for d in (self.f_int, self.z_cmd, self.z_ach):
                        for old in [j for j in d if j < k]:
                            del d[old]
            else:
                self.aff.adapt(b_k, self.b_meas.pop(k), step=k - self.start)
            self._publish(k, t0)
        if self._stop_by is not None and self.next_k > self.stop_step and not self.done:
            super().on_stop()     # the last step's coefficients are out: end now (see on_stop)


def main(argv=None) -> int:
    return node_main([AffLearnerNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
