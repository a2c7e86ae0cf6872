"""rockmq's Admin service (topics and groups), served beside MessagingService.

Refusals are gRPC statuses with one readable line; the CLI prints that line and exits non-zero.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

import grpc

from rockmq.broker.clients import Clients
from rockmq.broker.cluster.replication import Follower
from rockmq.broker.cluster.routes import RPC_TIMEOUT_S, Cluster, spread
from rockmq.broker.context import BrokerContext
from rockmq.broker.errors import AlreadyExists, BrokerError
from rockmq.broker.metadata import GroupConfig, TopicConfig, check_name
from rockmq.broker.pop.service import PopService
from rockmq.broker.subscriptions import Subscriptions
from rockmq.broker.timers import LATENESS_BOUNDS_MS, TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.protocol import admin, admin_grpc, pb
from rockmq.protocol.conventions import BROKER_SAYS_UNREACHABLE
from rockmq.store import keys
from rockmq.store.keys import COMMITTED

log = logging.getLogger(__name__)

_GRPC_CODES = {
    pb.TOPIC_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    pb.CONSUMER_GROUP_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    pb.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    pb.INTERNAL_ERROR: grpc.StatusCode.INTERNAL,
    pb.PROXY_TIMEOUT: grpc.StatusCode.UNAVAILABLE,
}
# How a cluster broker that is down (or too slow) shows when asked.
_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def _admin_call(fn):
    @functools.wraps(fn)
    async def handler(self, request, context):
        try:
            result = fn(self, request)
            return await result if inspect.isawaitable(result) else result
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
                 subscriptions: Subscriptions, cluster: Cluster, clients: Clients) -> None:
        self.ctx = ctx
        self.clients = clients
        self.cluster = cluster
        self.follower: Follower | None = None  # set on a replica
        self.on_promote: Callable[[], None] = lambda: None
        self.subscriptions = subscriptions
        self.pop = pop
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
                    broker=self.cluster.name, topic=topic.name, queue_id=q, committed_offset=committed, pop_offset=popped,
                    max_offset=hi, lag=max(0, hi - max(popped, committed)) + n, inflight=n))
                info.inflight += n
        return info

    @_admin_call
    def CreateTopic(self, request):
        if not self.cluster.enabled:
            return self._create_here(request)
        return self._create_here_and_register(request) if request.local else self._create_spread(request)

    async def _create_here_and_register(self, request) -> admin.TopicInfo:
        """In a cluster, answer once the name servers know: routes include the topic from then on."""
        info = self._create_here(request)
        await self.cluster.register_now()
        return info

    def _create_here(self, request) -> admin.TopicInfo:
        topic = self.ctx.meta.create_topic(request.name, request.queue_count or self.ctx.settings.default_queues,
                                           list(request.message_types))
        return self._topic_info(topic, True)

    async def _create_spread(self, request) -> admin.TopicInfo:
        """Create the topic on several brokers, its queues spread over them (see cluster.spread)."""
        check_name("topic", request.name)
        live = await self.cluster.live()
        chosen = list(dict.fromkeys(request.brokers)) or sorted(live)
        unknown = [b for b in chosen if b not in live]
        if unknown:
            raise BrokerError(pb.BAD_REQUEST,
                              f"unknown or unreachable brokers {', '.join(unknown)}; live: {', '.join(sorted(live))}")
        total = request.queue_count or self.ctx.settings.default_queues
        info = admin.TopicInfo(name=request.name, queue_count=total, message_types=request.message_types)
        done: list[str] = []
        for broker, count in spread(total, chosen).items():
            part = admin.CreateTopicRequest(name=request.name, queue_count=count, message_types=request.message_types,
                                            local=True)
            note = f" (already created on {', '.join(done)})" if done else ""
            try:
                if broker == self.cluster.name:
                    created = await self._create_here_and_register(part)
                else:
                    created = await self.cluster.admin(live[broker]).CreateTopic(part, timeout=RPC_TIMEOUT_S)
            except AlreadyExists as e:
                raise AlreadyExists(f"on broker {broker}: {e.message}{note}") from None
            except BrokerError as e:
                raise BrokerError(e.code, f"on broker {broker}: {e.message}{note}") from None
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.ALREADY_EXISTS:
                    raise AlreadyExists(f"on broker {broker}: {e.details()}{note}") from None
                raise BrokerError(pb.BAD_REQUEST if e.code() == grpc.StatusCode.INVALID_ARGUMENT else pb.INTERNAL_ERROR,
                                  f"on broker {broker}: {e.details()}{note}") from None
            done.append(broker)
            info.queues.extend(admin.QueueInfo(queue_id=q.queue_id, min_offset=q.min_offset, max_offset=q.max_offset,
                                               broker=broker) for q in created.queues)
        del info.message_types[:]
        info.message_types.extend(created.message_types)
        return info

    @_admin_call
    def ListTopics(self, request):
        topics = sorted(self.ctx.meta.topics.values(), key=lambda t: t.name)
        return admin.ListTopicsResponse(topics=[self._topic_info(t, False) for t in topics])

    @_admin_call
    def DescribeTopic(self, request):
        if not self.cluster.enabled or request.local:
            return self._topic_info(self.ctx.meta.topic(request.name), True)
        return self._describe_topic_everywhere(request.name)

    async def _describe_topic_everywhere(self, name: str) -> admin.TopicInfo:
        parts, unreachable = await self._everywhere("DescribeTopic", admin.TopicRequest(name=name, local=True),
                                                    lambda: self._topic_info(self.ctx.meta.topic(name), True), "topic", name)
        info = admin.TopicInfo(name=name, message_types=parts[0].message_types, unreachable=unreachable)
        for part in parts:
            info.queue_count += part.queue_count
            info.queues.extend(part.queues)
        return info

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
        if not self.cluster.enabled or request.local:
            return self._group_info(self.ctx.meta.group(request.name), True)
        return self._describe_group_everywhere(request.name)

    @_admin_call
    def ListMembers(self, request):
        now = time.monotonic()
        return admin.ListMembersResponse(members=[admin.GroupMember(client_id=s.client_id, lane=s.lane, idle_s=now - s.last_seen)
                                                  for s in self.clients.members(request.name)])

    async def _describe_group_everywhere(self, name: str) -> admin.GroupInfo:
        parts, unreachable = await self._everywhere("DescribeGroup", admin.GroupRequest(name=name, local=True),
                                                    lambda: self._group_info(self.ctx.meta.group(name), True), "group", name)
        info = admin.GroupInfo(name=name, fifo=parts[0].fifo, max_attempts=parts[0].max_attempts, unreachable=unreachable)
        for part in parts:
            info.inflight += part.inflight
            info.queues.extend(part.queues)
        return info

    async def _everywhere(self, method: str, request, here: Callable[[], Any], kind: str,
                          name: str) -> tuple[list, list[str]]:
        """`method` answered by every live broker that has the topic or group (this one
        directly) -> (the answers, the brokers that could not be reached). A broker killed a
        moment ago is still registered: the caller tells what is missing instead of failing."""
        live = await self.cluster.live()
        parts, unreachable = [], []
        for broker in sorted(live):
            try:
                if broker == self.cluster.name:
                    parts.append(here())
                else:
                    parts.append(await getattr(self.cluster.admin(live[broker]), method)(request, timeout=RPC_TIMEOUT_S))
            except BrokerError as e:
                if _GRPC_CODES.get(e.code) != grpc.StatusCode.NOT_FOUND:
                    raise
            except grpc.aio.AioRpcError as e:
                if e.code() in _UNREACHABLE:
                    log.warning("%s %r: broker %s did not answer: %s", method, name, broker, e.details())
                    unreachable.append(broker)
                elif e.code() != grpc.StatusCode.NOT_FOUND:
                    raise BrokerError(pb.INTERNAL_ERROR, f"broker {broker} failed: {e.details()}") from None
        if not parts:
            if unreachable:
                raise BrokerError(pb.PROXY_TIMEOUT, f"{BROKER_SAYS_UNREACHABLE}: {', '.join(unreachable)}; "
                                                    f"no broker that answered has {kind} {name!r}")
            raise BrokerError(pb.NOT_FOUND, f"no broker has {kind} {name!r}")
        return parts, unreachable

    @_admin_call
    def GetTimerStats(self, request):
        t = self.timers
        late = t.lateness
        return admin.TimerStats(
            pending=t.pending.value, next_due_ms=t.next_due() or 0, moved=t.moved, max_lateness_ms=late.max_ms,
            lateness=[admin.LatenessBucket(le_ms=le, count=n) for le, n in zip((*LATENESS_BOUNDS_MS, -1), late.counts)],
            half_messages=self.transactions.pending.value)

    @_admin_call
    def Promote(self, request):
        if self.follower is None:
            raise BrokerError(pb.BAD_REQUEST, "this broker is not a replica (or was promoted already)")
        return self._promote()

    async def _promote(self) -> admin.PromoteResponse:
        batch = self.ctx.store.batch()
        batch.put("meta", keys.PROMOTED_KEY, b"1")
        await self.ctx.store.commit(batch)
        log.warning("promoted by request after applying the primary's batch %d", self.follower.applied)
        asyncio.get_running_loop().call_later(0.2, self.on_promote)  # after this reply is sent
        return admin.PromoteResponse(applied_seq=self.follower.applied)
