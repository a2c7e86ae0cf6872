"""rockmq's client and lite topics, against the wire protocol (MockTransport answers as a broker):
a lite message's encoding, lite subscriptions (PARTIAL_ADD of whole names, the 30-s COMPLETE_ADD,
the lite client types), acks and invisible-time changes naming the lite topic, quota errors, and
a push consumer handling each lite topic's messages in order."""

from __future__ import annotations

import asyncio
import pickle
from datetime import UTC, datetime

import pytest

from rockmq.client import AsyncPushConsumer, AsyncSimpleConsumer, Call, Message, MockTransport, ReceivedMessage
from rockmq.client.errors import IllegalArgument, QuotaExceeded, Unimplemented, from_status
from rockmq.client.lite import sync_request
from rockmq.client.push.handler import HandlerRunner
from rockmq.client.push.held import Held
from rockmq.client.push.pop import PopLoops
from rockmq.protocol import pb, rpc


def test_a_lite_message_names_its_lite_topic_and_is_of_type_lite():
    sp = Message("replies", b"x", lite_topic="session-1").to_pb("ID", "h", 0).system_properties
    assert sp.lite_topic == "session-1" and sp.message_type == pb.LITE
    plain = Message("replies", b"x").to_pb("ID", "h", 0).system_properties
    assert not plain.HasField("lite_topic") and plain.message_type == pb.NORMAL
    back = Message.from_pb(Message("replies", b"x", lite_topic="s").to_pb("ID", "h", 0))
    assert back.lite_topic == "s"


@pytest.mark.parametrize("options,clash", [
    ({"message_group": "g"}, "a message group"), ({"delay": 1000}, "a delivery time"),
    ({"deliver_at": datetime(2030, 1, 1, tzinfo=UTC)}, "a delivery time"), ({"priority": 3}, "a priority"),
])
def test_what_the_protocol_forbids_with_a_lite_topic_is_refused_before_sending(options, clash):
    with pytest.raises(IllegalArgument, match=clash) as refused:
        Message("replies", b"x", lite_topic="s1", **options).to_pb("ID", "h", 0)
    assert refused.value.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE and not refused.value.retriable
    with pytest.raises(IllegalArgument, match="a transaction"):
        Message("replies", b"x", lite_topic="s1").to_pb("ID", "h", 0, transactional=True)


def test_a_received_message_exposes_its_lite_topic():
    m = pb.Message(topic=pb.Resource(name="replies"), body=b"b")
    m.system_properties.lite_topic = "s1"
    got = ReceivedMessage.many([m], "replies", "b0", "e")[0]
    assert got.lite_topic == "s1"
    assert pickle.loads(pickle.dumps(got)) == got and got.replace(receipt_handle="x").lite_topic == "s1"
    assert ReceivedMessage.from_pb(pb.Message(topic=pb.Resource(name="t")), "b", "e").lite_topic is None


@pytest.mark.parametrize("code", [pb.LITE_TOPIC_QUOTA_EXCEEDED, pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED])
def test_quota_statuses_are_quota_errors_not_retriable(code):
    e = from_status(code, "too many")
    assert type(e) is QuotaExceeded and e.code == code and not e.retriable and pb.Code.Name(code) in str(e)


def test_a_sync_request_carries_a_name_as_one_entry_not_its_characters():
    assert list(sync_request(pb.PARTIAL_ADD, "t", "g", "s1").lite_topic_set) == ["s1"]
    assert list(sync_request(pb.COMPLETE_ADD, "t", "g", ["a", "b"]).lite_topic_set) == ["a", "b"]


