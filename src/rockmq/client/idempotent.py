"""Idempotent consumption: run a handler once per key over at-least-once delivery.

RocketMQ delivers at least once: a consumer that crashes or acks too late gets the message again,
and a producer that retries a send may store it twice. `Idempotent` keeps a de-dup table keyed by
message id (or a business key) whose entries go through four states:

    NONE ──claim──▶ PROCESSING ──handler returns──▶ SUCCESS    later copies are skipped
     ▲  ▲               │      └──handler raises───▶ ERROR      the next copy claims it again
     │  └─ deadline ────┘                              │
     └──────────────── expiry (keep_s) ◀───────────────┘

- The claim is atomic: of two consumers handed the same key at once, one runs the handler and the
  other gets `DuplicateInFlight` (it does not ack; the broker redelivers later, when the outcome
  is known).
- Every entry expires, and an expired key is NONE again. PROCESSING expires at its deadline
  (`processing_timeout_s` after the claim): an attempt that crashed is retried by the next
  delivery. SUCCESS and ERROR are kept `keep_s`.

Guarantee: at-least-once delivery plus this table is effectively-once processing of each key
within `keep_s`, not exactly-once. A crash after the handler's side effect but before SUCCESS is
written leaves PROCESSING; past its deadline the next delivery runs the handler again. Where that
window matters, make the side effect itself idempotent. `processing_timeout_s` must exceed the
handler's longest run (or a slow attempt and its retry overlap), and `keep_s` how long copies of a
message can keep arriving.

Stores: `RocksDBStore` (local, one process; the default: `Idempotent(namespace=group)` keeps its
table under `$ROCKMQ_IDEMPOTENT_DIR`, else `$XDG_STATE_HOME/rockmq/idempotent`, else
`~/.local/state/rockmq/idempotent`, one directory per namespace), `RedisStore` and `SQLStore`
(shared by processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import math
import os
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from enum import Enum, StrEnum
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload
from urllib.parse import quote

from rocksdict import Options, Rdict, WriteOptions

from rockmq.client.message import ReceivedMessage
from rockmq.client.sync import _background_loop

if TYPE_CHECKING:
    from redis.asyncio import Redis

R = TypeVar("R")


class State(StrEnum):
    """A key's state in the de-dup table (stored as its name)."""

    NONE = "NONE"
    PROCESSING = "PROCESSING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"


_CLAIMABLE = (State.NONE, State.ERROR)


class Skipped(Enum):
    """What a wrapped handler returns for a key already processed: nothing ran; ack the message."""

    SKIPPED = "skipped"


SKIPPED = Skipped.SKIPPED


class DuplicateInFlight(Exception):
    """Another attempt holds the key and has not finished: leave the message unacked so the broker
    redelivers it once that attempt is over (it is then skipped, or retried if the attempt failed)."""

    retriable = True

    def __init__(self, key: str) -> None:
        super().__init__(f"{key!r} is being processed by another attempt")
        self.key = key


class IdempotencyStore(Protocol):
    """The de-dup table. Every entry expires; an expired key reads as NONE."""

    async def claim(self, key: str, now: float, deadline: float) -> State:
        """If `key` is NONE or ERROR at `now`, make it PROCESSING until `deadline`, atomically.
        -> the state it was in (the claim is won exactly when that is NONE or ERROR)."""
        ...

    async def finish(self, key: str, state: State, expires_at: float) -> None:
        """Record the outcome (SUCCESS or ERROR), kept until `expires_at`."""
        ...

    async def get(self, key: str) -> State:
        """The key's state now: for inspection, the decorator never needs it."""
        ...


