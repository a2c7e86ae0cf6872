"""Wait for a condition instead of sleeping a fixed time: fast when it comes early, a clear
failure when it never does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> T:
    """Call `predicate` until it returns something truthy, and return that; AssertionError
    naming `what` (or the predicate) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or getattr(predicate, '__name__', predicate)}")
        time.sleep(interval)


async def async_wait_for(predicate: Callable[[], T | Awaitable[T]], timeout: float = 10.0, interval: float = 0.02,
                         what: str = "") -> T:
    """`wait_for` for asyncio tests: the predicate may be a plain function or a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or getattr(predicate, '__name__', predicate)}")
        await asyncio.sleep(interval)
