"""The loop statistics of metrics.json: a realtime run's deadline-miss ratio is the worst loop node's, not the
plant's alone (a ros2_control run whose plant found every leg command in time while the ft_sensor used the same
driver sample again in most steps must not report 0)."""
from types import SimpleNamespace

from rths_ros.analysis.run_analysis import loop_stats
from rths_ros.app import scenario as scn


def _timing(node, steps, late, p99=1e-3):
    return (0, SimpleNamespace(node=node, steps=steps, late_messages=late, deadline_misses=0, lost_messages=0,
                               overruns=0, latency_p50_s=5e-4, latency_p99_s=p99, latency_max_s=2 * p99,
                               period_mean_s=1e-3, period_jitter_s=1e-5))


def _topics(*rows):
    # an early message of each node first: only the last one of a node counts
    early = [_timing(name, 1, 0) for name, *_ in rows]
    return {"/rths/timing": early + [_timing(*r) for r in rows]}


def test_the_worst_loop_node_sets_the_realtime_miss_ratio_and_is_named():
    s = scn.load("contact_1d", ["ros2_control.emulate=true", "standard_interfaces.wrench_input_topic=/ft_sensor/wrench"],
                 "realtime", "ros2_control")
    topics = _topics(("ros2_control_plant", 3000, 0, 0.059), ("ft_sensor", 3001, 2574), ("numerical_substructure", 3001, 3),
                     ("supervisor", 0, 0), ("recorder", 0, 0))
    loop = loop_stats(topics, s, 3000)
    assert loop["deadline_miss_node"] == "ft_sensor"
    assert loop["deadline_miss_ratio"] == 2574 / 3000
    assert loop["step_latency_p99_s"] == 0.059                     # the latency stays the plant's (end to end)
    assert loop["nodes"]["ros2_control_plant"]["late_messages"] == 0


def test_a_realtime_run_without_stale_inputs_reports_zero_and_lockstep_has_no_deadlines():
    topics = _topics(("sim_plant", 4000, 0), ("ft_sensor", 4001, 0), ("numerical_substructure", 4001, 0))
    rt = loop_stats(topics, scn.load("contact_1d", [], "realtime"), 4000)
    assert rt["deadline_miss_ratio"] == 0.0 and rt["deadline_miss_node"] in ("sim_plant", "ft_sensor", "numerical_substructure")
    late = _topics(("sim_plant", 4000, 40), ("ft_sensor", 4001, 0))
    assert loop_stats(late, scn.load("contact_1d", [], "realtime"), 4000)["deadline_miss_ratio"] == 0.01
    lock = loop_stats(late, scn.load("contact_1d"), 4000)
    assert lock["deadline_miss_ratio"] == 0.0 and lock["deadline_miss_node"] == ""
