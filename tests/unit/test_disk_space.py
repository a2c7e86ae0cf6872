"""store/disk_space.py: when sends are refused for want of disk space, and when they are taken again.

The free space comes from a stand-in for os.statvfs (the file system is the one thing not ours); the
end-to-end behaviour on a real full disk is tests/chaos/test_chaos_disk_full.py's.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rockmq.protocol import pb
from rockmq.store import disk_space
from rockmq.store.disk_space import DiskFull, DiskSpace
from rockmq.units import MiB


class Disk:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, free: int) -> None:
        self.free = free
        self.looks = 0
        self.stopped = False  # what the probe finds: RocksDB still refusing writes
        monkeypatch.setattr(disk_space, "free_bytes", self._free)
        monkeypatch.setattr(disk_space, "RELOOK_S", 0.0)

    def _free(self, path: Path) -> int:
        self.looks += 1
        return self.free

    def probe(self) -> None:
        if self.stopped:
            raise Exception("IO error: No space left on device: While appending to file: 000004.log")


def space(disk: Disk, unflushed: int = 0) -> DiskSpace:
    return DiskSpace(Path("/data"), 32 * MiB, lambda: unflushed, disk.probe)


def test_sends_spend_what_was_left_then_the_space_is_read_again(monkeypatch, caplog):
    disk = Disk(monkeypatch, 100 * MiB)
    s = space(disk, unflushed=8 * MiB)  # keeps 40 MiB: 60 MiB may be sent before the next read
    for _ in range(60):
        s.room(MiB)
    assert disk.looks == 1 and not s.full
    disk.free = 41 * MiB  # what they wrote
    with caplog.at_level(logging.WARNING), pytest.raises(DiskFull) as refused:
        s.room(2 * MiB)  # spent: the space is read again, and this one would go under the reserve
    assert disk.looks == 2
    assert refused.value.code == pb.TOO_MANY_REQUESTS and refused.value.message.startswith("disk full: ")
    assert "the broker keeps 40 MiB" in refused.value.message
    with pytest.raises(DiskFull):
        s.room(1)
    assert [r.message for r in caplog.records if "disk full" in r.message] == [refused.value.message]  # said once


def test_the_disk_has_room_again_only_a_margin_above_the_reserve(monkeypatch, caplog):
    disk = Disk(monkeypatch, 20 * MiB)
    s = space(disk)
    assert s.full and s.resume_margin == 4 * MiB
    disk.free = 34 * MiB  # above the reserve, within the margin: still full
    s.look()
    assert s.full
    with caplog.at_level(logging.WARNING):
        disk.free = 37 * MiB
        s.look()
        s.room(MiB)
    assert not s.full
    assert len([r for r in caplog.records if "back" in r.message]) == 1


def test_after_rocksdb_refused_a_write_sends_wait_for_an_empty_write_to_go_through(monkeypatch):
    disk = Disk(monkeypatch, 100 * MiB)
    s = space(disk)
    disk.stopped = True
    error = s.failed(Exception("IO error: No space left on device: While appending to file: 000004.log"))
    assert isinstance(error, DiskFull) and "could not write" in error.message
    s.look()  # room on disk, but the store still refuses
    with pytest.raises(DiskFull):
        s.room(1)
    disk.stopped = False  # RocksDB's own recovery went through
    s.room(1)
    assert not s.full and not s.stopped


@pytest.mark.parametrize("text, full", [
    ("IO error: No space left on device: While appending to file: /d/000012.sst: No space left on device", True),
    ("IO error: Disk quota exceeded", True),
    ("Corruption: bad block", False),
])
def test_no_space(text, full):
    assert disk_space.no_space(Exception(text)) is full
