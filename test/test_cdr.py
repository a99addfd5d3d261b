"""The loop messages' hand-laid CDR (rths_ros.cdr) against rclpy's own serialisation, in both directions: messages
of all six loop types drawn by hypothesis (any frame_id, any sequence lengths, any doubles including NaN and
infinities), and bytes the decoder cannot lay out."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rths_ros.bag import cdr_serializer, typestore
from rths_ros.cdr import LOOP_TYPES, decoder, encoder

_FAST_TYPES = tuple(t.rsplit("/", 1)[1] for t in LOOP_TYPES)


def _fill(cls_name: str, data, allow_nan: bool = False, alphabet: str = "abcdefghijklmnopqrstuvwxyz:_0123456789"):
    """A loop message of type ``cls_name`` with every field drawn by hypothesis."""
    from rths_ros import msg as M
    m = getattr(M, cls_name)()
    real = st.floats(allow_nan=allow_nan, allow_infinity=allow_nan, width=64)
    m.header.frame_id = data.draw(st.text(alphabet=alphabet, max_size=24))
    m.header.stamp.sec = data.draw(st.integers(-2**31, 2**31 - 1))
    m.header.stamp.nanosec = data.draw(st.integers(0, 2**32 - 1))
    m.step = data.draw(st.integers(0, 2**64 - 1))
    for name, typ in type(m).get_fields_and_field_types().items():
        if typ == "double[6]":
            setattr(m, name, np.array(data.draw(st.lists(real, min_size=6, max_size=6))))
        elif typ == "sequence<double>":
            setattr(m, name, data.draw(st.lists(real, max_size=8)))
        elif typ == "uint8":
            setattr(m, name, data.draw(st.integers(0, 255)))
        elif typ == "uint32":
            setattr(m, name, data.draw(st.integers(0, 2**32 - 1)))
        elif typ == "uint64" and name != "step":
            setattr(m, name, data.draw(st.integers(0, 2**64 - 1)))
        elif typ == "boolean":
            setattr(m, name, data.draw(st.booleans()))
        elif typ == "builtin_interfaces/Time":
            getattr(m, name).sec = data.draw(st.integers(-2**31, 2**31 - 1))
            getattr(m, name).nanosec = data.draw(st.integers(0, 2**32 - 1))
        elif typ == "geometry_msgs/Wrench":
            for v in (m.wrench.force, m.wrench.torque):
                v.x, v.y, v.z = (data.draw(real) for _ in range(3))
    return m


def test_the_loop_messages_own_encoder_writes_what_rclpy_writes():
    """The encoder a composed recorder writes the six loop messages with every step: for messages drawn by hypothesis
    (any frame_id length, any sequence lengths), the same length as rclpy's serialization cut to the exact CDR
    size, the same bytes but in padding (rclpy leaves them uninitialised), and rosbags reads the same message from
    both."""
    from rclpy.serialization import serialize_message
    ts = typestore()

    @settings(max_examples=60, deadline=None)
    @given(st.data())
    def check(data):
        for name in _FAST_TYPES:
            typ = f"rths_ros/msg/{name}"
            m = _fill(name, data)
            ours = encoder(typ)(m)
            assert cdr_serializer(typ)(m) == ours            # what the recorder uses
            ref = serialize_message(m)[:4 + ts.get_msgdef(typ).getsize_cdr(0, m, ts)]
            assert len(ours) == len(ref), (typ, len(ours), len(ref))
            a, b = ts.deserialize_cdr(ours, typ), ts.deserialize_cdr(ref, typ)
            assert ts.serialize_cdr(a, typ) == ts.serialize_cdr(b, typ), typ
            assert ts.serialize_cdr(a, typ) == ours, typ        # zero padding: what rosbags itself writes
    check()
    assert encoder("rths_ros/msg/AdaptiveFilter") is None      # any other type: rclpy's serialization


def _same_object(ours, ref, where: str) -> None:
    """The two messages have the same fields with the same values and the same Python types (numpy arrays of the
    same dtype and shape, writable and not shared; array.array of the same type code); NaN equals NaN."""
    assert type(ours) is type(ref), where
    if hasattr(ref, "get_fields_and_field_types"):
        for name in ref.get_fields_and_field_types():
            _same_object(getattr(ours, name), getattr(ref, name), f"{where}.{name}")
        return
    if isinstance(ref, np.ndarray):
        assert (ours.dtype, ours.shape) == (ref.dtype, ref.shape), where
        assert ours.flags.writeable and ours.flags.owndata, where
        assert np.array_equal(ours, ref, equal_nan=True), where
        return
    if hasattr(ref, "typecode"):
        assert ours.typecode == ref.typecode, where
        assert np.array_equal(np.array(ours), np.array(ref), equal_nan=True), where
        return
    if isinstance(ref, float) and math.isnan(ref):
        assert math.isnan(ours), where
        return
    assert ours == ref, where


def test_the_loop_messages_own_decoder_gives_what_rclpy_takes():
    """What the loop's subscriptions take (realtime.fast_decode): for messages drawn by hypothesis, with NaN and
    infinities and non-ASCII frame ids, the decoder builds the object rclpy's deserialisation builds, field by field
    and type by type; it serializes back to the same bytes, and the message is a usable rclpy message (a field set
    through the class's setter, equality)."""
    from rclpy.serialization import deserialize_message, serialize_message

    @settings(max_examples=80, deadline=None)
    @given(st.data())
    def check(data):
        for name in _FAST_TYPES:
            typ = f"rths_ros/msg/{name}"
            m = _fill(name, data, allow_nan=True, alphabet="abcxyz_:/0189éλ✓")
            wire = serialize_message(m)
            ref = deserialize_message(wire, type(m))
            ours = decoder(typ)(wire)
            _same_object(ours, ref, name)
            assert serialize_message(ours) == serialize_message(ref), name
            ours.step = 7                                  # the class's own setter works on it
            ref.step = 7
            assert serialize_message(ours) == serialize_message(ref), name
    check()
    assert decoder("rths_ros/msg/AdaptiveFilter") is None


@pytest.mark.parametrize("name", _FAST_TYPES)
def test_bytes_the_decoder_cannot_lay_out_fail_as_rclpy_fails(name):
    """Big-endian CDR goes to rclpy's own deserialisation (which reads it); bytes cut short raise as rclpy raises."""
    from rclpy.serialization import deserialize_message, serialize_message

    from rths_ros import msg as M
    cls = getattr(M, name)
    m = cls()
    m.step = 42
    m.header.frame_id = "rig"
    wire = serialize_message(m)
    decode = decoder(f"rths_ros/msg/{name}")
    with pytest.raises(Exception) as ours:
        decode(wire[:len(wire) // 2])
    with pytest.raises(Exception) as ref:
        deserialize_message(wire[:len(wire) // 2], cls)
    assert type(ours.value) is type(ref.value)
    odd = b"\x00\x00\x00\x00" + wire[4:]            # not little-endian CDR: not laid out here
    try:
        expected = deserialize_message(odd, cls)
    except Exception as exc:                         # whatever rclpy raises, the decoder raises too
        with pytest.raises(type(exc)):
            decode(odd)
    else:
        assert serialize_message(decode(odd)) == serialize_message(expected)


def test_the_step_of_a_serialized_loop_message_is_read_without_decoding_it():
    """``step_of`` (the recorder's view of the leg states' steps) on rclpy's bytes of every loop message drawn by
    hypothesis (any frame_id length, any step); None for bytes that are no little-endian CDR or too short."""
    from rclpy.serialization import serialize_message

    from rths_ros.cdr import step_of

    @settings(max_examples=40, deadline=None)
    @given(st.data())
    def check(data):
        for name in _FAST_TYPES:
            m = _fill(name, data)
            assert step_of(serialize_message(m)) == m.step, name

    check()
    assert step_of(b"\x01\x00\x00\x00" + bytes(40)) is None          # big-endian CDR
    assert step_of(b"\x00\x01\x00\x00" + bytes(8)) is None           # cut short
