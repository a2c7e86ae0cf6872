"""The timer machinery on a real store: deadline loop wake-ups, atomic moves, counts, the floor."""

from __future__ import annotations

import asyncio
import os

import pytest
from waiting import wait_for

from rockmq.broker.clock import now_ms
from rockmq.broker.commit import Committer
from rockmq.broker.context import BrokerContext
from rockmq.broker.deadlines import DeadlineLoop
from rockmq.broker.timers import LATENESS_BOUNDS_MS, Lateness, TimerService
from rockmq.config import Settings
from rockmq.protocol import pb, records
from rockmq.protocol.errors import BrokerError
from rockmq.store import keys


@pytest.fixture
def ctx(tmp_path):
    c = BrokerContext.open(Settings(data_dir=str(tmp_path / "data")))
    yield c
    c.store.close()


def _timers(ctx: BrokerContext) -> TimerService:
    return TimerService(ctx, Committer(ctx.store, ctx.logs, ctx.settings, None))


def _message(topic: str, body: bytes, group: str | None = None) -> pb.Message:
    m = pb.Message(topic=pb.Resource(name=topic), body=body)
    m.system_properties.message_id = body.decode()
    if group:
        m.system_properties.message_group = group
    return m


def _schedule(ctx: BrokerContext, timers: TimerService, topic, body: bytes, due: int) -> str:
    batch = ctx.store.batch()
    handle = timers.schedule(batch, topic, _message(topic.name, body), due)
    ctx.store.write(batch)
    return handle


def test_lateness_histogram_buckets():
    late = Lateness()
    for ms in (0, 1, 2, 19, 20, 21, 6000):
        late.add(ms)
    by_bound = dict(zip((*LATENESS_BOUNDS_MS, -1), late.counts))
    assert by_bound[1] == 2 and by_bound[2] == 1 and by_bound[20] == 2 and by_bound[50] == 1 and by_bound[-1] == 1
    assert late.max_ms == 6000 and sum(late.counts) == 7


def test_move_is_atomic_ordered_and_leaves_later_timers(ctx):
    timers = _timers(ctx)
    topic = ctx.meta.create_topic("t", 2)
    now = now_ms()
    _schedule(ctx, timers, topic, b"b-due", now - 5)
    _schedule(ctx, timers, topic, b"a-due", now - 10)
    _schedule(ctx, timers, topic, b"later", now + 60_000)
    assert timers.pending.value == 3
    moved, nxt = timers.move_due()
    assert moved == 2 and nxt == now + 60_000 and timers.pending.value == 1
    stored = [records.decode(v) for q in range(2) for _, v in ctx.logs.scan(topic.id, q, 0, 10)]
    assert sorted(m.body for m in stored) == [b"a-due", b"b-due"]
    for m in stored:
        sp = m.system_properties
        assert sp.HasField("store_timestamp") and sp.HasField("queue_offset") and sp.body_digest.checksum
    assert timers.moved == 2 and timers.lateness.max_ms >= 5
    assert timers.move_due() == (0, now + 60_000)


def test_fifo_timers_go_to_their_groups_queue(ctx):
    timers = _timers(ctx)
    topic = ctx.meta.create_topic("fifo", 4)
    batch = ctx.store.batch()
    for i in range(3):
        timers.schedule(batch, topic, _message("fifo", f"m{i}".encode(), group="g1"), now_ms() - 1)
    ctx.store.write(batch)
    timers.move_due()
    queue = ctx.logs.choose_queue(topic, "g1")
    assert [records.decode(v).body for _, v in ctx.logs.scan(topic.id, queue, 0, 10)] == [b"m0", b"m1", b"m2"]


def test_count_survives_reopen_and_recall_updates_it(tmp_path):
    settings = Settings(data_dir=str(tmp_path / "data"))
    ctx = BrokerContext.open(settings)
    timers = _timers(ctx)
    topic = ctx.meta.create_topic("t", 1)
    handles = [_schedule(ctx, timers, topic, f"m{i}".encode(), now_ms() + 3_600_000) for i in range(5)]
    assert asyncio.run(timers.recall("t", handles[0])) == "m0"
    with pytest.raises(BrokerError) as e:
        asyncio.run(timers.recall("t", handles[0]))
    assert e.value.code == pb.NOT_FOUND
    ctx.store.close()

    ctx = BrokerContext.open(settings)
    try:
        timers = _timers(ctx)
        assert timers.pending.value == 4
        assert timers.next_due() is not None
    finally:
        ctx.store.close()


