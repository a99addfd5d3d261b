"""What the code reads from the installed ROS 2 instead of a version string (docs/ros2.md "Jazzy and Kilted"):
whether rclpy hands each sample's publisher, and which Fast DDS generation (its profile variable and element names)
the middleware loads.  Each capability is checked against what the installed libraries actually do."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rths_ros.launch_support import FASTDDS_PROFILES, fastdds_generation, node_env_overrides
from rths_ros.resources import config_dir
from rths_ros.runtime.guard import SAMPLE_PUBLISHER

_PROFILE_VARS = [v for v, _ in FASTDDS_PROFILES.values()]


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _PROFILE_VARS}
    env.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_DOMAIN_ID=str(100 + os.getpid() % 100), **extra)
    return env


def test_the_sample_publisher_capability_is_what_rclpy_delivers():
    import rclpy
    from std_msgs.msg import Int32
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=100 + os.getpid() % 100)
    try:
        node = rclpy.create_node("capability_probe", context=ctx)
        infos = []
        node.create_subscription(Int32, "capability_probe", lambda m, i: infos.append(i), 10)
        pub = node.create_publisher(Int32, "capability_probe", 10)
        from rclpy.executors import SingleThreadedExecutor
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(node)
        t_end = time.monotonic() + 10.0
        while not infos and time.monotonic() < t_end:
            pub.publish(Int32(data=1))
            ex.spin_once(timeout_sec=0.05)
        assert infos, "no sample arrived within 10 s"
        assert ("publisher_gid" in infos[0]) == SAMPLE_PUBLISHER
        if SAMPLE_PUBLISHER:        # the gid the publisher check compares with the graph's
            graph = [bytes(i.endpoint_gid)[:16] for i in node.get_publishers_info_by_topic("/capability_probe")]
            assert bytes(infos[0]["publisher_gid"]["data"])[:16] in graph
        ex.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


_PROBE = """
import rclpy
from std_msgs.msg import Int32
rclpy.init()
n = rclpy.create_node("profile_probe")
n.create_publisher(Int32, "profile_probe", 10)
maps = open("/proc/self/maps").read()
print("fastdds3" if "libfastdds.so" in maps else "fastdds2" if "libfastrtps.so" in maps else "none")
n.destroy_node()
rclpy.shutdown()
"""


def _probe(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=60)


def test_the_fast_dds_generation_is_the_library_the_middleware_loads():
    r = _probe(_clean_env(RMW_IMPLEMENTATION="rmw_fastrtps_cpp"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == f"fastdds{fastdds_generation()}"


def test_the_profile_of_the_installed_fast_dds_is_read_and_loads_without_error(tmp_path):
    """The variable chosen is the one this Fast DDS reads (a broken file named by it is reported), and the
    project's file for this generation loads without any XML error (a Fast DDS that meets an element it does not
    know rejects the whole file and says so on stderr)."""
    extra = node_env_overrides(_clean_env())
    var, name = FASTDDS_PROFILES[fastdds_generation()]
    assert extra[var] == str(config_dir() / name) and not any(v in extra for v in _PROFILE_VARS if v != var)
    broken = tmp_path / "broken.xml"
    broken.write_text((config_dir() / name).read_text().replace("<count>", "<no_such_element>")
                      .replace("</count>", "</no_such_element>"))
    r = _probe(_clean_env(RMW_IMPLEMENTATION="rmw_fastrtps_cpp", **{var: str(broken)}))
    said = r.stdout + r.stderr          # (Fast DDS 2 writes its errors to stdout, 3 to stderr)
    assert "XMLPARSER" in said, "the chosen variable was not read: " + said[-500:]
    r = _probe(_clean_env(**extra))
    said = r.stdout + r.stderr
    assert r.returncode == 0 and "XMLPARSER" not in said and "Error" not in said, said[-2000:]


def test_a_profile_set_by_the_caller_is_kept_whichever_variable_it_uses():
    for var in _PROFILE_VARS:
        extra = node_env_overrides({var: "/lab/profile.xml"})
        assert not any(v in extra for v in _PROFILE_VARS)


def test_a_profile_the_caller_named_by_a_relative_path_reaches_the_nodes_by_its_absolute_path(tmp_path,
                                                                                             monkeypatch):
    """The node processes run in the run's folder: a relative path would name nothing there."""
    monkeypatch.chdir(tmp_path)
    for var in _PROFILE_VARS:
        extra = node_env_overrides({var: "lab/profile.xml"})
        assert extra[var] == str(tmp_path / "lab" / "profile.xml")
        assert not any(v in extra for v in _PROFILE_VARS if v != var)


def test_the_generation_comes_from_the_first_prefix_with_a_fast_dds_package(tmp_path):
    a, b, c = (tmp_path / x for x in "abc")
    (a / "share").mkdir(parents=True)
    (b / "share" / "fastrtps").mkdir(parents=True)
    (c / "share" / "fastdds").mkdir(parents=True)
    assert fastdds_generation(prefixes=[str(a), str(b), str(c)]) == 2
    assert fastdds_generation(prefixes=[str(c), str(b)]) == 3
    assert fastdds_generation(prefixes=[str(a)]) == 3
    env = {"AMENT_PREFIX_PATH": os.pathsep.join([str(a), str(b)])}
    assert fastdds_generation(env, prefixes=None) in (2, 3)      # the venv's own prefix comes first


def test_the_two_profiles_differ_only_in_the_names_of_fast_dds_2():
    def body(path: Path) -> str:
        text = path.read_text()
        return text[text.index("<dds"):]
    three, two = (body(config_dir() / n) for _, n in (FASTDDS_PROFILES[3], FASTDDS_PROFILES[2]))
    assert two == (three.replace("heartbeat_period>", "heartbeatPeriod>")
                   .replace("nack_supression_duration>", "nackSupressionDuration>")) and two != three


@pytest.mark.parametrize("gen", [2, 3])
def test_each_profile_file_exists(gen):
    assert (config_dir() / FASTDDS_PROFILES[gen][1]).is_file()
