"""Idempotent consumption: the NONE → PROCESSING → SUCCESS / ERROR state machine over every store,
and the decorator's promises — success is skipped afterwards, a failure and a crashed attempt are
retried, a concurrent duplicate is refused."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

from rockmq.client.idempotent import SKIPPED, DuplicateInFlight, Idempotent, RedisStore, RocksDBStore, SQLStore, State
from rockmq.client.message import ReceivedMessage

StoreFactory = Callable[[], AbstractAsyncContextManager]


def message(message_id: str = "m1", **properties: str) -> ReceivedMessage:
    return ReceivedMessage(topic="t", body=b"x", message_id=message_id, tag=None, keys=(), properties=properties,
                           message_group=None, queue_id=0, offset=0, delivery_attempt=1, born_ms=0, store_ms=0,
                           receipt_handle="h", broker="b", endpoint="127.0.0.1:1")


@pytest.fixture(params=["rocksdb", "sql", "redis"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """A factory of stores, opened inside the test's event loop (an asyncio Redis client is bound to it)."""
    if request.param == "redis":
        fakeredis = pytest.importorskip("fakeredis", reason="fakeredis is not installed: pip install -e '.[test]'")

    @asynccontextmanager
    async def opened() -> AsyncIterator:
        if request.param == "rocksdb":
            store = RocksDBStore(tmp_path / "dedup")
        elif request.param == "sql":
            store = SQLStore(lambda: sqlite3.connect(tmp_path / "dedup.db"), purge_every_s=0)
        else:
            store = RedisStore(fakeredis.FakeAsyncRedis())
        try:
            yield store
        finally:
            if not isinstance(store, RedisStore):
                await store.close()
    return opened


def test_state_machine(open_store: StoreFactory):
    async def scenario():
        async with open_store() as store:
            now = time.time()
            assert await store.get("k") is State.NONE
            assert await store.claim("k", now, now + 60) is State.NONE
            assert await store.get("k") is State.PROCESSING
            assert await store.claim("k", now, now + 60) is State.PROCESSING, "a live claim was taken over"
            await store.finish("k", State.ERROR, now + 60)
            assert await store.get("k") is State.ERROR
            assert await store.claim("k", now, now + 60) is State.ERROR  # a failed attempt is claimed again
            assert await store.get("k") is State.PROCESSING
            # Long enough for the next two calls on a loaded machine (1 s was not, with scripts/test's two
            # workers busy on two cores); the wait after them ends just past the expiry, however long they took.
            expires = time.time() + 3.0
            await store.finish("k", State.SUCCESS, expires)
            assert await store.claim("k", time.time(), time.time() + 60) is State.SUCCESS
            assert await store.get("k") is State.SUCCESS
            await asyncio.sleep(max(0.0, expires - time.time()) + 0.1)
            assert await store.get("k") is State.NONE, "SUCCESS outlived its expiry"
            assert await store.claim("k", time.time(), time.time() + 60) is State.NONE
            assert await store.get("other") is State.NONE

    asyncio.run(scenario())


def test_success_is_skipped_afterwards(open_store: StoreFactory):
    calls: list[str] = []

    async def scenario():
        async with open_store() as store:
            @Idempotent(store, namespace="g")
            async def handle(m: ReceivedMessage) -> str:
                calls.append(m.message_id)
                return "done"

            assert await handle(message("m1")) == "done"
            assert await handle(message("m1")) is SKIPPED
            assert await handle(message("m2")) == "done"
            assert await store.get("g:m1") is State.SUCCESS

    asyncio.run(scenario())
    assert calls == ["m1", "m2"]


def test_failing_handler_is_retried(open_store: StoreFactory):
    calls = 0

    async def scenario():
        nonlocal calls
        async with open_store() as store:
            @Idempotent(store, namespace="g")
            async def handle(m: ReceivedMessage) -> str:
                nonlocal calls
                calls += 1
                if calls == 1:
                    raise RuntimeError("the database is down")
                return "done"

            with pytest.raises(RuntimeError):
                await handle(message())
            assert await store.get("g:m1") is State.ERROR
            assert await handle(message()) == "done"
            assert await handle(message()) is SKIPPED

    asyncio.run(scenario())
    assert calls == 2


