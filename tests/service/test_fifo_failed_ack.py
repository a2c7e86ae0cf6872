"""FIFO order survives a failed ack (issue 20 §3.1): an ack whose store write fails leaves its
message in flight, so its queue stays held for the FIFO group — the next message of the message
group is not delivered before it.

The failure is injected at the store's write boundary, for the writes of PopService.ack only (as
test_pop_writes.py counts them): everything else is the real broker.
"""

from __future__ import annotations

from typing import Any

from mqwire import message

from rockmq.protocol import pb

LONG_MS = 30_000  # an invisible time that does not run out within the test


def fail_next_ack_write(harness: Any) -> None:
    """The next PopService.ack fails its store write, as a disk error would (the batch is not written)."""
    broker = harness.services
    store, pop = broker.ctx.store, broker.pop
    write, ack = store.write, pop.ack

    def failing_write(batch: Any) -> None:
        raise OSError("IO error: injected write failure")

    def failing_ack(*args: Any, **kw: Any) -> Any:
        store.write = failing_write
        try:
            return ack(*args, **kw)
        finally:
            store.write, pop.ack = write, ack

    harness.call(lambda: setattr(pop, "ack", failing_ack))


def test_a_failed_ack_keeps_its_fifo_queue_held(harness, unique):
    topic, group = unique("t"), unique("g")
    harness.conn.create_topic(topic, queues=1)
    harness.conn.create_group(group, fifo=True)
    harness.conn.send_ok(*(message(topic, f"a{i}", group="a") for i in range(2)))
    code, first = harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)
    assert code == pb.OK and [m.body for m in first] == [b"a0"]

    fail_next_ack_write(harness)
    failed = harness.conn.ack(group, topic, first[0])
    assert failed.status.code != pb.OK or failed.entries[0].status.code != pb.OK, failed
    code, later = harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)
    assert later == [], f"a1 delivered while a0 is still in flight: {[m.body for m in later]}"

    assert harness.conn.ack(group, topic, first[0]).entries[0].status.code == pb.OK  # the retried ack settles it
    code, later = harness.conn.receive(group, topic, batch=1, invisible_ms=LONG_MS)
    assert [m.body for m in later] == [b"a1"]
