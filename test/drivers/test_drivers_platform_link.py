"""Binary UDP link to the platform controller against the emulator that serves the digital twin."""
from __future__ import annotations

import socket
import struct
import time

import numpy as np
import pytest

from rths_ros.app.emulated_rig import PlatformEmulator, make_injectable
from rths_ros.core.plant.sim_plant import SimPlant, SimPlantParams
from rths_ros.core.platform.interface import InterfaceMap, InterfaceMapParams
from rths_ros.core.platform.stewart import StewartGeometryParams, StewartKinematics
from rths_ros.drivers.platform_link import (
    COMMAND_BODY,
    HEADER,
    MSG_ERROR,
    MSG_RESET,
    MSG_STATE,
    PROTOCOL_VERSION,
    STATE_BODY,
    STATUS_REJECTED,
    STATUS_WATCHDOG,
    PlatformLinkClient,
    PlatformLinkError,
    PlatformLinkParams,
    PlatformLinkTimeout,
    pack,
    unpack,
)

DT = 1e-3


def make_plant(**kw) -> SimPlant:
    kin = StewartKinematics(StewartGeometryParams())
    return SimPlant(SimPlantParams(**kw), kin, InterfaceMap(InterfaceMapParams(), kin), DT)


def commands(plant: SimPlant, n: int):
    """Leg commands of a 2 Hz, 1 mm sine on every leg (phase-shifted) with velocity feedforward."""
    home = np.array(plant.kinematics.home_lengths)
    ph = np.arange(6) * 0.4
    for k in range(n):
        t = k * DT
        yield home + 1e-3 * np.sin(2 * np.pi * 2.0 * t + ph), 1e-3 * 2 * np.pi * 2.0 * np.cos(2 * np.pi * 2.0 * t + ph)


def client_for(emu, **kw) -> PlatformLinkClient:
    return PlatformLinkClient(PlatformLinkParams(host="127.0.0.1", port=emu.port, **kw))


def test_wire_format_sizes_and_header():
    assert HEADER.size == 20 and COMMAND_BODY.size == 144 and STATE_BODY.size == 152
    data = pack(MSG_STATE, 7, 123, *range(18), 5, 6)
    assert data[:4] == b"RTSP" and struct.unpack(">H", data[4:6])[0] == PROTOCOL_VERSION
    version, mtype, seq, step, body = unpack(data)
    assert (version, mtype, seq, step) == (PROTOCOL_VERSION, MSG_STATE, 7, 123)
    assert body[:18] == tuple(float(v) for v in range(18)) and body[18:] == (5, 6)
    with pytest.raises(PlatformLinkError, match="magic"):
        unpack(b"XXXX" + data[4:])
    with pytest.raises(PlatformLinkError, match="bytes"):
        unpack(data[:-1])


def test_step_by_step_equal_to_the_in_process_twin():
    n = 400
    ref = make_plant()                       # untouched twin, in-process
    ref_inj = make_injectable(make_plant())  # same twin with the injectable legs (for the step-mean current)
    # reply timeout (retransmission) well below the controller's 0.25 s watchdog
    with PlatformEmulator(make_plant()) as emu, client_for(emu, reply_timeout_s=0.05, retries=3) as cl:
        st = cl.reset()
        assert st.step == 0
        assert np.array_equal(st.length, ref.measure().lengths)
        max_err = np.zeros(3)
        for k, (cmd, ff) in enumerate(commands(ref, n)):
            if k == 150:
                emu.drop_replies = 1        # one lost reply: the client retransmits, the twin must not step twice
            st = cl.step(k, cmd, ff)
            o = ref.step(cmd, ff)
            ref_inj.step(cmd, ff)
            assert st.step == k + 1 == o.step
            assert st.status == 0
            max_err = np.maximum(max_err, [np.max(np.abs(st.length - o.lengths)),
                                           np.max(np.abs(st.velocity - o.velocities)),
                                           np.max(np.abs(st.current - ref_inj.legs.current_mean))])
        assert np.all(max_err <= 1e-12), max_err
        assert np.max(np.abs(o.lengths - np.array(ref.kinematics.home_lengths))) > 5e-4   # the legs did move
        assert np.array_equal(ref_inj.measure().lengths, o.lengths)
        assert emu.steps_taken == n and emu.repeats == 1
        assert cl.stats.retransmissions == 1
        # the repeated reply is the same datagram (same sequence number): nothing lost, nothing duplicated
        p = cl.stats.packets
        assert (p.received, p.lost, p.out_of_order, p.duplicates) == (n + 1, 0, 0, 0)
        # the twin behind the emulator produced the same wrench as the in-process one
        assert np.array_equal(emu.latest.wrench, o.wrench)


def test_wrong_step_is_rejected():
    with PlatformEmulator(make_plant()) as emu, client_for(emu, reply_timeout_s=0.5) as cl:
        cl.reset()
        home = np.array(emu.plant.kinematics.home_lengths)
        cl.step(0, home)
        with pytest.raises(PlatformLinkError, match="refused the command of step 5"):
            cl.step(5, home)
        assert emu.rejected == 1 and emu.steps_taken == 1
        assert cl.latest.status & STATUS_REJECTED


def test_heartbeat_timeout_detected_by_the_client():
    with PlatformEmulator(make_plant()) as emu, client_for(emu, heartbeat_timeout_s=0.05) as cl:
        cl.reset()
        rtt, status = cl.ping(timeout_s=0.5)
        assert 0.0 < rtt < 0.5 and status == 0
        emu.silent = True
        with pytest.raises(PlatformLinkTimeout, match="no heartbeat answer"):
            cl.ping(timeout_s=0.05)
        time.sleep(0.06)
        with pytest.raises(PlatformLinkTimeout, match="silent for"):
            cl.check_alive()
        home = np.array(emu.plant.kinematics.home_lengths)
        with pytest.raises(PlatformLinkTimeout, match="no STATE for step 1"):
            PlatformLinkClient(PlatformLinkParams(host="127.0.0.1", port=emu.port, reply_timeout_s=0.01,
                                                  retries=1)).step(0, home)


