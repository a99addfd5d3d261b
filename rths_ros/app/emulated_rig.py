"""The emulated rig: a UDP server that plays the Stewart platform's controller with the digital twin behind it,
and (:class:`EmulatedRig`) that server plus a Net F/T emulator serving a scenario's twin on 127.0.0.1.

:class:`PlatformEmulator` serves the protocol of :mod:`rths_ros.drivers.platform_link` from a background
thread.  Behind it is a :class:`~rths_ros.core.plant.sim_plant.SimPlant` (the digital twin: Table 4.1 legs under the
Table A.1 cascade, resolver quantisation, specimen, sensor).  Its legs are replaced by
:class:`~rths_ros.core.sysid.legs.InjectableLegCascade` (:func:`make_injectable`), which gives bit-identical results
with zero injection and accepts the command's current injection; so a client stepping the emulator gets the
same leg lengths and rates as calling ``SimPlant.step`` in-process with the same commands.

STATE fields from the twin: ``length`` = measured (quantised) lengths, ``velocity`` = measured rates,
``current`` = motor current averaged over the step (``InjectableLegCascade.current_mean``; the averaged value
is what moves the leg, so identification over the link is not biased by where in the step the current is
sampled).  The twin models no limits, so the stroke / velocity / fault bits are never set here.

Modes: ``lockstep`` (step on each COMMAND, answer with the STATE of the next step; a repeated COMMAND of the
step just applied is answered from the stored STATE) and ``realtime`` (step every ``dt_s`` of wall-clock time
with the newest COMMAND, hold the last one if none came, send a STATE to the client every step).

Watchdog: once a client has been heard, the controller expects a datagram (COMMAND, HEARTBEAT or RESET) at
least every ``watchdog_timeout_s``; otherwise it sets STATUS_WATCHDOG, holds the legs (realtime: commands
replaced by the current lengths, no feedforward, no injection) and refuses COMMANDs until a RESET.

The wrench of the twin is available as ``emulator.latest.wrench`` (e.g. as the source of a
:class:`~rths_ros.drivers.ati_netft_emulator.NetFtEmulator`).  For tests: ``drop_replies`` (number of next
replies to swallow) and ``silent`` (answer nothing at all).
"""
from __future__ import annotations

import select
import time

import numpy as np

from rths_ros.app import factory
from rths_ros.core.plant.legs import N_LEGS
from rths_ros.core.plant.sim_plant import PlantOutput, SimPlant
from rths_ros.core.sysid.legs import InjectableLegCascade
from rths_ros.drivers.ati_netft_emulator import NetFtEmulator
from rths_ros.drivers.hardware import HardwareParams, emulated_link_params
from rths_ros.drivers.platform_link import (
    ERR_MALFORMED,
    ERR_TYPE,
    ERR_VERSION,
    MSG_COMMAND,
    MSG_ERROR,
    MSG_HEARTBEAT,
    MSG_RESET,
    MSG_STATE,
    NO_ACK,
    PROTOCOL_VERSION,
    STATUS_REJECTED,
    STATUS_WATCHDOG,
    PlatformLinkError,
    pack,
    unpack,
)
from rths_ros.drivers.udp_server import UdpServer

__all__ = ["make_injectable", "PlatformEmulator", "EmulatedRig"]


def make_injectable(plant: SimPlant, seed: int | None = None) -> SimPlant:
    """Give ``plant`` legs that accept a current injection (same numbers otherwise) and reset it."""
    p = plant.params
    plant.legs = InjectableLegCascade(p.legs, p.cascade, plant.dt_s, p.substeps)
    plant.reset(seed)
    return plant


