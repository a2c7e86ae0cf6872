"""A group's dead letters (`%DLQ%<group>`): listed, sent back to the group, purged.

Sending one back reuses how a retry reaches one group only: the broker's retry family
(pop/revive.py `requeue`), whose entries name a message of the original topic by queue and
offset and are served first by that group's next receives. Every other group's position is
untouched, so it never sees the message twice. The dead letter's copy records where it came from
(conventions.DLQ_ORIGIN_QUEUE / DLQ_ORIGIN_OFFSET, written by `Reviver.dead_letter`); a copy whose
original retention already removed, or one dead-lettered before the copy recorded its origin, is
skipped and said so. Its attempts start over; the copy stays in the dead-letter topic (a log):
`purge` removes copies.

Only groups that consume by POP (ReceiveMessage) have retries: a group that consumes by offsets
(pull) is refused, as its consumer keeps its own position.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

from rockmq.broker.context import BrokerContext
from rockmq.broker.metadata import OFFSET, GroupConfig, TopicConfig
from rockmq.broker.pop.fifo import FifoLocks, in_order
from rockmq.broker.pop.revive import Reviver
from rockmq.broker.retention import first_to_keep, stored_at
from rockmq.protocol import admin, pb, records
from rockmq.protocol.conventions import DLQ_ATTEMPTS, DLQ_ORIGIN_OFFSET, DLQ_ORIGIN_QUEUE, dlq_topic
from rockmq.protocol.errors import BrokerError
from rockmq.store import keys
from rockmq.store.schema import Family

UNPACED_CHUNK = 1000  # letters sent back per write at most (per second's share with a rate)
MAX_REPORTED = 100  # letters a resend's reply says why it skipped (it counts them all): a reply stays small


def page_limit(requested: int, most: int) -> int:
    """A listing's size: `requested`, unless 0 or above `most` (the broker's max_list_page)."""
    return requested if 0 < requested <= most else most


@dataclass(frozen=True)
class Letter:
    """One copy in a dead-letter topic and what it says of its original."""

    queue_id: int  # in the dead-letter topic
    offset: int
    store_ms: int
    message: pb.Message

    @property
    def message_id(self) -> str:
        return self.message.system_properties.message_id

    @property
    def origin(self) -> tuple[int, int] | None:
        """(queue, offset) of the original in its topic; None when the copy does not say."""
        props = self.message.user_properties
        try:
            return int(props[DLQ_ORIGIN_QUEUE]), int(props[DLQ_ORIGIN_OFFSET])
        except (KeyError, ValueError):
            return None

    def info(self, broker: str) -> admin.DeadLetter:
        sp = self.message.system_properties
        attempts = self.message.user_properties.get(DLQ_ATTEMPTS, "0")
        return admin.DeadLetter(message_id=sp.message_id, topic=sp.dead_letter_queue.topic, store_ms=self.store_ms,
                                attempts=int(attempts) if attempts.isdigit() else 0, keys=sp.keys,
                                tag=sp.tag if sp.HasField("tag") else "", broker=broker)


class DeadLetters:
    def __init__(self, ctx: BrokerContext, reviver: Reviver, fifo: FifoLocks, broker: str) -> None:
        self.ctx = ctx
        self.reviver = reviver
        self.fifo = fifo
        self.broker = broker

    def _dlq(self, group_name: str) -> tuple[GroupConfig, TopicConfig | None]:
        """The group (CONSUMER_GROUP_NOT_FOUND if none) and its dead-letter topic (None: nothing dead-lettered yet)."""
        group = self.ctx.meta.group(group_name)
        return group, self.ctx.meta.topics.get(dlq_topic(group.name))

    def _letters(self, topic: TopicConfig, from_ms: int, to_ms: int) -> Iterator[Letter]:
        """The topic's copies stored in [from_ms, to_ms) (to_ms 0: no bound), queue by queue, oldest first."""
        logs = self.ctx.logs
        for q in range(topic.queues):
            lo, hi = logs.min_offset(topic.id, q), logs.max_offset(topic.id, q)
            start = first_to_keep(stored_at(logs, topic.id, q), lo, hi, from_ms) if from_ms else lo
            for offset, record in logs.scan(topic.id, q, start, hi - start):
                at = records.store_ms(record)
                if to_ms and at >= to_ms:
                    break
                yield Letter(q, offset, at, records.decode(record))

    def listing(self, request: admin.DlqListRequest) -> admin.DlqListResponse:
        limit = page_limit(request.limit, self.ctx.settings.max_list_page)
        _, topic = self._dlq(request.group)
        reply = admin.DlqListResponse()
        if topic is None:
            return reply
        for letter in self._letters(topic, request.from_ms, request.to_ms):
            if len(reply.messages) == limit:
                reply.more = True
                break
            reply.messages.append(letter.info(self.broker))
        return reply

    async def resend(self, request: admin.DlqResendRequest) -> admin.DlqResendResponse:
        """Send the named (or all) dead letters back to the group, at most `rate` per second."""
        if request.all == bool(request.message_ids):
            raise BrokerError(pb.BAD_REQUEST, "name the dead letters to send back (message ids) or ask for all of them")
        if request.rate < 0:
            raise BrokerError(pb.BAD_REQUEST, f"rate must not be negative, not {request.rate}")
        group, topic = self._dlq(request.group)
        if group.consume_mode == OFFSET:
            raise BrokerError(pb.FORBIDDEN, f"group {group.name!r} consumes by offsets (pull): its consumers keep their "
                                            "own positions, so dead letters go back only to groups that consume by POP")
        wanted = set(request.message_ids)
        reply = admin.DlqResendResponse()
        found: set[str] = set()
        chunk: list[Letter] = []
        size = min(request.rate or UNPACED_CHUNK, UNPACED_CHUNK)  # the rate is the client's number: not a chunk's size
        for letter in [] if topic is None else self._letters(topic, 0, 0):  # streamed: one chunk in memory
            if not request.all:
                if letter.message_id not in wanted:
                    continue
                found.add(letter.message_id)
            chunk.append(letter)
            if len(chunk) == size:
                self._send_back(group, chunk, reply)
                # Paced: the chunk's share of a second at `rate`; unpaced, the loop's other work between two chunks.
                await asyncio.sleep(len(chunk) / request.rate if request.rate else 0)
                chunk = []
                self._still_there(group, reply)
        self._send_back(group, chunk, reply)
        reply.unknown.extend(sorted(wanted - found))
        return reply

    def _still_there(self, group: GroupConfig, reply: admin.DlqResendResponse) -> None:
        """Refuse to go on once the group was deleted meanwhile: a retry queued for it would outlive it."""
        if self.ctx.meta.groups.get(group.name) is not group:
            raise BrokerError(pb.CONSUMER_GROUP_NOT_FOUND, f"consumer group {group.name!r} was deleted while its dead "
                                                           f"letters were sent back ({reply.resent} were)")

    def _send_back(self, group: GroupConfig, letters: list[Letter], reply: admin.DlqResendResponse) -> None:
        """Queue each letter's original for the group's next receives (one write), or say why not."""
        if not letters:
            return
        ctx = self.ctx
        batch = ctx.store.batch()
        queued: list[tuple[int, int]] = []
        for letter in letters:
            why = self._why_not(letter)
            if isinstance(why, str):
                reply.skipped_count += 1
                if len(reply.skipped) < MAX_REPORTED:
                    reply.skipped.append(f"{letter.message_id}: {why}")
                continue
            tid, (qid, offset) = why
            self.reviver.requeue(batch, group.id, tid, qid, offset, 0)
            queued.append((tid, qid))
            reply.resent += 1
        ctx.store.write(batch)
        for tid, qid in queued:
            if in_order(group.fifo, qid):  # a waiting retry holds its queue (pop/fifo.py), as after a restart
                self.fifo.delivered((group.id, tid, qid), first_time=True)
                self.fifo.revived((group.id, tid, qid))
        for tid in {tid for tid, _ in queued}:
            ctx.logs.arrivals.receives(tid)

    def _why_not(self, letter: Letter) -> tuple[int, tuple[int, int]] | str:
        """(original topic id, (queue, offset)) of a letter that can go back, else why it cannot."""
        name = letter.message.system_properties.dead_letter_queue.topic
        topic = self.ctx.meta.topics.get(name)
        if topic is None:
            return f"topic {name!r} no longer exists"
        origin = letter.origin
        if origin is None:
            return "the copy does not say where its original is (dead-lettered by an older broker)"
        record = self.ctx.logs.read(topic.id, *origin)
        if record is None or records.message_id(record) != letter.message_id:
            return f"its original was removed from {name!r} (retention)"
        return topic.id, origin

    def purge(self, request: admin.DlqPurgeRequest) -> admin.DlqPurgeResponse:
        """Remove the group's dead letters (those stored before `before_ms`, if given)."""
        _, topic = self._dlq(request.group)
        if topic is None:
            return admin.DlqPurgeResponse()
        logs = self.ctx.logs
        batch = self.ctx.store.batch()
        purged = 0
        for q in range(topic.queues):
            lo, hi = logs.min_offset(topic.id, q), logs.max_offset(topic.id, q)
            cut = first_to_keep(stored_at(logs, topic.id, q), lo, hi, request.before_ms) if request.before_ms else hi
            if cut > lo:
                batch.delete_range(Family.LOG, keys.log_key(topic.id, q, lo), keys.log_key(topic.id, q, cut))
                purged += cut - lo
        self.ctx.store.write(batch)
        return admin.DlqPurgeResponse(purged=purged)
