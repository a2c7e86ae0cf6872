"""A queue as clients name it, and the order every client agrees on. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Queue:
    """One queue of a topic on one broker (queue ids are per broker)."""

    topic: str
    broker: str
    endpoint: str
    queue_id: int
    writable: bool = True  # False: listed for readers only (a replica whose primary is out of reach)


def queue_order(queue: Queue) -> tuple[str, str, int, str]:
    """The order every client agrees on whatever order a route lists queues in: (topic, broker,
    queue_id), as RocketMQ sorts them."""
    return queue.topic, queue.broker, queue.queue_id, queue.endpoint
