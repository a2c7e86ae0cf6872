"""Replication by record shipping: a primary numbers and keeps its recent batches; a replica
follows them and applies each atomically.

Every batch the primary writes gets the next sequence number, stored in the batch itself
(`repl/seq` in meta), so the number survives with the data and a replica that applied a batch
also holds its number: after a restart on either side, the replica asks for what follows. Batches
are kept in a ring bounded by bytes; a replica that asks for something older than the ring must
be re-seeded. With `--replication sync` a send is answered only once a replica reported the
batch applied (and fsync'ed, under its flush policy). With --auth the stream also carries the
primary's users and ACLs (auth/principals.py), which the replica keeps as its own. Promotion is
fenced by the primary epoch (fencing.py): a replica refuses to be promoted while its primary
answers unless forced, and a Follow stream from a replica holding a higher epoch fences the primary.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

import grpc

from rockmq.auth.acl_store import AclStoreError
from rockmq.auth.inner import inner_credentials
from rockmq.auth.inner_calls import inner_channel
from rockmq.auth.principals import Principals
from rockmq.auth.users import UserError
from rockmq.broker.cluster.fencing import (
    Fence,
    began,
    diverged_after,
    epoch_proof,
    epochs_began,
    next_epoch,
    proven,
    stored_epoch,
)
from rockmq.broker.cluster.reseed import Reseeder, Snapshots, refuse_too_far_behind, too_far_behind
from rockmq.broker.cluster.routes import Cluster
from rockmq.broker.cluster.truncation import ALL_FOOTPRINTS, DIVERGED_AFTER_KEY, diverged_at, dropped, tail
from rockmq.broker.context import BrokerContext, load_metadata
from rockmq.broker.stalled_streams import StalledStreams
from rockmq.config import Settings, names_an_address
from rockmq.plumbing.channels import open_aio_channel
from rockmq.plumbing.unparsed import UNPARSED, Unparsed
from rockmq.protocol import pb, replication, replication_grpc
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store, footprints, keys, oplog
from rockmq.store.db import Batch
from rockmq.store.disk_space import DiskFull
from rockmq.store.schema import Family
from rockmq.units import MiB

log = logging.getLogger(__name__)
RETRY_S = 1.0
UNPARSED_STATE = "a FollowerState's bytes do not parse"
PROBE_S = 2.0  # how long promotion waits for the primary to answer before it takes it for gone
# A replica's catch-up reply carries many batches: it may be larger than any client's. A primary not
# listening yet (being rebuilt after an election) is dialled again within 0.1-1 s, not gRPC's 1-120 s.
MEMBER_HEADER = "x-rockmq-member"  # a coordinated group's replica names itself on its Follow stream
REPLICA_HEADER = "x-rockmq-replica"  # every replica says where clients reach it (`rockmq cluster` lists it)
# Follow's headers, sent once the primary took the replica's history (no refusal follows): the replica
# knows its log is a prefix of the primary's from then on (`Follower.attached`)
ACCEPTED = ("x-rockmq-follow", "accepted")
REPLICATION_CHANNEL = (("grpc.max_receive_message_length", 256 << 20), ("grpc.initial_reconnect_backoff_ms", 100),
                       ("grpc.min_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 1000))


def was_promoted(store: Store) -> bool:
    """A replica promoted once never follows again (its data went its own way)."""
    return store.get(Family.META, keys.PROMOTED_KEY) is not None


def stored_seq(store: Store) -> int:
    raw = store.get(Family.META, keys.REPLICATION_SEQ_KEY)
    return keys.decode_u64(raw) if raw is not None else 0


class OpLog:
    """A primary's batches as replicas get them: each numbered as it is written (the number is
    stored with it), the recent ones kept in a ring bounded by bytes, and the keys each touched
    kept in the store (its footprint, store/footprints.py: what a replica behind the ring, or
    behind a restart, is caught up from). The store takes it at construction (store.db.OpLogSink);
    it records once the Replicator `start`s it, so a replica's store, which writes the primary's
    numbers, never numbers its own."""

    def __init__(self, ring_bytes: int) -> None:
        self.ring_bytes = ring_bytes  # the footprints kept are bounded alike
        self.recording = False
        self.seq = 0
        self.ring: deque[tuple[int, bytes]] = deque()
        # Replicas' lag: for each batch of the ring, when it was written (time.time()) and the messages
        # written before it; `messages`: all since start (log entries: a send's, a commit's, a timer's...)
        self.times: deque[tuple[float, int]] = deque()
        self.messages = 0
        self._stamped_messages = 0  # log entries of the batch being written
        self._held = 0
        self.grew = asyncio.Event()
        self._footprints: deque[tuple[int, int]] = deque()  # (batch number, bytes) of those kept
        self._footprint_bytes = 0
        self._drop_below = 0  # footprints below this batch go with the next batch written
        self._stamped = b""  # the batch being written, encoded

    def start(self, store: Store) -> None:
        """Number batches from the one after the last stored."""
        self.seq = stored_seq(store)
        self.load_footprints(store)
        self.recording = True

    def load_footprints(self, store: Store) -> None:
        """Count the footprints `store` keeps (a primary's, or a replica's: `followed`), to bound them."""
        self._footprints = deque(footprints.kept(store))
        self._footprint_bytes = sum(size for _, size in self._footprints)
        self._trim_footprints()

    def stamp(self, batch: Batch) -> None:
        self.seq += 1
        batch.seq = self.seq
        data, touched = oplog.encode_with_keys(batch.ops or [])  # the footprint: less the number, put last
        number = keys.encode_u64(self.seq)
        batch.put(Family.META, keys.REPLICATION_SEQ_KEY, number)
        self._stamped = data + oplog.encode([(oplog.PUT, Family.META, keys.REPLICATION_SEQ_KEY, number)])
        self._stamped_messages = [op[1] for op in batch.ops or ()].count(Family.LOG)
        # the footprint spans what the ring would: it carries the batch's size
        self._put_footprint(batch, self.seq, len(self._stamped), touched)

    def follow(self, batch: Batch, seq: int, data: bytes, ops: list[oplog.Op]) -> None:
        """A replica's: its primary's batch `seq` (shipped as `data`, `ops` decoded) is written with its
        footprint, so that, elected, it catches a replica behind it up from them (`Replicator._catch_up`)
        rather than having it re-seeded. Then `followed`. Without the batch's number, as `stamp` keeps it."""
        unnumbered = [op for op in ops if op[1] != Family.META or op[2] != keys.REPLICATION_SEQ_KEY]
        self._put_footprint(batch, seq, len(data), oplog.touched(unnumbered))

    def _put_footprint(self, batch: Batch, seq: int, size: int, touched: bytes) -> None:
        batch.put_unshipped(Family.FOOTPRINTS, footprints.key(seq), footprints.footprint(size, touched))
        if self._drop_below:
            batch.delete_range_unshipped(Family.FOOTPRINTS, b"", footprints.key(self._drop_below))

    def unstamp(self, batch: Batch) -> None:
        """The stamped batch was not written (the disk is full): its number goes to the next one."""
        self.seq = batch.seq - 1

    def written(self, batch: Batch) -> None:
        data = self._stamped
        self.ring.append((batch.seq, data))
        self.times.append((time.time(), self.messages))
        self.messages += self._stamped_messages
        self._held += len(data)
        while self._held > self.ring_bytes and len(self.ring) > 1:
            self._held -= len(self.ring.popleft()[1])
            self.times.popleft()
        self.followed(batch.seq, len(data))
        self.grew.set()

    def followed(self, seq: int, size: int) -> None:
        """Batch `seq`'s footprint (its batch `size` bytes) was written: counted, the oldest trimmed."""
        self._drop_below = 0
        self._footprints.append((seq, size))
        self._footprint_bytes += size
        self._trim_footprints()

    def lag(self, applied: int, now: float) -> tuple[int, float]:
        """How far a replica that applied batch `applied` is behind: (messages, seconds since the first
        batch it lacks was written); one behind the ring: at least since the ring's oldest."""
        if applied >= self.seq or not self.ring:
            return 0, 0.0
        at, before = self.times[min(max(applied + 1 - self.ring[0][0], 0), len(self.ring) - 1)]
        return self.messages - before, max(now - at, 0.0)

    def _trim_footprints(self) -> None:
        """The footprints kept span the batches the ring would hold across a restart; past an eighth
        above that, the oldest go (one range delete for many)."""
        if self._footprint_bytes <= self.ring_bytes + self.ring_bytes // 8:
            return
        while self._footprint_bytes > self.ring_bytes and len(self._footprints) > 1:
            self._footprint_bytes -= self._footprints.popleft()[1]
        self._drop_below = self._footprints[0][0]


