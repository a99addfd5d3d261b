"""The hardware path's settings (scenario section ``hardware``) and its in-process emulation.

``plant = hardware`` replaces the simulated plant node by ``hardware_plant``
(:mod:`rths_ros.nodes.hardware_plant`), which talks to the rig over the two UDP protocols of
docs/protocols.md: the platform link (leg commands out, leg states in) and the ATI Net F/T Raw Data Transfer
(wrench in).  :class:`HardwareParams` holds their addresses, calibration and timing.

With ``emulate: true`` the node starts, in its own process, a
:class:`~rths_ros.app.emulated_rig.PlatformEmulator` around the scenario's digital twin and a
:class:`~rths_ros.drivers.ati_netft_emulator.NetFtEmulator` that streams the twin's wrench, both on ephemeral
ports of 127.0.0.1, and connects its clients to them (:class:`~rths_ros.app.emulated_rig.EmulatedRig`).  The whole driver chain (UDP,
wire formats, sequence checks, retransmission, watchdogs, calibration scaling) then runs without a rig; the
addresses ``host``/``port`` of the two client sections are not used in that case.

Choices (the sources say nothing about the wire level):

* Emulated noise: before every RESET the emulated twin gets the same noise seed as the simulated plant of that
  trial (``factory.plant_seed``), so ``plant=hardware`` with the emulators is comparable sample by sample
  with ``plant=sim``.
* Emulated sensor timing: the emulated Net F/T streams at ``emulator_sensor_rate_hz`` on the wall clock,
  independent of the steps.  In lockstep mode the node waits for a record sampled *after* the step it
  just applied (:meth:`~rths_ros.app.emulated_rig.EmulatedRig.sampled_after`: the emulator notes which twin output each record was
  taken from), so the wrench of step ``k`` belongs to step ``k`` exactly as in the simulated plant.  A real
  sensor cannot tell that; there the node takes the first record that arrives after the leg state.
* Emulated timing: the emulators are Python threads on the same (possibly busy) host, so towards them the
  clients' timeouts are at least ``emulator_timeout_s`` and the heartbeat timeout at least
  ``emulator_watchdog_s``; the rig's values (5 ms reply timeout) apply unchanged to a real controller.
* ``emulator_fail_at_step`` (tests, drills): the emulated controller stops answering after that many steps
  of the run; the node must then abort naming the link.
"""
from __future__ import annotations

from dataclasses import dataclass

from rths_ros.drivers.ati_netft import NetFtParams
from rths_ros.drivers.platform_link import PlatformLinkParams
from rths_ros.params import ParameterError, param

__all__ = ["HardwareParams", "emulated_link_params"]


@dataclass(frozen=True)
class HardwareParams:
    """Connection of the hardware plant node to the platform controller and the force/torque sensor."""

    emulate: bool = param(True, "", doc="start the platform-controller and Net F/T emulators (digital twin) in "
                          "the hardware_plant process on 127.0.0.1 instead of talking to a rig")
    netft: NetFtParams = param(NetFtParams(), doc="ATI Net F/T RDT client: address, calibration, timeout")
    platform_link: PlatformLinkParams = param(PlatformLinkParams(), doc="platform-controller link: address, "
                                              "reply timeout, retries")
    heartbeat_period_s: float = param(0.05, "s", 1e-3, 10.0, "send a HEARTBEAT when the link was idle this long "
                                      "(pauses between trials, start-up); below the controller's watchdog time")
    emulator_sensor_rate_hz: float = param(1000.0, "Hz", 10.0, 20000.0, "emulate only: RDT record rate of the "
                                           "emulated Net F/T")
    emulator_watchdog_s: float = param(1.0, "s", 0.01, 60.0, "emulate only: watchdog time of the emulated "
                                       "platform controller (also the link client's heartbeat timeout, at least)")
    emulator_timeout_s: float = param(0.25, "s", 1e-3, 60.0, "emulate only: the client timeouts towards the "
                                      "emulators (platform_link.reply_timeout_s, netft.timeout_s) are at least this "
                                      "(the emulators are threads on a shared host, not real-time devices)")
    emulator_fail_at_step: int = param(-1, "steps", -1, 2**62, "emulate only: the emulated controller stops "
                                       "answering after this many steps of the run (-1: never; fault drill)")

    def validate(self) -> None:
        if self.heartbeat_period_s >= self.platform_link.heartbeat_timeout_s:
            raise ParameterError(f"heartbeat_period_s: {self.heartbeat_period_s!r} is not below "
                                 f"platform_link.heartbeat_timeout_s = {self.platform_link.heartbeat_timeout_s!r}; "
                                 "an idle link would count as lost")
        if self.emulate and self.heartbeat_period_s >= self.emulator_watchdog_s:
            raise ParameterError(f"heartbeat_period_s: {self.heartbeat_period_s!r} is not below "
                                 f"emulator_watchdog_s = {self.emulator_watchdog_s!r}")


def emulated_link_params(hw: HardwareParams, port: int) -> PlatformLinkParams:
    """The link client's settings towards a platform emulator on 127.0.0.1:``port`` (lenient timeouts)."""
    from dataclasses import replace
    lp = hw.platform_link
    return replace(lp, host="127.0.0.1", port=int(port), reply_timeout_s=max(lp.reply_timeout_s, hw.emulator_timeout_s),
                   heartbeat_timeout_s=max(lp.heartbeat_timeout_s, hw.emulator_watchdog_s))
