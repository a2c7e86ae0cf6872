"""Checkpoints: the one owner of a delivery's in-flight state and of receipt-handle verification.

Every message handed out by POP gets a checkpoint written as a pair in one batch: `checkpoints`
maps the message (group · topic · queue · offset) to its deadline, attempt and version — what a
receipt handle is checked against — and `inflight` holds the same delivery keyed by deadline,
for the revive loop. Nobody else reads or writes either family: ack deletes the pair,
ChangeInvisibleDuration moves it (new version, new handle), auto-renew extends it (same
version: the client's handle stays valid), revive takes the expired ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from rockmq.broker.clock import now_ms
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.broker.errors import BrokerError
from rockmq.protocol import pb, receipt, tokens
from rockmq.store import Store, keys
from rockmq.store.db import Batch

Found = tuple[receipt.Receipt, int]  # a live delivery a handle names, and its deadline


class State(NamedTuple):
    deadline: int
    attempt: int
    version: int


class Expired(NamedTuple):
    """A delivery whose deadline passed; `state` None when its checkpoint is gone already."""

    deadline: int
    group_id: int
    topic_id: int
    queue_id: int
    offset: int
    state: State | None


class Checkpoints:
    def __init__(self, store: Store, secret: bytes, epoch: int) -> None:
        self.store = store
        self.secret = secret
        # Versions differ across restarts (the epoch's bits): a handle of an earlier run never matches by chance.
        self._version = (epoch << 20) & 0xFFFFFFFF

    def _next_version(self) -> int:
        self._version = (self._version + 1) & 0xFFFFFFFF
        return self._version

    @staticmethod
    def _put(batch: Batch, gid: int, tid: int, qid: int, offset: int, deadline: int, attempt: int, version: int) -> None:
        batch.put("checkpoints", keys.checkpoint_key(gid, tid, qid, offset), keys.checkpoint_value(deadline, attempt, version))
        batch.put("inflight", keys.inflight_key(deadline, gid, tid, qid, offset), b"")

    @staticmethod
    def delete(batch: Batch, gid: int, tid: int, qid: int, offset: int, deadline: int) -> None:
        batch.delete("checkpoints", keys.checkpoint_key(gid, tid, qid, offset))
        batch.delete("inflight", keys.inflight_key(deadline, gid, tid, qid, offset))

    def issue(self, batch: Batch, gid: int, tid: int, qid: int, offset: int, deadline: int, attempt: int) -> tuple[str, int]:
        """A new delivery in `batch` -> (its receipt handle, its version)."""
        version = self._next_version()
        self._put(batch, gid, tid, qid, offset, deadline, attempt, version)
        return receipt.encode(receipt.Receipt(gid, tid, qid, offset, attempt, version), self.secret), version

    def reissue(self, batch: Batch, found: Found, new_deadline: int) -> str:
        """Move a delivery to a new deadline under a new version -> the new handle (the old one goes stale)."""
        r, deadline = found
        self.delete(batch, r.group_id, r.topic_id, r.queue_id, r.offset, deadline)
        version = self._next_version()
        self._put(batch, r.group_id, r.topic_id, r.queue_id, r.offset, new_deadline, r.attempt, version)
        return receipt.encode(r._replace(version=version), self.secret)

    def park(self, batch: Batch, e: Expired, state: State, until: int) -> None:
        """Keep an expired delivery in flight until `until` (same attempt and version)."""
        self.delete(batch, e.group_id, e.topic_id, e.queue_id, e.offset, e.deadline)
        self._put(batch, e.group_id, e.topic_id, e.queue_id, e.offset, until, state.attempt, state.version)

    @staticmethod
    def renew_key(gid: int, tid: int, qid: int, offset: int) -> bytes:
        """What auto-renew tracks a delivery by (compact: it may hold many)."""
        return keys.checkpoint_key(gid, tid, qid, offset)

    def extend(self, renew_key: bytes, version: int, invisible_ms: int, ahead_ms: int) -> bool:
        """Auto-renew: push a live delivery's deadline to now + invisible_ms when it is due
        within ahead_ms. The handle the client holds stays valid. False once the delivery is
        gone or was nacked (ChangeInvisibleDuration gave it a new version)."""
        raw = self.store.get("checkpoints", renew_key)
        if raw is None:
            return False
        deadline, attempt, current = keys.parse_checkpoint_value(raw)
        if current != version:
            return False
        now = now_ms()
        if deadline <= now:
            return False  # expired already: revive owns it
        if deadline - now > ahead_ms:
            return True
        gid, tid, qid, offset = keys.parse_checkpoint_key(renew_key)
        batch = self.store.batch()
        self.delete(batch, gid, tid, qid, offset, deadline)
        self._put(batch, gid, tid, qid, offset, now + invisible_ms, attempt, version)
        self.store.write(batch)
        return True

    def verify(self, group_id: int, topic_id: int, handle: str) -> Found:
        """The live delivery a handle names, or INVALID_RECEIPT_HANDLE."""
        found = self.verify_many(group_id, topic_id, [handle])[0]
        if isinstance(found, BrokerError):
            raise found
        return found

    def verify_many(self, group_id: int, topic_id: int, handles: list[str]) -> list[Found | BrokerError]:
        """`verify` for many handles, with one multi-get."""
        decoded: list[receipt.Receipt | BrokerError] = []
        for handle in handles:
            try:
                named = receipt.decode(handle, self.secret)
            except (tokens.InvalidToken, ValueError) as e:
                decoded.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, f"malformed receipt handle: {e}"))
                continue
            if named.group_id != group_id or named.topic_id != topic_id:
                decoded.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle belongs to another group or topic"))
            else:
                decoded.append(named)
        valid = [r for r in decoded if not isinstance(r, BrokerError)]
        raws = iter(self.store.get_many("checkpoints", [
            keys.checkpoint_key(r.group_id, r.topic_id, r.queue_id, r.offset) for r in valid]))
        now = now_ms()
        out: list[Found | BrokerError] = []
        for r in decoded:
            if isinstance(r, BrokerError):
                out.append(r)
                continue
            raw = next(raws)
            if raw is None:
                out.append(BrokerError(pb.INVALID_RECEIPT_HANDLE,
                                       "receipt handle is stale: the message was acknowledged or redelivered"))
                continue
            deadline, attempt, version = keys.parse_checkpoint_value(raw)
            if (attempt, version) != (r.attempt, r.version):
                out.append(BrokerError(pb.INVALID_RECEIPT_HANDLE,
                                       "receipt handle is stale: a newer one was issued for this message"))
            elif deadline <= now:
                out.append(BrokerError(pb.INVALID_RECEIPT_HANDLE, "receipt handle expired: the invisible time ran out"))
            else:
                out.append((r, deadline))
        return out

    def in_flight(self, group_id: int) -> Iterator[tuple[int, int]]:
        """(topic id, queue id) of each of a group's deliveries in flight."""
        for key, _ in self.store.scan_prefix("checkpoints", keys.group_prefix(group_id)):
            _, tid, qid, _ = keys.parse_checkpoint_key(key)
            yield tid, qid

    def expired(self, loop: DeadlineLoop, now: int, limit: int) -> Iterator[Expired]:
        """Deliveries due at `now`, earliest first (for revive)."""
        for key, _ in loop.due(self.store, "inflight", now, limit):
            deadline, gid, tid, qid, offset = keys.parse_inflight_key(key)
            raw = self.store.get("checkpoints", keys.checkpoint_key(gid, tid, qid, offset))
            yield Expired(deadline, gid, tid, qid, offset, State(*keys.parse_checkpoint_value(raw)) if raw else None)

    def earliest(self, loop: DeadlineLoop) -> int | None:
        """The earliest deadline in flight (after revive wrote its batch)."""
        return loop.earliest(self.store, "inflight")
