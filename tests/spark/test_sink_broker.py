"""The sink's two halves without Spark: the row encoder, and the broker's stage / publish-once
protocol (broker/staging.py) against real brokers, including a broker killed mid-publish."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from mqwire import Conn
from waiting import wait_for

from rockmq.protocol import batch as batch_pb
from rockmq.protocol import batch_grpc, pb
from rockmq.protocol.field_keys import MessageFields
from rockmq.protocol.wire import delimited
from rockmq.spark.sink_wire import Encoder, RowError, id_prefix, stage_request


def stage_calls(conn: Conn):
    stub = batch_grpc.BatchMessagingStub(conn.channel)
    raw_stage = conn.channel.unary_unary("/rockmq.messaging.v1.BatchMessaging/Stage", request_serializer=None,
                                         response_deserializer=batch_pb.StageResponse.FromString)
    return stub, raw_stage


def encode(default_topic: str, bodies: list[bytes], prefix: str = "T", **columns) -> list[tuple[bytes, bytes]]:
    batch = pa.RecordBatch.from_pydict({"body": bodies, **columns})
    return list(Encoder(default_topic, "test-host", prefix).messages(batch, 1_700_000_000_123_456))


def decode(raw: bytes) -> tuple[batch_pb.StageRequest, list[pb.Message]]:
    """A serialized StageRequest, and its messages put together as SendMessage would carry them."""
    request = batch_pb.StageRequest.FromString(raw)
    return request, [pb.Message.FromString(c + delimited(MessageFields.SYSTEM_PROPERTIES, sp))
                     for sp, c in zip(request.system_properties, request.contents, strict=True)]


def stage(conn: Conn, messages: list[tuple[bytes, bytes]], *, ttl_ms: int = 0, dedup: bool = False) -> batch_pb.StagedChunk:
    _, raw_stage = stage_calls(conn)
    reply = raw_stage(stage_request(messages, ttl_ms, dedup), timeout=10)
    assert reply.status.code == pb.OK, reply.status
    return batch_pb.StagedChunk(handle=reply.handle, count=reply.count)


def publish(conn: Conn, sink: str, batch_id: int, chunks, timeout: float = 30) -> batch_pb.PublishStagedResponse:
    stub, _ = stage_calls(conn)
    return stub.PublishStaged(batch_pb.PublishStagedRequest(sink_id=sink, batch_id=batch_id, chunks=chunks), timeout=timeout)


def read_topic(conn: Conn, topic: str) -> list[pb.Message]:
    """Every message in the topic's queues (BatchMessaging.Pull: many per reply)."""
    stub = batch_grpc.BatchMessagingStub(conn.channel)
    out: list[pb.Message] = []
    for q in conn.describe_topic(topic).queues:
        offset = q.min_offset
        while offset < q.max_offset:
            reply = stub.Pull(batch_pb.PullRequest(group="sink-test-reader", topic=topic, queue_id=q.queue_id, offset=offset,
                                                   batch_size=4096), timeout=10)
            assert reply.status.code == pb.OK, reply.status
            out.extend(pb.Message.FromString(m) for m in reply.messages)
            offset = reply.next_offset
    return out


def visible(conn: Conn, topic: str) -> int:
    return sum(q.max_offset - q.min_offset for q in conn.describe_topic(topic).queues)


def bodies_of(conn: Conn, topic: str) -> list[bytes]:
    return sorted(m.body for m in read_topic(conn, topic))


# --- the encoder -----------------------------------------------------------------------------


def test_encoder_bytes_parse_as_the_messages_meant():
    due = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    columns = {
        "topic": ["other", None, None],
        "tag": ["t1", None, "t3"],
        "keys": [["k1", "k2"], None, []],
        "message_group": [None, "g", None],
        "delivery_timestamp": pa.array([None, None, due], pa.timestamp("us", tz="UTC")),
        "properties": pa.array([[("a", "1")], None, [("b", "2"), ("c", "")]], pa.map_(pa.string(), pa.string())),
    }
    frames = encode("main", [b"one", b"two", b"x" * 300], **columns)
    request, messages = decode(stage_request(frames, 5000, True))
    assert request.ttl_ms == 5000 and request.deduplicate
    m0, m1, m2 = messages
    assert (m0.topic.name, m1.topic.name, m2.topic.name) == ("other", "main", "main")
    assert [m.body for m in messages] == [b"one", b"two", b"x" * 300]
    assert all(m.system_properties.body_digest.checksum == hashlib.sha1(m.body).hexdigest().upper() for m in messages)
    assert m0.system_properties.tag == "t1" and not m1.system_properties.HasField("tag")
    assert list(m0.system_properties.keys) == ["k1", "k2"] and not m2.system_properties.keys
    assert m1.system_properties.message_group == "g" and m1.system_properties.message_type == pb.FIFO
    assert m0.system_properties.message_type == pb.NORMAL
    assert m2.system_properties.message_type == pb.DELAY
    assert m2.system_properties.delivery_timestamp.ToDatetime(UTC) == due
    assert dict(m0.user_properties) == {"a": "1"} and dict(m2.user_properties) == {"b": "2", "c": ""}
    assert [m.system_properties.message_id for m in messages] == ["T00000000", "T00000001", "T00000002"]
    sp = m0.system_properties
    assert sp.born_host == "test-host" and sp.body_encoding == pb.IDENTITY
    assert sp.born_timestamp.ToMicroseconds() == 1_700_000_000_123_456


