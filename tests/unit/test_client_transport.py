"""The client over a MockTransport (its one I/O seam): statuses and gRPC failures become the
errors of one table, retries go to another broker, streams are read, batches report refusals,
and times without a zone are refused before anything is sent."""

from __future__ import annotations

import asyncio
from datetime import datetime

import grpc
import pytest

from rockmq.client import AsyncProducer, AsyncPullConsumer, AsyncSimpleConsumer, Call, Message, MockTransport, Queue
from rockmq.client.errors import (
    BatchSendError,
    BrokerRefused,
    ConnectionFailed,
    IllegalArgument,
    NotFound,
    Throttled,
    Timeout,
    Unimplemented,
    from_grpc,
)
from rockmq.protocol import batch as batch_pb
from rockmq.protocol import pb, receipt, rpc

OK = pb.Status(code=pb.OK)


def _route(topic: str, brokers: int) -> rpc.QueryRouteResponse:
    return rpc.QueryRouteResponse(status=OK, message_queues=[
        pb.MessageQueue(topic=pb.Resource(name=topic), id=0, broker=pb.Broker(name=f"b{i}", endpoints=pb.Endpoints(
            scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=9000 + i)]))) for i in range(brokers)])


def _stored(request: rpc.SendMessageRequest, refuse: set[int] = frozenset()) -> rpc.SendMessageResponse:
    entries = [rpc.SendResultEntry(status=pb.Status(code=pb.BAD_REQUEST, message="empty body") if i in refuse else OK,
                                   message_id=m.system_properties.message_id, offset=i)
               for i, m in enumerate(request.messages)]
    code = pb.MULTIPLE_RESULTS if refuse and len(refuse) < len(entries) else entries[0].status.code
    return rpc.SendMessageResponse(status=pb.Status(code=code), entries=entries)


@pytest.mark.parametrize("code,kind,retriable", [
    (grpc.StatusCode.UNAVAILABLE, ConnectionFailed, True), (grpc.StatusCode.DEADLINE_EXCEEDED, Timeout, True),
    (grpc.StatusCode.CANCELLED, ConnectionFailed, True),
    (grpc.StatusCode.UNIMPLEMENTED, Unimplemented, False), (grpc.StatusCode.NOT_FOUND, NotFound, False),
    (grpc.StatusCode.INVALID_ARGUMENT, IllegalArgument, False), (grpc.StatusCode.FAILED_PRECONDITION, IllegalArgument, False),
    (grpc.StatusCode.INTERNAL, ConnectionFailed, False),
])
def test_grpc_statuses_map_onto_the_one_table(code, kind, retriable):
    e = from_grpc("127.0.0.1:1", code, "why")
    assert type(e) is kind and e.retriable is retriable


def test_a_send_retries_on_another_broker_and_keeps_its_id():
    def broker(call: Call) -> object:
        if call.method == "QueryRoute":
            return _route("t", 2)
        if call.endpoint.endswith(":9000"):
            raise ConnectionFailed("b0 is down")
        return _stored(call.request)

    async def scenario() -> None:
        transport = MockTransport(broker)
        async with AsyncProducer("127.0.0.1:1", transport=transport) as p:
            message = Message("t", b"x")
            for _ in range(3):
                assert (await p.send(message)).broker == "b1"
        sent = [c.request.messages[0].system_properties.message_id for c in transport.calls if c.method == "SendMessage"]
        assert len(set(sent)) == 1 and sent[0] == message.message_id, "one message, one id, however often sent"
        assert all(c.metadata[0] == ("x-mq-client-id", p.session.client_id) for c in transport.calls)
        assert not transport.closed, "the caller's transport is the caller's to close"

    asyncio.run(scenario())


