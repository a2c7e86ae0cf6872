"""Finding stored messages on a real broker (issue 28 §4): `rockmq message get/find/list` and the
Messages service behind them, by id, by key within a time window and by store time; what they
say when more matched; bad input in one line; with --auth, Sub on the topic; retention trimming
the index."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import grpc
import pytest
from acl_setup import SECRETS, TOPIC, start_acl_broker
from harness import BrokerHarness
from mqwire import message
from waiting import wait_for

from rockmq.broker import message_index
from rockmq.protocol import messages, messages_grpc
from rockmq.store.schema import Family


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def one_line(result, code: int, says: str) -> None:
    assert (result.returncode, result.stdout) == (code, ""), result
    assert result.stderr.count("\n") == 1 and says in result.stderr and "Traceback" not in result.stderr, result.stderr


def ids(stdout: str) -> list[str]:
    return [m["message_id"] for m in json.loads(stdout)["messages"]]


@pytest.fixture
def stored(broker, conn, unique):
    """A topic of 3 queues holding 5 messages: keys order-1 (x3, one also keyed vip) and order-2."""
    topic = unique("find")
    conn.create_topic(topic, queues=3)
    before = int(time.time() * 1000)
    sent = [message(topic, '{"n": 1}', keys=("order-1",), tag="a", properties={"region": "eu"}),
            message(topic, "two", keys=("order-2",)),
            message(topic, "three", keys=("order-1", "vip")),
            message(topic, "four"),
            message(topic, "five", keys=("order-1",))]
    for m in sent:  # one by one: store times in this order
        conn.send_ok(m)
        time.sleep(0.005)
    return topic, [m.system_properties.message_id for m in sent], before, int(time.time() * 1000)


def test_get_by_id_shows_headers_properties_and_body(broker, stored):
    topic, sent, _, _ = stored
    out = ok(broker.cli("message", "get", topic, sent[0]))
    assert f"message_id:     {sent[0]}" in out and "keys:           order-1" in out and "tag:            a" in out
    assert "properties:     region=eu" in out and 'body:           {"n": 1}' in out
    (shown,) = json.loads(ok(broker.cli("message", "get", topic, sent[0], "--json", "--body-format", "json")))["messages"]
    assert shown["body"] == {"n": 1} and shown["properties"] == {"region": "eu"} and shown["topic"] == topic
    assert shown["stored"] and shown["offset"] == 0
    (hexed,) = json.loads(ok(broker.cli("message", "get", topic, sent[1], "--json", "--body-format", "hex")))["messages"]
    assert hexed["body"] == b"two".hex()


def test_find_by_key_within_a_window_oldest_first(broker, stored):
    topic, sent, before, after = stored
    assert ids(ok(broker.cli("message", "find", topic, "--key", "order-1", "--json"))) == [sent[0], sent[2], sent[4]]
    assert ids(ok(broker.cli("message", "find", topic, "--key", "vip", "--json"))) == [sent[2]]
    assert ids(ok(broker.cli("message", "find", topic, "--key", "order-1", "--from", iso(before), "--to", iso(after),
                             "--json"))) == [sent[0], sent[2], sent[4]]
    assert ids(ok(broker.cli("message", "find", topic, "--key", "order-1", "--to", iso(before - 1000), "--json"))) == []
    limited = json.loads(ok(broker.cli("message", "find", topic, "--key", "order-1", "--max", "2", "--json")))
    assert [m["message_id"] for m in limited["messages"]] == sent[0:3:2] and limited["more"] is True
    text = ok(broker.cli("message", "find", topic, "--key", "order-1", "--max", "2"))
    assert "more matched: showing the first 2" in text
    assert "no message matched" in ok(broker.cli("message", "find", topic, "--key", "nobody"))


def test_list_by_store_time_across_queues(broker, stored):
    topic, sent, before, after = stored
    assert ids(ok(broker.cli("message", "list", topic, "--from", iso(before), "--json"))) == sent
    assert ids(ok(broker.cli("message", "list", topic, "--from", iso(before), "--to", iso(after), "--max", "3",
                             "--json"))) == sent[:3]
    assert json.loads(ok(broker.cli("message", "list", topic, "--from", iso(before), "--max", "3", "--json")))["more"]
    assert ids(ok(broker.cli("message", "list", topic, "--from", iso(after + 1000), "--json"))) == []


def test_the_service_answers_scripts(broker, stored):
    topic, sent, before, _ = stored
    with grpc.insecure_channel(broker.endpoint) as channel:
        stub = messages_grpc.MessagesStub(channel)
        reply = stub.FindMessages(messages.FindMessagesRequest(topic=topic, key="order-2", from_ms=before), timeout=10)
        (found,) = reply.messages
        assert found.message.system_properties.message_id == sent[1] and found.broker and not reply.more
        with pytest.raises(grpc.RpcError) as e:
            stub.ListMessages(messages.ListMessagesRequest(topic=topic, from_ms=10, to_ms=5), timeout=10)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_bad_input_is_one_line(broker, stored):
    topic, _, _, _ = stored
    one_line(broker.cli("message", "get", topic, "NO-SUCH-ID"), 1, f"no message 'NO-SUCH-ID' in topic {topic!r}")
    one_line(broker.cli("message", "get", "no-such-topic", "X"), 1, "topic 'no-such-topic' does not exist")
    one_line(broker.cli("message", "list", topic, "--from", "yesterday"), 2, "--from: invalid time 'yesterday'")
    one_line(broker.cli("message", "find", topic, "--key", "k", "--from", "2026-01-01T00:00:00"), 2, "has no zone")
    one_line(broker.cli("message", "list", topic, "--from", "2026-01-02T00:00:00Z", "--to", "2026-01-01T00:00:00Z"),
             2, "--to is before --from")
    one_line(broker.cli("message", "trace", topic, "NO-SUCH-ID"), 1, "no message 'NO-SUCH-ID'")
    one_line(broker.cli("message", "list", topic, "--from", "1969-12-31T00:00:00Z"), 1, "cannot start before 1970")


@pytest.mark.broker_settings(retention_s=1, retention_check_s=3600)  # only the sweeps the test runs
def test_retention_trims_the_index(harness, monkeypatch):
    monkeypatch.setattr(message_index, "HOUR_MS", 1000)  # index "hours" of a second: trimmed within the test
    conn = harness.conn
    conn.create_topic("aging", queues=1)
    old = [message("aging", f"old {i}", keys=("k",)) for i in range(3)]
    conn.send_ok(*old)
    time.sleep(2.2)  # past retention, and their second is over
    (new,) = conn.send_ok(message("aging", "new", keys=("k",)))
    broker = harness.services
    topic = harness.topic("aging")
    assert topic is not None

    def entries() -> int:
        return sum(1 for _ in broker.ctx.store.scan_prefix(Family.INDEX, topic.id.to_bytes(4, "big")))

    assert harness.call(entries) == 8  # an id entry and a key entry per message
    assert harness.run(broker.retention.sweep()) == 3
    assert harness.call(entries) == 2  # the old messages' hours are gone: the new one's stay
    stub = messages_grpc.MessagesStub(conn.channel)
    with pytest.raises(grpc.RpcError) as e:
        stub.GetMessage(messages.GetMessageRequest(topic="aging", message_id=old[0].system_properties.message_id), timeout=10)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    found = stub.FindMessages(messages.FindMessagesRequest(topic="aging", key="k"), timeout=10).messages
    assert [m.message.system_properties.message_id for m in found] == [new.message_id]


def test_with_auth_reading_needs_sub_on_the_topic(tmp_path):
    """bob consumes the topic (Sub): he finds and traces its messages; alice only publishes to it: refused."""
    broker = start_acl_broker(tmp_path / "data")
    try:
        def as_user(user: str, *args: str):
            return broker.cli(*args, "--access-key", user, "--secret-key", SECRETS[user])

        sent = as_user("alice", "message", "send", TOPIC, "secret order", "--key", "o-1")
        assert sent.returncode == 0, sent.stderr
        message_id = sent.stdout.split()[1]
        assert ids(ok(as_user("bob", "message", "find", TOPIC, "--key", "o-1", "--json"))) == [message_id]
        assert "stored" in ok(as_user("bob", "message", "trace", TOPIC, message_id))
        refused = as_user("alice", "message", "get", TOPIC, message_id)
        one_line(refused, 1, "alice")
        assert "Sub" in refused.stderr and "secret order" not in refused.stderr
    finally:
        broker.stop()


def test_a_replica_finds_and_traces_what_it_holds(tmp_path):
    """Finding and tracing only read: a replica answers them (as it answers pulls) instead of naming its primary."""
    primary = BrokerHarness(tmp_path / "primary", replication="async").start()
    replica = BrokerHarness(tmp_path / "replica", replica_of=primary.endpoint).start()
    try:
        primary.conn.create_topic("replicated", queues=1)
        (sent,) = primary.conn.send_ok(message("replicated", "held", keys=("rk",)))
        wait_for(lambda: len(replica.stored("replicated")) == 1, 15, 0.1, what="the replica to hold the message")
        stub = messages_grpc.MessagesStub(replica.conn.channel)
        got = stub.GetMessage(messages.GetMessageRequest(topic="replicated", message_id=sent.message_id), timeout=10)
        assert [m.message.body for m in got.messages] == [b"held"]
        found = stub.FindMessages(messages.FindMessagesRequest(topic="replicated", key="rk"), timeout=10).messages
        assert [m.message.system_properties.message_id for m in found] == [sent.message_id]
        listed = stub.ListMessages(messages.ListMessagesRequest(topic="replicated"), timeout=10).messages
        assert len(listed) == 1
        stub.TraceMessage(messages.TraceMessageRequest(topic="replicated", message_id=sent.message_id), timeout=10)
    finally:
        replica.stop()
        primary.stop()
