"""FIFO consumption through `rockmq serve --workers 2` while shards are killed and consumers move
or give up (issue 33 §8): no acknowledged FIFO message is left undelivered.

A probe once saw one message stranded after three shard kills under FIFO load (LAG 1, INFLIGHT 0
for 20 s, delivered at once after a restart): its queue held for a delivery the store no longer
had, until a restart rebuilt the locks from the store. Each round does what the probe did and
more: producers send to 16 message groups; two consumers receive and ack, now and then nacking a
message, forwarding one to the dead-letter queue and going away before the answer (the way a hold
outlived its delivery: tests/service/test_fifo_hold_outlived.py), or walking away from a batch
and coming back as a new client; a shard is killed -9 three times, each restarted by the parent.
Once sending stops, every acknowledged message must be received within DRAIN_S; a round that
misses one fails with the group's positions, where a stranded queue shows LAG above 0 with
INFLIGHT 0.

CI runs two rounds (about a minute on a busy machine); `scripts/chaos` runs 50.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from chaos_scale import scaled
from mqwire import Conn
from waiting import wait_for

from rockmq.client import AsyncProducer, AsyncSimpleConsumer, Message, ReceivedMessage
from rockmq.client.errors import RockmqError
from rockmq.protocol import pb, rpc

sys.path.insert(0, str(Path(__file__).parent.parent / "cluster"))
from shard_set import ShardSet  # noqa: E402

ROUNDS = scaled(1, 50)  # CI: one round of KILLS shard kills (~15 s); scripts/chaos: 50
TOPIC, GROUP = "chaos-fifo", "chaos-fifo-g"
QUEUES = 8  # four on each shard
MESSAGE_GROUPS = 16
SENDERS = 4
CONSUMERS = 2
KILLS = 3
LOAD_S = 5.0
INVISIBLE_S = 2.0  # what a dead shard's or an abandoned delivery costs before it comes again
AWAIT_S = 1.0  # the consumers' long poll
GIVE_UP_EVERY = 40  # about one received message in this many is sent back, as many forwarded to the dead-letter queue
MOVE_EVERY = 25  # about one receive in this many is walked away from: the consumer comes back as a new client
SERVING_S = 30.0  # a killed shard is restarted and serving again within this
DRAIN_S = 30.0  # every acknowledged message is received within this once sending stops
ROUND_S = LOAD_S + KILLS * SERVING_S + DRAIN_S + 30


@dataclass
class Tally:
    sent: set[str] = field(default_factory=set)  # acknowledged by the broker
    received: set[str] = field(default_factory=set)  # handed to a consumer at least once
    sending: bool = True
    gave_up: int = 0  # nacked or forwarded to the dead-letter queue
    moved: int = 0  # consumers that walked away from a batch

    def drained(self) -> bool:
        return not self.sending and self.sent <= self.received


def test_fifo_messages_are_never_stranded_by_shard_kills_or_moving_consumers(tmp_path: Path):
    seed = random.randrange(1 << 32)  # each run explores other kill times; a failure names its round's seed
    for r in range(ROUNDS):
        began = time.monotonic()
        shards = ShardSet(tmp_path / f"round-{r}", 2).start()
        try:
            shards.cli("topic", "create", TOPIC, "--queues", str(QUEUES), check=True)
            shards.cli("group", "create", GROUP, "--fifo", check=True)
            tally = asyncio.run(asyncio.wait_for(_round(shards, random.Random(seed + r)), ROUND_S))
            missing = tally.sent - tally.received
            assert not missing, (f"round {r} (seed {seed + r}): {len(missing)} of {len(tally.sent)} acknowledged FIFO "
                                 f"messages not delivered within {DRAIN_S} s, e.g. {sorted(missing)[:3]}\n"
                                 f"{_positions(shards)}")
            print(f"round {r}: {len(tally.sent)} sent and received, {tally.gave_up} given up, {tally.moved} consumers "
                  f"moved, {KILLS} shard kills, {time.monotonic() - began:.1f} s")
        finally:
            shards.kill()


async def _round(shards: ShardSet, rng: random.Random) -> Tally:
    tally = Tally()
    consumers = [asyncio.create_task(_consume(shards.endpoint, tally, random.Random(rng.random())))
                 for _ in range(CONSUMERS)]
    try:
        async with AsyncProducer(shards.endpoint) as producer:
            senders = [asyncio.create_task(_send(producer, tally, i)) for i in range(SENDERS)]
            await _kill_shards(shards, rng)
            await asyncio.gather(*senders)
        tally.sending = False
        deadline = time.monotonic() + DRAIN_S
        while not tally.drained() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        for c in consumers:
            c.cancel()
        await asyncio.gather(*consumers, return_exceptions=True)
    return tally


async def _send(producer: AsyncProducer, tally: Tally, sender: int) -> None:
    """Send FIFO messages for LOAD_S; a send that fails (its shard is down) is simply not counted."""
    until = time.monotonic() + LOAD_S
    n = 0
    while time.monotonic() < until:
        group = f"mg-{(sender + n * SENDERS) % MESSAGE_GROUPS}"
        try:
            receipt = await producer.send(Message(TOPIC, f"{sender}-{n}".encode(), message_group=group))
        except RockmqError:
            await asyncio.sleep(0.05)
            continue
        finally:
            n += 1
        tally.sent.add(receipt.message_id)


async def _kill_shards(shards: ShardSet, rng: random.Random) -> None:
    """kill -9 a random shard KILLS times during the load, each once the previous one serves again."""
    for _ in range(KILLS):
        await asyncio.sleep(rng.uniform(0.5, LOAD_S / KILLS))
        before = shards.shard_pids()
        victim = rng.choice(before)
        os.kill(victim, signal.SIGKILL)
        await asyncio.to_thread(_until_serving_again, shards, set(before) - {victim})


def _until_serving_again(shards: ShardSet, survivors: set[int]) -> None:
    """The parent restarted the killed shard (a new child) and every shard of the topic answers."""
    wait_for(lambda: len(set(shards.shard_pids()) - survivors) == 1, SERVING_S, 0.05, what="the killed shard restarted")
    wait_for(lambda: _every_shard_answers(shards), SERVING_S, 0.1, what="every shard serving")


def _every_shard_answers(shards: ShardSet) -> bool:
    try:
        endpoints = shards.shards(TOPIC).values()
        for endpoint in endpoints:
            conn = Conn(endpoint)
            try:
                conn.describe_topic(TOPIC, local=True)
            finally:
                conn.close()
    except Exception:  # a refused connection, or a route without the restarted shard yet
        return False
    return len(endpoints) == 2


async def _consume(endpoint: str, tally: Tally, rng: random.Random) -> None:
    """Receive and settle (`_settle`) until cancelled; now and then walk away from a whole batch
    (unacked: it comes again once its invisible time ends) and come back as a new client."""
    while True:
        async with AsyncSimpleConsumer(endpoint, GROUP, {TOPIC: "*"}, await_s=AWAIT_S) as consumer:
            while True:
                try:
                    got = await consumer.receive(16, INVISIBLE_S)
                except RockmqError:
                    await asyncio.sleep(0.2)
                    continue
                tally.received.update(m.message_id for m in got)
                if got and rng.randrange(MOVE_EVERY) == 0:
                    tally.moved += 1
                    break  # a consumer that moves: this client goes, its deliveries stay in flight
                tally.gave_up += await _settle(consumer, got, rng)


async def _settle(consumer: AsyncSimpleConsumer, got: list[ReceivedMessage], rng: random.Random) -> int:
    """Ack the batch, but send about one in GIVE_UP_EVERY back (invisible time 0) and forward as many to
    the dead-letter queue with a deadline so short the client is often gone before the broker's fsync
    ends; a shard that is down meanwhile leaves them in flight. -> how many were given up."""
    nacked = [m for m in got if rng.randrange(GIVE_UP_EVERY) == 0]
    dead = [m for m in got if m not in nacked and rng.randrange(GIVE_UP_EVERY) == 0]
    try:
        await consumer.ack_many([m for m in got if m not in nacked and m not in dead])
        for m in nacked:
            await consumer.change_invisible_duration(m, 0)
        for m in dead:
            await _forward_and_go(consumer, m, rng.uniform(0.001, 0.02))
    except RockmqError:
        pass
    return len(nacked) + len(dead)


async def _forward_and_go(consumer: AsyncSimpleConsumer, m: ReceivedMessage, timeout_s: float) -> None:
    """ForwardMessageToDeadLetterQueue, given up after `timeout_s` (the call is cancelled on the broker too)."""
    request = rpc.ForwardMessageToDeadLetterQueueRequest(
        group=pb.Resource(name=GROUP), topic=pb.Resource(name=TOPIC), receipt_handle=m.receipt_handle,
        message_id=m.message_id, delivery_attempt=m.delivery_attempt, max_delivery_attempts=16)
    with contextlib.suppress(RockmqError):
        await consumer.session.unary(m.endpoint, "ForwardMessageToDeadLetterQueue", request, timeout=timeout_s)


def _positions(shards: ShardSet) -> str:
    """The group's positions per queue (LAG > 0 with INFLIGHT 0: a queue stranded)."""
    conn = Conn(shards.endpoint)
    try:
        info = conn.describe_group(GROUP)
    finally:
        conn.close()
    rows = [f"{q.broker} queue {q.queue_id}: pop {q.pop_offset} max {q.max_offset} lag {q.lag} inflight {q.inflight}"
            for q in info.queues]
    return "\n".join(rows)