def test_scans_start_at_the_floor_and_a_past_timer_lowers_it(ctx):
    timers = _timers(ctx)
    topic = ctx.meta.create_topic("t", 1)
    now = now_ms()
    for i in range(2000):  # more than one move batch, all due
        _schedule(ctx, timers, topic, f"m{i}".encode(), now - 2000 + i % 1000)
    _schedule(ctx, timers, topic, b"the last one", now + 60_000)
    moved = 0
    while (step := timers.move_due())[1] != now + 60_000:
        moved += step[0]
    moved += step[0]
    assert moved == 2000 and timers.pending.value == 1
    assert timers.loop._floor > keys.deadline_bound(now), "the floor did not move up past the handled keys"
    _schedule(ctx, timers, topic, b"from the past", now - 60_000)
    assert timers.next_due() == now - 60_000, "a timer written below the floor was not seen"
    assert timers.move_due()[0] == 1


def test_deadline_loop_sleeps_until_due_and_wakes_early_on_note():
    async def scenario() -> list[int]:
        calls: list[int] = []
        pending: list[int] = []

        def step() -> tuple[int, int | None]:
            calls.append(now_ms())
            due = [d for d in pending if d <= now_ms()]
            for d in due:
                pending.remove(d)
            return len(due), min(pending) if pending else None

        loop = DeadlineLoop("test", step, 100)
        task = asyncio.create_task(loop.run())
        await asyncio.sleep(0.2)
        idle_calls = len(calls)  # nothing pending: one step, then sleep
        pending.append(now_ms() + 5_000)
        loop.note(pending[-1])
        await asyncio.sleep(0.05)
        soon = now_ms() + 100
        pending.append(soon)
        loop.note(soon)  # earlier than what it sleeps for: must wake for it
        while soon in pending and now_ms() < soon + 1000:
            await asyncio.sleep(0.005)
        task.cancel()
        assert idle_calls == 1, f"the idle loop stepped {idle_calls} times (a fixed tick?)"
        assert soon not in pending, "the earlier deadline was not handled"
        return calls

    calls = asyncio.run(scenario())
    assert len(calls) <= 5, f"too many steps for two deadlines: {len(calls)}"


def test_retention_binary_search_and_size_cut():
    from rockmq.broker.retention import first_to_keep, size_cut_ms

    times = {o: 1000 + 10 * o for o in range(100)}  # offset o stored at 1000 + 10 o
    assert first_to_keep(times.get, 0, 100, 1500) == 50
    assert first_to_keep(times.get, 0, 100, 0) == 0
    assert first_to_keep(times.get, 0, 99, 10_000) == 99  # everything old: up to the end given
    gone = {o: (None if o < 30 else t) for o, t in times.items()}  # removed meanwhile: treated as old
    assert first_to_keep(gone.get, 0, 100, 1500) == 50
    reads: list[int] = []
    assert first_to_keep(lambda o: reads.append(o) or times[o], 0, 100, 500) == 0 and reads == [0]  # nothing old: one read
    assert size_cut_ms(1000, 2000, 300, 0) is None and size_cut_ms(1000, 2000, 300, 400) is None
    assert size_cut_ms(1000, 2000, 400, 300) == 1250  # a quarter too much: the oldest quarter of the time
    assert size_cut_ms(1000, 1000, 400, 300) is None
    assert size_cut_ms(1000, 1001, 10_000, 9_999) == 1001  # always at least one ms of progress


YEAR_MS = 365 * 24 * 3600 * 1000


def test_moved_timers_free_their_blob_files(ctx):
    """Pending bodies live in blob files; once most of a file's timers fired, blob GC copies the
    rest and the space comes back (one in 20 stays pending, due in a year)."""
    timers = _timers(ctx)
    topic = ctx.meta.create_topic("t", 4)
    now = now_ms()
    for start in range(0, 40_000, 1000):
        batch = ctx.store.batch()
        for i in range(start, start + 1000):
            timers.schedule(batch, topic, _message("t", os.urandom(1024).hex().encode()), now + (YEAR_MS if i % 20 == 0 else 0))
        ctx.store.write(batch)
    ctx.store._db.flush()  # noqa: SLF001 - the bodies now sit in blob files

    def blob_files_bytes() -> int:  # on disk, garbage included
        return ctx.store._cf["timers"].property_int_value("rocksdb.live-blob-file-size")  # noqa: SLF001

    pending_bytes = blob_files_bytes()
    assert pending_bytes > 40_000 * 2048 * 0.9  # the bodies (hex: 2 KiB each), in blob files
    while timers.move_due()[0]:
        pass
    assert timers.pending.value == 2000
    # A compaction over the fired timers' tombstones tells RocksDB which blobs are garbage
    # (the broker's own writes cause these all the time; the test asks for one).
    asyncio.run(ctx.store.compact("timers", b"", b"\xff" * 17))
    def reclaimed() -> bool:
        ctx.store._db.flush()  # noqa: SLF001 - flushes are what let RocksDB schedule the garbage collecting compaction
        return blob_files_bytes() < pending_bytes * 0.2

    wait_for(reclaimed, 20, 0.2, what="the fired timers' blob files reclaimed")
