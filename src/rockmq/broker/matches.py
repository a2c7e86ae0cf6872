"""The match index written with every append: which filtered groups a new message matches.

Every registered filter (broker/subscriptions.py) of a topic sits in the topic's
`SubscriptionIndex`. `QueueLogs` calls `index_append` for each message appended to a topic in
`topics`, and each matching group gets a `matches` entry in the append's own batch. Built before
the queue logs (which take it), filled by `Subscriptions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from rockmq.filter.index import SubscriptionIndex
from rockmq.filter.sql import TAGS, compile_sql
from rockmq.protocol import pb, records
from rockmq.store import keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family


class MatchIndex:
    def __init__(self, filter_index_properties: str = "") -> None:
        # What the index looks up by hash: the tag and the configured properties.
        self._fields = (TAGS, *(f.strip() for f in filter_index_properties.split(",") if f.strip()))
        self.topics: dict[int, SubscriptionIndex] = {}  # topic id -> its registered filters
        self._sql_count: dict[int, int] = {}  # topic id -> SQL filters (which need the properties)

    def add(self, topic_id: int, group_id: int, sql: bool, expression: str) -> None:
        index = self.topics.get(topic_id)
        if index is None:
            index = self.topics[topic_id] = SubscriptionIndex(self._fields)
        index.add(group_id, compile_sql(expression) if sql else expression)
        self._sql_count[topic_id] = self._sql_count.get(topic_id, 0) + sql

    def remove(self, topic_id: int, group_id: int, sql: bool) -> None:
        index = self.topics[topic_id]
        index.remove(group_id)
        self._sql_count[topic_id] -= sql
        if not len(index):
            del self.topics[topic_id]
            del self._sql_count[topic_id]

    def index_append(self, batch: Batch, topic_id: int, queue_id: int, offset: int, sealed: bytes | memoryview,
                     props: Mapping[str, str] | None) -> None:
        """Put the message's match entries into `batch`. `props`: its user properties, if at hand."""
        index = self.topics.get(topic_id)
        if index is None:
            return
        view = records.view(sealed)
        if props is None:
            sql = self._sql_count[topic_id]  # protobuf parses the memoryview as it is: no copy
            props = pb.Message.FromString(view.rest).user_properties if sql else {}  # type: ignore[arg-type]
        for group_id in index.match(props, view.tag):
            batch.put(Family.MATCHES, keys.match_key(cast(int, group_id), topic_id, queue_id, offset), b"")
