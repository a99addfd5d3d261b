"""The control profiles of config/qos.yaml: the lockstep acknowledgement interval is bounded by what a KEEP_ALL
writer of Fast DDS holds (test/graph/test_recorder_backpressure.py shows the bound at work)."""
from __future__ import annotations

import pytest

from rths_ros.params import ParameterError
from rths_ros.runtime.qos import ACK_EVERY_STEPS_MAX, KEEP_ALL_SAMPLES, check_ack_every_steps, control_qos, qos_config


def test_every_shipped_profile_waits_for_acknowledgements_within_the_history():
    for name in qos_config()["profiles"]:
        n = control_qos(name, 0.001).ack_every_steps
        assert 0 <= n <= ACK_EVERY_STEPS_MAX < KEEP_ALL_SAMPLES, (name, n)
    assert control_qos("lockstep", 0.001).ack_every_steps > 0       # lockstep bounds a slow reader's backlog
    assert control_qos("realtime", 0.001).ack_every_steps == 0      # realtime never waits


@pytest.mark.parametrize("value", [ACK_EVERY_STEPS_MAX + 1, KEEP_ALL_SAMPLES, -1, 2.5, "often", None])
def test_an_interval_outside_the_history_is_refused_naming_key_value_and_range(value):
    with pytest.raises(ParameterError) as err:
        check_ack_every_steps(value, "qos.profiles.mine.control")
    text = str(err.value)
    assert "qos.profiles.mine.control.ack_every_steps" in text and repr(value) in text
    assert f"from 0 to {ACK_EVERY_STEPS_MAX}" in text


@pytest.mark.parametrize("value", [0, 1, 2000, ACK_EVERY_STEPS_MAX])
def test_an_interval_within_it_is_taken(value):
    assert check_ack_every_steps(value, "q") == value
