"""hardware_plant: the rig (platform controller + ATI Net F/T) behind the fast path; the beat of the run.

Started instead of ``sim_plant`` when ``plant = hardware``.  The same managed (lifecycle) node and the same
topics as the simulated plant: publishes /rths/leg_state (LegState) and /rths/raw_wrench (RawWrench) for step
k, takes /rths/leg_command (LegCommand, step k+1).

* ``configure``: create the platform-link client and the Net F/T client (scenario section ``hardware``;
  with ``hardware.emulate`` first start the emulators, :class:`~rths_ros.app.emulated_rig.EmulatedRig`),
  start the RDT stream, RESET the controller (and ramp to the start pose, below).
* ``activate`` / ``deactivate``: serve / stop serving; ``deactivate`` also stops the RDT stream.
* Every trial starts with a RESET of the controller (legs at the initial state, controller step 0).
* Start pose: a trial starts from the scenario's start pose -- home, or for the gait test the inverse kinematics
  of the model's initial command (:func:`rths_ros.app.factory.start_lengths`), the pose the simulated plant
  starts in.  After a RESET that leaves the legs elsewhere (a rig's controller holds its home pose) the node
  ramps them there over the link with the cosine profile of the safe-pose ramp (fastest leg at most
  ``safety.ramp_speed_m_per_s``, then ``safety.hold_s`` of holding so the legs settle): in ``configure``, so
  the rig stands at the start pose before the node announces READY, and at the begin of every later trial.
  The first trial then starts without another RESET (the controller has held the start pose since).  With the
  emulators the emulated controller's RESET also leaves the legs at home, like a rig's, so the ramp runs there
  too.
* Lockstep: ``link.step(j, length, feedforward_velocity)`` applies the command of controller step ``j``
  and returns the STATE of ``j + 1`` (retransmitted after ``reply_timeout_s``, ``retries`` times); the wrench
  is the first sensor record sampled after that state (see docs/hardware.md).  Realtime: the controller
  steps on its own clock; every beat sends the newest command (``send_command``) and takes the newest STATE
  (``read_state``) and the newest sensor record.
* LegState: length, velocity, current (the controller's step mean), status = the controller's bits 0-2.
  RawWrench: the record in N / N m (calibration counts of ``hardware.netft``), ``sequence`` = the RDT sequence
  number; ``status`` bit 0 = the sensor's status word is not 0, bit 1 = stale (no new record since the previous
  step, the previous one is repeated: realtime mode, or a sensor error during the ramp to the safe pose).
* Idle link (start-up, pauses between trials, a stalled lockstep loop): a HEARTBEAT every
  ``hardware.heartbeat_period_s``; a controller that stays silent longer than
  ``platform_link.heartbeat_timeout_s`` is a link fault.
* Any ``PlatformLinkTimeout`` / ``PlatformLinkError`` / ``SensorError`` aborts the run (TestEvent ABORT, the
  reason is the driver's message, which names the device and its address).  After an abort for another reason
  the node ramps the platform to its safe pose over the link; after a link fault it cannot (the controller's
  own watchdog holds the legs) and ends at once.
"""
from __future__ import annotations

import time

import numpy as np
from rclpy.lifecycle import LifecycleNodeMixin, TransitionCallbackReturn

from rths_ros.core.platform.safety import SafePoseRamp, commands_outside_stroke, safe_pose_lengths, start_pose_ramp
from rths_ros.drivers.ati_netft import NetFtClient
from rths_ros.drivers.ft_sensor_base import SensorError, SensorTimeout
from rths_ros.drivers.platform_link import PlatformLinkClient, PlatformLinkError, PlatformLinkTimeout
from rths_ros.msg import LegCommand, LegState, RawWrench, TestEvent
from rths_ros.runtime.beat import BeatNode
from rths_ros.runtime.node import node_main, set_stamp, stamp_ns
from rths_ros.runtime.standard_interfaces import joint_state_out

LINK_FAULTS = (PlatformLinkError, SensorError, OSError)

def trial_start_lengths(scenario) -> np.ndarray:
    """Leg lengths a trial starts from: the start pose of the model family's platform path (the gait test's start
    pose, otherwise home)."""
    from rths_ros.app import factory
    return factory.start_lengths(scenario)


