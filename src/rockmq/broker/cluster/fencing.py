"""Promotion is fenced by the primary epoch: a promoted replica takes a higher epoch, and a
primary that hears of one above its own stops taking writes.

The primary epoch counts promotions (0 for a primary that never was a replica): a primary writes
it in the first batch its replicas get, and a promoted replica takes one more than the highest it
knows (`repl/epoch` in meta). It is not the start count (`epoch`, which every restart raises and
sequence numbers rely on): an old primary restarted twice must not outrank its promoted replica.

A primary learns of a higher epoch from a name server's reply to its registration (the name server
keeps the highest registration of each broker name, so routes name the new primary) or from a
replica's Follow stream (a promoted replica opens one on its former primary to tell it, which
also covers clusters without name servers, and goes on across restarts of either until the former
primary heard: `repl/former`). Either way only with the epoch's proof (`epoch_proof`, under the
group's secret): anyone may register at an open name server, so an epoch a name server hands back
without a proof that checks fences nothing (logged once). It then writes `repl/fenced` (it stays fenced across
restarts, until re-seeded from the new primary), refuses every write with HA_NOT_AVAILABLE (which
clients retry, the official ones on another queue, rockmq's after refreshing the route), stops
its background writers and registrations, and answers routes with the new primary.

A primary that was down may have been superseded while nobody could tell it. So a primary a replica
followed once (`repl/replicated`) restarts read-only, refusing writes with HA_NOT_AVAILABLE, until
it has confirmed it is still the primary: a name server's reply to its registration naming no
higher epoch, or a replica holding its secret following it at its own epoch. With no one to ask it
stays read-only; `--force-primary` takes writes at once, at the risk of two primaries.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from collections.abc import Callable

import grpc

from rockmq.auth.inner import inner_credentials
from rockmq.auth.inner_calls import inner_channel
from rockmq.config import Settings
from rockmq.namesrv.registry import commitment
from rockmq.protocol import pb, replication, replication_grpc
from rockmq.protocol.errors import BrokerError
from rockmq.store import Store, keys
from rockmq.store.db import Batch
from rockmq.store.schema import Family

log = logging.getLogger(__name__)
TELL_RETRY_S = 2.0  # how often a promoted replica tries to reach its former primary until it heard


def _stored(store: Store, key: bytes) -> int:
    raw = store.get(Family.META, key)
    return keys.decode_u64(raw) if raw is not None else 0


def epoch_proof(secret: bytes, epoch: int) -> bytes:
    """What a replica sends beside a primary epoch: only a holder of the primary's secret (which
    replicas get with its first batch) can fence it. With --auth only inner credentials may follow;
    without, a client that follows reads the secret as a replica does (docs/cluster.md)."""
    return hmac.new(secret, b"primary epoch %d" % epoch, hashlib.sha256).digest()


def proven(secret: bytes, epoch: int, proof: bytes) -> bool:
    return hmac.compare_digest(proof, epoch_proof(secret, epoch))


def successor(secret: bytes, epoch: int) -> bytes:
    """What a primary at `epoch` registers beside its proof: the hash of its successor's proof, which a
    name server (holding no secret) checks a promoted replica's registration against (namesrv/registry.py)."""
    return commitment(epoch_proof(secret, epoch + 1))


def stored_epoch(store: Store) -> int:
    """The primary epoch this store holds: its own (a primary) or its primary's (a replica)."""
    return _stored(store, keys.PRIMARY_EPOCH_KEY)


def next_epoch(store: Store, known: int) -> int:
    """The epoch a replica takes when promoted: above its primary's, any it was fenced by and
    `known` (the highest a name server holds for its broker name)."""
    return max(stored_epoch(store), _stored(store, keys.FENCED_KEY), known) + 1


