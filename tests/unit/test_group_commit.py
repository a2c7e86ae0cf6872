"""Group commit: concurrent waiters share fsyncs, failures reach the waiters they covered."""

import asyncio
import threading
import time

import pytest
from waiting import wait_for

from rockmq.store.db import GroupCommit


class SlowFlush:
    """Stands in for `flush_wal(sync=True)`: takes a while, counts calls, can be made to fail."""

    def __init__(self, seconds: float = 0.005) -> None:
        self.seconds = seconds
        self.calls = 0
        self.fail = False
        self.lock = threading.Lock()

    def __call__(self) -> None:
        time.sleep(self.seconds)
        with self.lock:
            self.calls += 1
        if self.fail:
            raise OSError("disk on fire")


def test_concurrent_waiters_share_flushes():
    flush = SlowFlush()
    gc = GroupCommit(flush, None)

    async def run() -> None:
        await asyncio.wait_for(asyncio.gather(*(gc.sync() for _ in range(200))), 10)

    try:
        asyncio.run(run())
    finally:
        gc.stop()
    assert 1 <= flush.calls <= 3  # 200 waiters registered in one loop iteration


def test_sequential_waiters_each_get_a_flush_after_registering():
    flush = SlowFlush(0.001)
    gc = GroupCommit(flush, None)

    async def run() -> None:
        for expected in range(1, 6):
            await asyncio.wait_for(gc.sync(), 5)
            assert flush.calls >= expected

    try:
        asyncio.run(run())
    finally:
        gc.stop()


def test_a_failed_flush_fails_the_waiters_it_covered():
    flush = SlowFlush()
    flush.fail = True
    gc = GroupCommit(flush, None)

    async def run() -> None:
        with pytest.raises(OSError, match="disk on fire"):
            await asyncio.wait_for(gc.sync(), 5)

    try:
        asyncio.run(run())
    finally:
        gc.stop()


def test_interval_mode_flushes_periodically_without_waiters():
    flush = SlowFlush(0)
    gc = GroupCommit(flush, 0.01)
    try:
        wait_for(lambda: flush.calls >= 5, 2, 0.01, what="five interval flushes")
    finally:
        gc.stop()
