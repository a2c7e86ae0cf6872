"""Admin calls answered across the cluster: a topic created over several brokers, a group created
on every broker, a topic deleted from and a topic or group described by every broker that has it.

broker/catalog.py hands each call here with how to answer it on this broker (`here`); without
name servers, or for a call marked `local`, that is the whole answer.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc

from rockmq.broker.cluster.routes import RPC_TIMEOUT_S, Cluster, spread
from rockmq.broker.dead_letters import MAX_REPORTED, page_limit
from rockmq.broker.metadata import check_queue_count
from rockmq.protocol import admin, pb
from rockmq.protocol.conventions import BROKER_SAYS_UNREACHABLE, check_name
from rockmq.protocol.errors import AlreadyExists, BrokerError, listing, relayed

log = logging.getLogger(__name__)
# How a cluster broker that is down (or too slow) shows when asked.
_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

Info = TypeVar("Info", admin.TopicInfo, admin.GroupInfo)
TopicChange = TypeVar("TopicChange", admin.CreateTopicRequest, admin.UpdateTopicRequest)
PACED_TIMEOUT_S = 3600.0  # how long a broker may take to send dead letters back at a rate (`rockmq dlq resend --rate`)
# What a broker answers to a call asked of every broker (`_everywhere`).
Part = TypeVar("Part", admin.TopicInfo, admin.GroupInfo, admin.DlqListResponse, admin.DlqResendResponse,
               admin.DlqPurgeResponse, admin.DeleteGroupResponse, admin.ListClientsResponse,
               admin.ListLiteTopicsResponse)


class AdminFanout:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    async def create_topic(self, request: admin.CreateTopicRequest,
                           here: Callable[[admin.CreateTopicRequest], admin.TopicInfo]) -> admin.TopicInfo:
        """Create a topic: here alone without name servers; here and registered at once for a
        `local` request; else over several brokers, its queues spread over them (see `spread`)."""
        if not self.cluster.enabled:
            return here(request)
        if request.local:
            return await self._create_here_and_register(request, here)
        check_name("topic", request.name)
        live = await self.cluster.live()
        chosen = list(dict.fromkeys(request.brokers)) or sorted(live)
        unknown = [b for b in chosen if b not in live]
        if unknown:
            raise BrokerError(pb.BAD_REQUEST,
                              f"unknown or unreachable brokers {listing(unknown)}; live: {listing(sorted(live))}")
        check_queue_count(request.queue_count, len(chosen))  # before `spread` divides them
        total = request.queue_count  # the broker's default applied (broker/catalog.py)
        info = admin.TopicInfo(name=request.name, queue_count=total, message_types=request.message_types)
        done: list[str] = []
        for broker, count in spread(total, chosen).items():
            part = admin.CreateTopicRequest()
            part.CopyFrom(request)  # every setting of the topic, for this broker's share of the queues
            part.queue_count, part.local = count, True
            part.ClearField("brokers")
            created = await self._create_on(broker, live[broker], "CreateTopic", part,
                                             lambda p: self._create_here_and_register(p, here), done)
            info.queues.extend(admin.QueueInfo(queue_id=q.queue_id, min_offset=q.min_offset, max_offset=q.max_offset,
                                               broker=broker) for q in created.queues)
        del info.message_types[:]
        info.message_types.extend(created.message_types)
        info.queue_count, info.max_priority = len(info.queues), created.max_priority  # a PRIORITY topic's rounded up
        return info

    async def topics(self, here: dict[str, admin.TopicInfo]) -> dict[str, admin.TopicInfo]:
        """Every topic of the cluster: this broker's own (`here`, changed in place) and those the
        other live brokers registered with the name servers, their queue counts added up."""
        if not self.cluster.enabled:
            return here
        for broker in await self.cluster.brokers():
            if broker.name == self.cluster.name:
                continue
            for t in broker.topics:
                info = here.get(t.topic)
                if info is None:
                    here[t.topic] = admin.TopicInfo(name=t.topic, queue_count=t.queue_count, message_types=t.message_types)
                else:
                    info.queue_count += t.queue_count
        return here

    async def describe(self, me: admin.ClusterBroker) -> admin.ClusterInfo:
        """The brokers the name servers list (the first that answered; `me` without name servers) and
        whether each name server answered."""
        info = admin.ClusterInfo(broker=me.name)
        answers = await self.cluster.name_servers()
        info.name_servers.extend(admin.NameServerState(address=a, answered=b is not None) for a, b in answers)
        listed = next((b for _, b in answers if b is not None), None)
        if listed is None:
            info.brokers.append(me)
            return info
        info.brokers.extend(admin.ClusterBroker(name=b.name, endpoint=b.endpoint, tls=b.tls, epoch=b.epoch,
                                                last_seen_ms=b.last_seen_ms, topics=len(b.topics), replicas=b.replicas)
                            for b in sorted(listed, key=lambda b: b.name))
        return info

    async def create_group(self, request: admin.CreateGroupRequest,
                           here: Callable[[], admin.GroupInfo]) -> admin.GroupInfo:
        """Create a group on every live broker (here alone without name servers, or for a `local`
        request): a FIFO group, its attempts and consume mode must hold wherever its messages are,
        and a broker that met the group first by auto-creation would make it an ordinary one."""
        if not self.cluster.enabled or request.local:
            return here()
        check_name("group", request.name)
        live = await self.cluster.live()
        part = admin.CreateGroupRequest()
        part.CopyFrom(request)
        part.local = True
        done: list[str] = []

        async def created_here(_: admin.CreateGroupRequest) -> admin.GroupInfo:
            return here()

        answers = {broker: await self._create_on(broker, live[broker], "CreateGroup", part, created_here, done)
                   for broker in sorted(live)}
        return answers[self.cluster.name]

    async def _create_on(self, broker: str, endpoint: str, method: str, part: Any,
                         here: Callable[[Any], Awaitable[Info]], done: list[str]) -> Info:
        """`method` with `part` on one broker (this one: `here`), its refusal naming the broker
        and what was created already; `done` gets the broker once it succeeded."""
        note = f" (already created on {', '.join(done)})" if done else ""
        try:
            if broker == self.cluster.name:
                created = await here(part)
            else:
                call: Callable[..., Awaitable[Info]] = getattr(self.cluster.admin(endpoint), method)
                created = await call(part, timeout=RPC_TIMEOUT_S)
        except AlreadyExists as e:
            raise AlreadyExists(f"on broker {broker}: {e.message}{note}") from None
        except BrokerError as e:
            raise BrokerError(e.code, f"on broker {broker}: {e.message}{note}") from None
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.ALREADY_EXISTS:
                raise AlreadyExists(f"on broker {broker}: {e.details()}{note}") from None
            raise relayed(e, f"on broker {broker}: {e.details()}{note}") from None
        done.append(broker)
        return created

    async def delete_topic(self, name: str, local: bool, here: Callable[[], None]) -> None:
        """Delete a topic here (and, in a cluster, unless `local`, on every broker holding it),
        then register at once: routes stop naming its queues. A broker not answering is named
        in the refusal: the topic is gone from the others, and a repeated delete finishes it."""
        if not self.cluster.enabled:
            return here()
        check_name("topic", name)  # before asking anyone: the name servers take "" for every topic
        holders = {h.broker: h.endpoint for h in await self.cluster.holders(name)} if not local else {}
        if local or self.cluster.name in holders or not holders:
            here()  # the topic not being here (NOT_FOUND) is the answer when no broker holds it
            await self.cluster.register_now()
        unreachable = []
        for broker, endpoint in sorted(holders.items()):
            if broker == self.cluster.name:
                continue
            try:
                await self.cluster.admin(endpoint).DeleteTopic(admin.TopicRequest(name=name, local=True), timeout=RPC_TIMEOUT_S)
            except grpc.aio.AioRpcError as e:
                if e.code() in _UNREACHABLE:
                    unreachable.append(broker)
                elif e.code() != grpc.StatusCode.NOT_FOUND:
                    raise relayed(e, f"on broker {broker}: {e.details()}") from None
        if unreachable:
            raise BrokerError(pb.PROXY_TIMEOUT, f"{BROKER_SAYS_UNREACHABLE}: {', '.join(unreachable)}; topic {name!r} "
                                                f"is deleted on the others: delete it again once they are back")

    async def _create_here_and_register(self, request: TopicChange,
                                        here: Callable[[TopicChange], admin.TopicInfo]) -> admin.TopicInfo:
        """In a cluster, answer once the name servers know: routes include the topic from then on."""
        info = here(request)
        await self.cluster.register_now()
        return info

    async def describe_topic(self, name: str, local: bool, here: Callable[[], admin.TopicInfo]) -> admin.TopicInfo:
        if not self.cluster.enabled or local:
            return here()
        parts, unreachable = await self._everywhere("DescribeTopic", admin.TopicRequest(name=name, local=True), here,
                                                    "topic", name)
        info = admin.TopicInfo(name=name, message_types=parts[0].message_types, unreachable=unreachable,
                               lite_topic_ttl_s=parts[0].lite_topic_ttl_s, perm=parts[0].perm,
                               max_priority=parts[0].max_priority)
        for part in parts:
            info.queue_count += part.queue_count
            info.queues.extend(part.queues)
            info.lite_topic_count += part.lite_topic_count
        return info

    async def lite_topics(self, request: admin.ListLiteTopicsRequest,
                          here: Callable[[], admin.ListLiteTopicsResponse]) -> admin.ListLiteTopicsResponse:
        """A page of a LITE topic's lite topics over every broker holding it: each broker's page of
        the same size, merged by name (a lite topic lives on one broker), the first `limit` kept."""
        if not self.cluster.enabled or request.local:
            return here()
        local = admin.ListLiteTopicsRequest()
        local.CopyFrom(request)
        local.local = True
        parts, unreachable = await self._everywhere("ListLiteTopics", local, here, "topic", request.topic)
        found = sorted((t for p in parts for t in p.lite_topics), key=lambda t: t.name)
        limit = page_limit(request.limit, self.cluster.ctx.settings.max_list_page)  # each broker's page, as long
        return admin.ListLiteTopicsResponse(lite_topics=found[:limit], unreachable=unreachable,
                                            more=len(found) > limit or any(p.more for p in parts))

    async def describe_group(self, name: str, local: bool, here: Callable[[], admin.GroupInfo]) -> admin.GroupInfo:
        if not self.cluster.enabled or local:
            return here()
        parts, unreachable = await self._everywhere("DescribeGroup", admin.GroupRequest(name=name, local=True), here,
                                                    "group", name)
        return _merged_group(name, parts, unreachable)

    # --- dead letters, offsets, group and topic changes, clients: asked of every live broker ------

    async def dead_letters(self, request: admin.DlqListRequest,
                           here: Callable[[], admin.DlqListResponse]) -> admin.DlqListResponse:
        """The group's dead letters on every broker, at most `limit` of them in all."""
        if not self.cluster.enabled or request.local:
            return here()
        parts, unreachable = await self._everywhere("ListDeadLetters", _local(request), here, "group", request.group)
        reply = admin.DlqListResponse(unreachable=unreachable)
        for part in parts:
            reply.messages.extend(part.messages)
            reply.more |= part.more
        limit = page_limit(request.limit, self.cluster.ctx.settings.max_list_page)
        if len(reply.messages) > limit:
            del reply.messages[limit:]
            reply.more = True
        return reply

    async def resend(self, request: admin.DlqResendRequest,
                     here: Callable[[], Awaitable[admin.DlqResendResponse]]) -> admin.DlqResendResponse:
        """Dead letters sent back on every broker holding them (one broker after another: the rate holds
        for each); an id is unknown only if no broker that answered holds it."""
        if not self.cluster.enabled or request.local:
            return await here()
        parts, unreachable = await self._everywhere("ResendDeadLetters", _local(request), here, "group", request.group)
        reply = admin.DlqResendResponse(unreachable=unreachable)
        unknown = set(request.message_ids)
        for part in parts:
            reply.resent += part.resent
            reply.skipped_count += part.skipped_count
            reply.skipped.extend(part.skipped[:MAX_REPORTED - len(reply.skipped)])
            unknown &= set(part.unknown)
        reply.unknown.extend(sorted(unknown))
        return reply

    async def purge(self, request: admin.DlqPurgeRequest,
                    here: Callable[[], admin.DlqPurgeResponse]) -> admin.DlqPurgeResponse:
        if not self.cluster.enabled or request.local:
            return here()
        parts, unreachable = await self._everywhere("PurgeDeadLetters", _local(request), here, "group", request.group)
        return admin.DlqPurgeResponse(purged=sum(p.purged for p in parts), unreachable=unreachable)

    async def group_change(self, method: str, request: admin.ResetOffsetRequest | admin.UpdateGroupRequest,
                           name: str, here: Callable[[], admin.GroupInfo]) -> admin.GroupInfo:
        """A reset or an update of the group on every broker that has it (and, for a reset, the topic)."""
        if not self.cluster.enabled or request.local:
            return here()
        parts, unreachable = await self._everywhere(method, _local(request), here, "group", name)
        return _merged_group(name, parts, unreachable)

    async def delete_group(self, request: admin.DeleteGroupRequest,
                           here: Callable[[], admin.DeleteGroupResponse]) -> admin.DeleteGroupResponse:
        """The group deleted on every broker that has it; then routes stop naming its own topics."""
        if not self.cluster.enabled or request.local:
            return here()
        parts, unreachable = await self._everywhere("DeleteGroup", _local(request), here, "group", request.name)
        await self.cluster.register_now()
        return admin.DeleteGroupResponse(unreachable=unreachable)

    async def update_topic(self, request: admin.UpdateTopicRequest,
                           here: Callable[[admin.UpdateTopicRequest], admin.TopicInfo]) -> admin.TopicInfo:
        """The topic changed on every broker holding it, a new queue count spread over them as
        CreateTopic spreads it; then registered at once (routes follow)."""
        if not self.cluster.enabled:
            return here(request)
        if request.local:
            return await self._create_here_and_register(request, here)
        check_name("topic", request.name)
        holders = {h.broker: h.endpoint for h in await self.cluster.holders(request.name)}
        if not holders:
            raise BrokerError(pb.TOPIC_NOT_FOUND, f"no broker has topic {request.name!r}")
        if request.queue_count:
            check_queue_count(request.queue_count, len(holders))
            counts = spread(request.queue_count, list(holders))
        else:
            counts = {}
        info = admin.TopicInfo(name=request.name)
        done: list[str] = []
        for broker, endpoint in sorted(holders.items()):
            part = admin.UpdateTopicRequest(name=request.name, perm=request.perm, local=True,
                                            queue_count=counts.get(broker, 0))
            updated = await self._create_on(broker, endpoint, "UpdateTopic", part,
                                             lambda p: self._create_here_and_register(p, here), done)
            info.queue_count += updated.queue_count
            info.perm = updated.perm
            info.message_types[:] = updated.message_types
        return info

    async def clients(self, request: admin.ListClientsRequest,
                      here: Callable[[], admin.ListClientsResponse]) -> admin.ListClientsResponse:
        """The clients connected to every live broker (of a group or topic, which some broker must have)."""
        if not self.cluster.enabled or request.local:
            return here()
        if request.group or request.topic:
            kind, name = ("group", request.group) if request.group else ("topic", request.topic)
            parts, unreachable = await self._everywhere("ListClients", _local(request), here, kind, name)
        else:
            live = await self.cluster.live()
            parts, unreachable, _ = await self._ask(sorted(live), live, "ListClients", _local(request), here, "clients")
        reply = admin.ListClientsResponse(unreachable=unreachable, more=any(part.more for part in parts))
        for part in parts:
            reply.clients.extend(part.clients)
        return reply

    async def _everywhere(self, method: str, request: Any, here: Callable[[], Part | Awaitable[Part]], kind: str,
                          name: str) -> tuple[list[Part], list[str]]:
        """`method` answered by every live broker that has the topic or group (this one
        directly) -> (the answers, the brokers that could not be reached). A broker killed a
        moment ago is still registered: the caller tells what is missing instead of failing.
        None has it: the first broker's refusal (it names what is missing), NOT_FOUND."""
        check_name(kind, name)  # before asking anyone
        live = await self.cluster.live()
        parts, unreachable, missing = await self._ask(sorted(live), live, method, request, here, name)
        if not parts:
            if unreachable:
                raise BrokerError(pb.PROXY_TIMEOUT, f"{BROKER_SAYS_UNREACHABLE}: {', '.join(unreachable)}; "
                                                    f"no broker that answered has {kind} {name!r}")
            raise BrokerError(pb.NOT_FOUND, missing or f"no broker has {kind} {name!r}")
        return parts, unreachable

    async def _ask(self, brokers: list[str], live: dict[str, str], method: str, request: Any,
                   here: Callable[[], Part | Awaitable[Part]], name: str) -> tuple[list[Part], list[str], str]:
        """`method` answered by each of `brokers` (this one directly) -> (the answers of those that
        have the topic or group, the brokers that could not be reached, the first not-found refusal)."""
        parts: list[Part] = []
        unreachable: list[str] = []
        missing = ""
        timeout = PACED_TIMEOUT_S if getattr(request, "rate", 0) else RPC_TIMEOUT_S  # a paced resend takes its time
        for broker in brokers:
            try:
                if broker == self.cluster.name:
                    answer = here()
                    parts.append(await answer if inspect.isawaitable(answer) else answer)
                else:
                    call: Callable[..., Awaitable[Part]] = getattr(self.cluster.admin(live[broker]), method)
                    parts.append(await call(request, timeout=timeout))
            except BrokerError as e:
                if not e.not_found:
                    raise
                missing = missing or e.message
            except grpc.aio.AioRpcError as e:
                if e.code() in _UNREACHABLE:
                    log.warning("%s %r: broker %s did not answer: %s", method, name, broker, e.details())
                    unreachable.append(broker)
                elif e.code() != grpc.StatusCode.NOT_FOUND:
                    raise relayed(e, f"on broker {broker}: {e.details()}") from None
                else:
                    missing = missing or (e.details() or "")
        return parts, unreachable, missing


def _local(request: Any) -> Any:
    """`request` as the broker it reached asks another: for that broker alone."""
    part = type(request)()
    part.CopyFrom(request)
    part.local = True
    return part


def _merged_group(name: str, parts: list[admin.GroupInfo], unreachable: list[str]) -> admin.GroupInfo:
    """A group as every broker that answered describes it."""
    first = parts[0]
    info = admin.GroupInfo(name=name, fifo=first.fifo, max_attempts=first.max_attempts, unreachable=unreachable,
                           consume_mode=next((p.consume_mode for p in parts if p.consume_mode), ""))
    for part in parts:
        info.inflight += part.inflight
        info.queues.extend(part.queues)
    return info
