"""Synchronous wrappers: the asyncio clients driven from plain code. One event loop runs in one
background thread, started the first time a sync client is made; asyncio users never start it.
A forked child has no such thread (fork copies only the calling thread): it starts its own."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import Any, Self, TypeVar

from rockmq.client.consumer import AsyncSimpleConsumer, Filter
from rockmq.client.errors import BrokerRefused, RockmqError
from rockmq.client.limits import (
    BATCH_SIZE,
    DELIVERY_TIMEOUT_S,
    INVISIBLE_S,
    REQUEST_TIMEOUT_S,
    SYNC_CONSUME_TIMEOUT_S,
    SYNC_SEND_TIMEOUT_S,
)
from rockmq.client.message import Message, ReceivedMessage, SendReceipt
from rockmq.client.pull import PullResult
from rockmq.client.push import Handler
from rockmq.client.queues import Queue
from rockmq.client.session import Endpoints
from rockmq.client.spool import DEAD_LIST_LIMIT, DeadEntry
from rockmq.client.transaction import AsyncTransaction

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


def _forget_loop_in_child() -> None:
    """The parent's loop thread did not come along; its clients are unusable here, new ones work."""
    global _loop, _lock
    _loop, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_loop_in_child)


class _Sync:
    """Runs the wrapped client's coroutines on the background loop; every call has a deadline.
    (The asyncio clients touch no loop until their first call, so they are built right here.)"""

    _timeout: float
    _inner: Any

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result(timeout or self._timeout)

    def close(self) -> None:
        self._run(self._inner.close())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Producer(_Sync):
    """`Producer("127.0.0.1:8081").send(Message("orders", b"..."))` from plain code."""

    def __init__(self, endpoint: Endpoints, *, timeout: float = SYNC_SEND_TIMEOUT_S, **options: Any) -> None:
        """Options as AsyncProducer's. Its callbacks (`checker`, `on_dead`) are plain functions
        here and run in worker threads, so a slow one never stalls the shared event loop."""
        from rockmq.client.producer import AsyncProducer

        for name in ("checker", "on_dead"):
            if options.get(name) is not None:
                options[name] = _in_thread(options[name])
        # A send's retries end within the call's limit, so the caller hears why it failed (the last
        # attempt may take a request timeout), not only that the limit passed.
        last_attempt = options.get("request_timeout", REQUEST_TIMEOUT_S)
        options.setdefault("delivery_timeout", max(0.0, min(DELIVERY_TIMEOUT_S, timeout - last_attempt)))
        self._timeout = timeout
        self._inner: AsyncProducer = AsyncProducer(endpoint, **options)
        self._run(self._inner.start())  # replay the spool, open the transaction-check streams

    def send(self, message: Message, *, arg: Any = None) -> SendReceipt:
        """A message any queue will do for is first tried from this thread, over a blocking channel
        (AsyncProducer.aimed); its retries, and any other send, run on the background loop."""
        aimed = self._inner.aimed(message)
        if aimed is None:
            return self.send_async(message, arg=arg).result(self._timeout)
        request, queue = aimed
        try:
            return self._inner.sender.attempt_blocking(request, queue)
        except RockmqError as e:
            if not e.retriable:
                raise
            return self._run(self._inner.retry(message, arg, (queue.broker, e)))

    def send_batch(self, messages: Sequence[Message], *, arg: Any = None) -> list[SendReceipt]:
        return self._run(self._inner.send_batch(messages, arg=arg))

    def send_async(self, message: Message, *, arg: Any = None) -> Future[SendReceipt]:
        """A concurrent.futures.Future for the receipt (add_done_callback for a callback). The send
        joins the producer's accumulator in one hop to the loop, with no task of its own (submit)."""
        receipt: Future[SendReceipt] = Future()

        def submit() -> None:
            try:
                sent = self._inner.submit(message, arg=arg)
            except BaseException as e:  # noqa: BLE001 -- the caller's to see, not the loop's
                receipt.set_exception(e)
            else:
                sent.add_done_callback(lambda done: _hand_over(done, receipt))

        _background_loop().call_soon_threadsafe(submit)
        return receipt

    def send_oneway(self, message: Message, *, arg: Any = None) -> None:
        _background_loop().call_soon_threadsafe(lambda: self._inner.send_oneway(message, arg=arg))

    def recall(self, topic: str, recall_handle: str) -> str:
        return self._run(self._inner.recall(topic, recall_handle))

    def send_transactional(self, message: Message, *, arg: Any = None) -> Transaction:
        return Transaction(self._inner.send_transactional(message, arg=arg), self._run)

    def dead_spool(self, limit: int = DEAD_LIST_LIMIT) -> list[DeadEntry]:
        return self._run(self._inner.dead_spool(limit))

    def drain_spool(self, timeout: float) -> int:
        return self._run(self._inner.drain_spool(timeout), timeout + self._timeout)

    def forget_dead(self, entry_id: str) -> None:
        self._run(self._inner.forget_dead(entry_id))


