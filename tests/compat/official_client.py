"""Helpers for driving the official RocketMQ 5 Python client (`rocketmq`, PyPI rocketmq-python-client).

Every client is a context manager that always shuts down, so no client thread outlives a test.
Every wait is bounded: `receive_until` and `wait_for` take a deadline in seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import waiting
from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    LitePushConsumer,
    LiteSimpleConsumer,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
)
from rocketmq.v5.exception import LiteSubscriptionQuotaExceededException

REQUEST_TIMEOUT_S = 3
AWAIT_S = 1  # SimpleConsumer long-polling time: whole seconds (the client puts it in Duration.seconds)
INVALID_RECEIPT_HANDLE = 40013

# Message.message_type codes as the client reports them
NORMAL, FIFO, DELAY, LITE = 1, 2, 3, 5


def _running(client: Any) -> Iterator[Any]:
    """Start an official client, and shut it down when its `with` block ends."""
    _thread_loop()
    client.startup()
    try:
        yield client
    finally:
        client.shutdown()


def _thread_loop() -> None:
    """Give this thread an open event loop if it has none. The official client creates its Telemetry
    stream's grpc.aio call in the thread that starts it, which takes that thread's event loop: an
    earlier test of the same process that ran asyncio.run() here leaves none, and the client's
    startup then fails ("There is no current event loop in thread 'MainThread'", seen once in CI)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_event_loop()
        except RuntimeError:
            loop = None
    if loop is None or loop.is_closed():
        asyncio.set_event_loop(asyncio.new_event_loop())


def config(endpoint: str, credentials: Credentials | None = None) -> ClientConfiguration:
    return ClientConfiguration(endpoint, credentials or Credentials(), request_timeout=REQUEST_TIMEOUT_S)


@contextlib.contextmanager
def producer(endpoint: str, *topics: str, credentials: Credentials | None = None, tls: bool = False) -> Iterator[Producer]:
    """`tls`: the client's own `tls_enable` (it verifies against GRPC_DEFAULT_SSL_ROOTS_FILE_PATH's CA)."""
    p = Producer(config(endpoint, credentials), tuple(topics) or None, tls_enable=tls)
    yield from _running(p)


@contextlib.contextmanager
def simple_consumer(endpoint: str, group: str, subscriptions: dict[str, str],
                    await_s: int = AWAIT_S, credentials: Credentials | None = None,
                    tls: bool = False) -> Iterator[SimpleConsumer]:
    subs = {topic: FilterExpression(expr) for topic, expr in subscriptions.items()}
    c = SimpleConsumer(config(endpoint, credentials), group, subs, await_duration=await_s, tls_enable=tls)
    yield from _running(c)


@contextlib.contextmanager
def push_consumer(endpoint: str, group: str, subscriptions: dict[str, str],
                  listener: MessageListener) -> Iterator[PushConsumer]:
    subs = {topic: FilterExpression(expr) for topic, expr in subscriptions.items()}
    c = PushConsumer(config(endpoint), group, listener, subs, consumption_thread_count=4)
    yield from _running(c)


@contextlib.contextmanager
def lite_push_consumer(endpoint: str, group: str, parent: str, listener: MessageListener,
                       credentials: Credentials | None = None) -> Iterator[LitePushConsumer]:
    """A LitePushConsumer bound to the LITE topic `parent`; startup() waits for the broker's Settings (10 s)."""
    c = LitePushConsumer(config(endpoint, credentials), group, parent, listener, consumption_thread_count=4)
    yield from _running(c)


@contextlib.contextmanager
def lite_simple_consumer(endpoint: str, group: str, parent: str, await_s: int = AWAIT_S,
                         credentials: Credentials | None = None) -> Iterator[LiteSimpleConsumer]:
    """A LiteSimpleConsumer bound to `parent`. Its startup() does not wait for the Settings reply:
    subscribe with `subscribe_lite`, which waits for it."""
    c = LiteSimpleConsumer(parent, config(endpoint, credentials), group, await_duration=await_s)
    yield from _running(c)


