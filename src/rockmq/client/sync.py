"""Synchronous wrappers: the asyncio clients driven from plain code. One event loop runs in one
background thread, started the first time a sync client is made; asyncio users never start it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from rockmq.client.consumer import AsyncSimpleConsumer, Filter
from rockmq.client.message import Message, ReceivedMessage, SendReceipt

T = TypeVar("T")
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="rockmq-client", daemon=True).start()
        return _loop


class _Sync:
    """Runs the wrapped client's coroutines on the background loop; every call has a deadline.
    (The asyncio clients touch no loop until their first call, so they are built right here.)"""

    _timeout: float
    _inner: Any

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result(timeout or self._timeout)

    def close(self) -> None:
        self._run(self._inner.close())

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Producer(_Sync):
    """`Producer("127.0.0.1:8081").send(Message("orders", b"..."))` from plain code."""

    def __init__(self, endpoint: str, *, timeout: float = 30.0, **options: Any) -> None:
        from rockmq.client.producer import AsyncProducer

        self._timeout = timeout
        self._inner: AsyncProducer = AsyncProducer(endpoint, **options)

    def send(self, message: Message, *, arg: Any = None) -> SendReceipt:
        return self._run(self._inner.send(message, arg=arg))

    def send_batch(self, messages: Sequence[Message], *, arg: Any = None) -> list[SendReceipt]:
        return self._run(self._inner.send_batch(messages, arg=arg))

    def send_async(self, message: Message, *, arg: Any = None) -> Future[SendReceipt]:
        """A concurrent.futures.Future for the receipt (add_done_callback for a callback)."""
        return asyncio.run_coroutine_threadsafe(self._inner.send(message, arg=arg), _background_loop())

    def recall(self, topic: str, recall_handle: str) -> str:
        return self._run(self._inner.recall(topic, recall_handle))


class SimpleConsumer(_Sync):
    def __init__(self, endpoint: str, group: str, subscriptions: dict[str, str | Filter], *, timeout: float = 60.0,
                 **options: Any) -> None:
        self._timeout = timeout
        self._inner: AsyncSimpleConsumer = AsyncSimpleConsumer(endpoint, group, subscriptions, **options)

    def receive(self, max_messages: int = 32, invisible_s: float = 30.0) -> list[ReceivedMessage]:
        return self._run(self._inner.receive(max_messages, invisible_s))

    def ack(self, message: ReceivedMessage) -> None:
        self._run(self._inner.ack(message))

    def change_invisible_duration(self, message: ReceivedMessage, invisible_s: float) -> ReceivedMessage:
        return self._run(self._inner.change_invisible_duration(message, invisible_s))
