"""Transactional messages: half messages, EndTransaction, and checks of orphaned transactions.

A TRANSACTION send stores a sealed half message in the `txn` family, invisible to consumers,
and schedules its first check in `txnchecks` (keyed by deadline, like timers). EndTransaction
COMMIT appends the message to its queue (or to the timers, if it is also delayed); ROLLBACK
drops it. A transaction still undecided at its check deadline is offered to a producer of its
topic on that producer's Telemetry stream (`recover_orphaned_transaction_command`); the producer
answers with EndTransaction. First check after `txn_check_first_s` (or the message's own
`orphaned_transaction_recovery_duration`), then every
`txn_check_interval_s`; once `txn_check_max` checks went unanswered the broker rolls it back.

With authentication on, a transaction belongs to the user who sent its half message: only that
user may end it, and its checks go only to that user's producers (a half message of an
authenticated user is stored with its name: `_OWNED`; one sent with authentication off stays
anyone's).

A resolved transaction leaves a small marker (C or R) so that a repeated EndTransaction gets
the same answer; the marker is dropped after the de-duplication window, by the same check loop.
"""

from __future__ import annotations

import logging
import struct
import uuid
from typing import Protocol

from rockmq.broker.clients import not_yours, requester
from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.context import BrokerContext
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.broker.metadata import TopicConfig
from rockmq.broker.timers import TimerService
from rockmq.broker.trace import Event
from rockmq.protocol import pb, records, rpc
from rockmq.protocol.errors import BrokerError, over_limit
from rockmq.store import keys
from rockmq.store.counts import StoredCount
from rockmq.store.db import Batch
from rockmq.store.schema import Family

log = logging.getLogger(__name__)

_PENDING = b"P"  # + _HALF + sealed record
_OWNED = b"O"  # + _HALF + owner's length (u8) + owner (its user name) + sealed record
_HALF = struct.Struct(">IQQH")  # topic_id · due_ms (0: not delayed) · next check ms · checks sent
COMMITTED, ROLLED_BACK = b"C", b"R"
Half = tuple[int, int, int, int]  # _HALF's fields


def half_value(fields: Half, owner: str, sealed: bytes) -> bytes:
    """A pending half message as stored ("" owner: anyone's, authentication off)."""
    if not owner:
        return _PENDING + _HALF.pack(*fields) + sealed
    name = owner.encode()
    return _OWNED + _HALF.pack(*fields) + bytes((len(name),)) + name + sealed


def read_half(raw: bytes) -> tuple[Half, str, bytes] | None:
    """A stored value -> (its fields, its owner, its sealed record); None: an outcome marker."""
    kind = raw[:1]
    if kind == _PENDING:
        return _HALF.unpack_from(raw, 1), "", raw[1 + _HALF.size:]
    if kind == _OWNED:
        start = 2 + _HALF.size
        end = start + raw[1 + _HALF.size]
        return _HALF.unpack_from(raw, 1), raw[start:end].decode(), raw[end:]
    return None

class Publishers(Protocol):
    """The producers connected to this broker (broker/clients.py)."""

    def push_to_publisher(self, topic: str, command: rpc.TelemetryCommand, user: str) -> bool:
        """Hand a command to a producer of the topic of `user` (any, for ""); False when none is connected."""
        ...


