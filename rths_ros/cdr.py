"""The six loop messages in CDR, hand-laid: an encoder (``msg -> bytes``) and a decoder (``bytes -> msg``) of each.

rclpy converts a whole message between Python and C for every ``publish`` and every message it takes: a RawWrench
taken from DDS costs about 12 µs of it, an InterfaceForce 9 µs, on the loop's critical path four times a step.  The
loop messages have a fixed shape (a header, a step, doubles in arrays or sequences, a stamp), so one ``struct``
layout per shape does the same work in a few µs:

- :func:`encoder` writes exactly rclpy's bytes except in the padding, which it writes as zeros as rosbags does
  (a composed recorder writes a bag from the local bus with it: :func:`rths_ros.bag.cdr_serializer`);
- :func:`decoder` builds the same message object rclpy's take builds (the generated class; numpy arrays for the
  fixed arrays, ``array.array('d')`` for the sequences, as rclpy gives them), bypassing the class's constructor and
  its field setters; the loop's subscriptions take serialized bytes and decode them with it
  (``realtime.fast_decode``, :mod:`rths_ros.runtime.guard`).

The layout of a message depends on its frame_id's length and its sequences' lengths, each cached (the same for a
whole run).  Bytes that are not little-endian CDR, or that do not fit the layout, go to rclpy's own deserialisation
(which then fails as it did before).  ``test/test_cdr.py`` draws messages of all six types with hypothesis and
checks both directions against rclpy, byte for byte and field by field.
"""
from __future__ import annotations

import array
import struct
import sys

import numpy as np

#: the encapsulation header of little-endian CDR (XCDR1), in front of every serialized message
CDR_LE = b"\x00\x01\x00\x00"

_INTERFACE_PAIRS = {"InterfaceForce": ("force", "measured"), "InterfaceCommand": ("position", "velocity"),
                    "InterfaceState": ("position", "velocity")}
LOOP_TYPES = ("rths_ros/msg/RawWrench", "rths_ros/msg/LegState", "rths_ros/msg/LegCommand",
              "rths_ros/msg/InterfaceForce", "rths_ros/msg/InterfaceCommand", "rths_ros/msg/InterfaceState")


class Layout:
    """A CDR (XCDR1, little endian) layout built field by field: each primitive aligned to its size (at most 8)
    from the start of the payload, padding written as zero bytes."""

    def __init__(self):
        self.fmt, self.off = ["<"], 0

    def add(self, code: str, size: int, count: int = 1) -> Layout:
        pad = (-self.off) % min(size, 8)
        if pad:
            self.fmt.append(f"{pad}x")
            self.off += pad
        self.fmt.append(f"{count}{code}" if code != "s" else f"{count}s")
        self.off += size * count
        return self

    def header(self, fid: int) -> Layout:        # std_msgs/Header: stamp (int32, uint32), frame_id (string)
        return self.add("i", 4).add("I", 4).add("I", 4).add("s", 1, fid)

    def seq(self, n: int) -> Layout:             # float64[]: uint32 count, the values
        self.add("I", 4)
        return self.add("d", 8, n) if n else self

    def struct(self) -> struct.Struct:
        return struct.Struct("".join(self.fmt))


def _leg_layout(kind: str, fid: int) -> struct.Struct:
    if kind == "LegCommand":
        return Layout().header(fid).add("Q", 8).add("d", 8, 24).add("i", 4).add("I", 4).struct()
    return Layout().header(fid).add("Q", 8).add("d", 8, 18).add("B", 1).struct()


def _wrench_layout(fid: int) -> struct.Struct:
    return Layout().header(fid).add("Q", 8).add("d", 8, 6).add("I", 4).add("B", 1).struct()


def _interface_layout(kind: str, fid: int, na: int, nb: int) -> struct.Struct:
    lay = Layout().header(fid).add("Q", 8).seq(na).seq(nb)
    if kind == "InterfaceForce":
        lay.add("?", 1).add("i", 4).add("I", 4)
    elif kind == "InterfaceCommand":
        lay.add("Q", 8).add("i", 4).add("I", 4)
    return lay.struct()


def _seq_offsets(fid: int, na: int | None = None) -> int:
    """Where (from the payload's start) the first sequence's count lies, or with ``na`` the second's."""
    lay = Layout().header(fid).add("Q", 8)
    if na is not None:
        lay.seq(na)
    pad = (-lay.off) % 4
    return lay.off + pad


