"""A coordinated member's role (issue 30; docs/cluster.md "Automatic failover"). With `--coordinator`
every member of a broker group starts alike; the coordinator says which one is primary, and this
module turns that into the role the Broker is built with (`broker_settings`, `take_role`), and
changes it when the primary goes (`Membership.run`: the serve loop rebuilds the Broker on `changed`).

An election: when no member holds the primary role, each live member announces how much of the log
it holds (its primary epoch, the last batch it applied) and, once every registered member announced
(at most the lease's length), the member of the in-sync set (`eligible`: in_sync.py keeps it; they
hold every acknowledged message) holding the most (`first_candidate`) campaigns; the others wait for
it, and if its lease lapses instead (it died meanwhile) they announce and choose again.

A primary takes writes only while its lease surely holds for the others (`writable_until`: the
coordinator's `lease_valid_until` less a margin, compared with time.monotonic() at each write by the
store, broker/commit.py); once etcd says its lease is gone, or another member holds the role, it
refuses writes and follows the next primary. While etcd does not answer at all (down, or out of this
member's reach: it cannot tell which), a primary under sync replication whose in-sync set holds
another member goes on past its lease (issue 30 §4, `rides_out`): each write it acknowledges is then
on every member of that set, and a member elected meanwhile is one of them and stops following it,
so no write is acknowledged that the next primary lacks (the set cannot shrink without etcd). Under
async replication, or alone in its set (an unclean election could pick another), it stops at its
lease. Its unacknowledged tail, if any, makes its history diverge from the new primary's: it is
truncated on following (broker/cluster/truncation.py; a full copy, reseed.py, if not).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from rockmq.broker.cluster.fencing import began, stored_epoch
from rockmq.broker.cluster.replication import stored_seq
from rockmq.broker.cluster.reseed import prepare
from rockmq.broker.coordination.coordinator import (
    Coordinator,
    CoordinatorError,
    CoordinatorUnavailable,
    InSync,
    Member,
    Primary,
)
from rockmq.broker.coordination.in_sync import InSyncKeeper
from rockmq.config import CONCERNS, Settings
from rockmq.store import Store, keys
from rockmq.store.schema import Family

log = logging.getLogger(__name__)
GATHER_S = 0.1  # how often an election reads the members' announcements until all announced
RETRY_S = 0.5  # after the coordinator did not answer
BACKOFF_MAX_S = 5.0  # a turn that keeps failing unforeseen is tried again at most this far apart
MARGIN_FRACTION = 6  # a primary stops writing a sixth of the lease before it could lapse for the others


def first_candidate(members: Mapping[str, Member]) -> str | None:
    """The member that campaigns first: the one holding the most of the log — the latest primary epoch,
    then the most batches applied (ties: the lowest name); None if none announced."""
    announced = [((-m.epoch, -m.applied), name) for name, m in members.items() if m.applied >= 0]
    return min(announced)[1] if announced else None


def epoch_floor(members: Mapping[str, Member], stored: int) -> int:
    """The highest primary epoch a member holds: the announced ones' and this member's own (`stored`).
    A campaign takes one above it and etcd's, so epochs never go back (an etcd that lost the group's
    keys, or a group whose stores outlived theirs)."""
    return max((stored, *(m.epoch for m in members.values())))


def all_announced(members: Mapping[str, Member]) -> bool:
    """Whether every registered member announced its position in this election."""
    return all(m.applied >= 0 for m in members.values())


def eligible(members: Mapping[str, Member], in_sync: InSync) -> dict[str, Member]:
    """The members that may be elected: those of the in-sync set (they hold every acknowledged
    message); every one only in the group's first election (the set was never written)."""
    return dict(members) if in_sync.version == 0 else {n: m for n, m in members.items() if n in in_sync.members}


def position(store: Store) -> tuple[int, int]:
    """How much of the group's log `store` holds: its primary epoch and its last batch."""
    return stored_epoch(store), stored_seq(store)


def broker_settings(settings: Settings, primary: Primary, member: str) -> Settings:
    """The settings the Broker runs a role with: a primary's as given, a replica's following the
    primary's endpoint; either without the coordinator's (the Broker does not talk to it)."""
    defaults: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(Settings) if f.name in CONCERNS["coordination"]}
    return dataclasses.replace(settings, replica_of="" if primary.member == member else primary.endpoint, **defaults)


