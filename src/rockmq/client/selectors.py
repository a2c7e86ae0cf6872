"""Queue selectors: which queue of a topic a message goes to (the broker stores it in the queue
chosen). A selector is any callable `(queues, message, arg) -> queue`; these are the built-in
ones. Pure (RoundRobin keeps a counter)."""

from __future__ import annotations

import itertools
import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from rockmq.client.allocation import environment_queues, environment_slice
from rockmq.client.message import Message
from rockmq.client.queues import Queue, queue_order

Selector = Callable[[Sequence[Queue], Message, Any], Queue]


class RoundRobin:
    """The default: the next queue each time (so retries move to the next broker too)."""

    def __init__(self) -> None:
        self._counter = itertools.count()

    def __call__(self, queues: Sequence[Queue], message: Message, arg: Any = None) -> Queue:
        return queues[next(self._counter) % len(queues)]


def spreads(selector: Selector) -> bool:
    """A selector that only spreads load (any queue will do) may be steered around failing
    brokers; any other names a queue, so it is given the whole route."""
    return isinstance(selector, RoundRobin) or selector is at_random


def by_hash(queues: Sequence[Queue], message: Message, arg: Any = None) -> Queue:
    """The same key always picks the same queue: `arg`, else the message group, else the first key."""
    key = arg if arg is not None else message.message_group or (message.keys[0] if message.keys else message.topic)
    return queues[zlib.crc32(str(key).encode()) % len(queues)]


def at_random(queues: Sequence[Queue], message: Message, arg: Any = None) -> Queue:
    return random.choice(queues)


def by_index(queues: Sequence[Queue], message: Message, arg: Any = None) -> Queue:
    """`arg` is a queue index, taken modulo the number of queues (in the agreed queue order)."""
    return sorted(queues, key=queue_order)[int(arg) % len(queues)]


def by_environment(index: int, queues_per_environment: int = 1) -> Selector:
    """Environment isolation on one topic (docs/client.md, "Environment lanes"): environment `index` (1-based) sends only to
    its own queues, the ones `allocation.by_environment(index, ...)` gives its consumers."""
    environment_slice(index, queues_per_environment)
    turn = itertools.count()

    def select(queues: Sequence[Queue], message: Message, arg: Any = None) -> Queue:
        mine = environment_queues(queues, index, queues_per_environment)
        return mine[next(turn) % len(mine)]

    return select
