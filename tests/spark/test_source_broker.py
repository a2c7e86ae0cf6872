"""The source against real brokers, without Spark: the Fetch RPC, queue discovery, offsets by time,
reading partitions, streaming planning (read limits, AvailableNow, new queues, lag), data lost
to retention, and queue identity in a two-broker cluster."""

from __future__ import annotations

import json
import time

import grpc
import pytest
from broker_process import BrokerProcess, NameServerProcess
from mqwire import Conn, message
from waiting import wait_for

from rockmq.protocol import batch, batch_grpc, namesrv, namesrv_grpc, pb, records
from rockmq.spark.arrow import record_slices
from rockmq.spark.fetch import Brokers, DataLossError, SourceError, _fetch_calls, channel, fetch_replies
from rockmq.spark.source import QueueRange, RockmqReader, RockmqStreamReader, SourceOptions, read_range
from rockmq.store import Store, keys


def send(conn: Conn, topic: str, n: int, start: int = 0, **kw) -> list[pb.Message]:
    sent = [message(topic, f"m{start + i}".encode(), keys=(f"k{start + i}",), **kw) for i in range(n)]
    for m in sent:
        conn.send_ok(m)
    return sent


def fetch(endpoint: str, **kw) -> batch.FetchResponse:
    return batch_grpc.BatchMessagingStub(channel(endpoint)).Fetch(batch.FetchRequest(**kw), timeout=10)


def rows(partitions) -> list[dict]:
    return [r for p in partitions for b in read_range(p) for r in b.to_pylist()]


def stream(endpoint: str, topic: str, **options) -> RockmqStreamReader:
    return RockmqStreamReader(SourceOptions.parse({"endpoint": endpoint, "topic": topic, **options}, streaming=True))


def test_fetch_rpc(broker, unique):
    topic = unique("fetch")
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=1)
    sent = send(conn, topic, 10)
    reply = fetch(broker.endpoint, topic=topic, queue_id=0, offset=0)
    assert (reply.status.code, reply.first_offset, reply.count, reply.min_offset, reply.max_offset) == (pb.OK, 0, 10, 0, 10)
    stored = [records.decode(r) for r in record_slices(reply.records, reply.offsets, reply.count)]
    assert [m.system_properties.message_id for m in stored] == [m.system_properties.message_id for m in sent]
    assert [m.system_properties.queue_offset for m in stored] == list(range(10))
    request = batch.FetchRequest(topic=topic, queue_id=0, offset=1, max_records=4)
    raw = _fetch_calls.get((broker.endpoint, None, None))(request, timeout=10)
    upb = fetch(broker.endpoint, topic=topic, queue_id=0, offset=1, max_records=4)  # the reply read without protobuf
    assert (raw.code, raw.first_offset, raw.count, bytes(raw.records), bytes(raw.offsets), raw.min_offset, raw.max_offset) == (
        upb.status.code, upb.first_offset, upb.count, upb.records, upb.offsets, upb.min_offset, upb.max_offset)
    assert fetch(broker.endpoint, topic=topic, queue_id=0, offset=2, max_records=3).count == 3
    assert fetch(broker.endpoint, topic=topic, queue_id=0, offset=2, end_offset=5).count == 3
    assert fetch(broker.endpoint, topic=topic, queue_id=0, offset=2, max_bytes=1).count == 1  # at least one record
    past = fetch(broker.endpoint, topic=topic, queue_id=0, offset=99)
    assert (past.status.code, past.count, past.first_offset, past.max_offset) == (pb.OK, 0, 99, 10)
    assert fetch(broker.endpoint, topic=topic, queue_id=1, offset=0).status.code == pb.BAD_REQUEST
    assert fetch(broker.endpoint, topic=unique("nope"), queue_id=0, offset=0).status.code == pb.TOPIC_NOT_FOUND
    conn.close()