def test_encoder_fast_path_and_row_errors():
    enc = Encoder("main", "h", "P")
    frames = list(enc.messages(pa.RecordBatch.from_pydict({"body": pa.array(["a", "b"], pa.string())}), 1))
    more = list(enc.messages(pa.RecordBatch.from_pydict({"body": [b"c"]}), 1))
    _, messages = decode(stage_request(frames + more, 0, False))
    assert all(m.system_properties.body_digest.type == pb.SHA1 for m in messages)
    assert [(m.body, m.system_properties.message_id) for m in messages] == [
        (b"a", "P00000000"), (b"b", "P00000001"), (b"c", "P00000002")]
    with pytest.raises(RowError, match="row 3: body is null"):
        list(enc.messages(pa.RecordBatch.from_pydict({"body": pa.array([None], pa.binary())}), 1))
    with pytest.raises(RowError, match="cannot be delayed"):
        encode("main", [b"x"], message_group=["g"], delivery_timestamp=pa.array([0], pa.timestamp("us", tz="UTC")))
    with pytest.raises(RowError, match="topic is null and no `topic` option"):
        list(Encoder(None, "h", "P").messages(pa.RecordBatch.from_pydict({"body": [b"x"], "topic": [None]}), 1))
    assert id_prefix("q", 3, 1) == id_prefix("q", 3, 1) != id_prefix("q", 3, 2)
    assert len(id_prefix("q", 3, 1)) == 24


# --- the broker's stage / publish-once protocol ---------------------------------------------


def test_staged_chunks_publish_once_per_sink_batch(broker, unique):
    topic, sink = unique("stage"), unique("sink")
    conn = Conn(broker.endpoint)
    try:
        c1 = stage(conn, encode(topic, [b"a", b"b"], prefix="A"))
        c2 = stage(conn, encode(topic, [b"c"], prefix="B"))
        assert conn.describe_topic(topic).queues and bodies_of(conn, topic) == []  # staged: invisible
        reply = publish(conn, sink, 7, [c1, c2])
        assert reply.status.code == pb.OK and not reply.duplicate and reply.published == 3
        assert bodies_of(conn, topic) == [b"a", b"b", b"c"]
        # The same call again (a retry), a replayed batch with new chunks, an older batch: dropped.
        again = publish(conn, sink, 7, [c1, c2])
        assert again.status.code == pb.OK and again.duplicate and again.published == 0
        replay = stage(conn, encode(topic, [b"a", b"b"], prefix="A"))
        assert publish(conn, sink, 7, [replay]).duplicate
        assert publish(conn, sink, 3, [stage(conn, encode(topic, [b"old"]))]).duplicate
        assert bodies_of(conn, topic) == [b"a", b"b", b"c"]
        # Dropped chunks are gone: naming one again publishes nothing, and says why.
        gone = publish(conn, sink, 8, [stage(conn, encode(topic, [b"d"])), replay])
        assert gone.status.code == pb.NOT_FOUND and "nothing of batch 8 was published" in gone.status.message
        assert bodies_of(conn, topic) == [b"a", b"b", b"c"]
        # ...and batch 8 was not recorded: it can still be published.
        assert publish(conn, sink, 8, [stage(conn, encode(topic, [b"d"]))]).published == 1
        # Discarded chunks cannot be published; a wrong count is refused.
        stub, _ = stage_calls(conn)
        dropped = stage(conn, encode(topic, [b"e"]))
        stub.DiscardStaged(batch_pb.DiscardStagedRequest(handles=[dropped.handle]), timeout=10)
        assert publish(conn, sink, 9, [dropped]).status.code == pb.NOT_FOUND
        wrong = stage(conn, encode(topic, [b"f"]))
        assert publish(conn, sink, 9, [batch_pb.StagedChunk(handle=wrong.handle, count=2)]).status.code == pb.BAD_REQUEST
        assert bodies_of(conn, topic) == [b"a", b"b", b"c", b"d"]
    finally:
        conn.close()