class PlatformEmulator(UdpServer):
    """Platform controller emulator (see the module doc); a context manager."""

    def __init__(self, plant: SimPlant, mode: str = "lockstep", watchdog_timeout_s: float = 0.25,
                 host: str = "127.0.0.1", port: int = 0, seed: int | None = None):
        if mode not in ("lockstep", "realtime"):
            raise ValueError(f"mode: {mode!r} is not allowed; expected 'lockstep' or 'realtime'")
        self.plant = plant if isinstance(plant.legs, InjectableLegCascade) else make_injectable(plant, seed)
        self.mode = mode
        self.seed = seed
        self.watchdog_timeout_s = float(watchdog_timeout_s)
        self._bind(host, port)
        self._seq = 0
        self._client = None
        self._last_rx = 0.0
        self.watchdog = False
        self.silent = False
        self.drop_replies = 0
        self.steps_taken = 0
        self.commands = 0
        self.repeats = 0
        self.rejected = 0
        self.errors = 0
        self._home = np.array(self.plant.kinematics.home_lengths, dtype=float)
        self._cmd = self._home.copy()
        self._ff = np.zeros(N_LEGS)
        self._inj = np.zeros(N_LEGS)
        self._ack = NO_ACK
        self._last_state: bytes | None = None
        self.latest: PlantOutput = self.plant.measure()
        self._serve("platform-emulator")

    @property
    def step_index(self) -> int:
        return self.plant.step_index

    # ------------------------------------------------------------------------------------------- helpers
    def replace_plant(self, plant: SimPlant) -> None:
        """Emulate another twin from now on (e.g. one whose RESET leaves the legs at home, like a rig's
        controller, where the scenario's twin starts at a gait's start pose)."""
        with self._lock:
            self.plant = make_injectable(plant, self.seed)
            self.latest = self.plant.measure()

    def _status(self) -> int:
        return STATUS_WATCHDOG if self.watchdog else 0

    def _send(self, data: bytes, addr) -> None:
        if self.silent:
            return
        if self.drop_replies > 0:
            self.drop_replies -= 1
            return
        self._sock.sendto(data, addr)

    def _state(self, status: int, ack: int) -> bytes:
        o = self.latest
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return pack(MSG_STATE, self._seq, o.step, *o.lengths, *o.velocities, *self.plant.legs.current_mean,
                    status & 0xFFFFFFFF, ack)

    def _error(self, code: int, text: str) -> bytes:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return pack(MSG_ERROR, self._seq, self.plant.step_index, code, text.encode("utf-8")[:64])

    def _advance(self) -> None:
        legs = self.plant.legs
        if self.watchdog:          # hold position
            legs.injection[:] = 0.0
            self.latest = self.plant.step(self.latest.true_lengths, None)
        else:
            legs.injection[:] = self._inj
            self.latest = self.plant.step(self._cmd, self._ff)
        legs.injection[:] = 0.0
        self.steps_taken += 1

    # ------------------------------------------------------------------------------------------- server
    def _handle(self, data: bytes, addr, now: float) -> None:
        try:
            version, mtype, seq, step, body = unpack(data)
        except PlatformLinkError as exc:
            self.errors += 1
            self._send(self._error(ERR_MALFORMED, str(exc)), addr)
            return
        if version != PROTOCOL_VERSION:
            self.errors += 1
            self._send(self._error(ERR_VERSION, f"protocol version {version} not supported; "
                                                f"controller speaks {PROTOCOL_VERSION}"), addr)
            return
        if self._client is not None and now - self._last_rx > self.watchdog_timeout_s:
            self.watchdog = True
        self._client = addr
        self._last_rx = now
        if mtype == MSG_RESET:
            self.plant.reset(self.seed)
            self.latest = self.plant.measure()
            self.watchdog = False
            self._cmd[:] = self._home
            self._ff[:] = 0.0
            self._inj[:] = 0.0
            self._last_state = self._state(0, NO_ACK)
            self._send(self._last_state, addr)
        elif mtype == MSG_HEARTBEAT:
            self._seq = (self._seq + 1) & 0xFFFFFFFF
            self._send(pack(MSG_HEARTBEAT, self._seq, self.plant.step_index, time.monotonic(), body[0],
                            self._status()), addr)
        elif mtype == MSG_COMMAND:
            self.commands += 1
            k = self.plant.step_index
            if self.watchdog:
                self.rejected += 1
                self._send(self._state(STATUS_WATCHDOG | STATUS_REJECTED, seq), addr)
                return
            if self.mode == "realtime":
                self._cmd[:] = body[0:6]
                self._ff[:] = body[6:12]
                self._inj[:] = body[12:18]
                self._ack = seq
                return
            if step == k:
                self._cmd[:] = body[0:6]
                self._ff[:] = body[6:12]
                self._inj[:] = body[12:18]
                self._advance()
                self._last_state = self._state(self._status(), seq)
                self._send(self._last_state, addr)
            elif step + 1 == k and self._last_state is not None:
                self.repeats += 1
                self._send(self._last_state, addr)
            else:
                self.rejected += 1
                self._send(self._state(self._status() | STATUS_REJECTED, seq), addr)
        else:
            self.errors += 1
            self._send(self._error(ERR_TYPE, f"message type {mtype} is not accepted by the controller"), addr)

    def _run(self) -> None:
        dt = self.plant.dt_s
        next_t = time.monotonic() + dt
        while not self._stop_evt.is_set():
            now = time.monotonic()
            if self.mode == "realtime":
                wait = max(0.0, next_t - now)
            else:
                wait = 0.01
            r, _, _ = select.select([self._sock], [], [], wait)
            with self._lock:
                now = time.monotonic()
                if r:
                    try:
                        data, addr = self._sock.recvfrom(2048)
                    except (BlockingIOError, InterruptedError):
                        continue
                    self._handle(data, addr, now)
                if (self._client is not None and not self.watchdog
                        and now - self._last_rx > self.watchdog_timeout_s):
                    self.watchdog = True
                if self.mode == "realtime" and now >= next_t:
                    next_t += dt
                    if now - next_t > 0.1:
                        next_t = now + dt
                    if self._client is not None:
                        self._advance()
                        self._send(self._state(self._status(), self._ack), self._client)


