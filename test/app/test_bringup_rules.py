"""Rules a lab's rig bring-up relies on, at scenario load and at the end of a run: one physical quantity in one
place (or a mismatch stated as deliberate), node sets that can run, and a run with a dead node never reported as
completed."""
import json

import pytest

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import record_run_end, write_events
from rths_ros.params import ParameterError


@pytest.mark.parametrize("key, other", [("ft_sensor.m_exp_kg=0.5", "sim_plant.specimen.m_exp_kg"),
                                        ("numerical.contact_1d.k_exp_n_per_m=8000", "sim_plant.specimen.k_exp_n_per_m"),
                                        ("sim_plant.specimen.h0_m=0.02", "numerical.contact_1d.h0_m")])
def test_a_mismatched_physical_quantity_is_refused_naming_both_keys(key, other):
    with pytest.raises(ParameterError) as e:
        scn.load("contact_1d", [key])
    msg = str(e.value)
    assert key.split("=")[0] in msg and other in msg and "deliberate_mismatches" in msg, msg


def test_a_deliberate_mismatch_is_accepted_when_stated():
    s = scn.load("contact_1d", ["ft_sensor.m_exp_kg=0.5", "deliberate_mismatches=[ft_sensor.m_exp_kg]"])
    assert s.ft_sensor.m_exp_kg == 0.5 and s.deliberate_mismatches == ("ft_sensor.m_exp_kg",)
    s = scn.load("contact_1d", ["ft_sensor.m_exp_kg=0.5", "sim_plant.specimen.m_exp_kg=0.5",
                                "numerical.contact_1d.m_exp_kg=0.5"])     # all three changed together: fine
    assert s.sim_plant.specimen.m_exp_kg == 0.5


def test_a_deliberate_mismatch_must_name_a_known_quantity():
    with pytest.raises(ParameterError, match="deliberate_mismatches: 'loop.dt_s' is not allowed"):
        scn.load("contact_1d", ["deliberate_mismatches=[loop.dt_s]"])


def test_the_rule_applies_only_where_the_quantity_is_used():
    # the gait test's foot is no 1-D contact specimen: the contact test's sections are not in use there
    s = scn.load("gait_vpp", ["ft_sensor.m_exp_kg=1.2"])
    assert s.ft_sensor.m_exp_kg == 1.2


def test_every_shipped_scenario_states_each_quantity_once():
    names = scn.scenario_names()
    assert len(names) > 10
    for name in names:
        scn.load(name)


RC = ["ros2_control.emulate=true", "standard_interfaces.wrench_input_topic=/ft_sensor/wrench"]


def test_a_plant_node_in_the_node_list_is_replaced_by_the_chosen_plant_and_its_emulator():
    nodes = "nodes=[recorder, supervisor, numerical_substructure, stewart_platform, ft_sensor, ros2_control_plant]"
    s = scn.load("contact_1d", [nodes] + RC, "realtime", "ros2_control")
    assert {"ros2_control_plant", "ros2_control_emulator"} <= set(s.run_nodes) and "sim_plant" not in s.run_nodes


@pytest.mark.parametrize("nodes, plant, words", [
    ("[supervisor, ft_sensor, hardware_plant]", "ros2_control", ["'hardware_plant' is not allowed with plant = "
                                                                 "'ros2_control'"]),
    ("[supervisor, sim_plant, hardware_plant]", "sim", ["2 plant nodes"]),
    ("[supervisor, sim_plant, ros2_control_emulator]", "ros2_control", ["'ros2_control_emulator' is not allowed",
                                                                       "ros2_control.emulate: true"]),
    ("[supervisor, sim_plant, sim_plant]", "sim", ["names a node twice"]),
])
def test_a_node_set_that_cannot_run_is_refused(nodes, plant, words):
    mode = "realtime" if plant == "ros2_control" else None
    with pytest.raises(ParameterError) as e:
        scn.load("contact_1d", [f"nodes={nodes}"] + (RC if plant == "ros2_control" else []), mode, plant)
    for w in words:
        assert w in str(e.value), str(e.value)


def _events(out, types):
    write_events(out, {"status": None, "events": [{"type": t, "source": "sim_plant", "step": 0, "trial": 0,
                                                    "reason": ""} for t in types]})


