"""A primary's footprints bring a replica from any batch it applied to the primary's present, with
the in-memory ring gone (a restart): puts, overwrites, deletes and range deletes after the replica's
batch end up exactly as on the primary (store/footprints.py, issue 33 §2)."""

from __future__ import annotations

import pytest

from rockmq.broker.cluster.replication import OpLog
from rockmq.store import Store, footprints, keys, oplog
from rockmq.store.schema import Family

SHIPPED = [f for f in Family if f is not Family.FOOTPRINTS]


def _contents(store: Store) -> dict[str, list[tuple[bytes, bytes]]]:
    return {f: list(store.scan(f, b"", b"\xff" * 64)) for f in SHIPPED}


def _write_history(primary: Store) -> list[bytes]:
    """Twelve batches of puts, overwrites, deletes and a range delete; -> each as shipped."""
    shipped = []
    for i in range(12):
        batch = primary.batch()
        batch.put(Family.LOG, b"q/%03d" % i, b"body %d" % i)
        batch.put(Family.OFFSETS, b"g", b"%d" % i)  # overwritten by every batch
        if i == 5:
            batch.delete(Family.LOG, b"q/001")
        if i == 8:
            batch.delete_range(Family.LOG, b"q/002", b"q/005")
        if i == 10:
            batch.put(Family.LOG, b"q/003", b"back again")
        primary.write(batch)
        shipped.append(oplog.encode(batch.ops or []))
    return shipped


@pytest.mark.parametrize("applied", [0, 1, 4, 8, 11, 12])
def test_catch_up_from_any_batch_gives_the_primary_state(tmp_path, applied):
    log = OpLog(64 << 20)
    primary = Store(tmp_path / "p", oplog=log)
    replica = Store(tmp_path / "r")
    try:
        log.start(primary)
        shipped = _write_history(primary)
        for data in shipped[:applied]:
            batch = replica.batch()
            batch.apply(oplog.decode(data))
            replica.write(batch)
        ops = footprints.catch_up(primary, applied, log.seq, 64 << 20)
        assert ops is not None
        batch = replica.batch()
        batch.apply(ops)
        replica.write(batch)
        assert _contents(replica) == _contents(primary)
        assert replica.get(Family.META, keys.REPLICATION_SEQ_KEY) == keys.encode_u64(log.seq)
    finally:
        primary.close()
        replica.close()


def test_no_catch_up_past_what_is_kept(tmp_path):
    log = OpLog(64 << 20)
    store = Store(tmp_path / "p", oplog=log)
    try:
        log.start(store)
        _write_history(store)
        assert footprints.catch_up(store, 3, log.seq, 10) is None, "values over the limit: a full copy instead"
        batch = store.batch()
        batch.delete_range_unshipped(Family.FOOTPRINTS, b"", footprints.key(5))
        store.write(batch)
        assert footprints.catch_up(store, 3, log.seq, 64 << 20) is None, "batch 4's keys are gone"
        assert footprints.catch_up(store, 4, log.seq, 64 << 20) is not None
    finally:
        store.close()


def test_footprints_span_what_the_ring_holds_across_restarts(tmp_path):
    """Bounded like the ring (by the batches' sizes), and the bound holds after a restart."""
    log = OpLog(4096)
    store = Store(tmp_path / "p", oplog=log)
    log.start(store)
    for i in range(200):
        batch = store.batch()
        batch.put(Family.LOG, b"k%d" % i, b"x" * 100)
        store.write(batch)
    store.close()
    store = Store(tmp_path / "p", oplog=(again := OpLog(4096)))
    try:
        again.start(store)
        held = footprints.kept(store)
        assert held[-1][0] == 200 and sum(size for _, size in held) <= 4096 * 9 // 8
        assert footprints.catch_up(store, held[0][0] - 1, 200, 64 << 20) is not None
    finally:
        store.close()


def test_a_batch_and_its_keys_are_encoded_in_one_pass_as_apart():
    ops = [(oplog.PUT, Family.LOG, b"k1", b"v" * 300), (oplog.DELETE, Family.DEDUP, b"k2", b""),
           (oplog.DELETE_RANGE, Family.META, b"a", b"b"), (oplog.PUT, Family.OFFSETS, b"", b"")]
    data, touched = oplog.encode_with_keys(ops)
    assert data == oplog.encode(ops)
    assert touched == oplog.encode([op if op[0] == oplog.DELETE_RANGE else (*op[:3], b"") for op in ops])
    assert oplog.touched(ops) == touched


def _follow(replica: Store, log: OpLog, shipped: list[bytes], first: int = 1) -> None:
    """Apply `shipped` (batches `first`...) as a Follower does, each with its footprint (OpLog.follow)."""
    log.load_footprints(replica)
    for seq, data in enumerate(shipped, first):
        ops = oplog.decode(data)
        batch = replica.batch()
        batch.apply(ops)
        log.follow(batch, seq, data, ops)
        replica.write(batch)
        log.followed(seq, len(data))


def test_a_replica_keeps_the_footprints_of_the_batches_it_applies_as_the_primary_does(tmp_path):
    """Elected, it catches a replica behind it up from them (no re-seed: the slow failovers of issue 30)."""
    primary = Store(tmp_path / "p", oplog=(log := OpLog(64 << 20)))
    replica = Store(tmp_path / "r", oplog=OpLog(64 << 20))
    try:
        log.start(primary)
        _follow(replica, OpLog(64 << 20), _write_history(primary))
        assert footprints.kept(replica) == footprints.kept(primary)
        assert list(replica.scan(Family.FOOTPRINTS, b"", b"\xff" * 9)) == list(primary.scan(Family.FOOTPRINTS, b"", b"\xff" * 9))
        for applied in range(12):
            assert footprints.catch_up(replica, applied, 12, 64 << 20) == footprints.catch_up(primary, applied, 12, 64 << 20)
    finally:
        primary.close()
        replica.close()


def test_a_replicas_footprints_are_bounded_as_a_primarys(tmp_path):
    replica = Store(tmp_path / "r")
    try:
        _follow(replica, OpLog(4096), [oplog.encode([(oplog.PUT, Family.LOG, b"k%d" % i, b"x" * 100)]) for i in range(200)])
        held = footprints.kept(replica)
        assert held[-1][0] == 200 and sum(size for _, size in held) <= 4096 * 9 // 8
    finally:
        replica.close()
