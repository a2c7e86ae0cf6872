"""rockmq's Admin service (topics and groups), served beside MessagingService.

Refusals are gRPC statuses with one readable line; the CLI prints that line and exits non-zero.
"""

from __future__ import annotations

import functools
import logging

import grpc

from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import AlreadyExists, BrokerError
from rockmq.broker.metadata import GroupConfig, TopicConfig
from rockmq.broker.pop import PopService
from rockmq.broker.subscriptions import Subscriptions
from rockmq.broker.timers import LATENESS_BOUNDS_MS, TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.protocol import admin, admin_grpc, pb
from rockmq.store import keys
from rockmq.store.keys import COMMITTED

log = logging.getLogger(__name__)

_GRPC_CODES = {
    pb.TOPIC_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    pb.CONSUMER_GROUP_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    pb.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
}


def _admin_call(fn):
    @functools.wraps(fn)
    async def handler(self, request, context):
        try:
            return fn(self, request)
        except AlreadyExists as e:
            await context.abort(grpc.StatusCode.ALREADY_EXISTS, e.message)
        except BrokerError as e:
            await context.abort(_GRPC_CODES.get(e.code, grpc.StatusCode.INVALID_ARGUMENT), e.message)
        except Exception:
            log.exception("admin %s failed", fn.__name__)
            await context.abort(grpc.StatusCode.INTERNAL, "internal error; see the broker log")

    return handler


class AdminServicer(admin_grpc.AdminServicer):
    def __init__(self, ctx: BrokerContext, pop: PopService, timers: TimerService, transactions: TransactionService,
                 subscriptions: Subscriptions) -> None:
        self.ctx = ctx
        self.subscriptions = subscriptions
        self.pop = pop
        self.timers = timers
        self.transactions = transactions

    def _topic_info(self, topic: TopicConfig, with_queues: bool) -> admin.TopicInfo:
        info = admin.TopicInfo(name=topic.name, queue_count=topic.queues, message_types=topic.message_types)
        if with_queues:
            logs = self.ctx.logs
            info.queues.extend(admin.QueueInfo(queue_id=q, min_offset=logs.min_offset(topic.id, q),
                                               max_offset=logs.max_offset(topic.id, q)) for q in range(topic.queues))
        return info

    def _group_info(self, group: GroupConfig, with_queues: bool) -> admin.GroupInfo:
        info = admin.GroupInfo(name=group.name, fifo=group.fifo, max_attempts=group.max_attempts)
        if not with_queues:
            return info
        inflight = self.pop.inflight_count(group.id)
        tids = {tid for (tid, _) in inflight}
        for key, _ in self.ctx.store.scan_prefix("offsets", keys.group_prefix(group.id)):
            tids.add(keys.parse_offset_key(key)[1])
        store = self.ctx.store
        for tid in sorted(tids):
            topic = self.ctx.meta.topics_by_id.get(tid)
            if topic is None:
                continue
            for q in range(topic.queues):
                raw = store.get("offsets", keys.offset_key(group.id, tid, q, COMMITTED))
                committed = keys.decode_u64(raw) if raw else -1
                popped = self.pop.pop_offset(group.id, tid, q)
                hi = self.ctx.logs.max_offset(tid, q)
                n = inflight.get((tid, q), 0)
                info.queues.append(admin.GroupQueueInfo(
                    topic=topic.name, queue_id=q, committed_offset=committed, pop_offset=popped,
                    max_offset=hi, lag=max(0, hi - max(popped, committed)) + n, inflight=n))
                info.inflight += n
        return info

    @_admin_call
    def CreateTopic(self, request):
        topic = self.ctx.meta.create_topic(request.name, request.queue_count or self.ctx.settings.default_queues,
                                           list(request.message_types))
        return self._topic_info(topic, True)

    @_admin_call
    def ListTopics(self, request):
        topics = sorted(self.ctx.meta.topics.values(), key=lambda t: t.name)
        return admin.ListTopicsResponse(topics=[self._topic_info(t, False) for t in topics])

    @_admin_call
    def DescribeTopic(self, request):
        return self._topic_info(self.ctx.meta.topic(request.name), True)

    @_admin_call
    def DeleteTopic(self, request):
        topic = self.ctx.meta.delete_topic(request.name)
        self.ctx.logs.forget_topic(topic.id)
        self.subscriptions.forget_topic(topic.id)
        return admin.DeleteTopicResponse()

    @_admin_call
    def CreateGroup(self, request):
        group = self.ctx.meta.create_group(request.name, request.fifo, request.max_attempts or self.ctx.settings.max_attempts)
        return self._group_info(group, False)

    @_admin_call
    def ListGroups(self, request):
        groups = sorted(self.ctx.meta.groups.values(), key=lambda g: g.name)
        return admin.ListGroupsResponse(groups=[self._group_info(g, False) for g in groups])

    @_admin_call
    def DescribeGroup(self, request):
        return self._group_info(self.ctx.meta.group(request.name), True)

    @_admin_call
    def GetTimerStats(self, request):
        t = self.timers
        late = t.lateness
        return admin.TimerStats(
            pending=t.pending.value, next_due_ms=t.next_due() or 0, moved=t.moved, max_lateness_ms=late.max_ms,
            lateness=[admin.LatenessBucket(le_ms=le, count=n) for le, n in zip((*LATENESS_BOUNDS_MS, -1), late.counts)],
            half_messages=self.transactions.pending.value)
