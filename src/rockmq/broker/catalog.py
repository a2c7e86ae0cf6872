"""Topics and groups as the Admin service manages them: created with the broker's defaults,
described with their queues and positions, across the cluster through cluster/admin_fanout.py,
and a topic deleted with everything that remembers it. The Admin servicer only translates."""

from __future__ import annotations

import bisect
from collections.abc import Awaitable, Collection, Mapping
from typing import TypeVar

from rockmq.broker.clock import now_ms
from rockmq.broker.cluster.admin_fanout import AdminFanout
from rockmq.broker.context import BrokerContext
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.positions import Positions
from rockmq.broker.subscriptions import Subscriptions
from rockmq.protocol import admin

Entry = TypeVar("Entry", TopicConfig, GroupConfig)
Listing = admin.ListTopicsRequest | admin.ListGroupsRequest


def page(names: list[str], after: str, limit: int) -> tuple[list[str], str]:
    """The first `limit` of the sorted `names` after `after` ("": from the first), and the token of
    the next page ("": this is the last)."""
    start = bisect.bisect_right(names, after) if after else 0
    chosen = names[start:start + limit]
    return chosen, chosen[-1] if start + limit < len(names) else ""


class SortedNames:
    """A table's names in order for listings, sorted again only after its metadata changed."""

    def __init__(self) -> None:
        self._generation = -1
        self._names: list[str] = []

    def of(self, generation: int, names: Collection[str]) -> list[str]:
        if generation != self._generation:
            self._names, self._generation = sorted(names), generation
        return self._names


class Catalog:
    def __init__(self, ctx: BrokerContext, subscriptions: Subscriptions, positions: Positions, fanout: AdminFanout,
                 broker: str) -> None:
        self.ctx = ctx
        self.subscriptions = subscriptions
        self.positions = positions
        self.fanout = fanout
        self.broker = broker  # this broker's name, on each queue it describes
        self._topic_names, self._group_names = SortedNames(), SortedNames()

    # --- topics ------------------------------------------------------------------------------

    def create_topic(self, request: admin.CreateTopicRequest) -> Awaitable[admin.TopicInfo]:
        """A topic of the requested queue count (none: the broker's default), here or over the cluster."""
        if not request.queue_count:
            filled = admin.CreateTopicRequest()
            filled.CopyFrom(request)
            filled.queue_count = self.ctx.settings.default_queues
            request = filled
        return self.fanout.create_topic(request, self._create_here)

    def _create_here(self, request: admin.CreateTopicRequest) -> admin.TopicInfo:
        topic = self.ctx.meta.create_topic(request.name, request.queue_count, list(request.message_types))
        return self.topic_info(topic, True)

    def _page(self, names: SortedNames, table: Mapping[str, Entry], request: Listing) -> tuple[list[Entry], str]:
        """The entries of a page of a listing (admin.proto ListTopicsRequest), and the next page's token."""
        most = self.ctx.settings.max_list_page
        chosen, token = page(names.of(self.ctx.meta.generation, table), request.page_token,
                             request.limit if 0 < request.limit <= most else most)
        return [table[n] for n in chosen], token

    def topics(self, request: admin.ListTopicsRequest) -> admin.ListTopicsResponse:
        """A page of the topics, by name."""
        topics, token = self._page(self._topic_names, self.ctx.meta.topics, request)
        return admin.ListTopicsResponse(topics=[self.topic_info(t, False) for t in topics], next_page_token=token,
                                        total=len(self.ctx.meta.topics))

    def describe_topic(self, name: str, local: bool) -> Awaitable[admin.TopicInfo]:
        return self.fanout.describe_topic(name, local, lambda: self.topic_info(self.ctx.meta.topic(name), True))

    def delete_topic(self, name: str, local: bool) -> Awaitable[None]:
        """The topic, here or on every broker holding it (see AdminFanout.delete_topic)."""
        return self.fanout.delete_topic(name, local, lambda: self._delete_here(name))

    def _delete_here(self, name: str) -> None:
        """The topic, its messages, its cached offsets and its groups' subscriptions to and positions on it."""
        topic = self.ctx.meta.delete_topic(name)
        self.ctx.logs.forget_topic(topic.id)
        self.ctx.tally.forget_topic(topic.id)
        self.subscriptions.forget_topic(topic.id)
        self.positions.pop.forget_topic(topic.id)
        self.positions.pull.forget_topic(topic.id)

    def topic_info(self, topic: TopicConfig, with_queues: bool) -> admin.TopicInfo:
        info = admin.TopicInfo(name=topic.name, queue_count=topic.queues, message_types=topic.message_types)
        if with_queues:
            logs = self.ctx.logs
            info.queues.extend(admin.QueueInfo(queue_id=q, min_offset=logs.min_offset(topic.id, q),
                                               max_offset=logs.max_offset(topic.id, q), broker=self.broker)
                               for q in range(topic.queues))
        return info

    # --- groups ------------------------------------------------------------------------------

    def create_group(self, request: admin.CreateGroupRequest) -> Awaitable[admin.GroupInfo]:
        """A group (max_attempts 0: the broker's default; consume_mode "": fixed by its first use),
        here or on every broker of the cluster."""
        return self.fanout.create_group(request, lambda: self.group_info(
            self.ctx.new_group(request.name, request.fifo, request.max_attempts, request.consume_mode), False))

    def groups(self, request: admin.ListGroupsRequest) -> admin.ListGroupsResponse:
        """A page of the groups, by name."""
        groups, token = self._page(self._group_names, self.ctx.meta.groups, request)
        return admin.ListGroupsResponse(groups=[self.group_info(g, False) for g in groups], next_page_token=token,
                                        total=len(self.ctx.meta.groups))

    def describe_group(self, name: str, local: bool) -> Awaitable[admin.GroupInfo]:
        return self.fanout.describe_group(name, local, lambda: self.group_info(self.ctx.meta.group(name), True))

    def group_info(self, group: GroupConfig, with_queues: bool) -> admin.GroupInfo:
        info = admin.GroupInfo(name=group.name, fifo=group.fifo, max_attempts=group.max_attempts,
                               consume_mode=group.consume_mode)
        if not with_queues:
            return info
        now = now_ms()
        for p in self.positions.of(group):
            stored = self.positions.store_ms(p)
            info.queues.append(admin.GroupQueueInfo(
                broker=self.broker, topic=p.topic.name, queue_id=p.queue_id, committed_offset=p.committed,
                pop_offset=p.popped, max_offset=p.max_offset, lag=p.lag, inflight=p.inflight,
                lag_ms=max(0, now - stored) if stored else 0))
            info.inflight += p.inflight
        return info
