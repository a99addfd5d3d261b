"""A FACE sweep with process workers in a process that has run ROS before (a ROS context, even shut down, leaves the
DDS library's threads and locks behind): forked workers would inherit those locks and the nodes they fork would hang
in their first DDS call, so the sweep then starts its workers from a fresh interpreter (forkserver).  Runs in a
child process of its own, so the pytest process stays free of DDS threads."""
import subprocess
import sys
import textwrap

import yaml

CHILD = textwrap.dedent('''
    import sys, rclpy
    from pathlib import Path
    from rths_ros.runtime.forked import dds_threads
    ctx = rclpy.Context(); rclpy.init(context=ctx, domain_id=int(sys.argv[3]))
    node = rclpy.create_node("before_the_sweep", context=ctx); node.destroy_node(); rclpy.shutdown(context=ctx)
    assert dds_threads(), "expected the DDS library's threads to outlive the context"
    from rths_ros.analysis import face
    spec, raw = face.load_sweep(sys.argv[1])
    out = Path(sys.argv[2])
    res = face.run_sweep(spec, out, face.make_runner(spec, out), workers=2, raw=raw, progress=None)
    print("used", res["n_used"])
''')


def test_a_graph_sweep_with_two_workers_after_a_ros_context_does_not_hang(tmp_path):
    from rths_ros.runner import DomainLease
    sweep = tmp_path / "s.yaml"
    sweep.write_text(yaml.safe_dump({
        "name": "after_ros", "runner": "graph", "scenario": "contact_1d",
        "overrides": {"loop.duration_s": 0.5, "numerical.contact_1d.d_num_kg_per_s": 50.0, "safety.watchdog_s": 30.0,
                      "sim_plant.cascade.preset": "PPI2"},
        "vary": {"parameter": "sim_plant.command_delay_steps", "values": [0, 2, 4, 6]},
        "e": {"measure": "e_track_rel"}, "q": {"measure": "peak_amplitude"}, "fit": {"degree": 1, "db": True}}))
    lease = DomainLease()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, str(sweep), str(tmp_path / "out"), str(lease.domain_id)],
                           capture_output=True, text=True, timeout=240)
    finally:
        lease.close()
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    assert "used 4" in p.stdout, p.stdout
