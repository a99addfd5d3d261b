"""A non-blocking UDP socket served by one background thread: the common part of the protocol
emulators (the Net F/T sensor, the platform controller)."""
from __future__ import annotations

import socket
import threading


class UdpServer:
    """Binds ``(host, port)`` (port 0 = any free port), then runs :meth:`_run` in a daemon thread until
    :meth:`close`.  Subclasses set up their state first, then call :meth:`_serve`; :meth:`_run` loops
    while ``self._stop_evt`` is not set.  A context manager."""

    def _bind(self, host: str, port: int) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((host, port))
        self._sock.setblocking(False)
        self.address = self._sock.getsockname()
        self._lock = threading.Lock()
        self._stop_evt = threading.Event()

    def _serve(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:  # pragma: no cover - every subclass implements it
        raise NotImplementedError

    @property
    def port(self) -> int:
        return self.address[1]

    def close(self) -> None:
        self._stop_evt.set()
        self._thread.join(timeout=2.0)
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
