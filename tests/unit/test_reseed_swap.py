"""A re-seeded replica's swap (broker/cluster/reseed.py) is crash-safe: whatever step a crash
stops it at, the next start (`prepare`, before the store opens) either keeps the old store whole
(the copy was not committed) or ends with the copy whole, the replica's own files kept. Real
RocksDB stores on a temporary directory."""

from __future__ import annotations

import shutil
from pathlib import Path

import grpc
import pytest

from rockmq.broker.cluster import reseed
from rockmq.broker.startup import CannotStart
from rockmq.store import keys
from rockmq.store.db import Store
from rockmq.store.schema import Family

OWN_FILES = {"users.json": "{\"users\": []}", "acl.json": "{}"}  # the replica's, not the store's


def _store_with(path: Path, pairs: dict[bytes, bytes], footprints: int = 0) -> None:
    store = Store(path)
    try:
        batch = store.batch()
        for key, value in pairs.items():
            batch.put(Family.META, key, value)
        for seq in range(1, footprints + 1):
            batch.put(Family.FOOTPRINTS, keys.encode_u64(seq), b"footprint")
        store.write(batch)
    finally:
        store.close()


def _meta(path: Path, *names: bytes) -> list[bytes | None]:
    store = Store(path)
    try:
        return [store.get(Family.META, name) for name in names]
    finally:
        store.close()


@pytest.fixture
def replica(tmp_path: Path) -> Path:
    """A replica's data directory holding an old store and its own files, and a copy of a primary's
    store (a promoted one, followed: it carries the marks of its history and the footprints of its
    batches) downloaded and committed in STAGING."""
    data = tmp_path / "replica"
    _store_with(data, {b"old": b"1", keys.REPLICATION_SEQ_KEY: keys.encode_u64(3)})
    for name, text in OWN_FILES.items():
        (data / name).write_text(text)
    primary = tmp_path / "primary"
    _store_with(primary, {b"new": b"2", keys.REPLICATION_SEQ_KEY: keys.encode_u64(700), keys.PROMOTED_KEY: b"1",
                          keys.FENCED_KEY: keys.encode_u64(9), keys.FORMER_PRIMARY_KEY: b"127.0.0.1:1",
                          keys.REPLICATED_KEY: b"1"}, footprints=5)
    store = Store(primary)
    try:
        store.checkpoint(data / reseed.STAGING)  # what the download writes: the checkpoint's files
    finally:
        store.close()
    staging = data / reseed.STAGING
    assert reseed._make_own(staging) == 700
    reseed.commit(staging, 700, "127.0.0.1:1", 1, 0.5)
    return data


def _assert_swapped(data: Path) -> None:
    assert not (data / reseed.STAGING).exists()
    assert _meta(data, b"new", b"old", keys.REPLICATION_SEQ_KEY, *reseed.PRIMARY_ONLY_KEYS) == \
        [b"2", None, keys.encode_u64(700), *(None for _ in reseed.PRIMARY_ONLY_KEYS)]
    assert {name: (data / name).read_text() for name in OWN_FILES} == OWN_FILES
    store = Store(data)
    try:
        assert store.first_key(Family.FOOTPRINTS) is None  # never shipped: a following replica has none
    finally:
        store.close()


def test_a_committed_copy_is_swapped_in_whatever_step_a_crash_stopped_it_at(replica: Path, tmp_path: Path) -> None:
    manifest = reseed.read_manifest(replica / reseed.STAGING)
    assert manifest is not None and manifest.seq == 700
    whole = _copy(replica, tmp_path / "whole")
    steps = len(list(reseed.swap_steps(whole, whole / reseed.STAGING, manifest)))
    assert steps > 4
    for crash_after in range(steps + 1):
        data = _copy(replica, tmp_path / f"crash-{crash_after}")
        staging = data / reseed.STAGING
        done = reseed.swap_steps(data, staging, manifest)
        for _ in range(crash_after):
            next(done)
        reseed.prepare(data)  # the next start
        _assert_swapped(data)


def _copy(data: Path, to: Path) -> Path:
    shutil.copytree(data, to)
    return to


def test_an_uncommitted_download_is_dropped_and_the_old_store_kept(replica: Path) -> None:
    (replica / reseed.STAGING / reseed.MANIFEST).unlink()  # a crash before the manifest was written
    reseed.prepare(replica)
    assert not (replica / reseed.STAGING).exists()
    assert _meta(replica, b"old", b"new", keys.REPLICATION_SEQ_KEY) == [b"1", None, keys.encode_u64(3)]


def test_a_checkpoint_left_by_a_stopped_primary_is_removed(tmp_path: Path) -> None:
    data = tmp_path / "primary"
    _store_with(data, {b"k": b"v"})
    store = Store(data)
    try:
        store.checkpoint(data / f"{reseed.SNAPSHOT_PREFIX}4")
    finally:
        store.close()
    reseed.prepare(data)
    assert not list(data.glob(f"{reseed.SNAPSHOT_PREFIX}*"))
    assert _meta(data, b"k") == [b"v"]


def test_a_manifest_that_does_not_parse_stops_the_start(replica: Path) -> None:
    (replica / reseed.STAGING / reseed.MANIFEST).write_text("{not json")
    with pytest.raises(CannotStart, match="cannot be read"):
        reseed.prepare(replica)
    assert (replica / reseed.STAGING).exists()  # nothing decided for the operator


def test_only_rocksdb_files_are_the_stores() -> None:
    for name in ("000012.sst", "000013.blob", "000008.log", "CURRENT", "MANIFEST-000005", "OPTIONS-000007",
                 "rocksdict-config.json", "000009.dbtmp"):
        assert reseed.is_store_file(name), name
    for name in ("LOCK", "LOG", "LOG.old.1700000000", "IDENTITY", "users.json", "acl.json", reseed.STAGING):
        assert not reseed.is_store_file(name), name


def test_the_refusal_that_starts_a_reseed_is_read_from_its_metadata_not_its_words() -> None:
    marked = grpc.aio.Metadata((reseed.REFUSAL_KEY, reseed.TOO_FAR_BEHIND))

    def refusal(code: grpc.StatusCode, trailing: grpc.aio.Metadata, details: str = "re-seed it") -> grpc.aio.AioRpcError:
        return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailing, details)

    assert reseed.too_far_behind(refusal(grpc.StatusCode.FAILED_PRECONDITION, marked, "any words"))
    assert not reseed.too_far_behind(refusal(grpc.StatusCode.FAILED_PRECONDITION, grpc.aio.Metadata()))
    assert not reseed.too_far_behind(refusal(grpc.StatusCode.UNAVAILABLE, marked))


def test_a_copy_needs_its_size_and_the_reserve_free() -> None:
    assert reseed.has_room(free=150, size=100, reserve=50)
    assert not reseed.has_room(free=149, size=100, reserve=50)