def test_statuses_become_errors_and_a_batch_reports_its_refusals():
    def broker(call: Call) -> object:
        if call.method == "QueryRoute":
            return _route("t", 1)
        bodies = [m.body for m in call.request.messages]
        return _stored(call.request, {i for i, b in enumerate(bodies) if not b})

    async def scenario() -> None:
        async with AsyncProducer("127.0.0.1:1", transport=MockTransport(broker), retries=0) as p:
            with pytest.raises(IllegalArgument):
                await p.send(Message("t", b""))
            with pytest.raises(BatchSendError) as caught:
                await p.send_batch([Message("t", b"a"), Message("t", b""), Message("t", b"c")])
            assert [r is not None for r in caught.value.receipts] == [True, False, True]
            assert list(caught.value.errors) == [1] and caught.value.errors[1].code == pb.BAD_REQUEST

    asyncio.run(scenario())


def test_a_throttled_send_is_retried_and_then_raised():
    def broker(call: Call) -> object:
        if call.method == "QueryRoute":
            return _route("t", 1)
        return rpc.SendMessageResponse(status=pb.Status(code=pb.TOO_MANY_REQUESTS, message="slow down"))

    async def scenario() -> None:
        transport = MockTransport(broker)
        async with AsyncProducer("127.0.0.1:1", transport=transport, retries=2, delivery_timeout=0) as p:
            with pytest.raises(Throttled):
                await p.send(Message("t", b"x"))
        assert [c.method for c in transport.calls].count("SendMessage") == 3

    asyncio.run(scenario())


def test_past_its_retries_a_send_pauses_and_tries_again_until_its_delivery_timeout():
    """A broker group failing over answers every attempt for seconds: once every broker of the route
    was tried, each retry pauses (doubling from 50 ms to 500 ms) and re-reads the route, until the
    send lands or `delivery_timeout` after its first attempt ends."""
    refusals = [6]

    def broker(call: Call) -> object:
        if call.method == "QueryRoute":
            return _route("t", 1)
        if refusals[0]:
            refusals[0] -= 1
            return rpc.SendMessageResponse(status=pb.Status(code=pb.HA_NOT_AVAILABLE, message="electing"))
        return rpc.SendMessageResponse(status=OK, entries=[rpc.SendResultEntry(status=OK, message_id="ID1")])

    async def scenario() -> None:
        transport = MockTransport(broker)
        async with AsyncProducer("127.0.0.1:1", transport=transport, retries=2, delivery_timeout=5) as p:
            started = asyncio.get_running_loop().time()
            receipt = await p.send(Message("t", b"x"))
            took = asyncio.get_running_loop().time() - started
            assert not receipt.spooled and [c.method for c in transport.calls].count("SendMessage") == 7
            # The first retry goes at once (a route read again may name another broker), each later one pauses.
            assert 0.05 + 0.1 + 0.2 + 0.4 + 0.5 - 0.01 <= took < 3, took
            refusals[0] = 1_000
            started = asyncio.get_running_loop().time()
            with pytest.raises(Throttled):
                await p.send(Message("t", b"y"))
            assert 5 <= asyncio.get_running_loop().time() - started < 6

    asyncio.run(scenario())


def _hello() -> pb.Message:
    message = pb.Message(topic=pb.Resource(name="t"), body=b"hello")
    message.system_properties.message_id = "ID1"
    message.system_properties.receipt_handle = "H1"
    return message


def _assignment() -> rpc.QueryAssignmentResponse:
    mq = _route("t", 1).message_queues[0]
    return rpc.QueryAssignmentResponse(status=OK, assignments=[pb.Assignment(message_queue=mq)])


def test_receive_reads_the_stream_from_a_broker_without_batch_messaging():
    def broker(call: Call) -> object:
        if call.method == "QueryAssignment":
            return _assignment()
        if call.method in ("Receive", "Ack"):
            raise Unimplemented("127.0.0.1:9000: Method not found!")  # Apache RocketMQ's proxy
        if call.method == "AckMessage":
            return rpc.AckMessageResponse(status=OK, entries=[rpc.AckMessageResultEntry(status=OK)])
        assert call.method == "ReceiveMessage"
        return [rpc.ReceiveMessageResponse(status=OK), rpc.ReceiveMessageResponse(message=_hello())]

    async def scenario() -> None:
        transport = MockTransport(broker)
        async with AsyncSimpleConsumer("127.0.0.1:1", "g", {"t": "*"}, transport=transport) as c:
            [got] = await c.receive()
            await c.receive()
            assert await c.ack_many([got]) == []
        assert (got.body, got.message_id, got.broker, got.endpoint) == (b"hello", "ID1", "b0", "127.0.0.1:9000")
        methods = [call.method for call in transport.calls if call.method != "QueryAssignment"]
        assert methods == ["Receive", "ReceiveMessage", "ReceiveMessage", "AckMessage"]  # asked once

    asyncio.run(scenario())


