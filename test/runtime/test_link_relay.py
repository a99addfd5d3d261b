"""The emulated link's relay and the two-host helpers, without namespaces: datagram socket pairs stand in for the
TUN devices (one read or write is one packet on both)."""
import os
import socket
import threading
import time

import pytest

from rths_ros.params import ParameterError
from rths_ros.runtime.link_relay import Relay
from rths_ros.runtime.two_hosts import Link, TwoHosts, crossing_note


def _pairs():
    a_host, a_relay = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    b_host, b_relay = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (a_relay, b_relay, b_host, a_host):
        s.setblocking(False)
    return a_host, b_host, (a_relay.fileno(), b_relay.fileno()), (a_relay, b_relay)


def _run(relay: Relay, seconds: float) -> None:
    t = threading.Thread(target=relay.run)
    t.start()
    time.sleep(seconds)
    relay.running = False
    t.join()


def _drain(sock) -> list[bytes]:
    got = []
    while True:
        try:
            got.append(sock.recv(65536))
        except BlockingIOError:
            return got


def test_packets_cross_in_both_directions_after_their_hold():
    a, b, fds, keep = _pairs()
    relay = Relay(fds, delay_ms=20.0, jitter_ms=0.0, loss=0.0)
    t = threading.Thread(target=relay.run)
    t.start()
    a.send(b"to b")
    b.send(b"to a")
    time.sleep(0.2)
    relay.running = False
    t.join()
    assert _drain(b) == [b"to b"] and _drain(a) == [b"to a"]
    s = relay.summary()
    assert [d["forwarded"] for d in s["directions"]] == [1, 1]
    assert all(d["hold_ms"]["min"] >= 20.0 for d in s["directions"])    # never sent before its hold is over


def test_loss_drops_the_drawn_share_and_counts_it():
    a, b, fds, keep = _pairs()
    relay = Relay(fds, 0.0, 0.0, loss=0.25, seed=7)
    t = threading.Thread(target=relay.run)
    t.start()
    got = []
    for i in range(400):        # a datagram socket pair queues few packets: read them as they come
        a.send(str(i).encode())
        if i % 5 == 4:
            time.sleep(0.002)
            got += _drain(b)
    time.sleep(0.2)
    relay.running = False
    t.join()
    got += _drain(b)
    c = relay.summary()["directions"][0]
    assert c["packets"] == 400 and c["lost"] + c["forwarded"] + c["failed"] == 400 and len(got) == c["forwarded"]
    assert 60 <= c["lost"] <= 140, c            # 25 % of 400 = 100 (binomial sd 8.7; seeded, so fixed)


def test_a_cut_drops_everything_until_restored_and_is_logged():
    a, b, fds, keep = _pairs()
    relay = Relay(fds, 0.0, 0.0, 0.0)
    t = threading.Thread(target=relay.run)
    t.start()
    relay.set_cut(True)
    a.send(b"lost")
    time.sleep(0.05)
    relay.set_cut(False)
    a.send(b"through")
    time.sleep(0.1)
    relay.running = False
    t.join()
    assert _drain(b) == [b"through"]
    s = relay.summary()
    assert s["directions"][0]["cut"] == 1 and [c["cut"] for c in s["cuts"]] == [True, False]


def test_link_parse_and_range_errors_name_the_key():
    assert Link.parse("delay_ms=0.2,jitter_ms=0.1,loss=2%,cut_at_step=2000") == Link(0.2, 0.1, 0.02, 2000)
    assert Link.parse("") == Link()
    with pytest.raises(ParameterError, match=r"link.loss: 1.5 is outside \[0, 1\]"):
        Link.parse("loss=1.5")
    with pytest.raises(ParameterError, match="link.jitter_ms: 0.3 is larger than link.delay_ms"):
        Link(delay_ms=0.2, jitter_ms=0.3)
    with pytest.raises(ParameterError, match="KEY one of delay_ms"):
        Link.parse("latency=3")
    with pytest.raises(ParameterError, match="link.delay_ms: 'x' is not a number"):
        Link.parse("delay_ms=x")


