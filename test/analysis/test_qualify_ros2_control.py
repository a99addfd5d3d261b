"""`rths qualify SCENARIO --ros2-control`: the stepped sine of the transfer system on a ros2_control rig (here its
emulator, in process: rths_ros.runtime.ros2_control_rig), leg commands from the demand by the platform's inverse
kinematics, the legs read back from the joint states; the same process models as on the twin.  The emulated rig
is the twin behind the rig's topics, so its FRF must be the twin's at low frequencies, with the topics' latency on
top."""
from __future__ import annotations

import csv

import numpy as np
import yaml

#: 500 Hz: a Python rig client and the emulator share one interpreter on a possibly busy two-core machine
DT2 = ["loop.dt_s=0.002", "numerical.contact_1d.dt_s=0.002", "passivity.dt_s=0.002",
       "platform.commander.coupling.dt_s=0.002"]
TEST = ["--freqs", "1,2,5", "--amplitudes", "0.0005", "--random-s", "2"]


def _sets(items):
    return [a for x in items for a in ("--set", x)]


def _frf(out):
    rows = list(csv.DictReader((out / "frf.csv").open()))
    return (np.array([float(r["frequency_hz"]) for r in rows]), np.array([float(r["gain"]) for r in rows]),
            np.array([float(r["phase_deg"]) for r in rows]))


def test_qualify_over_ros2_control_measures_the_twins_transfer_system_plus_the_rigs_latency(tmp_path, rths_cli):
    rig, twin = tmp_path / "rig", tmp_path / "twin"
    p = rths_cli("qualify", "contact_1d", "--ros2-control", *_sets(["ros2_control.emulate=true"] + DT2), *TEST,
                 "--out", str(rig), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "on the emulated ros2_control rig" in p.stdout and "refused_commands 0" in p.stdout, p.stdout
    p2 = rths_cli("qualify", "contact_1d", *_sets(DT2), *TEST, "--no-tune", "--out", str(twin), timeout=600)
    assert p2.returncode == 0, p2.stdout + p2.stderr
    f_r, g_r, ph_r = _frf(rig)
    f_t, g_t, ph_t = _frf(twin)
    assert np.array_equal(f_r, f_t) and f_r.size == 3
    assert np.all(np.abs(g_r / g_t - 1) < 0.1), (g_r, g_t)            # the same legs (PPI1: ~50 ms lag)
    lag_deg = ph_t - ph_r                                               # the rig's topics add latency, never lead
    assert np.all(lag_deg > -3.0) and np.all(lag_deg < 20.0), (ph_r, ph_t)
    doc = yaml.safe_load((rig / "models.yaml").read_text())
    assert doc["measured_on"] == "emulated ros2_control rig"
    assert set(doc["free_fits"]) == {"G1", "G2", "G1D", "G2D"}
    # the fitted first-order lag is the position loop's ~50 ms (K_Pp = 20 1/s), not noise
    assert 0.03 < doc["unit_gain_fits"]["G1"]["tau_p_s"] < 0.09, doc["unit_gain_fits"]["G1"]
    assert "loop" not in doc                                            # no in-loop tuning on the rig
    # the session went into a bag, as it was on the wire; qualifying from it gives the same FRF without the rig
    again = tmp_path / "again"
    p3 = rths_cli("qualify", "contact_1d", "--bag", str(rig / "rig_bag"), *_sets(DT2), *TEST, "--out", str(again),
                  timeout=600)
    assert p3.returncode == 0, p3.stdout + p3.stderr
    f_b, g_b, ph_b = _frf(again)
    assert np.array_equal(f_b, f_r) and np.array_equal(g_b, g_r) and np.array_equal(ph_b, ph_r), (g_b, g_r)
    # other settings than the recorded session's are refused, naming the bag
    p4 = rths_cli("qualify", "contact_1d", "--bag", str(rig / "rig_bag"), *_sets(DT2), "--freqs", "1,2",
                  "--amplitudes", "0.0005", "--random-s", "2", "--out", str(tmp_path / "other"), timeout=600)
    assert p4.returncode != 0 and "differs from the recorded one" in p4.stderr + p4.stdout, p4.stdout + p4.stderr


def test_qualify_over_ros2_control_refuses_a_scenario_the_rig_cannot_run(rths_cli, tmp_path):
    p = rths_cli("qualify", "benchmark_building", "--ros2-control", "--set", "ros2_control.emulate=true",
                 "--out", str(tmp_path / "q"))
    assert p.returncode == 2 and "ros2_control" in p.stderr, p.stderr