def test_receive_and_ack_many_are_one_batch_call_each_against_rockmq():
    def broker(call: Call) -> object:
        if call.method == "QueryAssignment":
            return _assignment()
        if call.method == "Receive":
            assert call.request.batch_size == 256  # the default: whatever is there, up to 256
            return batch_pb.ReceiveResponse(status=OK, messages=[_hello().SerializeToString()] * 2)
        assert call.method == "Ack", call.method
        assert list(call.request.receipt_handles) == ["H1", "H1"]
        return batch_pb.AckResponse(status=pb.Status(code=pb.MULTIPLE_RESULTS),  # as the broker: OK only when all are
                                    entries=[OK, pb.Status(code=pb.INVALID_RECEIPT_HANDLE, message="expired")])

    async def scenario() -> None:
        transport = MockTransport(broker)
        async with AsyncSimpleConsumer("127.0.0.1:1", "g", {"t": "*"}, transport=transport) as c:
            got = await c.receive()
            refused = await c.ack_many(got)
        assert [m.body for m in got] == [b"hello", b"hello"]
        assert [(m, e.status_name) for m, e in refused] == [(got[1], "INVALID_RECEIPT_HANDLE")]
        assert [call.method for call in transport.calls] == ["QueryAssignment", "Receive", "Ack"]

    asyncio.run(scenario())


def _handled(*handles: str) -> list[bytes]:
    """Received messages carrying these receipt handles, serialized."""
    out = []
    for handle in handles:
        message = _hello()
        message.system_properties.receipt_handle = handle
        out.append(message.SerializeToString())
    return out


def test_ack_many_sends_a_receives_handles_in_short_and_falls_back_for_a_broker_before_runs():
    """rockmq's handles go as (token, entry numbers) per receive; a broker that answers that form with
    fewer entries than handles (one before runs: it ignored them) gets the handles, then always."""
    a, b = receipt.token(1, 2, 3, b"secret"), receipt.token(1, 2, 4, b"secret")
    handles = [receipt.handle(a, 0), receipt.handle(a, 17), receipt.handle(b, 5)]
    sent: list[batch_pb.AckRequest] = []

    def broker(call: Call, knows_runs: bool) -> object:
        if call.method == "QueryAssignment":
            return _assignment()
        if call.method == "Receive":
            return batch_pb.ReceiveResponse(status=OK, messages=_handled(*handles))
        sent.append(call.request)
        acked = len(call.request.receipt_handles) + (sum(len(r.entries) for r in call.request.receipt_runs) if knows_runs else 0)
        return batch_pb.AckResponse(status=OK, entries=[OK] * acked)

    async def scenario(knows_runs: bool) -> None:
        async with AsyncSimpleConsumer("127.0.0.1:1", "g", {"t": "*"},
                                       transport=MockTransport(lambda call: broker(call, knows_runs))) as c:
            got = await c.receive()
            assert await c.ack_many(got) == [] and await c.ack_many(got[:1]) == []

    asyncio.run(scenario(True))
    assert [[(r.token, list(r.entries)) for r in request.receipt_runs] for request in sent] == [
        [(a, [0, 17]), (b, [5])], [(a, [0])]]
    assert not any(request.receipt_handles for request in sent)
    sent.clear()
    asyncio.run(scenario(False))
    assert [(len(request.receipt_runs), list(request.receipt_handles)) for request in sent] == [
        (2, []), (0, handles), (0, handles[:1])]


