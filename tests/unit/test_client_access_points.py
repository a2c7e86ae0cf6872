"""Access points without a broker (a MockTransport answers): the `endpoint` forms a client takes,
routes asked of the next access point when one cannot be reached (which then goes to the back of
the list), brokers a route names learned as access points, and a refresh that fails keeping the
last route."""

from __future__ import annotations

import asyncio

import pytest

from rockmq.client import AsyncProducer, Call, Message, MockTransport
from rockmq.client.errors import ConnectionFailed, NotFound
from rockmq.client.session import Session, access_points
from rockmq.protocol import pb, rpc

OK = pb.Status(code=pb.OK)


def _route(topic: str, ports: list[int]) -> rpc.QueryRouteResponse:
    return rpc.QueryRouteResponse(status=OK, message_queues=[
        pb.MessageQueue(topic=pb.Resource(name=topic), id=0, broker=pb.Broker(name=f"b{port}", endpoints=pb.Endpoints(
            scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=port)]))) for port in ports])


def _stored(request: rpc.SendMessageRequest) -> rpc.SendMessageResponse:
    return rpc.SendMessageResponse(status=OK, entries=[rpc.SendResultEntry(status=OK, message_id=m.system_properties.message_id)
                                                       for m in request.messages])


@pytest.mark.parametrize("given,expected", [
    ("a:1", ["a:1"]), ("a:1, b:2,,a:1", ["a:1", "b:2"]), (["a:1", "b:2"], ["a:1", "b:2"]), (("b:2",), ["b:2"]),
])
def test_endpoint_forms(given, expected):
    assert access_points(given) == expected


@pytest.mark.parametrize("bad", ["", " , ", [], [1]])
def test_an_endpoint_naming_no_broker_is_refused(bad):
    with pytest.raises(ValueError, match="endpoint"):
        access_points(bad)


def test_a_dead_access_point_is_asked_once_and_the_route_names_the_others():
    dead = {"127.0.0.1:9001"}

    def broker(call: Call) -> object:
        if call.endpoint in dead:
            raise ConnectionFailed(f"cannot reach {call.endpoint}")
        if call.method == "QueryRoute":
            assert call.request.endpoints.addresses[0].port == int(call.endpoint.rpartition(":")[2]), "asked as itself"
            return _route(call.request.topic.name, [9002, 9003])
        return _stored(call.request)

    async def scenario() -> None:
        transport = MockTransport(broker)
        session = Session("127.0.0.1:9001,127.0.0.1:9002", 1.0, transport=transport)
        assert [q.endpoint for q in await session.route("t")] == ["127.0.0.1:9002", "127.0.0.1:9003"]
        assert session.access_points == ["127.0.0.1:9002", "127.0.0.1:9001", "127.0.0.1:9003"]
        await session.route("t")
        assert [c.endpoint for c in transport.calls] == ["127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9002"]
        dead.add("127.0.0.1:9002")
        await session.route("t")
        assert session.access_point == "127.0.0.1:9003", "learned from the route"
        dead.update({"127.0.0.1:9003"})
        with pytest.raises(ConnectionFailed):
            await session.route("t")
        await session.close()

    asyncio.run(scenario())


def test_a_refusal_is_not_asked_elsewhere():
    transport = MockTransport(lambda call: rpc.QueryRouteResponse(status=pb.Status(code=pb.TOPIC_NOT_FOUND, message="no")))

    async def scenario() -> None:
        session = Session(["127.0.0.1:1", "127.0.0.1:2"], 1.0, transport=transport)
        with pytest.raises(NotFound):
            await session.route("t")
        assert len(transport.calls) == 1

    asyncio.run(scenario())


def test_a_send_keeps_the_last_route_when_no_access_point_answers():
    """A broker dies and no access point answers QueryRoute: the retry goes to the other broker of
    the last route instead of failing on the route refresh."""
    down: set[str] = set()

    def broker(call: Call) -> object:
        if call.endpoint in down or (down and call.method == "QueryRoute"):
            raise ConnectionFailed(f"cannot reach {call.endpoint}")
        if call.method == "QueryRoute":
            return _route(call.request.topic.name, [9001, 9002])
        return _stored(call.request)

    async def scenario() -> None:
        async with AsyncProducer("127.0.0.1:9001", transport=MockTransport(broker), retries=1) as p:
            await p.send(Message("t", b"warm"))
            down.add("127.0.0.1:9001")
            receipts = [await p.send(Message("t", b"%d" % i)) for i in range(6)]
        assert {r.broker for r in receipts} == {"b9002"}

    asyncio.run(scenario())


def test_the_fault_latency_tables_are_the_producers_to_set():
    """A broker slower than 10 ms is paused for a minute with the tables given; with pauses of 0
    nothing is avoided; tables that cannot mean anything are refused."""
    slow = "127.0.0.1:9001"

    async def broker(call: Call) -> object:
        if call.method == "QueryRoute":
            return _route(call.request.topic.name, [9001, 9002])
        if call.endpoint == slow:
            await asyncio.sleep(0.03)
        return _stored(call.request)

    async def brokers_used(**tables: list[float]) -> list[str]:
        async with AsyncProducer(slow, transport=MockTransport(broker), **tables) as p:
            return [(await p.send(Message("t", b"%d" % i))).broker for i in range(8)]

    avoided = asyncio.run(brokers_used(fault_latency_ms=[10], fault_pause_ms=[60_000]))
    assert avoided.count("b9001") == 1, avoided
    assert asyncio.run(brokers_used(fault_latency_ms=[10], fault_pause_ms=[0])).count("b9001") == 4
    for latency, pause in (([], []), ([10, 5], [1, 2]), ([10], [1, 2]), ([10], [-1])):
        with pytest.raises(ValueError, match="fault"):
            AsyncProducer(slow, fault_latency_ms=latency, fault_pause_ms=pause)


def test_an_access_point_that_stops_answering_costs_one_call():
    """The broker a producer was pointed at hangs (every call to it times out): the send that finds
    out retries through the other broker, routes are asked of that one, and the hung broker is
    not called again."""
    from rockmq.client.errors import Timeout

    hung: set[str] = set()
    calls_to_hung: list[str] = []

    def broker(call: Call) -> object:
        if call.endpoint in hung:
            calls_to_hung.append(call.method)
            raise Timeout(f"{call.endpoint} did not answer in time")
        if call.method == "QueryRoute":
            return _route(call.request.topic.name, [9001, 9002])
        return _stored(call.request)

    async def scenario() -> None:
        async with AsyncProducer("127.0.0.1:9001", transport=MockTransport(broker)) as p:
            await p.send(Message("t", b"warm"))
            hung.add("127.0.0.1:9001")
            receipts = [await p.send(Message("t", b"%d" % i)) for i in range(6)]
            assert p.session.access_points == ["127.0.0.1:9002", "127.0.0.1:9001"]
        assert {r.broker for r in receipts} == {"b9002"}

    asyncio.run(scenario())
    assert calls_to_hung == ["SendMessage"], calls_to_hung