class InSync(Protocol):
    """A coordinated group's in-sync set, as its primary keeps it (broker/coordination/in_sync.py)."""

    judged_from: float  # (the event loop's time) no member is judged behind before: a new primary's grace

    def lacking(self, seq: int, applied: Mapping[str, int]) -> frozenset[str]:
        """The members of the set that have not applied batch `seq`."""
        ...

    async def drop(self, members: frozenset[str], timeout_s: float | None = None) -> None:
        """Remove them from the set (committed in the coordinator, within `timeout_s`) before a send is
        answered without them."""
        ...


@dataclasses.dataclass
class FollowStream:
    """One replica's Follow stream on the primary: its peer, its member name in a coordinated group
    (empty: none), the last batch handed to it (`sent`: a report beyond it is not believed) and where
    clients reach it (REPLICA_HEADER; a replica of an older version: its peer)."""

    replica: str
    member: str
    sent: int
    endpoint: str


class Replicator(replication_grpc.ReplicationServicer):
    """The primary's side: starts the store's op log, streams its batches to replicas (and, with
    `principals` — auth on — its users and ACLs: first, and again whenever they change)."""

    def __init__(self, store: Store, batches: OpLog, settings: Settings, secret: bytes, epoch: int, fence: Fence,
                 streams: StalledStreams, principals: Principals | None = None) -> None:
        self.settings = settings
        self.streams = streams  # a replica that stops reading its Follow stream is cut off
        self.batches = batches
        self.principals = principals
        self.fence = fence
        self.secret = secret
        self.store = store
        batches.start(store)
        # What a replica holds: nothing known until one follows (its first report says how far it
        # got). A batch written before a crash and never confirmed is not taken as confirmed.
        self.acked = 0
        self._acked_moved = asyncio.Event()
        self.followers = 0
        self.replicas: dict[str, int] = {}  # each Follow stream's replica (its peer) -> the batch it applied last
        self._endpoints: dict[str, str] = {}  # ... -> where clients reach it
        # A coordinated group's primary: each member following now (by name) -> the batch it applied last,
        # and the in-sync set, all of which a sync send waits for (broker/coordination/in_sync.py)
        self.members: dict[str, int] = {}
        self._member_streams: dict[str, str] = {}  # each such member -> the peer of its latest Follow stream
        self.in_sync: InSync | None = None
        self.stopping = False  # the broker is stopping: Follow streams end (`close`)
        self.snapshots = Snapshots(store, streams, lambda: fence.fenced)  # copies for replicas too far behind
        # The first batch carries what a promoted replica needs to take over: the secret (receipt
        # and recall handles stay valid), the epoch (its sequence numbers start above ours) and the
        # primary epoch (it takes one above).
        batch = store.batch()
        batch.put(Family.META, keys.SECRET_KEY, secret)
        batch.put(Family.META, keys.EPOCH_KEY, keys.encode_u64(epoch))
        batch.put(Family.META, keys.PRIMARY_EPOCH_KEY, keys.encode_u64(fence.epoch))
        for e, after in epochs_began(store).items():  # the history's turns, for replicas' replicas (`diverged_after`)
            began(batch, e, after)
        store.write(batch)

    # --- sync replication ----------------------------------------------------------------------

    def replica_lags(self, now: float) -> dict[str, tuple[int, float]]:
        """Each replica following now -> how far behind it is (OpLog.lag: messages, seconds)."""
        return {self._endpoints.get(peer, peer): self.batches.lag(applied, now) for peer, applied in self.replicas.items()}

    async def confirm(self, seq: int) -> None:
        """Wait until a replica applied batch `seq`, or fail the send (retriable). 0 (a batch that
        wrote nothing, a duplicate's): the last batch written, which holds whatever it answers with."""
        seq = seq or self.batches.seq
        timeout = self.settings.replication_timeout_s
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        lag_deadline = (deadline if self.in_sync is None else
                        max(loop.time() + self.settings.replica_max_lag_ms / 1000, self.in_sync.judged_from))
        while self.acked < seq or (self.in_sync is not None and self.in_sync.lacking(seq, self.members)):
            left = deadline - loop.time()
            if left <= 0:
                raise BrokerError(pb.SLAVE_PERSISTENCE_TIMEOUT,
                                  f"no replica confirmed the write within {timeout} s "
                                  f"({self.followers} following); stored on the primary only, retry")
            if self.acked >= seq and self.in_sync is not None and loop.time() >= lag_deadline:
                await self.in_sync.drop(self.in_sync.lacking(seq, self.members), left)  # before answering without them
                continue
            self._acked_moved.clear()
            try:
                until_lag = lag_deadline - loop.time()
                await asyncio.wait_for(self._acked_moved.wait(), min(left, until_lag) if until_lag > 0 else left)
            except TimeoutError:
                pass

    def _confirmed(self, seq: int) -> None:
        if seq > self.acked:
            self.acked = seq
            self._acked_moved.set()

    def _catch_up(self, applied: int, undo: list[oplog.Op] | None = None) -> tuple[int, list[oplog.Op]] | tuple[()] | None:
        """What a replica that applied batch `applied` needs before the ring's batches: nothing
        (`()`: the ring holds the next), the sum of the batches the ring no longer holds (a restart
        emptied it, or the replica fell behind it) as of the last batch written, or None: the
        footprints do not reach back that far (store/footprints.py) — it must be re-seeded. `undo`: a
        former primary's tail after `applied` (truncation.py), which the sum always undoes."""
        ring = self.batches.ring
        if undo is None and (applied >= self.batches.seq or (ring and ring[0][0] <= applied + 1)):
            return ()
        ops = footprints.catch_up(self.store, applied, self.batches.seq, self.settings.replication_ring_bytes, undo or ())
        return None if ops is None else (self.batches.seq, ops)

    async def _too_far_behind(self, context: grpc.aio.ServicerContext[Any, Any], applied: int) -> None:
        """Refuse a replica whose next batch neither the ring nor the footprints hold: only a full
        copy brings it back (the refusal is marked: the replica then re-seeds itself, reseed.py)."""
        await refuse_too_far_behind(context, f"the replica is too far behind (applied {applied}, primary at "
                                             f"{self.batches.seq}): re-seed it")

    def close(self) -> None:
        """The broker is stopping: each Follow stream ends at its next turn, before the server's grace
        runs out (a stream cancelled then is a traceback in the log)."""
        self.stopping = True
        self.batches.grew.set()

    # --- the Follow stream ---------------------------------------------------------------------

    async def Follow(self, requests: AsyncIterator[replication.FollowerState | Unparsed],
                     context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[replication.ReplicatedBatch]:
        first = await self._first_state(requests, context)
        if first is None:
            return
        catch_up = await self._admit(first, context)
        await context.send_initial_metadata((ACCEPTED,))
        stream = self._joined(first.applied_seq, context)
        reader = asyncio.create_task(self._read_acks(requests, stream))
        handed: tuple[int, int] | None = None  # the version of the users and ACLs this replica has from us
        writes = self.streams.open(context, "Follow")
        writes.busy = True  # counted per turn, which an idle stream takes every second: only a write stalls it
        try:
            while not reader.done() and not self.stopping:
                writes.count += 1
                if self.principals is not None and self.principals.version != handed:
                    handed = self.principals.version  # read first: a change while copying is sent again
                    yield replication.ReplicatedBatch(principals=self.principals.copy())
                elif catch_up:
                    stream.sent, ops = catch_up  # before the yield, as below
                    catch_up = ()
                    yield replication.ReplicatedBatch(seq=stream.sent, ops=oplog.encode(ops), catch_up=True,
                                                      head=self.batches.seq)
                elif self.batches.ring and self.batches.ring[-1][0] > stream.sent:  # ring seqs are consecutive: index, no scan
                    kept = self.batches.ring[0][0]
                    if stream.sent + 1 < kept:  # it fell behind the ring: caught up from the footprints instead
                        catch_up = self._catch_up(stream.sent)
                        if catch_up is None:
                            await self._too_far_behind(context, stream.sent)
                        continue
                    seq, data = self.batches.ring[stream.sent + 1 - kept]
                    stream.sent = seq  # before the yield: the replica may report it before this resumes
                    yield replication.ReplicatedBatch(seq=seq, ops=data, head=self.batches.seq)
                else:
                    self.batches.grew.clear()
                    try:
                        await asyncio.wait_for(self.batches.grew.wait(), 1.0)
                    except TimeoutError:
                        pass
            if reader.done() and not reader.cancelled() and reader.exception() is None and not reader.result():
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, UNPARSED_STATE)
        finally:
            self.streams.close(writes)
            reader.cancel()
            self._left(stream)

    @staticmethod
    async def _first_state(requests: AsyncIterator[replication.FollowerState | Unparsed],
                           context: grpc.aio.ServicerContext[Any, Any]) -> replication.FollowerState | Unparsed | None:
        """The replica's first state (where it stands); None if it sent none within 10 s (the stream
        ends quietly). Bytes that do not parse end the call with INVALID_ARGUMENT."""
        try:
            first = await asyncio.wait_for(anext(requests), 10)
        except (StopAsyncIteration, TimeoutError):
            return None
        if first is UNPARSED:  # the guarded deserializer's answer to bytes that do not parse (rockmq/plumbing/unparsed.py)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, UNPARSED_STATE)
        return first

    async def _admit(self, first: replication.FollowerState | Unparsed,
                     context: grpc.aio.ServicerContext[Any, Any]) -> tuple[int, list[oplog.Op]] | tuple[()] | None:
        """Whether this replica may follow from where it stands: each refusal ends the call (a forged
        epoch, this primary superseded, a history that left this one's, a replica ahead or too far
        behind), so that the headers sent after it (`ACCEPTED`) tell the replica its log is a prefix of
        this one's. Its epoch, proven, confirms this primary. -> the catch-up batch it gets first."""
        if first.epoch > self.fence.epoch and not proven(self.secret, first.epoch, first.epoch_proof):
            await context.abort(grpc.StatusCode.PERMISSION_DENIED,
                                f"primary epoch {first.epoch} is above this primary's, without the proof only its replicas "
                                f"can give (epoch_proof)")
        if self.fence.learn(first.epoch, "a replica"):
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                f"this broker was superseded by a promoted replica (primary epoch {self.fence.superseded}): "
                                f"follow the new primary")
        if first.epoch == self.fence.epoch and proven(self.secret, first.epoch, first.epoch_proof):
            self.fence.confirm("a replica")  # it follows this broker at its epoch: nobody was promoted
        start = first.applied_seq
        after = diverged_after(self.store, first.epoch)
        if after is not None and start > after:  # it truncates its tail from `after` (truncation.py), or re-seeds
            await refuse_too_far_behind(context, f"the replica's history left this primary's after batch {after} "
                                                 f"(applied {start} at primary epoch {first.epoch}): truncate its tail "
                                                 f"or re-seed it", ((DIVERGED_AFTER_KEY, str(after)),))
        if start > self.batches.seq:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                                f"the replica is ahead of this primary (applied {start}, primary at {self.batches.seq})")
        try:
            undo = oplog.decode(first.truncate) if first.truncate else None
        except ValueError:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a FollowerState's tail does not decode")
        catch_up = self._catch_up(start, undo)
        if catch_up is None:
            await self._too_far_behind(context, start)
        return catch_up

    def _joined(self, start: int, context: grpc.aio.ServicerContext[Any, Any]) -> FollowStream:
        """Count an admitted replica that applied up to `start`: it holds that (a restart of either
        side), and a coordinated group's member (named in its metadata) is waited for by name."""
        self.fence.followed()
        self.followers += 1
        self._confirmed(start)
        log.info("a replica follows from batch %d (primary at %d)", start, self.batches.seq)
        headers, peer = dict(context.invocation_metadata() or ()), context.peer()
        stream = FollowStream(peer, str(headers.get(MEMBER_HEADER, "")), start, str(headers.get(REPLICA_HEADER, "")) or peer)
        self.replicas[stream.replica], self._endpoints[stream.replica] = start, stream.endpoint
        if stream.member:  # a replica that follows again: its newer stream counts, not the one still ending
            self.members[stream.member], self._member_streams[stream.member] = start, stream.replica
        return stream

    async def _read_acks(self, requests: AsyncIterator[replication.FollowerState | Unparsed],
                         stream: FollowStream) -> bool:
        """Count what this replica applied, never more than this stream carried: a report beyond
        it (a confused or lying follower) would confirm a sync send no replica holds. False: a
        report whose bytes do not parse ended the stream."""
        lied = False
        async for state in requests:
            if state is UNPARSED:
                return False
            if state.applied_seq > stream.sent:
                if not lied:
                    log.warning("a replica reported batch %d applied, beyond the %d sent to it: ignored",
                                state.applied_seq, stream.sent)
                    lied = True
            else:
                self.replicas[stream.replica] = state.applied_seq
                if stream.member and self._member_streams.get(stream.member) == stream.replica:
                    self.members[stream.member] = state.applied_seq
                    self._acked_moved.set()  # an in-sync member's progress may answer a send
                self._confirmed(state.applied_seq)
        return True

    def _left(self, stream: FollowStream) -> None:
        """A Follow stream ended: its replica no longer counts (its member's newer stream, if any, does)."""
        self.followers -= 1
        self.replicas.pop(stream.replica, None)
        self._endpoints.pop(stream.replica, None)
        if stream.member and self._member_streams.get(stream.member) == stream.replica:
            del self.members[stream.member], self._member_streams[stream.member]
        log.info("a replica stopped following at batch %d", stream.sent)

    async def Snapshot(self, request: replication.SnapshotRequest | Unparsed,
                       context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[replication.SnapshotChunk]:
        """A copy of the store for a replica too far behind to follow (reseed.py)."""
        async for chunk in self.snapshots.stream(request, context):
            yield chunk


class Follower:
    """The replica's side: applies the primary's batches in order and reports each one.

    `primary` is HOST:PORT, or a broker name looked up on the name servers before each attempt, so
    the replica finds its primary wherever it restarts."""

    def __init__(self, ctx: BrokerContext, primary: str, cluster: Cluster, on_promoted: Callable[[], None],
                 principals: Principals, on_reseeded: Callable[[], None], member: str = "",
                 batches: OpLog | None = None) -> None:
        self.ctx = ctx
        # keeps the footprints of the batches applied here (OpLog.follow): elected, this member catches a
        # replica behind it up from them
        self.batches = batches
        if batches is not None:
            batches.load_footprints(ctx.store)
        # its name in a group whose coordinator elects the primary (told to the primary; never promoted by hand)
        self.member = member
        self.principals = principals  # the primary's users and ACLs, kept as ours
        self.on_promoted = on_promoted  # restarts the broker as a primary
        self.primary = primary
        self.cluster = cluster
        self._inner = inner_credentials(ctx.settings)  # the primary answers only these with auth on (inner_calls.py)
        self.applied = stored_seq(ctx.store)
        self.head = self.applied  # the primary's last batch, as its last shipped batch said (readiness)
        self.followed = ""  # the endpoint of the primary last followed (told of the epoch once promoted)
        # a former primary's tail to truncate: the divergence point and what its batches after it touched
        self.truncating: tuple[int, list[oplog.Op]] | None = None
        # whether the primary took this replica's history (its tail truncated, if any) on the Follow stream open
        # now: its log is a prefix of the primary's, which a coordinated member's reads wait for (read_fence.py)
        self.attached = False
        # too far behind: a copy of the primary's store, swapped in by a restart (`on_reseeded`)
        self.reseeder = Reseeder(ctx.settings.data_path, ctx.settings.disk_reserve_mib * MiB, on_reseeded)

    @property
    def behind(self) -> int:
        """Batches the primary had, when it last shipped one, that this replica has not applied."""
        return max(0, self.head - self.applied)

    @property
    def connected(self) -> bool:
        """Whether this replica reaches its primary now."""
        return self.cluster.primary.up

    async def _endpoint(self) -> str | None:
        return self.primary if names_an_address(self.primary) else await self.cluster.endpoint_of(self.primary)

    async def run(self) -> None:
        warned = False
        while True:
            endpoint = await self._endpoint()
            if endpoint is None:
                if not warned:
                    log.warning("primary %s is not registered with any name server yet", self.primary)
                    warned = True
                await asyncio.sleep(RETRY_S)
                continue
            channel = inner_channel(endpoint, self.ctx.settings.client_tls, self._inner, REPLICATION_CHANNEL)
            self.followed = self.cluster.primary.endpoint = endpoint
            stub = replication_grpc.ReplicationStub(channel)
            try:
                await asyncio.wait_for(channel.channel_ready(), PROBE_S)
                self.cluster.primary.up = True  # routes send writers there (broker/cluster/routes.py)
                await self._follow(stub)
            except TimeoutError:  # the primary is out of reach: routes send readers here meanwhile
                pass
            except DiskFull:  # said once (store/disk_space.py): follow again from what is applied, once there is room
                pass
            except (RuntimeError, ValueError) as e:  # a gap, or a batch that does not decode: follow again from what is applied
                log.error("following %s at %s stopped: %s; following again", self.primary, endpoint, e)
            except grpc.aio.AioRpcError as e:
                if too_far_behind(e) and self._diverged(e):  # its tail is truncated on following again, at once
                    continue
                if too_far_behind(e):  # said by the re-seed, not here every second
                    await self.reseeder.reseed(stub, endpoint, self.applied)
                elif e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                    log.error("replication refused by %s: %s", endpoint, e.details())
                elif e.code() in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED) and not warned:
                    log.error("replication refused by %s: %s (both need the cluster's inner credentials)", endpoint,
                              e.details())
                elif e.code() == grpc.StatusCode.UNIMPLEMENTED and not warned:
                    log.error("%s at %s keeps no batches for replicas: start it with --replication async|sync",
                              self.primary, endpoint)
                elif not warned:
                    log.warning("cannot follow %s at %s: %s", self.primary, endpoint, e.code().name)
                warned = True
            finally:
                self.cluster.primary.up = False
                await channel.close()
            await asyncio.sleep(RETRY_S)

    def _diverged(self, refusal: grpc.aio.AioRpcError) -> bool:
        """Follow refused this replica's history as diverged: -> whether it can truncate its tail
        (truncation.py; `truncating` is set for the next follow), else it is re-seeded."""
        after = diverged_at(refusal)
        if after is None or self.truncating is not None:  # not diverged, or the truncation itself was refused
            self.truncating = None
            return False
        undo = tail(self.ctx.store, after, self.applied)
        if undo is None:
            log.warning("this member's history left its primary's after batch %d (it holds up to %d): its own "
                        "batches since are not all known here, so it is re-seeded with a full copy", after, self.applied)
            return False
        self.truncating = (after, undo)
        return True

    async def _follow(self, stub: replication_grpc.ReplicationStub) -> None:
        acks: asyncio.Queue[replication.FollowerState | None] = asyncio.Queue(64)
        epoch = stored_epoch(self.ctx.store)
        secret = self.ctx.store.get(Family.META, keys.SECRET_KEY) or b""  # the primary's, once its first batch came
        truncating = self.truncating
        after, undo = truncating if truncating is not None else (self.applied, [])
        await acks.put(replication.FollowerState(applied_seq=after, epoch=epoch, epoch_proof=epoch_proof(secret, epoch),
                                                 truncate=oplog.encode(undo)))
        progress = asyncio.Event()

        async def states() -> AsyncIterator[replication.FollowerState]:
            while (state := await acks.get()) is not None:
                yield state

        async def acknowledge() -> None:
            """Report what was applied, after an fsync under the sync policy: batches applied
            while one fsync runs share the next one (group commit, as for sends)."""
            reported = after  # what the first state said (a truncated tail's batches were never the primary's)
            while True:
                await progress.wait()
                progress.clear()
                target = self.applied
                if self.ctx.settings.flush == "sync":
                    await self.ctx.store.sync()
                if target > reported:
                    if acks.full():  # keep only the newest: each report covers all before it
                        acks.get_nowait()
                    acks.put_nowait(replication.FollowerState(applied_seq=target))
                    reported = target

        names = ((REPLICA_HEADER, self.ctx.logs.store_host), *(((MEMBER_HEADER, self.member),) if self.member else ()))
        call = stub.Follow(states(), metadata=names)
        acker = asyncio.create_task(acknowledge())
        try:
            self.attached = truncating is None and ACCEPTED in tuple(await call.initial_metadata() or ())
            async for shipped in call:
                if shipped.HasField("principals"):
                    self._adopt(shipped.principals)
                    continue
                if truncating is not None:
                    if not shipped.catch_up:
                        raise RuntimeError(f"the primary answered the truncation after batch {after} with no catch-up")
                    self._truncate(after, undo, shipped)
                    truncating = None
                    self.attached = True
                elif shipped.seq != self.applied + 1 and not (shipped.catch_up and shipped.seq > self.applied):
                    raise RuntimeError(f"replication gap: applied {self.applied}, got {shipped.seq}")
                else:  # a catch-up batch (the sum of many) leaves a gap in the footprints
                    self._apply(oplog.decode(shipped.ops), None if shipped.catch_up else shipped)
                self.applied = shipped.seq
                self.head = max(shipped.head, shipped.seq)
                progress.set()
        finally:
            self.attached = False
            acker.cancel()
            call.cancel()
            if acks.full():
                acks.get_nowait()
            acks.put_nowait(None)  # ends the request stream's generator, which gRPC may still be reading

    def _truncate(self, after: int, undo: list[oplog.Op], shipped: replication.ReplicatedBatch) -> None:
        """Apply the primary's answer to this former primary's tail in one batch: its tail's keys as
        the primary holds them, with the primary's batches since; its own footprints go (they describe
        batches the group's history does not hold). Said in one line."""
        started = time.monotonic()
        what = dropped(undo, self.ctx.meta.topics_by_id)  # before: a topic the tail created is still known
        self._apply([*oplog.decode(shipped.ops), ALL_FOOTPRINTS])
        if self.batches is not None:
            self.batches.load_footprints(self.ctx.store)  # none left
        log.warning("truncated this member's unacknowledged tail (its batches %d-%d; the epoch of %s began after "
                    "batch %d): dropped %s; now at the primary's batch %d (%.3f s)", after + 1, self.applied,
                    self.primary, after, what, shipped.seq, time.monotonic() - started)
        self.truncating = None

    async def promote(self, force: bool) -> tuple[int, int, bool]:
        """Stop following for good at the next primary epoch (stored, durably) -> (the primary's last
        batch applied here, the new epoch, whether the primary still answered). Refused while the
        primary answers, unless `force`d: then the epoch fences it."""
        answered = await self._primary_answers()
        if answered and not force:
            raise BrokerError(pb.PRECONDITION_FAILED,
                              f"the primary {self.primary} still answers at {self.followed}: stop it first, or promote "
                              f"with --force (it is fenced; acknowledged writes not applied here are lost)")
        epoch = next_epoch(self.ctx.store, await self.cluster.epoch_of(self.cluster.name))
        batch = self.ctx.store.batch()
        batch.put(Family.META, keys.PROMOTED_KEY, b"1")
        if self.followed:  # told of the new epoch until it heard, across restarts of either (fencing.py)
            batch.put(Family.META, keys.FORMER_PRIMARY_KEY, self.followed.encode())
        batch.put(Family.META, keys.PRIMARY_EPOCH_KEY, keys.encode_u64(epoch))
        began(batch, epoch, self.applied)  # batches above this one are its own
        batch.delete(Family.META, keys.FENCED_KEY)
        await self.ctx.store.commit(batch)
        log.warning("promoted by request%s after applying the primary's batch %d: primary epoch %d",
                    " (forced: the primary still answered)" if answered else "", self.applied, epoch)
        asyncio.get_running_loop().call_later(0.2, self.on_promoted)  # after the reply is sent
        return self.applied, epoch, answered

    async def _primary_answers(self) -> bool:
        """Whether the primary accepts a connection within PROBE_S."""
        endpoint = await self._endpoint()
        if endpoint is None:
            return False
        self.followed = endpoint
        channel = open_aio_channel(endpoint, self.ctx.settings.client_tls)
        try:
            await asyncio.wait_for(channel.channel_ready(), PROBE_S)
            return True
        except TimeoutError:
            return False
        finally:
            await channel.close()

    def _adopt(self, copy: replication.Principals) -> None:
        try:
            if self.principals.adopt(copy):
                log.info("took the primary's users and ACLs")
        except (UserError, AclStoreError) as e:  # kept what we had: a user still signs in as before
            log.error("cannot take the primary's users and ACLs: %s", e)

    def _apply(self, ops: list[oplog.Op], shipped: replication.ReplicatedBatch | None = None) -> None:
        """Write `ops`; with the `shipped` batch they came in, its footprint too (OpLog.follow)."""
        batch = self.ctx.store.batch()
        batch.apply(ops)
        batches = self.batches if shipped is not None else None
        if batches is not None and shipped is not None:
            batches.follow(batch, shipped.seq, shipped.ops, ops)
        self.ctx.store.write(batch)
        if batches is not None and shipped is not None:
            batches.followed(shipped.seq, len(shipped.ops))
        self.ctx.logs.forget_offsets()  # reads see the new entries' offsets
        config = (keys.TOPIC_META_PREFIX, keys.GROUP_META_PREFIX)
        if any(family == Family.META and key.startswith(config) for _, family, key, _ in ops):
            self.ctx.meta = load_metadata(self.ctx.store, self.ctx.settings)