def take_role(store: Store, primary: Primary, member: str) -> None:
    """Write into `store` what its role needs before the Broker reads it. The primary: the coordinator's
    epoch as its primary epoch (the fencing token, as a promotion's), beginning after its last batch (a
    member whose history went further truncates its tail: truncation.py), nothing left to confirm or to
    be fenced by (the coordinator decided). A replica: it follows, whatever it was before."""
    batch = store.batch()
    if primary.member == member:
        batch.put(Family.META, keys.PRIMARY_EPOCH_KEY, keys.encode_u64(primary.epoch))
        if primary.epoch > stored_epoch(store):
            began(batch, primary.epoch, stored_seq(store))
        for key in (keys.FENCED_KEY, keys.REPLICATED_KEY, keys.PROMOTED_KEY, keys.FORMER_PRIMARY_KEY):
            batch.delete(Family.META, key)
    else:
        batch.delete(Family.META, keys.PROMOTED_KEY)
    store.write(batch)


class Membership:
    """This member of its group in the coordinator: `primary` is the group's primary as this member
    knows it now (None: gone, electing); `role` the last one known, which the Broker is built for
    (this member, or the one it follows); `changed` is set when it changes."""

    def __init__(self, coordinator: Coordinator, member: str) -> None:
        self.coordinator = coordinator
        self.member = member  # its endpoint: unique in the group, and where the others reach it
        self.primary: Primary | None = None
        self.role: Primary | None = None
        self.changed = asyncio.Event()
        self._margin = coordinator.lease_s / MARGIN_FRACTION
        self._unanswered = False  # the coordinator's silence was logged
        self._sync_set: InSyncKeeper | None = None  # the in-sync set a sync send waits for, while primary

    @property
    def mine(self) -> bool:
        """Whether this member holds the primary role now: the primary key hangs on its lease (a key
        naming it under another lease is an earlier run's, lapsing)."""
        return self.primary is not None and self.coordinator.holds(self.primary)

    @property
    def joined(self) -> Primary:
        """The role the Broker is built in: known once `join` returned."""
        assert self.role is not None, "a member's Broker is built after it joined its group"
        return self.role

    @property
    def leads(self) -> bool:
        """Whether the Broker is built as the group's primary (the role it was given is this member's)."""
        return self.role is not None and self.role.member == self.member

    def writable_until(self) -> float:
        """Until when (time.monotonic()) this member may take writes: a margin before its lease could
        lapse, if it holds the primary role (for as long as it `rides_out` an etcd it cannot reach);
        else never."""
        if not self.mine:
            return 0.0
        return math.inf if self.rides_out() else self.coordinator.lease_valid_until() - self._margin

    def rides_out(self) -> bool:
        """Whether this primary goes on past its lease: etcd does not answer, and a sync send waits for
        another member of its in-sync set (the module's docstring says why that is safe)."""
        keeper = self._sync_set
        return keeper is not None and self.coordinator.unanswered() and bool(keeper.members - {self.member})

    def in_sync_keeper(self, max_lag_s: float, sync: bool) -> InSyncKeeper:
        """What keeps the group's in-sync set while this member is its primary (`sync`: under sync
        replication, where sends wait for the set)."""
        keeper = InSyncKeeper(self.coordinator, self.member, max_lag_s)
        self._sync_set = keeper if sync else None
        return keeper

    async def join(self, held: Callable[[], tuple[int, int]]) -> Primary:
        """Register and learn the group's primary (electing one if none holds it): the role to start in.
        A refusal (bad credentials, no permission) is raised: the member cannot start."""
        while True:
            try:
                await self.coordinator.register(self.member)
                break
            except CoordinatorUnavailable as e:
                await self._silent(e)
        while self.role is None:
            await self._turn(held)
        self.changed.clear()
        return self.role

    async def run(self, held: Callable[[], tuple[int, int]]) -> None:
        """Follow the group's primary as it changes, for as long as the broker serves; `held`: how much
        of the log this member holds now (`position`). Supervised: a turn that fails unforeseen (a
        watch the client ended oddly, a bug) is said in one line and tried again, backing off."""
        backoff = RETRY_S
        while True:
            try:
                await self._turn(held)
                backoff = RETRY_S
            except (Exception, asyncio.CancelledError) as e:  # never a silent end: it would stop following its group
                if isinstance(e, asyncio.CancelledError) and _cancelling():
                    raise  # the broker stops: not a failure (a CancelledError of a call the channel cut is one)
                if backoff == RETRY_S:  # said once, until a turn succeeds
                    log.error("group member %s: following the group failed (%r): trying again, backing off up to "
                              "%g s", self.member, e, BACKOFF_MAX_S)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)

    async def close(self) -> None:
        """The broker stops: give up the role and the lease (the others elect at once)."""
        try:
            await self.coordinator.resign()
        except CoordinatorError as e:
            log.warning("could not give up the primary role: %s", e)
        await self.coordinator.close()

    async def _turn(self, held: Callable[[], tuple[int, int]]) -> None:
        try:
            if self.coordinator.lease_valid_until() == 0.0:  # not registered yet, or etcd dropped the lease
                if self.primary is not None and self.primary == self.role and self.leads:
                    self._step_down("its lease was lost")
                await self.coordinator.register(self.member)
            if self.mine:
                await self._hold()
            elif self.primary is None:
                await self._elect(*held())
            else:
                self._learn(await self.coordinator.watch_primary(self.primary, self.coordinator.lease_s))
            self._unanswered = False
        except CoordinatorUnavailable as e:
            await self._silent(e)
        except CoordinatorError as e:  # a refusal (the lease etcd no longer knows: registered again next turn)
            log.warning("group member %s: %s", self.member, e)
            await asyncio.sleep(RETRY_S)
        except (ValueError, KeyError) as e:  # a key in etcd that does not decode (written by hand?): read again
            log.error("group member %s: a group key in the coordinator does not decode (%r); reading again", self.member, e)
            await asyncio.sleep(RETRY_S)

    async def _silent(self, e: CoordinatorUnavailable) -> None:
        """The coordinator did not answer: said once (until it answers again), tried again shortly."""
        if not self._unanswered:
            log.warning("group member %s: %s", self.member, e)
            self._unanswered = True
        await asyncio.sleep(RETRY_S)

    async def _hold(self) -> None:
        """The primary: watch that it still is, and step down when its lease may lapse."""
        left = self.writable_until() - time.monotonic()
        if left <= 0:
            self._step_down("it could not renew its lease in time")
            return
        now = await self.coordinator.watch_primary(self.primary, min(left, self.coordinator.lease_s / 3))
        if now != self.primary:
            self._step_down(f"the role is now {now.member}'s" if now is not None else "its primary key went")
            self._learn(now)

    async def _elect(self, epoch: int, applied: int) -> None:
        """No primary known: announce this member's position; once every registered member announced
        (or the lease's length passed: the silent ones are gone, or cut off from the coordinator) the
        most caught-up campaigns, the others wait for it. Once a primary is known the announcement is
        withdrawn (the next election starts from none)."""
        await self.coordinator.announce(self.member, epoch, applied)
        deadline = time.monotonic() + self.coordinator.lease_s
        while (now := await self.coordinator.primary()) is None:
            members = await self.coordinator.members()
            if not all_announced(members) and time.monotonic() < deadline:
                await asyncio.sleep(GATHER_S)
                continue
            in_sync = await self.coordinator.in_sync()
            first = first_candidate(eligible(members, in_sync))
            if first == self.member:
                now = await self.coordinator.campaign(self.member, in_sync, epoch_floor(members, epoch))
            else:  # it campaigns meanwhile, or its lease lapses (it is gone) and the next turn chooses again
                if first is None:
                    log.warning("group member %s: no member of the in-sync set %s is here to be elected: the "
                                "group takes no writes until one is", self.member, sorted(in_sync.members))
                else:
                    log.info("group member %s: waiting for %s, the most caught-up, to campaign", self.member, first)
                now = await self.coordinator.watch_primary(None, self.coordinator.lease_s)
            break
        self._learn(now)
        if now is not None:
            await self.coordinator.announce(self.member, 0, -1)

    def _learn(self, now: Primary | None) -> None:
        if now == self.primary:
            return
        self.primary = now
        if now is None:
            log.warning("group member %s: the primary %s is gone: electing", self.member,
                        self.role and f"{self.role.member} (epoch {self.role.epoch})")
            return
        if now.member == self.member and not self.mine:  # watched (the next turn) until it lapses
            log.warning("group member %s: the primary key names this member at epoch %d under a lease it does not "
                        "hold (an earlier run's, or one it lost): waiting for it to lapse", self.member, now.epoch)
            return
        self.role = now
        log.warning("group member %s: %s is primary at epoch %d%s", self.member, now.member, now.epoch,
                    " (this member)" if self.mine else "")
        self.changed.set()

    def _step_down(self, why: str) -> None:
        assert self.primary is not None
        log.warning("group member %s: stepping down from primary (epoch %d): %s; refusing writes", self.member,
                    self.primary.epoch, why)
        self.primary = None


def _cancelling() -> bool:
    """Whether the running task itself is being cancelled (not a call inside it)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def held_in(settings: Settings) -> tuple[int, int]:
    """How much of the log the member's data directory holds (`position`), before its Broker opens it."""
    prepare(settings.data_path)  # a re-seeded copy swapped in first, as the Broker would
    store = Store(settings.data_path, settings.flush, settings.flush_interval_ms, None, settings.store_memory_mib,
                  settings.disk_reserve_mib)
    try:
        return position(store)
    finally:
        store.close()
