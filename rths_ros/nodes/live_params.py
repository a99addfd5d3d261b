"""The run's tunable parameters for a viewer: the ``parameters`` capability of both live-view servers (foxglove.sdk.v1
and foxglove.websocket.v1, rths_ros.nodes.live_v1), so that Foxglove, Lichtblick, PlotJuggler or any
Foxglove-protocol client can read and change them as ``ros2 param get/set`` does.

A viewer names a parameter ``/<node>.<key>``, e.g. ``/passivity_controller.passivity.g_p_kg_per_s`` (the form
foxglove_bridge uses).  It sees the tunable parameters of the nodes the run has (:data:`rths_ros.runtime.tuning.
TUNABLES`).  A read goes to the node's own ``get_parameters`` service and a change to its ``set_parameters``
service, the one ``ros2 param set`` calls, so every rule of live tuning holds unchanged: the range check, the rate
limit, the step boundary, the TUNED event with its step, the refusal in lockstep and of a read-only parameter
(the node's message names the tunable ones).  A refused change is sent to the viewer as a status message, and the
answer holds the values in use.  The calls are made from the server's asyncio thread; the live view's executor
completes them (the v1 server's listener awaits them on its asyncio loop; foxglove-sdk's calls its listener on a
thread of its own, which runs them to the end: :meth:`ViewerParameters.get_sync`).
"""
from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters

from rths_ros.runtime.tuning import TUNABLES

#: how long a node's parameter service may take to answer
CALL_TIMEOUT_S = 3.0


def viewer_name(role: str, key: str) -> str:
    return f"/{role}.{key}"


def split_name(name: str) -> tuple[str, str] | None:
    """(node, key) of ``/<node>.<key>`` (a node name has no dot), or None."""
    head, dot, key = name.lstrip("/").partition(".")
    return (head, key) if dot and head and key else None


class ViewerParameters:
    """The tunable parameters of the run's nodes, read and set through their parameter services.  ``status(text)``
    tells the viewers why a change was refused."""

    def __init__(self, node, run_nodes, status: Callable[[str], None]):
        self.status = status
        self.roles = [r for r in TUNABLES if r in run_nodes]
        # relative names: under the live view's namespace, which is its rig's
        self.get_clients = {r: node.create_client(GetParameters, f"{r}/get_parameters") for r in self.roles}
        self.set_clients = {r: node.create_client(SetParameters, f"{r}/set_parameters") for r in self.roles}

    def names(self) -> list[str]:
        return [viewer_name(r, t.key) for r in self.roles for t in TUNABLES[r]]

    async def _call(self, client, request):
        if not client.service_is_ready():
            raise RuntimeError(f"{client.srv_name} is not available")
        future = client.call_async(request)
        t_end = time.monotonic() + CALL_TIMEOUT_S
        while not future.done():
            if time.monotonic() > t_end:
                client.remove_pending_request(future)
                raise RuntimeError(f"{client.srv_name} did not answer within {CALL_TIMEOUT_S:g} s")
            await asyncio.sleep(0.002)
        return future.result()

    def _by_role(self, names: list[str]) -> tuple[dict[str, list[str]], list[str]]:
        wanted: dict[str, list[str]] = {}
        unknown = []
        for name in names:
            parts = split_name(name)
            if parts is None or parts[0] not in self.roles:
                unknown.append(name)
            else:
                wanted.setdefault(parts[0], []).append(parts[1])
        return wanted, unknown

    async def get(self, names: list[str]) -> list[dict]:
        """The values of ``names`` (all tunable parameters when empty) in use by their nodes."""
        wanted, unknown = self._by_role(list(names) or self.names())
        if unknown:
            self.status(f"parameters: {', '.join(unknown)}: not a parameter this run lets a viewer see; expected one "
                        f"of {', '.join(self.names()) or '(none: no node of this run has tunable parameters)'}")
        out = []
        for role, keys in wanted.items():
            try:
                res = await self._call(self.get_clients[role], GetParameters.Request(names=keys))
            except RuntimeError as exc:
                self.status(f"parameters: {exc}")
                continue
            for key, value in zip(keys, res.values):
                if value.type == ParameterType.PARAMETER_DOUBLE:
                    out.append({"name": viewer_name(role, key), "value": value.double_value, "type": "float64"})
                elif value.type == ParameterType.PARAMETER_INTEGER:
                    out.append({"name": viewer_name(role, key), "value": value.integer_value})
        return out

    async def set(self, params: list[dict]) -> list[dict]:
        """Ask each node to take the new values (its own checks decide); refusals go to the viewers as status
        messages; returns the values in use afterwards."""
        wanted, unknown = self._by_role([p.get("name", "") for p in params])
        if unknown:
            self.status(f"parameters: {', '.join(unknown)}: cannot be set from a viewer; tunable: "
                        f"{', '.join(self.names()) or '(none in this run)'} (docs/live.md)")
        values = {p.get("name"): p.get("value") for p in params}
        for role, keys in wanted.items():
            request = SetParameters.Request()
            for key in keys:
                value = values[viewer_name(role, key)]
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    self.status(f"parameters: {viewer_name(role, key)}: {value!r} is not a finite number")
                    continue
                request.parameters.append(Parameter(name=key, value=ParameterValue(
                    type=ParameterType.PARAMETER_DOUBLE, double_value=float(value))))
            if not request.parameters:
                continue
            try:
                res = await self._call(self.set_clients[role], request)
            except RuntimeError as exc:
                self.status(f"parameters: {exc}")
                continue
            for p, r in zip(request.parameters, res.results):
                if not r.successful:
                    self.status(f"parameters: {role} refused {p.name} = {p.value.double_value:g}: {r.reason}")
        return await self.get([viewer_name(r, k) for r, ks in wanted.items() for k in ks])

    def get_sync(self, names: list[str]) -> list[dict]:
        """:meth:`get` for a server that calls its listener on a thread of its own (foxglove-sdk's)."""
        return asyncio.run(self.get(names))

    def set_sync(self, params: list[dict]) -> list[dict]:
        return asyncio.run(self.set(params))


__all__ = ["ViewerParameters", "viewer_name", "split_name", "CALL_TIMEOUT_S"]
