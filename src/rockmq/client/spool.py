"""The producer's durable retry spool: sends that failed with a retriable error wait on local disk
(RocksDB) and are resent on a schedule, so a broker outage does not turn into lost messages or
into errors the application must buffer itself.

Layout (two column families, integers big-endian so keys sort by time):

    pending   due_ms · entry uuid   ->  attempts · error · SendMessageRequest
    dead      died_ms · entry uuid  ->  the same value, after the last attempt

A request is stored whole, message ids included: a resend of a request the broker already stored
(its reply was lost) is de-duplicated by the broker on (topic, message_id), within its dedup
window (10 minutes by default). Adding an entry is fsync'ed before the send returns; moves
(resent: delete; failed: delete and re-put later; out of attempts: delete and put in `dead`) are
one WriteBatch each and need no fsync: after a crash the old key is still there and the entry
is only resent once more.

One background task resends: it scans the pending keys below "now" (at most RESEND_BATCH per
round, concurrently), sleeps until the earliest due key (at most MAX_SLEEP_S, or until a new
entry wakes it) and ends when nothing is pending. When the producer starts on a spool that holds
entries (a new process after a crash), everything pending is resent once at once, whatever its
due time, until the first retriable failure says the broker is still away.

Bounded: at most `max_entries` entries, pending and dead together; beyond it a send raises its
error as if there were no spool. Dead entries stay until `forget_dead`, so nothing is lost.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import struct
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocksdict import Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from rockmq.client.errors import RockmqError
from rockmq.client.message import Message
from rockmq.protocol import rpc

log = logging.getLogger(__name__)

SPOOL_SCHEDULE_S = (3, 5, 30, 60, 120, 300, 480, 600, 900, 1800)
MAX_ENTRIES = 1_000_000
RESEND_BATCH = 64  # entries resent per round, concurrently
MAX_SLEEP_S = 60.0  # the resender looks again at least this often
ON_DEAD_TIMEOUT_S = 30.0
DEAD_LIST_LIMIT = 1000
DRAIN_POLL_S = 0.05

_KEY = struct.Struct(">Q16s")  # due (or died) ms · entry uuid
_HEAD = struct.Struct(">HI")  # attempts · length of the error text
_END = b"\xff" * _KEY.size

Resend = Callable[[rpc.SendMessageRequest], Awaitable[Any]]
OnDead = Callable[[Message, Exception], Any]


def spool_key(ms: int, entry: bytes) -> bytes:
    """The key of an entry due (or dead) at `ms`; `entry` is its 16-byte uuid."""
    return _KEY.pack(ms, entry)


def parse_spool_key(key: bytes) -> tuple[int, bytes]:
    """-> (due or died ms, entry uuid)."""
    ms, entry = _KEY.unpack(key)
    return ms, entry


def encode_entry(attempts: int, error: str, request: rpc.SendMessageRequest) -> bytes:
    text = error.encode()[:4096]
    return _HEAD.pack(min(attempts, 0xFFFF), len(text)) + text + request.SerializeToString()


def decode_entry(value: bytes) -> tuple[int, str, rpc.SendMessageRequest]:
    """-> (resends done, the last error, the request)."""
    attempts, n = _HEAD.unpack_from(value)
    start = _HEAD.size
    return attempts, value[start:start + n].decode(errors="replace"), rpc.SendMessageRequest.FromString(value[start + n:])


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class DeadEntry:
    """A spooled send that failed its last scheduled attempt. Its messages are kept until
    `forget_dead(id)`: resend them yourself (same message ids) or drop them."""

    id: str
    topic: str
    message_ids: tuple[str, ...]
    messages: tuple[Message, ...]
    attempts: int
    error: str
    died_ms: int


class Spool:
    """The spool of one producer. One process at a time: RocksDB locks the directory."""

    def __init__(self, path: str | Path, resend: Resend, schedule_s: Sequence[float] = SPOOL_SCHEDULE_S,
                 max_entries: int = MAX_ENTRIES, on_dead: OnDead | None = None) -> None:
        if not schedule_s or any(s < 0 for s in schedule_s):
            raise ValueError("the spool schedule needs at least one step, none negative")
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.schedule_ms = [int(s * 1000) for s in schedule_s]
        self.max_entries = max_entries
        self._resend = resend
        self._on_dead = on_dead
        Path(path).mkdir(parents=True, exist_ok=True)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
        self._db = Rdict(str(path), options=opts,
                         column_families={"pending": Options(raw_mode=True), "dead": Options(raw_mode=True)})
        self._pending = self._db.get_column_family("pending")
        self._dead = self._db.get_column_family("dead")
        self._handles = {f: self._db.get_column_family_handle(f) for f in ("pending", "dead")}
        self._nosync = WriteOptions()
        self._nosync.sync = False
        # The fsync runs here: flush_wal(True) releases the GIL, a synced write() would hold it
        # and stall the event loop (docs/architecture.md §7).
        self._io = ThreadPoolExecutor(1, thread_name_prefix="rockmq-spool")
        self._pending_n, self._dead_n = self._count(self._pending), self._count(self._dead)
        self._task: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None  # set while the resender sleeps
        self._closed = False

    def __len__(self) -> int:
        """Entries held, pending and dead (what `max_entries` bounds)."""
        return self._pending_n + self._dead_n

    @property
    def pending(self) -> int:
        return self._pending_n

    async def drain(self, timeout: float) -> int:
        """Wait until nothing is pending, or `timeout`; -> how many still are."""
        deadline = time.monotonic() + timeout
        while self._pending_n and (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(DRAIN_POLL_S, left))
        return self._pending_n

    # --- adding and listing ----------------------------------------------------------------

    async def add(self, request: rpc.SendMessageRequest, error: Exception) -> bool:
        """Keep a failed request for resending, durably; False if the spool is full (or closed)."""
        if self._closed or len(self) >= self.max_entries:
            return False
        self._write([("pending", spool_key(_now_ms() + self.schedule_ms[0], uuid.uuid4().bytes),
                      encode_entry(0, str(error), request))], [])
        self._pending_n += 1
        await asyncio.get_running_loop().run_in_executor(self._io, self._db.flush_wal, True)
        self._run_resender(replay=False)
        return True

    def dead(self, limit: int = DEAD_LIST_LIMIT) -> list[DeadEntry]:
        """Dead entries, oldest first."""
        out = []
        for key, value in self._scan(self._dead, limit):
            died_ms, _ = parse_spool_key(key)
            attempts, error, request = decode_entry(value)
            out.append(DeadEntry(key.hex(), request.messages[0].topic.name,
                                 tuple(m.system_properties.message_id for m in request.messages),
                                 tuple(Message.from_pb(m) for m in request.messages), attempts, error, died_ms))
        return out

    def forget_dead(self, entry_id: str) -> None:
        key = bytes.fromhex(entry_id)
        if self._dead.get(key) is not None:
            self._write([], [("dead", key)])
            self._dead_n -= 1

    # --- resending ---------------------------------------------------------------------------

    def start(self) -> None:
        """Resend what an earlier process left, at once (call with the event loop running)."""
        if self._first_pending() is not None:
            self._run_resender(replay=True)

    def _run_resender(self, replay: bool) -> None:
        if self._closed:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._resender(replay), name="rockmq-spool-resender")
        elif self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    async def _resender(self, replay: bool) -> None:
        try:
            if replay:
                await self._replay()
            while (first := self._first_pending()) is not None:
                now = _now_ms()
                due = list(self._scan(self._pending, RESEND_BATCH, upper=spool_key(now + 1, b"\x00" * 16)))
                if due:
                    await asyncio.gather(*(self._resend_one(k, v) for k, v in due))
                    continue
                self._wakeup = asyncio.get_running_loop().create_future()
                try:
                    await asyncio.wait({self._wakeup}, timeout=min((first - now) / 1000, MAX_SLEEP_S))
                finally:
                    self._wakeup = None
        except Exception:  # a bug or a disk error: the next spooled send starts a new resender
            log.exception("the spool resender stopped")

    async def _replay(self) -> None:
        """Each pending entry once, in key order, up to the last key there is now. A failure
        leaves the entry where it is (the schedule takes over) and ends the replay."""
        last = self._last_pending()
        if last is None:
            return
        cursor, upper = b"", last + b"\x00"
        while chunk := list(self._scan(self._pending, RESEND_BATCH, lower=cursor, upper=upper)):
            cursor = chunk[-1][0] + b"\x00"
            results = await asyncio.gather(*(self._resend_one(k, v, replay=True) for k, v in chunk))
            if not all(results):
                log.info("replaying the spool: a broker is still unreachable; resending on schedule")
                return

    async def _resend_one(self, key: bytes, value: bytes, replay: bool = False) -> bool:
        """Resend one entry and move it accordingly; -> False after a retriable failure."""
        attempts, _, request = decode_entry(value)
        try:
            await self._resend(request)
        except Exception as e:
            retriable = isinstance(e, RockmqError) and e.retriable
            done = attempts + (0 if replay else 1)
            if retriable and replay:
                return False
            _, entry = parse_spool_key(key)
            if retriable and done < len(self.schedule_ms):
                self._write([("pending", spool_key(_now_ms() + self.schedule_ms[done], entry),
                              encode_entry(done, str(e), request))], [("pending", key)])
                return False
            log.warning("spooled send of %d message(s) to %s failed for good after %d attempt(s): %s",
                        len(request.messages), request.messages[0].topic.name, done, e)
            self._write([("dead", spool_key(_now_ms(), entry), encode_entry(done, str(e), request))], [("pending", key)])
            self._pending_n -= 1
            self._dead_n += 1
            await self._notify_dead(request, e)
            return not retriable
        self._write([], [("pending", key)])
        self._pending_n -= 1
        return True

    async def _notify_dead(self, request: rpc.SendMessageRequest, error: Exception) -> None:
        if self._on_dead is None:
            return
        for m in request.messages:
            try:
                result = self._on_dead(Message.from_pb(m), error)
                if inspect.isawaitable(result):
                    await asyncio.wait_for(result, ON_DEAD_TIMEOUT_S)
            except Exception:
                log.exception("on_dead failed for message %s", m.system_properties.message_id)

    # --- storage -----------------------------------------------------------------------------

    def _write(self, puts: list[tuple[str, bytes, bytes]], deletes: list[tuple[str, bytes]]) -> None:
        wb = WriteBatch(raw_mode=True)
        for family, key in deletes:
            wb.delete(key, self._handles[family])
        for family, key, value in puts:
            wb.put(key, value, self._handles[family])
        self._db.write(wb, self._nosync)

    @staticmethod
    def _scan(family: Rdict, limit: int | None = None, lower: bytes = b"",
              upper: bytes = _END) -> Iterator[tuple[bytes, bytes]]:
        bounds = ReadOptions()
        bounds.set_iterate_upper_bound(upper)
        it = family.iter(bounds)
        it.seek(lower)
        n = 0
        while it.valid() and (limit is None or n < limit):
            yield it.key(), it.value()
            n += 1
            it.next()

    @staticmethod
    def _count(family: Rdict) -> int:
        it = family.iter()
        it.seek_to_first()
        n = 0
        while it.valid():
            n += 1
            it.next()
        return n

    def _first_pending(self) -> int | None:
        """The earliest due time, in ms."""
        for key, _ in self._scan(self._pending, 1):
            return parse_spool_key(key)[0]
        return None

    def _last_pending(self) -> bytes | None:
        it = self._pending.iter()
        it.seek_to_last()
        return it.key() if it.valid() else None

    async def close(self) -> None:
        """Stop resending (an interrupted resend is simply resent next time) and close the database."""
        if self._closed:
            return
        self._closed = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=5.0)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._io, self._db.flush_wal, True)  # the moves, too
        await loop.run_in_executor(None, self._io.shutdown, True)
        self._db.close()
        # Column-family objects keep the database (and its LOCK file) alive until they go too.
        self._pending = self._dead = None  # type: ignore[assignment]
        self._handles.clear()
