"""Lite topics on one broker (issue 29 §1, §2), spoken as the official clients speak them: per-client
subscriptions, in-order delivery per lite topic, the Python client's split names, wildcard groups,
quotas, expiry and the listing."""

from __future__ import annotations

import threading
import time

import pytest
from mqwire import RPC_TIMEOUT, message

from rockmq.plumbing.channels import CLIENT_ID_HEADER, LANGUAGE_HEADER, VERSION_HEADER
from rockmq.protocol import admin, pb, rpc


def lite_message(topic: str, lite: str, body: str) -> pb.Message:
    msg = message(topic, body)
    msg.system_properties.message_type = pb.LITE
    msg.system_properties.lite_topic = lite
    return msg


def meta(client: str, language: str = "JAVA") -> list[tuple[str, str]]:
    """An official client's headers (rockmq's own say PYTHON and rockmq)."""
    return [(CLIENT_ID_HEADER, client), (LANGUAGE_HEADER, language), (VERSION_HEADER, "5.1.2")]


class Lite:
    """A lite consumer of one group and parent, as a client id (its own subscriptions)."""

    def __init__(self, conn, group: str, topic: str, client: str, language: str = "JAVA") -> None:
        self.conn, self.group, self.topic, self.meta = conn, group, topic, meta(client, language)

    def sync(self, action: int, *names: str) -> rpc.SyncLiteSubscriptionResponse:
        return self.conn.mq.SyncLiteSubscription(rpc.SyncLiteSubscriptionRequest(
            action=action, topic=pb.Resource(name=self.topic), group=pb.Resource(name=self.group),
            lite_topic_set=list(names)), metadata=self.meta, timeout=RPC_TIMEOUT)

    def receive(self, poll_s: float = 0.0, batch: int = 32, invisible_ms: int = 30_000) -> list[pb.Message]:
        req = rpc.ReceiveMessageRequest(group=pb.Resource(name=self.group), batch_size=batch,
                                        message_queue=pb.MessageQueue(topic=pb.Resource(name=self.topic), id=0),
                                        filter_expression=pb.FilterExpression(type=pb.TAG, expression="*"))
        req.invisible_duration.FromMilliseconds(invisible_ms)
        req.long_polling_timeout.FromMilliseconds(int(poll_s * 1000))
        frames = list(self.conn.mq.ReceiveMessage(req, metadata=self.meta, timeout=poll_s + RPC_TIMEOUT))
        assert frames[0].status.code in (pb.OK, pb.MESSAGE_NOT_FOUND), frames[0]
        return [f.message for f in frames if f.WhichOneof("content") == "message"]

    def ack(self, *messages: pb.Message) -> None:
        reply = self.conn.mq.AckMessage(rpc.AckMessageRequest(
            group=pb.Resource(name=self.group), topic=pb.Resource(name=self.topic),
            entries=[rpc.AckMessageEntry(message_id=m.system_properties.message_id,
                                         receipt_handle=m.system_properties.receipt_handle,
                                         lite_topic=m.system_properties.lite_topic) for m in messages]),
            metadata=self.meta, timeout=RPC_TIMEOUT)
        assert reply.status.code == pb.OK, reply


def bodies(messages: list[pb.Message]) -> list[tuple[str, str]]:
    return [(m.system_properties.lite_topic, m.body.decode()) for m in messages]


@pytest.fixture
def parent(harness, unique):
    topic = unique("lite")
    harness.conn.admin.CreateTopic(admin.CreateTopicRequest(name=topic, queue_count=2, message_types=["LITE"]),
                                   timeout=RPC_TIMEOUT)
    return topic


def test_each_client_receives_only_its_lite_topics_in_order(harness, unique, parent):
    group = unique("g")
    a, b = Lite(harness.conn, group, parent, "client-a"), Lite(harness.conn, group, parent, "client-b")
    assert a.sync(pb.PARTIAL_ADD, "l1").status.code == pb.OK
    assert b.sync(pb.COMPLETE_ADD, "l2").status.code == pb.OK
    harness.conn.send_ok(*(lite_message(parent, lite, f"{lite}-{i}") for i in range(3) for lite in ("l1", "l2", "l3")))
    got = a.receive()
    assert bodies(got) == [("l1", "l1-0"), ("l1", "l1-1"), ("l1", "l1-2")]
    assert all(m.system_properties.message_type == pb.LITE and m.topic.name == parent for m in got)
    assert bodies(b.receive()) == [("l2", "l2-0"), ("l2", "l2-1"), ("l2", "l2-2")]
    harness.conn.send_ok(lite_message(parent, "l1", "l1-3"))
    assert a.receive() == []  # l1 is held while its earlier messages are in flight
    a.ack(*got)
    assert bodies(a.receive(poll_s=2)) == [("l1", "l1-3")]


def test_a_new_message_wakes_the_subscribed_receive(harness, unique, parent):
    a = Lite(harness.conn, unique("g"), parent, "client-a")
    a.sync(pb.PARTIAL_ADD, "wake")
    assert a.receive() == []
    sent = time.monotonic()
    woken = harness.services.ctx.logs.arrivals.woken

    def send_soon() -> None:
        time.sleep(0.3)
        harness.conn.send_ok(lite_message(parent, "other", "x"), lite_message(parent, "wake", "y"))

    threading.Thread(target=send_soon).start()
    assert bodies(a.receive(poll_s=5)) == [("wake", "y")]
    assert time.monotonic() - sent < 3
    assert harness.services.ctx.logs.arrivals.woken == woken + 1