def test_a_node_that_died_makes_the_run_failed_even_if_the_plant_finished_the_trial(tmp_path):
    """The platform node died at START; the plant held its pose and reported DONE for the last trial: the run is
    failed, never completed, and the dead node is the first fault."""
    _events(tmp_path, ["START", "TRIAL_BEGIN", "DONE"])
    status, fault, _ = record_run_end(tmp_path, {"sim_plant": 0, "stewart_platform": 1, "supervisor": 0}, 1,
                                      failure="node stewart_platform exited with code 1")
    assert status == "failed" and fault["node"] == "stewart_platform", (status, fault)
    assert json.loads((tmp_path / "events.json").read_text())["status"] == "failed"


def test_a_killed_node_without_an_abort_makes_the_run_failed(tmp_path):
    _events(tmp_path, ["START", "TRIAL_BEGIN", "DONE"])
    status, fault, _ = record_run_end(tmp_path, {"sim_plant": 0, "recorder": -9}, 1)
    assert status == "failed" and "killed by SIGKILL" in fault["reason"]


def test_a_node_the_runner_stopped_after_an_abort_is_never_the_first_fault(tmp_path):
    """The supervisor aborted the start (no node ready); the recorder never heard it, and the runner killed it
    after the drain: the supervisor's abort stays the first fault, the run aborted."""
    write_events(tmp_path, {"status": None, "events": [
        {"type": "ABORT", "source": "supervisor", "step": 0, "trial": 0,
         "reason": "nodes not ready after 60 s: ft_sensor, recorder"}]})
    codes = {"numerical_substructure": 3, "recorder": -9, "sim_plant": -15}
    status, fault, _ = record_run_end(tmp_path, codes, 1, failure="node numerical_substructure exited with code 3",
                                      stopped={"recorder", "sim_plant"})
    assert status == "aborted" and fault["node"] == "supervisor", (status, fault)
    assert "not ready" in fault["reason"]
    # the same kill, not stopped by the runner, is the fault (a node that died on its own)
    status, fault, _ = record_run_end(tmp_path, codes, 1, failure="node numerical_substructure exited with code 3")
    assert fault["node"] == "recorder" and "SIGKILL" in fault["reason"], (status, fault)


def test_a_clean_run_stays_completed(tmp_path):
    _events(tmp_path, ["START", "TRIAL_BEGIN", "DONE"])
    status, fault, _ = record_run_end(tmp_path, {"sim_plant": 0, "recorder": 0, "supervisor": 0}, 1)
    assert status == "completed" and fault is None


def test_an_uncaught_exception_in_a_node_aborts_the_run_with_its_text(tmp_path):
    """node_main's handler: the crashing process sends one ABORT naming itself and the error (rclpy, no graph)."""
    import rclpy

    from rths_ros.msg import TestEvent
    from rths_ros.runner import DomainLease
    from rths_ros.runtime.node import RthsNode, abort_on_crash
    s = scn.load("contact_1d")
    lease = DomainLease()
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=lease.domain_id)
    node = RthsNode(s, None, context=ctx)
    heard = []
    listener = rclpy.create_node("listener", context=ctx)
    from rths_ros.runtime.qos import events_qos
    listener.create_subscription(TestEvent, "/rths/events", heard.append, events_qos())
    try:
        from rths_ros.core.platform.stewart import KinematicsError
        abort_on_crash([node], "stewart_platform", KinematicsError("forward kinematics did not converge"))
        ex = rclpy.executors.SingleThreadedExecutor(context=ctx)
        ex.add_node(listener)
        import time
        t_end = time.monotonic() + 5.0
        while not heard and time.monotonic() < t_end:
            ex.spin_once(timeout_sec=0.05)
        assert heard and heard[0].type == TestEvent.ABORT, heard
        assert heard[0].reason == "stewart_platform: uncaught KinematicsError: forward kinematics did not converge"
        # a node that already ended the run sends nothing more
        node.finish(0)
        n_before = len(heard)
        abort_on_crash([node], "stewart_platform", RuntimeError("late"))
        assert len(heard) == n_before
    finally:
        node.destroy_node()
        listener.destroy_node()
        rclpy.shutdown(context=ctx)
        lease.close()
