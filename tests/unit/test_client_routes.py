"""The producer's route cache without a broker (a MockTransport answers): the first send waits for
the route, later ones never do — a stale route is used while a single background QueryRoute
refreshes it — and queues a topic gained are used after the refresh."""

from __future__ import annotations

import asyncio
import time

from rockmq.client import AsyncProducer, Call, Message, MockTransport
from rockmq.protocol import pb, rpc

QUERY_S = 0.3


def _route(topic: str, queues: int) -> rpc.QueryRouteResponse:
    """A route whose queue i is on a broker at endpoint 127.0.0.1:(9000+i): the endpoint names the queue."""
    return rpc.QueryRouteResponse(status=pb.Status(code=pb.OK), message_queues=[
        pb.MessageQueue(topic=pb.Resource(name=topic), id=i, broker=pb.Broker(name="b1", endpoints=pb.Endpoints(
            scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=9000 + i)]))) for i in range(queues)])


def test_stale_route_is_refreshed_in_the_background():
    topic = "grows"
    queues = [1]
    queries: list[float] = []
    used: list[str] = []

    async def broker(call: Call) -> object:
        if call.method == "QueryRoute":
            queries.append(time.monotonic())
            await asyncio.sleep(QUERY_S)
            return _route(topic, queues[0])
        assert call.method == "SendMessage"
        used.append(call.endpoint)
        return rpc.SendMessageResponse(status=pb.Status(code=pb.OK), entries=[
            rpc.SendResultEntry(status=pb.Status(code=pb.OK), message_id=m.system_properties.message_id)
            for m in call.request.messages])

    async def timed_send(p: AsyncProducer) -> float:
        started = time.monotonic()
        await p.send(Message(topic, b"x"))
        return time.monotonic() - started

    async def scenario():
        p = AsyncProducer("127.0.0.1:1", route_ttl_s=0.2, transport=MockTransport(broker))
        assert await timed_send(p) >= QUERY_S, "the first send must wait for the route"
        queues[0] = 4  # the topic grows
        await asyncio.sleep(0.25)  # the cached route is stale now
        waits = await asyncio.gather(*(timed_send(p) for _ in range(5)))
        assert max(waits) < QUERY_S / 2, f"a send waited for QueryRoute: {waits}"
        assert len(queries) == 2, "concurrent sends share one refresh"
        assert set(used) == {"127.0.0.1:9000"}
        await asyncio.sleep(QUERY_S + 0.1)  # the refresh is done
        used.clear()
        for _ in range(4):
            await p.send(Message(topic, b"y"))
        assert sorted(used) == [f"127.0.0.1:{9000 + i}" for i in range(4)]
        await p.close()

    asyncio.run(scenario())
