"""A FIFO queue is held exactly as long as a delivery of it lives (issue 33 §8): whatever ends a
delivery in the store ends its hold too, or the queue is stranded — LAG above 0 with INFLIGHT 0,
nothing handed out until the broker restarts and rebuilds its locks from the store.

ForwardMessageToDeadLetterQueue writes its settlement, then waits for the fsync; a client that
goes away in that wait (its call cancelled) or an fsync that fails used to skip the release of
the queue. The other ways a delivery ends or moves — ack and change of invisible time with a
receipt handle from before a restart, revive after one — are checked beside it.
"""

from __future__ import annotations

import asyncio
import contextlib

from mqwire import message

from rockmq.protocol import pb

LONG_MS = 30_000  # an invisible time that does not run out within the test


def _fifo_queue(harness, unique, bodies: int) -> tuple[str, str]:
    """A one-queue topic holding `bodies` messages of one message group, and a FIFO group."""
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.create_group(group, fifo=True)
    harness.conn.send_ok(*(message(topic, f"a{i}", group="a") for i in range(bodies)))
    return topic, group


def _receive_one(harness, group: str, topic: str, invisible_ms: int = LONG_MS) -> list[bytes]:
    code, got = harness.conn.receive(group, topic, batch=1, invisible_ms=invisible_ms)
    assert code in (pb.OK, pb.MESSAGE_NOT_FOUND), code
    return [m.body for m in got]


def _in_flight(harness, group: str) -> int:
    return harness.conn.describe_group(group).inflight


def test_a_forward_to_the_dead_letter_queue_cancelled_in_its_fsync_releases_the_queue(harness, unique):
    topic, group = _fifo_queue(harness, unique, 2)
    code, first = harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)
    assert [m.body for m in first] == [b"a0"]
    handle = first[0].system_properties.receipt_handle

    async def forward_cancelled_in_its_wait() -> bool:
        """The call's task, cancelled once it wrote its batch and waits for the fsync (its client went away)."""
        broker = harness.services
        forward = asyncio.create_task(broker.pop.forward_to_dlq(broker.ctx.meta.group(group),
                                                                broker.ctx.meta.topic(topic), handle))
        await asyncio.sleep(0)  # it runs up to its first wait: the fsync of what it wrote
        forward.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await forward
        return forward.cancelled()

    assert harness.run(forward_cancelled_in_its_wait()), "the forward finished before it could be cancelled"
    assert _in_flight(harness, group) == 0  # settled in the store: a0 is in the dead-letter topic
    assert _receive_one(harness, group, topic) == [b"a1"], "the queue stayed held for a delivery that is gone"


def test_an_ack_with_a_handle_from_before_a_restart_releases_the_queue(harness, unique):
    topic, group = _fifo_queue(harness, unique, 2)
    code, first = harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)
    harness.restart()
    assert _receive_one(harness, group, topic) == []  # rebuilt from the store: still held
    assert harness.conn.ack(group, topic, first[0]).entries[0].status.code == pb.OK
    assert _receive_one(harness, group, topic) == [b"a1"]


def test_a_change_of_invisible_time_after_a_restart_keeps_the_order_and_then_releases(harness, unique):
    topic, group = _fifo_queue(harness, unique, 2)
    code, first = harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)
    harness.restart()
    moved = harness.conn.change_invisible(group, topic, first[0].system_properties.receipt_handle, ms=0)
    assert moved.status.code == pb.OK, moved.status
    again = harness.conn.receive_n(group, topic, 1, within=10, invisible_ms=LONG_MS)
    assert [m.body for m in again] == [b"a0"]  # redelivered before anything later
    assert harness.conn.ack(group, topic, again[0]).entries[0].status.code == pb.OK
    assert _receive_one(harness, group, topic) == [b"a1"]


def test_a_delivery_that_expires_across_a_restart_comes_again_then_releases(harness, unique):
    topic, group = _fifo_queue(harness, unique, 2)
    assert _receive_one(harness, group, topic, invisible_ms=300) == [b"a0"]
    harness.restart()
    again = harness.conn.receive_n(group, topic, 1, within=10, invisible_ms=LONG_MS)
    assert [m.body for m in again] == [b"a0"]
    assert harness.conn.ack(group, topic, again[0]).entries[0].status.code == pb.OK
    assert _receive_one(harness, group, topic) == [b"a1"]
    assert _in_flight(harness, group) == 1
