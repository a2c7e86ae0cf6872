"""Checkpoints: the one owner of deliveries' in-flight state and of receipt-handle verification.

One receive writes one checkpoint for every message it hands out, as a pair in its batch:
`checkpoints` maps (group · topic · checkpoint id) to the deadline, the number of live entries
and per delivery (queue, offset, attempt) — what a receipt handle, which names the checkpoint
and an entry, is checked against — and `inflight` holds the same checkpoint keyed by deadline,
for the revive loop. So a receive of 256 messages writes two keys, and an ack of 256 handles of
one receive rewrites (or deletes) them once. Nobody else reads or writes either family: ack
settles entries (the checkpoint goes once none is live), ChangeInvisibleDuration moves one to a
checkpoint of its own (a new handle), auto-renew and release move a whole checkpoint's deadline
(the client's handles stay valid), revive takes the expired ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from rockmq.broker import trace
from rockmq.broker.clock import now_ms
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.protocol import pb, receipt
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family

_HEAD = keys.CHECKPOINT_HEAD
_ENTRY = keys.CHECKPOINT_ENTRY
_SETTLED = 0  # an entry's attempt once it is settled


def _entry_at(entry: int) -> int:
    """Where a checkpoint's `entry`th delivery starts in its value."""
    return _HEAD.size + entry * _ENTRY.size


Settled = tuple[int, int, int]  # a delivery settled: queue, offset, attempt


class Delivery(NamedTuple):
    """A live delivery, as a receipt handle names it."""

    group_id: int
    topic_id: int
    checkpoint_id: int
    entry: int
    queue_id: int
    offset: int
    attempt: int
    deadline: int


class Expired(NamedTuple):
    """A checkpoint whose deadline passed; `entries` its live (queue, offset, attempt), None
    when the checkpoint is gone already."""

    deadline: int
    group_id: int
    topic_id: int
    checkpoint_id: int
    entries: list[tuple[int, int, int]] | None


class Issue:
    """The checkpoint of one receive, filled while its messages are handed out."""

    def __init__(self, checkpoints: Checkpoints, group_id: int, topic_id: int, deadline: int) -> None:
        self._checkpoints = checkpoints
        self.group_id, self.topic_id, self.deadline = group_id, topic_id, deadline
        self.checkpoint_id = 0  # taken with the first delivery: an empty receive costs nothing
        self._token = ""
        self._entries: list[bytes] = []
        self.ranges: list[trace.Range] = []  # (queue, first, last, attempt) handed out

    def add(self, queue_id: int, offset: int, attempt: int) -> str:
        """A delivery -> its receipt handle."""
        token, entry = self.next_entry()
        self._entries.append(_ENTRY.pack(queue_id, offset, attempt))
        self._range(queue_id, offset, offset, attempt)
        return receipt.handle(token, entry)

    def next_entry(self) -> tuple[str, int]:
        """(the checkpoint's token, the entry its next delivery gets): what `add_run`'s handles are made of."""
        if not self._token:
            self.checkpoint_id = self._checkpoints.next_id()
            self._token = receipt.token(self.group_id, self.topic_id, self.checkpoint_id, self._checkpoints.secret)
        return self._token, len(self._entries)

    def add_run(self, queue_id: int, offsets: list[int], attempt: int) -> None:
        """Deliveries of one queue whose handles were made from `next_entry` (records.frame_run), in that order."""
        pack = _ENTRY.pack
        self._entries += [pack(queue_id, offset, attempt) for offset in offsets]
        if offsets and offsets[-1] - offsets[0] == len(offsets) - 1:  # consecutive: the usual run
            self._range(queue_id, offsets[0], offsets[-1], attempt)
        else:
            for offset in offsets:
                self._range(queue_id, offset, offset, attempt)

    def _range(self, queue_id: int, first: int, last: int, attempt: int) -> None:
        """Note deliveries for the trace, as ranges of consecutive offsets (one trace event each)."""
        trace.extend(self.ranges, queue_id, first, last, attempt)

    @property
    def key(self) -> bytes:
        return keys.checkpoint_key(self.group_id, self.topic_id, self.checkpoint_id)

    def write(self, batch: Batch) -> None:
        """Put the checkpoint in `batch` (nothing if nothing was handed out)."""
        if self._entries:
            batch.put(Family.CHECKPOINTS, self.key, b"".join((_HEAD.pack(self.deadline, len(self._entries)), *self._entries)))
            batch.put(Family.INFLIGHT, keys.inflight_key(self.deadline, self.group_id, self.topic_id, self.checkpoint_id), b"")


