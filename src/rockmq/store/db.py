"""The broker's RocksDB database: column families, ordered scans and group commit.

Every state change is one WriteBatch. Writes happen on the event loop with `sync=False` (cheap,
the WAL record reaches the OS at once, so a `kill -9` of the broker loses nothing written);
durability against power loss comes from fsync'ing the WAL. Under the `sync` flush policy a
caller awaits `commit()`, which registers it with the group committer: one flusher thread runs
`flush_wal(sync=True)` (which releases the GIL) for everything written so far and then wakes all
callers whose writes it covered, so concurrent sends share one fsync and the event loop never
waits on the disk. Under `async` the thread flushes every `flush_interval_ms` and `commit()`
returns at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from rocksdict import (
    BlockBasedOptions,
    Cache,
    Checkpoint,
    ColumnFamily,
    CompactOptions,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
    WriteOptions,
)

from rockmq.store import keys, oplog
from rockmq.store.disk_space import DiskSpace, free_bytes, no_space
from rockmq.store.keys import prefix_end
from rockmq.store.schema import LEGACY_VERSION, MIGRATIONS, SCHEMA_VERSION, Family, FamilyName, SchemaError
from rockmq.units import MiB
from rockmq.whole_file import DIRECTORY_MODE

log = logging.getLogger(__name__)


# The families that take the message writes get a quarter of the memtable budget each, the
# bookkeeping families a sixteenth (see Memory).
BIG_MEMTABLE_FAMILIES = (Family.LOG, Family.TIMERS)
# The log and the timers keep message bodies in blob files (key-value separation): compactions
# then move keys and blob references only. Queues interleave in key order, and a million pending
# timers would otherwise be rewritten by every compaction their new neighbours cause (measured:
# 1 GB of pending timers with distinct bodies, rewritten every few seconds during a burst).
BLOB_FAMILIES = (Family.LOG, Family.TIMERS)
# A timers blob file holds messages due at all sorts of times, and stays while one of them is
# pending: compactions copy the live rest of the oldest quarter of the files to new ones, and
# RocksDB schedules such a compaction itself once those files are half garbage.
BLOB_GC_FAMILIES = (Family.TIMERS,)
BLOOM_FAMILIES = (Family.DEDUP, Family.CHECKPOINTS, Family.LITE)  # the lite family: a creating send's name is new
MEMTABLE_BLOOM_RATIO = 0.1  # of the memtable's size, for its bloom filter
MAX_TOTAL_WAL = 256 * MiB
MEMORY_MIB = 192  # the default budget (store_memory_mib): keeps a broker under 300 MB RSS under load
MIN_MEMORY_MIB = 16  # below it the bookkeeping families' memtables would be tiny
DISK_RESERVE_MIB = 32  # free disk kept beside the next flush by default (disk_reserve_mib)
RECYCLED_WALS = 4  # WAL files kept for reuse
# Families read by long in-order scans (due timers are moved thousands at a time) get big
# blocks: one read per block instead of one per few entries.
SCANNED_FAMILIES = (Family.TIMERS,)
SCAN_BLOCK = 64 * 1024
# Leveled compaction sized to what a family's flushes write. Queues interleave in the log's key
# order, so a compaction into a level rewrites every table between the first and the last queue
# tail it carries: with RocksDB's 256 MiB base level, all of the log's keys, on every L0
# compaction (measured: compaction CPU per message grew with the store). A small base level and
# small tables keep each compaction's reach small and let the data sink level by level. Small
# tables also keep each one's bloom filter and index block well under a block cache shard (1 MiB):
# a 64 MiB table's filter of several MiB is never kept by the cache, and every lookup re-read it
# (measured: 7.0 -> 0.9 us per message for the de-dup lookups against 3 M stored ids).
LEVEL_BASE: dict[str, int] = {Family.LOG: 8 * MiB, Family.TIMERS: 8 * MiB}
SMALL_LEVEL_BASE = 32 * MiB
TABLE_FILE_PER_LEVEL_BASE = 4  # target table size = level base / this
# Every level-0 table of the log spans all queues' tails, so each compaction out of level 0
# rewrites the whole base level: waiting for 8 tables instead of RocksDB's 4 halves how often
# (measured, 2 M messages of 8 interleaved queues: 3.9 -> 2.0 keys rewritten and 0.83 -> 0.45 us
# of compaction CPU per message). Reads search every level-0 table, so not more.
L0_COMPACTION_TRIGGER: dict[str, int] = {Family.LOG: 8}
DEFAULT_L0_COMPACTION_TRIGGER = 4  # RocksDB's


@dataclass(frozen=True)
class Memory:
    """How the store's memory budget (`memory_mib`, setting `store_memory_mib`) splits: two thirds for all
    memtables together, a third for the one block cache every block read goes through (index
    and filter blocks included, so memory does not grow with the data)."""

    total: int  # bytes

    @property
    def memtables(self) -> int:
        return self.total * 2 // 3

    @property
    def block_cache(self) -> int:
        return self.total - self.memtables

    def memtable(self, family: FamilyName) -> int:
        return self.memtables // (4 if family in BIG_MEMTABLE_FAMILIES else 16)


def _options(memory: Memory, cache: Cache, family: FamilyName | None = None) -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    if family is None:
        opts.set_db_write_buffer_size(memory.memtables)
        # Flushes and compactions write out in small synced steps, so a memtable flush never
        # lands one big fsync in front of the WAL fsync a send is waiting for.
        opts.set_bytes_per_sync(MiB)
        opts.increase_parallelism(2)  # two background jobs (flushes and compactions), one per core
        # A WAL file is kept until every family's memtable holding a write of it is flushed, so
        # a quiet family (meta, offsets) would pin gigabytes of WAL, replayed at every start:
        # past this size RocksDB flushes the families that hold the oldest WAL file back.
        opts.set_max_total_wal_size(MAX_TOTAL_WAL)
        # Old WAL files are overwritten rather than new ones grown: an fdatasync of a file whose
        # size does not change writes no inode (measured on this machine's ext4 without a journal,
        # bench/wal_fsync_bench.py, bench/wal_commit_bench.py: ~30 % less fdatasync time at the
        # median and 10-45 % less of its CPU; the tail, the disk's cache flush, is the same). Records
        # of a recycled file carry their log number, so recovery never replays the old contents.
        opts.set_recycle_log_file_num(RECYCLED_WALS)
    else:
        opts.set_write_buffer_size(memory.memtable(family))
        opts.set_max_write_buffer_number(3)
        # Levels sized from the last one up (RocksDB's default since 8.4, stated here because the
        # bounds below rely on it): about 90 % of the data sits in the last level, so space and
        # write amplification stay flat however much the broker holds.
        opts.set_level_compaction_dynamic_level_bytes(True)
        base = LEVEL_BASE.get(family, SMALL_LEVEL_BASE)
        opts.set_max_bytes_for_level_base(base)
        opts.set_target_file_size_base(base // TABLE_FILE_PER_LEVEL_BASE)
        opts.set_max_compaction_bytes(2 * base)  # one compaction reads (and an output table spans) at most this
        opts.set_level_zero_file_num_compaction_trigger(L0_COMPACTION_TRIGGER.get(family, DEFAULT_L0_COMPACTION_TRIGGER))
        if family in BLOB_FAMILIES:
            opts.set_enable_blob_files(True)
            opts.set_min_blob_size(256)
        if family in BLOB_GC_FAMILIES:
            opts.set_enable_blob_gc(True)
            opts.set_blob_gc_age_cutoff(0.25)
            opts.set_blob_gc_force_threshold(0.5)
        table = BlockBasedOptions()
        # Index and filter blocks live in the one bounded cache, not beside it: memory stays
        # flat however much data the broker holds.
        table.set_block_cache(cache)
        table.set_cache_index_and_filter_blocks(True)
        table.set_pin_l0_filter_and_index_blocks_in_cache(True)
        if family in BLOOM_FAMILIES:  # most lookups there miss: answer them from the filter
            table.set_bloom_filter(10, False)
            # ... in the memtables too, where a miss otherwise searches the skip list: a send's
            # de-dup multi-get of 64 new ids, 20-40 -> 12-14 us.
            opts.set_memtable_prefix_bloom_ratio(MEMTABLE_BLOOM_RATIO)
            opts.set_memtable_whole_key_filtering(True)
        if family in SCANNED_FAMILIES:
            table.set_block_size(SCAN_BLOCK)
        opts.set_block_based_table_factory(table)
    return opts


class CannotOpenStore(Exception):
    """The data directory cannot be made, or RocksDB refuses the store in it (corrupt, unwritable):
    the message is the one line to show."""


def _open(path: Path, new: bool, memory: Memory, cache: Cache) -> Rdict:
    """Open (or make) the database at `path`, every family it has (one an older version left is
    opened too), or say in one line why not."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)  # the store's user's alone (whole_file.py)
    except OSError as e:
        raise CannotOpenStore(f"cannot make the data directory {path}: {e.strerror}") from None
    try:
        existing = [] if new else Rdict.list_cf(str(path))
        names = [*Family, *(f for f in existing if f not in {*Family, "default"})]
        families = {f: _options(memory, cache, f) for f in names}
        return Rdict(str(path), options=_options(memory, cache), column_families=families)
    except Exception as e:  # RocksDB's status (Corruption, IO error...) comes as a bare Exception, a file's as OSError
        if type(e) is not Exception and not isinstance(e, OSError):
            raise
        raise _cannot_open(path, e) from None