def test_controller_watchdog_trips_on_a_silent_client_and_reset_clears_it():
    # generous margins (a loaded 2-core machine can delay a 20 ms sleep by tens of ms)
    with PlatformEmulator(make_plant(), watchdog_timeout_s=0.4) as emu, client_for(emu, reply_timeout_s=0.5) as cl:
        cl.reset()
        home = np.array(emu.plant.kinematics.home_lengths)
        # heartbeats every 20 ms keep the watchdog quiet while no commands flow
        t_end = time.monotonic() + 0.3
        while time.monotonic() < t_end:
            cl.heartbeat()
            time.sleep(0.02)
        st = cl.step(0, home)
        assert not emu.watchdog and st.status == 0
        time.sleep(0.8)                                      # the client falls silent
        assert emu.watchdog
        _, status = cl.ping(timeout_s=0.5)
        assert status & STATUS_WATCHDOG
        with pytest.raises(PlatformLinkError, match="watchdog"):
            cl.step(1, home)
        assert emu.steps_taken == 1
        st = cl.reset()
        assert st.step == 0 and st.status == 0 and not emu.watchdog
        assert cl.step(0, home).step == 1


def test_version_mismatch_is_refused_both_ways():
    with PlatformEmulator(make_plant()) as emu:
        raw = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        raw.settimeout(1.0)
        raw.sendto(pack(1, 1, 0, *([0.0] * 18), version=PROTOCOL_VERSION + 1), ("127.0.0.1", emu.port))
        data = raw.recv(2048)
        _, mtype, _, _, body = unpack(data)
        assert mtype == MSG_ERROR and b"version 2" in body[1]
        raw.close()
    # a controller speaking another version: the client says so
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    with PlatformLinkClient(PlatformLinkParams(host="127.0.0.1", port=srv.getsockname()[1])) as cl:
        cl.heartbeat()
        _, addr = srv.recvfrom(2048)
        srv.sendto(pack(MSG_STATE, 1, 1, *([0.0] * 18), 0, 0, version=7), addr)
        time.sleep(0.05)
        with pytest.raises(PlatformLinkError, match="version 7"):
            cl.poll()
    srv.close()


def test_sequence_and_stale_state_checks():
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    with PlatformLinkClient(PlatformLinkParams(host="127.0.0.1", port=srv.getsockname()[1],
                                               reply_timeout_s=0.2)) as cl:
        cl.heartbeat()
        _, addr = srv.recvfrom(2048)
        # controller packets 1, 2, 4, 3 (3 late), 6 (5 lost); steps 1, 2, 4, 3, 7
        for seq, step in ((1, 1), (2, 2), (4, 4), (3, 3), (6, 7)):
            srv.sendto(pack(MSG_STATE, seq, step, *([0.0] * 18), 0, 0), addr)
        srv.sendto(b"garbage", addr)
        time.sleep(0.05)
        st = cl.read_state(timeout_s=0.2)
        assert st.step == 7                              # newest, not the late one
        p = cl.stats.packets
        assert (p.received, p.lost, p.out_of_order) == (5, 1, 1)
        assert cl.stats.foreign == 1
        srv.sendto(pack(MSG_STATE, 7, 3, *([0.0] * 18), 0, 0), addr)      # stale step
        srv.sendto(pack(MSG_STATE, 8, 8, *([0.0] * 18), 0, 0), addr)
        time.sleep(0.05)
        assert cl._wait_state(8, time.monotonic() + 0.2).step == 8
        assert cl.stats.stale_states >= 1
    srv.close()


def test_realtime_mode_streams_states_on_its_own_clock():
    with PlatformEmulator(make_plant(), mode="realtime") as emu, client_for(emu) as cl:
        home = np.array(emu.plant.kinematics.home_lengths)
        target = home + 2e-4
        cl.send_command(0, target)
        first = cl.read_state(timeout_s=0.5)
        t0 = time.monotonic()
        last = first
        while time.monotonic() - t0 < 0.4:
            cl.send_command(last.step, target)
            last = cl.read_state(timeout_s=0.5)
        assert last.step - first.step > 100                 # ~1 kHz (loose: shared machine)
        assert np.all(np.abs(last.length - target) < 1e-4)   # legs went to the commanded lengths


def test_a_realtime_reset_answered_while_the_client_was_busy_is_not_missed():
    """A realtime controller answers RESET with the STATE of step 0 and streams steps 1, 2, ... on its own clock.
    A client that reads only after several of them came (a loaded machine) still finds the answer to its RESET,
    where it used to see only the newest STATE and time out waiting for step 0."""
    with PlatformEmulator(make_plant(), mode="realtime") as emu, client_for(emu) as cl:
        cl.reset(timeout_s=1.0)                       # the stream runs from here on
        for _ in range(3):
            cl.latest = None
            cl._send(MSG_RESET, 0)
            time.sleep(0.03)                          # busy elsewhere: about 30 STATEs of the stream queue up
            st = cl._wait_state(0, time.monotonic() + 0.5)
            assert st is not None and st.step == 0, st
            assert cl.latest.step > 5, cl.latest.step  # the stream had gone on (the case this is about)
            np.testing.assert_allclose(st.length, emu.plant.kinematics.home_lengths, atol=1e-6)