class Idempotent:
    """`@Idempotent(store, namespace=group)` on `handler(message)`: the handler runs once per key.

    The wrapper returns the handler's result, or `SKIPPED` (without calling it) when the key already
    succeeded; it raises `DuplicateInFlight` while another attempt holds the key, and re-raises the
    handler's exception after recording ERROR (so a redelivery retries). An async handler gives an
    async wrapper; a plain one a plain wrapper, whose store calls run on the sync clients' loop.

    `namespace` keeps apart the keys of consumer groups sharing a store: a group that did not process
    a message must not skip it because another group did.
    """

    def __init__(self, store: IdempotencyStore | None = None, *, namespace: str = "",
                 key: Callable[[ReceivedMessage], str] = lambda m: m.message_id,
                 processing_timeout_s: float = 60.0, keep_s: float = 7 * 24 * 3600) -> None:
        """Without a `store`, a local RocksDBStore at `default_store_path(namespace)`, shared by the
        process's Idempotents of that namespace."""
        if ":" in namespace:
            raise ValueError(f"a namespace cannot contain ':' (it separates it from the key): {namespace!r}")
        self.store = store if store is not None else default_store(namespace)
        self.namespace = namespace
        self.key = key
        self.processing_timeout_s = processing_timeout_s
        self.keep_s = keep_s

    def key_of(self, message: ReceivedMessage) -> str:
        """The key a message is recorded under: `namespace:key(message)`."""
        return f"{self.namespace}:{self.key(message)}"

    async def claim(self, key: str) -> bool:
        """Take the key for one attempt: True to run the handler, False to skip it (it succeeded before);
        DuplicateInFlight while another attempt holds it. With `finish`, for code the decorator does not fit."""
        now = time.time()
        previous = await self.store.claim(key, now, now + self.processing_timeout_s)
        if previous is State.PROCESSING:
            raise DuplicateInFlight(key)
        return previous is not State.SUCCESS

    async def finish(self, key: str, succeeded: bool) -> None:
        await self.store.finish(key, State.SUCCESS if succeeded else State.ERROR, time.time() + self.keep_s)

    @overload
    def __call__(self, handler: Callable[[ReceivedMessage], Awaitable[R]]
                 ) -> Callable[[ReceivedMessage], Awaitable[R | Skipped]]: ...

    @overload
    def __call__(self, handler: Callable[[ReceivedMessage], R]) -> Callable[[ReceivedMessage], R | Skipped]: ...

    def __call__(self, handler: Callable[[ReceivedMessage], Any]) -> Callable[[ReceivedMessage], Any]:
        if inspect.iscoroutinefunction(handler):
            @functools.wraps(handler)
            async def run_async(message: ReceivedMessage) -> Any:
                key = self.key_of(message)
                if not await self.claim(key):
                    return SKIPPED
                try:
                    result = await handler(message)
                except BaseException:  # cancelled too: a redelivery need not wait for the deadline
                    await self.finish(key, False)
                    raise
                await self.finish(key, True)
                return result
            return run_async

        def wait(coro: Coroutine[Any, Any, R]) -> R:
            return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result()

        @functools.wraps(handler)
        def run_sync(message: ReceivedMessage) -> Any:
            key = self.key_of(message)
            if not wait(self.claim(key)):
                return SKIPPED
            try:
                result = handler(message)
            except BaseException:
                wait(self.finish(key, False))
                raise
            wait(self.finish(key, True))
            return result
        return run_sync


def _live(state: str, expires_at: float, now: float) -> State:
    return State.NONE if expires_at <= now else State(state)


class RocksDBStore:
    """The table in a local RocksDB directory: no server, for the consumers of one process (RocksDB
    lets one process open a directory). SUCCESS is fsync'ed, since a lost SUCCESS means running the
    handler again; a lost PROCESSING or ERROR only means a retry. Each finish also looks at a few
    entries past the last one it looked at and deletes the expired ones: bounded work per call that
    still sweeps the whole table, as each finish adds at most one entry."""

    PURGE_STEP = 8

    def __init__(self, path: str | Path) -> None:
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        self._db = Rdict(str(path), options=options)
        self._lock = threading.Lock()  # claims are read-then-write: one at a time, from any thread
        self._fsync = WriteOptions()
        self._fsync.sync = True
        self._cursor = b""  # where the next purge step starts

    @staticmethod
    def _decode(raw: bytes | None, now: float) -> State:
        if raw is None:
            return State.NONE
        state, expires_at = raw.decode().split(" ")
        return _live(state, float(expires_at), now)

    def _write(self, key: bytes, state: State, expires_at: float) -> None:
        self._db.put(key, f"{state} {expires_at!r}".encode(), self._fsync if state is State.SUCCESS else None)

    def _claim(self, key: str, now: float, deadline: float) -> State:
        with self._lock:
            previous = self._decode(self._db.get(key.encode()), now)
            if previous in _CLAIMABLE:
                self._write(key.encode(), State.PROCESSING, deadline)
            return previous

    def _finish(self, key: str, state: State, expires_at: float) -> None:
        with self._lock:
            self._write(key.encode(), state, expires_at)
            self._purge_step(time.time())

    def _purge_step(self, now: float) -> None:
        entries = self._db.iter()
        entries.seek(self._cursor)
        for _ in range(self.PURGE_STEP):
            if not entries.valid():
                break
            if self._decode(entries.value(), now) is State.NONE:
                self._db.delete(entries.key())
            entries.next()
        self._cursor = entries.key() if entries.valid() else b""

    async def claim(self, key: str, now: float, deadline: float) -> State:
        return await asyncio.to_thread(self._claim, key, now, deadline)

    async def finish(self, key: str, state: State, expires_at: float) -> None:
        await asyncio.to_thread(self._finish, key, state, expires_at)

    async def get(self, key: str) -> State:
        return await asyncio.to_thread(lambda: self._decode(self._db.get(key.encode()), time.time()))

    async def close(self) -> None:
        def close() -> None:
            with self._lock:
                self._db.close()
        await asyncio.to_thread(close)


