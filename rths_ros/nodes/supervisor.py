"""supervisor: test sequencing of a run.

Waits until every node of the scenario has announced READY (all its topics connected) and sends
START (trial 0 begins).  When the beat-setting node reports DONE for a trial, it either starts the
next trial -- after the pause (loop.pause_s, wall clock in realtime mode) and once every learner
has announced READY for that trial (its feedforward for the trial is published) -- or, after the
last trial, sends STOP.  Any message on /rths/estop (std_msgs/String, the reason) or a call of the
/rths/estop service (std_srvs/Trigger) aborts the run.  A node that does not become ready within
loop.start_timeout_s aborts the run with a reason that names it and its unconnected topics.  After an
abort it stays until the plant reports SAFE (the platform holds its safe pose), so events.json has the
whole sequence.

Each READY's sample names the DDS participant that sent it (its publisher gid; not on a client library that
gives no publisher with a sample, as rclpy of Jazzy).  START tells every node these participants
(:func:`rths_ros.runtime.guard.start_reason`), so its publisher check takes a producer's samples only from the
participant that announced the producer's READY (docs/safety.md).  Two participants announcing READY under one
node's name, or a loop publisher under a producer's name from another participant than its READY's, keep the run
from starting, naming both.
"""
from __future__ import annotations

import time

from rclpy.duration import Duration
from std_msgs.msg import String
from std_srvs.srv import Trigger

from rths_ros.app.run_status import event_status, first_fault_of, write_events
from rths_ros.msg import LoopTiming, TestEvent
from rths_ros.runtime.guard import GUARD_EVENT, start_reason
from rths_ros.runtime.node import RthsNode, event_dict, node_main
from rths_ros.runtime.publisher_check import PARTICIPANT_BYTES
from rths_ros.runtime.qos import diagnostics_qos, events_qos
from rths_ros.runtime.topics import PLANT_PRODUCERS, TOPICS