def test_the_environment_of_each_side_and_a_process_on_both_sides_is_refused():
    h = TwoHosts(Link(), rig_nodes=("sim_plant", "ft_sensor", "stewart_platform"))
    rig, num = h.env("rig"), h.env("numerical")
    assert rig["ROS_STATIC_PEERS"] == h.addresses["numerical"] and num["ROS_STATIC_PEERS"] == h.addresses["rig"]
    assert rig["FASTDDS_BUILTIN_TRANSPORTS"] == "UDPv4" and rig["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert rig["RTHS_NETNS"] != num["RTHS_NETNS"]
    assert h.side_of_process(("sim_plant",)) == "rig" and h.side_of_process(("recorder",)) == "numerical"
    with pytest.raises(ParameterError, match="nodes on both hosts"):
        h.side_of_process(("sim_plant", "numerical_substructure"))


def test_a_fault_about_a_topic_from_the_other_host_names_the_link():
    side = {"ft_sensor": "rig", "numerical_substructure": "numerical", "sim_plant": "rig"}.get
    producers = {"/rths/interface_force": ["ft_sensor"], "/rths/leg_command": ["stewart_platform"]}.get
    note = crossing_note("watchdog: no /rths/interface_force for 457 ms", "numerical_substructure",
                         lambda t: producers(t, []), lambda n: side(n, "rig"))
    assert note == ("/rths/interface_force comes over the link from the rig host (ft_sensor) to "
                    "numerical_substructure on the numerical host")
    # a topic made on the reporter's own host is no link fault
    assert crossing_note("watchdog: no /rths/leg_command for 400 ms", "sim_plant",
                         lambda t: producers(t, []), lambda n: side(n, "rig")) is None


def test_the_link_bench_table_states_each_case_and_the_added_latency():
    from rths_ros.bench.link import markdown_link
    rows = [{"case": "one host", "link": None, "run": 1, "exit_code": 0, "status": "completed",
             "deadline_miss_ratio": 0.0, "p50_s": 0.00110, "p99_s": 0.0021, "step_gaps": 0},
            {"case": "two hosts, delay", "link": "delay_ms=0.2,jitter_ms=0.1", "run": 1, "exit_code": 0,
             "status": "completed", "deadline_miss_ratio": 0.005, "p50_s": 0.00158, "p99_s": 0.0025, "step_gaps": 0,
             "hold_p50_ms": [0.26, 0.27], "link_named": False},
            {"case": "two hosts, cut", "link": "cut_at_step=333", "run": 1, "exit_code": 1, "status": "aborted",
             "deadline_miss_ratio": 0.003, "p50_s": 0.0009, "p99_s": 0.0016, "step_gaps": 2110,
             "hold_p50_ms": [0.04, 0.1], "link_named": True}]
    md = markdown_link(rows)
    assert "| two hosts, cut | 1 | aborted (1) | 0.30 % | 0.900 / 1.600 | 2110 | 0.040 / 0.100 | yes |" in md
    assert "| one host | 1 | completed (0) | 0.00 % | 1.100 / 2.100 | 0 | - | - |" in md
    assert "- two hosts, delay: step latency median 1.580 ms, +0.480 ms over one host (1.100 ms)" in md


def test_namespaces_left_by_a_killed_runner_are_removed_and_live_ones_kept():
    import subprocess

    from rths_ros.runtime.two_hosts import available, remove_stale_namespaces
    ok, why = available()
    if not ok:
        pytest.skip(f"two hosts on one machine: {why}")
    dead = 9999999            # above the largest pid Linux gives (2^22): no such process
    stale, live = f"rths-{dead}-0-rig", f"rths-{os.getpid()}-99-numerical"
    for name in (stale, live):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert stale in remove_stale_namespaces()
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert stale not in names and live in names
    finally:
        for name in (stale, live):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