def default_store_path(namespace: str = "") -> Path:
    """Where `Idempotent` keeps a namespace's table when given no store: under
    $ROCKMQ_IDEMPOTENT_DIR, else $XDG_STATE_HOME/rockmq/idempotent, else ~/.local/state/rockmq/idempotent."""
    root = os.environ.get("ROCKMQ_IDEMPOTENT_DIR")
    if not root:
        state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
        root = os.path.join(state, "rockmq", "idempotent")
    return Path(root) / (quote(namespace, safe="") or "_default")


_default_stores: dict[Path, RocksDBStore] = {}
_default_stores_lock = threading.Lock()


def default_store(namespace: str = "") -> RocksDBStore:
    """The process's RocksDBStore of a namespace at its default path (RocksDB lets one process
    open a directory once, so every Idempotent of the namespace shares it)."""
    path = default_store_path(namespace).resolve()
    with _default_stores_lock:
        store = _default_stores.get(path)
        if store is None:
            path.mkdir(parents=True, exist_ok=True)
            store = _default_stores[path] = RocksDBStore(path)
        return store


def _ttl_ms(until: float, now: float) -> int:
    return max(1, math.ceil((until - now) * 1000))


class RedisStore:
    """The table in Redis (`pip install rockmq[redis]`), shared by any number of consumers: each key
    is one Redis key whose value is its state and whose TTL is its expiry, so Redis itself turns a
    crashed attempt's PROCESSING back into NONE. A claim is one SET NX PX; taking over an ERROR is a
    WATCH/MULTI transaction. `client` is a `redis.asyncio.Redis`; the store does not close it."""

    def __init__(self, client: Redis, *, prefix: str = "rockmq:idempotent:") -> None:
        self.client = client
        self.prefix = prefix

    @staticmethod
    def _state(value: bytes | str | None) -> State:
        if value is None:
            return State.NONE
        return State(value.decode() if isinstance(value, bytes) else value)

    async def claim(self, key: str, now: float, deadline: float) -> State:
        from redis.exceptions import WatchError

        name = self.prefix + key
        if await self.client.set(name, State.PROCESSING.value, nx=True, px=_ttl_ms(deadline, now)):
            return State.NONE
        async with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(name)
                    previous = self._state(await pipe.get(name))
                    if previous not in _CLAIMABLE:
                        return previous
                    pipe.multi()  # type: ignore[no-untyped-call]  # untyped in redis itself
                    pipe.set(name, State.PROCESSING.value, px=_ttl_ms(deadline, now))
                    await pipe.execute()
                    return previous
                except WatchError:  # the key changed between the read and the write: read again
                    continue

    async def finish(self, key: str, state: State, expires_at: float) -> None:
        await self.client.set(self.prefix + key, state.value, px=_ttl_ms(expires_at, time.time()))

    async def get(self, key: str) -> State:
        return self._state(await self.client.get(self.prefix + key))


def _driver_of(conn: Any) -> ModuleType:
    """The DB-API module a connection comes from (the nearest enclosing module with a paramstyle)."""
    parts = type(conn).__module__.split(".")
    for n in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:n]))
        if module is not None and hasattr(module, "paramstyle"):
            return module
    raise TypeError(f"{type(conn).__qualname__} does not come from a DB-API 2 driver module")