def subscribe_lite(consumer: LitePushConsumer | LiteSimpleConsumer, *names: str, settings_timeout: float = 10) -> None:
    """consumer.subscribe_lite(name) for each name. The first call is retried while the client still has
    quota 0, i.e. until the broker's Settings reply (which carries the quota) has reached it: a
    LiteSimpleConsumer does not wait for it at startup."""
    deadline = time.monotonic() + settings_timeout
    for i, name in enumerate(names):
        while True:
            try:
                consumer.subscribe_lite(name)
                break
            except LiteSubscriptionQuotaExceededException as e:
                if i > 0 or "quota: 0 " not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def make_message(topic: str, body: bytes, *, tag: str | None = None, keys: Iterable[str] = (),
                 properties: dict[str, str] | None = None, message_group: str | None = None,
                 delivery_timestamp: int | None = None, lite_topic: str | None = None) -> Message:
    m = Message()
    m.topic = topic
    m.body = body
    if lite_topic is not None:
        m.lite_topic = lite_topic
    if tag is not None:
        m.tag = tag
    for k in keys:  # the `keys` setter adds one key per assignment
        m.keys = k
    for k, v in (properties or {}).items():
        m.add_property(k, v)
    if message_group is not None:
        m.message_group = message_group
    if delivery_timestamp is not None:
        m.delivery_timestamp = delivery_timestamp
    return m


def send(p: Producer, topic: str, body: bytes, **kw) -> Message:
    """Send one message; returns the sent Message with message_id filled from the receipt."""
    m = make_message(topic, body, **kw)
    receipt = p.send(m)
    assert receipt.message_id, "send receipt without message id"
    assert receipt.message_id == m.message_id, (receipt.message_id, m.message_id)
    return m


def receive_until(consumer: SimpleConsumer, done: Callable[[list[Message]], bool], timeout: float,
                  invisible_s: int = 30, batch: int = 32) -> list[Message]:
    """Receive repeatedly until done(all received so far) or timeout seconds; returns everything received."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    while not done(got) and time.monotonic() < deadline:
        got.extend(consumer.receive(batch, invisible_s))
    return got


def receive_for(consumer: SimpleConsumer, seconds: float, invisible_s: int = 30, batch: int = 32) -> list[Message]:
    """Everything received during about `seconds` (at least one receive call)."""
    got: list[Message] = []
    deadline = time.monotonic() + seconds
    while True:
        got.extend(consumer.receive(batch, invisible_s))
        if time.monotonic() >= deadline:
            return got


def wait_for(predicate: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """`waiting.wait_for` answering False instead of failing: callers assert with their own message."""
    try:
        return bool(waiting.wait_for(predicate, timeout, step))
    except AssertionError:
        return False


class RecordingListener(MessageListener):
    """Records every consume call; `behaviour(message, calls_so_far_for_its_id)` decides the outcome.

    behaviour returns a ConsumeResult or raises.
    """

    def __init__(self, behaviour: Callable[[Message, int], ConsumeResult]) -> None:
        self.behaviour = behaviour
        self.lock = threading.Lock()
        self.calls: list[tuple[str, bytes, int, float]] = []  # message_id, body, delivery_attempt, monotonic time
        self.messages: list[Message] = []  # every message consumed, in consume order

    def consume(self, message: Message) -> ConsumeResult:
        with self.lock:
            previous = sum(1 for c in self.calls if c[0] == message.message_id)
            self.calls.append((message.message_id, message.body, message.delivery_attempt, time.monotonic()))
            self.messages.append(message)
        return self.behaviour(message, previous)

    def calls_for(self, message_id: str) -> list[tuple[str, bytes, int, float]]:
        with self.lock:
            return [c for c in self.calls if c[0] == message_id]


__all__ = ["ConsumeResult", "Message", "RecordingListener", "config", "lite_push_consumer", "lite_simple_consumer",
           "make_message", "producer", "push_consumer", "receive_for", "receive_until", "send", "simple_consumer",
           "subscribe_lite", "wait_for", "INVALID_RECEIPT_HANDLE", "NORMAL", "FIFO", "DELAY", "LITE", "AWAIT_S"]