class Fence:
    """A primary's epoch, whether a promoted replica superseded it, and whether it has confirmed
    it is still the primary since it started. `on_fenced` runs once, when it is superseded (the
    broker stops its background writers and registrations); `on_confirmed` once, when it confirms
    (the broker starts them)."""

    def __init__(self, store: Store, broker_name: str, force_primary: bool = False,
                 on_fenced: Callable[[], None] = lambda: None, on_confirmed: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.broker_name = broker_name
        self.epoch = stored_epoch(store)
        self.superseded = _stored(store, keys.FENCED_KEY)  # the epoch that did (0: none)
        self.confirmed = force_primary or store.get(Family.META, keys.REPLICATED_KEY) is None  # nothing to confirm
        self.forced = force_primary
        self.on_fenced = on_fenced
        self.on_confirmed = on_confirmed
        self._unproven = 0  # the last unproven epoch logged (each is logged once)

    @property
    def fenced(self) -> bool:
        return self.superseded > self.epoch

    def guard(self, asks: str) -> None:
        """From now on (the broker's own start-up writes done), a fenced store refuses writes, and
        so does one that has yet to confirm it is the primary; `asks`: whom it asks (for the line)."""
        if self.fenced:
            log.warning("this broker was superseded by a promoted replica (primary epoch %d above its %d): it "
                        "refuses writes and serves reads; re-seed it from the new primary to use it again",
                        self.superseded, self.epoch)
            self.store.refuse_writes(self.refusal)
        elif not self.confirmed:
            log.warning("this broker was the primary of a replicated group: it serves reads only until %s confirms "
                        "it is still the primary (a replica may have been promoted while it was down); "
                        "--force-primary takes writes at once", asks)
            self.store.refuse_writes(self.unconfirmed)
        elif self.forced and self.store.get(Family.META, keys.REPLICATED_KEY) is not None:
            log.warning("--force-primary: taking writes without confirming this broker is still the primary; if a "
                        "replica was promoted meanwhile, both take writes and what this one takes is lost when it "
                        "is fenced")

    def unconfirmed(self) -> BrokerError:
        return BrokerError(pb.HA_NOT_AVAILABLE,
                           f"broker {self.broker_name!r} here has not yet confirmed it is still the primary after a "
                           f"restart (its name servers or its replica tell it); retry")

    def confirm(self, source: str) -> None:
        """`source` (a name server, a replica) knows of no primary epoch above this broker's."""
        if self.confirmed or self.fenced:
            return
        self.confirmed = True
        self.store.refuse_writes(None)
        log.warning("%s confirmed this broker is still the primary (epoch %d): taking writes", source, self.epoch)
        self.on_confirmed()

    def followed(self) -> None:
        """A replica follows: from now on a restart waits to confirm this broker is the primary."""
        if self.store.get(Family.META, keys.REPLICATED_KEY) is not None:
            return
        batch = self.store.batch()
        batch.put_unshipped(Family.META, keys.REPLICATED_KEY, b"1")  # the replica's own restarts have nothing to confirm
        try:
            self.store.write(batch)
        except BrokerError:  # fenced or a full disk: it is marked at the next follow
            pass

    def refusal(self) -> BrokerError:
        return BrokerError(pb.HA_NOT_AVAILABLE,
                           f"broker {self.broker_name!r} here is no longer the primary: a replica was promoted "
                           f"(primary epoch {self.superseded}); retry, routes name the new primary")

    def learn_proven(self, epoch: int, proof: bytes, secret: bytes, source: str) -> bool:
        """A primary epoch `source` holds, with its proof; -> whether this broker is fenced. A higher
        epoch without a proof that checks under `secret` (the group's) is a stranger's claim: it
        changes nothing, and is logged once."""
        if epoch <= self.epoch or self.fenced or proven(secret, epoch, proof):
            return self.learn(epoch, source)
        if epoch != self._unproven:
            self._unproven = epoch
            log.warning("%s holds primary epoch %d, above this broker's %d, without the proof its replicas give: "
                        "ignored (not a promotion of this broker's replica)", source, epoch, self.epoch)
        return False

    def learn(self, epoch: int, source: str) -> bool:
        """A primary epoch heard from `source`; -> whether this broker is fenced (now or before)."""
        if epoch <= self.epoch or self.fenced:
            return self.fenced
        batch = self.store.batch()
        batch.put(Family.META, keys.FENCED_KEY, keys.encode_u64(epoch))
        try:
            self.store.write(batch)
        except BrokerError as e:  # a full disk: fenced all the same; after a restart it hears the epoch again
            log.warning("cannot mark this broker fenced durably (%s): it refuses writes until it stops", e.message)
        self.superseded = epoch
        log.warning("%s holds primary epoch %d, above this broker's %d: a replica was promoted; this broker "
                    "refuses writes from now on (re-seed it from the new primary)", source, epoch, self.epoch)
        self.store.refuse_writes(self.refusal)
        self.on_fenced()
        return True


def began(batch: Batch, epoch: int, after: int) -> None:
    """Record in `batch` that primary epoch `epoch` began after batch `after`: batches above it
    are the new primary's own, whatever the former primary wrote under the same numbers."""
    batch.put(Family.META, keys.EPOCH_BEGAN_PREFIX + keys.encode_u64(epoch), keys.encode_u64(after))


def epochs_began(store: Store) -> dict[int, int]:
    """Every primary epoch this store's history went through (above 0) -> the batch it began after."""
    prefix = keys.EPOCH_BEGAN_PREFIX
    return {keys.decode_u64(k[len(prefix):]): keys.decode_u64(v) for k, v in store.scan_prefix(Family.META, prefix)}


def diverged_after(store: Store, epoch: int) -> int | None:
    """Where a history at primary epoch `epoch` leaves this store's: the batch after which the next
    epoch above it began (None: none did). A replica at `epoch` holding batches above it holds ones
    its primary wrote after that epoch began (a former primary's unacknowledged tail, a second
    replica that got further than the one promoted): under the same numbers this store holds others.
    Its tail is truncated (truncation.py), or it is re-seeded with a full copy."""
    return min((after for e, after in epochs_began(store).items() if e > epoch), default=None)


def former_primary(store: Store) -> str:
    """The endpoint of the primary a promoted replica has yet to tell of its epoch ("": none)."""
    raw = store.get(Family.META, keys.FORMER_PRIMARY_KEY)
    return raw.decode() if raw is not None else ""


def _heard(store: Store) -> None:
    batch = store.batch()
    batch.delete(Family.META, keys.FORMER_PRIMARY_KEY)
    try:
        store.write(batch)
    except BrokerError:  # fenced itself meanwhile, or a full disk: telling it again later is harmless
        pass


async def tell_former_primary(store: Store, epoch: int, secret: bytes, settings: Settings) -> None:
    """A promoted replica tells its former primary its new epoch on a Follow stream, until the
    primary heard it (it refuses the stream, fenced) or cannot hear it (no replication); the one it
    was down for hears it when it is started again, even after this broker restarted."""
    endpoint = former_primary(store)
    warned = False
    inner = inner_credentials(settings)
    while True:
        channel = inner_channel(endpoint, settings.client_tls, inner)
        try:
            call = replication_grpc.ReplicationStub(channel).Follow(
                iter([replication.FollowerState(applied_seq=0, epoch=epoch, epoch_proof=epoch_proof(secret, epoch))]),
                timeout=5)
            async for _ in call:
                break  # a primary that sends batches did not take the epoch (an older rockmq): nothing more to do
            log.info("told the former primary at %s of primary epoch %d", endpoint, epoch)
            _heard(store)
            return
        except grpc.aio.AioRpcError as e:
            if e.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNIMPLEMENTED):
                log.info("the former primary at %s heard of primary epoch %d (%s)", endpoint, epoch, e.details())
                _heard(store)
                return
            if not warned:
                log.warning("cannot reach the former primary at %s to fence it (%s): trying every %.0f s",
                            endpoint, e.code().name, TELL_RETRY_S)
                warned = True
        finally:
            await channel.close()
        await asyncio.sleep(TELL_RETRY_S)
