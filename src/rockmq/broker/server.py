"""Assemble a broker (store, services, gRPC servicers) and run it until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import sys
import time
from collections.abc import Callable
from typing import TypeVar, cast

import grpc
from grpc_health.v1 import health_pb2_grpc

from rockmq import compiled
from rockmq.auth.access import AccessControl
from rockmq.auth.acl_store import AclStoreError
from rockmq.auth.exposure import warn_if_open
from rockmq.auth.inner import Prover, inner_user
from rockmq.auth.plaintext import TlsOnlyControlPlane
from rockmq.auth.principals import Principals
from rockmq.auth.serving import AuthSetupError, open_users, seam
from rockmq.auth.slots import CallSlots, grpc_call_limit
from rockmq.auth.users import Users
from rockmq.broker.api.acls import AclsServicer
from rockmq.broker.api.admin import AdminServicer
from rockmq.broker.api.batch import BatchServicer
from rockmq.broker.api.health import HealthServicer
from rockmq.broker.api.messages import MessagesServicer
from rockmq.broker.api.messaging import MessagingServicer
from rockmq.broker.api.read_fence import ReadFence
from rockmq.broker.api.read_only import ReadOnly
from rockmq.broker.api.users import UsersServicer
from rockmq.broker.catalog import Catalog
from rockmq.broker.clients import Clients
from rockmq.broker.clock import now_ms
from rockmq.broker.cluster.admin_fanout import AdminFanout
from rockmq.broker.cluster.fencing import Fence, former_primary, tell_former_primary
from rockmq.broker.cluster.lite_relay import LiteRelay
from rockmq.broker.cluster.lite_routing import LiteRouting
from rockmq.broker.cluster.message_fanout import MessageSearch
from rockmq.broker.cluster.replication import Follower, OpLog, Replicator, was_promoted
from rockmq.broker.cluster.reseed import prepare
from rockmq.broker.cluster.routes import Cluster
from rockmq.broker.commit import Committer
from rockmq.broker.context import BrokerContext, start_epoch
from rockmq.broker.coordination.coordinator import CoordinatorError
from rockmq.broker.coordination.in_sync import InSyncKeeper
from rockmq.broker.coordination.membership import Membership, broker_settings, held_in, position, take_role
from rockmq.broker.coordination.status import StatusReporter
from rockmq.broker.dead_letters import DeadLetters
from rockmq.broker.dedup import Dedup
from rockmq.broker.group_admin import GroupAdmin
from rockmq.broker.health import Health
from rockmq.broker.http_port import open_http_port
from rockmq.broker.lite.expiry import LiteExpiry
from rockmq.broker.lite.subscriptions import LiteSubscriptions
from rockmq.broker.lite.topics import LiteTopics
from rockmq.broker.matches import MatchIndex
from rockmq.broker.message_lookup import MessageLookup
from rockmq.broker.metrics import BrokerMetrics
from rockmq.broker.pop.checkpoints import Checkpoints
from rockmq.broker.pop.fifo import FifoLocks
from rockmq.broker.pop.renew import Renewals
from rockmq.broker.pop.revive import Reviver
from rockmq.broker.pop.service import PopService
from rockmq.broker.positions import Positions
from rockmq.broker.pull import PullService
from rockmq.broker.retention import RetentionService
from rockmq.broker.send import SendService
from rockmq.broker.staging import StagingService
from rockmq.broker.stalled_streams import StalledStreams
from rockmq.broker.startup import CannotStart, check_can_listen, check_data_dir
from rockmq.broker.subscriptions import Subscriptions
from rockmq.broker.timers import TimerService
from rockmq.broker.transactions import TransactionService
from rockmq.config import Settings
from rockmq.plumbing.channels import CHANNEL_OPTIONS, open_aio_channel
from rockmq.plumbing.connection_limits import raise_fd_limit, watch
from rockmq.plumbing.ready_file import write_ready_file
from rockmq.plumbing.stop_signals import stop_event
from rockmq.plumbing.tls import add_port, server_credentials
from rockmq.plumbing.unparsed import Guarding
from rockmq.protocol import acl_grpc, admin_grpc, inner_grpc, messages_grpc, replication_grpc, users_grpc
from rockmq.store import Store
from rockmq.store.disk_space import log_failure

log = logging.getLogger(__name__)
S = TypeVar("S")
HOUSEKEEPING_S = 10
STOP_GRACE_S = 2.0  # calls in flight when the broker stops (not drains: a promotion, a re-seed, a test)
DRAIN_NOTICE_S = 1.0  # how long a draining broker of a cluster keeps refusing before it stops listening
# The fsync thread must get the GIL back quickly to complete the sends it covered; the
# default 5 ms switch interval shows up directly in the send latency tail.
SWITCH_INTERVAL_S = 0.0005


def _listen(s: Settings, following: bool, users: Users | None, access: AccessControl | None = None,
            reads: ReadFence | None = None) -> tuple[grpc.aio.Server, Settings]:
    """The broker's gRPC server, bound -> (it, the settings with the ports it got); with `users`, every
    request is authenticated (auth/seam.py; the control plane with the inner credentials, auth/inner.py)
    and, with `access`, authorized (auth/access.py); a replica's refuses writes; with `reads` (a
    coordinated member's), reads wait for the member's log to be the group's. With a certificate,
    `port` is TLS and `plaintext_port` (if any) plaintext, serving the client data plane only
    (auth/plaintext.py)."""
    authorize = access.authorize if access is not None else None
    tls_only = TlsOnlyControlPlane() if s.tls_cert and s.plaintext_port >= 0 else None
    interceptors: list[grpc.aio.ServerInterceptor] = [tls_only] if tls_only is not None else []  # first: before auth
    if users is not None:
        interceptors.append(seam(users, s, authorize))
        interceptors.append(CallSlots(s.user_call_slots, s.max_streams_per_user))  # after the seam: who it admitted
    if following:
        interceptors.append(ReadOnly(s.replica_of))
    if reads is not None:
        interceptors.append(reads)
    calls = grpc_call_limit(s.max_concurrent_rpcs) if users is not None else s.max_concurrent_rpcs
    server = grpc.aio.server(maximum_concurrent_rpcs=calls, interceptors=interceptors, options=[
        *CHANNEL_OPTIONS,  # the clients' limits: bigger than any valid request (oversize bodies get a RocketMQ status)
        *s.connection_limits.server_options(),
        ("grpc.so_reuseport", 0),
    ])
    port = add_port(server, f"{s.host}:{s.port}", server_credentials(s.tls_cert, s.tls_key))
    if port == 0:
        raise CannotStart(f"cannot listen on {s.host}:{s.port}")
    if tls_only is not None:
        tls_only.tls_address = f"{s.host}:{port}"
    plaintext = s.plaintext_port
    if plaintext >= 0 and (plaintext := add_port(server, f"{s.host}:{s.plaintext_port}", None)) == 0:
        raise CannotStart(f"cannot listen on {s.host}:{s.plaintext_port} (--plaintext-port)")
    return server, dataclasses.replace(s, port=port, plaintext_port=plaintext)


class Broker:
    def __init__(self, settings: Settings, membership: Membership | None = None) -> None:
        """Every part of the broker, built in dependency order: each gets what it uses. With `membership`
        (--coordinator), in the role its coordinator gave it: primary, or following the primary."""
        if membership is not None:
            settings = broker_settings(settings, membership.joined, membership.member)
        self.settings = s = settings
        # A primary numbers and keeps its batches for replicas (from when the Replicator starts the log).
        oplog = OpLog(s.replication_ring_bytes) if s.replication != "off" else None
        # cancels server streams their clients do not read, and bounds what the receives being written hold
        self.streams = StalledStreams(s.stream_send_timeout_s, s.stream_buffer_bytes, s.stream_buffer_total_bytes)
        prepare(s.data_path)  # a re-seeded replica's copy swapped in (reseed.py), a checkpoint being sent removed
        store = Store(s.data_path, s.flush, s.flush_interval_ms, oplog, s.store_memory_mib, s.disk_reserve_mib)
        if membership is not None:
            take_role(store, membership.joined, membership.member)
        secret, epoch = start_epoch(store)
        promoted = was_promoted(store)
        if s.replica_of and promoted:
            log.warning("this broker was promoted: it no longer follows %s", s.replica_of)
        following = bool(s.replica_of) and not promoted
        # a coordinated member's reads wait while its log may not be the group's (stepped down, not yet rejoined)
        self.reads = ReadFence(s.broker_name) if membership is not None else None
        try:
            self.users = open_users(s)
            self.access = AccessControl(s.data_path)
            # Records carry the address the broker advertises: the port it really got (0 = any free one).
            self.server, self.settings = _listen(s, following, self.users if s.auth_enabled else None, self.access,
                                                 self.reads)
        except (CannotStart, AuthSetupError, AclStoreError) as e:
            store.close()
            raise CannotStart(str(e)) from None
        s = self.settings
        self.port = s.port
        # A replica writes nothing of its own; it holds its primary's users and ACLs (handed on only with auth on).
        principals = Principals(self.users, self.access)
        # A primary stops its writers once superseded, and starts them once it confirms it still is one.
        self.fence = (Fence(store, s.broker_name, s.force_primary) if following else
                      Fence(store, s.broker_name, s.force_primary, on_fenced=self._fenced, on_confirmed=self._write))
        self.replicator = (Replicator(store, oplog, s, secret, epoch, self.fence, self.streams,
                                      principals if s.auth_enabled else None)
                           if not following and oplog is not None else None)
        # a coordinated group's primary keeps its in-sync set, which a sync send waits for in full
        self.in_sync = (membership.in_sync_keeper(s.replica_max_lag_ms / 1000, s.replication == "sync")
                        if membership is not None and self.replicator is not None else None)
        if self.replicator is not None:
            self.replicator.in_sync = self.in_sync
        # ... and reports how far behind each member is (`rockmq broker group`, `broker elect --unclean`)
        self.reporter = (StatusReporter(membership.coordinator, s.broker_name, membership.member, self.fence.epoch)
                         if self.in_sync is not None and membership is not None else None)  # its epoch: the role's
        matches = MatchIndex(s.filter_index_properties)
        self.ctx = ctx = BrokerContext.open(s, store, secret, epoch, read_only=following, index=matches,
                                            authorize_create=self.access.may_create if s.auth_enabled else None)
        self.cluster = Cluster(ctx, self.fence, self.replicator.replica_lags if self.replicator is not None else None)
        self._channel_here: grpc.aio.Channel | None = None  # the dashboard's (stub_here)
        self._stubs_here: dict[Callable[[grpc.aio.Channel], object], object] = {}
        self.promoted = asyncio.Event()  # set once a Promote call made this replica a primary
        self.reseeded = asyncio.Event()  # set once this replica holds a whole copy of its primary's store
        self.follower = (Follower(ctx, s.replica_of, self.cluster, self.promoted.set, principals, self.reseeded.set,
                                  membership.member if membership is not None else "", oplog) if following else None)
        self.health = Health(ctx, self.fence, self.follower)  # readiness: grpc.health.v1, /readyz
        self.committer = Committer(store, ctx.logs, s, self.replicator,
                                   membership.writable_until if membership is not None and not following else None)
        if self.reads is not None:  # a primary while it may write, a replica while its primary took its history
            follower = self.follower
            self.reads.serves = (lambda: follower.attached) if follower is not None else self.committer.may_write
        self.dedup = Dedup(store, s.dedup_window_s)
        self.subscriptions = Subscriptions(ctx, matches)
        checkpoints = Checkpoints(store, secret, epoch)
        self.renewals = Renewals(checkpoints, s.auto_renew_invisible_ms, s.client_silence_s, s.max_renewals)
        lite_topics = LiteTopics(store, s.max_lite_topics_per_topic)
        self.lite = LiteSubscriptions(lite_topics, ctx.logs.arrivals,
                                      s.lite_subscription_quota, s.max_clients)
        self.clients = Clients(ctx, self.subscriptions, self.renewals, self.lite)
        self.lite_expiry = LiteExpiry(ctx, self.lite, self.clients.unsubscribed_lite)
        self.timers = TimerService(ctx, self.committer)
        self.transactions = TransactionService(ctx, self.timers, self.committer, self.clients)
        self.lite_routing = LiteRouting(self.cluster)
        self.sender = SendService(ctx, self.timers, self.transactions, self.dedup, self.committer, self.lite,
                                  self.lite_routing)
        self.staging = StagingService(ctx, self.timers, self.dedup, self.committer)
        self.retention = RetentionService(ctx, self.subscriptions)
        fifo = FifoLocks()
        self.reviver = Reviver(ctx, checkpoints, fifo)
        self.pop = PopService(ctx, checkpoints, fifo, self.reviver, self.renewals, self.committer, self.subscriptions,
                              self.clients, self.lite)
        self.puller = PullService(ctx, self.clients)
        self.positions = Positions(ctx, self.pop, self.puller)
        self.catalog = Catalog(ctx, self.subscriptions, self.positions, AdminFanout(self.cluster), self.cluster.name,
                               DeadLetters(ctx, self.reviver, fifo, self.cluster.name),
                               GroupAdmin(ctx, self.pop, self.puller, self.subscriptions, self.clients), self.clients,
                               lite_topics)
        self.metrics = BrokerMetrics(ctx, self.positions, self.clients, self.timers, self.transactions, self.streams,
                                     lambda: self.replicator)
        self._tasks: list[asyncio.Task[None]] = []
        self._writing = False  # the background writers started (`_write`)
        self._told: asyncio.Task[None] | None = None  # telling the former primary of the new epoch
        self._watching: asyncio.Task[None] | None = None  # cancelling the streams clients do not read
        self._registering: asyncio.Task[None] | None = None  # with the name servers, every namesrv_interval_s

    async def start(self) -> int:
        messaging = MessagingServicer(self.ctx, self.sender, self.pop, self.puller, self.timers, self.transactions,
                                      self.clients, self.cluster, self.streams, self.lite, self.lite_routing,
                                      LiteRelay(self.cluster), self.access if self.settings.auth_enabled else None)
        self.server.add_generic_rpc_handlers((messaging.handler(),))
        guarding = Guarding(self.server)  # the generated services' unary methods refuse bytes that do not parse
        admin = AdminServicer(self.catalog, self.timers, self.transactions, self.clients, self.follower)
        admin_grpc.add_AdminServicer_to_server(admin, guarding)
        acl_grpc.add_AclsServicer_to_server(AclsServicer(self.access, self.settings.auth_enabled, self.cluster), guarding)
        if self.replicator is not None:
            replication_grpc.add_ReplicationServicer_to_server(self.replicator, guarding)
        users = UsersServicer(self.users, self.settings.auth_enabled, self.cluster, self.access.forget)
        users_grpc.add_UsersServicer_to_server(users, guarding)
        search = MessageSearch(MessageLookup(self.ctx, self.cluster.name), self.cluster)
        messages_grpc.add_MessagesServicer_to_server(MessagesServicer(search), guarding)
        inner_grpc.add_InnerServicer_to_server(Prover(inner_user(self.settings)), guarding)
        health_pb2_grpc.add_HealthServicer_to_server(HealthServicer(self.health), guarding)
        batch = BatchServicer(self.ctx, self.clients, self.pop, self.puller, self.staging,
                              self.access if self.settings.auth_enabled else None)
        self.server.add_generic_rpc_handlers((batch.handler(),))
        if self.follower is None:  # before the first call: a Follow stream may fence it at once
            self.fence.guard("a name server or its replica" if self.cluster.enabled else "its replica")
            self.committer.guard()  # a coordinated primary writes nothing past its lease
        await self.server.start()
        self._watching = asyncio.create_task(self.streams.run())  # as long as it serves, fenced or not
        if self.follower is not None:  # a replica writes nothing of its own
            self._tasks = [asyncio.create_task(t) for t in (self.follower.run(), self.ctx.store.space.watch())]
            return self.port
        if former_primary(self.ctx.store):
            self._told = asyncio.create_task(tell_former_primary(self.ctx.store, self.fence.epoch, self.ctx.secret,
                                                                 self.settings))
        if self.fence.fenced:  # superseded before this start: it serves reads only
            return self.port
        self._tasks.append(asyncio.create_task(self.ctx.store.space.watch()))  # `_write` may have begun: a call confirmed it
        if self.in_sync is not None and self.replicator is not None:
            self._tasks.append(asyncio.create_task(self._keep_in_sync(self.in_sync, self.replicator)))
        if self.reporter is not None and self.replicator is not None:
            replicator = self.replicator
            self._tasks.append(asyncio.create_task(self.reporter.run(lambda: replicator.members,
                                                                     lambda: replicator.batches.seq, replicator.batches.lag)))
        if self.fence.confirmed:  # else a restarted primary of a replicated group: `_write` once it confirms
            self._write()
        if self.cluster.enabled:
            if not self.fence.confirmed:
                await self.cluster.register_now()  # a name server confirms (or fences) it before it is ready
            self._registering = asyncio.create_task(self.cluster.register_forever())
            self._tasks.append(self._registering)
        return self.port

    async def _keep_in_sync(self, keeper: InSyncKeeper, replicator: Replicator) -> None:
        """Keep the in-sync set with the replicas as they follow (in_sync.py): their lag is the age of the
        first batch each has not applied."""
        await keeper.run(lambda: replicator.members, lambda: replicator.batches.seq,
                         lambda applied: replicator.batches.lag(applied, time.time())[1])

    def _write(self) -> None:
        """Start the background writers (timers, transactions, redeliveries, retention...), once: a
        call may confirm the primary (the fence's callback) before start() would."""
        if self._writing:
            return
        self._writing = True
        loops = (self.timers.loop, self.transactions.loop, self.reviver.loop)
        self._tasks += [asyncio.create_task(t) for t in
                        (*(loop.run() for loop in loops), self.renewals.run(self.clients), self._housekeeping(),
                         self.staging.run(), self.retention.run(), self.lite_expiry.run())]

    def _fenced(self) -> None:
        """A promoted replica superseded this primary: its writers and registrations stop (the store
        refuses writes already); it keeps serving reads, and routes name the new primary."""
        for t in self._tasks:  # the registration that heard of the new epoch too, at its next await
            t.cancel()
        self._tasks = []

    async def _housekeeping(self) -> None:
        """Now and then (at least as often as retention checks): expire de-duplication buckets, trim
        consumed match entries and those of idle groups."""
        while True:
            await asyncio.sleep(min(HOUSEKEEPING_S, self.settings.retention_check_s))
            for chore in (lambda: self.dedup.expire(now_ms()), lambda: self.subscriptions.trim(self.pop.pop_offset)):
                try:
                    chore()
                except Exception as e:
                    log_failure(log, e, "housekeeping failed")

    async def drain(self, timeout_s: float) -> None:
        """Stop as a broker of a cluster should (SIGTERM), within `timeout_s`: not ready at once (health
        checks say NOT_SERVING), out of the name servers' routes, long polls answered (empty), new sends
        and receives refused with a status clients retry on another broker; then (in a cluster,
        DRAIN_NOTICE_S later: clients still routed here hear the refusal rather than a dropped
        connection) the Telemetry streams end, and the server stops once the calls in flight (writes
        among them) have finished."""
        loop = asyncio.get_running_loop()
        until = loop.time() + timeout_s

        def left() -> float:
            return max(0.0, until - loop.time())

        self.begin_drain()
        log.warning("draining (at most %g s): refusing new sends and receives", timeout_s)
        if self._registering is not None:  # a broker of a cluster: its clients have other brokers to go to
            self._registering.cancel()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cluster.unregister(), left())
            await asyncio.sleep(min(DRAIN_NOTICE_S, left()))
        self.clients.end_streams()
        await self.stop(grace=left())

    def stub_here(self, make: Callable[[grpc.aio.Channel], S]) -> S:
        """A stub (`make` of a channel: AdminStub, MessagesStub, UsersStub...) of this broker's own services,
        as a client reaches them: the dashboard (rockmq/ui/) asks them as the CLI would, so its pages show
        the whole cluster; unsigned, as the dashboard signs each call as the user logged in. One channel."""
        if self._channel_here is None:
            self._channel_here = open_aio_channel(self.endpoint_here(), self.settings.client_tls)
        if make not in self._stubs_here:
            self._stubs_here[make] = make(self._channel_here)
        return cast(S, self._stubs_here[make])

    def endpoint_here(self) -> str:
        """Where this broker's clients reach it (the dashboard's test messages go there: ui/send.py)."""
        return self.cluster.endpoint

    def begin_drain(self) -> None:
        """Not ready from now on; new sends and receives refused, long polls answered at once."""
        self.health.draining = True
        self.ctx.logs.arrivals.end()

    async def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Stop serving: calls in flight get `grace` seconds to finish, then are cancelled."""
        for t in (*self._tasks, self._told, self._watching):
            if t is not None:
                t.cancel()
        if self.replicator is not None:
            self.replicator.close()
        await self.server.stop(grace=grace)
        self.ctx.store.close()


def _listeners(s: Settings) -> str:
    """What the start line says of TLS: nothing for a plaintext broker."""
    if not s.tls_cert:
        return ""
    return " (TLS)" + (f" and {s.host}:{s.plaintext_port} (plaintext)" if s.plaintext_port >= 0 else "")


def _role(broker: Broker) -> str:
    """What the start line says of a replica."""
    return f", replica of {broker.settings.replica_of}" if broker.follower is not None else ""


async def _joined(settings: Settings) -> Membership:
    """A member of a coordinated group (--coordinator), registered, knowing its group's primary. Its
    endpoint is its name in the group: the port must be fixed."""
    from rockmq.broker.coordination.etcd import EtcdCoordinator  # etcd's client: loaded only with --coordinator

    if settings.port == 0 or settings.host in ("0.0.0.0", "::", ""):
        raise CannotStart("with --coordinator give a fixed --port and the --host the other members reach: a member's "
                          "HOST:PORT is its name in the group")
    member = f"{settings.host}:{settings.port}"
    membership = Membership(EtcdCoordinator.from_settings(settings, member), member)
    try:
        await membership.join(lambda: held_in(settings))
    except CoordinatorError as e:
        raise CannotStart(str(e)) from None
    return membership


async def serve(settings: Settings, ready_file: str | None = None) -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    raise_fd_limit()  # before max_connections is sized from it
    stop = stop_event()
    check_can_listen(settings.host, settings.port)  # before the data directory is made or opened
    if settings.plaintext_port > 0:
        check_can_listen(settings.host, settings.plaintext_port)
    if settings.http_port > 0:
        check_can_listen(settings.host, settings.http_port, "--http-port")
    check_data_dir(settings.data_path)
    log.info("%s", compiled.describe())
    log.info("%s", settings.connection_limits.describe())
    warn_if_open("broker", settings.host, settings.auth_enabled, "--auth")
    membership = None
    if settings.coordinator:
        joining, stopping = asyncio.create_task(_joined(settings)), asyncio.create_task(stop.wait())
        await asyncio.wait([joining, stopping], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not joining.done():  # stopped while the coordinator had no answer (its lease lapses)
            joining.cancel()
            return
        membership = joining.result()
    broker = Broker(settings, membership)
    port = await broker.start()
    try:
        # `broker` when scraped or probed: the one serving then (a promotion or a re-seed replaces it)
        http = await open_http_port(broker.settings, lambda: broker, lambda: broker.health.reasons())
    except CannotStart:
        await broker.stop()
        raise
    watching = asyncio.create_task(watch(settings.connection_limits))  # says when connections are refused
    gc.freeze()  # everything alive now lives as long as the broker: keep it out of every GC pass
    role = _role(broker)
    print(f"rockmq broker listening on {settings.host}:{port}{_listeners(broker.settings)} (data in {settings.data_dir}, "
          f"flush {settings.flush}{role})", flush=True)
    if http is not None:
        print(f"rockmq HTTP port on {'https' if settings.tls_cert else 'http'}://{settings.host}:{http.port} "
              f"(/metrics, /healthz, /readyz, the dashboard at /ui/)", flush=True)
    if ready_file:
        write_ready_file(ready_file, settings.host, port)
    # a coordinated member follows its group's primary as it changes, for as long as it serves
    changes = asyncio.create_task(membership.run(lambda: position(broker.ctx.store))) if membership else None
    while True:
        events = (broker.promoted, broker.reseeded, stop, *((membership.changed,) if membership else ()))
        waits = [asyncio.create_task(e.wait()) for e in events]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
        if stop.is_set():
            break
        # Promoted: start over as a primary on the same store and port, with fresh in-memory state.
        # Re-seeded: start over on the copy of the primary's store, swapped in before the store opens.
        # A coordinated member whose group's primary changed: start over in its new role.
        promoted, reseeded = broker.promoted.is_set(), broker.reseeded.is_set()
        if membership is not None:
            membership.changed.clear()
        await broker.stop()
        broker = Broker(dataclasses.replace(settings, port=port, plaintext_port=broker.settings.plaintext_port),
                        membership)
        await broker.start()
        if promoted:
            log.warning("promoted: now a primary on port %d", port)
        elif reseeded:
            log.warning("re-seeded: following %s again from batch %d", broker.settings.replica_of,
                        broker.follower.applied if broker.follower is not None else 0)
        else:
            log.warning("the group's primary changed: now %s", f"a replica of {broker.settings.replica_of}"
                        if broker.follower is not None else f"the primary on port {port}")
    watching.cancel()
    if changes is not None:
        changes.cancel()
    await broker.drain(settings.drain_timeout_s)  # /readyz says "draining" meanwhile
    if membership is not None:
        await membership.close()  # the others elect at once
    if http is not None:
        await http.stop()
    log.info("stopped")
