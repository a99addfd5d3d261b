"""A foreign node for the flood benchmark (``rths bench flood``) and for trying a rig's defences: on the given ROS
domain, under the name ``intruder`` (or the name of one of the run's producers: an impostor), it publishes a
message with NaN values on every loop topic (or the ones given) at a fixed rate until its time is up.  The run's
publisher check must drop every sample (a NaN taken by a node would abort the run); an impostor started before
the run stops it before START.

    python -m rths_ros.bench.intruder --domain 42 --rate 1000 --seconds 20
    python -m rths_ros.bench.intruder --domain 42 --name stewart_platform --topics /rths/leg_command
"""
from __future__ import annotations

import argparse
import os
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", type=int, required=True)
    ap.add_argument("--rate", type=float, default=1000.0, help="messages per second on each loop topic")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--mode", default="realtime", help="the run's loop mode (its control QoS)")
    ap.add_argument("--name", default="intruder", help="the node's name (a producer's name: an impostor)")
    ap.add_argument("--namespace", default="", help="the node's namespace (the run's, to impersonate)")
    ap.add_argument("--topics", default="", help="comma-separated loop topics (default: all eight)")
    a = ap.parse_args(argv)
    os.environ["ROS_DOMAIN_ID"] = str(a.domain)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    import rclpy

    from rths_ros.msg import (
        AdaptiveFilter,
        InterfaceCommand,
        InterfaceForce,
        InterfaceState,
        LegCommand,
        LegState,
        PassivityState,
        RawWrench,
    )
    from rths_ros.runtime.qos import control_qos
    nan = float("nan")
    types = {"/rths/leg_command": LegCommand, "/rths/leg_state": LegState, "/rths/raw_wrench": RawWrench,
             "/rths/interface_force": InterfaceForce, "/rths/interface_command": InterfaceCommand,
             "/rths/interface_state": InterfaceState, "/rths/passivity": PassivityState,
             "/rths/aff_coefficients": AdaptiveFilter}
    if a.topics:
        unknown = [t for t in a.topics.split(",") if t not in types]
        if unknown:
            ap.error(f"--topics: {', '.join(unknown)} is not a loop topic; expected some of {', '.join(types)}")
        types = {t: types[t] for t in a.topics.split(",")}
    rclpy.init()
    node = rclpy.create_node(a.name, namespace=a.namespace or None)
    qos = control_qos(a.mode, 1e-3).profile
    pubs, msgs = [], []
    for topic, cls in types.items():
        m = cls()
        m.header.frame_id = "intruder"
        for name in ("length", "position", "velocity", "force", "measured"):
            if hasattr(m, name):
                setattr(m, name, [nan] * (6 if name == "length" else 1))
        if topic == "/rths/raw_wrench":
            m.wrench.force.z = nan
        if topic == "/rths/passivity":
            m.damping_force = nan
        pubs.append(node.create_publisher(cls, topic.lstrip("/"), qos))      # relative: under --namespace
        msgs.append(m)
    period = 1.0 / a.rate
    t0 = time.monotonic()
    t_end = t0 + a.seconds
    nxt = time.monotonic()
    k = sent = 0
    try:
        while time.monotonic() < t_end:
            k += 1
            for pub, m in zip(pubs, msgs):
                m.step = k
                pub.publish(m)
                sent += 1
            nxt += period
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.monotonic()      # behind: no catching up in a burst
    except KeyboardInterrupt:
        pass
    finally:
        cpu = time.process_time()
        wall = time.monotonic() - t0
        print(f"intruder: {sent} messages on {len(pubs)} topics in {k} ticks, {wall:.1f} s, "
              f"CPU {cpu:.1f} s ({100 * cpu / max(wall, 1e-9):.0f} % of a core)", flush=True)
        node.destroy_node()
        rclpy.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