def test_concurrent_duplicate_gets_duplicate_in_flight(open_store: StoreFactory):
    async def scenario():
        async with open_store() as store:
            inside, release = asyncio.Event(), asyncio.Event()

            @Idempotent(store, namespace="g")
            async def handle(m: ReceivedMessage) -> str:
                inside.set()
                await release.wait()
                return "done"

            first = asyncio.create_task(handle(message()))
            await inside.wait()
            with pytest.raises(DuplicateInFlight) as refused:
                await handle(message())
            assert refused.value.key == "g:m1" and refused.value.retriable
            release.set()
            assert await first == "done"
            assert await handle(message()) is SKIPPED

    asyncio.run(scenario())


def test_crashed_attempt_is_retried(open_store: StoreFactory):
    calls = 0

    async def scenario():
        nonlocal calls
        async with open_store() as store:
            idempotent = Idempotent(store, namespace="g", processing_timeout_s=1.0)

            @idempotent
            async def handle(m: ReceivedMessage) -> str:
                nonlocal calls
                calls += 1
                return "done"

            # A consumer claimed the message and died before finishing: PROCESSING until its deadline.
            assert await idempotent.claim("g:m1")
            with pytest.raises(DuplicateInFlight):
                await handle(message())
            await asyncio.sleep(1.1)
            assert await handle(message()) == "done"
            assert await handle(message()) is SKIPPED

    asyncio.run(scenario())
    assert calls == 1


def test_business_key_and_namespaces(open_store: StoreFactory):
    calls: list[tuple[str, str]] = []

    async def scenario():
        async with open_store() as store:
            def by_order(group: str) -> Callable:
                @Idempotent(store, namespace=group, key=lambda m: m.properties["order_id"])
                async def handle(m: ReceivedMessage) -> None:
                    calls.append((group, m.message_id))
                return handle

            billing, shipping = by_order("billing"), by_order("shipping")
            await billing(message("m1", order_id="o-7"))
            # The producer re-sent the order: a new message id, the same business key.
            assert await billing(message("m2", order_id="o-7")) is SKIPPED
            # Another consumer group has its own namespace: it processes the order too.
            await shipping(message("m2", order_id="o-7"))
            assert await store.get("billing:o-7") is State.SUCCESS

    asyncio.run(scenario())
    assert calls == [("billing", "m1"), ("shipping", "m2")]


def test_one_of_many_concurrent_claims_wins(open_store: StoreFactory):
    async def scenario():
        async with open_store() as store:
            for previous in (State.NONE, State.ERROR):
                if previous is State.ERROR:
                    await store.finish("k", State.ERROR, time.time() + 60)
                now = time.time()
                got = await asyncio.gather(*(store.claim("k", now, now + 60) for _ in range(16)))
                assert sorted(got) == sorted([previous] + [State.PROCESSING] * 15), got

    asyncio.run(scenario())


def test_sql_claims_race_across_connections(tmp_path: Path):
    """Stores on one database, as in several consumer processes: the guarded insert or update lets one win."""
    async def scenario():
        stores = [SQLStore(lambda: sqlite3.connect(tmp_path / "dedup.db", timeout=30)) for _ in range(4)]
        for round in range(20):
            key = f"k{round}"
            if round % 2:
                await stores[0].finish(key, State.ERROR, time.time() + 60)
            now = time.time()
            got = await asyncio.gather(*(s.claim(key, now, now + 60) for s in stores for _ in range(3)))
            assert sum(state in (State.NONE, State.ERROR) for state in got) == 1, got
        for s in stores:
            await s.close()

    asyncio.run(scenario())


def test_sync_handler_from_plain_code(tmp_path: Path):
    """A plain handler gets a plain wrapper: the sync client's users call it without asyncio."""
    store = SQLStore(lambda: sqlite3.connect(tmp_path / "dedup.db"))
    calls = 0

    @Idempotent(store, namespace="g")
    def handle(m: ReceivedMessage) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("bad input, this time")
        return "done"

    with pytest.raises(ValueError):
        handle(message())
    assert handle(message()) == "done"
    assert handle(message()) is SKIPPED
    assert calls == 2
    asyncio.run(store.close())