class TransactionService:
    def __init__(self, ctx: BrokerContext, timers: TimerService, committer: Committer, publishers: Publishers) -> None:
        self.ctx = ctx
        self.timers = timers
        self.commit = committer.commit
        self.durable = committer.durable
        self.publishers = publishers
        self.loop = DeadlineLoop("transaction checks", self.check_due, ctx.settings.txn_check_batch)
        self.pending = StoredCount(ctx.store, keys.HALF_COUNT_KEY, lambda: sum(
            1 for _, v in ctx.store.scan(Family.TXN, b"", b"\xff" * 33) if v[:1] in (_PENDING, _OWNED)))

    def check_room(self) -> None:
        """Refuses (TOO_MANY_REQUESTS) a transactional message while max_transaction_checks
        transactions are undecided: each is a stored half message the broker keeps checking."""
        most = self.ctx.settings.max_transaction_checks
        if self.pending.value >= most:
            raise over_limit("transactional message refused", "max_transaction_checks", most,
                             "end undecided transactions (EndTransaction), or raise max_transaction_checks")

    def prepare(self, batch: Batch, topic: TopicConfig, msg: pb.Message, due_ms: int, queue_id: int = -1) -> str:
        """Put a half message into `batch`; -> its transaction id. `due_ms` 0: not delayed.
        `queue_id`: the queue its client chose (-1: the broker chooses once it is committed)."""
        txn_id = uuid.uuid4().hex
        sp = msg.system_properties
        if sp.HasField("orphaned_transaction_recovery_duration"):  # the producer's own first-check delay, within max_delay_s
            asked = sp.orphaned_transaction_recovery_duration.ToMilliseconds()
            first_delay_ms = min(max(0, asked), self.ctx.settings.max_delay_s * 1000)
        else:
            first_delay_ms = int(self.ctx.settings.txn_check_first_s * 1000)
        first_check = now_ms() + first_delay_ms
        sealed = self.ctx.logs.seal(topic, msg, queue_id)
        batch.put(Family.TXN, txn_id.encode(), half_value((topic.id, due_ms, first_check, 0), requester(), sealed))
        batch.put(Family.TXNCHECKS, keys.txn_check_key(first_check, txn_id), b"")
        self.pending.add(batch, 1)
        self.loop.note(first_check)
        return txn_id

    async def end(self, topic_name: str, message_id: str, transaction_id: str, resolution: int) -> None:
        """EndTransaction: commit or roll back a half message. Repeating the same answer is OK."""
        if resolution not in (pb.COMMIT, pb.ROLLBACK):
            raise BrokerError(pb.BAD_REQUEST, "resolution must be COMMIT or ROLLBACK")
        commit = resolution == pb.COMMIT
        ctx = self.ctx
        if not transaction_id:
            raise BrokerError(pb.INVALID_TRANSACTION_ID, "transaction_id is empty")
        raw = ctx.store.get(Family.TXN, transaction_id.encode())
        if raw is None:
            raise BrokerError(pb.INVALID_TRANSACTION_ID, f"no pending transaction {transaction_id!r}")
        outcome = COMMITTED if commit else ROLLED_BACK
        half = read_half(raw)
        if half is None:  # a repeated EndTransaction (or one after the broker gave up)
            if raw != outcome:
                done = "committed" if raw == COMMITTED else "rolled back"
                raise BrokerError(pb.INVALID_TRANSACTION_ID, f"transaction {transaction_id!r} was already {done}")
            await self.durable()  # the first end's outcome may not be on the replica yet
            return
        (topic_id, due_ms, next_check, _), owner, sealed = half
        if owner and owner != requester():  # one sent with authentication off is anyone's, as it was
            raise not_yours("EndTransaction", f"user {requester()!r} may not end transaction {transaction_id!r}: "
                                              "it is another user's")
        topic = ctx.meta.topics_by_id.get(topic_id)
        wrong_id = message_id and records.message_id(sealed) != message_id
        if (topic is not None and topic.name != topic_name) or wrong_id:
            raise BrokerError(pb.INVALID_TRANSACTION_ID,
                              f"transaction {transaction_id!r} is not message {message_id!r} of topic {topic_name!r}")
        batch = ctx.store.batch()
        batch.delete(Family.TXNCHECKS, keys.txn_check_key(next_check, transaction_id))
        self._resolve(batch, transaction_id, outcome)
        allocated: dict[tuple[int, int], int] = {}
        touched: list[int] = []
        if not commit:
            ctx.logs.trace.unplaced(batch, topic_id, records.message_id(sealed), Event.ROLLED_BACK, requester())
        elif topic is not None:
            if due_ms > now_ms():
                self.timers.schedule_record(batch, topic, sealed, due_ms)
                ctx.logs.trace.unplaced(batch, topic_id, records.message_id(sealed), Event.COMMITTED, requester())
            else:
                queue_id = ctx.logs.queue_of(topic, sealed)
                offset = ctx.logs.append_record(batch, topic, queue_id, sealed, allocated=allocated)
                ctx.logs.trace.event(batch, topic.id, queue_id, offset, Event.COMMITTED)
                touched.append(topic.id)
        await self.commit(batch, allocated, touched)
        ctx.tally.ended(topic_id, commit)

    def _resolve(self, batch: Batch, transaction_id: str, outcome: bytes) -> None:
        """Replace the half message by its outcome marker, which expires after the dedup window."""
        batch.put(Family.TXN, transaction_id.encode(), outcome)
        self.pending.add(batch, -1)
        expiry = now_ms() + self.ctx.settings.dedup_window_s * 1000
        batch.put(Family.TXNCHECKS, keys.txn_check_key(expiry, transaction_id), b"")
        self.loop.note(expiry)

    def check_due(self) -> tuple[int, int | None]:
        """Handle up to `txn_check_batch` due entries: send checks, give up, drop expired markers."""
        ctx = self.ctx
        s = ctx.settings
        now = now_ms()
        batch = ctx.store.batch()
        checks: list[tuple[str, rpc.TelemetryCommand, str]] = []
        handled = 0
        for key, _ in self.loop.due(ctx.store, Family.TXNCHECKS, now, s.txn_check_batch):
            handled += 1
            batch.delete(Family.TXNCHECKS, key)
            _, txn_id = keys.parse_txn_check_key(key)
            raw = ctx.store.get(Family.TXN, txn_id.encode())
            if raw is None:
                continue
            half = read_half(raw)
            if half is None:  # an outcome marker whose time is up
                batch.delete(Family.TXN, txn_id.encode())
                continue
            (topic_id, due_ms, _, sent), owner, sealed = half
            topic = ctx.meta.topics_by_id.get(topic_id)
            if topic is None or sent >= s.txn_check_max:
                log.warning("transaction %s (message %s) undecided after %d checks: rolled back",
                            txn_id, records.message_id(sealed), sent)
                self._resolve(batch, txn_id, ROLLED_BACK)
                ctx.tally.ended(topic_id, False)
                ctx.logs.trace.unplaced(batch, topic_id, records.message_id(sealed), Event.ROLLED_BACK)
                continue
            nxt = now + int(s.txn_check_interval_s * 1000)
            batch.put(Family.TXN, txn_id.encode(), half_value((topic_id, due_ms, nxt, sent + 1), owner, sealed))
            batch.put(Family.TXNCHECKS, keys.txn_check_key(nxt, txn_id), b"")
            checks.append((topic.name, check_command(sealed, txn_id), owner))
            ctx.logs.trace.unplaced(batch, topic_id, records.message_id(sealed), Event.CHECKED)
        ctx.store.write(batch)
        for topic_name, command, owner in checks:
            if not self.publishers.push_to_publisher(topic_name, command, owner):
                log.debug("no producer of %s connected to check transaction %s", topic_name,
                          command.recover_orphaned_transaction_command.transaction_id)
        return handled, self.loop.earliest(ctx.store, Family.TXNCHECKS)


def check_command(sealed: bytes, transaction_id: str) -> rpc.TelemetryCommand:
    """The Telemetry command asking a producer to resolve a transaction."""
    command = rpc.TelemetryCommand()
    recover = command.recover_orphaned_transaction_command
    recover.message.ParseFromString(records.view(sealed).message())
    recover.transaction_id = transaction_id
    return command