class HardwarePlantNode(LifecycleNodeMixin, BeatNode):
    role = "hardware_plant"
    beat_inputs = ("/rths/leg_command",)
    watch_processes = True

    def __init__(self, scenario, out_dir=None, context=None):
        BeatNode.__init__(self, scenario, out_dir, context)
        LifecycleNodeMixin.__init__(self, enable_communication_interface=True)
        self.hw = scenario.hardware
        self.active = False
        self.rig = None                 # EmulatedRig when hardware.emulate
        self.link: PlatformLinkClient | None = None
        self.netft: NetFtClient | None = None
        self.fault = ""                 # first driver error: the link / sensor is not usable any more
        self.link_k = 0                 # controller step index (restarts at 0 with every RESET)
        self.state = None               # PlatformState of the present step
        self.wrench = np.zeros(6)
        self.wrench_seq = 0
        self.wrench_stamp = 0.0
        self.wrench_status = 0
        self.stale_wrench = 0           # steps published with a repeated record (ramp only)
        self._last_tx = time.monotonic()
        self._hb_outstanding = False
        from rths_ros.core.platform.stewart import StewartKinematics
        self.kin = StewartKinematics(scenario.platform.geometry)
        self.home = np.array(self.kin.home_lengths, dtype=float)
        g = scenario.platform.geometry
        self.leg_limits = (g.leg_length_min_m, g.leg_length_max_m, g.leg_velocity_max_m_per_s)
        self.refused = False
        self.sent_outside = 0           # commands outside the stroke that _apply held back (never sent)
        self.start = trial_start_lengths(scenario)
        self.hold_length = self.start.copy()
        self.hold_ff = np.zeros(6)
        self.start_ramps: list[dict] = []   # the ramps to the start pose (configure, trial begins)
        self._at_start_pose = False         # configure ramped to the start pose; the controller holds it since
        self.state_pub = self.control_publisher(LegState, "/rths/leg_state")
        self.wrench_pub = self.control_publisher(RawWrench, "/rths/raw_wrench")
        self.control_subscription(LegCommand, "/rths/leg_command", self.on_input)
        self.state_msg = LegState()
        self.wrench_msg = RawWrench()
        self.joint_out = joint_state_out(self, scenario)     # sensor_msgs/JointState, after the loop messages
        self.create_timer(self.hw.heartbeat_period_s, self._keepalive)
        if scenario.realtime.lifecycle_autostart:
            if self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
                self.trigger_activate()

    # lifecycle -------------------------------------------------------------------------------
    def on_configure(self, state) -> TransitionCallbackReturn:
        try:
            if self.hw.emulate:
                from rths_ros.app.emulated_rig import EmulatedRig
                self.rig = EmulatedRig(self.scenario)
                self._emulated_reset_at_home()
                link_p, netft_p = self.rig.link_params, self.rig.netft_params
            else:
                link_p, netft_p = self.hw.platform_link, self.hw.netft
            self.link = PlatformLinkClient(link_p)
            self.netft = NetFtClient(netft_p)
            self.netft.start()
            self._at_start_pose = self._prepare_trial(0)
            self._read_wrench(sync=self.mode == "lockstep", first=True)
        except LINK_FAULTS as exc:
            self._fault(exc, 0)
            return TransitionCallbackReturn.FAILURE
        where = "emulated rig on 127.0.0.1" if self.rig is not None else "rig"
        self.get_logger().info(f"{where}: platform controller {link_p.host}:{link_p.port}, "
                               f"Net F/T {netft_p.host}:{netft_p.port}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self.active = True
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self.active = False
        with self._step_lock:
            if self.netft is not None:
                try:
                    self.netft.stop()
                except SensorError as exc:
                    self.get_logger().warning(f"hardware_plant: {exc}")
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self._close()
        return TransitionCallbackReturn.SUCCESS

    def serving(self) -> bool:
        return self.active and not self.fault and not self._preflight_failed

    def on_start(self) -> None:
        if self.active and not self.fault:
            super().on_start()

    # faults ----------------------------------------------------------------------------------
    def _fault(self, exc: Exception, step: int) -> None:
        """A driver error: stop stepping and abort the run with the driver's message."""
        if self.fault:
            return
        self.fault = f"hardware_plant: {exc}"
        self._aborting = True
        self._running_trial = False
        self.abort_reason = self.fault
        self.get_logger().error(self.fault)
        self.emit(TestEvent.ABORT, step, self.fault)

    # link and sensor -------------------------------------------------------------------------
    def _reset_link(self, trial: int) -> None:
        if self.rig is not None:
            self.rig.prepare_trial(trial)
        timeout = max(0.2, 10 * self.link.params.reply_timeout_s)
        if self.mode == "lockstep":
            self.state = self.link.reset(timeout_s=timeout)
        else:
            # a realtime controller streams STATEs: one of the old stream that arrives after the RESET went out
            # outranks the STATE of step 0, and the reset times out; drain first, and try again in that case
            for attempt in range(3):
                self.link.poll()
                try:
                    self.state = self.link.reset(timeout_s=timeout)
                    break
                except PlatformLinkTimeout:
                    if attempt == 2:
                        raise
        self.link_k = 0
        self._last_tx = time.monotonic()
        self._hb_outstanding = False

    def _emulated_reset_at_home(self) -> None:
        """With the emulators: the emulated controller's RESET leaves the legs at home, like a rig's controller
        (the scenario's twin would start a gait trial at the start pose already)."""
        em = self.rig.platform
        if np.array_equal(em.plant.start_lengths, self.home):
            return
        from rths_ros.app import factory
        em.replace_plant(factory.build_home_twin(self.scenario))

    def _prepare_trial(self, trial: int) -> bool:
        """RESET the controller and ramp the legs to the start pose if they are not there (module doc).  Returns
        True if a ramp ran.  Holds the step lock: the heartbeat timer stays off the link meanwhile."""
        with self._step_lock:
            self._reset_link(trial)
            first = trial == 0 and not self.started
            before = np.array(self.state.length, dtype=float)
            if first and not self.preflight("before the ramp to the start pose", before, self.start, self.kin):
                return False        # nothing commanded: the run aborts before START
            ramp = start_pose_ramp(self.state.length, self.start, self.scenario.safety, self.dt)
            if ramp is None:
                if first:
                    self.preflight("at the start pose", before, self.start, self.kin, confirm=True)
                return False
            t0 = time.monotonic()
            next_t = t0
            b0 = np.array(self.state.length, dtype=float)
            v_peak = 0.0
            f_peak = 0.0
            # The peak sensor force counts the ramp's records only.  On the rig every record is a sample of the
            # real state, so whatever is queued before the ramp is dropped.  The emulators' RESET puts the legs
            # at home at once while the twin's last output (the previous trial's end, foot possibly loaded) is
            # what the sensor emulator samples until the first ramp step: there a record counts only if it
            # carries an output the twin produced during the ramp.
            if self.netft.poll():
                self.netft.read_latest(0.0)
            ramp_outputs: list = []           # keeps the outputs alive, so their ids stay unique
            ramp_output_ids: set[int] = set()
            for j in range(1, ramp.total_steps + 1):
                if self.mode == "realtime":      # the controller steps on its own clock: one command per step
                    next_t += self.dt
                    delay = next_t - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                length, velocity = ramp.command(j)
                v_peak = max(v_peak, float(np.max(np.abs(velocity))))
                self._apply(length, velocity)
                if self.rig is not None:
                    ramp_outputs.append(self.rig.current_output())
                    ramp_output_ids.add(id(ramp_outputs[-1]))
                try:                              # the newest record, never wait: for the record only
                    self._read_wrench(sync=False)
                    if self.rig is None or id(self.rig.tagged_output(self.netft.ft_sequence)) in ramp_output_ids:
                        f_peak = max(f_peak, float(np.linalg.norm(self.wrench[:3])))
                except SensorError:
                    pass
            b1 = np.array(self.state.length, dtype=float)
            info = {"trial": int(trial), "ramp_steps": ramp.ramp_steps, "hold_steps": ramp.hold_steps,
                    "ramp_s": ramp.duration_s, "wall_s": time.monotonic() - t0,
                    "max_leg_travel_m": float(np.max(np.abs(ramp.delta))),
                    "peak_command_speed_m_per_s": v_peak, "max_sensor_force_n": f_peak,
                    "start_error_before_m": float(np.max(np.abs(b0 - self.start))),
                    "start_error_after_m": float(np.max(np.abs(b1 - self.start))),
                    "controller_step": int(self.link_k)}
            self.start_ramps.append(info)
            if first:       # the ramp is confirmed by the measured legs, not by the commands sent
                self.preflight("after the ramp to the start pose", b1, self.start, self.kin, confirm=True,
                               before=b0)
            self.get_logger().info(f"hardware_plant: legs ramped to the start pose in {ramp.ramp_steps} steps "
                                   f"(travel {1e3 * info['max_leg_travel_m']:.1f} mm), held {ramp.hold_steps} "
                                   f"steps; off by {1e6 * info['start_error_after_m']:.1f} um")
            return True

    def _read_wrench(self, sync: bool, first: bool = False) -> None:
        """The newest sensor record; lockstep (``sync``): one sampled after the present leg state."""
        nf = self.netft
        timeout = nf.params.timeout_s
        if first:      # the stream has just been started: allow for its start-up
            timeout = max(timeout, 1.0)
        if sync and self.rig is not None:
            want = self.rig.current_output()
            deadline = time.monotonic() + timeout
            while True:
                sample = nf.read_latest(max(deadline - time.monotonic(), 1e-4))
                if self.rig.sampled_after(nf.ft_sequence, want):
                    break
        elif sync:      # a real sensor in lockstep: drop what was queued before the state, wait for the next
            if nf.poll():
                nf.read_latest(0.0)
            sample = nf.read_latest(timeout)
        else:           # realtime: the newest record, never wait; none for timeout_s is a sensor fault
            if nf.poll() or first:
                sample = nf.read_latest(timeout)
            else:
                silent = time.monotonic() - self.wrench_stamp
                if silent > timeout:
                    raise SensorTimeout(f"Net F/T at {nf.address[0]}:{nf.address[1]}: no RDT record for "
                                        f"{silent * 1e3:.1f} ms (timeout {timeout * 1e3:.1f} ms)")
                self.wrench_status |= 0x2        # no new record since the previous step: repeated
                return
        self.wrench = sample.wrench
        self.wrench_stamp = sample.timestamp
        self.wrench_seq = sample.sequence
        self.wrench_status = 1 if sample.status else 0

    def _apply(self, length, ff) -> None:
        """One step of the controller with this command (both modes), then the matching sensor record.  A length
        outside the stroke never goes out (the last check before the link, ramps included): the present command
        is held instead and the run aborts."""
        lo, hi, _ = self.leg_limits
        bad = commands_outside_stroke(length, lo, hi)
        if bad:
            self.sent_outside += 1
            if self.sent_outside == 1 and not self.abort_reason:
                self.abort_reason = f"hardware_plant: {bad}"
                self.get_logger().error(self.abort_reason)
                self.emit(TestEvent.ABORT, int(self.k), self.abort_reason)
            length, ff = self.state.length, np.zeros(6)
        if self.mode == "lockstep":
            self.state = self.link.step(self.link_k, length, ff)
            self.link_k = self.state.step
        else:   # the controller steps on its own clock: never wait here, take its newest STATE
            self.link.send_command(self.link_k, length, ff)
            if not self.link.poll():
                self.link.check_alive()      # raises when it has been silent for heartbeat_timeout_s
            self.state = self.link.latest
            self.link_k = self.state.step
        self._last_tx = time.monotonic()
        self._hb_outstanding = False

    def _keepalive(self) -> None:
        """Timer: HEARTBEAT while the link is idle; a controller silent for too long is a fault."""
        if self.link is None or self.fault or self.done:
            return
        if not self._step_lock.acquire(blocking=False):
            return
        try:
            if time.monotonic() - self._last_tx < self.hw.heartbeat_period_s:
                return
            if self._hb_outstanding:
                self.link.check_alive()
            self.link.heartbeat()
            self._last_tx = time.monotonic()
            self._hb_outstanding = True
        except LINK_FAULTS as exc:
            self._fault(exc, self.k)
        finally:
            self._step_lock.release()

    # beat node -------------------------------------------------------------------------------
    def on_input(self, inp) -> None:
        if not self.active or self.done or self.fault or self.refused:
            return
        if not self.leg_command_ok(inp):
            self.refused = True      # nothing more is sent to the rig; the ABORT ramps it to the safe pose
            return
        super().on_input(inp)

    def reset_trial(self, trial: int) -> None:
        self.hold_length[:] = self.start       # held until the first command arrives (realtime)
        self.hold_ff[:] = 0.0
        if self.fault:
            return
        try:
            if not (trial == 0 and self._at_start_pose):
                self._prepare_trial(trial)
            self._at_start_pose = False
            self._read_wrench(sync=self.mode == "lockstep")
        except LINK_FAULTS as exc:
            self._fault(exc, self.trial_start)

    def advance(self, k_next: int, inp) -> None:
        if self.fault:
            return
        if inp is not None:
            self.hold_length[:] = inp.length
            self.hold_ff[:] = inp.feedforward_velocity
        try:
            self._apply(self.hold_length, self.hold_ff)
            self._read_wrench(sync=self.mode == "lockstep")
        except LINK_FAULTS as exc:
            self._fault(exc, k_next)

    def emit_output(self, k: int, origin_ns: int) -> None:
        if self.fault or self.state is None:
            return
        st = self.state
        s = self.state_msg
        set_stamp(s.header.stamp, origin_ns)
        s.step = k
        s.length = st.length
        s.velocity = st.velocity
        s.current = st.current
        s.status = int(st.status) & 0x7
        w = self.wrench_msg
        set_stamp(w.header.stamp, origin_ns)
        w.step = k
        f, t = w.wrench.force, w.wrench.torque
        ww = self.wrench
        f.x, f.y, f.z = float(ww[0]), float(ww[1]), float(ww[2])
        t.x, t.y, t.z = float(ww[3]), float(ww[4]), float(ww[5])
        w.sequence = int(self.wrench_seq) & 0xFFFFFFFF
        w.status = self.wrench_status
        self.publish_legs_and_wrench(s, w)
        if self.joint_out is not None:
            self.joint_out.publish(k, s.header.stamp, st.length, st.velocity, st.current)

    def on_arrival(self, inp) -> None:
        """End-to-end step latency: from the measurement this command answers to its arrival."""
        self.timing.latency((time.time_ns() - stamp_ns(inp.origin_stamp)) * 1e-9)

    # abort: ramp to the safe pose over the link ------------------------------------------------
    def make_safe_ramp(self):
        if self.link is None or self.state is None or self.fault:
            return None
        sp = self.scenario.safety
        b_safe = safe_pose_lengths(self.kin, sp.safe_retract_m)
        return SafePoseRamp(self.state.length, b_safe, sp.ramp_speed_m_per_s, self.dt, sp.hold_s)

    def safe_step(self, length, velocity) -> None:
        self._apply(length, velocity)          # a link error ends the ramp (see _run_ramp)
        try:
            self._read_wrench(sync=False)
        except SensorError:
            self.stale_wrench += 1
            self.wrench_status |= 0x2           # the wrench is not needed to reach the safe pose

    def _run_ramp(self, ramp) -> None:
        try:
            super()._run_ramp(ramp)
        except LINK_FAULTS as exc:
            self.fault = f"hardware_plant: ramp to the safe pose interrupted at step {self.k}: {exc}"
            self.get_logger().error(self.fault)
            self.publish_timing(final=True)
            self.finish(3)

    # end -------------------------------------------------------------------------------------
    def timing_summary(self) -> dict:
        s = super().timing_summary()
        hw = {"emulated": self.rig is not None, "fault": self.fault, "stale_wrench_steps": self.stale_wrench,
              "start_ramps": list(self.start_ramps), "commands_not_sent": self.sent_outside}
        if self.link is not None:
            ls = self.link.statistics()
            hw["link"] = {"received": ls.packets.received, "lost": ls.packets.lost,
                          "out_of_order": ls.packets.out_of_order, "stale_states": ls.stale_states,
                          "retransmissions": ls.retransmissions, "foreign": ls.foreign}
        if self.netft is not None:
            ns = self.netft.statistics()
            hw["sensor"] = {"received": ns.received, "lost": ns.lost, "out_of_order": ns.out_of_order,
                            "duplicates": ns.duplicates, "timeouts": ns.timeouts, "malformed": ns.malformed}
        s["hardware"] = hw
        return s

    def _close(self) -> None:
        for obj in (self.netft, self.link, self.rig):
            if obj is not None:
                try:
                    obj.close()
                except Exception as exc:
                    self.get_logger().warning(f"hardware_plant: closing {type(obj).__name__}: {exc}")
        self.netft = self.link = self.rig = None

    def finalize(self) -> None:
        super().finalize()
        with self._step_lock:
            self._close()


def main(argv=None) -> int:
    return node_main([HardwarePlantNode], argv)


if __name__ == "__main__":
    raise SystemExit(main())