def test_namespace_cannot_contain_the_separator():
    with pytest.raises(ValueError):
        Idempotent(SQLStore(sqlite3.connect), namespace="a:b")


def test_rocksdb_survives_a_reopen_and_purges_in_bounded_steps(tmp_path: Path):
    async def scenario():
        store = RocksDBStore(tmp_path / "dedup")
        now = time.time()
        expiry = now + 1.0  # slack for a loaded machine: the reopen below must come before it
        for i in range(40):
            assert await store.claim(f"k{i}", now, now + 60) is State.NONE
            await store.finish(f"k{i}", State.SUCCESS, expiry)
        await store.finish("kept", State.SUCCESS, now + 60)
        await store.close()

        store = RocksDBStore(tmp_path / "dedup")
        assert await store.get("kept") is State.SUCCESS and await store.get("k3") is State.SUCCESS
        await asyncio.sleep(max(0.0, expiry + 0.1 - time.time()))
        count = lambda: sum(1 for _ in store._db.keys())  # noqa: E731
        assert count() == 41
        await store.finish("new", State.SUCCESS, time.time() + 60)
        assert count() >= 42 - RocksDBStore.PURGE_STEP, "one finish did unbounded work"
        for _ in range(10):
            await store.finish("new", State.SUCCESS, time.time() + 60)
        assert sorted(store._db.keys()) == [b"kept", b"new"]
        await store.close()

    asyncio.run(scenario())


def test_sql_purges_expired_rows(tmp_path: Path):
    async def scenario():
        store = SQLStore(lambda: sqlite3.connect(tmp_path / "dedup.db"), purge_every_s=0)
        now = time.time()
        await store.finish("old", State.SUCCESS, now - 1)
        await store.finish("new", State.SUCCESS, now + 60)
        await store.close()
        with sqlite3.connect(tmp_path / "dedup.db") as db:
            assert db.execute("SELECT id, state FROM rockmq_idempotent").fetchall() == [("new", "SUCCESS")]

    asyncio.run(scenario())


def test_redis_keys_expire_with_their_state():
    fakeredis = pytest.importorskip("fakeredis", reason="fakeredis is not installed: pip install -e '.[test]'")

    async def scenario():
        client = fakeredis.FakeAsyncRedis()
        store = RedisStore(client, prefix="p:")
        now = time.time()
        await store.claim("k", now, now + 30)
        assert 29_000 < await client.pttl("p:k") <= 30_000, "PROCESSING must vanish at its deadline"
        await store.finish("k", State.SUCCESS, time.time() + 3600)
        assert 3_599_000 < await client.pttl("p:k") <= 3_600_000

    asyncio.run(scenario())


def test_without_a_store_a_local_rocksdb_per_namespace_is_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from rockmq.client.idempotent import default_store_path

    monkeypatch.setenv("ROCKMQ_IDEMPOTENT_DIR", str(tmp_path / "dedup"))
    assert default_store_path("%RETRY%g/1") == tmp_path / "dedup" / "%25RETRY%25g%2F1"
    monkeypatch.delenv("ROCKMQ_IDEMPOTENT_DIR")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert default_store_path("billing") == tmp_path / "state" / "rockmq" / "idempotent" / "billing"
    assert default_store_path() == tmp_path / "state" / "rockmq" / "idempotent" / "_default"
    ran: list[str] = []

    async def scenario() -> None:
        once, again, other = Idempotent(namespace="billing"), Idempotent(namespace="billing"), Idempotent(namespace="audit")
        assert isinstance(once.store, RocksDBStore) and again.store is once.store and other.store is not once.store

        @once
        async def handle(m: ReceivedMessage) -> str:
            ran.append(m.message_id)
            return "done"

        assert await handle(message("m1")) == "done"
        assert await again(handle)(message("m1")) is SKIPPED
        assert await other.store.get("billing:m1") is State.NONE

    asyncio.run(scenario())
    assert ran == ["m1"]
    assert (tmp_path / "state" / "rockmq" / "idempotent" / "billing" / "CURRENT").exists()