class Broker:
    """Answers as a broker that serves lite subscriptions (or refuses past `quota`)."""

    def __init__(self, quota: int = 100, batch: bool = True) -> None:
        self.quota, self.batch = quota, batch
        self.syncs: list[tuple[int, list[str]]] = []
        self.heartbeats: list[int] = []
        self.held: set[str] = set()

    def __call__(self, call: Call) -> object:
        r = call.request
        if call.method == "SyncLiteSubscription":
            names = set(r.lite_topic_set)
            wanted = {pb.PARTIAL_ADD: self.held | names, pb.PARTIAL_REMOVE: self.held - names,
                      pb.COMPLETE_ADD: names, pb.COMPLETE_REMOVE: set()}[r.action]
            if len(wanted) > self.quota:
                return rpc.SyncLiteSubscriptionResponse(status=pb.Status(code=pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
                                                                         message="over quota"))
            self.syncs.append((r.action, list(r.lite_topic_set)))
            self.held = wanted
            return rpc.SyncLiteSubscriptionResponse(status=pb.Status(code=pb.OK))
        if call.method == "Heartbeat":
            self.heartbeats.append(r.client_type)
            return rpc.HeartbeatResponse(status=pb.Status(code=pb.OK))
        if call.method in ("Ack", "Receive") and not self.batch:
            raise Unimplemented("no BatchMessaging")
        if call.method == "AckMessage":
            return rpc.AckMessageResponse(status=pb.Status(code=pb.OK), entries=[
                rpc.AckMessageResultEntry(status=pb.Status(code=pb.OK)) for _ in r.entries])
        if call.method == "ChangeInvisibleDuration":
            return rpc.ChangeInvisibleDurationResponse(status=pb.Status(code=pb.OK), receipt_handle="RH2")
        raise AssertionError(f"unexpected call {call.method}")


def test_subscribe_lite_adds_one_name_refreshes_the_whole_set_and_drops_it_on_close():
    async def go() -> tuple[Broker, list[Call]]:
        broker = Broker()
        transport = MockTransport(broker)
        consumer = AsyncSimpleConsumer("127.0.0.1:1", "g", {"replies": "*"}, transport=transport, lite_refresh_s=0.1,
                                       heartbeat_s=0.02)
        assert consumer.lite.client_type == pb.SIMPLE_CONSUMER
        await consumer.subscribe_lite("s1")
        await consumer.subscribe_lite("s2", topic="replies")
        assert consumer.lite.client_type == pb.LITE_SIMPLE_CONSUMER and consumer.lite.names("replies") == {"s1", "s2"}
        await consumer.unsubscribe_lite("s1")
        await consumer.unsubscribe_lite("never")  # not held: nothing sent
        await asyncio.sleep(0.25)
        await consumer.close()
        return broker, transport.calls

    broker, calls = asyncio.run(go())
    assert broker.syncs[:3] == [(pb.PARTIAL_ADD, ["s1"]), (pb.PARTIAL_ADD, ["s2"]), (pb.PARTIAL_REMOVE, ["s1"])]
    assert (pb.COMPLETE_ADD, ["s2"]) in broker.syncs[3:-1] and broker.syncs[-1] == (pb.COMPLETE_REMOVE, [])
    assert len(broker.heartbeats) > 3 and set(broker.heartbeats) == {pb.LITE_SIMPLE_CONSUMER}  # more often than refreshes
    assert 1 <= sum(action == pb.COMPLETE_ADD for action, _ in broker.syncs) <= 3
    sync = next(c.request for c in calls if c.method == "SyncLiteSubscription")
    assert sync.topic.name == "replies" and sync.group.name == "g"
    assert broker.held == set()


def test_a_subscription_over_quota_raises_the_quota_error_and_is_not_kept():
    async def go() -> AsyncSimpleConsumer:
        consumer = AsyncSimpleConsumer("127.0.0.1:1", "g", {"replies": "*"}, transport=MockTransport(Broker(quota=1)))
        await consumer.subscribe_lite("s1")
        with pytest.raises(QuotaExceeded) as refused:
            await consumer.subscribe_lite("s2")
        assert refused.value.code == pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED
        await consumer.close()
        return consumer

    assert asyncio.run(go()).lite.names("replies") == frozenset()


