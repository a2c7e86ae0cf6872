"""Wait for a condition instead of sleeping a fixed time: done as soon as it holds, and a clear
failure naming what never happened."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> T:
    """Call `predicate` until it returns something truthy and return that; AssertionError after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        _check(deadline, timeout, what or predicate)
        time.sleep(interval)
    return value


async def async_wait_for(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> T:
    """`wait_for` inside a coroutine: the event loop keeps running while it waits."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        _check(deadline, timeout, what or predicate)
        await asyncio.sleep(interval)
    return value


def _check(deadline: float, timeout: float, what: object) -> None:
    if time.monotonic() >= deadline:
        raise AssertionError(f"timed out after {timeout} s waiting for {getattr(what, '__name__', what)}")
