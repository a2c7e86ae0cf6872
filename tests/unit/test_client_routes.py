"""The producer's route cache without a broker (a fake transport): the first send waits for the
route, later ones never do — a stale route is used while a single background QueryRoute
refreshes it — and queues a topic gained are used after the refresh."""

from __future__ import annotations

import asyncio
import time

from rockmq.client import AsyncProducer, Message
from rockmq.client.transport import Queue
from rockmq.protocol import pb, rpc

QUERY_S = 0.3


def test_stale_route_is_refreshed_in_the_background():
    topic = "grows"
    route = [Queue(topic, "b1", "q0", 0)]
    queries: list[float] = []
    used: list[str] = []

    async def fake_route(name: str) -> list[Queue]:
        queries.append(time.monotonic())
        await asyncio.sleep(QUERY_S)
        return list(route)

    async def fake_unary(endpoint: str, method: str, request, timeout=None):
        assert method == "SendMessage"
        used.append(endpoint)  # one endpoint per queue: it names the queue
        return rpc.SendMessageResponse(status=pb.Status(code=pb.OK), entries=[
            rpc.SendResultEntry(status=pb.Status(code=pb.OK), message_id=m.system_properties.message_id)
            for m in request.messages])

    async def timed_send(p: AsyncProducer) -> float:
        started = time.monotonic()
        await p.send(Message(topic, b"x"))
        return time.monotonic() - started

    async def scenario():
        p = AsyncProducer("127.0.0.1:1", route_ttl_s=0.2)
        p.transport.route = fake_route
        p.transport.unary = fake_unary
        assert await timed_send(p) >= QUERY_S, "the first send must wait for the route"
        route[:] = [Queue(topic, "b1", f"q{i}", i) for i in range(4)]  # the topic grows
        await asyncio.sleep(0.25)  # the cached route is stale now
        waits = await asyncio.gather(*(timed_send(p) for _ in range(5)))
        assert max(waits) < QUERY_S / 2, f"a send waited for QueryRoute: {waits}"
        assert len(queries) == 2, "concurrent sends share one refresh"
        assert set(used) == {"q0"}
        await asyncio.sleep(QUERY_S + 0.1)  # the refresh is done
        used.clear()
        for _ in range(4):
            await p.send(Message(topic, b"y"))
        assert sorted(used) == ["q0", "q1", "q2", "q3"]
        await p.close()

    asyncio.run(scenario())