def test_a_lite_subscription_needs_the_parent_named_among_several_and_a_name():
    consumer = AsyncSimpleConsumer("127.0.0.1:1", "g", {"a": "*", "b": "*"}, transport=MockTransport(Broker()))
    with pytest.raises(ValueError, match="name the LITE topic"):
        asyncio.run(consumer.subscribe_lite("s1"))
    with pytest.raises(ValueError, match="not among"):
        asyncio.run(consumer.subscribe_lite("s1", topic="c"))
    with pytest.raises(ValueError, match="non-empty"):
        asyncio.run(consumer.subscribe_lite("", topic="a"))


def lite_message(lite_topic: str, handle: str, offset: int = 0) -> ReceivedMessage:
    m = pb.Message(topic=pb.Resource(name="replies"), body=str(offset).encode())
    sp = m.system_properties
    sp.lite_topic, sp.receipt_handle, sp.message_id, sp.queue_offset = lite_topic, handle, f"M{offset}", offset
    return ReceivedMessage.many([m], "replies", "b0", "127.0.0.1:1")[0]


def test_acks_and_invisible_time_changes_name_the_lite_topic():
    async def go() -> list[Call]:
        transport = MockTransport(Broker(batch=False))
        consumer = AsyncSimpleConsumer("127.0.0.1:1", "g", {"replies": "*"}, transport=transport)
        await consumer.ack(lite_message("s1", "RH1"))
        changed = await consumer.change_invisible_duration(lite_message("s2", "RH"), 5)
        assert changed.receipt_handle == "RH2" and changed.lite_topic == "s2"
        await consumer.close()
        return transport.calls

    calls = {c.method: c.request for c in asyncio.run(go())}
    assert [e.lite_topic for e in calls["AckMessage"].entries] == ["s1"]
    assert calls["ChangeInvisibleDuration"].lite_topic == "s2" and calls["ChangeInvisibleDuration"].topic.name == "replies"


def test_a_push_consumer_takes_lite_subscriptions_in_pop_mode_only_and_declares_itself_lite():
    async def go() -> Broker:
        broker = Broker()
        pushing = AsyncPushConsumer("127.0.0.1:1", "g", {"replies": "*"}, print, mode="pop", transport=MockTransport(broker))
        await pushing.subscribe_lite("s1")
        assert pushing.lite.client_type == pb.LITE_PUSH_CONSUMER
        await pushing._membership.heartbeat()  # its membership's heartbeats declare it lite
        await pushing.lite.close()
        clustering = AsyncPushConsumer("127.0.0.1:1", "g", {"replies": "*"}, print, transport=MockTransport(broker))
        with pytest.raises(ValueError, match="mode='pop'"):
            await clustering.subscribe_lite("s1")
        return broker

    broker = asyncio.run(go())
    assert broker.syncs[0] == (pb.PARTIAL_ADD, ["s1"]) and broker.heartbeats == [pb.LITE_PUSH_CONSUMER]


def test_a_push_consumer_handles_a_lite_topics_messages_in_order_and_fails_the_rest_after_a_failure():
    handled: list[tuple[str, int]] = []

    async def handler(m: ReceivedMessage) -> None:
        await asyncio.sleep(0.01 if m.offset == 0 else 0)  # the first of each lite topic is the slowest
        handled.append((m.lite_topic or "", m.offset))
        if (m.lite_topic, m.offset) == ("b", 1):
            raise RuntimeError("fails")

    async def go() -> Held:
        runner = HandlerRunner(handler, 8)
        runner.start()
        loops = PopLoops(AsyncSimpleConsumer("127.0.0.1:1", "g", {"replies": "*"}, transport=MockTransport(Broker())),
                         runner, group="g", concurrency=8, batch_size=8, invisible_s=30, retry_backoff_s=(1,))
        held = Held([lite_message(t, f"RH{t}{i}", i) for i in range(3) for t in ("a", "b")])
        await loops._run_handlers(held)
        runner.close()
        return held

    held = asyncio.run(go())
    assert [o for t, o in handled if t == "a"] == [0, 1, 2] and [o for t, o in handled if t == "b"] == [0, 1]
    verdicts = {(m.lite_topic, m.offset): v for m, v in zip(held.messages, held.verdicts, strict=True)}
    assert verdicts[("b", 1)] is False and verdicts[("b", 2)] is False and verdicts[("a", 2)] is True