def test_stage_validates_like_send_and_keeps_every_field(broker, unique):
    topic = unique("stage-fields")
    conn = Conn(broker.endpoint)
    try:
        _, raw_stage = stage_calls(conn)
        bad = raw_stage(stage_request(encode(topic, [b"ok", b"bad"], tag=["fine", "a|b"]), 0, False), timeout=10)
        assert bad.status.code == pb.ILLEGAL_MESSAGE_TAG and "message 1" in bad.status.message
        empty = raw_stage(stage_request(encode(topic, [b""]), 0, False), timeout=10)
        assert empty.status.code == pb.MESSAGE_BODY_EMPTY
        ((sp, contents),) = encode(topic, [b"body"])
        tampered = raw_stage(stage_request([(sp, contents.replace(b"body", b"bodY"))], 0, False), timeout=10)
        assert tampered.status.code == pb.MESSAGE_CORRUPTED and "digest" in tampered.status.message
        due_us = (time.time_ns() // 1000) + 1_500_000
        chunk = stage(conn, encode(topic, [b"now", b"later"], tag=["t", None], keys=[["k"], None],
                                   properties=pa.array([[("p", "v")], None], pa.map_(pa.string(), pa.string())),
                                   delivery_timestamp=pa.array([None, due_us], pa.timestamp("us", tz="UTC"))))
        assert publish(conn, unique("sink"), 0, [chunk]).published == 2
        (now,) = read_topic(conn, topic)  # the delayed one waits in the timers
        assert (now.body, now.system_properties.tag, list(now.system_properties.keys), dict(now.user_properties)) == (
            b"now", "t", ["k"], {"p": "v"})
        assert now.system_properties.body_digest.checksum  # sealed like a sent message
        later = wait_for(lambda: next((m for m in read_topic(conn, topic) if m.body == b"later"), None), 10,
                         what="the delayed message in its queue")
        assert later.system_properties.delivery_timestamp.ToMicroseconds() // 1000 == due_us // 1000
        assert time.time_ns() // 1000 >= due_us - 5000
    finally:
        conn.close()


def test_application_ids_are_deduplicated_across_batches(broker, unique):
    topic, sink = unique("stage-dedup"), unique("sink")
    conn = Conn(broker.endpoint)
    try:
        ids = {"message_id": ["id-1", "id-2", "id-1"]}
        first = publish(conn, sink, 0, [stage(conn, encode(topic, [b"1", b"2", b"1again"], **ids), dedup=True)])
        assert (first.published, first.deduplicated) == (2, 1)
        second = publish(conn, sink, 1, [stage(conn, encode(topic, [b"1", b"3"], message_id=["id-1", "id-3"]), dedup=True)])
        assert (second.published, second.deduplicated) == (1, 1)
        assert bodies_of(conn, topic) == [b"1", b"2", b"3"]
    finally:
        conn.close()


def test_publish_is_exactly_once_through_a_broker_kill(fresh_broker, unique):
    """kill -9 the broker while it moves a big batch; the writer's retry then finishes it, once."""
    topic, sink = unique("stage-kill"), unique("sink")
    conn = Conn(fresh_broker.endpoint)
    total, per_chunk = 120_000, 2000
    chunks = [stage(conn, encode(topic, [b"%d" % (i * per_chunk + j) for j in range(per_chunk)], prefix=f"C{i:04d}"))
              for i in range(total // per_chunk)]
    outcome: list = []
    caller = threading.Thread(target=lambda: outcome.append(_try_publish(conn, sink, chunks)))
    caller.start()
    watcher = Conn(fresh_broker.endpoint)
    deadline = time.monotonic() + 30
    while not 0 < (seen := visible(watcher, topic)) < total and time.monotonic() < deadline:
        pass
    fresh_broker.kill()  # partly moved: the decision is durable, the job is not done
    watcher.close()
    assert 0 < seen < total, seen
    caller.join()
    conn.close()
    fresh_broker.start()
    conn = Conn(fresh_broker.endpoint)
    try:
        retry = publish(conn, sink, 0, chunks, timeout=60)  # what the sink's driver does on a failed call
        assert retry.status.code == pb.OK, retry.status
        bodies = [m.body for m in read_topic(conn, topic)]
        assert len(bodies) == total and len(set(bodies)) == total
        assert retry.duplicate and outcome == ["_InactiveRpcError"]
        assert any("resuming the publish" in line for line in fresh_broker.log)
    finally:
        conn.close()


def _try_publish(conn: Conn, sink: str, chunks) -> str:
    try:
        reply = publish(conn, sink, 0, chunks, timeout=60)
        return f"published {reply.published}"
    except Exception as e:  # the broker died under it
        return type(e).__name__


def test_unpublished_chunks_and_batch_jobs_are_forgotten(tmp_path):
    from rockmq.broker import staging
    from rockmq.broker.server import Broker
    from rockmq.config import Settings

    async def scenario():
        b = Broker(Settings(data_dir=str(tmp_path / "data"), port=0))
        try:
            s = b.staging
            topic = "expiry"
            request = batch_pb.StageRequest.FromString(stage_request(encode(topic, [b"x"]), 0, False))
            handle, _ = s.stage(request.system_properties, request.contents, 1000, False)
            now = int(time.time() * 1000)
            s.sweep(now)
            assert b.ctx.store.get("staging", staging._chunk_key(handle)) is not None
            s._job_floor[0] = staging._bucket(handle)  # a job that needs it: kept
            s.sweep(now + 10 * staging.BUCKET_MS)
            assert b.ctx.store.get("staging", staging._chunk_key(handle)) is not None
            del s._job_floor[0]
            s.sweep(now + 10 * staging.BUCKET_MS)
            assert b.ctx.store.get("staging", staging._chunk_key(handle)) is None
            assert b.ctx.store.get("staging", staging._index_key(handle)) is None
            # A sink's last batch is kept for its retain time (a batch job's), or for ever.
            request = batch_pb.StageRequest.FromString(stage_request(encode(topic, [b"y"]), 0, False))
            kept, _ = s.stage(request.system_properties, request.contents, 0, False)
            assert await s.publish("job", 0, [(kept, 1)], 60_000) == (False, 1, 0)
            request = batch_pb.StageRequest.FromString(stage_request(encode(topic, [b"z"]), 0, False))
            streamed, _ = s.stage(request.system_properties, request.contents, 0, False)
            assert await s.publish("stream", 4, [(streamed, 1)], 0) == (False, 1, 0)
            s.sweep(now + 120_000)
            assert s.last_batch("job") is None and s.last_batch("stream") == 4
        finally:
            b.ctx.store.close()

    asyncio.run(scenario())


def test_a_users_sink_recorded_before_sinks_were_scoped_keeps_its_last_batch(tmp_path):
    """A sink an authenticated user published to before sink ids were scoped to users was kept
    under its bare id, its owner beside it: the owner's replay of its last batch is still a
    duplicate (an upgrade must not publish a batch twice), and the next publish moves it under the
    user's name. Another user's, or one kept without an owner, is not taken over."""
    from rockmq.broker import staging
    from rockmq.broker.server import Broker
    from rockmq.config import Settings
    from rockmq.store import keys

    def chunk(s: staging.StagingService, body: bytes) -> list[tuple[bytes, int]]:
        request = batch_pb.StageRequest.FromString(stage_request(encode("scoped", [body]), 0, False))
        return [(s.stage(request.system_properties, request.contents, 0, False, "alice")[0], 1)]

    async def scenario():
        b = Broker(Settings(data_dir=str(tmp_path / "data"), port=0))
        try:
            s, store = b.staging, b.ctx.store
            legacy = keys.SINK_STATE + b"q1"
            write = store.batch()
            write.put("staging", legacy, b"S" + staging._SINK_STATE.pack(5, 0) + b"alice")
            write.put("staging", keys.SINK_STATE + b"q2", b"S" + staging._SINK_STATE.pack(5, 0))  # no owner
            store.write(write)
            assert s.last_batch("q1", "alice") == 5 and s.last_batch("q1", "bob") is None
            assert s.last_batch("q2", "alice") is None and s.last_batch("q2") == 5
            assert await s.publish("q1", 5, chunk(s, b"replayed"), 0, "alice") == (True, 0, 0)
            assert await s.publish("q1", 6, chunk(s, b"next"), 0, "alice") == (False, 1, 0)
            assert store.get("staging", legacy) is None
            assert store.get("staging", keys.SINK_STATE + staging.sink_ref("q1", "alice").encode()) is not None
            assert s.last_batch("q1", "alice") == 6
            with pytest.raises(staging.BrokerError, match="control character"):
                await s.publish("a\x00b", 0, chunk(s, b"x"), 0)
        finally:
            b.ctx.store.close()

    asyncio.run(scenario())
