"""Per-queue locks that keep FIFO consumer groups in order.

For a FIFO group a queue is *held* while any of its messages is in flight or waiting to be
redelivered: nothing later in that queue is handed out until those are acknowledged (or
dead-lettered), and waiting redeliveries go out in offset order once none is in flight. This
is stricter than per-message-group order (RocketMQ's orderly consumption does the same), and
it needs no state beyond two counters per held queue, rebuilt from the store at start.

The counters mirror the store (checkpoint entries and retries per queue), so each change is made
right after the write that makes it, with no await between: a change left for after an await
(an fsync, a replica) is skipped when the call is cancelled there, and the queue stays held for a
delivery the store no longer has until a restart (issue 33 §8).
"""

from __future__ import annotations

from rockmq.store.keys import LITE_QUEUE_BASE

Key = tuple[int, int, int]  # group_id, topic_id, queue_id


def in_order(group_fifo: bool, queue_id: int) -> bool:
    """Whether a group's deliveries of a queue hold it: every queue of a FIFO group, and every lite
    topic of any group (a lite topic is consumed in order: docs/lite-topics.md)."""
    return group_fifo or queue_id >= LITE_QUEUE_BASE


class FifoLocks:
    def __init__(self) -> None:
        self._inflight: dict[Key, int] = {}
        self._held: dict[Key, int] = {}

    @staticmethod
    def _bump(d: dict[Key, int], key: Key, delta: int) -> None:
        n = d.get(key, 0) + delta
        if n > 0:
            d[key] = n
        else:
            d.pop(key, None)

    def held(self, key: Key) -> bool:
        """True while the queue must not hand out new messages."""
        return key in self._held

    def redeliverable(self, key: Key) -> bool:
        """True when the queue's waiting redeliveries may go out (none in flight)."""
        return key not in self._inflight

    def delivered(self, key: Key, first_time: bool) -> None:
        self._bump(self._inflight, key, 1)
        if first_time:
            self._bump(self._held, key, 1)

    def revived(self, key: Key) -> None:
        """A checkpoint expired and the message now waits for redelivery."""
        self._bump(self._inflight, key, -1)

    def settled(self, key: Key, was_inflight: bool) -> None:
        """Acked, dead-lettered or dropped: the message no longer holds its queue."""
        if was_inflight:
            self._bump(self._inflight, key, -1)
        self._bump(self._held, key, -1)

    def forget(self, group_id: int, topic_id: int | None = None) -> None:
        """A group's holds (on one topic, or all): its deliveries and retries there were dropped
        (a reset, a deleted group)."""
        for d in (self._inflight, self._held):
            for key in [k for k in d if k[0] == group_id and topic_id in (None, k[1])]:
                del d[key]