class EmulatedRig:
    """Platform-controller and Net F/T emulators serving the scenario's digital twin on 127.0.0.1.

    ``link_params`` / ``netft_params`` are the scenario's client settings with the emulators' addresses.
    Close with :meth:`close`.
    """

    TAGS = 1 << 14

    def __init__(self, scenario):
        from dataclasses import replace


        hw: HardwareParams = scenario.hardware
        self.scenario = scenario
        fail_at = int(hw.emulator_fail_at_step)

        class _Controller(PlatformEmulator):
            def _advance(self):
                super()._advance()
                if 0 <= fail_at <= self.steps_taken:
                    self.silent = True       # the controller stops answering (fault drill)

        plant = factory.build_plant(scenario)
        self.platform = _Controller(plant, mode=scenario.loop.mode, watchdog_timeout_s=hw.emulator_watchdog_s,
                                    seed=factory.plant_seed(scenario, 0))
        self._tags: list = [None] * self.TAGS
        self.netft = NetFtEmulator(self._wrench, counts_per_force=hw.netft.counts_per_force,
                                   counts_per_torque=hw.netft.counts_per_torque,
                                   rate_hz=hw.emulator_sensor_rate_hz)
        self.link_params = emulated_link_params(hw, self.platform.port)
        self.netft_params = replace(hw.netft, host="127.0.0.1", port=self.netft.port,
                                    timeout_s=max(hw.netft.timeout_s, hw.emulator_timeout_s))

    def _wrench(self, ft_sequence: int):
        out = self.platform.latest
        self._tags[ft_sequence % self.TAGS] = out
        return out.wrench

    def prepare_trial(self, trial: int) -> None:
        """Seed the twin's noise for ``trial`` like the simulated plant (takes effect at the next RESET)."""
        self.platform.seed = factory.plant_seed(self.scenario, trial)

    def current_output(self):
        """The twin's newest output (what the last STATE reported)."""
        return self.platform.latest

    def tagged_output(self, ft_sequence: int):
        """The twin output whose wrench the record ``ft_sequence`` carries (None if not known)."""
        return self._tags[ft_sequence % self.TAGS]

    def sampled_after(self, ft_sequence: int, output) -> bool:
        """True when the record ``ft_sequence`` carries the wrench of ``output``."""
        return self.tagged_output(ft_sequence) is output

    def close(self) -> None:
        self.netft.close()
        self.platform.close()


def open_platform_link(scenario, address: str, closers: list):
    """A platform-link client for ``rths identify --link`` and ``rths commission --link``: to ``address``
    ("HOST:PORT"), or, with ``address`` empty, to the scenario's ``hardware.platform_link`` or, with
    ``hardware.emulate``, to a platform emulator started here in process.  What must be closed afterwards is
    appended to ``closers``.  Returns (client, a phrase naming the controller).  A malformed address raises
    ParameterError."""
    from dataclasses import replace

    from rths_ros.drivers.platform_link import PlatformLinkClient
    from rths_ros.params import ParameterError
    lp = scenario.hardware.platform_link
    emulated = False
    if address:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ParameterError(f"--link: {address!r} is not allowed; expected HOST:PORT")
        lp = replace(lp, host=host, port=int(port))
    elif scenario.hardware.emulate:      # no address and hardware.emulate: the platform emulator, in process
        emu = PlatformEmulator(factory.build_plant(scenario), "lockstep", scenario.hardware.emulator_watchdog_s,
                               seed=factory.plant_seed(scenario, 0))
        closers.append(emu)
        lp = emulated_link_params(scenario.hardware, emu.port)
        emulated = True
    client = PlatformLinkClient(lp)
    closers.append(client)
    return client, f"platform controller at {lp.host}:{lp.port}" + (" (emulator)" if emulated else "")

