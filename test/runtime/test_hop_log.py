"""The hop log (rths_ros.runtime.hop_log) and the step split into its segments (rths_ros.analysis.hops), on logs
with known times: each segment is the difference its definition names, a step missing at one end leaves that step
out, and the round trip is the sum of its seven parts."""
from __future__ import annotations

import numpy as np
import pytest

from rths_ros.analysis import hops
from rths_ros.app import scenario as scn
from rths_ros.runtime import hop_log


class _Pub:
    def __init__(self):
        self.sent = []

    def publish(self, msg):
        self.sent.append(msg.step)

    def get_subscription_count(self):
        return 3


class _Msg:
    def __init__(self, step):
        self.step = step


def test_off_by_default_and_free():
    s = scn.load("contact_1d")
    assert s.recording.hop_log is False
    log = hop_log.for_node(s)
    pub = _Pub()
    assert log.publisher("/rths/leg_command", pub) is pub and log.arrival("/rths/leg_command") is None
    assert log.save("/nonexistent", "x") is None


def test_a_logged_publisher_logs_then_publishes_and_passes_the_rest_through(tmp_path):
    log = hop_log.for_node(scn.load("contact_1d", ["recording.hop_log=true", "loop.duration_s=0.01"]))
    pub = _Pub()
    lp = log.publisher("/rths/leg_command", pub)
    add = log.arrival("/rths/leg_state")
    for k in range(5):
        lp.publish(_Msg(k))
        add(k, 1000 + k)
    assert pub.sent == [0, 1, 2, 3, 4] and lp.get_subscription_count() == 3
    path = log.save(tmp_path, "stewart_platform")
    back = hop_log.load(tmp_path)["stewart_platform"]
    steps, t = back["pub:/rths/leg_command"]
    assert steps.tolist() == [0, 1, 2, 3, 4] and np.all(np.diff(t) >= 0)
    assert back["sub:/rths/leg_state"][1].tolist() == [1000, 1001, 1002, 1003, 1004]
    assert path.name == "stewart_platform.hops.npz"


def test_a_full_log_keeps_its_first_entries():
    log = hop_log.HopLog(3)
    add = log.arrival("/t")
    for k in range(5):
        add(k, k)
    s = log.series["sub:/t"]
    assert s.n == 3 and s.steps[:s.n].tolist() == [0, 1, 2]


def _write(tmp_path, entries):
    """entries: {node: {key: {step: t_ns}}} as hop logs."""
    for node, keys in entries.items():
        log = hop_log.HopLog(100)
        for key, by_step in keys.items():
            series = log._series(key)
            for k, t in by_step.items():
                series.add(k, t)
        log.save(tmp_path, node)


def test_segments_are_the_differences_they_name_and_add_up_to_the_round_trip(tmp_path):
    us = 1000
    plant, ft, num, plat = {}, {}, {}, {}
    for k in range(3):
        t0 = 1_000_000 * k
        plant.setdefault("pub:/rths/raw_wrench", {})[k] = t0
        ft.setdefault("sub:/rths/raw_wrench", {})[k] = t0 + 100 * us
        ft.setdefault("pub:/rths/interface_force", {})[k] = t0 + 115 * us
        num.setdefault("sub:/rths/interface_force", {})[k] = t0 + 230 * us
        num.setdefault("pub:/rths/interface_command", {})[k + 1] = t0 + 255 * us
        plat.setdefault("sub:/rths/interface_command", {})[k + 1] = t0 + 370 * us
        plat.setdefault("pub:/rths/leg_command", {})[k + 1] = t0 + 395 * us
        if k != 1:                                  # step 1's command never arrived at the plant
            plant.setdefault("sub:/rths/leg_command", {})[k + 1] = t0 + 510 * us
    _write(tmp_path, {"sim_plant": plant, "ft_sensor": ft, "numerical_substructure": num,
                      "stewart_platform": plat})
    seg = hops.segments(tmp_path)
    want = {"raw_wrench transport": 100, "ft_sensor work": 15, "interface_force transport": 115,
            "numerical work": 25, "interface_command transport": 115, "platform work": 25,
            "leg_command transport": 115, "step round trip": 510}
    for name, v in want.items():
        n = 2 if name in ("leg_command transport", "step round trip") else 3
        assert seg[name].tolist() == pytest.approx([v * 1e-6] * n), name
    parts = sum(want[n] for n in want if n != "step round trip")
    assert parts == want["step round trip"]
    summ = hops.summary(seg, dt_s=0.0005)
    assert summ["step round trip"]["over_dt"] == 1.0 and summ["ft_sensor work"]["steps"] == 3
    assert "| numerical work | 3 | 0.025 |" in hops.markdown(summ)
    png = hops.plot(seg, tmp_path / "hops.png", "t", 0.0005)
    assert png.stat().st_size > 10_000
