"""The live view's second server: the Foxglove WebSocket protocol under the subprotocol ``foxglove.websocket.v1``,
for the open-source viewers (Lichtblick, PlotJuggler's Foxglove plugin) and every client of the reference
``@foxglove/ws-protocol`` library, which the foxglove-sdk server (``foxglove.sdk.v1`` only) answers with HTTP 400.

It serves the same channels as the first server, with the same samples (the live view hands each one to both),
and passes what clients send to the same gate (:class:`rths_ros.nodes.live_view.ClientGate`): the e-stop topic
only, everything else refused.  The server is the ``foxglove-websocket`` package's, on an asyncio loop in a thread
of its own; the node's calls only schedule work on that loop.  The package's listener is not told which client
sent a message, so :class:`_Server` notes the client of the message being handled (one loop, one message at a
time) and the gate keys every client channel by (client, channel) as for the first server.  Like the first server it
offers the ``parameters`` capability: the run's tunable parameters, read and set as ``ros2 param`` does
(rths_ros.nodes.live_params).
"""
from __future__ import annotations

import asyncio
import json
import threading
import warnings
from types import SimpleNamespace

from rths_ros.params import ParameterError

SUBPROTOCOL = "foxglove.websocket.v1"


def _package():
    try:
        with warnings.catch_warnings():     # it serves through websockets' legacy API (deprecated, still there)
            warnings.simplefilter("ignore", DeprecationWarning)
            from foxglove_websocket.server import FoxgloveServer, FoxgloveServerListener
            from foxglove_websocket.types import StatusLevel
    except ImportError as exc:
        raise ParameterError(f"live.v1_port: the foxglove.websocket.v1 server needs the foxglove-websocket package "
                             f"({exc}); install requirements/runtime.txt, or set live.v1_port=-1") from None
    return FoxgloveServer, FoxgloveServerListener, StatusLevel


class V1Server:
    """A foxglove.websocket.v1 server on ``host:port`` (0: a free port; :attr:`port` is the one it got)."""

    def __init__(self, name: str, host: str, port: int, gate, client_publish: bool, params=None):
        """``params``: the run's tunable parameters for the viewers (rths_ros.nodes.live_params.ViewerParameters;
        the ``parameters`` capability), or None."""
        server_cls, listener_cls, self._levels = _package()
        self.gate = gate
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="live-v1", daemon=True)
        self._thread.start()
        caps = (["clientPublish"] if client_publish else []) + (["parameters"] if params is not None else [])
        gate_of = self.gate

        class _Server(server_cls):
            current = None          # the client whose message is being handled

            async def _handle_raw_client_message(self, client, raw_message):
                _Server.current = client
                try:
                    await super()._handle_raw_client_message(client, raw_message)
                finally:
                    _Server.current = None

        def client():
            return SimpleNamespace(id=1000 + (id(_Server.current) % 1_000_000))

        class _Listener(listener_cls):
            def on_subscribe(self, server, channel_id):
                return None

            def on_unsubscribe(self, server, channel_id):
                return None

            async def on_client_advertise(self, server, channel):
                gate_of.on_client_advertise(client(), SimpleNamespace(
                    id=channel["id"], topic=channel["topic"], encoding=channel.get("encoding", ""),
                    schema_name=channel.get("schemaName", "")))

            async def on_client_unadvertise(self, server, channel_id):
                gate_of.on_client_unadvertise(client(), channel_id)

            async def on_client_message(self, server, channel_id, payload):
                gate_of.on_message_data(client(), channel_id, bytes(payload))

            async def on_get_parameters(self, server, param_names, request_id):
                return await params.get(list(param_names or ())) if params is not None else []

            async def on_set_parameters(self, server, new_params, request_id):
                return await params.set(list(new_params or ())) if params is not None else []

            async def on_parameters_subscribe(self, server, names, subscribe):
                return None

        async def start():
            import logging
            logger = logging.getLogger("rths_ros.live_v1")
            logger.setLevel(logging.WARNING)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                server = _Server(host, port, name, capabilities=caps,
                                 supported_encodings=["json", "cdr"] if client_publish else None, logger=logger)
                server.set_listener(_Listener())
                server.start()
                opened = await server.wait_opened()
            return server, opened.sockets[0].getsockname()[1]

        try:
            self.server, self.port = self._call(start(), 10.0)
        except ParameterError:
            raise
        except Exception as exc:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise ParameterError(f"live.v1_port: cannot serve on {host}:{port} ({exc}); choose another live.v1_port "
                                 "(0: any free port, -1: off)") from None

    def _call(self, coro, timeout_s: float = 5.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def add_channel(self, topic: str, encoding: str, schema_name: str, schema: str, schema_encoding: str) -> int:
        return self._call(self.server.add_channel({"topic": topic, "encoding": encoding, "schemaName": schema_name,
                                                   "schema": schema, "schemaEncoding": schema_encoding}))

    def log(self, channel_id: int, data, t_ns: int) -> None:
        """Send a sample to the subscribed clients (scheduled on the server's loop; the caller does not wait)."""
        payload = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.loop.call_soon_threadsafe(self._send, channel_id, t_ns, payload)

    def _send(self, channel_id: int, t_ns: int, payload: bytes) -> None:
        self.loop.create_task(self.server.send_message(channel_id, t_ns, payload))

    def status(self, text: str, warning: bool = True) -> None:
        level = self._levels.WARNING if warning else self._levels.INFO
        self.loop.call_soon_threadsafe(lambda: self.loop.create_task(self.server.send_status(level, text)))

    def stop(self) -> None:
        try:
            self._call(self._close(), 5.0)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5.0)

    async def _close(self) -> None:
        await asyncio.sleep(0)              # the samples already scheduled go first
        self.server.close()
        await self.server.wait_closed()


__all__ = ["V1Server", "SUBPROTOCOL"]
