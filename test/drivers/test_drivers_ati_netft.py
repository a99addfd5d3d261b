"""ATI Net F/T RDT client against the protocol emulator (localhost UDP) and the record format."""
from __future__ import annotations

import struct
import time

import numpy as np
import pytest

from rths_ros.drivers.ati_netft import (
    CMD_SET_BIAS,
    CMD_START_REALTIME,
    CMD_STOP,
    RDT_PORT,
    NetFtClient,
    NetFtParams,
    pack_request,
    unpack_records,
)
from rths_ros.drivers.ati_netft_emulator import NetFtEmulator
from rths_ros.drivers.ft_sensor_base import SensorError, SensorTimeout, SequenceTracker

BASE = np.array([1.5, -2.25, 10.0, 0.125, -0.5, 0.03125])
SLOPE = np.array([0.0, 0.0, 1e-3, 0.0, 1e-4, 0.0])


def source(ft_seq: int) -> np.ndarray:
    return BASE + SLOPE * ft_seq


def client_for(emu: NetFtEmulator, **kw) -> NetFtClient:
    return NetFtClient(NetFtParams(host="127.0.0.1", port=emu.port, **kw))


def drain(client: NetFtClient, max_s: float = 10.0) -> list:
    """Read until the stream has been silent for 0.2 s; returns the samples read."""
    out = []
    t_end = time.monotonic() + max_s
    while time.monotonic() < t_end:
        try:
            out.append(client.read_latest(timeout_s=0.2))
        except SensorTimeout:
            break
    return out


# ------------------------------------------------------------------------------------------ format

def test_request_and_record_layout_follow_the_rdt_spec():
    assert RDT_PORT == 49152
    assert pack_request(CMD_START_REALTIME, 0) == bytes.fromhex("1234 0002 00000000")
    assert pack_request(CMD_STOP) == bytes.fromhex("1234 0000 00000000")
    assert pack_request(CMD_SET_BIAS, 5) == bytes.fromhex("1234 0042 00000005")
    raw = struct.pack(">III6i", 7, 123456, 0, 1_500_000, -2_250_000, 10_000_000, 125_000, -500_000, 31_250)
    assert len(raw) == 36
    (rec,) = unpack_records(raw)
    assert rec[:3] == (7, 123456, 0)
    assert np.allclose(np.array(rec[3:]) / 1e6, BASE, rtol=0, atol=0)
    assert len(unpack_records(raw * 3)) == 3
    with pytest.raises(SensorError, match="36-byte"):
        unpack_records(raw[:35])


def test_sequence_tracker_wraps_and_classifies():
    tr = SequenceTracker()
    seqs = [2**32 - 3, 2**32 - 2, 0, 2, 1, 1, 2**32 - 1, 5]
    kinds = [tr.update(s) for s in seqs]
    # 2**32-1 skipped then arrives late; 1 skipped then late; 3, 4 never arrive; 1 twice = duplicate
    assert kinds == [tr.NEW, tr.NEW, tr.NEW, tr.NEW, tr.LATE, tr.DUPLICATE, tr.LATE, tr.NEW]
    assert (tr.stats.lost, tr.stats.out_of_order, tr.stats.duplicates) == (2, 2, 1)
    assert tr.newest == 5
    tr.reset(first=1)                  # RDT streams start at 1: a lost head is counted too
    tr.clear_statistics()
    assert tr.update(4) == tr.NEW and tr.stats.lost == 3
    assert tr.update(2) == tr.LATE and (tr.stats.lost, tr.stats.out_of_order) == (2, 1)


# ------------------------------------------------------------------------------------------ round trip

@pytest.mark.parametrize("cpf,cpt", [(1.0e6, 1.0e6), (5000.0, 125000.0)])
def test_round_trip_known_wrench_and_scaling(cpf, cpt):
    with NetFtEmulator(source, counts_per_force=cpf, counts_per_torque=cpt, rate_hz=2000.0) as emu, \
            client_for(emu, counts_per_force=cpf, counts_per_torque=cpt) as cl:
        cl.start()
        samples = [cl.read_latest(timeout_s=1.0) for _ in range(50)]
        ft_seq = cl.ft_sequence
        last = samples[-1]
        tol = np.array([0.5 / cpf] * 3 + [0.5 / cpt] * 3) + 1e-12   # rounding to whole counts
        assert np.all(np.abs(last.wrench - source(ft_seq)) <= tol)
        seqs = [s.sequence for s in samples]
        assert seqs[0] >= 1 and all(b > a for a, b in zip(seqs, seqs[1:]))   # never stale, never repeated
        assert all(s.status == 0 for s in samples)
        assert all(b.timestamp >= a.timestamp for a, b in zip(samples, samples[1:]))
        assert cl.statistics().lost == 0 and cl.statistics().out_of_order == 0