def _cannot_open(path: Path, error: Exception) -> CannotOpenStore:
    """RocksDB's refusal to open (or migrate) the store in `path`, in one line."""
    full = f"the disk is full ({free_bytes(path) // MiB} MiB free): free some space and start again; " if no_space(error) else ""
    return CannotOpenStore(f"cannot open the store in {path}: {full}{' '.join(str(error).split())}")


class Store:
    """One RocksDB database per broker. Use from the event loop thread only."""

    def __init__(self, path: Path, flush: str = "sync", flush_interval_ms: int = 100,
                 oplog: OpLogSink | None = None, memory_mib: int = MEMORY_MIB,
                 disk_reserve_mib: int = DISK_RESERVE_MIB) -> None:
        self.path = path
        self.flush_policy = flush
        memory = Memory(memory_mib * MiB)
        cache = Cache(memory.block_cache)
        new = not (path / "CURRENT").exists()
        self._db = _open(path, new, memory, cache)
        # Keyed by plain str (the names callers pass): the fast dict lookup of str-only keys.
        self._cf: dict[str, Rdict] = {str(f): self._db.get_column_family(f) for f in Family}
        self._handles: dict[str, ColumnFamily] = {str(f): self._db.get_column_family_handle(f) for f in Family}
        self._nosync = WriteOptions()
        self._nosync.sync = False
        # Sends stop while the disk is under the reserve plus what the memtables' next flush writes.
        self.space = DiskSpace(path, disk_reserve_mib * MiB, self._unflushed,
                               lambda: self._db.write(WriteBatch(raw_mode=True), self._nosync))
        interval = None if flush == "sync" else flush_interval_ms / 1000
        self._committer = GroupCommit(lambda: self._db.flush_wal(True), interval, self._fsync_failed)
        self._closed = False
        self._oplog = oplog  # a primary's replication log, when it keeps one
        self._refusal: Callable[[], Exception] | None = None  # set: every write raises what it makes
        self._lease: tuple[Callable[[], float], Callable[[], Exception]] | None = None  # `refuse_writes_after`
        # What every write checks first (`_gate_writes`): None, a plain broker's, checks nothing more
        self._gate: Callable[[], None] | None = None
        try:
            self._migrate(new)
        except BaseException as e:
            self.close()
            if type(e) is Exception and no_space(e):  # a migration's synced write found no room
                raise _cannot_open(path, e) from None
            raise

    def _migrate(self, new: bool) -> None:
        """Bring the data up to SCHEMA_VERSION (store/schema.py), one synced write per step."""
        raw = self.get(Family.META, keys.SCHEMA_VERSION_KEY)
        version = SCHEMA_VERSION if new else LEGACY_VERSION if raw is None else keys.decode_u64(raw)
        if version > SCHEMA_VERSION:
            raise SchemaError(f"{self.path} holds storage schema {version}, newer than this rockmq's "
                              f"{SCHEMA_VERSION}: run the release that wrote it")
        sync = WriteOptions()
        sync.sync = True
        for step in MIGRATIONS[version - 1:]:
            batch = self.batch()
            moved = step(self, batch)
            version += 1
            batch.put(Family.META, keys.SCHEMA_VERSION_KEY, keys.encode_u64(version))
            self._db.write(batch.wb, sync)
            log.info("storage schema migrated to version %d (%s: %d entries moved)", version, step.__name__, moved)
        if raw is None and new:  # a new directory starts at the current version
            batch = self.batch()
            batch.put(Family.META, keys.SCHEMA_VERSION_KEY, keys.encode_u64(version))
            self._db.write(batch.wb, sync)

    # --- writes ------------------------------------------------------------------------------

    def batch(self) -> Batch:
        return Batch(self._handles, record=self._oplog is not None and self._oplog.recording)

    def refuse_writes(self, refusal: Callable[[], Exception] | None) -> None:
        """From now on every write raises `refusal()` and writes nothing (a fenced primary); None:
        writes are taken again (a restarted primary that confirmed it still is one)."""
        self._refusal = refusal
        self._gate_writes()

    def refuse_writes_after(self, until: Callable[[], float], refusal: Callable[[], Exception]) -> None:
        """From now on a write is refused with `refusal()` once time.monotonic() reaches `until()` (read at
        each write): a coordinated group's primary, which may write only while its lease surely holds
        for the others (broker/coordination/membership.py). Every writer goes through `write`, so none
        can write past it: sends, receives, acks, offsets, the background writers."""
        self._lease = (until, refusal)
        self._gate_writes()

    def _gate_writes(self) -> None:
        """Fold the refusals into the one callable `write` checks: a store with neither pays one
        `is not None` test per write, as before there were leases."""
        refusal, lease = self._refusal, self._lease
        if refusal is not None:
            def refused() -> None:
                raise refusal()
            self._gate = refused
        elif lease is not None:
            until, lapsed = lease

            def while_leased() -> None:
                if time.monotonic() >= until():
                    raise lapsed()
            self._gate = while_leased
        else:
            self._gate = None

    @property
    def closed(self) -> bool:
        """Whether `close` ran: nothing is read or written any more (the broker is not ready)."""
        return self._closed

    @property
    def refusing_writes(self) -> bool:
        """Whether writes are refused (`refuse_writes`): reads then persist nothing they imply."""
        return self._refusal is not None or (self._lease is not None and time.monotonic() >= self._lease[0]())

    def write(self, batch: Batch) -> None:
        """Apply a batch atomically, without waiting for an fsync."""
        if batch.empty:
            return
        if self._gate is not None:
            self._gate()
        oplog = self._oplog if batch.ops is not None else None  # a batch made while the log records
        if oplog is not None:
            oplog.stamp(batch)
        try:
            self._db.write(batch.wb, self._nosync)
        except Exception as e:
            if oplog is not None:  # nothing was written: no batch carries that number
                oplog.unstamp(batch)
            if no_space(e):
                raise self.space.failed(e) from None
            raise
        if oplog is not None:
            oplog.written(batch)

    async def commit(self, batch: Batch) -> None:
        """Apply a batch atomically and return once it is durable under the flush policy."""
        self.write(batch)
        if self.flush_policy == "sync":
            await self.sync()

    async def sync(self) -> None:
        """Wait until everything written so far is fsync'ed (shared with concurrent callers)."""
        await self._committer.sync()

    def _fsync_failed(self, error: BaseException) -> BaseException:
        """What the writes a failed fsync covered fail with: DiskFull when the disk is full (then
        RocksDB's WAL writer reports only "previous error"), else the error itself."""
        if no_space(error) or self.space.stopped:
            return self.space.failed(error)
        return OSError(f"WAL fsync failed: {error}")

    # --- reads -------------------------------------------------------------------------------

    def get(self, family: FamilyName, key: bytes) -> bytes | None:
        value: bytes | None = self._cf[family].get(key)
        return value

    def get_many(self, family: FamilyName, keys: list[bytes]) -> list[bytes | None]:
        """One multi-get: cheaper than a get per key."""
        if not keys:
            return []
        return self._cf[family].get(keys)  # type: ignore[arg-type, return-value]  # the stub takes a list[str | bytes ...]

    def scan(self, family: FamilyName, lower: bytes, upper: bytes, limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Entries with lower <= key < upper, in key order."""
        # With the bounds, RocksDB skips files outside them and never steps (or fetches a blob)
        # past the range.
        bounds = ReadOptions()
        bounds.set_iterate_lower_bound(lower)
        bounds.set_iterate_upper_bound(upper)
        items = self._cf[family].items(from_key=lower, read_opt=bounds)  # stepped in Rust: no call per step
        # A generator, so `bounds` lives as long as the iteration: the iterator does not own it.
        yield from items if limit is None else itertools.islice(items, limit)

    def scan_keys(self, family: FamilyName, lower: bytes, upper: bytes, limit: int) -> list[bytes]:
        """Up to `limit` keys with lower <= key < upper, in key order (no value read)."""
        bounds = ReadOptions()
        bounds.set_iterate_lower_bound(lower)
        bounds.set_iterate_upper_bound(upper)
        found = cast(Iterable[bytes], self._cf[family].keys(from_key=lower, read_opt=bounds))  # its stub's type is loose
        return list(itertools.islice(found, limit))

    def scan_prefix(self, family: FamilyName, prefix: bytes, limit: int | None = None) -> Iterator[tuple[bytes, bytes]]:
        return self.scan(family, prefix, prefix_end(prefix), limit)

    def first_key(self, family: FamilyName, lower: bytes = b"", upper: bytes | None = None) -> bytes | None:
        for key, _ in self.scan(family, lower, upper if upper is not None else b"\xff" * 64, 1):
            return key
        return None

    def _unflushed(self) -> int:
        """Bytes in the memtables: what their next flushes write to disk."""
        return sum(self.property(f, "cur-size-all-mem-tables") for f in Family)

    def property(self, family: FamilyName, name: str) -> int:
        """One of RocksDB's integer properties of a family (`rocksdb.<name>`); 0 if it has none."""
        return self._cf[family].property_int_value(f"rocksdb.{name}") or 0

    def size(self, family: FamilyName) -> int:
        """Bytes the family holds: its live table and blob files plus its memtables (estimate)."""
        return sum(self.property(family, name) for name in ("live-sst-files-size", "live-blob-file-size",
                                                             "cur-size-all-mem-tables")) \
            - self.property(family, "live-blob-file-garbage-size")

    async def compact(self, family: FamilyName, lower: bytes, upper: bytes) -> None:
        """Compact a key range on a worker thread (RocksDB releases the GIL meanwhile): what a
        range delete hid is then gone from disk too. Not exclusive: the automatic compactions go
        on beside it, so flushed tables do not pile up in level 0 (and stall writes) while it runs."""
        shared = CompactOptions()
        shared.set_exclusive_manual_compaction(False)
        await asyncio.to_thread(self._cf[family].compact_range, lower, upper, shared)

    def checkpoint(self, path: Path) -> None:
        """A consistent copy of the store in `path` (which must not exist), as of now: RocksDB flushes
        the memtables and hard-links the table and blob files (so `path` must be on the store's file
        system; copies only the live WAL). On the event loop, not a thread: rocksdict holds the GIL
        meanwhile anyway, and the store cannot be closed under it."""
        Checkpoint(self._db).create_checkpoint(str(path))

    def last_key_with_prefix(self, family: FamilyName, prefix: bytes) -> bytes | None:
        it = self._cf[family].iter()
        it.seek(prefix_end(prefix))
        if it.valid():
            it.prev()
        else:
            it.seek_to_last()
        key: bytes | None = it.key() if it.valid() else None
        return key if key is not None and key.startswith(prefix) else None

    # --- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._committer.stop()
        try:
            self._db.flush_wal(True)
            self._db.flush()
        except Exception as e:  # RocksDB's status: a bare Exception
            if type(e) is not Exception:
                raise
            # Stopped by a write that found no room: every write acknowledged is in the WAL already.
            log.warning("the store in %s stops without flushing its memtables (%s): the next start replays them "
                        "from its log", self.path, " ".join(str(e).split()))
            with contextlib.suppress(Exception):
                self._db.close()
        else:
            self._db.close()
        # Column-family objects keep the database (and its LOCK file) alive until they go too.
        self._cf.clear()
        self._handles.clear()


class OpLogSink(Protocol):
    """A primary's replication log, given to its store at construction: from when it starts
    `recording`, each batch is numbered before it is written and handed over after."""

    recording: bool

    def stamp(self, batch: Batch) -> None: ...

    def unstamp(self, batch: Batch) -> None: ...

    def written(self, batch: Batch) -> None: ...


class GroupCommit:
    """One flusher thread that fsyncs the WAL for everything written so far, then completes
    every waiter the flush covered. With an interval it flushes periodically instead (the
    `async` policy). A dedicated thread, not an executor, keeps the hand-off to two wake-ups.

    Waiters are handed to the thread once per event-loop iteration (`call_soon`), after every
    request that became ready in that iteration has written its batch: under load many sends
    share one fsync, and an idle broker still flushes at once. The hand-off is a C queue the
    thread blocks on without the GIL (a `threading.Condition` costs several Python-level lock
    allocations per round trip, measured ~30 us of the flusher's CPU per fsync)."""

    def __init__(self, flush: Callable[[], None], interval_s: float | None,
                 failed: Callable[[BaseException], BaseException] = lambda e: OSError(f"WAL fsync failed: {e}")) -> None:
        self._flush = flush
        self._interval = interval_s
        self._failed = failed  # a failed fsync -> what its waiters get (on the event loop)
        self._pending: list[asyncio.Future[None]] = []  # registered this loop iteration (event-loop thread only)
        # Each item: the loop and the waiters of one iteration; None stops the thread.
        self._handed: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] | None] = \
            queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="rockmq-fsync", daemon=True)
        self._thread.start()

    async def sync(self) -> None:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if not self._pending:
            loop.call_soon(self._kick, loop)
        self._pending.append(fut)
        await fut

    def _kick(self, loop: asyncio.AbstractEventLoop) -> None:
        waiters, self._pending = self._pending, []
        self._handed.put((loop, waiters))

    def _run(self) -> None:
        interval = self._interval
        next_flush = time.monotonic() + interval if interval is not None else 0.0
        covered: list[asyncio.Future[None]] = []
        loop: asyncio.AbstractEventLoop | None = None
        said = ""  # the failure last logged: one line per kind of failure, not one per fsync
        while True:
            # Under `sync` a flush starts as soon as waiters are handed over; under `async` at the next tick.
            timeout = None if interval is None else max(0.0, next_flush - time.monotonic())
            try:
                item = self._handed.get(timeout=timeout)
            except queue.Empty:  # the `async` policy's tick
                pass
            else:
                if item is None:
                    return
                loop = item[0]
                covered.extend(item[1])
                if interval is not None and time.monotonic() < next_flush:
                    continue
            while True:  # whatever was handed over meanwhile is written too: one fsync covers it
                try:
                    more = self._handed.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._handed.put(None)  # stop once these waiters are answered
                    break
                loop = more[0]
                covered.extend(more[1])
            error: BaseException | None = None
            try:
                self._flush()
            except BaseException as e:  # a failed fsync must fail the sends it covered, and this thread must outlive it
                if str(e) != said:
                    said = str(e)
                    log.error("WAL fsync failed: %s", e)
                error = e
            else:
                said = ""
            if interval is not None:
                next_flush = time.monotonic() + interval
            if covered and loop is not None:
                try:
                    loop.call_soon_threadsafe(_complete, covered, error, self._failed)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass
                covered = []

    def stop(self) -> None:
        self._handed.put(None)
        self._thread.join()