class Transaction:
    """A sent half message (see AsyncTransaction): `commit()` or `rollback()`."""

    def __init__(self, sending: Coroutine[Any, Any, AsyncTransaction], run: Callable[..., Any]) -> None:
        self._run = run
        self._inner: AsyncTransaction = run(sending)
        self.receipt = self._inner.receipt

    @property
    def message_id(self) -> str:
        return self._inner.message_id

    @property
    def transaction_id(self) -> str:
        return self._inner.transaction_id

    def commit(self) -> None:
        self._run(self._inner.commit())

    def rollback(self) -> None:
        self._run(self._inner.rollback())


def _hand_over(done: asyncio.Future[T], to: Future[T]) -> None:
    """An asyncio future's outcome, to a concurrent one (a caller blocked in another thread)."""
    if done.cancelled():
        to.cancel()
    elif (error := done.exception()) is not None:
        to.set_exception(error)
    else:
        to.set_result(done.result())


def _in_thread(callback: Callable[..., T]) -> Callable[..., Coroutine[Any, Any, T]]:
    return lambda *args: asyncio.to_thread(callback, *args)


class _LiteConsumer(_Sync):
    """A consumer's lite subscriptions (subscribe_lite / unsubscribe_lite as the asyncio consumer's)."""

    def subscribe_lite(self, name: str, topic: str | None = None) -> None:
        self._run(self._inner.subscribe_lite(name, topic))

    def unsubscribe_lite(self, name: str, topic: str | None = None) -> None:
        self._run(self._inner.unsubscribe_lite(name, topic))


class SimpleConsumer(_LiteConsumer):
    def __init__(self, endpoint: Endpoints, group: str, subscriptions: dict[str, str | Filter], *,
                 timeout: float = SYNC_CONSUME_TIMEOUT_S, **options: Any) -> None:
        self._timeout = timeout
        self._inner: AsyncSimpleConsumer = AsyncSimpleConsumer(endpoint, group, subscriptions, **options)

    def receive(self, max_messages: int = BATCH_SIZE, invisible_s: float = INVISIBLE_S) -> list[ReceivedMessage]:
        return self._run(self._inner.receive(max_messages, invisible_s))

    def ack(self, message: ReceivedMessage) -> None:
        self._run(self._inner.ack(message))

    def ack_many(self, messages: Sequence[ReceivedMessage]) -> list[tuple[ReceivedMessage, BrokerRefused]]:
        return self._run(self._inner.ack_many(messages))

    def change_invisible_duration(self, message: ReceivedMessage, invisible_s: float) -> ReceivedMessage:
        return self._run(self._inner.change_invisible_duration(message, invisible_s))


class PushConsumer(_LiteConsumer):
    """Consumes from the moment it is made until `close()`; a plain-function handler runs on the
    consumer's worker threads (options as AsyncPushConsumer's)."""

    def __init__(self, endpoint: Endpoints, group: str, subscriptions: Mapping[str, str | Filter], handler: Handler, *,
                 timeout: float = SYNC_CONSUME_TIMEOUT_S, **options: Any) -> None:
        from rockmq.client.push import AsyncPushConsumer

        self._timeout = timeout
        self._inner: AsyncPushConsumer = AsyncPushConsumer(endpoint, group, subscriptions, handler, **options)
        self._run(self._inner.start())

    @property
    def assignment(self) -> list[Queue]:
        return self._inner.assignment


class PullConsumer(_Sync):
    """Reads queues by offset from plain code (methods as AsyncPullConsumer's)."""

    def __init__(self, endpoint: Endpoints, group: str, *, timeout: float = SYNC_CONSUME_TIMEOUT_S, **options: Any) -> None:
        from rockmq.client.pull import AsyncPullConsumer

        self._timeout = timeout
        self._inner: AsyncPullConsumer = AsyncPullConsumer(endpoint, group, **options)

    def queues(self, topic: str) -> list[Queue]:
        return self._run(self._inner.queues(topic))

    def pull(self, queue: Queue, offset: int, *, max_messages: int = BATCH_SIZE, filter: str | Filter = "*",
             poll_s: float = 0.0) -> PullResult:
        return self._run(self._inner.pull(queue, offset, max_messages=max_messages, filter=filter, poll_s=poll_s),
                         poll_s + self._timeout)

    def committed(self, queue: Queue) -> int | None:
        return self._run(self._inner.committed(queue))

    def commit(self, queue: Queue, offset: int) -> None:
        self._run(self._inner.commit(queue, offset))

    def offset_at(self, queue: Queue, where: str | datetime | int) -> int:
        return self._run(self._inner.offset_at(queue, where))
