"""The compiled data path and the same sources run as Python give byte-identical results: records,
keys, receipt handles, validation outcomes and replies, for random messages (src/rockmq/compiled.py).
Each module's Python form is loaded from its .py file under another name, beside the compiled one."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rockmq import compiled
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.subscriptions import UNINDEXED
from rockmq.config import Settings
from rockmq.protocol import pb, rpc
from rockmq.protocol.conventions import RECONSUME_TIMES
from rockmq.protocol.errors import BrokerError

COMPILED = all(compiled.is_compiled(importlib.import_module(name)) for name in compiled.MODULES)
pytestmark = pytest.mark.skipif(not COMPILED, reason=f"the data path runs as Python here ({compiled.describe()}): "
                                                     "no compiled build to compare with")


def _both(name: str) -> tuple[ModuleType, ModuleType]:
    """(compiled module, the same module loaded from its source as Python)."""
    module = importlib.import_module(name)
    python = _python(name)
    assert compiled.is_compiled(module) and not compiled.is_compiled(python)
    return module, python


def _python(name: str) -> ModuleType:
    """`name` loaded from its source, importing the modules it cimports as Python too (their C
    declarations are not callable from Python)."""
    source = Path(importlib.import_module(name).__file__ or "").with_name(name.rpartition(".")[2] + ".py")
    spec = importlib.util.spec_from_file_location(f"_python_{name.replace('.', '_')}", source)
    assert spec is not None and spec.loader is not None
    python = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
    linked = {other: _python(other) for other in compiled.cimported(name)}
    kept = {other: sys.modules[other] for other in linked}
    sys.modules.update(linked)
    try:
        spec.loader.exec_module(python)
    finally:
        sys.modules.update(kept)
    return python


if COMPILED:
    wire, py_wire = _both("rockmq.protocol.wire")
    records, py_records = _both("rockmq.protocol.records")
    keys, py_keys = _both("rockmq.store.keys")
    receipt, py_receipt = _both("rockmq.protocol.receipt")
    validate, py_validate = _both("rockmq.broker.validate")
    replies, py_replies = _both("rockmq.protocol.consume_replies")
    ack_request, py_ack_request = _both("rockmq.protocol.ack_request")
    send_request, py_send_request = _both("rockmq.protocol.send_request")

u32, u64 = st.integers(0, 2**32 - 1), st.integers(0, 2**63 - 1)
names = st.text("abcXYZ-_%0189", min_size=1, max_size=12)
texts = st.text(max_size=20)
maybe = st.one_of(st.none(), texts)
statuses = st.one_of(st.none(), st.builds(pb.Status, code=st.sampled_from([pb.OK, pb.BAD_REQUEST, pb.MESSAGE_NOT_FOUND]),
                                          message=texts))


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    """A serialized v2 Message as a producer might send it, valid or not."""
    sp = pb.SystemProperties(message_id=draw(st.text("0123456789ABCDEF", max_size=40)),
                             keys=draw(st.lists(st.sampled_from(["k1", " ", "order-7"]), max_size=3)),
                             message_type=draw(st.sampled_from([pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION, 0])),
                             queue_id=draw(st.integers(0, 9)))
    for field, value in (("tag", draw(st.one_of(st.none(), st.sampled_from(["created", " ", "a|b", "é"])))),
                         ("message_group", draw(st.one_of(st.none(), st.sampled_from(["g1", " ", "group-ü"])))),
                         ("body_encoding", draw(st.one_of(st.none(), st.just(pb.GZIP))))):
        if value is not None:
            setattr(sp, field, value)
    if draw(st.booleans()):
        sp.delivery_timestamp.seconds = draw(st.integers(0, 2_000_000_000))
    msg = pb.Message(topic=pb.Resource(name=draw(st.sampled_from(["orders", "new-topic", "%RETRY%g1", "%DLQ%g1", "bad name"]))),
                     body=draw(st.binary(max_size=2048)), system_properties=sp,
                     user_properties=draw(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=4)))
    if msg.topic.name == "%RETRY%g1" and draw(st.booleans()):
        msg.user_properties[RECONSUME_TIMES] = draw(st.sampled_from(["0", "15", "x"]))
    return msg.SerializeToString()


class Known:
    topics = {"orders": TopicConfig("orders", 7, 4)}
    groups = {"g1": GroupConfig("g1", 3)}


def _outcome(call: Any) -> str:
    """A result or the refusal it raised, comparable across the two builds (their classes differ)."""
    try:
        return repr(call())
    except BrokerError as e:
        return f"BrokerError({e.code}, {e.message!r})"


@settings(max_examples=300, deadline=None)
@given(messages(), st.integers(-1, 7), u32, u64, st.integers(0, 2**45), st.booleans())
def test_validate_and_records(raw: bytes, queue_id: int, queue: int, offset: int, store_ms: int, chosen: bool) -> None:
    now = 1_764_000_000_000
    assert (_outcome(lambda: validate.check_send(pb.Message.FromString(raw), Known, Settings(), now, chosen))
            == _outcome(lambda: py_validate.check_send(pb.Message.FromString(raw), Known, Settings(), now, chosen)))
    sealed = records.seal(pb.Message.FromString(raw), "127.0.0.1:8081", queue_id)
    assert sealed == py_records.seal(pb.Message.FromString(raw), "127.0.0.1:8081", queue_id)
    assert records.chosen_queue(sealed) == py_records.chosen_queue(sealed) == queue_id
    placed = records.place(sealed, queue, offset, store_ms)
    assert placed == py_records.place(sealed, queue, offset, store_ms)
    assert records.view(placed) == py_records.view(placed)
    assert records.message_group(placed) == py_records.message_group(placed)
    assert records.store_ms(placed) == py_records.store_ms(placed) == store_ms
    delivery = records.delivery_fields("handle", queue % 20, offset % 10**7)
    assert delivery == py_records.delivery_fields("handle", queue % 20, offset % 10**7)
    assert records.view(placed).message(delivery) == py_records.view(placed).message(delivery)
    at = keys.log_key(1, queue, offset % UNINDEXED)
    for build in (records, py_records):  # a receive's run: the same frames as one message at a time; bounds all u64
        out: list[bytes] = []
        offsets: list[int] = []
        taken = build.frame_run(iter([(at, placed)] * 3), keys.log_offset, "handle", queue % 20,
                                build.delivery_tail(offset % 10**7, 1), b"\x12", 2, 1 << 30, UNINDEXED, out, offsets)
        assert taken == (sum(map(len, out)), (at, placed)) and offsets == [offset % UNINDEXED] * 2
        assert out == [records.view(placed).message(records.delivery_fields(receipt.handle("handle", queue % 20 + i), 1,
                                                                              offset % 10**7), b"\x12") for i in range(2)]
    sp = pb.SystemProperties.FromString(bytes(records.view(sealed).system_properties))
    rest = bytes(records.view(sealed).rest)
    assert records.seal_parts(sp, rest, b"", "h:1") == py_records.seal_parts(sp, rest, b"", "h:1")


@settings(max_examples=300, deadline=None)
@given(st.lists(messages(), max_size=4), st.integers(0, 2**16), st.binary(max_size=3))
def test_send_request_scan(raws: list[bytes], at: int, spliced: bytes) -> None:
    """The scan of a request, whole or with bytes spliced in or cut off (malformed, mostly)."""
    whole = b"".join(wire.delimited(b"\x0a", raw) for raw in raws)
    for raw in (whole, whole[:at % (len(whole) + 1)] + spliced + whole[at % (len(whole) + 1) + len(spliced):]):
        scanned, py_scanned = send_request.scan(raw), py_send_request.scan(raw)
        assert (None if scanned is None else [tuple(m) for m in scanned]) == (
            None if py_scanned is None else [tuple(m) for m in py_scanned])


@given(st.integers(0, 2**64 - 1), st.binary(max_size=300))
def test_wire(n: int, value: bytes) -> None:
    assert wire.varint(n) == py_wire.varint(n)
    framed = b"x" + wire.varint(n)
    assert wire.read_varint(framed, 1) == py_wire.read_varint(framed, 1) == (n, len(framed))
    assert wire.delimited(b"\x0a", value) == py_wire.delimited(b"\x0a", value)


@given(u32, u32, u32, u64, u64, texts, st.sampled_from([b"c", b"p"]))
def test_keys(a: int, b: int, c: int, offset: int, deadline: int, name: str, kind: bytes) -> None:
    built = [
        ("log_key", (a, b, offset)), ("queue_prefix", (a, b)), ("topic_prefix", (a,)), ("offset_key", (a, b, c, kind)),
        ("inflight_key", (deadline, a, b, offset)), ("checkpoint_key", (a, b, offset)), ("retry_key", (a, b, offset)),
        ("retry_value", (a, offset, b)), ("timer_key", (deadline, offset)), ("txn_check_key", (deadline, name)),
        ("match_key", (a, b, c, offset)), ("dedup_key", (a, b, name)), ("dedup_value", (a, offset, name, name[::-1])),
        ("dedup_value", (a, offset)), ("encode_u64", (offset,)), ("topic_meta", (name,)), ("group_meta", (name,)),
        ("subscription_meta", (a, b)),
    ]
    for fn, args in built:
        key = getattr(keys, fn)(*args)
        assert key == getattr(py_keys, fn)(*args), fn
    for fn, key in (("parse_log_key", keys.log_key(a, b, offset)), ("log_offset", keys.log_key(a, b, offset)),
                    ("parse_checkpoint_key", keys.checkpoint_key(a, b, offset)),
                    ("parse_inflight_key", keys.inflight_key(deadline, a, b, offset)),
                    ("parse_dedup_value", keys.dedup_value(a, offset, name, "")), ("decode_u64", keys.encode_u64(offset)),
                    ("parse_txn_check_key", keys.txn_check_key(deadline, name))):
        assert getattr(keys, fn)(key) == getattr(py_keys, fn)(key), fn


@given(u32, u32, u64, st.integers(0, 2**32 - 1), st.binary(min_size=1, max_size=32))
def test_receipt_handles(group: int, topic: int, checkpoint: int, index: int, secret: bytes) -> None:
    signed = receipt.token(group, topic, checkpoint, secret)
    assert signed == py_receipt.token(group, topic, checkpoint, secret)
    handle = receipt.handle(signed, index)
    assert handle == py_receipt.handle(signed, index)
    assert receipt.runs([handle, handle]) == py_receipt.runs([handle, handle]) == [(signed, [index, index])]
    assert tuple(receipt.decode(handle, secret)) == tuple(py_receipt.decode(handle, secret)) == (group, topic, checkpoint, index)
    for other in (handle[:-2], handle[::-1], "!", signed + ".", handle.replace(".", ":")):
        assert _decoded(receipt, other, secret) == _decoded(py_receipt, other, secret)


def _decoded(module: ModuleType, handle: str, secret: bytes) -> tuple[int, ...] | str:
    try:
        return tuple(module.decode(handle, secret))
    except ValueError as e:  # tokens.InvalidToken
        return str(e)


@given(st.lists(st.binary(max_size=200), max_size=12), st.one_of(st.none(), u64), statuses.filter(bool),
       st.lists(st.tuples(texts, texts, statuses), max_size=12))
def test_replies(found: list[bytes], next_offset: int | None, status: pb.Status,
                 entries: list[tuple[str, str, pb.Status | None]]) -> None:
    assert replies.messages_reply(status, found, next_offset) == py_replies.messages_reply(status, found, next_offset)
    assert replies.ack_reply(status, [e[2] for e in entries]) == py_replies.ack_reply(status, [e[2] for e in entries])
    request = rpc.AckMessageRequest(group=pb.Resource(name="g"), topic=pb.Resource(name="t"), entries=[
        rpc.AckMessageEntry(message_id=m, receipt_handle=h) for m, h, _ in entries]).SerializeToString()
    read, py_read = ack_request.read(request), py_ack_request.read(request)
    assert tuple(read) == tuple(py_read)
    assert replies.ack_message_reply(status, read.entries, [e[2] for e in entries]) \
        == py_replies.ack_message_reply(status, py_read.entries, [e[2] for e in entries])


@given(st.binary(max_size=120), st.lists(st.tuples(texts, texts), max_size=6))
def test_ack_request_scan(garbage: bytes, entries: list[tuple[str, str]]) -> None:
    """Random bytes, and valid requests with bytes appended: both builds read them alike (or neither)."""
    valid = rpc.AckMessageRequest(group=pb.Resource(name="g"), topic=pb.Resource(name="t"), entries=[
        rpc.AckMessageEntry(message_id=m, receipt_handle=h) for m, h in entries]).SerializeToString()
    for data in (garbage, valid + garbage):
        scanned, py_scanned = ack_request.scan(data), py_ack_request.scan(data)
        assert (scanned and tuple(scanned)) == (py_scanned and tuple(py_scanned))
