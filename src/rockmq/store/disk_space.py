"""Room on the disk holding the store: sends stop before RocksDB runs out of space.

A write RocksDB cannot make for want of space stops the whole store (every write fails until its
own recovery, which polls the free space every 5 s, finds room for a memtable), and a memtable
flush or a compaction needs room of its own. So the broker keeps a reserve: once the free space
(`os.statvfs`) is under `disk_reserve_mib` plus what the memtables hold (which their next flush
writes out), sends are refused with TOO_MANY_REQUESTS, "disk full", which official clients back off
from and retry; nothing of a refused send is written. Everything else still writes into the
reserve (receives, acks, offsets: small), and reads never write. Should the disk fill anyway
(another process took the space), a write RocksDB refuses is the same DiskFull, not a crash, and
sends wait until an empty write goes through again. Each change of state is logged once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError
from rockmq.units import MiB

log = logging.getLogger(__name__)

LOOK_EVERY_S = 1.0  # the free space is read this often however few sends come (another process may fill the disk)
RELOOK_S = 0.05  # while full, a send reads it again at most this often: a retrying client finds the room back
# How RocksDB (and the OS) name a write that found no room.
_NO_SPACE = ("No space left on device", "Disk quota exceeded")


class DiskFull(BrokerError):
    """A write refused for want of disk space: TOO_MANY_REQUESTS, which clients retry after a back-off."""

    def __init__(self, message: str) -> None:
        super().__init__(pb.TOO_MANY_REQUESTS, message)


def log_failure(logger: logging.Logger, error: Exception, what: str, *args: object) -> None:
    """A background task's failed step, logged with its traceback, unless the disk is full (said
    once, by DiskSpace) or the broker may not write now (HA_NOT_AVAILABLE: a group's primary past
    its lease, said once when it steps down): the task tries again later."""
    if not isinstance(error, DiskFull) and not (isinstance(error, BrokerError) and error.code == pb.HA_NOT_AVAILABLE):
        logger.error(what, *args, exc_info=error)


def no_space(error: BaseException) -> bool:
    """`error` (a RocksDB status, an OSError) says the disk had no room."""
    text = str(error)
    return any(words in text for words in _NO_SPACE)


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still take on `path`'s file system."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class DiskSpace:
    """Whether sends may write. `room(size)`, before a send writes anything, raises DiskFull while
    the disk is full. Sends between two reads of the free space are counted against what was left
    above the reserve, so a burst cannot run through it; the space is read again once that is spent,
    and every LOOK_EVERY_S by `watch()`. Once full, the disk counts as having room again only with
    a margin (`resume_margin`) above the reserve, so a disk at the edge does not flap."""

    def __init__(self, path: Path, reserve: int, unflushed: Callable[[], int], probe: Callable[[], None]) -> None:
        self.path = path
        self.reserve = reserve  # bytes kept free beside what the memtables will write
        self.resume_margin = max(reserve // 8, MiB)
        self._unflushed = unflushed  # -> bytes the memtables hold now
        self._probe = probe  # an empty write: raises while RocksDB has stopped the store
        self.full = False
        self.stopped = False  # RocksDB refused a write: it takes none until an empty write goes through
        self._left = 0  # bytes sends may still write before the space is read again
        self._free = self._need = 0
        self._looked = 0.0
        self._why = ""
        self.refused = 0  # sends refused for want of space since start (/metrics)
        self.look()

    def room(self, size: int) -> None:
        """Refuse (DiskFull) a send of about `size` bytes that would eat into the reserve."""
        self._left -= size
        if self._left < 0:
            if time.monotonic() - self._looked >= RELOOK_S:
                self.look()
                self._left -= size
            if self._left < 0 and not self.full:  # this send would be the one to go under the reserve
                self._became(True, self._short())
            if self.full:
                self.refused += 1
                raise DiskFull(self._why)

    def look(self) -> None:
        """Read the free space and the memtables' size again; log it if the disk became full or has room again."""
        self._looked = time.monotonic()
        self._free = free_bytes(self.path)
        self._need = self.reserve + self._unflushed()
        self._left = self._free - self._need
        short = self._left < (self.resume_margin if self.full else 0)
        if self.stopped and not short:
            try:
                self._probe()
                self.stopped = False
            except Exception as e:
                if not no_space(e):
                    raise
        if not self.stopped:
            self._became(short, self._short() if short else "")
        if self.full:  # every send checks again until there is room
            self._left = -1

    def failed(self, error: BaseException) -> DiskFull:
        """RocksDB refused a write for want of space (`error`): it takes none until it recovered
        -> the error to raise."""
        self.stopped = True
        self._left = -1
        self._became(True, f"disk full: the store in {self.path} could not write ({' '.join(str(error).split())}); "
                           f"writes resume by themselves once there is room (retry later)")
        return DiskFull(self._why)

    def _short(self) -> str:
        return (f"disk full: {self._free // MiB} MiB free in {self.path}, the broker keeps {-(-self._need // MiB)} MiB; "
                f"sends are refused until there is room (retry later)")

    def _became(self, full: bool, why: str) -> None:
        if full and not self.full:
            log.warning("%s", why)
        elif self.full and not full:
            log.warning("disk space is back in %s (%d MiB free): sends are taken again", self.path, self._free // MiB)
        self.full = full
        if full:
            self._why = why

    async def watch(self) -> None:
        """Read the space every LOOK_EVERY_S, for as long as the broker runs."""
        while True:
            await asyncio.sleep(LOOK_EVERY_S)
            try:
                self.look()
            except OSError as e:  # the directory went away: the writes will say so
                log.warning("cannot read the free space of %s: %s", self.path, e.strerror)
