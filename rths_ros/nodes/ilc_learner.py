"""ilc_learner: PD-type Iterative Learning Control between trials (Insam 2022 ch. 6).

During a trial it only listens: desired and measured leg lengths (LegCommand, LegState) and the
interface motion (InterfaceCommand, InterfaceState).  When it has every sample of the trial it
updates the feedforward (f_{j+1} = Q(beta e_j + gamma de_j/dt + f_j), zero-phase Q), applies the
divergence rule, publishes the feedforward for the next trial on /rths/ilc_feedforward (reliable,
transient local) and announces READY for that trial; the supervisor starts the next trial only
then.  A diverging series is stopped with ABORT and the reason.  The stewart_platform adds the
feedforward on the fast path, so the learner is never a hop of it.  At the end the last
feedforward is stored in OUT/ilc_feedforward.npz for reuse.
"""
from __future__ import annotations

import json

import numpy as np

from rths_ros.app.ilc_series import IlcSeries
from rths_ros.app.vrths import hold_last_index
from rths_ros.msg import IlcFeedforward, InterfaceCommand, InterfaceState, LegCommand, LegState, TestEvent
from rths_ros.runtime.node import RthsNode, node_main
from rths_ros.runtime.qos import events_qos


class IlcLearnerNode(RthsNode):
    role = "ilc_learner"

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.series = IlcSeries(scenario)
        self.pub = self.create_publisher(IlcFeedforward, "/rths/ilc_feedforward", events_qos())
        self.control_subscription(LegCommand, "/rths/leg_command", self.on_leg_command)
        self.control_subscription(LegState, "/rths/leg_state", self.on_leg_state)
        self.control_subscription(InterfaceCommand, "/rths/interface_command", self.on_command)
        self.control_subscription(InterfaceState, "/rths/interface_state", self.on_state)
        n = scenario.steps
        self.b_des = np.zeros((n + 1, 6))
        self.b_meas = np.zeros((n + 1, 6))
        self.seen = np.zeros((4, n + 1), dtype=bool)   # leg command, leg state, command, state
        self.learning_trial = 0
        self.finished = False

    def apply_tuning(self, key: str, value: float) -> None:
        self.series.ilc.set_gains(**{{"ilc.beta_per_s": "beta_per_s", "ilc.gamma": "gamma"}[key]: value})

    def reset_for_trial(self, trial: int) -> None:
        if trial != self.learning_trial:  # data of a trial the learner has not closed: keep the order
            self.get_logger().warning(f"trial {trial} began before trial {self.learning_trial} was learned")
            self.learning_trial = trial
        self.seen[:] = False

    def _accept(self, step: int, row: int) -> int | None:
        if self.finished or not self.enter_trial(step):
            return None
        local = self.local_step(step)
        self.seen[row, local] = True
        return local

    def on_leg_command(self, msg: LegCommand) -> None:
        local = self._accept(msg.step, 0)
        if local is not None:
            self.b_des[local] = np.asarray(msg.length) - np.asarray(msg.feedforward_position)
            self._maybe_learn()

    def on_leg_state(self, msg: LegState) -> None:
        local = self._accept(msg.step, 1)
        if local is not None:
            self.b_meas[local] = msg.length
            self._maybe_learn()

    def on_command(self, msg: InterfaceCommand) -> None:
        local = self._accept(msg.step, 2)
        if local is not None:
            self.series.z[local] = msg.position[0]
            self._maybe_learn()

    def on_state(self, msg: InterfaceState) -> None:
        local = self._accept(msg.step, 3)
        if local is not None:
            self.series.z_ach[local] = msg.position[0]
            self._maybe_learn()

    def on_event(self, msg) -> None:
        """Realtime mode: best-effort QoS may lose samples; at the end of the trial learn from what
        arrived, each missing sample holding the previous one (as the receiving node did)."""
        if (msg.type == TestEvent.TRIAL_END and self.mode == "realtime" and not self.finished
                and int(msg.trial) == self.learning_trial and self.seen.any()):
            self._fill_missing()
            self._maybe_learn()

    def _fill_missing(self) -> None:
        for row, arr in ((0, self.b_des), (1, self.b_meas), (2, self.series.z), (3, self.series.z_ach)):
            mask = self.seen[row]
            if mask.all() or not mask.any():
                continue
            arr[:] = arr[hold_last_index(mask)]
            self.timing.lost_messages += int((~mask).sum())
            mask[:] = True

    def _maybe_learn(self) -> None:
        s = self.seen
        if not (s[0, 1:].all() and s[1, 1:].all() and s[2].all() and s[3].all()):
            return
        s[:] = False
        for local in range(1, self.series.n + 1):
            self.series.record_legs(local, self.b_des[local], self.b_meas[local])
        if self.tuning.pending:     # live-tuned gains: this update is the first to use them (runtime.tuning)
            self.tuning.tick((self.learning_trial + 1) * self.trial_len - 1, self.learning_trial)
        f_next, stop, reason = self.series.end_trial()
        j = self.learning_trial
        self.get_logger().info(f"trial {j}: e_track_rel = {self.series.history[-1]['e_track_rel']:.4g}; {reason}")
        if stop:
            self.finished = True
            self.abort_reason = self.series.stop_reason
            self.emit(TestEvent.ABORT, reason=self.series.stop_reason, trial=j)
            return
        self.learning_trial = j + 1
        if j + 1 < self.scenario.loop.trials:
            m = IlcFeedforward()
            m.header.stamp = self.get_clock().now().to_msg()
            m.trial = j + 1
            m.dt = self.dt
            m.n_legs, m.n_samples = f_next.shape
            m.injection = self.scenario.ilc.injection
            m.data = np.ascontiguousarray(f_next, dtype=float).ravel()
            self.pub.publish(m)
            self.emit(TestEvent.READY, trial=j + 1)

    def finalize(self) -> None:
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.series.save(self.out_dir)
            (self.out_dir / "ilc_history.json").write_text(json.dumps(self.series.history, indent=2))
        super().finalize()


def main(argv=None) -> int:
    return node_main([IlcLearnerNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
