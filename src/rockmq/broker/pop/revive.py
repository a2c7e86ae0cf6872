"""Revive: deliveries whose invisible time ran out come back, or go to the dead-letter topic.

The loop sleeps until the earliest in-flight deadline (`DeadlineLoop`; a receive or a change of
invisible time that writes an earlier one wakes it through `note`). Each live delivery of an
expired checkpoint moves to the retry family (served first by the group's next receive, with
delivery_attempt + 1) or, once the group's max attempts were delivered, is copied to
`%DLQ%<group>`. A round stops between checkpoints once it copied `revive_dlq_bytes`.

The POP path writes and reads the retry family through here (`requeue`, `waiting`, `take`): a
receive takes its retries (pop/take.py), and a lane consumer leaves there what another lane's
takes. Only retention deletes entries besides, those whose message it removed (retention.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from functools import partial

from rockmq.broker.clock import now_ms
from rockmq.broker.context import BrokerContext
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.pop.checkpoints import Checkpoints
from rockmq.broker.pop.fifo import FifoLocks, in_order
from rockmq.broker.trace import Event
from rockmq.protocol import records
from rockmq.protocol.conventions import DLQ_ATTEMPTS, DLQ_ORIGIN_OFFSET, DLQ_ORIGIN_QUEUE
from rockmq.store import keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family

log = logging.getLogger(__name__)

PARK_MS = 60_000  # a delivery revive could not handle is looked at again this much later


class Reviver:
    def __init__(self, ctx: BrokerContext, checkpoints: Checkpoints, fifo: FifoLocks) -> None:
        self.ctx = ctx
        self.checkpoints = checkpoints
        self.fifo = fifo
        self._retry_seq = ctx.sequence_start
        self.loop = DeadlineLoop("revive", self.revive_due, ctx.settings.revive_batch)

    def note(self, deadline_ms: int) -> None:
        """A delivery now expires at `deadline_ms`: wake up in time for it."""
        self.loop.note(deadline_ms)

    def requeue(self, batch: Batch, gid: int, tid: int, qid: int, offset: int, attempts: int) -> None:
        """Queue a message in `batch` for the group's next receives (delivered as attempt `attempts` + 1)."""
        self._retry_seq += 1
        batch.put(Family.RETRY, keys.retry_key(gid, tid, self._retry_seq), keys.retry_value(qid, offset, attempts))

    def waiting(self, gid: int, tid: int, limit: int | None) -> Iterator[tuple[bytes, bytes]]:
        """The group's retries of the topic, oldest first (at most `limit`): (key, `keys.retry_value`)."""
        return self.ctx.store.scan_prefix(Family.RETRY, keys.retry_prefix(gid, tid), limit)

    @staticmethod
    def take(batch: Batch, key: bytes) -> None:
        """A retry handed out (or dropped: its message is gone or no longer subscribed) in `batch`."""
        batch.delete(Family.RETRY, key)

    def queues_waiting(self, gid: int) -> Iterator[tuple[int, int, int]]:
        """(topic id, queue id, offset) of each of a group's retries."""
        for key, value in self.ctx.store.scan_prefix(Family.RETRY, keys.group_prefix(gid)):
            qid, offset, _ = keys.parse_retry_value(value)
            yield keys.parse_retry_key(key)[1], qid, offset

    def dead_letter(self, batch: Batch, group: GroupConfig, topic: TopicConfig, queue_id: int, offset: int,
                    attempts: int) -> int:
        """Copy a message to the group's dead-letter topic in `batch`, with where it came from (what
        broker/dead_letters.py sends back) and its `attempts`; -> bytes copied."""
        record = self.ctx.logs.read(topic.id, queue_id, offset)
        if record is None:  # removed by retention: nothing left to keep
            return 0
        msg = records.decode(record)
        message_id = msg.system_properties.message_id
        msg.system_properties.dead_letter_queue.topic = topic.name
        msg.system_properties.dead_letter_queue.message_id = message_id
        msg.user_properties.update({DLQ_ORIGIN_QUEUE: str(queue_id), DLQ_ORIGIN_OFFSET: str(offset),
                                    DLQ_ATTEMPTS: str(attempts)})
        dlq = self.ctx.dlq_topic(group)
        self.ctx.logs.append_record(batch, dlq, 0, self.ctx.logs.seal(dlq, msg))
        self.ctx.tally.dead_lettered(topic.id, group.name)
        self.ctx.logs.trace.event(batch, topic.id, queue_id, offset, Event.DEAD_LETTERED, group.id)
        log.info("message %s of %s moved to %s", message_id, topic.name, dlq.name)
        return len(record)

    def revive_due(self) -> tuple[int, int | None]:
        """Move the deliveries of up to `revive_batch` expired checkpoints; -> (checkpoints, next
        deadline or None).

        One delivery that cannot be handled is parked for PARK_MS and logged; it never holds up
        the others. In-memory FIFO state changes only once the batch is written.
        """
        ctx = self.ctx
        batch = ctx.store.batch()
        touched: set[int] = set()
        settled: list[Callable[[], None]] = []
        moved = dead_bytes = 0
        now = now_ms()
        for e in self.checkpoints.expired(self.loop, now, ctx.settings.revive_batch):
            if dead_bytes >= ctx.settings.revive_dlq_bytes:  # the rest comes next round
                break
            moved += 1
            gid, tid = e.group_id, e.topic_id
            group, topic = ctx.meta.groups_by_id.get(gid), ctx.meta.topics_by_id.get(tid)
            self.checkpoints.drop(batch, e)
            if group is None or topic is None or e.entries is None:
                continue
            for qid, offset, attempt in e.entries:
                try:
                    if attempt >= group.max_attempts:
                        dead_bytes += self.dead_letter(batch, group, topic, qid, offset, attempt)
                        if in_order(group.fifo, qid):
                            settled.append(partial(self.fifo.settled, (gid, tid, qid), was_inflight=True))
                    else:
                        self.requeue(batch, gid, tid, qid, offset, attempt)
                        if in_order(group.fifo, qid):
                            settled.append(partial(self.fifo.revived, (gid, tid, qid)))
                except Exception:
                    log.exception("cannot revive %s:%d:%d for group %s; retrying in %d s",
                                  topic.name, qid, offset, group.name, PARK_MS // 1000)
                    self.checkpoints.park(batch, e, (qid, offset, attempt), now + PARK_MS)
            touched.add(tid)
        ctx.store.write(batch)
        for apply in settled:
            apply()
        for tid in touched:  # retries became visible: wake the topics' receives
            ctx.logs.arrivals.receives(tid)
        return moved, self.checkpoints.earliest(self.loop)
