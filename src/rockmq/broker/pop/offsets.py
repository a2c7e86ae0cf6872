"""POP offsets: where a group's receives read each queue of a topic next, and which queue they start with.

The pop offset of (group, topic, queue) is the next log entry a receive looks at there. It lives in
the offsets family (under `keys.POPPED`; committed offsets, pull.py's, sit beside it) and is read
from the store once, then served from memory. A receive advances it in its own batch (`advance`)
and in memory only once that batch is written (`advanced`), so a failed write hands the same
messages out again rather than skipping them. Nothing else writes it; a deleted topic's stored
positions go with the topic (metadata.py), its cached ones here (`forget_topic`).

The rotation start is memory only: each receive of a (group, topic) starts one queue further on,
so no queue starves behind a busy one.
"""

from __future__ import annotations

from rockmq.broker.lite.topics import CACHED_POSITIONS, trim_lite
from rockmq.broker.queues import QueueLogs
from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.keys import POPPED
from rockmq.store.schema import Family


class PopOffsets:
    def __init__(self, store: Store, logs: QueueLogs) -> None:
        self._store = store
        self._logs = logs
        self._offsets: dict[tuple[int, int, int], int] = {}
        self._trim_at = CACHED_POSITIONS  # past it, lite topics' positions are dropped (trim_lite)
        self._cursor: dict[tuple[int, int], int] = {}

    def get(self, group_id: int, topic_id: int, queue_id: int) -> int:
        k = (group_id, topic_id, queue_id)
        off = self._offsets.get(k)
        if off is None:
            raw = self._store.get(Family.OFFSETS, keys.offset_key(group_id, topic_id, queue_id, POPPED))
            # A new group starts at the earliest retained message.
            off = keys.decode_u64(raw) if raw else self._logs.min_offset(topic_id, queue_id)
            self._offsets[k] = off
        return off

    @staticmethod
    def advance(batch: Batch, group_id: int, topic_id: int, queue_id: int, position: int) -> None:
        """Move a pop offset to `position` in `batch` (memory follows with `advanced`, once it is written)."""
        batch.put(Family.OFFSETS, keys.offset_key(group_id, topic_id, queue_id, POPPED), keys.encode_u64(position))

    def advanced(self, positions: dict[tuple[int, int, int], int]) -> None:
        """The batch that advanced these pop offsets ((group, topic, queue) -> position) was written."""
        self._offsets.update(positions)
        if len(self._offsets) > self._trim_at:
            self._trim_at = trim_lite(self._offsets, CACHED_POSITIONS)

    def rotate(self, group_id: int, topic_id: int, queues: int) -> int:
        """The queue this receive of the group starts with; the next one starts one further on."""
        start = self._cursor.get((group_id, topic_id), 0)
        self._cursor[(group_id, topic_id)] = (start + 1) % queues
        return start

    def forget_group(self, group_id: int) -> None:
        """A deleted group's cached positions (its id is never used again)."""
        self._offsets = {k: v for k, v in self._offsets.items() if k[0] != group_id}
        self._cursor = {k: v for k, v in self._cursor.items() if k[0] != group_id}

    def forget_topic(self, topic_id: int) -> None:
        """A deleted topic's positions (its id is never used again)."""
        self._offsets = {k: v for k, v in self._offsets.items() if k[1] != topic_id}
        self._cursor = {k: v for k, v in self._cursor.items() if k[1] != topic_id}