def test_ack_many_past_max_ack_entries_sends_several_requests():
    """A broker refuses an ack naming more than MAX_ACK_ENTRIES deliveries: the client splits it, and
    each refusal still comes back with its own message."""
    token = receipt.token(1, 2, 3, b"secret")
    sizes: list[int] = []

    def broker(call: Call) -> object:
        if call.method == "QueryAssignment":
            return _assignment()
        if call.method == "Receive":
            return batch_pb.ReceiveResponse(status=OK, messages=_handled(*(receipt.handle(token, i) for i in range(3))))
        sizes.append(sum(len(r.entries) for r in call.request.receipt_runs) + len(call.request.receipt_handles))
        expired = pb.Status(code=pb.INVALID_RECEIPT_HANDLE, message="expired")
        return batch_pb.AckResponse(status=pb.Status(code=pb.MULTIPLE_RESULTS), entries=[OK] * (sizes[-1] - 1) + [expired])

    async def scenario() -> None:
        async with AsyncSimpleConsumer("127.0.0.1:1", "g", {"t": "*"}, transport=MockTransport(broker)) as c:
            many = await c.receive() * (receipt.MAX_ACK_ENTRIES // 3 + 1)
            refused = await c.ack_many(many)
        assert sizes == [receipt.MAX_ACK_ENTRIES, len(many) - receipt.MAX_ACK_ENTRIES]
        assert [m for m, _ in refused] == [many[receipt.MAX_ACK_ENTRIES - 1], many[-1]]

    asyncio.run(scenario())


@pytest.mark.parametrize("batched", [True, False])
def test_ack_many_returns_every_message_when_all_are_refused(batched: bool):
    """All refused alike, a broker answers with their status on top (replies.multi_status): each
    entry still says which message; only a refusal of the whole request (no entries) raises."""
    token = receipt.token(1, 2, 3, b"secret")
    expired = pb.Status(code=pb.INVALID_RECEIPT_HANDLE, message="expired")
    whole = [False]

    def broker(call: Call) -> object:
        if call.method == "QueryAssignment":
            return _assignment()
        if call.method in ("Receive", "Ack") and not batched:
            raise Unimplemented("127.0.0.1:9000: Method not found!")
        if call.method == "Receive":
            return batch_pb.ReceiveResponse(status=OK, messages=_handled(*(receipt.handle(token, i) for i in range(2))))
        if call.method == "ReceiveMessage":
            return [rpc.ReceiveMessageResponse(message=pb.Message.FromString(m)) for m in _handled(receipt.handle(token, 0),
                                                                                                   receipt.handle(token, 1))]
        refusal = pb.Status(code=pb.BAD_REQUEST, message="no") if whole[0] else expired
        if call.method == "Ack":
            return batch_pb.AckResponse(status=refusal, entries=[] if whole[0] else [expired] * 2)
        return rpc.AckMessageResponse(status=refusal, entries=[] if whole[0] else [rpc.AckMessageResultEntry(status=expired)] * 2)

    async def scenario() -> None:
        async with AsyncSimpleConsumer("127.0.0.1:1", "g", {"t": "*"}, transport=MockTransport(broker)) as c:
            got = await c.receive()
            refused = await c.ack_many(got)
            assert [(m, e.status_name, e.message) for m, e in refused] == [(m, "INVALID_RECEIPT_HANDLE", "expired") for m in got]
            with pytest.raises(IllegalArgument, match="expired"):
                await c.ack(got[0])
            whole[0] = True
            with pytest.raises(BrokerRefused, match="BAD_REQUEST"):
                await c.ack_many(got)

    asyncio.run(scenario())


def test_times_without_a_zone_are_refused_before_anything_is_sent():
    transport = MockTransport(lambda call: pytest.fail(f"nothing may be sent: {call.method}"))

    async def scenario() -> None:
        async with AsyncProducer("127.0.0.1:1", transport=transport) as p:
            with pytest.raises(IllegalArgument, match="no zone.*Z for UTC"):
                await p.send(Message("t", b"x", deliver_at=datetime(2030, 11, 23, 12, 0)))
        async with AsyncPullConsumer("127.0.0.1:1", "g", transport=transport) as c:
            queue = Queue("t", "b0", "127.0.0.1:9000", 0)
            for naive in (datetime(2030, 11, 23, 12, 0), "2030-11-23T12:00"):
                with pytest.raises(IllegalArgument, match="no zone"):
                    await c.offset_at(queue, naive)

    asyncio.run(scenario())
