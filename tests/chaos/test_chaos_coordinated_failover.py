"""Automatic failover under load (issue 30): a three-member coordinated group with sync replication on
a real etcd, rockmq's producer sending all along; round after round the member that is primary is
killed (kill -9) and started again. Each round the next primary takes writes within the lease plus
3 s (each figure printed), no send fails, the killed member rejoins as a replica and the in-sync set,
and at the end every acknowledged message is on the primary: nothing acknowledged is lost. `scripts/chaos`: 20 rounds; CI: 2."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from chaos_scale import scaled
from coordinated_group import LEASE_S, running_group, serving_primary
from mqwire import held_ids
from waiting import wait_for

from rockmq.client import AsyncProducer, Message
from rockmq.client.errors import RockmqError

ROUNDS = scaled(2, 20)
TOPIC, QUEUES = "chaos-failover", 4


def test_the_group_survives_the_kill_of_each_primary_in_turn_with_nothing_acknowledged_lost(etcd, tmp_path: Path):
    with running_group(etcd.url, tmp_path) as members:
        serving_primary(members).cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
        acked, failovers, failed = asyncio.run(_rounds(members))
        print(f"\nfailovers (kill -9 -> first acknowledged write, lease {LEASE_S} s): "
              + ", ".join(f"{s:.2f}" for s in failovers) + f" s; {len(acked)} acknowledged, {failed} sends retried")
        assert max(failovers) < LEASE_S + 3
        assert failed == 0, "a send failed: the producer's retries must ride out each election"
        primary = serving_primary(members)
        assert acked <= held_ids(primary.endpoint, TOPIC, QUEUES), "an acknowledged message was lost"


async def _rounds(members: list) -> tuple[set[str], list[float], int]:
    """-> (the ids acknowledged, each round's seconds from the kill to the next acknowledged write, the
    sends that failed and were sent again)."""
    acked: set[str] = set()
    last_ack = [0.0, 0.0]  # the last acknowledged send: when it was sent, when it was acknowledged
    failed = [0]
    stop = asyncio.Event()

    async def send_all_along() -> None:
        async with AsyncProducer(",".join(m.endpoint for m in members), request_timeout=2.0) as producer:
            while not stop.is_set():
                try:
                    sent = time.monotonic()
                    acked.add((await producer.send(Message(TOPIC, f"m{len(acked)}".encode()))).message_id)
                    last_ack[:] = [sent, time.monotonic()]
                except RockmqError:
                    failed[0] += 1
                    await asyncio.sleep(0.05)

    sending = asyncio.create_task(send_all_along())
    failovers = []
    try:
        for _ in range(ROUNDS):
            await asyncio.sleep(1.0)
            failovers.append(await _kill_the_primary(members, last_ack))
    finally:
        stop.set()
        await sending
    return acked, failovers, failed[0]


async def _kill_the_primary(members: list, last_ack: list[float]) -> float:
    """kill -9 the primary, wait for a write sent after it to be acknowledged, start the killed member again and
    wait until it is back in the in-sync set (the next round's election needs it) -> seconds from the kill to
    that write."""
    primary = await asyncio.to_thread(serving_primary, members)
    killed = time.monotonic()
    primary.kill()
    await asyncio.to_thread(wait_for, lambda: last_ack[0] > killed, 15, 0.02, "a write on the next primary")
    took = last_ack[1] - killed
    if took >= LEASE_S + 3:  # a round the test fails on: each member's log up to now, to read why (with -s)
        print(f"\nround of {took:.2f} s (killed {primary.endpoint}):\n" + "\n\n".join(
            f"--- {m.endpoint}:\n" + "\n".join(list(m.log)[-150:]) for m in members))
    new = await asyncio.to_thread(serving_primary, [m for m in members if m is not primary])
    await asyncio.to_thread(primary.start)
    await asyncio.to_thread(wait_for, lambda: f"{primary.endpoint} joined the in-sync set" in "\n".join(new.log), 20,
                            0.05, "the killed member to rejoin the in-sync set")
    return took
