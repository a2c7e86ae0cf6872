"""POP writes per batch, not per message: a receive of 32 messages writes one WriteBatch holding
one checkpoint, and an AckMessage of 32 entries is one store write that removes it.

Writes are counted while the POP service's own receive and ack steps run: they run on the
broker's loop without awaiting, so no other part of the broker writes meanwhile.
"""

from __future__ import annotations

from typing import Any

from mqwire import message

from rockmq.protocol import pb
from rockmq.store import keys

N = 32


def count_writes(harness: Any, step: str) -> list[int]:
    """Count the store writes made inside PopService.`step`; -> the live list of counts per call."""
    broker = harness.services
    store, pop = broker.ctx.store, broker.pop
    counts: list[int] = []
    inside = [False]
    write = store.write
    run = getattr(pop, step)

    def counted_write(batch: Any) -> None:
        if inside[0]:
            counts[-1] += 1
        write(batch)

    def counted(*args: Any, **kw: Any) -> Any:
        counts.append(0)
        inside[0] = True
        try:
            return run(*args, **kw)
        finally:
            inside[0] = False

    def install() -> None:
        store.write = counted_write
        setattr(pop, step, counted)

    harness.call(install)
    return counts


def checkpoints(harness: Any, group: str) -> list[tuple[bytes, bytes]]:
    def scan() -> list[tuple[bytes, bytes]]:
        gid = harness.services.ctx.meta.groups[group].id
        return list(harness.services.ctx.store.scan_prefix("checkpoints", keys.group_prefix(gid)))

    return harness.call(scan)


def test_a_receive_writes_one_checkpoint_and_an_ack_of_32_is_one_write(harness, unique):
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.send_ok(*(message(topic, f"m{i}") for i in range(N)))
    receives: list[int] = count_writes(harness, "_receive_once")
    acks: list[int] = count_writes(harness, "ack")

    code, got = harness.conn.receive(group, topic, batch=N, invisible_ms=30_000)
    assert code == pb.OK and len(got) == N
    assert receives == [1]
    (entry,) = checkpoints(harness, group)  # one checkpoint for the whole receive
    assert len({m.system_properties.receipt_handle for m in got}) == N

    reply = harness.conn.ack(group, topic, *got)
    assert [e.status.code for e in reply.entries] == [pb.OK] * N
    assert acks == [1]
    assert checkpoints(harness, group) == []


def test_a_partial_ack_keeps_the_rest_in_flight(harness, unique):
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.send_ok(*(message(topic, f"m{i}") for i in range(4)))
    code, got = harness.conn.receive(group, topic, batch=4, invisible_ms=30_000)
    assert code == pb.OK and len(got) == 4

    def acked(ms: list[pb.Message]) -> list[int]:
        return [e.status.code for e in harness.conn.ack(group, topic, *ms).entries]

    assert acked(got[1:3]) == [pb.OK, pb.OK]
    assert harness.conn.describe_group(group).inflight == 2
    assert acked(got[1:2]) == [pb.INVALID_RECEIPT_HANDLE]  # settled already
    assert acked([got[0], got[3]]) == [pb.OK, pb.OK]
    assert harness.conn.describe_group(group).inflight == 0 and checkpoints(harness, group) == []
