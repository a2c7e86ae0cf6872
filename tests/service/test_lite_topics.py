"""Lite topics on one broker (issue 29 §1, §2), spoken as the official clients speak them: per-client
subscriptions, in-order delivery per lite topic, the Python client's split names, wildcard groups,
quotas, expiry and the listing."""

from __future__ import annotations

import threading
import time

import pytest
from lite_wire import Lite, bodies, lite_message, meta
from mqwire import RPC_TIMEOUT, message
from waiting import wait_for

from rockmq.broker.clock import now_ms
from rockmq.broker.lite import topics
from rockmq.protocol import admin, pb, rpc
from rockmq.store import keys
from rockmq.store.schema import Family


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


def test_a_request_led_by_a_plain_message_creates_each_lite_topic_once(harness, unique, parent):
    """Its lite names are not read ahead (only a request led by a LITE message's are): they are
    placed one by one, the second message to a name it created enters the same queue, and an
    illegal name is refused there as anywhere."""
    plain = unique("plain")
    harness.conn.send_ok(message(plain, "first"))  # the topic exists before the mixed request
    reply = harness.conn.send(message(plain, "p"), lite_message(parent, "m1", "a"), lite_message(parent, "no spaces", "x"),
                              lite_message(parent, "m1", "b"))
    assert [e.status.code for e in reply.entries] == [pb.OK, pb.OK, pb.ILLEGAL_LITE_TOPIC, pb.OK]
    assert [reply.entries[i].offset for i in (1, 3)] == [0, 1]
    listed = harness.conn.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic=parent), timeout=RPC_TIMEOUT)
    assert [(t.name, t.max_offset) for t in listed.lite_topics] == [("m1", 2)]


def test_lite_topics_past_the_names_cache_are_read_not_created_again(harness, parent, monkeypatch):
    """The names cache keeps two generations of CACHE_ENTRIES / 2: a name that left it is read from
    the store (in the request's one multi-get) and its messages continue its queue."""
    monkeypatch.setattr(topics, "CACHE_ENTRIES", 8)
    names = [f"c{i}" for i in range(20)]
    first = harness.conn.send_ok(*(lite_message(parent, name, "one") for name in names))
    again = harness.conn.send_ok(*(lite_message(parent, name, "two") for name in names))
    assert [e.offset for e in first] == [0] * 20 and [e.offset for e in again] == [1] * 20
    assert harness.services.lite.topics.count(harness.topic(parent).id) == 20
    assert len(harness.services.lite.topics._cache) < 8  # the young generation: the old one holds at most as many


@pytest.mark.broker_settings(lite_topic_ttl_s=1)
def test_idle_lite_topics_expire_with_their_keys(harness, unique, parent):
    a = Lite(harness.conn, unique("g"), parent, "client-a")
    a.sync(pb.COMPLETE_ADD, "old")
    harness.conn.send_ok(lite_message(parent, "old", "x"))
    a.ack(*a.receive(poll_s=2))
    tid = harness.topic(parent).id
    expiry = harness.services.lite_expiry
    wait_for(lambda: harness.call(lambda: expiry.round(now_ms()) or expiry.expired) == 1)
    store = harness.services.ctx.store
    assert sorted(harness.call(lambda: list(store.scan_prefix(Family.LITE, b"")))) == [
        (keys.lite_counter_key(keys.LITE_NEXT, tid), keys.encode_u32(keys.LITE_QUEUE_BASE + 1)),
        (keys.lite_counter_key(keys.LITE_COUNT, tid), keys.encode_u64(0))]
    assert harness.call(lambda: list(store.scan_prefix(Family.LOG, keys.topic_prefix(tid)))) == []
    assert harness.call(lambda: harness.services.lite.topics.count(tid)) == 0
    assert harness.services.lite.holding(tid, "old") == 0
    harness.conn.send_ok(lite_message(parent, "old", "new life"))  # the name again: a new lite topic, from offset 0
    listed = harness.conn.admin.ListLiteTopics(admin.ListLiteTopicsRequest(topic=parent), timeout=RPC_TIMEOUT)
    assert [(t.name, t.queue_id, t.min_offset, t.max_offset) for t in listed.lite_topics] == [
        ("old", keys.LITE_QUEUE_BASE + 1, 0, 1)]


@pytest.mark.broker_settings(lite_subscription_quota=2)
def test_a_complete_add_over_the_quota_keeps_what_was_held(harness, unique, parent):
    a = Lite(harness.conn, unique("g"), parent, "client-a")
    a.sync(pb.PARTIAL_ADD, "z")
    assert a.sync(pb.COMPLETE_ADD, "a", "b", "z").status.code == pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED
    harness.conn.send_ok(*(lite_message(parent, n, n) for n in ("a", "b", "z")))
    assert sorted(bodies(a.receive(poll_s=2))) == [("a", "a"), ("z", "z")]
