"""The push consumer's flow control arithmetic: how many messages a pull asks for, and how many of
its reply a queue's cache takes, so that `max_cached_bytes` is a real "at most". Pure.

A pull asks rockmq for no more than the bytes left (BatchMessaging.Pull's `max_bytes`, counted in
serialized messages, so the bodies fit) and for no more messages than those bytes hold at the body
sizes seen so far (RocketMQ's PullMessage takes a count only); what a reply brings beyond the bytes
left is not taken, and the next pull starts at the first message not taken. The one exception is
a message larger than the whole limit: it is taken alone, when nothing else is cached, or it could
never be consumed.
"""

from __future__ import annotations

from collections.abc import Sequence

SMOOTHING = 0.2  # weight of the newest body size in the running typical size


def pull_size(room: int, bytes_left: int, typical_body: float) -> int:
    """How many messages to ask for: at most `room`, and as many as `bytes_left` holds at the
    typical body size seen so far (at least one; `room` while no size was seen)."""
    if typical_body <= 0:
        return room
    return max(1, min(room, int(bytes_left // typical_body)))


def fitting(sizes: Sequence[int], bytes_left: int, cache_empty: bool) -> int:
    """How many of a reply's messages (body sizes, in offset order) to take: the longest prefix
    within `bytes_left`, or the first one alone when nothing is cached."""
    total = 0
    for i, size in enumerate(sizes):
        total += size
        if total > bytes_left:
            return 1 if i == 0 and cache_empty else i
    return len(sizes)


def typical(previous: float, sizes: Sequence[int]) -> float:
    """The running typical body size after a reply's messages."""
    for size in sizes:
        previous = size if previous <= 0 else previous + SMOOTHING * (size - previous)
    return previous
