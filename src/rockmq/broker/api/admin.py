"""rockmq's Admin service (topics and groups), served beside MessagingService.

Refusals are gRPC statuses with one readable line; the CLI prints that line and exits non-zero.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from rockmq.broker.api.replies import admin_call
from rockmq.broker.clients import Clients
from rockmq.broker.cluster.admin_fanout import AdminFanout
from rockmq.broker.cluster.replication import Follower
from rockmq.broker.cluster.routes import Cluster
from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import BrokerError
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.positions import Positions
from rockmq.broker.subscriptions import Subscriptions
from rockmq.broker.timers import LATENESS_BOUNDS_MS, TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.protocol import admin, admin_grpc, pb


class AdminServicer(admin_grpc.AdminServicer):
    def __init__(self, ctx: BrokerContext, timers: TimerService, transactions: TransactionService,
                 subscriptions: Subscriptions, cluster: Cluster, fanout: AdminFanout, clients: Clients, positions: Positions,
                 follower: Follower | None, on_promote: Callable[[], None]) -> None:
        self.ctx = ctx
        self.clients = clients
        self.cluster = cluster
        self.fanout = fanout
        self.positions = positions
        self.follower = follower  # on a replica
        self.on_promote = on_promote  # restarts the broker as a primary
        self.subscriptions = subscriptions
        self.timers = timers
        self.transactions = transactions

    def _topic_info(self, topic: TopicConfig, with_queues: bool) -> admin.TopicInfo:
        info = admin.TopicInfo(name=topic.name, queue_count=topic.queues, message_types=topic.message_types)
        if with_queues:
            logs = self.ctx.logs
            info.queues.extend(admin.QueueInfo(queue_id=q, min_offset=logs.min_offset(topic.id, q),
                                               max_offset=logs.max_offset(topic.id, q), broker=self.cluster.name)
                               for q in range(topic.queues))
        return info

    def _group_info(self, group: GroupConfig, with_queues: bool) -> admin.GroupInfo:
        info = admin.GroupInfo(name=group.name, fifo=group.fifo, max_attempts=group.max_attempts,
                               consume_mode=group.consume_mode)
        if not with_queues:
            return info
        for p in self.positions.of(group):
            info.queues.append(admin.GroupQueueInfo(
                broker=self.cluster.name, topic=p.topic.name, queue_id=p.queue_id, committed_offset=p.committed,
                pop_offset=p.popped, max_offset=p.max_offset, lag=p.lag, inflight=p.inflight))
            info.inflight += p.inflight
        return info

    @admin_call
    def CreateTopic(self, request: admin.CreateTopicRequest) -> Awaitable[admin.TopicInfo]:
        return self.fanout.create_topic(request, self._create_here)

    def _create_here(self, request: admin.CreateTopicRequest) -> admin.TopicInfo:
        topic = self.ctx.meta.create_topic(request.name, request.queue_count or self.ctx.settings.default_queues,
                                           list(request.message_types))
        return self._topic_info(topic, True)

    @admin_call
    def ListTopics(self, request: admin.ListTopicsRequest) -> admin.ListTopicsResponse:
        topics = sorted(self.ctx.meta.topics.values(), key=lambda t: t.name)
        return admin.ListTopicsResponse(topics=[self._topic_info(t, False) for t in topics])

    @admin_call
    def DescribeTopic(self, request: admin.TopicRequest) -> Awaitable[admin.TopicInfo]:
        return self.fanout.describe_topic(request.name, request.local,
                                          lambda: self._topic_info(self.ctx.meta.topic(request.name), True))

    @admin_call
    def DeleteTopic(self, request: admin.TopicRequest) -> admin.DeleteTopicResponse:
        topic = self.ctx.meta.delete_topic(request.name)
        self.ctx.logs.forget_topic(topic.id)
        self.subscriptions.forget_topic(topic.id)
        return admin.DeleteTopicResponse()

    @admin_call
    def CreateGroup(self, request: admin.CreateGroupRequest) -> admin.GroupInfo:
        group = self.ctx.meta.create_group(request.name, request.fifo, request.max_attempts or self.ctx.settings.max_attempts,
                                           request.consume_mode)
        return self._group_info(group, False)

    @admin_call
    def ListGroups(self, request: admin.ListGroupsRequest) -> admin.ListGroupsResponse:
        groups = sorted(self.ctx.meta.groups.values(), key=lambda g: g.name)
        return admin.ListGroupsResponse(groups=[self._group_info(g, False) for g in groups])

    @admin_call
    def DescribeGroup(self, request: admin.GroupRequest) -> Awaitable[admin.GroupInfo]:
        return self.fanout.describe_group(request.name, request.local,
                                          lambda: self._group_info(self.ctx.meta.group(request.name), True))

    @admin_call
    def ListMembers(self, request: admin.GroupRequest) -> admin.ListMembersResponse:
        now = time.monotonic()
        return admin.ListMembersResponse(members=[admin.GroupMember(client_id=s.client_id, lane=s.lane, idle_s=now - s.last_seen)
                                                  for s in self.clients.members(request.name)])

    @admin_call
    def GetTimerStats(self, request: admin.TimerStatsRequest) -> admin.TimerStats:
        t = self.timers
        late = t.lateness
        return admin.TimerStats(
            pending=t.pending.value, next_due_ms=t.next_due() or 0, moved=t.moved, max_lateness_ms=late.max_ms,
            lateness=[admin.LatenessBucket(le_ms=le, count=n) for le, n in zip((*LATENESS_BOUNDS_MS, -1), late.counts)],
            half_messages=self.transactions.pending.value)

    @admin_call
    def Promote(self, request: admin.PromoteRequest) -> Awaitable[admin.PromoteResponse]:
        if self.follower is None:
            raise BrokerError(pb.BAD_REQUEST, "this broker is not a replica (or was promoted already)")
        return self._promote(self.follower)

    async def _promote(self, follower: Follower) -> admin.PromoteResponse:
        applied = await follower.promote()
        asyncio.get_running_loop().call_later(0.2, self.on_promote)  # after this reply is sent
        return admin.PromoteResponse(applied_seq=applied)
