"""SendMessage: validate (broker/validate.py), de-duplicate (broker/dedup.py), place in a queue,
append durably (broker/commit.py).

A message goes to the queue its client chose (`queue_id`, when the request says the client
chooses: docs/protocol.md), else the broker's rotation; a FIFO message always to its group's hash.
A delayed or transactional message keeps the chosen queue in its sealed record until it enters it.

A request's messages go into one WriteBatch (log entries + dedup entries), written at once and
acknowledged once it is durable. Delayed messages go to the timer service, and
transactional ones to the transaction service as half messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from rockmq.broker import priority, validate
from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.context import BrokerContext
from rockmq.broker.dedup import Dedup
from rockmq.broker.lite.subscriptions import LiteSubscriptions
from rockmq.broker.lite.topics import Created, Placed, check_lite_message
from rockmq.broker.metadata import PRIORITY, TopicConfig, check_writable
from rockmq.broker.timers import TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError
from rockmq.protocol.send_request import SentMessage, parsed
from rockmq.store.db import Batch


@dataclass(slots=True)
class SendResult:
    code: int
    message: str
    message_id: str
    offset: int = 0
    transaction_id: str = ""
    recall_handle: str = ""


Checked = tuple[TopicConfig, str, SentMessage, int] | BrokerError


class LiteOwners(Protocol):
    """Where the lite messages of a request belong (broker/cluster/lite_routing.py)."""

    @property
    def enabled(self) -> bool: ...  # several brokers: some may be elsewhere

    async def elsewhere(self, messages: Sequence[SentMessage]) -> dict[str, list[int]]: ...

    async def forward(self, endpoint: str, messages: list[SentMessage]) -> list[SendResult]: ...


def _writable(checked: Checked) -> Checked:
    """A checked message, or the refusal of a send to a read-only topic."""
    if isinstance(checked, tuple):
        try:
            check_writable(checked[0])
        except BrokerError as e:
            return e
    return checked


class SendService:
    def __init__(self, ctx: BrokerContext, timers: TimerService, transactions: TransactionService, dedup: Dedup,
                 committer: Committer, lite: LiteSubscriptions, owners: LiteOwners) -> None:
        self.ctx = ctx
        self.lite = lite
        self.owners = owners
        self.timers = timers
        self.transactions = transactions
        self.dedup = dedup
        self.commit = committer.commit
        self.tally = ctx.tally

    def _check(self, msg: SentMessage, now: int, chosen: bool) -> Checked:
        """The message's topic (created now if it is new: every check passed), type, the message
        (a dead letter readdressed) and its due time (0: none), or why not."""
        ctx = self.ctx
        delivery = msg.delivery
        due = validate.timestamp_ms(delivery[0], delivery[1]) if delivery is not None else 0
        lite = msg.lite_topic
        try:
            target, mtype, dead_letter = validate.check_fields(
                msg.topic, msg.message_id, msg.queue_id, len(msg.body), msg.tag, msg.keys, msg.message_group,
                msg.user_properties, due if delivery is not None else None,
                msg.message_type or (pb.LITE if lite is not None else pb.PRIORITY if msg.priority is not None else 0),
                ctx.meta, ctx.settings, now, chosen)
            if lite is not None or mtype == "LITE":
                check_lite_message(lite, mtype, msg.message_group is not None, delivery is not None, msg.priority)
            if mtype == "TRANSACTION":
                self.transactions.check_room()
            topic = target if type(target) is TopicConfig else ctx.ensure_topic(target)
            if msg.priority is not None or mtype == PRIORITY:  # a plain message: this test only
                validate.check_priority(msg.priority, mtype, msg.message_group is not None, delivery is not None, topic)
        except BrokerError as e:
            return e
        if dead_letter:  # due now, whatever the send-back asked, in the dead-letter topic's first queue
            dead = msg.message()
            sp = dead.system_properties
            sp.ClearField("delivery_timestamp")
            sp.message_type = pb.NORMAL
            dead.topic.name = topic.name
            return topic, mtype, parsed(dead), 0
        return topic, mtype, msg, due

    async def send(self, messages: Sequence[SentMessage], chosen: bool = False, forwarded: bool = False) -> list[SendResult]:
        """Store a request's messages (`send_request.read`: from its bytes); each gets its own result. Durable when this returns.
        `chosen`: the client chose each message's queue (`queue_id`, checked valid here). Lite messages
        another broker owns go there (`owners`), unless another broker `forwarded` them here."""
        self.ctx.refuse_if_draining()
        validate.check_request(messages)
        remote = await self.owners.elsewhere(messages) if self.owners.enabled and not forwarded else {}
        if remote:
            return await self._send_split(messages, remote, chosen)
        return await self._send_here(messages, chosen)

    async def _send_split(self, messages: Sequence[SentMessage], remote: dict[str, list[int]],
                          chosen: bool) -> list[SendResult]:
        """Those stored here and those passed to their owners, at once, answered in request order."""
        elsewhere = {i for indexes in remote.values() for i in indexes}
        here = [i for i in range(len(messages)) if i not in elsewhere]
        parts = [(here, self._send_here([messages[i] for i in here], chosen))] if here else []
        parts += [(indexes, self.owners.forward(endpoint, [messages[i] for i in indexes]))
                  for endpoint, indexes in remote.items()]
        answers = await asyncio.gather(*(call for _, call in parts))
        results: list[SendResult | None] = [None] * len(messages)
        for (indexes, _), answer in zip(parts, answers, strict=True):
            for i, result in zip(indexes, answer, strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    def _place_lite(self, batch: Batch, wanted: list[tuple[TopicConfig, str]], created: Created) -> Placed:
        """The queues of these lite topics (`LiteTopics.queues`); one created here starts at offset 0
        (`new_queues`: no need to look)."""
        placed = self.lite.topics.queues(batch, wanted, created)
        if created:
            self.ctx.logs.new_queues([(tid, qid) for (tid, _), qid in created.items()])
        return placed

    async def _send_here(self, messages: Sequence[SentMessage], chosen: bool) -> list[SendResult]:
        self.ctx.store.space.room(sum(len(m.body) for m in messages))  # disk full: refused before anything is written
        logs = self.ctx.logs
        dedup = self.dedup
        now = now_ms()
        bucket = dedup.bucket(now)
        batch = self.ctx.store.batch()
        results: list[SendResult] = []
        touched: set[int] = set()
        seen: dict[tuple[int, str], SendResult] = {}
        allocated: dict[tuple[int, int], int] = {}
        created: Created = {}  # lite topics this request creates
        sizes: dict[tuple[int, str], list[int]] = {}  # (topic id, type) -> sizes of the messages stored (for /metrics)
        check = self._check
        checked = [check(msg, now, chosen) for msg in messages]
        if self.ctx.meta.restricted:  # some topic is not rw (topic update --perm): only then a look per message
            checked = [_writable(c) for c in checked]
        stored = iter(dedup.lookup(bucket, [(c[0].id, c[2].message_id) for c in checked if isinstance(c, tuple)]))
        append, record, choose = logs.append_received, dedup.record, logs.choose_queue
        placed: Placed = {}  # (LITE topic id, lite topic) -> its queue, or why not
        try:
            if messages[0].lite_topic is not None:  # a lite send's at once (one multi-get); a mixed request's one by one
                placed = self._place_lite(batch, [(c[0], c[2].lite_topic) for c in checked
                                                  if isinstance(c, tuple) and c[2].lite_topic is not None], created)
            for c, original in zip(checked, messages, strict=True):
                if isinstance(c, BrokerError):
                    results.append(SendResult(c.code, c.message, original.message_id))
                    continue
                topic, mtype, msg, due = c
                tid = topic.id
                mid = msg.message_id
                previous = next(stored)
                earlier = seen.get((tid, mid))
                if earlier is not None:
                    results.append(earlier)
                    continue
                if previous is not None:  # a client retry of a message we already stored
                    results.append(SendResult(pb.OK, "OK", mid, previous.offset, previous.transaction_id, previous.recall_handle))
                    continue
                group = msg.message_group
                picked = msg.queue_id if chosen and group is None else -1  # FIFO: the group's hash
                lite = msg.lite_topic
                if lite is not None:  # its lite topic's queue, whatever the client picked
                    queue = placed.get((tid, lite))
                    if queue is None:
                        placed.update(self._place_lite(batch, [(topic, lite)], created))
                        queue = placed[(tid, lite)]
                    if isinstance(queue, BrokerError):
                        results.append(SendResult(queue.code, queue.message, mid))
                        continue
                    picked = queue
                if mtype == "TRANSACTION":
                    result = SendResult(pb.OK, "OK", mid, 0, self.transactions.prepare(batch, topic, msg.message(), due, picked))
                    queue_id = -1
                elif due > now:
                    result = SendResult(pb.OK, "OK", mid, 0, "", self.timers.schedule(batch, topic, msg.message(), due, picked))
                    queue_id = -1
                else:
                    queue_id = picked if picked >= 0 else choose(topic, group)
                    if mtype == PRIORITY:  # its level's queue in the lane picked (docs/priority.md)
                        queue_id = priority.queue_of(queue_id, msg.priority or 0, topic.max_priority)
                    result = SendResult(pb.OK, "OK", mid, append(batch, topic, queue_id, msg, now, allocated))
                    touched.add(tid)
                record(batch, bucket, tid, mid, queue_id, result.offset, result.transaction_id, result.recall_handle)
                sized = sizes.get((tid, mtype))
                if sized is None:
                    sized = sizes[(tid, mtype)] = []
                sized.append(len(msg.body))
                seen[(tid, mid)] = result
                results.append(result)
        except BaseException:  # a message that passed validation still failed: its request writes nothing
            logs.rollback(allocated)
            self.lite.topics.rollback(created)
            raise
        # Even a request that was all duplicates waits for the fsync covering the originals.
        try:
            await self.commit(batch, allocated, touched)
        except BaseException:
            self.lite.topics.rollback(created)  # those it wrote stay
            raise
        if created:
            self.lite.topics.written(created)
        if placed:
            self.lite.arrived(placed)
        for (tid, mtype), sized in sizes.items():
            self.tally.stored(tid, mtype, sized)
        return results
