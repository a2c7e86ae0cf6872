"""Topics and groups as the Admin service manages them: created with the broker's defaults,
described with their queues and positions, across the cluster through cluster/admin_fanout.py,
and a topic deleted with everything that remembers it. The Admin servicer only translates."""

from __future__ import annotations

import bisect
import time
from collections.abc import Awaitable, Collection, Mapping
from typing import TypeVar

from rockmq.broker.clients import Clients, kind_of
from rockmq.broker.clock import now_ms
from rockmq.broker.cluster.admin_fanout import AdminFanout
from rockmq.broker.context import BrokerContext
from rockmq.broker.dead_letters import DeadLetters, page_limit
from rockmq.broker.group_admin import GroupAdmin, in_use
from rockmq.broker.lite.topics import LiteTopics
from rockmq.broker.metadata import PRIORITY, GroupConfig, TopicConfig, check_queue_count, is_lite, priority_queues
from rockmq.broker.positions import Positions
from rockmq.broker.subscriptions import Subscriptions
from rockmq.protocol import admin, pb
from rockmq.protocol.errors import BrokerError

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
                 broker: str, dead_letters: DeadLetters, group_admin: GroupAdmin, clients: Clients,
                 lite: LiteTopics) -> None:
        self.ctx = ctx
        self.lite = lite
        self.subscriptions = subscriptions
        self.positions = positions
        self.fanout = fanout
        self.broker = broker  # this broker's name, on each queue it describes
        self.dead_letters = dead_letters
        self.group_admin = group_admin
        self.clients = clients
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
        topic = self.ctx.meta.create_topic(request.name, request.queue_count, list(request.message_types),
                                           lite_topic_ttl_s=request.lite_topic_ttl_s, max_priority=request.max_priority)
        return self.topic_info(topic, True)

    def _page(self, names: SortedNames, table: Mapping[str, Entry], request: Listing) -> tuple[list[Entry], str]:
        """The entries of a page of a listing (admin.proto ListTopicsRequest), and the next page's token."""
        chosen, token = page(names.of(self.ctx.meta.generation, table), request.page_token,
                             page_limit(request.limit, self.ctx.settings.max_list_page))
        return [table[n] for n in chosen], token

    async def topics(self, request: admin.ListTopicsRequest) -> admin.ListTopicsResponse:
        """A page of the topics, by name: of the whole cluster (as `topic describe` answers for it),
        this broker's alone without name servers."""
        if not self.fanout.cluster.enabled:
            topics, token = self._page(self._topic_names, self.ctx.meta.topics, request)
            return admin.ListTopicsResponse(topics=[self.topic_info(t, False) for t in topics], next_page_token=token,
                                            total=len(self.ctx.meta.topics))
        every = await self.fanout.topics({t.name: self.topic_info(t, False) for t in self.ctx.meta.topics.values()})
        most = self.ctx.settings.max_list_page
        chosen, token = page(sorted(every), request.page_token, request.limit if 0 < request.limit <= most else most)
        return admin.ListTopicsResponse(topics=[every[n] for n in chosen], next_page_token=token, total=len(every))

    def describe_cluster(self) -> Awaitable[admin.ClusterInfo]:
        me = admin.ClusterBroker(name=self.broker, endpoint=self.fanout.cluster.endpoint,
                                 tls=bool(self.ctx.settings.tls_cert), epoch=self.fanout.cluster.fence.epoch,
                                 topics=len(self.ctx.meta.topics), replicas=self.fanout.cluster.replicas())
        return self.fanout.describe(me)

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

    def update_topic(self, request: admin.UpdateTopicRequest) -> Awaitable[admin.TopicInfo]:
        """A topic's queue count or permission, here or on every broker holding it."""
        return self.fanout.update_topic(request, self._update_here)

    def _update_here(self, request: admin.UpdateTopicRequest) -> admin.TopicInfo:
        """Growing adds empty queues; shrinking is refused unless every queue it removes never held
        a message (a message there would be lost to its groups, and its offsets reused)."""
        topic = self.ctx.meta.topic(request.name)
        queues = request.queue_count or topic.queues
        if PRIORITY in topic.message_types:  # whole lanes: every queue keeps its level (broker/priority.py)
            queues = priority_queues(queues, topic.max_priority)
        check_queue_count(queues)
        used = [q for q in range(queues, topic.queues) if self.ctx.logs.max_offset(topic.id, q) > 0]
        if used:
            raise BrokerError(pb.PRECONDITION_FAILED, f"cannot shrink topic {topic.name!r} to {queues} queues on "
                                                      f"{self.broker}: queue {used[0]} has held messages (only queues "
                                                      "that never held one may go)")
        updated = self.ctx.meta.update_topic(topic, queues, request.perm or topic.perm)
        self.subscriptions.grown(updated)
        return self.topic_info(updated, True)

    def lite_topics(self, request: admin.ListLiteTopicsRequest) -> Awaitable[admin.ListLiteTopicsResponse]:
        """A page of a LITE topic's lite topics, by name (`rockmq topic describe T --lite`), here or over the cluster."""
        return self.fanout.lite_topics(request, lambda: self._lite_topics_here(request))

    def _lite_topics_here(self, request: admin.ListLiteTopicsRequest) -> admin.ListLiteTopicsResponse:
        topic = self.ctx.meta.topic(request.topic)
        if not is_lite(topic):
            raise BrokerError(pb.BAD_REQUEST, f"topic {topic.name!r} is not a LITE topic: it holds no lite topics")
        limit = page_limit(request.limit, self.ctx.settings.max_list_page)
        found, more = self.lite.page(topic.id, request.after, request.prefix, limit)
        logs = self.ctx.logs
        reply = admin.ListLiteTopicsResponse(more=more)
        for name, qid in found:
            reply.lite_topics.add(name=name, queue_id=qid, min_offset=logs.min_offset(topic.id, qid),
                                  max_offset=logs.max_offset(topic.id, qid), last_store_ms=logs.last_store_ms(topic.id, qid),
                                  broker=self.broker)
        return reply

    def topic_info(self, topic: TopicConfig, with_queues: bool) -> admin.TopicInfo:
        info = admin.TopicInfo(name=topic.name, queue_count=topic.queues, message_types=topic.message_types,
                               perm=topic.perm, lite_topic_ttl_s=topic.lite_topic_ttl_s)
        if is_lite(topic):
            info.lite_topic_count = self.lite.count(topic.id)
        if PRIORITY in topic.message_types:
            info.max_priority = topic.max_priority
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
            self.ctx.new_group(request.name, request.fifo, request.max_attempts, request.consume_mode,
                               request.lite_wildcard), False))

    def groups(self, request: admin.ListGroupsRequest) -> admin.ListGroupsResponse:
        """A page of the groups, by name."""
        groups, token = self._page(self._group_names, self.ctx.meta.groups, request)
        return admin.ListGroupsResponse(groups=[self.group_info(g, False) for g in groups], next_page_token=token,
                                        total=len(self.ctx.meta.groups))

    def describe_group(self, name: str, local: bool) -> Awaitable[admin.GroupInfo]:
        return self.fanout.describe_group(name, local, lambda: self.group_info(self.ctx.meta.group(name), True))

    def group_info(self, group: GroupConfig, with_queues: bool) -> admin.GroupInfo:
        info = admin.GroupInfo(name=group.name, fifo=group.fifo, max_attempts=group.max_attempts,
                               consume_mode=group.consume_mode, lite_wildcard=group.lite_wildcard)
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

    def reset_offset(self, request: admin.ResetOffsetRequest) -> Awaitable[admin.GroupInfo]:
        return self.fanout.group_change("ResetOffset", request, request.group,
                                        lambda: self.group_info(self.group_admin.reset(request), True))

    def update_group(self, request: admin.UpdateGroupRequest) -> Awaitable[admin.GroupInfo]:
        return self.fanout.group_change("UpdateGroup", request, request.name,
                                        lambda: self.group_info(self.group_admin.update(request), False))

    async def delete_group(self, request: admin.DeleteGroupRequest) -> admin.DeleteGroupResponse:
        """The group, here or on every broker; unless forced, refused before any broker deletes it
        while a consumer of it is connected to any of them."""
        if not request.force and not request.local:
            connected = await self.list_clients(admin.ListClientsRequest(group=request.name))
            if connected.clients:
                raise in_use(request.name, [c.client_id for c in connected.clients])
        return await self.fanout.delete_group(request, lambda: self._delete_group_here(request))

    def _delete_group_here(self, request: admin.DeleteGroupRequest) -> admin.DeleteGroupResponse:
        """The group, then its retry and dead-letter topics as any topic is deleted."""
        for name in self.group_admin.delete(request):
            self._delete_here(name)
        self.ctx.tally.forget_group(request.name)
        return admin.DeleteGroupResponse()

    # --- dead letters and clients ------------------------------------------------------------

    def list_dead_letters(self, request: admin.DlqListRequest) -> Awaitable[admin.DlqListResponse]:
        return self.fanout.dead_letters(request, lambda: self.dead_letters.listing(request))

    def resend_dead_letters(self, request: admin.DlqResendRequest) -> Awaitable[admin.DlqResendResponse]:
        return self.fanout.resend(request, lambda: self.dead_letters.resend(request))

    def purge_dead_letters(self, request: admin.DlqPurgeRequest) -> Awaitable[admin.DlqPurgeResponse]:
        return self.fanout.purge(request, lambda: self.dead_letters.purge(request))

    def list_clients(self, request: admin.ListClientsRequest) -> Awaitable[admin.ListClientsResponse]:
        return self.fanout.clients(request, lambda: self._clients_here(request))

    def _clients_here(self, request: admin.ListClientsRequest) -> admin.ListClientsResponse:
        """The clients connected here (of the group, or of the topic, which must exist), at most max_list_page."""
        if request.group:
            self.ctx.meta.group(request.group)
        if request.topic:
            self.ctx.meta.topic(request.topic)
        now = time.monotonic()
        connected = self.clients.connected(request.group, request.topic)
        most = self.ctx.settings.max_list_page
        return admin.ListClientsResponse(clients=[
            admin.ClientInfo(client_id=s.client_id, kind=kind_of(s), group=s.group, topics=s.topics, language=s.language,
                             version=s.version, address=s.address, broker=self.broker, idle_s=now - s.last_seen)
            for s in connected[:most]], more=len(connected) > most)