def _named(named: tuple[int, int, int], group_id: int, topic_id: int) -> BrokerError | None:
    """Why a token opened as `named` (group, topic, checkpoint) does not name a delivery of this group and topic."""
    if named[0] != group_id or named[1] != topic_id:
        return BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle belongs to another group or topic")
    return None


def _gone() -> BrokerError:
    return BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle is stale: the message was acknowledged or redelivered")


def _no_such_delivery() -> BrokerError:
    return BrokerError(pb.INVALID_RECEIPT_HANDLE, "malformed receipt handle: no such delivery")


def _settled() -> BrokerError:
    return BrokerError(pb.INVALID_RECEIPT_HANDLE,
                       "receipt handle is stale: the message was acknowledged, or a newer handle was issued")


def _twice() -> BrokerError:
    return BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle acknowledged twice in one request")


def _expired() -> BrokerError:
    return BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle expired: the invisible time ran out")


def _live_entry(value: bytes | bytearray, at: int, expired: bool) -> tuple[int, int, int] | BrokerError:
    """The (queue, offset, attempt) at `at` of a checkpoint's value, or why it names no delivery
    an ack or a move may take (`expired`: the checkpoint's deadline has passed)."""
    if at + _ENTRY.size > len(value):
        return _no_such_delivery()
    found: tuple[int, int, int] = _ENTRY.unpack_from(value, at)
    if found[2] == _SETTLED:
        return _settled()
    return _expired() if expired else found


def _entries(raw: bytes) -> Iterator[tuple[int, int, int]]:
    """A checkpoint's live entries."""
    return (e for e in _ENTRY.iter_unpack(memoryview(raw)[_HEAD.size:]) if e[2] != _SETTLED)


