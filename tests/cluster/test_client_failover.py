"""rockmq's producer in a three-broker cluster: a killed broker costs no acknowledged message,
retries land on other brokers, and fault avoidance stops choosing the dead one."""

from __future__ import annotations

import asyncio
import time

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