def encoder(typename: str):
    """The hand-laid encoder of a loop message type (``msg -> bytes``), about twice as fast as rclpy's
    ``serialize_message`` (which converts the whole message to C first); None for any other type."""
    kind = typename.rsplit("/", 1)[-1]
    if typename not in LOOP_TYPES:
        return None
    cache: dict = {}
    fids: dict = {}          # frame_id -> (its CDR string with the terminating zero, that length): a run has a few

    def fid_of(m):
        s = m.header.frame_id
        got = fids.get(s)
        if got is None:
            f = s.encode() + b"\0"
            got = (f, len(f))
            if len(fids) < 64:
                fids[s] = got
        return got

    if kind in ("LegState", "LegCommand"):
        legs = kind == "LegCommand"
        if sys.byteorder == "little":
            # the fixed arrays (float64[6], numpy) are CDR's bytes as they lie in memory: the header and the step
            # packed, the arrays' bytes after them (the step ends 8-aligned), then the fields after the arrays
            tail = struct.Struct("<iI" if legs else "<B")
            join = b"".join

            def encode(m):
                f, n = fid_of(m)
                st = cache.get(n) or cache.setdefault(n, Layout().header(n).add("Q", 8).struct())
                h = m.header.stamp
                head = st.pack(h.sec, h.nanosec, n, f, m.step)
                if legs:
                    o = m.origin_stamp
                    return join((CDR_LE, head, m.length.tobytes(), m.velocity.tobytes(),
                                 m.feedforward_velocity.tobytes(), m.feedforward_position.tobytes(),
                                 tail.pack(o.sec, o.nanosec)))
                return join((CDR_LE, head, m.length.tobytes(), m.velocity.tobytes(), m.current.tobytes(),
                             tail.pack(m.status)))
            return encode

        def encode(m):
            f, n = fid_of(m)
            st = cache.get(n) or cache.setdefault(n, _leg_layout(kind, n))
            h = m.header.stamp
            if legs:
                o = m.origin_stamp
                return CDR_LE + st.pack(h.sec, h.nanosec, n, f, m.step, *(
                    m.length.tolist() + m.velocity.tolist() + m.feedforward_velocity.tolist()
                    + m.feedforward_position.tolist()), o.sec, o.nanosec)
            return CDR_LE + st.pack(h.sec, h.nanosec, n, f, m.step,
                                    *(m.length.tolist() + m.velocity.tolist() + m.current.tolist()), m.status)
        return encode
    if kind == "RawWrench":
        def encode(m):
            f, n = fid_of(m)
            st = cache.get(n) or cache.setdefault(n, _wrench_layout(n))
            h, w = m.header.stamp, m.wrench
            return CDR_LE + st.pack(h.sec, h.nanosec, n, f, m.step, w.force.x, w.force.y, w.force.z, w.torque.x,
                                    w.torque.y, w.torque.z, m.sequence, m.status)
        return encode
    first, second = _INTERFACE_PAIRS[kind]

    def encode(m):
        f, n = fid_of(m)
        a, b = getattr(m, first), getattr(m, second)
        key = (n, len(a), len(b))
        st = cache.get(key) or cache.setdefault(key, _interface_layout(kind, *key))
        h = m.header.stamp
        # (a sequence is an array.array('d') in rclpy, a fixed array a numpy array: both give floats by tolist)
        head = (h.sec, h.nanosec, n, f, m.step, len(a), *a.tolist(), len(b), *b.tolist())
        if kind == "InterfaceForce":
            o = m.origin_stamp
            return CDR_LE + st.pack(*head, bool(m.contact), o.sec, o.nanosec)
        if kind == "InterfaceCommand":
            o = m.origin_stamp
            return CDR_LE + st.pack(*head, m.origin_step, o.sec, o.nanosec)
        return CDR_LE + st.pack(*head)
    return encode


def _message_class(typename: str):
    pkg, _, name = typename.split("/")
    module = __import__(f"{pkg}.msg", fromlist=[name])
    return getattr(module, name)


