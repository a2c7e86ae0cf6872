"""Queue allocation for a push consumer group: which of a topic's queues this member pulls.

A strategy is any callable `strategy(me, members, queues) -> my queues` (RocketMQ's
AllocateMessageQueueStrategy). There is no coordinator: every member computes its share from the same
inputs, so a strategy must be a pure function of them. Each one sorts (and de-duplicates) the members and
the queues itself, queues by (topic, broker, queue_id) as RocketMQ does, so the members' answers agree
whatever order the broker listed things in, cover every queue and never give a queue twice.
A member not in `members` gets nothing. Pure: no I/O.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence

from rockmq.client.queues import Queue, queue_order

Strategy = Callable[[str, Sequence[str], Sequence[Queue]], list[Queue]]


def _sorted_inputs(members: Sequence[str], queues: Sequence[Queue]) -> tuple[list[str], list[Queue]]:
    if isinstance(members, str):
        raise ValueError("members must be a sequence of client ids, not one string")
    if not all(isinstance(m, str) and m for m in members):
        raise ValueError(f"members must be non-empty client id strings, got {list(members)!r}")
    if not all(isinstance(q, Queue) for q in queues):
        raise ValueError("queues must be Queue objects")
    return sorted(set(members)), sorted(set(queues), key=queue_order)


def _block(index: int, count: int, items: list[Queue]) -> list[Queue]:
    """Member `index` of `count`: a contiguous block; the first len % count members get one extra."""
    size, extra = divmod(len(items), count)
    start = index * size + min(index, extra)
    return items[start:start + size + (index < extra)]


def average(me: str, members: Sequence[str], queues: Sequence[Queue]) -> list[Queue]:
    """AllocateMessageQueueAveragely: contiguous blocks, sizes differ by at most one (8 queues / 3 members
    -> 3, 3, 2). Contiguous blocks keep a member on one broker where possible."""
    ids, qs = _sorted_inputs(members, queues)
    return _block(ids.index(me), len(ids), qs) if me in ids else []


def average_by_circle(me: str, members: Sequence[str], queues: Sequence[Queue]) -> list[Queue]:
    """AllocateMessageQueueAveragelyByCircle: deal queues round robin, which spreads each member over brokers."""
    ids, qs = _sorted_inputs(members, queues)
    return qs[ids.index(me)::len(ids)] if me in ids else []


def _ring_hash(key: str) -> int:
    """A stable hash: every process, on every platform and Python version, must place keys alike
    (Python's hash() of a str is salted per process)."""
    return int.from_bytes(hashlib.md5(key.encode()).digest()[:8], "big")


class ConsistentHash:
    """AllocateMessageQueueConsistentHash with bounded loads: members sit on a hash ring as
    `virtual_nodes` points each, and each queue (in queue order) goes to the first member clockwise
    from its own hash that still has room. Room is the even share: every member gets
    len(queues) // len(members) queues or one more, as `average` does (a plain ring split 8 queues
    over 3 members 0/1/7). When a member joins or leaves, mostly the queues on its arcs move (about
    1/n of them, plus a few that overflow elsewhere), so fewer queues pause for a hand-over than
    with `average`."""

    def __init__(self, virtual_nodes: int = 100) -> None:
        if isinstance(virtual_nodes, bool) or not isinstance(virtual_nodes, int) or virtual_nodes < 1:
            raise ValueError(f"virtual_nodes must be a positive int, got {virtual_nodes!r}")
        self.virtual_nodes = virtual_nodes

    def __call__(self, me: str, members: Sequence[str], queues: Sequence[Queue]) -> list[Queue]:
        ids, qs = _sorted_inputs(members, queues)
        if me not in ids:
            return []
        ring = sorted((_ring_hash(f"{member}-{i}"), member) for member in ids for i in range(self.virtual_nodes))
        points = [point for point, _ in ring]
        size, extra = divmod(len(qs), len(ids))  # `extra` members get size + 1
        load = dict.fromkeys(ids, 0)
        mine = []
        for q in qs:
            at = bisect.bisect_left(points, _ring_hash(f"{q.topic}|{q.broker}|{q.queue_id}"))
            for step in range(len(ring)):  # total room is len(qs): some member has room left
                owner = ring[(at + step) % len(ring)][1]
                if load[owner] < size or (load[owner] == size and extra > 0):
                    extra -= load[owner] == size
                    load[owner] += 1
                    break
            if owner == me:
                mine.append(q)
        return mine

    def __repr__(self) -> str:
        return f"ConsistentHash(virtual_nodes={self.virtual_nodes})"


class ByConfig:
    """AllocateMessageQueueByConfig: a fixed, operator-written assignment, client id -> (broker, queue_id)
    pairs, for pinning consumers to queues by hand. Every member must be given the same mapping. Queues the
    mapping names but the route lacks are skipped; queues it does not name are left unconsumed, so the
    mapping must cover the topic for the group to read all of it."""

    def __init__(self, assignment: Mapping[str, Iterable[tuple[str, int]]]) -> None:
        self._owner: dict[tuple[str, int], str] = {}
        for client, pairs in assignment.items():
            if not isinstance(client, str) or not client:
                raise ValueError(f"client ids must be non-empty strings, got {client!r}")
            for pair in pairs:
                if (not isinstance(pair, tuple) or len(pair) != 2 or not isinstance(pair[0], str)
                        or isinstance(pair[1], bool) or not isinstance(pair[1], int) or pair[1] < 0):
                    raise ValueError(f"{client}: expected (broker, queue_id >= 0) pairs, got {pair!r}")
                other = self._owner.setdefault(pair, client)
                if other != client:
                    raise ValueError(f"queue {pair} is assigned to both {other!r} and {client!r}")

    def __call__(self, me: str, members: Sequence[str], queues: Sequence[Queue]) -> list[Queue]:
        ids, qs = _sorted_inputs(members, queues)
        return [q for q in qs if self._owner.get((q.broker, q.queue_id)) == me] if me in ids else []


def by_environment(index: int, queues_per_environment: int = 1) -> Strategy:
    """Environment isolation (several dev/test environments sharing one topic): environment `index`
    (1-based, "envIndex") owns queues [(index-1)*k, index*k) of the sorted queue list and shares them
    among its members like `average`. The consumers of one environment are one group of their own, so
    they pass their own members list. The producers of that environment must send to the same queues,
    i.e. index the same (topic, broker, queue_id)-sorted list.

    Raises ValueError when called on a topic with fewer than index*k queues: consuming nothing would
    silently hide the misconfiguration."""
    environment_slice(index, queues_per_environment)

    def strategy(me: str, members: Sequence[str], queues: Sequence[Queue]) -> list[Queue]:
        ids, qs = _sorted_inputs(members, queues)
        mine = environment_queues(qs, index, queues_per_environment)
        return _block(ids.index(me), len(ids), mine) if me in ids else []

    strategy.__name__ = strategy.__qualname__ = f"by_environment({index}, {queues_per_environment})"
    return strategy


def environment_slice(index: int, queues_per_environment: int) -> slice:
    """Environment `index`'s (1-based) positions in the sorted queue list."""
    for name, value in (("index", index), ("queues_per_environment", queues_per_environment)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return slice((index - 1) * queues_per_environment, index * queues_per_environment)


def environment_queues(queues: Sequence[Queue], index: int, queues_per_environment: int = 1) -> list[Queue]:
    """Environment `index`'s queues of a topic: the same for its producers (selectors.by_environment)
    and its consumers (by_environment above)."""
    part = environment_slice(index, queues_per_environment)
    ordered = sorted(queues, key=queue_order)
    if len(ordered) < part.stop:
        raise ValueError(f"environment {index} needs queues [{part.start}, {part.stop}) but the topic has only {len(ordered)}")
    return ordered[part]
