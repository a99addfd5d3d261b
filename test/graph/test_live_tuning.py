"""Gains tuned while a realtime run goes on (rths_ros.runtime.tuning): the passivity controller's alpha bound and the
ILC's beta are set through the nodes' parameter services (what `ros2 param set` calls) in the first trial; each
takes effect at a step boundary, the alpha bound ramped, beta at the end of the trial; both changes are TUNED events
in the bag, in events.json and in the analysis; a read-only parameter is refused naming the tunable ones; and
`ros2 param describe` shows a tunable parameter as writable with its range."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rths_ros.app import scenario as scn
from rths_ros.app.run_status import read_events
from rths_ros.bag import read_bag
from rths_ros.runner import DomainLease, run_scenario, wait_until_running

OVERRIDES = ["ilc.enabled=true", "ilc.f_q_cut_hz=2", "loop.trials=3", "loop.duration_s=3.0", "loop.pause_s=0.2",
             "passivity.enabled=true"]


def _client(domain: int, calls: dict, results: dict, out: Path) -> None:
    """In its own rclpy context on the run's domain: once the run is going, set the gains and try a read-only key."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.parameter_client import AsyncParameterClient
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("tuning_test_client", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    try:
        assert wait_until_running(out, 120.0)
        for target, params in calls.items():
            cli = AsyncParameterClient(node, target)
            assert cli.wait_for_services(timeout_sec=20.0), target
            future = cli.set_parameters([Parameter(k, value=v) for k, v in params])
            t0 = time.monotonic()
            while not future.done() and time.monotonic() - t0 < 20.0:
                ex.spin_once(timeout_sec=0.05)
            results[target] = [(r.successful, r.reason) for r in future.result().results]
    except Exception as exc:       # reported by the test
        results["error"] = repr(exc)
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_gains_tuned_during_a_realtime_run_take_effect_at_step_boundaries_and_are_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    s = scn.load("contact_1d", OVERRIDES, "realtime")
    out = tmp_path / "run"
    lease = DomainLease()
    results: dict = {}
    calls = {"/passivity_controller": [("passivity.alpha_max_kg_per_s", 5000.0), ("loop.dt_s", 0.002)],
             "/ilc_learner": [("ilc.beta_per_s", 20.0)]}
    # rclpy's set_parameters sets one parameter at a time: the alpha bound is taken, loop.dt_s refused
    client = threading.Thread(target=_client, args=(lease.domain_id, calls, results, out))
    env = dict(os.environ, ROS_DOMAIN_ID=str(lease.domain_id))
    describe: dict = {}
    ros2 = Path(sys.prefix) / "bin" / "ros2"       # the ros2 command line (scripts/setup_env.sh installs it)

    def _describe():
        wait_until_running(out, 120.0)
        describe["p"] = subprocess.run([str(ros2), "param", "describe",
                                        "/passivity_controller", "passivity.alpha_max_kg_per_s", "loop.dt_s",
                                        "--no-daemon"], capture_output=True, text=True, env=env, timeout=60)

    shower = threading.Thread(target=_describe)
    client.start()
    if ros2.is_file():
        shower.start()
    r = run_scenario(s, out, composed=True, progress=False, lease=lease)
    client.join(timeout=60)
    if ros2.is_file():
        shower.join(timeout=90)
    assert r.code == 0, r.message
    assert "error" not in results, results
    print(results)
    assert results["/passivity_controller"][0][0] is True
    ok, why = results["/passivity_controller"][1]
    assert not ok and why.startswith("loop.dt_s: read-only during a run") and "passivity.alpha_max_kg_per_s" in why
    assert [ok for ok, _ in results["/ilc_learner"]] == [True]
    # the events: where each change took effect
    tuned = [e for e in read_events(out)["events"] if e["type"] == "TUNED"]
    print("\n".join(f"{e['source']} step {e['step']} trial {e['trial']}: {e['reason']}" for e in tuned))
    alpha = [e for e in tuned if "alpha_max" in e["reason"]]
    beta = [e for e in tuned if "beta" in e["reason"]]
    assert len(alpha) == 2 and "10000 -> 5000 requested" in alpha[0]["reason"] and "ramping" in alpha[0]["reason"]
    assert "reached 5000" in alpha[1]["reason"]
    # 20000 kg/s per second from 10000 to 5000: 0.25 s, 250 steps of 1 ms (each step the controller handles a
    # boundary).  The first step of a trial has no passivity update (nodes/passivity_controller.py), so a ramp that
    # runs over a trial's start (the request's moment is the client's) ends one step index later per trial start
    assert alpha[1]["step"] - alpha[0]["step"] == 249 + (alpha[1]["trial"] - alpha[0]["trial"]), alpha
    assert len(beta) == 1 and "10 -> 20 requested; 20 from step" in beta[0]["reason"]
    assert beta[0]["step"] == s.steps and beta[0]["trial"] == 0          # the end of the first trial
    # the passivity state in the bag: alpha never above the bound in force at its step, after the ramp at most 5000
    topics = read_bag(out / "bag")
    from rths_ros.msg import TestEvent
    assert len([m for _, m in topics["/rths/events"] if m.type == TestEvent.TUNED]) == len(tuned) == 3
    after = [m.alpha for _, m in topics["/rths/passivity"] if int(m.step) > alpha[1]["step"]]
    assert after and max(after) <= 5000.0
    from rths_ros.analysis.analyze_command import analyze
    assert analyze(out / "bag", out) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert [t["step"] for t in m["tuning"]] == [e["step"] for e in tuned]
    assert "## Live tuning" in (out / "report.md").read_text()
    # ros2 param describe: the tunable one is writable, with its range and when it takes effect
    if not ros2.is_file():
        pytest.skip(f"the tuning checks passed; `ros2 param describe` not checked: no ros2 command at {ros2} "
                    "(scripts/setup_env.sh installs it from the ros2 tooling wheels, or source a ROS 2 distribution)")
    d = describe["p"].stdout
    assert describe["p"].returncode == 0, describe["p"].stderr
    block, fixed = d.split("Parameter name: loop.dt_s")
    assert "Read only" not in block and "Read only: true" in fixed, d      # (describe prints only "true")
    assert "TUNABLE during a realtime run" in block and "Min value: 0.0" in block and "Max value: 1000000000.0" in block, d