def test_saturated_channel_sets_status_bit():
    with NetFtEmulator(lambda k: [3000.0, 0, 0, 0, 0, 0], counts_per_force=1e6, rate_hz=1000.0) as emu, \
            client_for(emu) as cl:
        cl.start()
        s = cl.read_latest(timeout_s=1.0)
        assert s.status & 0x1
        assert s.wrench[0] == pytest.approx((2**31 - 1) / 1e6)


# ------------------------------------------------------------------------------------------ faults

@pytest.mark.parametrize("mode,per_packet", [("realtime", 1), ("buffered", 4)])
def test_lost_and_out_of_order_counts_match_the_emulated_faults(mode, per_packet):
    n = 2000
    with NetFtEmulator(source, rate_hz=4000.0, drop_fraction=0.10, reorder_fraction=0.05,
                       buffer_records=per_packet, seed=3) as emu, \
            client_for(emu, mode=mode, sample_count=n) as cl:
        cl.start()
        samples = drain(cl)
        st = cl.statistics()
        newest = cl.tracker.newest
        assert emu.sent_records == n and not emu.streaming
        dropped = len(emu.dropped)
        # ~10 % of the packets dropped (binomial, 4 sigma)
        n_pk = n // per_packet
        assert abs(dropped / per_packet - 0.1 * n_pk) <= 4 * np.sqrt(n_pk * 0.09)
        assert len(emu.reordered) > 0
        assert st.received == n - dropped
        assert st.lost == sum(1 for s in emu.dropped if s < newest)   # trailing drops are invisible
        assert st.out_of_order == len(emu.reordered)
        assert st.duplicates == 0
        seqs = [s.sequence for s in samples]
        assert all(b > a for a, b in zip(seqs, seqs[1:]))             # late records never returned


def test_stop_streaming_then_timeout():
    with NetFtEmulator(source, rate_hz=2000.0) as emu, client_for(emu) as cl:
        cl.start()
        for _ in range(20):
            cl.read_latest(timeout_s=1.0)
        assert emu.streaming
        cl.stop()
        t0 = time.monotonic()
        while emu.streaming and time.monotonic() - t0 < 2.0:
            time.sleep(0.01)
        assert not emu.streaming and emu.requests[-1] == CMD_STOP
        sent = emu.sent_records
        drain(cl)                                   # records still in flight
        time.sleep(0.05)
        assert emu.sent_records == sent             # nothing sent after the stop
        with pytest.raises(SensorTimeout, match=f"127.0.0.1:{emu.port}.*stopped"):
            cl.read_latest(timeout_s=0.05)
        assert cl.statistics().timeouts >= 1
        # a new start restarts the rdt_sequence at 1
        cl.start()
        assert cl.read_latest(timeout_s=1.0).sequence <= 5


def test_software_bias_zeroes_the_reading():
    with NetFtEmulator(lambda k: BASE, rate_hz=1000.0) as emu, client_for(emu) as cl:
        cl.start()
        assert np.allclose(cl.read_latest(timeout_s=1.0).wrench, BASE, atol=1e-6)
        cl.set_software_bias()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.0:
            if np.allclose(cl.read_latest(timeout_s=1.0).wrench, 0.0, atol=1e-6):
                break
        assert np.allclose(cl.read_latest(timeout_s=1.0).wrench, 0.0, atol=1e-6)


def test_no_sensor_raises_a_clear_error():
    with NetFtEmulator(source) as emu:
        port = emu.port
    with NetFtClient(NetFtParams(host="127.0.0.1", port=port)) as cl:   # nothing listens any more
        cl.start()
        with pytest.raises(SensorError, match=f"127.0.0.1:{port}"):
            cl.read_latest(timeout_s=0.1)
