"""Staged writes, published once per (sink, batch id): the broker half of the Spark sink.

Why: a Spark task may run twice (a retry) and a micro-batch may run twice (a restarted driver
replays the last batch it had not marked done). De-duplicating on message ids would catch only
replays that rebuild byte-identical messages, and only within `dedup_window_s`. Instead writers
stage, and the driver decides once per batch:

- Stage: a chunk of messages, sent in the two parts a stored record keeps (system properties;
  topic, properties and body), is validated as SendMessage validates messages (plus the body
  digest the writer computed), and kept as one entry in the record layout, invisible, until its
  ttl runs out. No fsync: nothing is promised yet. -> a handle.
- PublishStaged(sink id, batch id, handles): if the sink's last published batch id is below
  this one, one write records the new batch id and a publish job naming the chunks, and is
  fsync'ed (under the `sync` flush policy, as sends are): that is the decision. The job then
  moves the chunks into their queues (delayed messages into the timers), each move one write
  that also deletes the chunk, and the call answers once all of it is durable. A job is retried
  until it is done, and a broker killed midway resumes its jobs at start (a chunk that is gone
  was moved). A batch id at or below the last one is a replay: its chunks are dropped and
  nothing is published. A new batch must name chunks (an empty one would record a batch id
  and publish nothing: it names no topic to need Pub on), and must be at most
  `MAX_BATCH_STEP` past the sink's last (below).
- Chunks never published (a failed task attempt, a driver that died before deciding) expire:
  their keys start with their expiry bucket, so expiry is one range delete per bucket.

Who: with authentication on, a chunk is its stager's alone to publish or discard (handles are
guessable), publishing needs Pub on its topics then and there (a grant may have gone since the
Stage), and a sink id is the user's own: `alice`'s sink `q1` and `bob`'s are two sinks (`sink_ref`),
so nobody can claim, advance or read another user's sink. Without authentication the sink id is
the only name there is.

A chunk staged with `deduplicate` (application-chosen message ids) is also checked against, and
recorded in, the producer de-duplication table at publish, as SendMessage would.

Everything lives in the `staging` family (keys in store/keys.py); values start with b"S", as in
rockmq 0.1.0, which kept them in `txn` (store/schema.py moves them, bytes unchanged).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import struct
from collections.abc import Iterable, Sequence

from google.protobuf.message import DecodeError

from rockmq.broker import validate
from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.context import BrokerContext
from rockmq.broker.dedup import Dedup
from rockmq.broker.metadata import TopicConfig, check_writable
from rockmq.broker.timers import TimerService
from rockmq.protocol import pb, records
from rockmq.protocol.errors import BrokerError, over_limit
from rockmq.protocol.staged import staged_message
from rockmq.store import framing, keys
from rockmq.store.db import Batch
from rockmq.store.disk_space import log_failure
from rockmq.store.schema import Family

log = logging.getLogger(__name__)

_CHUNK, _INDEX, _SINK, _JOB = keys.STAGED_CHUNK, keys.STAGED_INDEX, keys.SINK_STATE, keys.PUBLISH_JOB
_HANDLE = struct.Struct(">IQ")  # expiry bucket · sequence
_ENTRY = struct.Struct(">IQB")  # topic id · due ms (0: now) · message id length; then the id
_LEN = framing.LEN
_SINK_STATE = struct.Struct(">qQ")  # last published batch id · forget after (ms, 0: never)
_JOB_HEAD = struct.Struct(">H")  # sink id length
_VALUE = b"S"

BUCKET_MS = 60_000
DEFAULT_TTL_MS = 3_600_000
MAX_TTL_MS = 7 * 24 * 3_600_000
SWEEP_S = 10.0
SINK_SWEEP_MS = 60_000
MAX_SINK_ID = 256
# How far past a sink's last batch id a new one may be. Spark numbers micro-batches one by one and
# the sink publishes every batch that staged anything, so a live query jumps only over batches that
# wrote nothing: a million of those back to back is 11.6 days at one a second. A batch id past it
# is a mistake or an attack (one publish of batch 2**62 would make every later batch of the sink a
# silent duplicate): it is refused, loudly, and one stray publish shadows at most this many ids.
MAX_BATCH_STEP = 1_000_000


def sink_ref(sink_id: str, owner: str) -> str:
    """The name a sink is kept under: its id without authentication, else scoped to its user (a
    user name has no NUL, a sink id no control character: the two kinds never meet)."""
    return f"\x00{owner}\x00{sink_id}" if owner else sink_id


def _check_sink_id(sink_id: str) -> None:
    if not sink_id or len(sink_id) > MAX_SINK_ID or any(c < " " or c == "\x7f" for c in sink_id):
        raise BrokerError(pb.BAD_REQUEST, f"sink_id must be 1-{MAX_SINK_ID} characters, none of them a control character")


def _chunk_entries(raw: bytes) -> list[tuple[int, int, bytes, bytes]]:
    """A staged chunk's messages as (topic id, due ms, message id, sealed record); `stage` wrote
    a two-byte head, then per message `_ENTRY` · id · length · record."""
    return [(topic_id, due, mid, record) for (topic_id, due, _), mid, record in framing.entries(raw, _ENTRY, 2)]


def _chunk_key(handle: bytes) -> bytes:
    return _CHUNK + handle


def _index_key(handle: bytes) -> bytes:
    return _INDEX + handle


def _bucket(handle: bytes) -> int:
    bucket: int = _HANDLE.unpack(handle)[0]
    return bucket


_OWNER_AT = 1 + _LEN.size  # a chunk's index value: version, message count, then its owner (if any)
_SINK_OWNER_AT = 1 + _SINK_STATE.size  # a sink's state: version, last batch, forget after, then its owner


class StagingService:
    def __init__(self, ctx: BrokerContext, timers: TimerService, dedup: Dedup, committer: Committer) -> None:
        self.ctx = ctx
        self.timers = timers
        self.dedup = dedup
        self.committer = committer
        self._seq = itertools.count(ctx.sequence_start + 1)  # unique across restarts (epoch-based)
        self._jobs: dict[int, asyncio.Task[tuple[int, int]]] = {}
        self._job_sink: dict[int, str] = {}
        self._job_floor: dict[int, int] = {}  # the lowest expiry bucket of each job's chunks
        self._moving: set[bytes] = set()  # handles owned by a job: never discarded or expired
        self._swept = -1
        self._sinks_swept = -1
        self._resumed = False
        self._staged: dict[int, int] = {}  # expiry bucket -> chunks staged and not yet gone (max_staged_chunks in all)
        for key, _ in ctx.store.scan_prefix(Family.STAGING, _INDEX):
            self._count(key[len(_INDEX):], 1)

    def _count(self, handle: bytes, delta: int) -> None:
        bucket = _bucket(handle)
        self._staged[bucket] = self._staged.get(bucket, 0) + delta

    # --- stage ---------------------------------------------------------------------------------

    def stage(self, system_properties: Sequence[bytes], contents: Sequence[bytes], ttl_ms: int,
              deduplicate: bool, owner: str = "") -> tuple[bytes, int]:
        """Validate and keep a chunk of messages given in their stored parts; -> (handle, count).
        A bad message refuses the whole chunk. `owner`: the user staging it (auth on), the only one
        who may then publish or discard it (handles are guessable). Refused while the broker drains;
        publishing what was staged is not (it finishes work begun)."""
        self.ctx.refuse_if_draining()
        if ttl_ms < 0:
            raise BrokerError(pb.BAD_REQUEST, "ttl_ms must not be negative")
        if len(system_properties) != len(contents):
            raise BrokerError(pb.BAD_REQUEST, "system_properties and contents must pair up")
        if not contents:
            raise BrokerError(pb.BAD_REQUEST, "nothing to stage")
        ttl = min(ttl_ms or DEFAULT_TTL_MS, MAX_TTL_MS)
        ctx = self.ctx
        most = ctx.settings.max_staged_chunks
        if sum(self._staged.values()) >= most:
            raise over_limit("nothing staged", "max_staged_chunks", most,
                             "publish or discard staged chunks (or wait for their ttl), or raise max_staged_chunks")
        ctx.store.space.room(sum(map(len, contents)))  # disk full: refused before anything is written
        now = now_ms()
        checked: list[tuple[pb.Message, validate.Target]] = []
        for i, (sp_bytes, rest) in enumerate(zip(system_properties, contents, strict=True)):
            try:
                msg = staged_message(sp_bytes, rest)
            except DecodeError:
                raise BrokerError(pb.BAD_REQUEST, f"message {i}: not a serialized message") from None
            try:
                check = validate.check_send(msg, ctx.meta, ctx.settings, now)
                validate.check_staged(msg, check)
                if isinstance(check.target, TopicConfig):  # a new topic is rw
                    check_writable(check.target)
                ctx.may_create(check.target)  # refused before anything is created
            except BrokerError as e:
                raise BrokerError(e.code, f"message {i} ({msg.system_properties.message_id or 'no id'}): {e.message}") from None
            checked.append((msg, check.target))
        parts = [_VALUE, b"\x01" if deduplicate else b"\x00"]
        for (msg, target), sp_bytes, rest in zip(checked, system_properties, contents, strict=True):
            topic = ctx.ensure_topic(target)  # every message passed: new topics are created now
            sp = msg.system_properties
            due = validate.delivery_ms(sp.delivery_timestamp) if sp.HasField("delivery_timestamp") else 0
            mid = sp.message_id.encode()
            sealed = records.seal_parts(sp, rest, sp_bytes, ctx.logs.store_host)
            parts.append(_ENTRY.pack(topic.id, due, len(mid)) + mid + _LEN.pack(sum(map(len, sealed))))
            parts += sealed
        handle = _HANDLE.pack((now_ms() + ttl) // BUCKET_MS + 1, next(self._seq))
        batch = self.ctx.store.batch()
        batch.put(Family.STAGING, _chunk_key(handle), b"".join(parts))
        batch.put(Family.STAGING, _index_key(handle), _VALUE + _LEN.pack(len(contents)) + owner.encode())
        self.ctx.store.write(batch)
        self._count(handle, 1)
        return handle, len(contents)

    def check_owner(self, handles: Sequence[bytes], user: str) -> None:
        """Refuses (FORBIDDEN) `user` a chunk another user staged; one staged without
        authentication, or gone, is anyone's. (Sinks need no such check: each user has its own.)"""
        found = self.ctx.store.get_many(Family.STAGING, [_index_key(h) for h in handles if len(h) == _HANDLE.size])
        for i, raw in enumerate(found):
            owner = raw[_OWNER_AT:].decode() if raw is not None else ""
            if owner and owner != user:
                raise BrokerError(pb.FORBIDDEN, f"user {user!r} may not use staged chunk {i + 1}: another user staged it")

    def chunk_topics(self, handles: Sequence[bytes]) -> list[str]:
        """The topics the staged chunks would publish to (what publishing them needs Pub on); a chunk
        that is gone, or a topic deleted since, names none (publishing it then adds nothing there)."""
        found = self.ctx.store.get_many(Family.STAGING, [_chunk_key(h) for h in handles if len(h) == _HANDLE.size])
        ids = dict.fromkeys(topic_id for raw in found if raw is not None for topic_id, _, _, _ in _chunk_entries(raw))
        topics = self.ctx.meta.topics_by_id
        return [topics[i].name for i in ids if i in topics]

    def discard(self, handles: Iterable[bytes]) -> None:
        """Drop chunks that will never be published; unknown ones and those being moved are left."""
        dropped = list(dict.fromkeys(h for h in handles if len(h) == _HANDLE.size and h not in self._moving))
        found = self.ctx.store.get_many(Family.STAGING, [_index_key(h) for h in dropped])
        batch = self.ctx.store.batch()
        for h, raw in zip(dropped, found, strict=True):
            if raw is not None:
                batch.delete(Family.STAGING, _chunk_key(h))
                batch.delete(Family.STAGING, _index_key(h))
                self._count(h, -1)
        self.ctx.store.write(batch)

    # --- publish -------------------------------------------------------------------------------

    def last_batch(self, sink_id: str, owner: str = "") -> int | None:
        return self._sink_state(sink_id, owner)[0]

    def _sink_state(self, sink_id: str, owner: str) -> tuple[int | None, bytes | None]:
        """The sink's last batch id and, when it is still kept under its unscoped name (recorded by
        `owner` before sinks were scoped to users), that key: the next publish moves it, so an
        upgrade loses no sink's last batch (a replay after it would publish twice)."""
        raw = self.ctx.store.get(Family.STAGING, _SINK + sink_ref(sink_id, owner).encode())
        if raw is not None:
            return _SINK_STATE.unpack_from(raw, 1)[0], None
        if not owner:
            return None, None
        legacy = _SINK + sink_id.encode()
        raw = self.ctx.store.get(Family.STAGING, legacy)
        if raw is None or raw[_SINK_OWNER_AT:].decode() != owner:
            return None, None
        return _SINK_STATE.unpack_from(raw, 1)[0], legacy

    @staticmethod
    def _check_step(sink_id: str, batch_id: int, last: int | None, chunks: int) -> None:
        """A new batch names chunks, and is at most MAX_BATCH_STEP past the sink's last."""
        if not chunks:
            raise BrokerError(pb.BAD_REQUEST, f"batch {batch_id} of sink {sink_id!r} names no staged chunk: a batch with "
                                              f"nothing to publish is not recorded (nor needs to be)")
        if last is not None and batch_id - last > MAX_BATCH_STEP:
            raise BrokerError(pb.BAD_REQUEST, f"batch {batch_id} of sink {sink_id!r} is more than {MAX_BATCH_STEP:,} past "
                                              f"its last batch, {last}: refused (it would make the batches between "
                                              f"look like duplicates); number batches one by one, or use a new sink id")

    async def publish(self, sink_id: str, batch_id: int, chunks: list[tuple[bytes, int]],
                      retain_ms: int, owner: str = "") -> tuple[bool, int, int]:
        """-> (duplicate, published, de-duplicated). Durable when it returns. `owner`: the user
        publishing (auth on): the sink is that user's own (`sink_ref`)."""
        _check_sink_id(sink_id)
        if batch_id < 0 or retain_ms < 0:
            raise BrokerError(pb.BAD_REQUEST, "batch_id and retain_ms must not be negative")
        handles = [h for h, _ in chunks]
        if any(len(h) != _HANDLE.size for h in handles) or len(set(handles)) != len(handles):
            raise BrokerError(pb.BAD_REQUEST, "chunk handles must be distinct handles from Stage")
        self.resume()  # a job a previous run decided must count before anything is compared with it
        # From here to registering the job nothing awaits: the check and the decision are one
        # step of the event loop, so concurrent publishes of one sink cannot both pass.
        ref = sink_ref(sink_id, owner)
        last, legacy = self._sink_state(sink_id, owner)
        if last is not None and batch_id <= last:
            await self._settled(ref)  # a retried call answers once the first one's work is done
            await self.committer.durable()  # ... and held by the replica (a restart ran it unconfirmed)
            self.discard(handles)
            return True, 0, 0
        self._check_step(sink_id, batch_id, last, len(handles))
        store = self.ctx.store
        found = store.get_many(Family.STAGING, [_index_key(h) for h in handles])
        for i, ((_, count), raw) in enumerate(zip(chunks, found, strict=True)):
            if raw is None:
                raise BrokerError(pb.NOT_FOUND, f"staged chunk {i + 1} of {len(chunks)} is gone (its ttl ran out, or it "
                                                f"was discarded or published): nothing of batch {batch_id} was published")
            if _LEN.unpack_from(raw, 1)[0] != count:
                raise BrokerError(pb.BAD_REQUEST, f"staged chunk {i + 1} holds {_LEN.unpack_from(raw, 1)[0]} messages, "
                                                  f"not {count}")
        seq = next(self._seq)
        batch = store.batch()
        forget = now_ms() + retain_ms if retain_ms else 0
        batch.put(Family.STAGING, _SINK + ref.encode(), _VALUE + _SINK_STATE.pack(batch_id, forget) + owner.encode())
        if legacy is not None:
            batch.delete(Family.STAGING, legacy)
        batch.put(Family.STAGING, _JOB + keys.encode_u64(seq), _VALUE + _JOB_HEAD.pack(len(ref.encode())) + ref.encode()
                  + b"".join(handles))
        store.write(batch)
        published, deduplicated = await asyncio.shield(self._start(seq, ref, handles, batch))  # a cancelled call
        return False, published, deduplicated                                                # leaves it running

    def _start(self, seq: int, sink_id: str, handles: list[bytes],
               decision: Batch | None = None) -> asyncio.Task[tuple[int, int]]:
        """Run a decided job; `decision`: the batch that decided it, if not durable yet."""
        self._moving.update(handles)
        self._job_sink[seq] = sink_id
        self._job_floor[seq] = min((_bucket(h) for h in handles), default=2**32)
        task = self._jobs[seq] = asyncio.get_running_loop().create_task(self._run(seq, handles, decision))
        task.add_done_callback(lambda t: self._finished(seq, handles, t))
        return task

    def _finished(self, seq: int, handles: list[bytes], task: asyncio.Task[tuple[int, int]]) -> None:
        self._jobs.pop(seq, None)
        self._job_sink.pop(seq, None)
        self._job_floor.pop(seq, None)
        self._moving.difference_update(handles)

    async def _settled(self, sink_id: str) -> None:
        running = [t for s, t in self._jobs.items() if self._job_sink.get(s) == sink_id]
        if running:
            await asyncio.wait([asyncio.shield(t) for t in running])

    async def _run(self, seq: int, handles: list[bytes], decision: Batch | None) -> tuple[int, int]:
        """Move a decided job's chunks into their queues, retrying until it is done (it is decided:
        giving up would publish part of a batch); -> (published, de-duplicated)."""
        while True:
            try:
                return await self._move_all(seq, handles, decision)
            except Exception as e:
                log_failure(log, e, "publishing staged job %d failed; retrying in 1 s", seq)
                await asyncio.sleep(1)

    async def _move_all(self, seq: int, handles: list[bytes], decision: Batch | None) -> tuple[int, int]:
        store = self.ctx.store
        if decision is not None:
            await self.committer.durable(decision)  # the decision is durable before any of it is visible
        published = deduplicated = 0
        batch, pending = store.batch(), 0
        touched: set[int] = set()
        allocated: dict[tuple[int, int], int] = {}
        for h in handles:
            raw = store.get(Family.STAGING, _chunk_key(h))
            if raw is None:  # moved before a restart
                continue
            if raw[1] and pending:  # its lookups must see the dedup entries written so far
                self.ctx.logs.write_appends(batch, allocated, touched)
                batch, pending, allocated, touched = store.batch(), 0, {}, set()
            moved, skipped = self._move(batch, raw, bool(raw[1]), allocated, touched)
            batch.delete(Family.STAGING, _chunk_key(h))
            batch.delete(Family.STAGING, _index_key(h))
            self._count(h, -1)
            published += moved
            deduplicated += skipped
            pending += moved + skipped
            if pending >= self.ctx.settings.staging_move_batch:  # one write, then the event loop runs others
                self.ctx.logs.write_appends(batch, allocated, touched)
                batch, pending, allocated, touched = store.batch(), 0, {}, set()
                await asyncio.sleep(0)
        batch.delete(Family.STAGING, _JOB + keys.encode_u64(seq))
        await self.committer.commit(batch, allocated, touched)
        return published, deduplicated

    def _move(self, batch: Batch, raw: bytes, deduplicate: bool, allocated: dict[tuple[int, int], int],
              touched: set[int]) -> tuple[int, int]:
        """Put one chunk's messages into `batch`; -> (moved, skipped as duplicates)."""
        ctx = self.ctx
        logs = ctx.logs
        topics = ctx.meta.topics_by_id
        now = now_ms()
        entries = _chunk_entries(raw)
        seen: set[tuple[int, bytes]] = set()
        bucket = self.dedup.bucket(now)
        stored = self.dedup.lookup(bucket, [(tid, mid.decode()) for tid, _, mid, _ in entries]) if deduplicate else []
        moved = skipped = 0
        for i, (topic_id, due, mid, sealed) in enumerate(entries):
            topic = topics.get(topic_id)
            if topic is None:  # deleted since it was staged
                continue
            if deduplicate:
                if stored[i] is not None or (topic_id, mid) in seen:
                    skipped += 1
                    continue
                seen.add((topic_id, mid))
            queue_id, offset, recall = -1, 0, ""
            if due > now:
                recall = self.timers.schedule_record(batch, topic, sealed, due)
            else:
                queue_id = logs.choose_queue(topic, records.message_group(sealed))
                offset = logs.append_record(batch, topic, queue_id, sealed, now, allocated=allocated)
                touched.add(topic_id)
            if deduplicate:
                self.dedup.record(batch, bucket, topic_id, mid.decode(), queue_id, offset, recall_handle=recall)
            moved += 1
        return moved, skipped

    # --- background: resume jobs at start, expire chunks and forgotten sinks --------------------

    def resume(self) -> None:
        """Restart the jobs a previous run decided but did not finish (once)."""
        if self._resumed:
            return
        self._resumed = True
        for key, value in list(self.ctx.store.scan_prefix(Family.STAGING, _JOB)):
            seq = keys.decode_u64(key[len(_JOB):])
            (n,) = _JOB_HEAD.unpack_from(value, 1)
            start = 1 + _JOB_HEAD.size
            sink_id = value[start:start + n].decode()
            rest = value[start + n:]
            handles = [rest[i:i + _HANDLE.size] for i in range(0, len(rest), _HANDLE.size)]
            log.info("resuming the publish of staged batch for sink %r (%d chunks)", sink_id, len(handles))
            self._start(seq, sink_id, handles)

    async def run(self) -> None:
        """The broker's background task: resume jobs, then expire now and then. Stopping it stops
        the jobs too (they resume at the next start)."""
        self.resume()
        try:
            while True:
                try:
                    self.sweep()
                except Exception as e:
                    log_failure(log, e, "expiring staged chunks failed")
                await asyncio.sleep(SWEEP_S)
        finally:
            for task in list(self._jobs.values()):
                task.cancel()

    def sweep(self, now: int | None = None) -> None:
        """Drop chunks whose ttl ran out (never those of a running job) and forgotten sinks."""
        now = now_ms() if now is None else now
        floor = min([now // BUCKET_MS, *self._job_floor.values()])
        batch = self.ctx.store.batch()
        if floor > self._swept:  # one range tombstone per bucket (each lookup pays for them)
            for ns in (_CHUNK, _INDEX):
                batch.delete_range(Family.STAGING, ns, ns + floor.to_bytes(4, "big"))
            self._swept = floor
            for bucket in [b for b in self._staged if b < floor]:
                del self._staged[bucket]
        if now // SINK_SWEEP_MS != self._sinks_swept:  # forgotten sinks: once a minute is plenty
            self._sinks_swept = now // SINK_SWEEP_MS
            for key, value in self.ctx.store.scan_prefix(Family.STAGING, _SINK):
                forget = _SINK_STATE.unpack_from(value, 1)[1]
                if forget and forget < now and key[len(_SINK):].decode() not in self._job_sink.values():
                    batch.delete(Family.STAGING, key)
        self.ctx.store.write(batch)
