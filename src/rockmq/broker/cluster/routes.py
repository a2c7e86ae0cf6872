"""This broker's place in a cluster: it registers with the name servers and reads routes from them.

Each broker holds its own queues of a topic, numbered from 0 (as in RocketMQ: a queue is named
by broker and id). A route lists every broker's queues interleaved — b1:0, b2:0, b3:0, b1:1, … —
so a client that retries on the next queue lands on another broker. Without name servers the
broker is a cluster of one and routes name only itself. Only the broker that takes its name's
writes names itself: a replica, and a primary a promoted replica superseded (fencing.py, learnt from
a registration reply carrying the new epoch's proof), route clients to the primary of their name instead, so that a client given
any member of a group (official clients "replica;primary") sends where sends are taken.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import grpc

from rockmq.auth.inner import inner_credentials
from rockmq.auth.inner_calls import NotProven, inner_channel
from rockmq.broker import validate
from rockmq.broker.cluster.fencing import Fence, epoch_proof, successor
from rockmq.broker.context import BrokerContext
from rockmq.broker.metadata import TopicConfig, is_lite
from rockmq.protocol import admin, admin_grpc, namesrv, namesrv_grpc, pb
from rockmq.protocol.conventions import DLQ_PREFIX, RETRY_PREFIX, check_name
from rockmq.protocol.errors import BrokerError

S = TypeVar("S")  # a service stub
log = logging.getLogger(__name__)
ROUTE_TTL_S = 1.0  # a route change reaches every broker's answers within interval + ttl
RPC_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Holder:
    """One broker's share of a topic."""

    broker: str
    endpoint: str  # HOST:PORT (TLS if `tls`)
    queues: int
    message_types: tuple[str, ...] = ()
    tls: bool = False
    plaintext_endpoint: str = ""  # with `tls`: its plaintext listener, if it has one
    writable: bool = True  # False: a replica whose primary is out of reach, listed for readers only
    perm: str = "rw"  # the topic's permission here (metadata.PERMS); another broker's is its own to enforce

    @classmethod
    def of(cls, info: namesrv.BrokerInfo, queues: int, message_types: tuple[str, ...]) -> Holder:
        return cls(info.name, info.endpoint, queues, message_types, info.tls, info.plaintext_endpoint)

    def endpoint_for(self, tls: bool) -> str:
        """Where a client that came in over TLS (or in plaintext) reaches this broker: its listener
        of that kind, else the one it has."""
        return self.plaintext_endpoint if not tls and self.tls and self.plaintext_endpoint else self.endpoint


@dataclass
class PrimaryLink:
    """A replica's primary as its Follower (replication.py) sees it now: where it follows it, and
    whether the connection is up. Routes send writers there while it is, and readers to the replica
    itself while it is not (the primary is gone: the replica is what there is to read)."""

    endpoint: str = ""
    up: bool = False


def interleave(holders: list[Holder]) -> list[tuple[Holder, int]]:
    """Every (broker, queue id) of a topic, round robin over the brokers (pure)."""
    ordered = sorted(holders, key=lambda h: h.broker)
    most = max((h.queues for h in ordered), default=0)
    return [(h, q) for q in range(most) for h in ordered if q < h.queues]


def spread(queues: int, brokers: list[str]) -> dict[str, int]:
    """How many queues each broker gets when a topic of `queues` queues is created over them."""
    chosen = sorted(brokers)[:queues]
    base, extra = divmod(queues, len(chosen))
    return {b: base + (i < extra) for i, b in enumerate(chosen)}


Lags = Callable[[float], dict[str, tuple[int, float]]]  # Replicator.replica_lags