def _complete(futures: list[asyncio.Future[None]], error: BaseException | None,
              failed: Callable[[BaseException], BaseException]) -> None:
    if error is not None:
        error = failed(error)
    for fut in futures:
        if not fut.done():
            if error is None:
                fut.set_result(None)
            else:
                fut.set_exception(error)


class Batch:
    """A WriteBatch addressed by family name; with `record`, its operations are also kept (for
    a replica), and `seq` is the number replication gave it."""

    __slots__ = ("wb", "_handles", "empty", "ops", "seq")

    def __init__(self, handles: dict[str, ColumnFamily], record: bool = False) -> None:
        self.wb = WriteBatch(raw_mode=True)
        self._handles = handles
        self.empty = True
        self.ops: list[oplog.Op] | None = [] if record else None
        self.seq = 0

    def put(self, family: FamilyName, key: bytes, value: bytes) -> None:
        self.wb.put(key, value, self._handles[family])
        self.empty = False
        if self.ops is not None:
            self.ops.append((oplog.PUT, family, key, value))

    def delete(self, family: FamilyName, key: bytes) -> None:
        self.wb.delete(key, self._handles[family])
        self.empty = False
        if self.ops is not None:
            self.ops.append((oplog.DELETE, family, key, b""))

    def delete_range(self, family: FamilyName, lower: bytes, upper: bytes) -> None:
        self.wb.delete_range(lower, upper, self._handles[family])
        self.empty = False
        if self.ops is not None:
            self.ops.append((oplog.DELETE_RANGE, family, lower, upper))

    def put_unshipped(self, family: FamilyName, key: bytes, value: bytes) -> None:
        """Put that a replica never gets (what only this store needs: a primary's footprints)."""
        self.wb.put(key, value, self._handles[family])
        self.empty = False

    def delete_range_unshipped(self, family: FamilyName, lower: bytes, upper: bytes) -> None:
        self.wb.delete_range(lower, upper, self._handles[family])
        self.empty = False

    def apply(self, ops: list[oplog.Op]) -> None:
        """Add operations shipped from another store."""
        for kind, family, key, value in ops:
            if kind == oplog.PUT:
                self.put(family, key, value)
            elif kind == oplog.DELETE:
                self.delete(family, key)
            else:
                self.delete_range(family, key, value)