class Supervisor(RthsNode):
    role = "supervisor"
    observer = True         # off the loop's path: realtime.observer_priority (runtime/rt.py fifo_priority)
    fast_path = False
    LEARNER_TIMEOUT_S = 60.0

    def __init__(self, scenario, out_dir=None, context=None):
        super().__init__(scenario, out_dir, context)
        self.expected = {n for n in scenario.run_nodes if n != self.role}
        self.learners = {n for n in scenario.run_nodes if n in ("ilc_learner",)}
        self.learner_trial: dict[str, int] = {}
        self.pending_trial: int | None = None
        self._pending_since = 0.0
        self.ready: set[str] = set()
        self.start_sent = False
        self._start_emitted = False
        #: READY from nodes the run does not start (a second rig or emulator in the same domain): not counted
        self.foreign_ready: set[str] = set()
        #: node -> the participant (hex GUID prefix) its READY came from, where the client library says it
        self.ready_from: dict[str, str] = {}
        self._rejected_ready: set[tuple[str, str]] = set()
        self._t0 = time.monotonic()
        self._stop_sent_at: float | None = None
        self.events_log: list[dict] = []
        self.progress: dict[str, int] = {}
        self.create_subscription(LoopTiming, "/rths/timing", self._on_timing, diagnostics_qos())
        # emergency stop: any message on /rths/estop aborts the run with its text as the reason
        self.create_subscription(String, "/rths/estop", self._on_estop, events_qos())
        self.create_service(Trigger, "/rths/estop", self._on_estop_service)
        #: after an abort, wait for SAFE from the node that drives the platform (if it runs)
        self.safe_from = set(scenario.run_nodes) & set(PLANT_PRODUCERS)
        self.safe_received = False
        from rths_ros.core.platform.safety import safe_wait_s
        self.safe_timeout_s = safe_wait_s(scenario.safety, scenario.loop.mode)
        self.create_timer(0.1, self._tick)
        self.create_timer(0.5, self._write_progress)

    def _on_estop(self, msg) -> None:
        if self._stop_sent_at is None:
            reason = f"emergency stop: {msg.data or 'no reason given'}"
            self.get_logger().error(reason)
            self.abort_reason = reason
            self.emit(TestEvent.ABORT, reason=reason)

    def _on_estop_service(self, request, response):
        if self._stop_sent_at is None:
            reason = "emergency stop: service call"
            self.get_logger().error(reason)
            self.abort_reason = reason
            self.emit(TestEvent.ABORT, reason=reason)
            response.success, response.message = True, "abort sent"
        else:
            response.success, response.message = False, "the run is already ending"
        return response

    def _on_timing(self, msg) -> None:
        self.progress[msg.node] = int(msg.steps)

    def _write_progress(self) -> None:
        if self.out_dir is None:
            return
        import json
        state = "running" if self.started or self._start_emitted else "starting"
        if self._stop_sent_at is not None:
            state = "stopping"
        data = {"state": state, "total_steps": self.scenario.steps * self.scenario.loop.trials,
                "trial_len": self.trial_len, "nodes": self.progress,
                "ready": sorted(self.ready), "expected": sorted(self.expected)}
        tmp = self.out_dir / ".progress.json.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.out_dir / "progress.json")

    def on_event(self, msg) -> None:
        self.events_log.append(event_dict(msg))
        if msg.type == TestEvent.READY:
            if msg.source not in self.expected and msg.source != self.role:
                if msg.source not in self.foreign_ready:
                    self.foreign_ready.add(msg.source)
                    self.get_logger().warning(f"READY from {msg.source!r}, which this run does not start (another "
                                              "run or rig in the same ROS domain?): not counted")
                return
            if msg.source == self.role:
                return
            if not self._same_participant(msg.source, getattr(self, "event_participant", "")):
                return
            self.ready.add(msg.source)
            if msg.source in self.learners:
                self.learner_trial[msg.source] = max(self.learner_trial.get(msg.source, 0), int(msg.trial))
            if (not self.started and not self.start_sent and not self.abort_reason and self._stop_sent_at is None
                    and self.expected <= self.ready):
                self.start_sent = True      # one START per run, whatever READY arrives before it comes back
                impostor = self._impostor()
                if impostor:
                    self._refuse(impostor)
                    return
                self.get_logger().info(f"all {len(self.expected)} nodes ready: START")
                self.emit(TestEvent.START, reason=start_reason(self.ready_from) if self.ready_from else "")
                # at once, not at the next 0.5-s write: the runner and the launch tell a node's failure before START
                # (the others get the orderly stop at once) from one during the run (the plant's process watch)
                self._start_emitted = True
                self._write_progress()
        elif msg.type == TestEvent.DONE and self._stop_sent_at is None:
            nxt = int(msg.trial) + 1
            self.emit(TestEvent.TRIAL_END, msg.step, trial=int(msg.trial))
            if nxt < self.scenario.loop.trials and not self.abort_reason:
                self.get_logger().info(f"trial {msg.trial} finished at step {msg.step}; next: trial {nxt}")
                self.pending_trial = nxt
                self._pending_since = time.monotonic()
            else:
                self.get_logger().info(f"{msg.source} finished step {msg.step} (trial {msg.trial}): STOP")
                self.emit(TestEvent.STOP, msg.step, trial=int(msg.trial))
                self._stop_sent_at = time.monotonic()
        elif msg.type == TestEvent.ABORT and msg.source != self.role:
            if not self.abort_reason or self.abort_reason == msg.reason:
                self.abort_reason = f"abort by {msg.source}: {msg.reason}"
        elif msg.type == TestEvent.SAFE:
            self.safe_received = True

    def _same_participant(self, node: str, participant: str) -> bool:
        """Record the participant of ``node``'s READY; False (and the run refused) if another one announced it."""
        if not participant:
            return True
        first = self.ready_from.setdefault(node, participant)
        if first == participant:
            return True
        what = f"two participants announced READY as the run's {node} (participant {first}, participant {participant})"
        if not self.start_sent:
            if not self.abort_reason:
                self._refuse(what)
        elif (node, participant) not in self._rejected_ready:      # after START: not counted, said once
            self._rejected_ready.add((node, participant))
            reason = f"supervisor: rejected READY from participant {participant}: {what}; not counted, the run goes on"
            self.get_logger().warning(reason)
            self.emit(GUARD_EVENT, self.progress_step(), reason)
        return False

    def _impostor(self) -> str:
        """A publisher of a loop topic under a producer's name whose participant is not the one that producer
        announced READY from (as the supervisor's view of the ROS graph has it now), said; '' if none."""
        ns = self.get_namespace()
        run = set(self.scenario.run_nodes)
        for topic in TOPICS:
            names = set(topic.producers) & run & set(self.ready_from)
            if not names:
                continue
            claims: dict[str, list[bytes]] = {}
            for info in self.get_publishers_info_by_topic(topic.name):
                if info.node_name in names and info.node_namespace == ns:
                    claims.setdefault(info.node_name, []).append(bytes(info.endpoint_gid)[:16])
            for name, gids in sorted(claims.items()):
                home = self.ready_from[name]
                whose = {True: "the participant of its READY", False: "another participant"}
                said = [f"gid {g.hex()} ({whose[g[:PARTICIPANT_BYTES].hex() == home]})" for g in gids]
                if any(g[:PARTICIPANT_BYTES].hex() != home for g in gids):
                    many = "publishers of {} claim" if len(gids) > 1 else "publisher of {} claims"
                    return (f"{len(gids)} {many.format(topic.name)} to be the run's {name} ({', '.join(said)})")
        return ""

    def _refuse(self, what: str) -> None:
        reason = (f"supervisor: {what}: another node with that name in namespace {self.get_namespace()!r} of this "
                  "ROS domain (an impostor, or a second rig without its own namespace); the run does not start")
        self.get_logger().error(reason)
        self.abort_reason = reason
        self.emit(TestEvent.ABORT, reason=reason)
        self._stop_sent_at = time.monotonic()
        self.exit_code = 3

    def progress_step(self) -> int:
        return max(self.progress.values(), default=0)

    def on_stop(self) -> None:  # our own STOP: stay until the others had time to see it
        pass

    def on_abort(self, msg) -> None:
        self.exit_code = 3
        if self._stop_sent_at is None:
            self._stop_sent_at = time.monotonic()

    def _tick(self) -> None:
        now = time.monotonic()
        if self.pending_trial is not None and self._stop_sent_at is None:
            j = self.pending_trial
            paused = self.mode != "realtime" or now - self._pending_since >= self.scenario.loop.pause_s
            learners_ready = all(self.learner_trial.get(n, 0) >= j for n in self.learners)
            if paused and learners_ready:
                self.pending_trial = None
                self.emit(TestEvent.TRIAL_BEGIN, trial=j)
            elif now - self._pending_since > self.LEARNER_TIMEOUT_S:
                late = sorted(n for n in self.learners if self.learner_trial.get(n, 0) < j)
                reason = (f"{', '.join(late)} did not deliver the feedforward for trial {j} within "
                          f"{self.LEARNER_TIMEOUT_S:g} s")
                self.pending_trial = None
                self.abort_reason = reason
                self.emit(TestEvent.ABORT, reason=reason, trial=j)
        if (not self.started and not self.start_sent and self._stop_sent_at is None
                and now - self._t0 > self.scenario.loop.start_timeout_s):
            missing = sorted(self.expected - self.ready)
            reason = f"nodes not ready after {self.scenario.loop.start_timeout_s:g} s: {', '.join(missing)}"
            seen = {n for n, ns in self.get_node_names_and_namespaces() if ns == self.get_namespace()}
            unseen = [n for n in missing if n not in seen]
            if unseen:      # never started, or the processes do not discover each other (DDS)
                reason += (f" ({', '.join(unseen)} not in the supervisor's view of the ROS graph: not started, or "
                           "DDS discovery between the run's processes failed)")
            reason += "; each node logs what it waits for half-way to the timeout"
            self.emit(TestEvent.ABORT, reason=reason)
            self.abort_reason = reason
            self._stop_sent_at = now
            self.exit_code = 3
        waited = now - self._stop_sent_at if self._stop_sent_at is not None else -1.0
        # after STOP: end once every reader acknowledged the events (STOP included), at the latest after 0.5 s
        heard = self.exit_code != 3 and waited > 0.1 and self._events_pub.wait_for_all_acked(Duration(seconds=0.0))
        if heard or waited > 0.5:
            waiting_safe = (self.exit_code == 3 and self.started and self.safe_from and not self.safe_received
                            and now - self._stop_sent_at < self.safe_timeout_s)
            if not waiting_safe:
                self.finish(self.exit_code)

    def finalize(self) -> None:
        if self.out_dir is not None:   # the runner adds the run's status (and a first fault it saw) at the end
            write_events(self.out_dir, {"status": event_status(self.events_log, self.scenario.loop.trials),
                                        "first_fault": first_fault_of(self.events_log), "events": self.events_log})
        super().finalize()


def main(argv=None) -> int:
    return node_main([Supervisor], argv)


if __name__ == "__main__":
    raise SystemExit(main())
