"""A group's position moved, its configuration changed, the group deleted (`rockmq group
reset|update|delete`), on this broker; cluster/admin_fanout.py asks the others.

A reset moves the group's POP offset and, for a group that commits offsets (pull), its committed
offset on every queue of the topic to the same place, and drops what the group had in flight
there: deliveries (their receipt handles go stale), waiting retries and FIFO holds; a filtered
group's matches on the topic go too (they were trimmed below its old position), its next receive
registers the filter again. Nothing of other topics or other groups changes.
"""

from __future__ import annotations

from rockmq.broker.clients import Clients
from rockmq.broker.context import BrokerContext
from rockmq.broker.metadata import OFFSET, GroupConfig, TopicConfig
from rockmq.broker.pop.service import PopService
from rockmq.broker.pull import PullService
from rockmq.broker.retention import first_to_keep, stored_at
from rockmq.broker.subscriptions import Subscriptions
from rockmq.protocol import admin, pb
from rockmq.protocol.conventions import dlq_topic, retry_topic
from rockmq.protocol.errors import BrokerError
from rockmq.store import keys
from rockmq.store.keys import COMMITTED
from rockmq.store.schema import Family

EARLIEST, LATEST, TIME = "earliest", "latest", "time"


def in_use(group: str, client_ids: list[str]) -> BrokerError:
    """The refusal of a delete of a group whose consumers are connected."""
    return BrokerError(pb.PRECONDITION_FAILED, f"group {group!r} has {len(client_ids)} connected consumers "
                                               f"(e.g. {client_ids[0]}): stop them, or delete with --force")


class GroupAdmin:
    def __init__(self, ctx: BrokerContext, pop: PopService, pull: PullService, subscriptions: Subscriptions,
                 clients: Clients) -> None:
        self.ctx = ctx
        self.pop = pop
        self.pull = pull
        self.subscriptions = subscriptions
        self.clients = clients

    def target(self, topic: TopicConfig, queue_id: int, to: str, timestamp_ms: int) -> int:
        """Where a reset puts the group on one queue: its first or next offset, or the first
        message stored at or after `timestamp_ms`."""
        logs = self.ctx.logs
        lo, hi = logs.min_offset(topic.id, queue_id), logs.max_offset(topic.id, queue_id)
        if to == EARLIEST:
            return lo
        if to == LATEST:
            return hi
        if to == TIME:
            return first_to_keep(stored_at(logs, topic.id, queue_id), lo, hi, timestamp_ms)
        raise BrokerError(pb.BAD_REQUEST, f"reset to {to!r}? use {EARLIEST}, {LATEST} or {TIME}")

    def reset(self, request: admin.ResetOffsetRequest) -> GroupConfig:
        """Move the group on every queue of the topic (see the module's docstring) -> the group."""
        group, topic = self.ctx.meta.group(request.group), self.ctx.meta.topic(request.topic)
        targets = {(group.id, topic.id, q): self.target(topic, q, request.to, request.timestamp_ms)
                   for q in range(topic.queues)}
        offsets = self.pop.offsets
        batch = self.ctx.store.batch()
        for (gid, tid, q), offset in targets.items():
            offsets.advance(batch, gid, tid, q, offset)
            if group.consume_mode == OFFSET or self.ctx.store.get(Family.OFFSETS, keys.offset_key(gid, tid, q, COMMITTED)):
                batch.put(Family.OFFSETS, keys.offset_key(gid, tid, q, COMMITTED), keys.encode_u64(offset))
        self.pop.checkpoints.drop_topic(batch, group.id, topic.id)
        retries = keys.retry_prefix(group.id, topic.id)
        batch.delete_range(Family.RETRY, retries, keys.prefix_end(retries))
        self.ctx.store.write(batch)
        self.subscriptions.forget_group(group.id, topic.id)
        self.pull.forget_group(group.name, topic.id)
        offsets.advanced(targets)
        self.pop.fifo.forget(group.id, topic.id)
        self.ctx.logs.arrivals.receives(topic.id)  # waiting receives look again from the new position
        return group

    def update(self, request: admin.UpdateGroupRequest) -> GroupConfig:
        """Change what CreateGroup set; what the request leaves out stays."""
        group = self.ctx.meta.group(request.name)
        fifo = request.fifo if request.HasField("fifo") else group.fifo
        attempts = request.max_attempts if request.HasField("max_attempts") else group.max_attempts
        mode = request.consume_mode if request.HasField("consume_mode") else group.consume_mode
        if fifo != group.fifo and self.pop.inflight(group.id):  # FIFO holds count what is in flight
            raise BrokerError(pb.PRECONDITION_FAILED, f"group {group.name!r} has messages in flight or waiting for "
                                                      "redelivery: change --fifo once they are settled (or after a reset)")
        return self.ctx.meta.update_group(group, fifo, attempts, mode)

    def delete(self, request: admin.DeleteGroupRequest) -> list[str]:
        """The group, its state and its retry and dead-letter topics -> the topics deleted with it.
        Refused (FAILED_PRECONDITION) while consumers of it are connected, unless forced."""
        group = self.ctx.meta.group(request.name)
        members = self.clients.members(group.name)
        if members and not request.force:
            raise in_use(group.name, [m.client_id for m in members])
        self.subscriptions.forget_group(group.id)
        self.ctx.meta.delete_group(group)
        self.pop.fifo.forget(group.id)
        self.pop.offsets.forget_group(group.id)
        self.pull.forget_group(group.name)
        return [name for name in (retry_topic(group.name), dlq_topic(group.name)) if name in self.ctx.meta.topics]
