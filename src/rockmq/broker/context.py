"""What every broker service shares: settings, the store, metadata, queue logs and the secret."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rockmq.broker.metadata import GroupConfig, Metadata, TopicConfig
from rockmq.broker.queues import QueueLogs
from rockmq.config import Settings
from rockmq.store import Store, keys


@dataclass
class BrokerContext:
    settings: Settings
    store: Store
    meta: Metadata
    logs: QueueLogs
    secret: bytes

    @classmethod
    def open(cls, settings: Settings) -> BrokerContext:
        store = Store(settings.data_path, settings.flush, settings.flush_interval_ms)
        secret = store.get("meta", keys.SECRET_KEY)
        if secret is None:  # signs receipt and recall handles; stable across restarts
            secret = os.urandom(32)
            batch = store.batch()
            batch.put("meta", keys.SECRET_KEY, secret)
            store.write(batch)
        logs = QueueLogs(store, f"{settings.host}:{settings.port}")
        return cls(settings, store, Metadata(store), logs, secret)

    def topic_for_write(self, name: str) -> TopicConfig:
        """The named topic, created with the defaults if auto-creation is on."""
        topic = self.meta.topics.get(name)
        if topic is None and self.settings.auto_create_topics:
            return self.meta.create_topic(name, self.settings.default_queues)
        return topic or self.meta.topic(name)

    def group_for(self, name: str) -> GroupConfig:
        """The named group, created with the defaults if auto-creation is on."""
        group = self.meta.groups.get(name)
        if group is None and self.settings.auto_create_groups:
            return self.meta.create_group(name, fifo=False, max_attempts=self.settings.max_attempts)
        return group or self.meta.group(name)

    def dlq_topic(self, group: GroupConfig) -> TopicConfig:
        name = f"%DLQ%{group.name}"
        return self.meta.topics.get(name) or self.meta.create_topic(name, 1)