def decoder(typename: str):
    """The hand-laid decoder of a loop message type (``bytes -> msg``, the object rclpy's take gives); None for any
    other type.  Bytes it cannot lay out go to rclpy's ``deserialize_message``."""
    if typename not in LOOP_TYPES:
        return None
    from builtin_interfaces.msg import Time
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Header
    kind = typename.rsplit("/", 1)[-1]
    cls = _message_class(typename)
    new, unpack_fid = object.__new__, struct.Struct("<I").unpack_from
    cache: dict = {}

    def stamp(sec, nanosec):
        t = new(Time)
        t._sec, t._nanosec, t._check_fields = sec, nanosec, False
        return t

    def header(sec, nanosec, fid):
        h = new(Header)
        h._stamp, h._frame_id, h._check_fields = stamp(sec, nanosec), fid[:-1].decode(), False
        return h

    def fallback(data):
        return deserialize_message(bytes(data), cls)

    if kind in ("LegState", "LegCommand"):
        legs = kind == "LegCommand"
        names = (("length", "velocity", "feedforward_velocity", "feedforward_position") if legs
                 else ("length", "velocity", "current"))
        slots = tuple("_" + n for n in names)

        def decode(data):
            try:
                if data[:4] != CDR_LE:
                    return fallback(data)
                n = unpack_fid(data, 12)[0]
                st = cache.get(n) or cache.setdefault(n, _leg_layout(kind, n))
                v = st.unpack_from(data, 4)
                m = new(cls)
                m._header, m._step, m._check_fields = header(v[0], v[1], v[3]), v[4], False
                vals = np.array(v[5:5 + 6 * len(slots)], dtype=np.float64)
                for i, s in enumerate(slots):
                    setattr(m, s, vals[6 * i:6 * i + 6].copy())
                if legs:
                    m._origin_stamp = stamp(v[-2], v[-1])
                else:
                    m._status = v[-1]
                return m
            except (struct.error, UnicodeDecodeError):
                return fallback(data)
        return decode
    if kind == "RawWrench":
        from geometry_msgs.msg import Vector3, Wrench

        def vec(x, y, z):
            p = new(Vector3)
            p._x, p._y, p._z, p._check_fields = x, y, z, False
            return p

        def decode(data):
            try:
                if data[:4] != CDR_LE:
                    return fallback(data)
                n = unpack_fid(data, 12)[0]
                st = cache.get(n) or cache.setdefault(n, _wrench_layout(n))
                v = st.unpack_from(data, 4)
                w = new(Wrench)
                w._force, w._torque, w._check_fields = vec(v[5], v[6], v[7]), vec(v[8], v[9], v[10]), False
                m = new(cls)
                m._header, m._step, m._wrench, m._sequence, m._status, m._check_fields = (
                    header(v[0], v[1], v[3]), v[4], w, v[11], v[12], False)
                return m
            except (struct.error, UnicodeDecodeError):
                return fallback(data)
        return decode
    first, second = ("_" + f for f in _INTERFACE_PAIRS[kind])
    offsets: dict = {}

    def layout_of(data):
        n = unpack_fid(data, 12)[0]
        at = offsets.get(n) or offsets.setdefault(n, _seq_offsets(n))
        na = unpack_fid(data, 4 + at)[0]
        at_b = offsets.get((n, na)) or offsets.setdefault((n, na), _seq_offsets(n, na))
        key = (n, na, unpack_fid(data, 4 + at_b)[0])
        return key, cache.get(key) or cache.setdefault(key, _interface_layout(kind, *key))

    def decode(data):
        try:
            if data[:4] != CDR_LE:
                return fallback(data)
            (n, na, nb), st = layout_of(data)
            v = st.unpack_from(data, 4)
            m = new(cls)
            m._header, m._step, m._check_fields = header(v[0], v[1], v[3]), v[4], False
            setattr(m, first, array.array("d", v[6:6 + na]))
            setattr(m, second, array.array("d", v[7 + na:7 + na + nb]))
            tail = v[7 + na + nb:]
            if kind == "InterfaceForce":
                m._contact, m._origin_stamp = tail[0], stamp(tail[1], tail[2])
            elif kind == "InterfaceCommand":
                m._origin_step, m._origin_stamp = tail[0], stamp(tail[1], tail[2])
            return m
        except (struct.error, UnicodeDecodeError):
            return fallback(data)
    return decode


def step_of(data: bytes) -> int | None:
    """The step of a serialized loop message (each is a std_msgs/Header, then its uint64 step), read without decoding
    the rest; None for bytes that are not little-endian CDR of that shape."""
    if len(data) < 16 or data[:4] != CDR_LE:
        return None
    fid = int.from_bytes(data[12:16], "little")       # the frame_id's length (its chars and a NUL follow)
    off = 12 + fid
    off += (-off) % 8                                  # the step: aligned to 8 from the payload's start
    if len(data) < 4 + off + 8:
        return None
    return int.from_bytes(data[4 + off:12 + off], "little")


__all__ = ["CDR_LE", "LOOP_TYPES", "Layout", "decoder", "encoder", "step_of"]
