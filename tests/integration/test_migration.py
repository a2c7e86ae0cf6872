"""A data directory written by rockmq 0.1.0 (tests/fixtures/datadir-0.1.0.tar.gz, described in
tests/fixtures/README.md) opens with today's broker, is migrated once at start, and keeps all of
its state: messages, the pending timer, the half message, POP in-flight deliveries, the staged
chunk and the sink's last batch id.

The fixture's deadlines are real times: its staged chunk's ttl ran out an hour after it was made,
so the test re-stamps the chunk (in 0.1.0's layout) as if it had been staged just now; the in-flight
deliveries and the timer are checked for what they must be at the time the test runs.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from mqwire import Conn, code_name
from rocksdict import AccessType, Options, Rdict

from rockmq.protocol import admin, batch_grpc, pb, rpc
from rockmq.protocol import batch as batch_pb
from rockmq.store import keys
from rockmq.store.db import Store
from rockmq.store.schema import LEGACY_STAGING_PREFIX, SCHEMA_VERSION, Family, SchemaError

FIXTURE = Path(__file__).parent.parent / "fixtures" / "datadir-0.1.0.tar.gz"
MIGRATED = "storage schema migrated to version 2"
_HANDLE = struct.Struct(">IQ")  # 0.1.0's staged chunk handle: expiry bucket (minutes) · sequence


def _unpack(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path / "data"


def _open_raw(path: Path, read_only: bool = True) -> Rdict:
    names = [f for f in Rdict.list_cf(str(path)) if f != "default"]
    access = AccessType.read_only() if read_only else AccessType.read_write()
    return Rdict(str(path), options=Options(raw_mode=True), column_families={f: Options(raw_mode=True) for f in names},
                 access_type=access)


class Legacy:
    """What the test needs to know of the 0.1.0 directory, read in 0.1.0's layout."""

    def __init__(self, path: Path) -> None:
        db = _open_raw(path, read_only=False)
        txn = db.get_column_family("txn")
        pending = [k for k, v in txn.items() if not k.startswith(LEGACY_STAGING_PREFIX) and v[:1] == b"P"]
        assert len(pending) == 1
        self.transaction_id = pending[0].decode()
        chunk = LEGACY_STAGING_PREFIX + b"c"
        (old_handle,) = [k[len(chunk):] for k, _ in txn.items(from_key=chunk) if k.startswith(chunk)]
        _, seq = _HANDLE.unpack(old_handle)
        # Staged now with a one-hour ttl, as 0.1.0 named its chunks (moved under its new name).
        self.handle = _HANDLE.pack((int(time.time() * 1000) + 3_600_000) // 60_000 + 1, seq)
        for kind in (b"c", b"i"):
            value = txn[LEGACY_STAGING_PREFIX + kind + old_handle]
            del txn[LEGACY_STAGING_PREFIX + kind + old_handle]
            txn[LEGACY_STAGING_PREFIX + kind + self.handle] = value
        (self.timer_due_ms,) = {keys.deadline_of(k) for k in db.get_column_family("timers").keys()}
        (self.inflight_deadline_ms,) = {keys.deadline_of(k) for k in db.get_column_family("inflight").keys()}
        db.close()


def _stored(conn: Conn, topic: str) -> int:
    return sum(q.max_offset - q.min_offset for q in conn.describe_topic(topic).queues)


def _bodies(conn: Conn, topic: str) -> list[str]:
    return sorted(m.body.decode() for q in range(4) for m in conn.pull_all(topic, q))


def _publish(conn: Conn, sink: str, batch_id: int, chunks: list[batch_pb.StagedChunk]) -> batch_pb.PublishStagedResponse:
    reply = batch_grpc.BatchMessagingStub(conn.channel).PublishStaged(
        batch_pb.PublishStagedRequest(sink_id=sink, batch_id=batch_id, chunks=chunks), timeout=30)
    assert reply.status.code == pb.OK, reply.status
    return reply


def _migrations(broker: BrokerProcess) -> list[str]:
    return [line for line in broker.log if MIGRATED in line]


def test_a_0_1_0_data_directory_is_migrated_once_and_keeps_its_state(tmp_path: Path) -> None:
    data = _unpack(tmp_path)
    legacy = Legacy(data)
    broker = BrokerProcess(data).start()
    conn = Conn(broker.endpoint)
    try:
        assert len(_migrations(broker)) == 1, list(broker.log)
        assert "3 entries moved" in _migrations(broker)[0]  # the chunk, its index entry, the sink

        # Messages: 20 sent plus one published by the sink (and the timer's, once it is due).
        bodies = _bodies(conn, "orders")
        fired = "far-future" in bodies
        assert [b for b in bodies if b != "far-future"] == sorted([*(f"order-{i}" for i in range(20)), "published-1"])
        assert conn.describe_group("legacy-fifo").fifo

        # The timer: pending until its due time, then delivered.
        stats = conn.admin.GetTimerStats(admin.TimerStatsRequest(), timeout=10)
        if fired:
            assert time.time() * 1000 >= legacy.timer_due_ms and stats.pending == 0
        else:
            assert (stats.pending, stats.next_due_ms) == (1, legacy.timer_due_ms)

        # POP: 5 popped from queue 0, 3 acked. Until their invisible time runs out the other two
        # are in flight; after it they are delivered again. Never the acked ones.
        in_flight = time.time() * 1000 < legacy.inflight_deadline_ms - 30_000
        if in_flight:
            assert conn.describe_group("legacy-pop").inflight == 2
        expected_q0 = {(0, 5)} if in_flight else {(0, 3), (0, 4), (0, 5)}
        want = len(expected_q0) + 15 + fired
        got = conn.receive_n("legacy-pop", "orders", want, within=60, invisible_ms=60_000)
        positions = {(m.system_properties.queue_id, m.system_properties.queue_offset) for m in got}
        assert len(positions) == len(got) == want
        assert {p for p in positions if p[0] == 0 and p[1] <= 5} == expected_q0

        # The sink's last batch id is 7: a replay of batch 7 publishes nothing.
        replay = _publish(conn, "legacy-sink", 7, [])
        assert (replay.duplicate, replay.published) == (True, 0)

        # The staged chunk, published as a new batch of a new sink, moves its 2 messages.
        before = _stored(conn, "orders")
        moved = _publish(conn, "migrated-sink", 0, [batch_pb.StagedChunk(handle=legacy.handle, count=2)])
        assert (moved.duplicate, moved.published) == (False, 2)
        assert _stored(conn, "orders") == before + 2
        assert {"staged-1", "staged-2"} <= set(_bodies(conn, "orders"))

        # The half message: still undecided, and committing it delivers it.
        assert stats.half_messages == 1
        reply = conn.mq.EndTransaction(rpc.EndTransactionRequest(
            topic=pb.Resource(name="orders"), transaction_id=legacy.transaction_id, resolution=pb.COMMIT,
            source=pb.SOURCE_CLIENT), timeout=10)
        assert code_name(reply.status.code) == "OK", reply.status
        assert "half-message" in _bodies(conn, "orders")
        assert conn.admin.GetTimerStats(admin.TimerStatsRequest(), timeout=10).half_messages == 0
        total = _stored(conn, "orders")

        # A restart runs no migration again, and everything is where it was.
        conn.close()
        broker.stop()
        broker.log.clear()
        broker.start()
        conn = Conn(broker.endpoint)
        assert _migrations(broker) == [], list(broker.log)
        assert _stored(conn, "orders") == total
        assert _publish(conn, "migrated-sink", 0, []).duplicate
    finally:
        conn.close()
        broker.stop()

    store = Store(data)
    try:
        assert keys.decode_u64(store.get(Family.META, keys.SCHEMA_VERSION_KEY) or b"") == SCHEMA_VERSION
        assert list(store.scan_prefix(Family.TXN, LEGACY_STAGING_PREFIX)) == []
        assert store.get(Family.STAGING, keys.SINK_STATE + b"legacy-sink") is not None
    finally:
        store.close()


def test_migration_runs_once_in_one_write(tmp_path: Path) -> None:
    """Opening the legacy directory twice moves its staging entries once; the txn family keeps
    only transactions."""
    data = _unpack(tmp_path)
    before = _open_raw(data)
    txn_before = dict(before.get_column_family("txn").items())
    before.close()
    for _ in range(2):
        store = Store(data)
        try:
            staged = dict(store.scan(Family.STAGING, b"", b"\xff"))
            txn = dict(store.scan(Family.TXN, b"", b"\xff"))
        finally:
            store.close()
        assert staged == {k[len(LEGACY_STAGING_PREFIX):]: v for k, v in txn_before.items()
                          if k.startswith(LEGACY_STAGING_PREFIX)}
        assert txn == {k: v for k, v in txn_before.items() if not k.startswith(LEGACY_STAGING_PREFIX)}
        assert len(staged) == 3 and len(txn) == 1


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "data")
    batch = store.batch()
    batch.put(Family.META, keys.SCHEMA_VERSION_KEY, keys.encode_u64(SCHEMA_VERSION + 1))
    store.write(batch)
    store.close()
    with pytest.raises(SchemaError, match=f"storage schema {SCHEMA_VERSION + 1}, newer than"):
        Store(tmp_path / "data")
    serve = subprocess.run([sys.executable, "-m", "rockmq", "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir",
                            str(tmp_path / "data")], capture_output=True, text=True, timeout=60, check=False)
    assert serve.returncode == 1 and "Traceback" not in serve.stderr, serve.stderr
    assert "newer than this rockmq's" in serve.stderr.strip().splitlines()[-1]
    Store(tmp_path / "data2").close()  # a new directory starts at the current version, no migration
