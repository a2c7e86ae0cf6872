"""A former primary's tail — its batches after the one its successor's epoch began after — is undone
by one catch-up batch from the new primary (broker/cluster/truncation.py, issue 30 §3): afterwards it
holds exactly what the new primary holds, whatever the tail wrote (appends at offsets the new primary
filled with other messages, overwrites, deletes, a range delete, a topic's config)."""

from __future__ import annotations

from rockmq.broker.cluster.replication import OpLog
from rockmq.broker.cluster.truncation import ALL_FOOTPRINTS, dropped, tail
from rockmq.store import Store, footprints, keys, oplog
from rockmq.store.schema import Family

SHIPPED = [f for f in Family if f is not Family.FOOTPRINTS]
LIMIT = 64 << 20


def _contents(store: Store) -> dict[str, list[tuple[bytes, bytes]]]:
    return {f: list(store.scan(f, b"", b"\xff" * 64)) for f in SHIPPED}


def _write(store: Store, *ops: oplog.Op) -> bytes:
    batch = store.batch()
    batch.apply(list(ops))
    store.write(batch)
    return oplog.encode(batch.ops or [])


def _log(offset: int, topic: int = 7, queue: int = 0) -> bytes:
    return keys.log_key(topic, queue, offset)


def test_the_former_primarys_tail_ends_as_the_new_primary_holds_it(tmp_path):
    old_log, new_log = OpLog(LIMIT), OpLog(LIMIT)
    old, new = Store(tmp_path / "old", oplog=old_log), Store(tmp_path / "new", oplog=new_log)
    try:
        old_log.start(old)
        put, delete = oplog.PUT, oplog.DELETE
        shared = [_write(old, (put, Family.LOG, _log(i), b"m%d" % i), (put, Family.OFFSETS, b"g", b"%d" % i),
                         (put, Family.CHECKPOINTS, b"c%d" % i, b"in flight"), (put, Family.TIMERS, b"t%d" % i, b"due"))
                  for i in range(4)]
        for data in shared:  # the new primary applied the shared history: batches 1-4
            batch = new.batch()
            batch.apply(oplog.decode(data))
            new.write(batch)
        # the tail: appends, an overwrite, a delete, a range delete, a new topic's config
        _write(old, (put, Family.LOG, _log(4), b"tail 4"), (put, Family.LOG, _log(5), b"tail 5"),
               (put, Family.OFFSETS, b"g", b"tail"), (delete, Family.CHECKPOINTS, b"c1", b""))
        _write(old, (oplog.DELETE_RANGE, Family.TIMERS, b"t0", b"t3"), (put, Family.META, b"topic/x", b"cfg"),
               (put, Family.LOG, _log(0, queue=1), b"tail q1"))
        # the new primary's own batches, numbered from 5 as the tail's were
        new_log.start(new)
        _write(new, (put, Family.LOG, _log(4), b"new 4"), (put, Family.OFFSETS, b"g", b"new"))
        _write(new, (put, Family.DEDUP, b"d", b"1"))
        undo = tail(old, 4, old_log.seq)
        assert undo is not None
        line = dropped(undo, {})
        assert line.startswith("3 messages (topic#7/0 offsets 4-5, topic#7/1 offsets 0-0)"), line
        ops = footprints.catch_up(new, 4, new_log.seq, LIMIT, undo)
        assert ops is not None
        old_log.recording = False  # a replica now: it numbers nothing of its own
        batch = old.batch()
        batch.apply([*ops, ALL_FOOTPRINTS])
        old.write(batch)
        assert _contents(old) == _contents(new)
        assert old.get(Family.META, keys.REPLICATION_SEQ_KEY) == keys.encode_u64(new_log.seq)
        assert old.first_key(Family.FOOTPRINTS) is None, "its primary-era footprints describe batches it no longer holds"
    finally:
        old.close()
        new.close()


def test_a_tail_whose_footprints_are_not_all_kept_cannot_be_told(tmp_path):
    log = OpLog(LIMIT)
    store = Store(tmp_path / "s", oplog=log)
    try:
        log.start(store)
        for i in range(5):
            _write(store, (oplog.PUT, Family.LOG, _log(i), b"m"))
        batch = store.batch()
        batch.delete_range_unshipped(Family.FOOTPRINTS, footprints.key(3), footprints.key(4))  # a gap
        store.write(batch)
        assert tail(store, 1, 5) is None
        assert tail(store, 3, 5) is not None
        assert footprints.catch_up(store, 1, 5, LIMIT) is None, "a gap: a full copy instead"
    finally:
        store.close()