class Checkpoints:
    def __init__(self, store: Store, secret: bytes, epoch: int) -> None:
        self.store = store
        self.secret = secret
        # Ids differ across restarts (the epoch in the high bits); those below 2**32 were given by a migration.
        self._id = epoch << 32

    def next_id(self) -> int:
        self._id += 1
        return self._id

    def issue(self, group_id: int, topic_id: int, deadline: int) -> Issue:
        """Begin the checkpoint of one receive."""
        return Issue(self, group_id, topic_id, deadline)

    def settle(self, batch: Batch, deliveries: Iterable[Delivery]) -> None:
        """Settle deliveries (acked, dead-lettered, moved) in `batch`: one rewrite of each
        checkpoint they belong to, its removal once none of its entries is live."""
        by_checkpoint: dict[tuple[int, int, int], list[Delivery]] = {}
        for d in deliveries:
            by_checkpoint.setdefault((d.group_id, d.topic_id, d.checkpoint_id), []).append(d)
        for (gid, tid, cid), settled in by_checkpoint.items():
            raw = self.store.get(Family.CHECKPOINTS, keys.checkpoint_key(gid, tid, cid))
            if raw is None:
                continue
            value = bytearray(raw)
            for d in settled:
                _ENTRY.pack_into(value, _entry_at(d.entry), d.queue_id, d.offset, _SETTLED)
            self._rewrite(batch, gid, tid, cid, value, len(settled))

    def _rewrite(self, batch: Batch, gid: int, tid: int, cid: int, value: bytearray, settled: int) -> None:
        """A checkpoint in which `settled` more entries were just marked settled: rewritten in
        `batch`, or removed once none of its entries is live."""
        deadline, live = _HEAD.unpack_from(value)
        key = keys.checkpoint_key(gid, tid, cid)
        if live - settled <= 0:
            self._drop(batch, key, deadline, gid, tid, cid)
        else:
            _HEAD.pack_into(value, 0, deadline, live - settled)
            batch.put(Family.CHECKPOINTS, key, bytes(value))

    @staticmethod
    def _drop(batch: Batch, key: bytes, deadline: int, gid: int, tid: int, cid: int) -> None:
        batch.delete(Family.CHECKPOINTS, key)
        batch.delete(Family.INFLIGHT, keys.inflight_key(deadline, gid, tid, cid))

    def move(self, batch: Batch, d: Delivery, new_deadline: int) -> str:
        """Move a delivery to a checkpoint of its own due at `new_deadline` -> its new handle
        (the old one goes stale)."""
        self.settle(batch, [d])
        issue = self.issue(d.group_id, d.topic_id, new_deadline)
        handle = issue.add(d.queue_id, d.offset, d.attempt)
        issue.write(batch)
        return handle

    def reschedule(self, key: bytes, new_deadline: int) -> bool:
        """Move a whole checkpoint to `new_deadline` (its handles stay valid); False if it is gone."""
        raw = self.store.get(Family.CHECKPOINTS, key)
        if raw is None:
            return False
        deadline, live = _HEAD.unpack_from(raw)
        gid, tid, cid = keys.parse_checkpoint_key(key)
        batch = self.store.batch()
        batch.delete(Family.INFLIGHT, keys.inflight_key(deadline, gid, tid, cid))
        batch.put(Family.INFLIGHT, keys.inflight_key(new_deadline, gid, tid, cid), b"")
        batch.put(Family.CHECKPOINTS, key, _HEAD.pack(new_deadline, live) + raw[_HEAD.size:])
        self.store.write(batch)
        return True

    def release(self, handle: str, now: int) -> bool:
        """Make the deliveries of the checkpoint a handle (issued here) names due `now`; False if it is gone."""
        r = receipt.decode(handle, self.secret)
        return self.reschedule(keys.checkpoint_key(r.group_id, r.topic_id, r.checkpoint_id), now)

    def extend(self, renew_key: bytes, invisible_ms: int, ahead_ms: int) -> bool:
        """Auto-renew: push a live checkpoint's deadline to now + invisible_ms when it is due
        within ahead_ms. The handles the client holds stay valid (a delivery it nacked moved to
        a checkpoint of its own, not renewed). False once it is gone or expired."""
        raw = self.store.get(Family.CHECKPOINTS, renew_key)
        if raw is None:
            return False
        deadline = _HEAD.unpack_from(raw)[0]
        now = now_ms()
        if deadline <= now:
            return False  # expired already: revive owns it
        if deadline - now > ahead_ms:
            return True
        return self.reschedule(renew_key, now + invisible_ms)

    def verify(self, group_id: int, topic_id: int, handle: str) -> Delivery:
        """The live delivery a handle names, or INVALID_RECEIPT_HANDLE."""
        (r,) = self._decode(group_id, topic_id, [handle], ())
        if isinstance(r, BrokerError):
            raise r
        checkpoint_id, entry = r
        raw = self._read(group_id, topic_id, [r])[checkpoint_id]
        if raw is None:
            raise _gone()
        deadline = _HEAD.unpack_from(raw)[0]
        found = _live_entry(raw, _entry_at(entry), deadline <= now_ms())
        if isinstance(found, BrokerError):
            raise found
        return Delivery(group_id, topic_id, checkpoint_id, entry, *found, deadline)

    def acknowledge(self, batch: Batch, group_id: int, topic_id: int, handles: list[str],
                    runs: Iterable[tuple[str, Sequence[int]]] = ()) -> tuple[list[BrokerError | None], list[Settled]]:
        """An ack: `verify` and `settle` in one pass, for many, each checkpoint read once and rewritten (or
        removed) once in `batch` -> one result per handle, then per entry of the runs (None: settled),
        and (queue, offset, attempt) of each delivery settled. A delivery named twice is refused the second time."""
        decoded = self._decode(group_id, topic_id, handles, runs)
        raws = self._read(group_id, topic_id, decoded)
        values = {cid: bytearray(raw) for cid, raw in raws.items() if raw is not None}
        now = now_ms()
        expired = {cid for cid, value in values.items() if _HEAD.unpack_from(value)[0] <= now}
        results: list[BrokerError | None] = []
        acked: list[Settled] = []
        settled: dict[int, int] = {}  # checkpoint id -> entries settled here
        twice: set[tuple[int, int]] = set()  # (checkpoint id, entry) settled here
        pack_into, head, size = _ENTRY.pack_into, _HEAD.size, _ENTRY.size
        for r in decoded:
            if isinstance(r, BrokerError):
                results.append(r)
                continue
            if r in twice:
                results.append(_twice())
                continue
            checkpoint_id, entry = r
            value = values.get(checkpoint_id)
            if value is None:
                results.append(_gone())
                continue
            at = head + entry * size  # `_entry_at`, without a second call per entry
            found = _live_entry(value, at, checkpoint_id in expired)
            if isinstance(found, BrokerError):
                results.append(found)
                continue
            pack_into(value, at, found[0], found[1], _SETTLED)
            settled[checkpoint_id] = settled.get(checkpoint_id, 0) + 1
            twice.add(r)
            results.append(None)
            acked.append(found)
        for checkpoint_id, count in settled.items():
            self._rewrite(batch, group_id, topic_id, checkpoint_id, values[checkpoint_id], count)
        return results, acked

    def _decode(self, group_id: int, topic_id: int, handles: list[str],
                runs: Iterable[tuple[str, Sequence[int]]]) -> list[tuple[int, int] | BrokerError]:
        """Handles, then runs, as (checkpoint id, entry), or why not: each token checked once."""
        opened: dict[str, tuple[int, int, int]] = {}  # token -> (group, topic, checkpoint): one MAC check each
        decoded: list[tuple[int, int] | BrokerError] = []
        for handle in handles:
            try:
                signed, entry = receipt.split(handle)
                named = opened.get(signed)
                if named is None:
                    named = opened[signed] = receipt.open_token(signed, self.secret)
            except ValueError as e:  # tokens.InvalidToken is one
                decoded.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, f"malformed receipt handle: {e}"))
                continue
            decoded.append(_named(named, group_id, topic_id) or (named[2], entry))
        for signed, entries in runs:
            try:
                named = receipt.open_token(signed, self.secret)
            except ValueError as e:
                decoded += [BrokerError(pb.INVALID_RECEIPT_HANDLE, f"malformed receipt handle: {e}")] * len(entries)
                continue
            wrong = _named(named, group_id, topic_id)
            checkpoint_id = named[2]
            decoded += [wrong or (checkpoint_id, entry) for entry in entries]
        return decoded

    def _read(self, group_id: int, topic_id: int, decoded: list[tuple[int, int] | BrokerError]) -> dict[int, bytes | None]:
        """The checkpoints `decoded` names, by id: one multi-get."""
        ids = list({r[0]: None for r in decoded if not isinstance(r, BrokerError)})
        return dict(zip(ids, self.store.get_many(Family.CHECKPOINTS, [keys.checkpoint_key(group_id, topic_id, i) for i in ids])))

    def in_flight(self, group_id: int) -> Iterator[tuple[int, int, int]]:
        """(topic id, queue id, offset) of each of a group's deliveries in flight."""
        for key, raw in self.store.scan_prefix(Family.CHECKPOINTS, keys.group_prefix(group_id)):
            tid = keys.parse_checkpoint_key(key)[1]
            for qid, offset, _ in _entries(raw):
                yield tid, qid, offset

    def drop_topic(self, batch: Batch, group_id: int, topic_id: int) -> None:
        """Every checkpoint of the group on the topic, in `batch` (a reset of its position)."""
        for key, raw in self.store.scan_prefix(Family.CHECKPOINTS, keys.group_topic_prefix(group_id, topic_id)):
            _, _, cid = keys.parse_checkpoint_key(key)
            self._drop(batch, key, _HEAD.unpack_from(raw)[0], group_id, topic_id, cid)

    def expired(self, loop: DeadlineLoop, now: int, limit: int) -> Iterator[Expired]:
        """Checkpoints due at `now`, earliest first (for revive)."""
        for key, _ in loop.due(self.store, Family.INFLIGHT, now, limit):
            deadline, gid, tid, cid = keys.parse_inflight_key(key)
            raw = self.store.get(Family.CHECKPOINTS, keys.checkpoint_key(gid, tid, cid))
            yield Expired(deadline, gid, tid, cid, list(_entries(raw)) if raw else None)

    def drop(self, batch: Batch, e: Expired) -> None:
        """Remove an expired checkpoint (revive took its deliveries)."""
        self._drop(batch, keys.checkpoint_key(e.group_id, e.topic_id, e.checkpoint_id), e.deadline,
                   e.group_id, e.topic_id, e.checkpoint_id)

    def park(self, batch: Batch, e: Expired, entry: tuple[int, int, int], until: int) -> None:
        """Keep one delivery of an expired checkpoint in flight until `until` (same attempt)."""
        issue = self.issue(e.group_id, e.topic_id, until)
        issue.add(*entry)
        issue.write(batch)

    def earliest(self, loop: DeadlineLoop) -> int | None:
        """The earliest deadline in flight (after revive wrote its batch)."""
        return loop.earliest(self.store, Family.INFLIGHT)
