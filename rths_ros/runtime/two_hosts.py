"""Two hosts on one machine: the rig side and the numerical side of a run in two network namespaces, joined by an
emulated link (:mod:`rths_ros.runtime.link_relay`: delay, jitter, loss, a cut), discovering each other through
configured initial peers as two real computers would (docs/distributed.md).

* :class:`Link` is what the link does; :class:`TwoHosts` makes the namespaces and the link, gives each side's
  node processes their environment (:meth:`TwoHosts.env`), and the plant's the cut at a step
  (:meth:`TwoHosts.cut_env`: the plant signals the relay right before it sends that step).
* A node process enters its namespace itself, before rclpy makes its DDS participant: :func:`enter_netns_from_env`
  reads ``RTHS_NETNS`` (called by :func:`rths_ros.runtime.node.node_main`), so every way of starting a node
  (forked, fork server, ``python -m``) lands on its host.
* Each side's DDS speaks UDP only (``FASTDDS_BUILTIN_TRANSPORTS=UDPv4``): both namespaces share /dev/shm, and
  Fast DDS's shared-memory transport would otherwise carry the data past the link.  Discovery is localhost-only
  plus the other host's address as a static peer (``ROS_STATIC_PEERS``), no multicast.

Needs root (namespaces, /dev/net/tun) and iproute2's ``ip``; :func:`available` says whether this machine can.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from rths_ros.params import ParameterError

#: the environment variable naming the network namespace a node process enters before its DDS participant
NETNS_ENV = "RTHS_NETNS"
#: the two sides of a split run
SIDES = ("rig", "numerical")
#: the TUN device of the link in each namespace
DEVICE = "rthslink"
_counter = itertools.count()


def enter_netns_from_env(environ=os.environ) -> str | None:
    """Enter the network namespace ``RTHS_NETNS`` names (a path such as /run/netns/NAME), if set; returns it."""
    path = environ.get(NETNS_ENV, "")
    if not path:
        return None
    from rths_ros.runtime.link_relay import setns
    setns(path)
    print(f"network namespace: {path} ({NETNS_ENV})", file=sys.stderr, flush=True)
    return path


@dataclass(frozen=True)
class Link:
    """The emulated link: one-way delay [ms], uniform jitter [+- ms], loss probability per packet, and the step of
    the run at which the plant cuts it, right before it sends that step (-1: never)."""
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    cut_at_step: int = -1          # the plant cuts it right before it sends this step's leg state
    seed: int = 0

    KEYS = ("delay_ms", "jitter_ms", "loss", "cut_at_step", "seed")

    def __post_init__(self):
        checks = {"delay_ms": (0.0, 1000.0), "jitter_ms": (0.0, 1000.0), "loss": (0.0, 1.0),
                  "cut_at_step": (-1, 10**9), "seed": (0, 2**31)}
        for key, (lo, hi) in checks.items():
            v = getattr(self, key)
            if not (lo <= v <= hi):
                raise ParameterError(f"link.{key}: {v!r} is outside [{lo:g}, {hi:g}]")
        if self.jitter_ms > self.delay_ms:
            raise ParameterError(f"link.jitter_ms: {self.jitter_ms:g} is larger than link.delay_ms "
                                 f"({self.delay_ms:g}); the hold of a packet would be negative")

    @classmethod
    def parse(cls, text: str) -> Link:
        """``'delay_ms=0.2,jitter_ms=0.1,loss=0.02,cut_at_step=2000'`` (any subset; empty: a clean link)."""
        kw: dict = {}
        for item in filter(None, (t.strip() for t in (text or "").split(","))):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in cls.KEYS:
                raise ParameterError(f"link: {item!r} is not KEY=VALUE with KEY one of {', '.join(cls.KEYS)}")
            try:
                kw[key] = int(value) if key in ("cut_at_step", "seed") else float(value.rstrip("%")) / (
                    100.0 if key == "loss" and value.strip().endswith("%") else 1.0)
            except ValueError:
                raise ParameterError(f"link.{key}: {value!r} is not a number") from None
        return cls(**kw)

    def describe(self) -> str:
        parts = [f"delay {self.delay_ms:g} ms" + (f" +- {self.jitter_ms:g} ms" if self.jitter_ms else ""),
                 f"loss {100 * self.loss:g} %"]
        if self.cut_at_step >= 0:
            parts.append(f"cut at step {self.cut_at_step}")
        return ", ".join(parts)


def available() -> tuple[bool, str]:
    """Whether this machine can make the two hosts (root, ``ip``, /dev/net/tun); else the reason."""
    if os.geteuid() != 0:
        return False, "network namespaces need root"
    if shutil.which("ip") is None:
        return False, "iproute2's `ip` is not installed"
    if not os.path.exists("/dev/net/tun"):
        return False, "/dev/net/tun is missing (no TUN support)"
    probe = f"rths-probe-{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return False, f"`ip netns add` is refused here: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return True, ""


def _die_with_parent() -> None:
    """The relay ends with the process that made it (PR_SET_PDEATHSIG), even if that one is killed."""
    import ctypes
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def remove_stale_namespaces() -> list[str]:
    """Delete the namespaces of earlier two-host runs whose process is gone (``rths-<pid>-<n>-<side>``: a runner
    killed before it could clean up); returns their names."""
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    gone = []
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        parts = name.split("-")
        if len(parts) == 4 and parts[0] == "rths" and parts[1].isdigit() and parts[3] in SIDES:
            if not os.path.exists(f"/proc/{parts[1]}"):
                subprocess.run(["ip", "netns", "del", name], capture_output=True)
                gone.append(name)
    return gone


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")


class TwoHosts:
    """The rig host and the numerical host of a run (a context manager: :meth:`start`, :meth:`close`).

    ``rig_nodes``: the nodes that run on the rig host (every other node runs on the numerical host)."""

    def __init__(self, link: Link = Link(), rig_nodes: tuple[str, ...] = (), stats_path: Path | None = None):
        self.link = link
        self.rig_nodes = tuple(rig_nodes)
        tag = f"{os.getpid()}-{next(_counter)}"
        self.names = {side: f"rths-{tag}-{side}" for side in SIDES}
        self.addresses = {"rig": "10.231.0.1", "numerical": "10.231.0.2"}
        self._tmp = None
        self.stats_path = Path(stats_path) if stats_path else None
        self.relay: subprocess.Popen | None = None
        self.cut_at: dict | None = None
        self._made: list[str] = []

    # -- set-up and tear-down -------------------------------------------------------------------
    def __enter__(self) -> TwoHosts:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def netns_path(self, side: str) -> str:
        return f"/run/netns/{self.names[side]}"

    def start(self) -> None:
        ok, why = available()
        if not ok:
            raise RuntimeError(f"two hosts on this machine: {why}")
        remove_stale_namespaces()
        try:
            for side in SIDES:
                _ip("netns", "add", self.names[side])
                self._made.append(self.names[side])
                _ip("-n", self.names[side], "link", "set", "lo", "up")
            if self.stats_path is None:
                self._tmp = tempfile.mkdtemp(prefix="rths-link-")
                self.stats_path = Path(self._tmp) / "link.json"
            cmd = [sys.executable, "-m", "rths_ros.runtime.link_relay",
                   *[a for side in SIDES for a in ("--side", f"{self.netns_path(side)}:{DEVICE}")],
                   "--delay-ms", str(self.link.delay_ms), "--jitter-ms", str(self.link.jitter_ms),
                   "--loss", str(self.link.loss), "--seed", str(self.link.seed), "--stats", str(self.stats_path)]
            self.relay = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
            line = self.relay.stdout.readline().strip()
            if line != "ready":
                err = self.relay.stderr.read() if self.relay.poll() is not None else ""
                raise RuntimeError(f"the link relay did not start: {line!r} {err.strip()}")
            for side, other in (("rig", "numerical"), ("numerical", "rig")):
                ns = self.names[side]
                _ip("-n", ns, "addr", "add", f"{self.addresses[side]}/32", "peer", f"{self.addresses[other]}/32",
                    "dev", DEVICE)
                _ip("-n", ns, "link", "set", DEVICE, "up")
        except BaseException:
            self.close()
            raise

    def close(self) -> dict | None:
        """End the relay, delete the namespaces; returns the relay's statistics (None if it never ran)."""
        stats = None
        if self.relay is not None:
            if self.relay.poll() is None:
                self.relay.send_signal(signal.SIGTERM)
                try:
                    self.relay.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    self.relay.kill()
                    self.relay.wait()
            for stream in (self.relay.stdout, self.relay.stderr):
                if stream is not None:
                    stream.close()
            self.relay = None
            stats = self.stats()
            if stats is not None:       # the file says what the link was and when it was cut, too
                self.stats_path.write_text(json.dumps(stats, indent=1))
        for name in self._made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self._made = []
        return stats

    # -- what the runner needs ---------------------------------------------------------------------
    def side_of(self, node: str) -> str:
        return "rig" if node in self.rig_nodes else "numerical"

    def side_of_process(self, nodes: tuple[str, ...]) -> str:
        sides = {self.side_of(n) for n in nodes}
        if len(sides) != 1:
            raise ParameterError(f"a process with nodes on both hosts ({', '.join(nodes)}) cannot be split; run "
                                 "the nodes as separate processes (not composed)")
        return sides.pop()

    def env(self, side: str) -> dict[str, str]:
        """The environment of a node process on ``side``: its namespace, the other host as the only static
        peer, localhost-only automatic discovery, UDP only."""
        other = "numerical" if side == "rig" else "rig"
        return {NETNS_ENV: self.netns_path(side), "ROS_STATIC_PEERS": self.addresses[other],
                "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "FASTDDS_BUILTIN_TRANSPORTS": "UDPv4"}

    def cut_env(self) -> dict[str, str]:
        """The environment of the plant's process when the link is cut at a step: the plant cuts it itself, right
        before it sends that step's leg state (rths_ros.runtime.fault_injection.LinkCutter), so the cut falls on
        the step exactly."""
        if self.link.cut_at_step < 0 or self.relay is None:
            return {}
        self.cut_at = {"step": self.link.cut_at_step, "by": "the plant, at that step"}
        return {"RTHS_LINK_CUT": f"{self.relay.pid}:{self.link.cut_at_step}"}

    def stats(self) -> dict | None:
        try:
            data = json.loads(self.stats_path.read_text()) if self.stats_path else None
        except (OSError, ValueError):
            return None
        if data is not None:
            data["link"] = asdict(self.link)
            data["hosts"] = {side: {"netns": self.names[side], "address": self.addresses[side]} for side in SIDES}
            if self.cut_at is not None:     # asked for; "made": the relay saw the plant's signal
                data["cut_at"] = {**self.cut_at, "made": any(c.get("cut") for c in data.get("cuts", []))}
        return data

    def describe(self) -> str:
        return (f"two hosts: rig ({', '.join(self.rig_nodes)}) at {self.addresses['rig']}, numerical at "
                f"{self.addresses['numerical']}; link: {self.link.describe()}")


def crossing_note(reason: str, reporter: str, producers_of, side_of) -> str | None:
    """If ``reason`` (a fault of node ``reporter``) names a topic whose producers run on the other host, the
    sentence that says the data crossed the link; ``producers_of(topic)`` gives the topic's producing nodes of
    the run, ``side_of(node)`` the host of a node."""
    for word in reason.replace(",", " ").split():
        if not word.startswith("/"):
            continue
        producers = [p for p in producers_of(word) if side_of(p) != side_of(reporter)]
        if producers:
            return (f"{word} comes over the link from the {side_of(producers[0])} host ({', '.join(producers)}) to "
                    f"{reporter} on the {side_of(reporter)} host")
    return None
