"""`rths identify --ros2-control`: the closed-loop leg identification with the multisine added to the position
command of the emulated ros2_control rig (realtime, over DDS), recorded as a bag, and `rths identify --bag` on that
bag: the fitted k w_c and w_c within 5 % of the emulator's true legs (the scenario's sim_plant.legs) both ways."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rths_ros.app import scenario as scn
from rths_ros.bag import read_bag
from rths_ros.core.sysid.legs import SysIdParams, estimate_frf, load_plant_config, segmented_multisine

RIG = ["--set", "ros2_control.emulate=true", "--set", "ros2_control.state_timeout_s=2.0"]
# short enough for a test: leg 2 alone, 25 lines (2 Hz spacing up to 50 Hz) in 5 bands of 3 s (5 periods averaged)
SHORT = ["--legs", "2", "--spacing-hz", "2", "--f-max-hz", "50", "--bands", "5", "--band-s", "3",
         "--amplitude-m", "0.0002"]


def _errors(path, legs=(2,)):
    true = scn.load("contact_1d").sim_plant.legs
    got = load_plant_config(path)
    return {leg: (got.gain_num[leg - 1] / true.gain_num[leg - 1] - 1.0,
                  got.omega_c_rad_per_s[leg - 1] / true.omega_c_rad_per_s[leg - 1] - 1.0) for leg in legs}


def test_identification_over_ros2_control_and_from_its_bag_recovers_the_legs_within_5_percent(tmp_path, rths_cli):
    out = tmp_path / "legs.yaml"
    p = rths_cli("identify", "contact_1d", "--ros2-control", *RIG, *SHORT, "--out", str(out), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    print(p.stdout)
    live = _errors(out)
    assert all(abs(e) < 0.05 for e in live[2]), live
    bag = tmp_path / "legs_bag"
    assert (bag / "metadata.yaml").exists() and f"--bag {bag}" in p.stdout
    # what the bag holds: the commands as sent, the joint states received (the rig's values, named, in the order of
    # joint_names), the excitation record
    topics = read_bag(bag)
    meta = json.loads(topics["/rths/identify/excitation"][0][1].data)
    assert [b["leg"] for b in meta["bands"]] == [2] * 5 and meta["params"]["spacing_hz"] == 2.0
    assert len(topics["/forward_position_controller/commands"]) == 5 * 3000
    states = topics["/joint_states"]
    assert len(states) == 5 * 3000 and list(states[0][1].name) == [f"leg_{i}" for i in range(1, 7)]
    assert "/rths/scenario" in topics
    # the bag route: the same estimate from the recorded data alone
    from_bag = tmp_path / "from_bag.yaml"
    q = rths_cli("identify", "contact_1d", "--bag", str(tmp_path), "--out", str(from_bag), timeout=120)
    assert q.returncode == 0, q.stdout + q.stderr
    print(q.stdout)
    assert _errors(from_bag) == live


def test_an_excitation_faster_than_the_legs_and_excitation_options_on_a_bag_are_refused(tmp_path, rths_cli):
    p = rths_cli("identify", "contact_1d", "--ros2-control", *RIG, "--amplitude-m", "0.002", "--out",
                 str(tmp_path / "x.yaml"), timeout=60)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "--amplitude-m: 0.002 is not allowed; band 2 ([10.5, 20] Hz) would move the leg at 0.415 m/s" in p.stderr, \
        p.stderr
    assert "leg speed limit 0.25 m/s" in p.stderr
    q = rths_cli("identify", "contact_1d", "--bag", str(tmp_path), "--band-s", "4", timeout=60)
    assert q.returncode == 2 and "--band-s: not allowed with --bag" in q.stderr, q.stderr
    r = rths_cli("identify", "contact_1d", "--bag", str(tmp_path), timeout=60)
    assert r.returncode == 2 and "no rosbag2 with /rths/identify/excitation" in r.stderr, r.stderr


def test_periods_left_out_as_nan_are_not_averaged():
    """A period a stall disturbed is returned as NaN by the rig; the estimate is that of the other periods."""
    p = SysIdParams(f_max_hz=20.0, spacing_hz=2.0, n_bands=2, band_duration_s=3.0)
    band = segmented_multisine(p, 1e-3)[0]
    r = band.signal
    rng = np.random.default_rng(1)
    u = r + 0.1 * rng.standard_normal(len(r))
    y = np.convolve(u, [0.5, 0.3, 0.1], mode="full")[:len(r)] + 0.01 * rng.standard_normal(len(r))
    m = len(band.period)
    ref = estimate_frf(np.delete(r, np.s_[2 * m:3 * m]), np.delete(u, np.s_[2 * m:3 * m]),
                       np.delete(y, np.s_[2 * m:3 * m]),
                       type(band)(band.freq_hz, band.bins, band.period, band.n_periods - 1), 1)
    u_nan = u.copy()
    u_nan[2 * m + 5] = np.nan
    got = estimate_frf(r, u_nan, y, band, 1)
    assert got.n_periods == 4 and np.allclose(got.frf, ref.frf, rtol=1e-12) and np.allclose(got.coherence,
                                                                                           ref.coherence)
    full = estimate_frf(r, u, y, band, 1)
    assert not np.allclose(full.frf, got.frf, rtol=1e-9)
    y_nan = y.copy()
    y_nan[m:] = np.nan                            # no two periods left: nothing estimated
    with np.errstate(invalid="ignore"):
        none = estimate_frf(r, u, y_nan, band, 1)
    assert np.isnan(none.frf).all() and none.n_periods == 0


@pytest.mark.parametrize("missing", ["--legs", "--fit-delay"])
def test_the_bag_route_takes_legs_and_the_delay_fit(missing):
    """(--legs and --fit-delay select what is fitted from the recorded data; the parser accepts them with --bag)"""
    from rths_ros.cli import build_parser
    args = build_parser().parse_args(["identify", "contact_1d", "--bag", "x", missing] + (["2"] if missing ==
                                                                                          "--legs" else []))
    assert args.bag == "x"
