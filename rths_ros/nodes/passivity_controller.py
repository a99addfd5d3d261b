"""passivity_controller: Normalized Passivity Control (Insam 2022 ch. 5, Insam et al. 2021).

Observes the power flow at the interface and publishes, for every step k, the damping force
F_d(t_k) = alpha(t_k) zdot(t_k) that the numerical part adds to the measured interface force
(impedance causality).  It is not an extra hop on the fast path: F_d(t_k) only needs the data of
step k-1 and the commanded velocity zdot(t_k), which exist as soon as the numerical part finished
step k-1, so it is computed while the plant, the sensor and the platform work on step k.

In:  /rths/interface_force (F'_m, k), /rths/interface_state (zdot', k), /rths/interface_command (zdot, k)
Out: /rths/passivity (PassivityState, k): alpha, F_d, P_error, P_tot (filtered and raw), E_error, E_diss
"""
from __future__ import annotations

import time

from rths_ros.app import factory
from rths_ros.msg import InterfaceCommand, InterfaceForce, InterfaceState, PassivityState
from rths_ros.runtime.node import RthsNode, node_main, set_stamp


class PassivityControllerNode(RthsNode):
    role = "passivity_controller"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.ctrl = factory.build_passivity(scenario)
        self.pub = self.control_publisher(PassivityState, "/rths/passivity")
        self.control_subscription(InterfaceForce, "/rths/interface_force", self.on_force)
        self.control_subscription(InterfaceState, "/rths/interface_state", self.on_state)
        self.control_subscription(InterfaceCommand, "/rths/interface_command", self.on_command)
        self.f: dict[int, float] = {}
        self.zda: dict[int, float] = {}
        self.zd: dict[int, float] = {}
        self.next_k = 1          # the next step whose F_d is due
        self.f_d_prev = 0.0
        self.msg = PassivityState()

    def apply_tuning(self, key: str, value: float) -> None:
        self.ctrl.set_gains(**{{"passivity.g_p_kg_per_s": "g_p_kg_per_s",
                                "passivity.alpha_max_kg_per_s": "alpha_max_kg_per_s"}[key]: value})

    def reset_for_trial(self, trial: int) -> None:
        self.ctrl.reset()
        start = trial * self.trial_len
        self.next_k = start + 1
        self.f_d_prev = 0.0
        for d in (self.f, self.zda, self.zd):
            for k in [k for k in d if k < start]:
                del d[k]

    def on_force(self, msg: InterfaceForce) -> None:
        if self.enter_trial(msg.step):
            self.f[int(msg.step)] = float(msg.force[0])
            self._try()

    def on_state(self, msg: InterfaceState) -> None:
        if self.enter_trial(msg.step):
            self.zda[int(msg.step)] = float(msg.velocity[0])
            self._try()

    def on_command(self, msg: InterfaceCommand) -> None:
        if self.enter_trial(msg.step):
            self.zd[int(msg.step)] = float(msg.velocity[0])
            self._try()

    def _try(self) -> None:
        while True:
            k = self.next_k
            p = k - 1
            if self.local_step(k) == 0 or not (p in self.f and p in self.zda and p in self.zd and k in self.zd):
                return
            t0 = time.perf_counter_ns()
            self.timing.tick()
            if self.tuning.pending:         # a live-tuned gain: from this step on (rths_ros.runtime.tuning)
                self.tuning.tick(k, self.current_trial)
            f_prev = self.f.pop(p)
            f_d = self.ctrl.update(f_prev, self.zd.pop(p), self.zda.pop(p), f_prev + self.f_d_prev, self.zd[k])
            self.f_d_prev = f_d
            self.next_k = k + 1
            c, m = self.ctrl, self.msg
            set_stamp(m.header.stamp, time.time_ns())     # (the wall clock, as every loop stamp)
            m.step = k
            m.p_error, m.p_tot = c.p_error, c.p_tot
            m.p_error_filtered, m.p_tot_filtered = c.p_error_filtered, c.p_tot_filtered
            m.alpha, m.damping_force = c.alpha, f_d
            m.e_error, m.e_diss = c.e_error_j, c.e_diss_j
            self.pub.publish(m)
            self.timing.compute(time.perf_counter_ns() - t0)


def main(argv=None) -> int:
    return node_main([PassivityControllerNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
