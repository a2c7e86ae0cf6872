"""rockmq's Admin service (topics and groups), served beside MessagingService.

Refusals are gRPC statuses with one readable line; the CLI prints that line and exits non-zero.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable

from rockmq.broker.api.replies import admin_call
from rockmq.broker.catalog import Catalog
from rockmq.broker.clients import Clients
from rockmq.broker.cluster.replication import Follower
from rockmq.broker.timers import LATENESS_BOUNDS_MS, TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.config import shown
from rockmq.protocol import admin, admin_grpc, pb
from rockmq.protocol.errors import BrokerError


class AdminServicer(admin_grpc.AdminServicer):
    def __init__(self, catalog: Catalog, timers: TimerService, transactions: TransactionService, clients: Clients,
                 follower: Follower | None) -> None:
        self.catalog = catalog
        self.clients = clients
        self.follower = follower  # on a replica
        self.timers = timers
        self.transactions = transactions

    @admin_call
    def CreateTopic(self, request: admin.CreateTopicRequest) -> Awaitable[admin.TopicInfo]:
        return self.catalog.create_topic(request)

    @admin_call
    def ListTopics(self, request: admin.ListTopicsRequest) -> Awaitable[admin.ListTopicsResponse]:
        return self.catalog.topics(request)

    @admin_call
    def DescribeTopic(self, request: admin.TopicRequest) -> Awaitable[admin.TopicInfo]:
        return self.catalog.describe_topic(request.name, request.local)

    @admin_call
    async def DeleteTopic(self, request: admin.TopicRequest) -> admin.DeleteTopicResponse:
        await self.catalog.delete_topic(request.name, request.local)
        return admin.DeleteTopicResponse()

    @admin_call
    def ListLiteTopics(self, request: admin.ListLiteTopicsRequest) -> Awaitable[admin.ListLiteTopicsResponse]:
        return self.catalog.lite_topics(request)

    @admin_call
    def CreateGroup(self, request: admin.CreateGroupRequest) -> Awaitable[admin.GroupInfo]:
        return self.catalog.create_group(request)

    @admin_call
    def ListGroups(self, request: admin.ListGroupsRequest) -> admin.ListGroupsResponse:
        return self.catalog.groups(request)

    @admin_call
    def DescribeGroup(self, request: admin.GroupRequest) -> Awaitable[admin.GroupInfo]:
        return self.catalog.describe_group(request.name, request.local)

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
    def DescribeCluster(self, request: admin.ClusterRequest) -> Awaitable[admin.ClusterInfo]:
        return self.catalog.describe_cluster()

    @admin_call
    async def Promote(self, request: admin.PromoteRequest) -> admin.PromoteResponse:
        if self.follower is None:
            raise BrokerError(pb.BAD_REQUEST, "this broker is not a replica (or was promoted already)")
        applied, epoch, answered = await self.follower.promote(request.force)
        return admin.PromoteResponse(applied_seq=applied, epoch=epoch, primary_answered=answered)

    @admin_call
    def ListDeadLetters(self, request: admin.DlqListRequest) -> Awaitable[admin.DlqListResponse]:
        return self.catalog.list_dead_letters(request)

    @admin_call
    def ResendDeadLetters(self, request: admin.DlqResendRequest) -> Awaitable[admin.DlqResendResponse]:
        return self.catalog.resend_dead_letters(request)

    @admin_call
    def PurgeDeadLetters(self, request: admin.DlqPurgeRequest) -> Awaitable[admin.DlqPurgeResponse]:
        return self.catalog.purge_dead_letters(request)

    @admin_call
    def ResetOffset(self, request: admin.ResetOffsetRequest) -> Awaitable[admin.GroupInfo]:
        return self.catalog.reset_offset(request)

    @admin_call
    def UpdateGroup(self, request: admin.UpdateGroupRequest) -> Awaitable[admin.GroupInfo]:
        return self.catalog.update_group(request)

    @admin_call
    def DeleteGroup(self, request: admin.DeleteGroupRequest) -> Awaitable[admin.DeleteGroupResponse]:
        return self.catalog.delete_group(request)

    @admin_call
    def UpdateTopic(self, request: admin.UpdateTopicRequest) -> Awaitable[admin.TopicInfo]:
        return self.catalog.update_topic(request)

    @admin_call
    def ListClients(self, request: admin.ListClientsRequest) -> Awaitable[admin.ListClientsResponse]:
        return self.catalog.list_clients(request)

    @admin_call
    def GetConfig(self, request: admin.GetConfigRequest) -> admin.BrokerConfig:
        """This broker's effective settings, secrets hidden (config.SECRET_SETTINGS)."""
        return admin.BrokerConfig(broker=self.catalog.broker, settings=[
            admin.ConfigEntry(name=name, value=value, secret=secret) for name, value, secret in shown(self.catalog.ctx.settings)])