def test_batch_partitions_read_what_was_sent(broker, unique):
    topic = unique("batch")
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=2)
    sent = send(conn, topic, 30, tag="t", properties={"p": "v"})
    reader = RockmqReader(SourceOptions.parse({"endpoint": broker.endpoint, "topic": topic, "maxMessagesPerPartition": "4"},
                                              streaming=False))
    parts = reader.partitions()
    assert all(p.end - p.start <= 4 for p in parts) and len(parts) == 8  # 15 a queue -> 4 + 4 + 4 + 3
    got = rows(parts)
    assert sorted(r["message_id"] for r in got) == sorted(m.system_properties.message_id for m in sent)
    by_id = {m.system_properties.message_id: m for m in sent}
    for r in got:
        m = by_id[r["message_id"]]
        assert (r["topic"], r["broker"], r["body"], r["tag"], r["keys"], dict(r["properties"])) == (
            topic, "broker-a", m.body, "t", list(m.system_properties.keys), {"p": "v"})
        assert r["born_timestamp"].timestamp() * 1000 == pytest.approx(m.system_properties.born_timestamp.ToMilliseconds(), abs=1)
        born_ms = r["born_timestamp"].timestamp() * 1000 // 1  # store times are whole milliseconds
        assert 0 <= round(r["store_timestamp"].timestamp() * 1000) - born_ms < 5000
    assert {(r["queue_id"], r["queue_offset"]) for r in got} == {(q, o) for q in (0, 1) for o in range(15)}
    conn.close()


def test_discovery_and_offsets_by_time(broker, unique):
    topic = unique("times")
    conn = Conn(broker.endpoint)
    conn.create_topic(topic, queues=1)
    brokers = Brokers(broker.endpoint, 10)
    missing = unique("missing")
    assert brokers.queues(missing) == []
    with pytest.raises(grpc.RpcError) as lookup:  # looking did not create it
        conn.describe_topic(missing)
    assert lookup.value.code() == grpc.StatusCode.NOT_FOUND
    send(conn, topic, 3)
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    send(conn, topic, 2, start=3)
    [queue] = brokers.queues(topic)
    assert (queue.key, queue.min_offset, queue.max_offset, queue.endpoint) == ("broker-a:0", 0, 5, broker.endpoint)
    assert [brokers.offset_at(queue, t) for t in (0, middle, middle + 60_000)] == [0, 3, 5]
    read = lambda **o: [r["body"] for r in rows(RockmqReader(SourceOptions.parse(  # noqa: E731
        {"endpoint": broker.endpoint, "topic": topic, **o}, streaming=False)).partitions())]
    assert read(startingOffsets=str(middle)) == [b"m3", b"m4"]
    assert read(endingOffsets=str(middle)) == [b"m0", b"m1", b"m2"]
    assert read(startingOffsets=json.dumps({topic: {"0": 1}}), endingOffsets=json.dumps({topic: {"broker-a:0": 4}})) == [
        b"m1", b"m2", b"m3"]
    assert read(startingOffsets="latest") == []
    with pytest.raises(SourceError, match="does not exist"):
        RockmqReader(SourceOptions.parse({"endpoint": broker.endpoint, "topic": missing}, streaming=False)).partitions()
    conn.close()


def test_streaming_plan_limits_new_topics_and_lag(broker, unique):
    a, b = unique("sa"), unique("sb")
    conn = Conn(broker.endpoint)
    conn.create_topic(a, queues=2)
    send(conn, a, 10)
    reader = stream(broker.endpoint, f"{a},{b}", startingOffsets="earliest", maxMessagesPerTrigger="4")
    start = reader.initialOffset()
    assert start == {a: {"broker-a:0": 0, "broker-a:1": 0}}
    limit = reader.getDefaultReadLimit()
    seen: list[bytes] = []
    for _ in range(3):
        end = reader.latestOffset(start, limit)
        assert sum(end[a].values()) - sum(start[a].values()) == min(4, 10 - len(seen))
        assert reader.reportLatestOffset() == {a: {"broker-a:0": 5, "broker-a:1": 5}}
        seen += [r["body"] for r in rows(reader.partitions(start, end))]
        start = json.loads(json.dumps(end))  # as the checkpoint keeps it
    assert reader.latestOffset(start, limit) == start  # nothing new: no batch
    assert sorted(seen) == sorted(f"m{i}".encode() for i in range(10))

    conn.create_topic(b, queues=1)  # a topic of the query created later: read from its first message
    send(conn, b, 2, start=100)
    send(conn, a, 2, start=200)
    reader.prepareForTriggerAvailableNow()  # AvailableNow: up to here, whatever comes next
    send(conn, a, 3, start=300)
    got = []
    while (end := reader.latestOffset(start, limit)) != start:
        got += [r["body"] for r in rows(reader.partitions(start, end))]
        start = end
    assert sorted(got) == [b"m100", b"m101", b"m200", b"m201"]
    conn.close()


