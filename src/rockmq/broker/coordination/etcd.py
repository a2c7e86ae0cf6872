"""The `Coordinator` on etcd (v3 API), through etcd3aio: an asyncio-native client on grpc.aio, with
TLS, client certificates, users and several endpoints (docs/cluster.md "Automatic failover" says why
this client). Imported only by a broker started with `--coordinator`: other brokers do not load it.

A member's registration and, once it wins, the group's primary key hang on one lease of
`coordinator_lease_s` seconds, renewed every third of it. `lease_valid_until` is the start of the
last answered renewal plus the lease etcd granted: etcd can expire the lease no earlier than that,
whatever the clocks' offsets, so a primary that stops writing by then never overlaps its successor.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import grpc
from etcd3aio import (
    EtcdConnectionError,
    EtcdPermissionDeniedError,
    EtcdTransientError,
    EtcdUnauthenticatedError,
    TokenRefresher,
)
from etcd3aio.auth import AuthService
from etcd3aio.connections import ConnectionManager
from etcd3aio.kv import KVService
from etcd3aio.lease import LeaseService
from etcd3aio.watch import WatchService

from rockmq.broker.coordination.coordinator import (
    CoordinatorError,
    CoordinatorUnavailable,
    GroupKeys,
    InSync,
    Member,
    Primary,
    Status,
    Unclean,
)
from rockmq.config import Settings, coordinator_endpoints

log = logging.getLogger(__name__)

DELETE = 1  # mvccpb.Event.EventType: a watched key was deleted (or its lease expired)
GREATER = 1  # etcdserverpb.Compare.CompareResult: the key's number is above the one compared with
CAMPAIGN_TRIES = 3  # a campaign that lost only the race for the epoch (nobody holds the role) reads it again
_UNREACHABLE = (EtcdConnectionError, EtcdTransientError, TimeoutError, OSError)
_REFUSED = (EtcdUnauthenticatedError, EtcdPermissionDeniedError)
_RETRIABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)


# gRPC waits up to 120 s between reconnections by default: etcd back after an outage would stay
# unreached that long. Kept under a second, a member hears of it within a renewal or two.
RECONNECT_BACKOFF = (("grpc.initial_reconnect_backoff_ms", 100), ("grpc.min_reconnect_backoff_ms", 100),
                     ("grpc.max_reconnect_backoff_ms", 500))


@dataclass(frozen=True)
class _Etcd:
    """etcd3aio's services on one channel (its Etcd3Client's, on a channel made here: see RECONNECT_BACKOFF)."""

    kv: KVService
    lease: LeaseService
    watch: WatchService

    def set_token(self, token: str | None) -> None:
        for service in (self.kv, self.lease, self.watch):
            service.set_token(token)


class EtcdCoordinator:
    """One member of one broker group, in etcd at `endpoints` (HOST:PORT). Every call waits at most
    `call_timeout_s` (a third of the lease: a renewal that fails can be tried twice more before the
    lease runs out)."""

    def __init__(self, endpoints: Sequence[str], group: str, member: str, lease_s: int, *, user: str = "",
                 password: str = "", ca: str = "", cert: str = "", key: str = "") -> None:
        self._endpoints = tuple(endpoints)
        self._keys = GroupKeys(group)
        self._member = member
        self._lease_s = lease_s
        self._call_timeout_s = lease_s / 3
        self._user, self._password = user, password
        self._tls = (ca, cert, key)
        self._etcd: _Etcd | None = None
        self._session = contextlib.AsyncExitStack()  # the channel, its token refresher
        self._closing: set[asyncio.Task[None]] = set()  # channels retired after an unforeseen failure (`_retire`)
        self._lease_id = 0
        self._valid_until = 0.0
        self._keep_alive: asyncio.Task[None] | None = None
        self._unanswered = 0  # renewals in a row etcd did not answer
        self._held: Primary | None = None  # the primary role as this member won it

    @classmethod
    def from_settings(cls, settings: Settings, member: str) -> EtcdCoordinator:
        return cls(coordinator_endpoints(settings.coordinator), settings.broker_name, member, settings.coordinator_lease_s,
                   user=settings.coordinator_user, password=settings.coordinator_password, ca=settings.coordinator_ca,
                   cert=settings.coordinator_cert, key=settings.coordinator_key)

    @property
    def lease_s(self) -> int:
        return self._lease_s

    def lease_valid_until(self) -> float:
        return self._valid_until

    def unanswered(self) -> bool:
        return self._unanswered > 0

    def holds(self, primary: Primary) -> bool:
        return bool(self._lease_id) and primary.lease == self._lease_id

    # --- the calls ---------------------------------------------------------------------------------

    async def register(self, endpoint: str) -> None:
        if self._keep_alive is not None and not self._keep_alive.done():
            raise CoordinatorError(f"{self._member} is registered already (its lease is renewed)")
        async with self._calling("register"):
            etcd = await self._connected()
            sent = time.monotonic()
            lease = await etcd.lease.grant(self._lease_s, timeout=self._call_timeout_s)
            self._lease_id, self._valid_until = int(lease.ID), sent + int(lease.TTL)
            await etcd.kv.put(self._keys.member(self._member), Member(endpoint).encode(), lease=self._lease_id,
                              timeout=self._call_timeout_s)
        self._keep_alive = asyncio.create_task(self._renew_until_lost(), name=f"coordinator lease {self._member}")

    async def announce(self, endpoint: str, epoch: int, applied: int) -> None:
        if not self._lease_id:
            raise CoordinatorError(f"{self._member} announced without a lease: register first")
        async with self._calling("announcing its position"):
            await (await self._connected()).kv.put(self._keys.member(self._member), Member(endpoint, epoch, applied).encode(),
                                                   lease=self._lease_id, timeout=self._call_timeout_s)

    async def members(self) -> dict[str, Member]:
        prefix = self._keys.members
        async with self._calling("reading the members"):
            read = await (await self._connected()).kv.get(prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1),
                                                          timeout=self._call_timeout_s)
        return {bytes(kv.key).decode()[len(prefix):]: Member.decode(bytes(kv.value)) for kv in read.kvs}

    async def campaign(self, endpoint: str, eligible: InSync | None = None, floor: int = 0) -> Primary | None:
        if not self._lease_id:  # a primary key under no lease would never lapse
            raise CoordinatorError(f"{self._member} campaigned without a lease: register first")
        for _ in range(CAMPAIGN_TRIES):
            async with self._calling("campaign"):
                etcd = await self._connected()
                epoch_read = await etcd.kv.get(self._keys.epoch, timeout=self._call_timeout_s)
                epoch, version = _epoch(epoch_read.kvs), _version(epoch_read.kvs)
                mine = Primary(self._member, endpoint, max(epoch, floor) + 1, self._lease_id)
                compare = [KVService.txn_compare_create_revision(self._keys.primary, 0),
                           KVService.txn_compare_version(self._keys.epoch, version)]
                if eligible is not None:
                    compare.append(KVService.txn_compare_version(self._keys.in_sync, eligible.version))
                reply = await etcd.kv.txn(
                    compare,
                    [KVService.txn_op_put(self._keys.epoch, str(mine.epoch)),
                     KVService.txn_op_put(self._keys.primary, mine.encode(), lease=self._lease_id)],
                    [KVService.txn_op_get(self._keys.primary), KVService.txn_op_get(self._keys.in_sync)],
                    timeout=self._call_timeout_s)
            if reply.succeeded:
                self._held = mine
                log.warning("group %s: %s took the primary role at epoch %d", self._keys.group, self._member, mine.epoch)
                return mine
            holder, in_sync = reply.responses[0].response_range.kvs, reply.responses[1].response_range.kvs
            if holder:
                current = Primary.decode(bytes(holder[0].value), lease=int(holder[0].lease))
                if self.holds(current):  # won by an earlier try whose answer was lost
                    self._held = current
                return current
            if eligible is not None and _version(in_sync) != eligible.version:
                return None
        return None

    async def primary(self) -> Primary | None:
        return (await self._read_primary())[0]

    async def watch_primary(self, known: Primary | None, timeout_s: float) -> Primary | None:
        current, revision = await self._read_primary()
        if current != known:
            return current
        with contextlib.suppress(TimeoutError, grpc.aio.AioRpcError, *_UNREACHABLE):  # etcd gone: the read below says so
            async with asyncio.timeout(timeout_s), contextlib.aclosing(self._primary_changes(revision + 1)) as changes:
                async for now in changes:
                    if now != known:
                        return now
        return await self.primary()

    async def in_sync(self) -> InSync:
        async with self._calling("reading the in-sync set"):
            read = await (await self._connected()).kv.get(self._keys.in_sync, timeout=self._call_timeout_s)
        return InSync(InSync.decode(bytes(read.kvs[0].value)) if read.kvs else frozenset(), _version(read.kvs))

    async def set_in_sync(self, members: frozenset[str], version: int) -> bool:
        if self._held is None:
            return False
        async with self._calling("changing the in-sync set"):
            reply = await (await self._connected()).kv.txn(
                [KVService.txn_compare_version(self._keys.in_sync, version),
                 KVService.txn_compare_value(self._keys.primary, self._held.encode())],
                [KVService.txn_op_put(self._keys.in_sync, InSync.encode(members))],
                timeout=self._call_timeout_s, max_attempts=1)  # a retry of a write that landed fails its compare
        return bool(reply.succeeded)

    async def publish_status(self, status: Status) -> bool:
        if self._held is None:
            return False
        async with self._calling("publishing the group's status"):
            reply = await (await self._connected()).kv.txn(
                [KVService.txn_compare_value(self._keys.primary, self._held.encode())],
                [KVService.txn_op_put(self._keys.status, status.encode())], timeout=self._call_timeout_s)
        return bool(reply.succeeded)

    async def unclean(self) -> Unclean | None:
        value = await self._value(self._keys.unclean, "reading the last unclean election")
        return Unclean.decode(value) if value is not None else None

    async def epoch(self) -> int:
        value = await self._value(self._keys.epoch, "reading the epoch")
        return int(value) if value is not None else 0

    async def status(self) -> Status | None:
        value = await self._value(self._keys.status, "reading the group's status")
        return Status.decode(value) if value is not None else None

    async def elect_unclean(self, choice: Unclean, in_sync: InSync) -> bool:
        async with self._calling("the unclean election"):
            reply = await (await self._connected()).kv.txn(
                [KVService.txn_compare_create_revision(self._keys.primary, 0),
                 KVService.txn_compare_version(self._keys.in_sync, in_sync.version),
                 KVService.txn_compare_value(self._keys.epoch, str(choice.after_epoch)),
                 KVService.txn_compare_version(self._keys.member(choice.member), 0, result=GREATER)],
                [KVService.txn_op_put(self._keys.in_sync, InSync.encode(frozenset({choice.member}))),
                 KVService.txn_op_put(self._keys.unclean, choice.encode())],
                timeout=self._call_timeout_s, max_attempts=1)  # a retry of a write that landed fails its compare
        return bool(reply.succeeded)

    async def resign(self) -> None:
        held, self._held = self._held, None
        if held is None:
            return
        async with self._calling("resigning"):
            await (await self._connected()).kv.txn(
                [KVService.txn_compare_value(self._keys.primary, held.encode())],
                [KVService.txn_op_delete(self._keys.primary)], timeout=self._call_timeout_s)
        log.warning("group %s: %s gave up the primary role (epoch %d)", self._keys.group, self._member, held.epoch)

    async def close(self) -> None:
        if self._keep_alive is not None:
            self._keep_alive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keep_alive
            self._keep_alive = None
        if self._lease_id and self._etcd is not None:
            with contextlib.suppress(CoordinatorError):
                async with self._calling("revoking the lease"):
                    await self._etcd.lease.revoke(self._lease_id, timeout=self._call_timeout_s)
        self._lease_id, self._valid_until, self._held = 0, 0.0, None
        for closing in self._closing:
            closing.cancel()
        await asyncio.gather(*self._closing, return_exceptions=True)
        await self._disconnect()

    # --- the pieces --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _calling(self, what: str) -> AsyncIterator[None]:
        """One call within the call timeout; etcd's and gRPC's failures as the coordinator's errors (one
        line each, naming the endpoints, never the credentials)."""
        try:
            async with asyncio.timeout(self._call_timeout_s):
                yield
        except _REFUSED as e:
            raise CoordinatorError(f"etcd at {','.join(self._endpoints)} refused {what}: {e}") from None
        except _UNREACHABLE as e:
            raise CoordinatorUnavailable(f"etcd at {','.join(self._endpoints)} did not answer {what} within "
                                         f"{self._call_timeout_s:g} s ({type(e).__name__})") from None
        except grpc.aio.AioRpcError as e:
            if e.code() in _RETRIABLE:
                raise CoordinatorUnavailable(f"etcd at {','.join(self._endpoints)} failed {what}: {e.code().name}") from None
            why = ("this member's lease expired (register again)" if e.code() == grpc.StatusCode.NOT_FOUND  # the one id
                   else f"{e.code().name}: {e.details()}")  # e.g. a wrong password (etcd's words name no secret)
            raise CoordinatorError(f"etcd at {','.join(self._endpoints)} refused {what}: {why}") from None

    def _retire(self) -> None:
        """The next call connects afresh; the channel in use is closed once the calls on it have had
        their time (closing it now would cancel them: a CancelledError out of the blue to the caller)."""
        self._etcd = None
        session, self._session = self._session, contextlib.AsyncExitStack()
        closing = asyncio.create_task(self._close_later(session))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    async def _close_later(self, session: contextlib.AsyncExitStack) -> None:
        """Close `session` a call's time from now (at once if cancelled: the member closes)."""
        try:
            await asyncio.sleep(self._call_timeout_s)
        finally:
            with contextlib.suppress(Exception):  # a channel that failed may fail its closing too: dropped anyway
                await session.aclose()

    async def _disconnect(self) -> None:
        """Let the channel (and its token refresher) go: the next call connects afresh."""
        self._etcd = None
        session, self._session = self._session, contextlib.AsyncExitStack()
        with contextlib.suppress(Exception):  # a channel that failed may fail its closing too: it is dropped anyway
            await session.aclose()

    async def _connected(self) -> _Etcd:
        if self._etcd is not None:
            return self._etcd
        targets, server_name = await _targets(self._endpoints)
        ca, cert, key = (_read(path) for path in self._tls)
        connections = ConnectionManager(targets)
        connections.grpc_options.extend(RECONNECT_BACKOFF)
        channel = connections.get_channel(ca_cert=ca, cert_key=key, cert_chain=cert, tls_server_name=server_name)
        self._session.push_async_callback(channel.close)
        etcd = _Etcd(KVService(channel), LeaseService(channel), WatchService(channel))
        if self._user:
            await self._session.enter_async_context(TokenRefresher(AuthService(channel), etcd.set_token, self._user,
                                                                   self._password))
        self._etcd = etcd
        return self._etcd

    async def _renew_until_lost(self) -> None:
        """Keep the lease renewed until etcd no longer knows it; supervised: whatever ends the renewals
        (a lease etcd dropped, a refusal, a failure nobody foresaw) is said in one line and leaves this
        member holding nothing (`lease_valid_until` 0.0: a primary refuses writes at once, as when it
        cannot renew in time; the member registers again). An old lease etcd still holds lapses unrenewed."""
        try:
            await self._renew()
        except asyncio.CancelledError:
            raise
        except Exception as e:  # never a silent end: a lease not renewed must not look held
            log.error("group %s: %s stopped renewing its lease (%s): it holds no role and registers again on a new "
                      "connection", self._keys.group, self._member, e if isinstance(e, CoordinatorError) else repr(e))
            self._retire()  # whatever state the channel or its token is in, the next call starts afresh
        self._lease_id, self._valid_until, self._held, self._unanswered = 0, 0.0, None, 0

    async def _renew(self) -> None:
        """Renew the lease every third of it; each answered renewal moves `lease_valid_until`. Returns
        once etcd no longer knows the lease (it expired while this member could not reach it)."""
        while True:
            await asyncio.sleep(self._lease_s / 3)
            sent = time.monotonic()
            try:
                async with self._calling("renewing the lease"):
                    ttl = await self._renew_once()
            except CoordinatorUnavailable as e:
                if not self._unanswered:  # once per outage, not at every renewal
                    log.warning("group %s: %s", self._keys.group, e)
                self._unanswered += 1
                continue
            if self._unanswered:
                log.warning("group %s: etcd answers again (%d renewals were not answered)", self._keys.group,
                            self._unanswered)
                self._unanswered = 0
            if ttl <= 0:
                log.warning("group %s: %s lost its lease (etcd unreachable longer than %d s, or revoked): it holds "
                            "no role", self._keys.group, self._member, self._lease_s)
                return
            self._valid_until = sent + ttl

    async def _renew_once(self) -> int:
        assert self._etcd is not None
        stream = self._etcd.lease.keep_alive(self._lease_id)
        try:
            async for reply in stream:
                return int(reply.TTL)
            raise EtcdTransientError("the keep-alive stream closed without an answer")
        finally:
            stream.cancel()

    async def _value(self, key: str, what: str) -> bytes | None:
        """One key's value (None: absent)."""
        async with self._calling(what):
            read = await (await self._connected()).kv.get(key, timeout=self._call_timeout_s)
        return bytes(read.kvs[0].value) if read.kvs else None

    async def _read_primary(self) -> tuple[Primary | None, int]:
        """The primary and the revision etcd read it at (a watch from the next one misses nothing)."""
        async with self._calling("reading the primary"):
            read = await (await self._connected()).kv.get(self._keys.primary, timeout=self._call_timeout_s)
        return (_primary(read.kvs[0]) if read.kvs else None), int(read.header.revision)

    async def _primary_changes(self, start_revision: int) -> AsyncGenerator[Primary | None]:
        """The primary after each change from `start_revision` on (None: deleted or its lease expired)."""
        etcd = await self._connected()
        replies = cast(AsyncGenerator[Any], etcd.watch.watch(self._keys.primary, start_revision=start_revision))
        try:
            async for reply in replies:
                for event in reply.events:
                    yield None if event.type == DELETE else _primary(event.kv)
        finally:
            await replies.aclose()