class SQLStore:
    """The table in any SQL database with a DB-API 2 driver: `connect()` returns a connection
    (`lambda: sqlite3.connect("dedup.db")` works out of the box). Every call runs on one worker
    thread that owns the connection, so the event loop never waits on the database; after an error
    the connection is dropped and the next call makes a new one.

    One row per key: `id` (primary key), `state`, `expires_at` (for PROCESSING, its deadline). A
    claim inserts the row, or takes it over with an UPDATE guarded by the claim condition, so two
    claimers cannot both win whatever the isolation level. Expired rows are deleted at most every
    `purge_every_s`. With `create=True` the table and its index are made with CREATE ... IF NOT
    EXISTS (SQLite, PostgreSQL, MariaDB); elsewhere create them yourself and pass `create=False`.
    """

    def __init__(self, connect: Callable[[], Any], *, table: str = "rockmq_idempotent", create: bool = True,
                 purge_every_s: float = 60.0) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", table):
            raise ValueError(f"not a plain table name: {table!r}")
        self._connect = connect
        self.table = table
        self._create = create
        self.purge_every_s = purge_every_s
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="rockmq-idempotent-sql")
        self._conn: Any = None  # made by the worker thread on first use
        self._driver: ModuleType | None = None
        self._purged_at = 0.0

    def _connection(self) -> Any:
        if self._conn is None:
            conn = self._connect()
            self._driver = _driver_of(conn)
            if self._create:
                cur = conn.cursor()
                cur.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (id VARCHAR(255) NOT NULL PRIMARY KEY, "
                            "state VARCHAR(16) NOT NULL, expires_at DOUBLE PRECISION NOT NULL)")
                cur.execute(f"CREATE INDEX IF NOT EXISTS {self.table}_expires ON {self.table} (expires_at)")
                conn.commit()
            self._conn = conn
        return self._conn

    def _execute(self, cur: Any, sql: str, *args: Any) -> Any:
        """Run `sql`, written with ? placeholders, in the driver's placeholder style."""
        style = self._driver.paramstyle  # type: ignore[union-attr]
        params: Any = args
        if style != "qmark":
            marks = {"format": "%s", "pyformat": "%s", "numeric": ":{}", "named": ":p{}"}[style]
            pieces = sql.split("?")
            sql = pieces[0] + "".join(marks.format(i) + piece for i, piece in enumerate(pieces[1:], 1))
            if style == "named":
                params = {f"p{i}": a for i, a in enumerate(args, 1)}
        cur.execute(sql, params)
        return cur

    def _claim(self, key: str, now: float, deadline: float) -> State:
        conn, t = self._connection(), self.table
        integrity_error = self._driver.IntegrityError  # type: ignore[union-attr]
        while True:
            cur = conn.cursor()
            row = self._execute(cur, f"SELECT state, expires_at FROM {t} WHERE id = ?", key).fetchone()
            previous = State.NONE if row is None else _live(row[0], row[1], now)
            if previous not in _CLAIMABLE:
                conn.rollback()
                return previous
            try:
                if row is None:
                    self._execute(cur, f"INSERT INTO {t} (id, state, expires_at) VALUES (?, ?, ?)",
                                  key, State.PROCESSING.value, deadline)
                else:
                    self._execute(cur, f"UPDATE {t} SET state = ?, expires_at = ? WHERE id = ? "
                                  "AND (state = ? OR expires_at <= ?)", State.PROCESSING.value, deadline, key,
                                  State.ERROR.value, now)
            except integrity_error:  # another claimer inserted the row first
                conn.rollback()
                continue
            if cur.rowcount != 1:  # another claimer changed the row since it was read
                conn.rollback()
                continue
            conn.commit()
            return previous

    def _finish(self, key: str, state: State, expires_at: float) -> None:
        conn, t = self._connection(), self.table
        cur = conn.cursor()
        self._execute(cur, f"UPDATE {t} SET state = ?, expires_at = ? WHERE id = ?", state.value, expires_at, key)
        if cur.rowcount == 0:  # a purge took the expired PROCESSING of an attempt that overran
            self._execute(cur, f"INSERT INTO {t} (id, state, expires_at) VALUES (?, ?, ?)", key, state.value, expires_at)
        now = time.time()
        if now - self._purged_at >= self.purge_every_s:
            self._execute(cur, f"DELETE FROM {t} WHERE expires_at <= ?", now)
            self._purged_at = now
        conn.commit()

    def _get(self, key: str) -> State:
        conn = self._connection()
        row = self._execute(conn.cursor(), f"SELECT state, expires_at FROM {self.table} WHERE id = ?", key).fetchone()
        conn.rollback()
        return State.NONE if row is None else _live(row[0], row[1], time.time())

    def _guarded(self, fn: Callable[..., R], *args: Any) -> R:
        try:
            return fn(*args)
        except BaseException:
            if self._conn is not None:  # it may be broken: start afresh (closing rolls back)
                conn, self._conn = self._conn, None
                with contextlib.suppress(Exception):  # the error to report is the one above
                    conn.close()
            raise

    async def _run(self, fn: Callable[..., R], *args: Any) -> R:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._guarded, fn, *args)

    async def claim(self, key: str, now: float, deadline: float) -> State:
        return await self._run(self._claim, key, now, deadline)

    async def finish(self, key: str, state: State, expires_at: float) -> None:
        await self._run(self._finish, key, state, expires_at)

    async def get(self, key: str) -> State:
        return await self._run(self._get, key)

    async def close(self) -> None:
        def close() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        await self._run(close)
        self._executor.shutdown()