def _drop_oldest(data_dir, topic: str, queue_id: int, upto: int) -> None:
    """What retention does: remove a queue's oldest records (broker stopped)."""
    store = Store(data_dir)
    try:
        topic_id = json.loads(store.get("meta", keys.topic_meta(topic)))["id"]
        wb = store.batch()
        wb.delete_range("log", keys.log_key(topic_id, queue_id, 0), keys.log_key(topic_id, queue_id, upto))
        store.write(wb)
    finally:
        store.close()


def test_data_lost_to_retention(fresh_broker, unique):
    topic = unique("lost")
    conn = Conn(fresh_broker.endpoint)
    conn.create_topic(topic, queues=1)
    send(conn, topic, 10)
    planned = stream(fresh_broker.endpoint, topic, startingOffsets="earliest")
    start = planned.initialOffset()
    conn.close()
    fresh_broker.stop()
    _drop_oldest(fresh_broker.data_dir, topic, 0, 4)
    fresh_broker.start()
    endpoint = fresh_broker.endpoint

    with pytest.raises(DataLossError, match=r"messages \[0, 4\) of queue broker-a:0 of topic .* removed .*failOnDataLoss=false"):
        stream(endpoint, topic, startingOffsets="earliest").latestOffset(start, planned.getDefaultReadLimit())
    part = QueueRange(endpoint, topic, "broker-a", 0, 0, 10, True, 10)
    with pytest.raises(DataLossError, match=r"\[0, 4\)"):
        rows([part])
    part.fail_on_data_loss = False
    assert [r["queue_offset"] for r in rows([part])] == list(range(4, 10))
    lenient = stream(endpoint, topic, startingOffsets="earliest", failOnDataLoss="false")
    end = lenient.latestOffset(start, lenient.getDefaultReadLimit())
    assert [r["body"] for r in rows(lenient.partitions(start, end))] == [f"m{i}".encode() for i in range(4, 10)]
    assert list(fetch_replies(endpoint, topic, "broker-a", 0, 10, 10, fail_on_data_loss=True)) == []


def test_cluster_queues_are_named_by_broker(tmp_path, unique):
    ns = NameServerProcess().start()
    env = {"ROCKMQ_NAMESRV_INTERVAL_S": "0.3"}
    b1 = BrokerProcess(tmp_path / "b1", "--broker-name", "b1", "--namesrv", ns.endpoint, env=env).start()
    b2 = BrokerProcess(tmp_path / "b2", "--broker-name", "b2", "--namesrv", ns.endpoint, env=env).start()
    try:
        topic = unique("spread")
        conn = Conn(b1.endpoint)
        with grpc.insecure_channel(ns.endpoint) as ch:  # both brokers registered: the topic spreads over both
            stub = namesrv_grpc.NameServerStub(ch)
            wait_for(lambda: len(stub.ListBrokers(namesrv.ListBrokersRequest(), timeout=5).brokers) == 2, 15, 0.1,
                     what="both brokers registered")
        conn.create_topic(topic, queues=2)
        assert sorted(q.broker for q in conn.describe_topic(topic).queues) == ["b1", "b2"]
        other = Conn(b2.endpoint)
        sent = send(conn, topic, 6) + send(other, topic, 6, start=6)  # each broker stores into its own queue
        other.close()
        queues = Brokers(b2.endpoint, 10).queues(topic)
        assert [(q.key, q.endpoint) for q in queues] == [("b1:0", b1.endpoint), ("b2:0", b2.endpoint)]
        reader = RockmqReader(SourceOptions.parse({"endpoint": b2.endpoint, "topic": topic}, streaming=False))
        got = rows(reader.partitions())
        assert sorted(r["message_id"] for r in got) == sorted(m.system_properties.message_id for m in sent)
        assert {(r["broker"], r["queue_id"]) for r in got} <= {("b1", 0), ("b2", 0)}
        assert len({(r["broker"], r["queue_id"], r["queue_offset"]) for r in got}) == 12  # unique only with the broker
        conn.close()
    finally:
        b1.kill()
        b2.kill()
        ns.kill()
