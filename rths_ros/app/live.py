"""The scenario section ``live``: the live view, a Foxglove WebSocket server in the node live_view (docs/live.md).

``rths run SCENARIO --live`` and ``ros2 launch rths_ros rths.launch.py live:=true`` set ``live.enabled``; the node
streams the run's loop topics, its events and its safety state to Foxglove clients while the test runs, and takes
one thing from them: the operator's e-stop on :data:`E_STOP_TOPIC`.
"""
from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

from rths_ros.params import ParameterError, param

#: the one topic a Foxglove client may publish on; any message on it is the operator's e-stop (the run aborts)
E_STOP_TOPIC = "/rths/estop"
#: the JSON channel of the run's safety state (not a ROS topic: the live view derives it from the events)
SAFETY_STATE_TOPIC = "/rths/safety_state"
#: the node that runs the live view
LIVE_NODE = "live_view"


@dataclass(frozen=True)
class LiveParams:
    enabled: bool = param(False, "", doc="start the live view (node live_view): a Foxglove WebSocket server that "
                          "streams the run and takes the operator e-stop; `rths run --live`, launch argument "
                          "live:=true (docs/live.md)")
    host: str = param("127.0.0.1", "", doc="address the WebSocket server listens on: an IPv4 or IPv6 address or "
                      "'localhost' (127.0.0.1: this computer only; 0.0.0.0: every network interface)")
    port: int = param(8765, "", 0, 65535, "TCP port of the WebSocket server, ws://host:port (0: a free port "
                      "chosen at start; the URL is written to OUT/live.json)")
    v1_port: int = param(8766, "", -1, 65535, "TCP port of the second WebSocket server, for clients of the "
                         "foxglove.websocket.v1 subprotocol (Lichtblick, PlotJuggler's Foxglove plugin, "
                         "@foxglove/ws-protocol): the same channels, samples and e-stop (0: a free port chosen at "
                         "start, written to OUT/live.json; -1: off)")
    max_rate_hz: float = param(50.0, "Hz", 1.0, 1000.0, "most messages per second of loop time the live view sends "
                               "per loop topic: the samples of every n-th step, n = ceil(1 / (loop.dt_s * "
                               "max_rate_hz)), the same steps on every topic (realtime: per second of wall time; "
                               "lockstep: the loop's pace sets the wall rate); events and the safety state are "
                               "never skipped")
    client_e_stop: bool = param(True, "", doc="accept the operator e-stop from Foxglove clients (client publish on "
                                "/rths/estop, no other topic); false: the server takes nothing from its clients")

    def stride(self, dt_s: float) -> int:
        """Every how many steps a loop topic's sample goes to the clients (see ``max_rate_hz``)."""
        return max(1, math.ceil(1.0 / (dt_s * self.max_rate_hz) - 1e-9))

    def validate(self) -> None:
        if self.v1_port == self.port and self.port != 0:
            raise ParameterError(f"v1_port: {self.v1_port} is live.port too; expected another port (0: any free one, "
                                 "-1: no foxglove.websocket.v1 server)")
        host = self.host.strip()
        if host == "localhost":
            return
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ParameterError(f"host: {self.host!r} is not allowed; expected an IPv4 or IPv6 address or "
                                 "'localhost' (e.g. 127.0.0.1, 0.0.0.0)") from None
