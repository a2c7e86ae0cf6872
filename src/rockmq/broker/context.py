"""What every broker service shares: settings, the store, metadata, queue logs and the secret."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from rockmq.broker import validate
from rockmq.broker.metadata import GroupConfig, Metadata, TopicConfig
from rockmq.broker.queues import AppendIndex, QueueLogs
from rockmq.broker.tally import Tally
from rockmq.broker.trace import Tracer
from rockmq.config import Settings
from rockmq.protocol import pb
from rockmq.protocol.conventions import check_name
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store, keys
from rockmq.store.schema import Family

UNSTORED_GROUP_ID = 0  # of a group served to a read and never stored (ids allocated start at 1)


def start_epoch(store: Store) -> tuple[bytes, int]:
    """A start of the broker on this store -> (its secret, made on the first start and stable
    after it: it signs receipt and recall handles; this start's epoch), both stored."""
    batch = store.batch()
    secret = store.get(Family.META, keys.SECRET_KEY)
    if secret is None:
        secret = os.urandom(32)
        batch.put(Family.META, keys.SECRET_KEY, secret)
    raw = store.get(Family.META, keys.EPOCH_KEY)
    epoch = (keys.decode_u64(raw) if raw else 0) + 1
    batch.put(Family.META, keys.EPOCH_KEY, keys.encode_u64(epoch))
    store.write(batch)
    return secret, epoch


def load_metadata(store: Store, settings: Settings) -> Metadata:
    """The topics and groups `store` holds, bounded by the settings' max_topics and max_groups."""
    return Metadata(store, settings.max_topics, settings.max_groups)


@dataclass
class BrokerContext:
    settings: Settings
    store: Store
    meta: Metadata
    logs: QueueLogs
    secret: bytes
    # Counts broker starts. Sequence numbers in keys (timers, retries) start at epoch << 40, so
    # they never repeat across restarts, whatever the wall clock does.
    epoch: int
    # A replica writes nothing of its own (only what it applies): no auto-creation, no registrations.
    read_only: bool = False
    # With authentication on: refuses (raises) auto-creating the named topic for the request's user.
    authorize_create: Callable[[str], None] | None = None
    # Set by the drain (SIGTERM, Broker.drain in broker/server.py): new sends and receives are refused, retriably.
    draining: bool = False
    tally: Tally = field(default_factory=Tally)  # what the services count for /metrics (broker/tally.py)

    @property
    def sequence_start(self) -> int:
        return self.epoch << 40

    @classmethod
    def open(cls, settings: Settings, store: Store | None = None, secret: bytes = b"", epoch: int = 0,
             read_only: bool = False, index: AppendIndex | None = None,
             authorize_create: Callable[[str], None] | None = None) -> BrokerContext:
        """The context over `store` (default: opened from the settings) and this start's
        secret and epoch (default: `start_epoch`); `index`: the queue logs' index of appends."""
        store = store or Store(settings.data_path, settings.flush, settings.flush_interval_ms,
                               memory_mib=settings.store_memory_mib, disk_reserve_mib=settings.disk_reserve_mib)
        if not secret:
            secret, epoch = start_epoch(store)
        logs = QueueLogs(store, f"{settings.host}:{settings.port}", index, Tracer(settings.trace_enabled, settings.trace_ttl_s))
        return cls(settings, store, load_metadata(store, settings), logs, secret, epoch, read_only, authorize_create)

    def ensure_topic(self, target: validate.Target) -> TopicConfig:
        """The topic validation resolved, created now (with its retry topic's group) if it is new.
        Called only once every check passed, so a refused request creates nothing."""
        if isinstance(target, TopicConfig):
            return target
        topic = self.meta.topics.get(target.name)
        if topic is not None:  # an earlier message of the same request created it
            return topic
        if self.read_only:
            raise BrokerError(pb.TOPIC_NOT_FOUND, f"topic {target.name!r} does not exist")
        self.may_create(target)
        if target.group is not None and target.group not in self.meta.groups:
            self.new_group(target.group)
        return self.meta.create_topic(target.name, target.queues)

    def may_create(self, target: validate.Target) -> None:
        """Refuses (FORBIDDEN, auth on) a request about to auto-create a topic its user may not create."""
        if self.authorize_create is not None and not isinstance(target, TopicConfig):
            self.authorize_create(target.name)

    @property
    def writable(self) -> bool:
        """Whether this broker writes state of its own: not a replica (it writes only what it
        applies), not a store that refuses writes (a fenced primary). Elsewhere a read (a pull, an
        assignment, a consumer's settings) is served without persisting what it implies (a new
        group, its consume mode, a filter's index): it would be refused, and so would the read."""
        return not self.read_only and not self.store.refusing_writes

    def refuse_if_draining(self) -> None:
        """Refuse a new send or receive while the broker drains: PROXY_TIMEOUT, which the official
        clients and rockmq's retry on another broker (a service answering gRPC codes: UNAVAILABLE)."""
        if self.draining:
            raise BrokerError(pb.PROXY_TIMEOUT, f"broker {self.settings.broker_name!r} is shutting down (draining): "
                                                "retry on another broker")

    def group_for(self, name: str) -> GroupConfig:
        """The named group, created with the defaults if auto-creation is on (for a request that
        writes anyway: where writes are refused, it is refused as they are)."""
        group = self.meta.groups.get(name)
        if group is None and self.settings.auto_create_groups and not self.read_only:
            return self.new_group(name)
        return group or self.meta.group(name)

    def group_to_read(self, name: str) -> GroupConfig:
        """The named group for a read: `group_for`'s where this broker is `writable`; elsewhere one
        it does not hold is served with the defaults (if auto-creation is on) and stored nowhere."""
        group = self.meta.groups.get(name)
        if group is not None or self.writable or not self.settings.auto_create_groups:
            return group or self.group_for(name)
        check_name("group", name)
        return GroupConfig(name, UNSTORED_GROUP_ID, max_attempts=self.settings.max_attempts)

    def new_group(self, name: str, fifo: bool = False, max_attempts: int = 0, consume_mode: str = "",
                  lite_wildcard: bool = False) -> GroupConfig:
        """Create a group; max_attempts 0: the broker's default."""
        return self.meta.create_group(name, fifo, max_attempts or self.settings.max_attempts, consume_mode,
                                      lite_wildcard)

    def dlq_topic(self, group: GroupConfig) -> TopicConfig:
        return self.ensure_topic(validate.dead_letter_topic(group.name, self.meta))
