"""The plant is a managed (lifecycle) node: with autostart off, the run waits until a lifecycle
manager configures and activates it over the standard lifecycle services."""
from __future__ import annotations

import os
import threading
import time

import rclpy
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.executors import SingleThreadedExecutor

from rths_ros.app import scenario as scn
from rths_ros.bag import read_bag
from rths_ros.runner import DomainLease, run_scenario


def _call(executor, client, req, timeout=60.0):
    assert client.wait_for_service(timeout_sec=timeout), client.srv_name
    fut = client.call_async(req)
    executor.spin_until_future_complete(fut, timeout_sec=timeout)
    assert fut.done(), f"no answer from {client.srv_name}"
    return fut.result()


def test_plant_waits_for_a_lifecycle_manager(tmp_path):
    lease = DomainLease()          # reserve a free domain and hand it to the run (no other run can take it)
    domain = lease.domain_id
    s = scn.load("contact_1d", ["loop.duration_s=0.5", "realtime.lifecycle_autostart=false"])
    result = {}
    t = threading.Thread(target=lambda: result.update(r=run_scenario(s, tmp_path / "run", progress=False,
                                                                     lease=lease)))
    t.start()
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("lifecycle_manager", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    try:
        get = node.create_client(GetState, "/sim_plant/get_state")
        change = node.create_client(ChangeState, "/sim_plant/change_state")
        assert _call(ex, get, GetState.Request()).current_state.label == "unconfigured"
        time.sleep(1.0)
        assert "r" not in result                   # nothing runs while the plant is not active
        for tid in (Transition.TRANSITION_CONFIGURE, Transition.TRANSITION_ACTIVATE):
            req = ChangeState.Request()
            req.transition.id = tid
            assert _call(ex, change, req).success
        assert _call(ex, get, GetState.Request()).current_state.label == "active"
        t.join(300)
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    assert result["r"].code == 0, result["r"].message
    cmds = read_bag(tmp_path / "run" / "bag")["/rths/leg_command"]
    assert len(cmds) >= s.steps
