"""rockmq's producer in a three-broker cluster: a killed broker costs no acknowledged message,
retries land on other brokers, and fault avoidance stops choosing the dead one."""

from __future__ import annotations

import asyncio
import time

from waiting import async_wait_for

from rockmq.client import AsyncProducer, Message


def test_retries_go_to_other_brokers_and_nothing_is_lost(cluster):
    cluster.brokers["b1"].cli("topic", "create", "fo", "--queues", "6", check=True)

    async def scenario() -> tuple[list, int]:
        receipts = []
        async with AsyncProducer(cluster.brokers["b1"].endpoint, request_timeout=2.0) as p:
            for i in range(30):
                receipts.append(await p.send(Message("fo", f"before-{i}".encode())))
            cluster.brokers["b3"].kill()
            started = time.monotonic()
            for i in range(60):
                receipts.append(await p.send(Message("fo", f"after-{i}".encode())))
            elapsed = time.monotonic() - started
        return receipts, elapsed

    receipts, elapsed = asyncio.run(scenario())
    after = receipts[30:]
    assert {r.broker for r in receipts[:30]} == {"b1", "b2", "b3"}
    assert {r.broker for r in after} <= {"b1", "b2"}, "a send was acknowledged by the dead broker"
    assert elapsed < 30, f"60 sends took {elapsed:.1f} s: the dead broker was not avoided"
    cluster.brokers["b3"].start()
    cluster.wait_for_brokers({"b1", "b2", "b3"})
    assert {r.message_id for r in receipts} <= cluster.stored_ids("fo")


def test_push_consumers_share_every_brokers_queues_and_retry_where_the_message_lives(cluster):
    cluster.brokers["b1"].cli("topic", "create", "pc", "--queues", "6", check=True)
    seen: dict[str, int] = {}
    fast = dict(heartbeat_s=0.3, rebalance_s=2.0, commit_interval_s=0.3, poll_s=1.0, shutdown_timeout_s=2.0,
                retry_backoff_s=(0.2,))

    async def handler(m):
        seen[m.body.decode()] = seen.get(m.body.decode(), 0) + 1
        if m.body.endswith(b"-0") and m.delivery_attempt == 1:
            raise RuntimeError("first delivery of every tenth message fails")

    async def scenario() -> set[str]:
        from rockmq.client import AsyncPushConsumer

        async with AsyncProducer(cluster.brokers["b1"].endpoint) as p:
            bodies = {f"m{i}-{i % 10}" for i in range(120)}
            await asyncio.gather(*(p.send(Message("pc", b.encode())) for b in bodies))
        # Two members, each joined through a different broker.
        async with AsyncPushConsumer(cluster.brokers["b2"].endpoint, "pcg", {"pc": "*"}, handler, **fast) as a, \
                AsyncPushConsumer(cluster.brokers["b3"].endpoint, "pcg", {"pc": "*"}, handler, **fast) as b:
            await async_wait_for(lambda: set(seen) == bodies and all(seen[x] >= 2 for x in bodies if x.endswith("-0")), 20,
                                 0.1, what="every message, the -0 ones twice")
            mine = [{q for q in c.assignment if q.topic == "pc"} for c in (a, b)]
        assert len(mine[0]) == len(mine[1]) == 3 and not mine[0] & mine[1], mine
        assert {q.broker for q in mine[0] | mine[1]} == {"b1", "b2", "b3"}
        return bodies

    bodies = asyncio.run(scenario())
    assert set(seen) == bodies
    assert all(seen[x] == (2 if x.endswith("-0") else 1) for x in bodies), seen
