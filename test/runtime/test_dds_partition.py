"""The profile file that puts a run's loop topics in a DDS partition (rths_ros.runtime.dds_partition): every loop
topic under the node's namespace gets a writer and a reader profile that copy the default ones and add the
partition; the rest of the file stays as it was; nothing changes without a partition."""
import xml.etree.ElementTree as ET

import pytest

from rths_ros.app import scenario as scn
from rths_ros.params import ParameterError
from rths_ros.resources import config_dir
from rths_ros.runtime.dds_partition import apply_partition, loop_topic_names, namespace_of, profile_text
from rths_ros.runtime.topics import TOPICS

NS = "{http://www.eprosima.com}"


def _profiles(text: str) -> dict[tuple[str, str], ET.Element]:
    root = ET.fromstring(text)
    return {(el.tag.replace(NS, ""), el.get("profile_name")): el for el in root.find(f"{NS}profiles")}


def _partition(el: ET.Element) -> str | None:
    for prop in el.iter(f"{NS}property"):
        if prop.find(f"{NS}name").text == "partitions":
            return prop.find(f"{NS}value").text
    return None


def test_namespace_from_the_ros_arguments():
    assert namespace_of([]) == "/"
    assert namespace_of(["--ros-args", "-r", "__ns:=/rig_a"]) == "/rig_a"
    assert namespace_of(["--ros-args", "--remap", "sim_plant:__ns:=rig_b", "-p", "x:=1"]) == "/rig_b"
    assert namespace_of(["--ros-args", "-r", "__node:=sup2"]) == "/"


def test_the_loop_topics_under_a_namespace():
    names = loop_topic_names("/rig_a")
    assert names == ["/rig_a" + t.name for t in TOPICS if t.producers]
    assert "/rig_a/rths/leg_command" in names and "/rig_a/rths/events" not in names
    assert loop_topic_names("/")[0] == TOPICS[0].name


def test_each_loop_topic_gets_the_default_endpoints_with_the_partition():
    base = (config_dir() / "fastdds.xml").read_text()
    text = profile_text(base, ["/rths/leg_command", "/rths/leg_state"], "rig_a")
    got, before = _profiles(text), _profiles(base)
    for key, el in before.items():                      # the file's own profiles are unchanged
        assert ET.tostring(got[key]) == ET.tostring(el), key
    default_writer = next(el for (kind, _), el in before.items()
                          if kind == "data_writer" and el.get("is_default_profile") == "true")
    for topic in ("/rths/leg_command", "/rths/leg_state"):
        for kind in ("data_writer", "data_reader"):
            el = got[(kind, topic)]
            assert el.get("is_default_profile") is None and _partition(el) == "rig_a", (kind, topic)
        # the heartbeat period and the blocking time of the default writer are kept
        hb = got[("data_writer", topic)].find(f"{NS}times")
        assert ET.tostring(hb) == ET.tostring(default_writer.find(f"{NS}times"))
    assert ("data_writer", "/rths/events") not in got
    # a topic's own profile is kept and its partition set, never doubled
    again = ET.fromstring(profile_text(text, ["/rths/leg_command"], "rig_b"))
    writers = [e for e in again.find(f"{NS}profiles") if e.tag == f"{NS}data_writer"
               and e.get("profile_name") == "/rths/leg_command"]
    assert len(writers) == 1 and _partition(writers[0]) == "rig_b"
    assert len([p for p in writers[0].iter(f"{NS}property") if p.find(f"{NS}name").text == "partitions"]) == 1


def test_apply_writes_the_file_into_the_run_and_names_it(tmp_path):
    env = {"FASTDDS_DEFAULT_PROFILES_FILE": str(config_dir() / "fastdds.xml")}
    assert apply_partition("", ["--ros-args"], tmp_path, "sim_plant", env) is None
    assert env["FASTDDS_DEFAULT_PROFILES_FILE"] == str(config_dir() / "fastdds.xml")
    path = apply_partition("rig_a", ["--ros-args", "-r", "__ns:=/rig_a"], tmp_path, "sim_plant", env)
    assert path == tmp_path / "dds" / "sim_plant.xml" and env["FASTDDS_DEFAULT_PROFILES_FILE"] == str(path)
    got = _profiles(path.read_text())
    assert _partition(got[("data_reader", "/rig_a/rths/leg_command")]) == "rig_a"


@pytest.mark.parametrize("bad", ["a*", "rig a", "x;y", "r" * 65])
def test_a_partition_name_that_is_no_plain_name_is_refused_naming_the_key(bad):
    with pytest.raises(ParameterError, match=r"partition: .* is not a partition name; expected 1 to 64"):
        scn.load("contact_1d", [f"safety.partition={bad}"])