def _primary(kv: Any) -> Primary:
    """The primary key's value, with the lease it hangs on."""
    return Primary.decode(bytes(kv.value), lease=int(kv.lease))


def _version(kvs: Sequence[Any]) -> int:
    """A key's version as a range read it (0: absent)."""
    return int(kvs[0].version) if kvs else 0


def _epoch(kvs: Sequence[Any]) -> int:
    """The epoch key's number as a range read it (0: no epoch handed out yet)."""
    return int(bytes(kvs[0].value)) if kvs else 0


async def _targets(endpoints: Sequence[str]) -> tuple[list[str], str | None]:
    """etcd3aio dials IPv4 addresses (its channel's `ipv4:` target, balanced round robin): each HOST
    resolved to one, and the first name that is not an address as the name TLS verifies."""
    loop = asyncio.get_running_loop()
    targets, server_name = [], None
    for endpoint in endpoints:
        host, _, port = endpoint.rpartition(":")
        if not _is_address(host):
            server_name = server_name or host
            infos = await loop.getaddrinfo(host, int(port), family=socket.AF_INET, type=socket.SOCK_STREAM)
            host = str(infos[0][4][0])
        targets.append(f"{host}:{port}")
    return targets, server_name


def _is_address(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


def _read(path: str) -> bytes | None:
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise CoordinatorError(f"cannot read {path}: {e.strerror}") from None
