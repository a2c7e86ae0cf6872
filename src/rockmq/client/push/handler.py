"""Running the application's handler for a push consumer: at most `concurrency` at once, an async
handler on the event loop and a plain function on a pool of as many threads; a handler that raises
is a failed message (logged), never a dead loop."""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rockmq.client.message import ReceivedMessage
from rockmq.client.push.held import Held

log = logging.getLogger(__name__)

Handler = Callable[[ReceivedMessage], Any]


class HandlerRunner:
    """The handler, its `concurrency` slots and (a plain function) its thread pool."""

    def __init__(self, handler: Handler, concurrency: int) -> None:
        self._handler = handler
        self._concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency)
        self._is_async = inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__)
        self._executor: ThreadPoolExecutor | None = None

    def start(self) -> None:
        """The thread pool of a plain-function handler (made on start: a consumer never started has no threads)."""
        if not self._is_async:
            self._executor = ThreadPoolExecutor(self._concurrency, thread_name_prefix="rockmq-consume")

    def close(self) -> None:
        """Let the pool go without waiting: a handler still running past the grace time is abandoned."""
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    async def run(self, message: ReceivedMessage, held: Held | None = None, i: int = 0) -> bool:
        """The handler's verdict: True unless it raised. Message `i` of a held POP batch also notes
        there when its handler began and its verdict, for the batch's renewal rounds (here, not in
        a wrapper: a coroutine more per message is a measurable share of a fast handler's cost)."""
        async with self._slots:
            if held is not None:
                held.started[i] = time.monotonic()
            try:
                if self._is_async:
                    await self._handler(message)
                else:
                    await asyncio.get_running_loop().run_in_executor(self._executor, self._handler, message)
                ok = True
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("handler failed on message %s (attempt %d) of %s", message.message_id,
                              message.delivery_attempt, message.topic)
                ok = False
            if held is not None:
                held.verdicts[i] = ok
            return ok
