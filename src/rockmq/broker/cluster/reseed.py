"""Re-seeding: a replica too far behind its primary to follow it takes a whole copy of the
primary's store, by itself, while it goes on serving reads from its own.

A primary keeps its recent batches only (replication.OpLog's ring): a replica that asks for an
older one is refused by Follow with FAILED_PRECONDITION, marked machine-readably in the
refusal's trailing metadata (`refuse_too_far_behind`, read back by `too_far_behind`). The replica
then calls Snapshot: the primary takes a consistent RocksDB checkpoint (hard links, in
DATA/.snapshot-<n>), streams its files and removes it, one at a time, within
SNAPSHOT_TIMEOUT_S (`Snapshots`). The replica downloads it into DATA/.reseed/, makes it its own
(`_make_own`: the marks that belong to the primary's history, not to a replica, removed), writes
the manifest (the files to take) durably, and asks to be restarted. The swap happens before the
store opens again (`prepare`), crash-safe because the manifest decides: without one the staging
directory is an unfinished download and goes; with one the swap is (re)done to its end — the old
store's RocksDB files not in the manifest removed, the manifest's moved in (a rename within one
file system), the manifest removed last. Files not RocksDB's (users.json, acl.json, LOCK, LOG,
IDENTITY) stay. The replica then follows from the copy's `repl/seq` by the ordinary path.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import shutil
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

import grpc

from rockmq.broker.stalled_streams import StalledStreams
from rockmq.broker.startup import CannotStart
from rockmq.plumbing.unparsed import UNPARSED, Unparsed
from rockmq.protocol import replication, replication_grpc
from rockmq.store import Store, keys
from rockmq.store.db import CannotOpenStore
from rockmq.store.disk_space import free_bytes
from rockmq.store.schema import Family, SchemaError
from rockmq.units import MiB
from rockmq.whole_file import fsync_path

log = logging.getLogger(__name__)

# The refusal both sides share: Follow's FAILED_PRECONDITION carries this pair in its trailing
# metadata when (and only when) the replica must be re-seeded.
REFUSAL_KEY = "rockmq-replication-refusal"
TOO_FAR_BEHIND = "too-far-behind"

SNAPSHOT_PREFIX = ".snapshot-"  # a primary's checkpoint being sent: DATA/.snapshot-<n>
STAGING = ".reseed"  # a replica's download: DATA/.reseed/
MANIFEST = "reseed.json"  # in STAGING: written once the copy is whole; its presence commits the swap
CHUNK_BYTES = MiB - 4096  # file bytes per message: the message, with its name, stays within 1 MiB
SNAPSHOT_TIMEOUT_S = 1800.0  # a copy not sent within this is abandoned (on both sides)
FAILED_RETRY_S = 10.0  # after a failed download (the primary gone, busy with another replica)
ROOM_RETRY_S = 60.0  # after finding too little disk space for the copy
MAKE_OWN_MEMORY_MIB = 16  # the store budget of the short open that makes the copy the replica's
# What a primary keeps for itself and never ships, so a following replica never holds it; a copy
# drops it, so that a re-seeded replica holds what a following one would: the marks of the primary's
# own history — promoted once (a replica holding it never follows again), its former primary (to be
# told of an epoch), fenced, followed by a replica (restarted, it waits to be confirmed) — and the
# footprints of its batches (store/footprints.py).
PRIMARY_ONLY_KEYS = (keys.PROMOTED_KEY, keys.FORMER_PRIMARY_KEY, keys.FENCED_KEY, keys.REPLICATED_KEY)
PRIMARY_ONLY_FAMILIES = (Family.FOOTPRINTS,)


# --- the refusal -------------------------------------------------------------------------------


async def refuse_too_far_behind(context: grpc.aio.ServicerContext[Any, Any], details: str,
                                also: tuple[tuple[str, str], ...] = ()) -> NoReturn:
    """End a Follow stream whose replica must be re-seeded: FAILED_PRECONDITION, marked so the
    replica knows without reading the words; `also`: more marks (a diverged replica's, truncation.py,
    which a replica that cannot truncate ignores: it re-seeds)."""
    await context.abort(grpc.StatusCode.FAILED_PRECONDITION, details,
                        trailing_metadata=((REFUSAL_KEY, TOO_FAR_BEHIND), *also))


def too_far_behind(error: grpc.aio.AioRpcError) -> bool:
    """Whether Follow refused the replica as too far behind to follow: the one test that starts a re-seed."""
    if error.code() != grpc.StatusCode.FAILED_PRECONDITION:
        return False
    return any(key == REFUSAL_KEY and value == TOO_FAR_BEHIND for key, value in error.trailing_metadata() or ())


# --- the primary's side ------------------------------------------------------------------------


class Snapshots:
    """Copies of the primary's store for replicas, one at a time: each a checkpoint in the data
    directory, removed when its stream ends however it ends (sent, timed out, the replica gone)."""

    def __init__(self, store: Store, streams: StalledStreams, fenced: Callable[[], bool]) -> None:
        self.store = store
        self.streams = streams  # a replica that stops reading is cut off, as on Follow
        self.fenced = fenced
        self.taking = False
        self._numbers = itertools.count(1)

    async def stream(self, request: replication.SnapshotRequest | Unparsed,
                     context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[replication.SnapshotChunk]:
        """The header (the file list, whose total the replica checks its free space against), then
        the files' bytes; the checkpoint's hard links hold disk space, so it never outlives the call."""
        if request is UNPARSED:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a SnapshotRequest's bytes do not parse")
        if self.fenced():
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                "this broker was superseded by a promoted replica: copy the new primary")
        if self.taking:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "another replica is taking a copy: retry later")
        self.taking = True
        path = self.store.path / f"{SNAPSHOT_PREFIX}{next(self._numbers)}"
        writes = self.streams.open(context, "Snapshot")
        writes.busy = True
        try:
            header = await self._checkpoint(path, context)
            log.info("a replica at batch %d takes a copy of the store: %d files, %.1f MiB", request.applied_seq,
                     len(header.files), header.total_bytes / MiB)
            yield replication.SnapshotChunk(header=header)
            deadline = asyncio.get_running_loop().time() + SNAPSHOT_TIMEOUT_S
            for f in header.files:
                for data in _read_chunks(path / f.name, f.size):
                    if asyncio.get_running_loop().time() > deadline:
                        await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED,
                                            f"the copy was not taken within {SNAPSHOT_TIMEOUT_S:.0f} s")
                    writes.count += 1
                    yield replication.SnapshotChunk(chunk=replication.FileChunk(name=f.name, data=data))
        finally:
            self.streams.close(writes)
            shutil.rmtree(path, ignore_errors=True)
            self.taking = False

    async def _checkpoint(self, path: Path, context: grpc.aio.ServicerContext[Any, Any]) -> replication.SnapshotHeader:
        """Take the checkpoint -> the list of its files; a refusal (the disk full) ends the call in one line."""
        try:
            self.store.checkpoint(path)
        except Exception as e:  # RocksDB's status comes as a bare Exception, a file's as OSError
            if type(e) is not Exception and not isinstance(e, OSError):
                raise
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"cannot take a copy of the store: {' '.join(str(e).split())}")
        files = [replication.SnapshotFile(name=p.name, size=p.stat().st_size) for p in sorted(path.iterdir())]
        return replication.SnapshotHeader(files=files, total_bytes=sum(f.size for f in files))


def _read_chunks(path: Path, size: int) -> Iterator[bytes]:
    """The first `size` bytes of a file (all a checkpoint's file holds: they do not change) in chunks.
    Read on the event loop: a thread's read could outlive a cancelled stream that closed the file."""
    with open(path, "rb") as f:
        left = size
        while left > 0:
            data = f.read(min(CHUNK_BYTES, left))
            if not data:
                raise OSError(f"{path.name} ended {left} bytes early")
            left -= len(data)
            yield data


# --- the replica's side ------------------------------------------------------------------------


class CopyRefused(Exception):
    """The primary's copy is not usable (its file list or its bytes do not add up): the message says why."""


@dataclass(frozen=True)
class Manifest:
    """What a finished download swaps in: its files, and what the completion line says."""

    files: list[str]
    seq: int  # the primary's last batch the copy holds: the replica follows from the one after
    primary: str
    total_bytes: int
    seconds: float


class Reseeder:
    """A replica's re-seeding: download the primary's copy into STAGING beside the store it keeps
    serving, make it the replica's, commit it with the manifest, and ask for the restart that swaps
    it in (`on_copied`). At most one copy per broker run; failures are retried after a pause."""

    def __init__(self, data: Path, reserve_bytes: int, on_copied: Callable[[], None]) -> None:
        self.data = data
        self.reserve = reserve_bytes
        self.on_copied = on_copied
        self.copied = False
        self._not_before = 0.0  # monotonic: no new attempt before this
        self._said_no_room = False  # said once, not at every retry

    async def reseed(self, stub: replication_grpc.ReplicationStub, primary: str, applied: int) -> None:
        """Called when Follow refused this replica as too far behind (`too_far_behind`)."""
        if self.copied or time.monotonic() < self._not_before:
            return
        request = replication.SnapshotRequest(applied_seq=applied)
        call: SnapshotCall = stub.Snapshot(request, timeout=SNAPSHOT_TIMEOUT_S)
        staging = self.data / STAGING
        try:
            first = await call.read()
            if not isinstance(first, replication.SnapshotChunk) or not first.HasField("header"):
                raise CopyRefused("the copy did not start with its file list")
            header = first.header
            if not self._room(primary, header.total_bytes):
                return
            started = time.monotonic()
            log.warning("re-seeding from %s: this replica applied batch %d, older than the primary keeps; copying its "
                        "store (%d files, %.1f MiB) into %s while serving reads from the old one", primary, applied,
                        len(header.files), header.total_bytes / MiB, staging)
            await _download(call, header, staging)
            seq = await asyncio.to_thread(_make_own, staging)
            seconds = round(time.monotonic() - started, 2)
            await asyncio.to_thread(commit, staging, seq, primary, header.total_bytes, seconds)
        except (grpc.aio.AioRpcError, OSError, CopyRefused, CannotOpenStore, SchemaError) as e:
            why = f"{e.code().name}: {e.details()}" if isinstance(e, grpc.aio.AioRpcError) else str(e)
            log.warning("re-seeding from %s failed (%s): the copy is dropped, next try in %.0f s", primary, why,
                        FAILED_RETRY_S)
            shutil.rmtree(staging, ignore_errors=True)
            self._not_before = time.monotonic() + FAILED_RETRY_S
        else:
            log.info("the copy from %s is whole (the primary's batch %d, %.1f s): restarting on it", primary, seq, seconds)
            self.copied = True
            self.on_copied()
        finally:
            call.cancel()

    def _room(self, primary: str, size: int) -> bool:
        """Whether the disk takes the copy beside the old store and the reserve; if not, say so once
        and wait ROOM_RETRY_S before asking the primary again."""
        free = free_bytes(self.data)
        if has_room(free, size, self.reserve):
            self._said_no_room = False
            return True
        if not self._said_no_room:
            log.error("cannot re-seed from %s: its copy takes %.1f MiB and %.1f MiB are free (reserve %.0f MiB): free "
                      "some space; trying again every %.0f s", primary, size / MiB, free / MiB, self.reserve / MiB,
                      ROOM_RETRY_S)
            self._said_no_room = True
        self._not_before = time.monotonic() + ROOM_RETRY_S
        return False


def has_room(free: int, size: int, reserve: int) -> bool:
    """A copy of `size` bytes fits when the disk keeps the reserve (disk_reserve_mib) beside it."""
    return free >= size + reserve


SnapshotCall = grpc.aio.UnaryStreamCall[replication.SnapshotRequest, replication.SnapshotChunk]


async def _download(call: SnapshotCall, header: replication.SnapshotHeader, staging: Path) -> None:
    """Write the copy's files into a fresh `staging`, checking each name and size against the
    header, then make them durable."""
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    expected = {f.name: f.size for f in header.files}
    if len(expected) != len(header.files) or not all(map(_plain, expected)):
        raise CopyRefused(f"the copy's file list is not a list of plain file names: {sorted(expected)[:5]}")
    got = dict.fromkeys(expected, 0)
    for name in expected:  # an empty file (a WAL with nothing in it) comes in no chunk
        (staging / name).touch()
    while isinstance(message := await call.read(), replication.SnapshotChunk):  # read(), as for the header: grpc
        chunk = message.chunk  # refuses a call read in two styles
        if chunk.name not in got or got[chunk.name] + len(chunk.data) > expected[chunk.name]:
            raise CopyRefused(f"the copy sent bytes of {chunk.name!r} it did not list")
        with open(staging / chunk.name, "ab") as f:
            f.write(chunk.data)
        got[chunk.name] += len(chunk.data)
    short = [name for name, size in got.items() if size != expected[name]]
    if short:
        raise CopyRefused(f"the copy ended before {len(short)} of its files were whole ({short[0]} first)")
    await asyncio.to_thread(_sync_files, staging, list(expected))


def _plain(name: str) -> bool:
    """A name that stays in the staging directory and is none of ours."""
    return bool(name) and "/" not in name and "\0" not in name and not name.startswith(".") and name != MANIFEST


def _make_own(staging: Path) -> int:
    """Open the downloaded copy as a store once (RocksDB replays its WAL into tables) and remove
    what is the primary's alone -> the primary's last batch it holds."""
    store = Store(staging, "sync", memory_mib=MAKE_OWN_MEMORY_MIB, disk_reserve_mib=0)
    try:
        batch = store.batch()
        for key in PRIMARY_ONLY_KEYS:
            batch.delete(Family.META, key)
        for family in PRIMARY_ONLY_FAMILIES:
            batch.delete_range(family, b"", b"\xff" * 64)
        store.write(batch)
        raw = store.get(Family.META, keys.REPLICATION_SEQ_KEY)
        return keys.decode_u64(raw) if raw is not None else 0
    finally:
        store.close()


def commit(staging: Path, seq: int, primary: str, total_bytes: int, seconds: float) -> None:
    """Commit the swap: the copy's store files (as the open in `_make_own` left them) made durable,
    then the manifest naming them written in one rename."""
    files = sorted(p.name for p in staging.iterdir() if is_store_file(p.name))
    _sync_files(staging, files)
    manifest = Manifest(files, seq, primary, total_bytes, seconds)
    tmp = staging / f"{MANIFEST}.tmp"
    with open(tmp, "w") as f:
        json.dump(asdict(manifest), f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, staging / MANIFEST)
    fsync_path(staging)


def _sync_files(directory: Path, names: list[str]) -> None:
    for name in names:
        fsync_path(directory / name)
    fsync_path(directory)


# --- the swap, before the store opens -----------------------------------------------------------


def is_store_file(name: str) -> bool:
    """A file that is part of a RocksDB store's contents (what a copy replaces): not LOCK (the
    broker's lock), LOG (RocksDB's own log), IDENTITY, nor any of ours (users.json, acl.json)."""
    return (name in ("CURRENT", "rocksdict-config.json") or name.startswith(("MANIFEST-", "OPTIONS-"))
            or name.endswith((".sst", ".blob", ".log", ".dbtmp")))


def read_manifest(staging: Path) -> Manifest | None:
    """The committed swap, or None (no manifest: an unfinished download)."""
    try:
        text = (staging / MANIFEST).read_text()
    except FileNotFoundError:
        return None
    try:
        return Manifest(**json.loads(text))
    except (ValueError, TypeError) as e:  # written in one rename: only a damaged disk gets here
        raise CannotStart(f"the re-seed manifest {staging / MANIFEST} cannot be read ({e}): remove {staging} to "
                          f"keep the old store, or fix the file") from None


def swap_steps(data: Path, staging: Path, manifest: Manifest) -> Iterator[str]:
    """The swap, one file operation per step (a generator, so a test can stop it after any step as
    a crash would). Every step can be done again: old store files not in the manifest removed, the
    manifest's files moved in (replacing the old ones of the same name), the directory synced, and
    only then the manifest removed, and the rest of the staging directory."""
    keep = set(manifest.files)
    for p in sorted(data.iterdir()):
        if p.is_file() and is_store_file(p.name) and p.name not in keep:
            p.unlink()
            yield f"removed {p.name}"
    for name in manifest.files:
        if (staging / name).exists():
            os.replace(staging / name, data / name)
            yield f"moved {name}"
    fsync_path(data)
    (staging / MANIFEST).unlink()
    yield "committed"
    shutil.rmtree(staging)
    yield "cleaned"


def prepare(data: Path) -> None:
    """Before the store opens: remove the checkpoints a primary was sending when it stopped, drop
    an unfinished download, and finish a committed swap."""
    if not data.is_dir():
        return
    for leftover in data.glob(f"{SNAPSHOT_PREFIX}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    staging = data / STAGING
    if not staging.is_dir():
        return
    manifest = read_manifest(staging)
    if manifest is None:
        shutil.rmtree(staging)
        log.info("an unfinished re-seed's download was removed: the store is as before it")
        return
    for _ in swap_steps(data, staging, manifest):
        pass
    log.warning("re-seeded from %s: the store is now its copy as of batch %d (%d files, %.1f MiB, copied in %.1f s)",
                manifest.primary, manifest.seq, len(manifest.files), manifest.total_bytes / MiB, manifest.seconds)