def test_the_python_clients_split_partial_add_is_one_name(harness, unique, parent):
    py = Lite(harness.conn, unique("g"), parent, "client-py", language="PYTHON")
    assert py.sync(pb.PARTIAL_ADD, *"s1").status.code == pb.OK  # subscribe_lite("s1") of rocketmq-python-client 5.1.2
    harness.conn.send_ok(lite_message(parent, "s1", "hello"))
    assert bodies(py.receive(poll_s=2)) == [("s1", "hello")]
    java = Lite(harness.conn, unique("g"), parent, "client-java")
    java.sync(pb.PARTIAL_ADD, "s", "1")  # two one-letter names from any other client
    harness.conn.send_ok(lite_message(parent, "s", "one"))
    assert bodies(java.receive(poll_s=2)) == [("s", "one")]


def test_unsubscribe_stops_delivery(harness, unique, parent):
    a = Lite(harness.conn, unique("g"), parent, "client-a")
    a.sync(pb.PARTIAL_ADD, "u1")
    a.sync(pb.PARTIAL_REMOVE, "u1")
    harness.conn.send_ok(lite_message(parent, "u1", "gone"))
    assert a.receive(poll_s=0.5) == []


def test_a_wildcard_group_receives_lite_topics_created_later(harness, unique, parent):
    group = unique("wild")
    harness.conn.admin.CreateGroup(admin.CreateGroupRequest(name=group, lite_wildcard=True), timeout=RPC_TIMEOUT)
    harness.conn.send_ok(lite_message(parent, "early", "e"))
    w = Lite(harness.conn, group, parent, "client-w")
    w.sync(pb.COMPLETE_ADD)
    assert bodies(w.receive(poll_s=2)) == [("early", "e")]
    harness.conn.send_ok(lite_message(parent, "later", "l"))
    assert bodies(w.receive(poll_s=2)) == [("later", "l")]


@pytest.mark.broker_settings(lite_subscription_quota=2, max_lite_topics_per_topic=3)
def test_quotas(harness, unique, parent):
    a = Lite(harness.conn, unique("g"), parent, "client-a")
    assert a.sync(pb.COMPLETE_ADD, "q1", "q2").status.code == pb.OK
    assert a.sync(pb.PARTIAL_ADD, "q3").status.code == pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED
    reply = harness.conn.send(*(lite_message(parent, f"n{i}", "x") for i in range(4)))
    assert [e.status.code for e in reply.entries] == [pb.OK] * 3 + [pb.LITE_TOPIC_QUOTA_EXCEEDED]
    harness.conn.send_ok(lite_message(parent, "n0", "again"))  # an existing one takes more


def test_bad_lite_messages_are_refused(harness, parent):
    bad_name = lite_message(parent, "no spaces", "x")
    grouped = lite_message(parent, "ok", "x")
    grouped.system_properties.message_group = "g"
    nameless = message(parent, "x")
    nameless.system_properties.message_type = pb.LITE
    plain = lite_message(parent, "ok", "x")
    plain.topic.name = "plain-topic"
    plain.system_properties.message_type = pb.NORMAL
    reply = harness.conn.send(bad_name, grouped, nameless, plain)
    assert [e.status.code for e in reply.entries] == [
        pb.ILLEGAL_LITE_TOPIC, pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, pb.ILLEGAL_LITE_TOPIC,
        pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE]
    assert harness.services.lite.topics.count(harness.topic(parent).id) == 0


def test_list_lite_topics_pages_by_name(harness, parent):
    harness.conn.send_ok(*(lite_message(parent, f"p{i}", "x") for i in range(5)))
    first = harness.conn.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic=parent, limit=3), timeout=RPC_TIMEOUT)
    assert [t.name for t in first.lite_topics] == ["p0", "p1", "p2"] and first.more
    rest = harness.conn.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic=parent, after="p2"), timeout=RPC_TIMEOUT)
    assert [(t.name, t.max_offset) for t in rest.lite_topics] == [("p3", 1), ("p4", 1)] and not rest.more
    info = harness.conn.describe_topic(parent)
    assert info.lite_topic_count == 5 and list(info.message_types) == ["LITE"]


def test_settings_reply_carries_the_lite_quota(harness, unique, parent):
    settings = pb.Settings(client_type=pb.LITE_PUSH_CONSUMER)
    settings.subscription.group.name = unique("g")
    settings.subscription.subscriptions.add(topic=pb.Resource(name=parent),
                                            expression=pb.FilterExpression(type=pb.TAG, expression="*"))
    replies = harness.conn.mq.Telemetry(iter([rpc.TelemetryCommand(settings=settings)]), metadata=meta("client-s"),
                                        timeout=RPC_TIMEOUT)
    reply = next(replies)
    replies.cancel()
    sub = reply.settings.subscription
    assert sub.lite_subscription_quota == 2000 and sub.max_lite_topic_size == 64 and sub.fifo


def test_lite_topics_survive_a_restart(harness, unique, parent):
    harness.conn.send_ok(lite_message(parent, "r1", "before"))
    harness.restart()
    harness.conn.send_ok(lite_message(parent, "r1", "after"), lite_message(parent, "r2", "new"))
    a = Lite(harness.conn, unique("g"), parent, "client-a")
    a.sync(pb.COMPLETE_ADD, "r1", "r2")
    assert sorted(bodies(a.receive(poll_s=2))) == [("r1", "after"), ("r1", "before"), ("r2", "new")]
    listed = harness.conn.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic=parent), timeout=RPC_TIMEOUT)
    assert [(t.name, t.max_offset) for t in listed.lite_topics] == [("r1", 2), ("r2", 1)]
