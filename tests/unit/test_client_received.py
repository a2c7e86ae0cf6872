"""ReceivedMessage: decoded lazily off the wire, yet it behaves as the immutable value it was."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError

import pytest

from rockmq.client.message import ReceivedMessage
from rockmq.protocol import pb


def wire() -> pb.Message:
    m = pb.Message(topic=pb.Resource(name="orders"), body=b"hello", user_properties={"region": "eu"})
    sp = m.system_properties
    sp.message_id, sp.tag, sp.message_group, sp.receipt_handle = "M1", "paid", "g1", "RH"
    sp.keys.extend(["k1", "k2"])
    sp.queue_id, sp.queue_offset, sp.delivery_attempt = 3, 42, 2
    sp.born_timestamp.FromMilliseconds(1_700_000_000_123)
    sp.store_timestamp.FromMilliseconds(1_700_000_000_456)
    return m


EXPECTED = ReceivedMessage(topic="orders", body=b"hello", message_id="M1", tag="paid", keys=("k1", "k2"),
                           properties={"region": "eu"}, message_group="g1", queue_id=3, offset=42, delivery_attempt=2,
                           born_ms=1_700_000_000_123, store_ms=1_700_000_000_456, receipt_handle="RH", broker="b0",
                           endpoint="127.0.0.1:1")


def test_from_pb_reads_every_field() -> None:
    got = ReceivedMessage.from_pb(wire(), "b0", "127.0.0.1:1")
    assert got == EXPECTED
    assert repr(got) == repr(EXPECTED)
    assert repr(got).startswith("ReceivedMessage(topic='orders', body=b'hello', message_id='M1', tag='paid'")


def test_absent_fields_read_as_before() -> None:
    got = ReceivedMessage.from_pb(pb.Message(topic=pb.Resource(name="t")), "b", "e")
    assert (got.tag, got.message_group, got.keys, got.properties, got.delivery_attempt, got.born_ms) == (None, None, (), {}, 1, 0)


def test_immutable() -> None:
    got = ReceivedMessage.from_pb(wire(), "b0", "e")
    with pytest.raises(FrozenInstanceError):
        got.topic = "other"
    with pytest.raises(FrozenInstanceError):
        got.body = b"x"  # not read yet: still refused
    with pytest.raises(FrozenInstanceError):
        del got.topic
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = got.nope


def test_replace_pickle_copy() -> None:
    got = ReceivedMessage.from_pb(wire(), "b0", "127.0.0.1:1")
    changed = got.replace(receipt_handle="RH2")
    assert changed.receipt_handle == "RH2" and changed.body == b"hello" and got.receipt_handle == "RH"
    assert changed != got
    with pytest.raises(TypeError, match="no field 'nope'"):
        got.replace(nope=1)
    assert pickle.loads(pickle.dumps(got)) == EXPECTED
    assert copy.copy(got) == EXPECTED == copy.deepcopy(got)
    with pytest.raises(TypeError, match="unhashable"):  # as the frozen dataclass was: its properties are a dict
        hash(got)
