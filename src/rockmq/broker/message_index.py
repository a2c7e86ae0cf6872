"""The key and id index: every message a queue stores, findable by its message id and by each of
its keys (docs/storage.md "The message index").

Written by the queue logs (broker/queues.py) into the append's own WriteBatch: an entry is exactly
as durable as its message, at the cost of one put per message plus one per key, no read and no
extra write. Entries are filed under the hour of the message's store time (`keys.INDEX_HOUR_MS`),
so retention drops whole hours with one range delete per topic (`trim`), and a lookup reads each
hour that can hold an answer: a multi-get of the id in every hour since the topic's oldest entry,
or per hour a range of the key's entries between two store times. An entry whose message
retention already removed (its queue cut mid-hour) is skipped by the reader, which reads the log.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family

HOUR_MS = keys.INDEX_HOUR_MS
_TOPIC_HOUR = struct.Struct(">II")


_INDEX = Family.INDEX  # a str, read once per entry


class MessageIndex:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._trimmed = 0  # hours before this one are gone (`trim`)
        # topic id -> (hour, its id head, its key head): a message's entries pack no head, and a
        # topic's messages mostly arrive in the same hour. One entry per topic appended to.
        self._heads: dict[int, tuple[int, bytes, bytes]] = {}

    def add(self, batch: Batch, topic_id: int, queue_id: int, offset: int, store_ms: int, message_id: str,
            message_keys: Sequence[str]) -> None:
        """Index a message being appended in `batch`."""
        hour = store_ms // HOUR_MS
        heads = self._heads.get(topic_id)
        if heads is None or heads[0] != hour:
            heads = self._heads[topic_id] = (hour, *keys.index_heads(topic_id, hour))
        put = batch.put
        put(_INDEX, keys.index_id_key(heads[1], message_id), keys.index_position(queue_id, offset))
        if message_keys:
            for entry in keys.index_key_entries(heads[2], store_ms, queue_id, offset, message_keys):
                put(_INDEX, entry, b"")

    def _hours(self, topic_id: int, from_ms: int, to_ms: int) -> range:
        """The hours of [from_ms, to_ms] that can hold entries of the topic (none before its oldest)."""
        first = self.store.first_key(Family.INDEX, keys.index_hour(topic_id, 0), keys.index_hour(topic_id + 1, 0))
        if first is None:
            return range(0)
        oldest = _TOPIC_HOUR.unpack_from(first)[1]
        return range(max(oldest, from_ms // HOUR_MS), to_ms // HOUR_MS + 1)

    def by_id(self, topic_id: int, message_id: str, now: int) -> list[tuple[int, int]]:
        """(queue, offset) of each message stored with this id (a resend after the de-duplication
        window is stored again), oldest first."""
        hours = self._hours(topic_id, 0, now)
        found = self.store.get_many(Family.INDEX, [keys.index_id_key(keys.index_heads(topic_id, h)[0], message_id)
                                                   for h in hours])
        return [keys.parse_index_position(raw) for raw in found if raw is not None]

    def by_key(self, topic_id: int, key: str, from_ms: int, to_ms: int, limit: int) -> list[tuple[int, int, int]]:
        """(store_ms, queue, offset) of the messages with this key stored in [from_ms, to_ms], oldest
        first, at most `limit` of them."""
        found: list[tuple[int, int, int]] = []
        for hour in self._hours(topic_id, from_ms, to_ms):
            prefix = keys.index_key_prefix(keys.index_heads(topic_id, hour)[1], key)
            lower, upper = keys.index_time_bound(prefix, from_ms), keys.index_time_bound(prefix, to_ms + 1)
            found.extend(keys.parse_index_key_tail(k) for k, _ in self.store.scan(Family.INDEX, lower, upper, limit - len(found)))
            if len(found) >= limit:
                break
        return found

    def trim(self, batch: Batch, topic_ids: Iterable[int], keep_from_ms: int) -> None:
        """Put into `batch` the removal of every entry of these topics filed in an hour that ended
        before `keep_from_ms` (retention removed all of those hours' messages); nothing if no hour
        ended since the last trim."""
        cut = keep_from_ms // HOUR_MS
        if cut <= self._trimmed:
            return
        for tid in topic_ids:
            batch.delete_range(Family.INDEX, keys.index_hour(tid, 0), keys.index_hour(tid, cut))
        self._trimmed = cut