class Cluster:
    def __init__(self, ctx: BrokerContext, fence: Fence, lags: Lags | None = None) -> None:
        self.ctx = ctx
        self.fence = fence
        self._lags = lags  # a primary's replicas, registered with it (a replica and a standalone broker: none)
        self.name = ctx.settings.broker_name
        self.namesrv = [a.strip() for a in ctx.settings.namesrv.split(",") if a.strip()]
        self.tls = ctx.settings.client_tls  # how this broker reaches name servers and other brokers
        # Every call to name servers and other brokers is signed with the inner credentials (if any),
        # and goes only to those that proved they hold them (auth/inner_calls.py).
        self._inner = inner_credentials(ctx.settings)
        self._stubs = [namesrv_grpc.NameServerStub(inner_channel(a, self.tls, self._inner)) for a in self.namesrv]
        self._channels: dict[str, grpc.aio.Channel] = {}  # to other brokers
        self._admins: dict[str, admin_grpc.AdminStub] = {}
        self._services: dict[tuple[str, Callable[[grpc.aio.Channel], Any]], Any] = {}
        self._routes: dict[str, tuple[float, list[Holder]]] = {}
        self._unreachable: set[str] = set()
        self.primary = PrimaryLink()  # a replica's, kept by its Follower

    @property
    def enabled(self) -> bool:
        return bool(self.namesrv)

    @property
    def endpoint(self) -> str:
        return self.ctx.logs.store_host

    @property
    def writer(self) -> bool:
        """Whether this broker takes its name's writes: not a replica, not a fenced primary."""
        return not self.ctx.read_only and not self.fence.fenced

    @property
    def here(self) -> str:
        """The broker name routes name at the address the client used to get here: this one's while
        it is the `writer`, else none (its name is the primary's, reached where that one is)."""
        return self.name if self.writer else ""

    def _me(self) -> namesrv.BrokerInfo:
        s = self.ctx.settings
        epoch = self.fence.epoch
        info = namesrv.BrokerInfo(name=self.name, endpoint=self.endpoint, tls=bool(s.tls_cert),
                                  plaintext_endpoint=s.plaintext_address, epoch=epoch,
                                  epoch_proof=epoch_proof(self.ctx.secret, epoch), successor=successor(self.ctx.secret, epoch))
        for t in self.ctx.meta.topics.values():
            info.topics.add(topic=t.name, queue_count=t.queues, message_types=t.message_types)
        info.replicas.extend(self.replicas())
        return info

    def replicas(self) -> list[namesrv.ReplicaInfo]:
        """The replicas following this broker now, by endpoint."""
        lags = self._lags(time.time()) if self._lags is not None else {}
        return [namesrv.ReplicaInfo(endpoint=e, lag_messages=m, lag_seconds=s) for e, (m, s) in sorted(lags.items())]

    async def register_forever(self) -> None:
        """Register with every name server every `namesrv_interval_s` (each on its own)."""
        while True:
            await self.register_now()
            await asyncio.sleep(self.ctx.settings.namesrv_interval_s)

    async def register_now(self) -> None:
        """Register at once (after a topic was created here, so that routes show it)."""
        me = self._me()
        await asyncio.gather(*(self._register(a, s, me) for a, s in zip(self.namesrv, self._stubs)))

    async def _register(self, address: str, stub: namesrv_grpc.NameServerStub, me: namesrv.BrokerInfo) -> None:
        try:
            reply = await stub.Register(namesrv.RegisterRequest(broker=me), timeout=RPC_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:
            if address not in self._unreachable and not isinstance(e, NotProven):  # that one said why (inner_calls.py)
                log.warning("cannot register with name server %s: %s", address, e.code().name)
                self._unreachable.add(address)
            return
        if not self.fence.learn_proven(reply.epoch, reply.epoch_proof, self.ctx.secret, f"name server {address}"):
            self.fence.confirm(f"name server {address}")
        if address in self._unreachable:
            log.info("registered with name server %s again", address)
            self._unreachable.discard(address)

    async def unregister(self) -> None:
        """Leave routes at once (a draining broker): every name server drops this broker's registration."""
        me = namesrv.BrokerInfo(name=self.name, endpoint=self.endpoint, epoch=self.fence.epoch)
        await asyncio.gather(*(self._unregister(a, s, me) for a, s in zip(self.namesrv, self._stubs)))

    async def _unregister(self, address: str, stub: namesrv_grpc.NameServerStub, me: namesrv.BrokerInfo) -> None:
        try:
            await stub.Unregister(namesrv.UnregisterRequest(broker=me), timeout=RPC_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:  # it drops this broker at its timeout instead
            log.warning("cannot unregister from name server %s: %s", address, e.code().name)

    async def brokers(self, topic: str = "") -> list[namesrv.BrokerInfo]:
        """Live brokers (holding `topic`, if given) by the first name server that answers."""
        for address, stub in zip(self.namesrv, self._stubs):
            try:
                reply = await stub.ListBrokers(namesrv.ListBrokersRequest(topic=topic), timeout=RPC_TIMEOUT_S)
                return list(reply.brokers)
            except grpc.aio.AioRpcError as e:
                log.debug("name server %s: %s", address, e.code().name)
        return []

    async def name_servers(self) -> list[tuple[str, list[namesrv.BrokerInfo] | None]]:
        """Each name server with the live brokers it lists, or None if it did not answer (asked together)."""
        async def ask(stub: namesrv_grpc.NameServerStub) -> list[namesrv.BrokerInfo] | None:
            try:
                reply = await stub.ListBrokers(namesrv.ListBrokersRequest(), timeout=RPC_TIMEOUT_S)
            except grpc.aio.AioRpcError:
                return None
            return list(reply.brokers)

        return list(zip(self.namesrv, await asyncio.gather(*(ask(stub) for stub in self._stubs))))

    async def live(self) -> dict[str, str]:
        """Live brokers, name -> endpoint, this one included (registered yet or not)."""
        live = {b.name: b.endpoint for b in await self.brokers()}
        live[self.name] = self.endpoint
        return live

    async def endpoint_of(self, broker: str) -> str | None:
        """Where a broker registered, by name (None: not registered)."""
        return next((b.endpoint for b in await self.brokers() if b.name == broker), None)

    async def epoch_of(self, broker: str) -> int:
        """The primary epoch a name server holds for a broker name (0: none, or no name server answers)."""
        return max((b.epoch for b in await self.brokers() if b.name == broker), default=0)

    def admin(self, endpoint: str) -> admin_grpc.AdminStub:
        """The admin service of another broker (channels kept per endpoint)."""
        stub = self._admins.get(endpoint)
        if stub is None:
            stub = self._admins[endpoint] = admin_grpc.AdminStub(self._channel(endpoint))
        return stub

    def service(self, endpoint: str, stub: Callable[[grpc.aio.Channel], S]) -> S:
        """A service of another broker, by its stub class (Users, Acls; on the admin service's channel)."""
        known = self._services.get((endpoint, stub))
        if known is None:
            known = self._services[(endpoint, stub)] = stub(self._channel(endpoint))
        return cast(S, known)

    def _channel(self, endpoint: str) -> grpc.aio.Channel:
        channel = self._channels.get(endpoint)
        if channel is None:
            channel = self._channels[endpoint] = inner_channel(endpoint, self.tls, self._inner)
        return channel

    async def holders(self, topic_name: str) -> list[Holder]:
        """Who holds the topic for writes: this broker, by its own truth (registered or not), while it
        is the `writer`; else the primary of its name (`_primary`); and the other brokers the name
        servers know."""
        local = self.ctx.meta.topics.get(topic_name)
        s = self.ctx.settings
        others = await self._registered(topic_name) if self.enabled else []
        if local is None or (self.ctx.draining and others):  # draining: clients go to the others
            return others
        if self.writer or (self.ctx.read_only and not self.primary.up):
            mine = Holder(self.name, self.endpoint, local.queues, tuple(local.message_types), bool(s.tls_cert),
                          s.plaintext_address, writable=self.writer, perm=local.perm)
            return [mine, *(h for h in others if h.broker != self.name)]
        return [*self._primary(local, others), *others]

    def _primary(self, local: TopicConfig, registered: list[Holder]) -> list[Holder]:
        """A replica's primary, which the name servers do not list (none, or not registered): where
        the replica follows it, with the topic's queues as this replica holds them (its primary's).
        Listed, it is among `registered` already; a fenced primary's successor is known only there."""
        primary = self.primary.endpoint
        if not self.ctx.read_only or not primary or any(h.broker == self.name for h in registered):
            return []
        return [Holder(self.name, primary, local.queues, tuple(local.message_types))]

    async def _registered(self, topic_name: str) -> list[Holder]:
        """The brokers the name servers list as holding the topic, cached for ROUTE_TTL_S: every other
        broker, and this broker's name too (its primary) unless this one is the `writer`."""
        cached = self._routes.get(topic_name)
        if cached is None or time.monotonic() - cached[0] > ROUTE_TTL_S:
            others = [Holder.of(b, b.topics[0].queue_count, tuple(b.topics[0].message_types))
                      for b in await self.brokers(topic_name) if (b.name != self.name or not self.writer) and b.topics]
            cached = (time.monotonic(), others)
            if others:  # "nobody else holds it" is never cached: a topic just created elsewhere shows up at once
                self._routes[topic_name] = cached
            if len(self._routes) > 10_000:  # bounded: forget the oldest half
                for name in sorted(self._routes, key=lambda n: self._routes[n][0])[:5_000]:
                    del self._routes[name]
        return cached[1]

    async def route(self, topic_name: str, per_broker: bool = False) -> list[tuple[Holder, int]]:
        """The topic's queues on every broker, interleaved; `per_broker`: one entry (queue id -1)
        each. A topic no broker holds is created here if auto-creation is on."""
        holders = await self.holders(topic_name)
        if not holders:
            await self._auto_create(topic_name)
            holders = await self.holders(topic_name)
        return [(h, -1) for h in holders] if per_broker else interleave(holders)

    async def _auto_create(self, topic_name: str) -> None:
        """A topic no broker holds, created as auto-creation says: in a cluster, an ordinary topic
        gets its queues spread over the live brokers as `rockmq topic create` spreads them (so
        clients spread over them, as over the shards of `rockmq serve --workers`); a group's
        retry or dead-letter topic, like any topic of a single broker, is made here only. A
        broker that has it already (a concurrent auto-creation) or does not answer keeps its
        share or is left out. A dead-letter topic only of a group that exists (the broker's own, as
        its first dead letter would make it; a consumer may read it before): the route of a send to
        `%DLQ%anything`, which is refused, must leave nothing behind."""
        if topic_name.startswith(DLQ_PREFIX) and topic_name[len(DLQ_PREFIX):] not in self.ctx.meta.groups:
            raise BrokerError(pb.TOPIC_NOT_FOUND, f"topic {topic_name!r} does not exist: a dead-letter topic is made by "
                                                  "the broker with its group's first dead letter, and takes no sends")
        target = validate.topic_or_new(topic_name, self.ctx.meta, self.ctx.settings)
        self.ctx.may_create(target)  # before any broker creates it
        if not self.enabled or self.ctx.read_only or not isinstance(target, validate.NewTopic) or \
                topic_name.startswith(RETRY_PREFIX):
            self.ctx.ensure_topic(target)
            return
        live = await self.live()
        for broker, count in spread(target.queues, sorted(live)).items():
            part = dataclasses.replace(target, queues=count)
            if broker == self.name:
                self.ctx.ensure_topic(part)  # or the one a concurrent auto-creation made
                continue
            request = admin.CreateTopicRequest(name=topic_name, queue_count=count, local=True)
            try:
                await self.admin(live[broker]).CreateTopic(request, timeout=RPC_TIMEOUT_S)
            except grpc.aio.AioRpcError as e:
                if e.code() != grpc.StatusCode.ALREADY_EXISTS:
                    log.warning("auto-creating topic %r: broker %s: %s", topic_name, broker, e.details())
        await self.register_now()

    async def assignment(self, topic_name: str, group_name: str) -> list[tuple[Holder, int]]:
        """What a group's consumers are assigned: for a FIFO group every queue, long-polled in
        order; else one entry per broker, popping across all its queues. A bad topic name is
        refused before the group is looked up (or auto-created: a read, which creates nothing on
        a replica or a fenced primary)."""
        check_name("topic", topic_name)
        group = self.ctx.group_to_read(group_name)
        topic = self.ctx.meta.topics.get(topic_name)
        lite = topic is not None and is_lite(topic)  # a lite consumer's receive serves its lite topics, whatever queue
        return await self.route(topic_name, per_broker=lite or not group.fifo)

    def local_topic(self, topic_name: str, queue_id: int, owner: str) -> TopicConfig:
        """The local topic of a queue a request names; a queue of another broker is refused
        (queue ids are per broker: serving it here would silently read the wrong queue)."""
        if owner and owner != self.name:
            raise BrokerError(pb.BAD_REQUEST, f"queue {queue_id} of topic {topic_name!r} belongs to broker {owner!r}; "
                                              f"this is broker {self.name!r}: send the request to {owner}'s endpoint")
        return self.ctx.meta.topic(topic_name)
