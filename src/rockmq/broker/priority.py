"""Priority messages' queue layout (docs/priority.md), pure: a PRIORITY topic keeps its levels in
its queues, not in a per-message index.

A topic of `max_priority` M has M + 1 levels. On each broker its queue count is a multiple of
M + 1, and queue q holds level q % (M + 1) of lane q // (M + 1): queues 0..M are lane 0's levels
0..M, the next M + 1 lane 1's, and so on. A message of priority p goes to the queue of level p in
the lane its placement picked (the client's queue, or the broker's rotation), so offsets stay dense
per queue and a stored message is an ordinary log record. A POP look visits the levels highest
first (each level's lanes rotated); growing a topic by whole lanes keeps every queue's level, which
is why lanes are the outer dimension. Plain topics never come here.
"""

from __future__ import annotations

MAX_PRIORITY = 99  # the largest max_priority a topic may have: 100 levels, each one queue at least
DEFAULT_MAX_PRIORITY = 9  # TopicConfig.max_priority's default: what a create that names none gets


def check_max_priority(max_priority: int) -> str | None:
    """Why `max_priority` is not a topic's (None: it is fine)."""
    if not 1 <= max_priority <= MAX_PRIORITY:
        return f"max_priority must be 1..{MAX_PRIORITY}, not {max_priority}"
    return None


def queue_count(queues: int, max_priority: int) -> int:
    """`queues` rounded up to whole lanes: every level gets as many queues as any other."""
    levels = max_priority + 1
    return -(-queues // levels) * levels


def queue_of(hint: int, priority: int, max_priority: int) -> int:
    """The queue of level `priority` in the lane of queue `hint` (the placement's pick)."""
    return hint - hint % (max_priority + 1) + priority


def level_of(queue_id: int, max_priority: int) -> int:
    return queue_id % (max_priority + 1)


def visit_order(queues: int, max_priority: int, start_lane: int) -> list[int]:
    """The queues a look visits: highest level first, each level's lanes from `start_lane` on."""
    levels = max_priority + 1
    lanes = queues // levels
    return [((start_lane + i) % lanes) * levels + level for level in range(max_priority, -1, -1) for i in range(lanes)]
