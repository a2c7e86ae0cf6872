"""The primary's side of its group's in-sync set (issue 30 §2; docs/cluster.md "Automatic failover"):
the members that hold every acknowledged message, kept in the coordinator, so that only they are
elected.

The invariant: every member of the set (as the coordinator holds it) holds every message the primary
acknowledged. The primary is in it (it holds everything it acknowledged: a group of one, or whose
replicas are all gone, can still elect it again). A sync send is answered only once every other
member of the set applied it (the Replicator asks `lacking`); to answer without one (it is more than
replica_max_lag_ms behind, or gone), the primary first removes it from the set in the coordinator
(`drop`: compare-and-set, committed before the answer, within the time the send has left). A replica
close behind (within half of replica_max_lag_ms) begins to join: from then on every answer waits for
it as for a member; once it applied the last batch written when it began, it holds every acknowledged
message and enters the set in the coordinator. Apart from sends (and under async replication, where
sends wait for nobody) the primary looks at each member's lag — the age of the first batch it has not
applied — and drops those behind by more than replica_max_lag_ms, or not following for that long.

A new primary takes over the set it inherits (`load`): itself in, the members no longer registered
(dead: their lease lapsed) out; before that it answers no sync send. Its replicas are rebuilt to
follow it and dial it within a second or so: no member is judged behind before REBUILD_GRACE_S.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Mapping

from rockmq.broker.coordination.coordinator import Coordinator, CoordinatorError
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError

log = logging.getLogger(__name__)
ADMIT_CHECK_S = 0.2  # how often the primary looks for caught-up replicas to admit, and for lagging ones
REBUILD_GRACE_S = 2.0  # after a new primary took over: its replicas are rebuilt and dial it (0.1-1 s measured)


def taken_over(members: frozenset[str], registered: Collection[str], primary: str) -> frozenset[str]:
    """The set a new primary keeps of the one it inherits: itself in; out, those no longer registered
    (their lease lapsed: dead, or cut off from the coordinator). Only ever smaller but for the primary,
    which holds every message it will acknowledge."""
    return frozenset(m for m in members if m in registered) | {primary}


def behind(members: frozenset[str], primary: str, applied: Mapping[str, int], lag_s: Callable[[int], float],
           absent_s: Callable[[str], float], max_lag_s: float) -> frozenset[str]:
    """The members of the set (the primary aside) more than `max_lag_s` behind: following, by the age of
    the first batch they have not applied (`lag_s`); not following, by how long they have not (`absent_s`)."""
    return frozenset(m for m in members if m != primary and
                     (lag_s(applied[m]) if m in applied else absent_s(m)) > max_lag_s)


def _retrieved(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()


class InSyncKeeper:
    def __init__(self, coordinator: Coordinator, member: str, max_lag_s: float) -> None:
        self.coordinator = coordinator
        self.member = member
        self.max_lag_s = max_lag_s
        self.members: frozenset[str] = frozenset()
        self.version = -1  # the set's key's version as last written here (-1: not loaded yet)
        # replicas about to enter -> the last batch written when they began to: every answer since waited
        # for them, so once they applied it they hold every acknowledged message
        self.joining: dict[str, int] = {}
        self.judged_from = float("inf")  # (the event loop's time) no member is judged behind before: REBUILD_GRACE_S
        self._unsettled: frozenset[str] = frozenset()  # added by a write whose outcome is not known: maybe held
        self._absent: dict[str, float] = {}  # members of the set seen not following -> since when (the loop's time)
        self._changing = asyncio.Lock()  # one compare-and-set at a time: each names the version before it

    def lacking(self, seq: int, applied: Mapping[str, int]) -> frozenset[str]:
        """The members of the set, and those joining it, that have not applied batch `seq` (`applied`:
        each following member's last batch applied); the primary holds it."""
        if self.version < 0:
            raise BrokerError(pb.HA_NOT_AVAILABLE, "this primary has not read its group's in-sync set yet: retry")
        return frozenset(m for m in (*self.members, *self.joining) if m != self.member and applied.get(m, -1) < seq)

    async def load(self) -> None:
        """Take over the set as the new primary (`taken_over`), and begin the grace before judging lag."""
        async with self._changing:
            read = await self.coordinator.in_sync()
            members = taken_over(read.members, await self.coordinator.members(), self.member)
            if not await self.coordinator.set_in_sync(members, read.version):
                raise CoordinatorError("the in-sync set changed while the new primary took it over")
            self.members, self.version = members, read.version + 1
            self.judged_from = asyncio.get_running_loop().time() + REBUILD_GRACE_S
        log.warning("group member %s: primary with in-sync set %s", self.member, sorted(members))

    async def drop(self, members: frozenset[str], timeout_s: float | None = None) -> None:
        """Remove `members` from the set, in the coordinator first (those only joining: here), so that a
        send is answered without them. A BrokerError (retriable) if the coordinator did not take it, or
        not within `timeout_s` (what the send has left: the change goes on, and a later send finds it)."""
        change = asyncio.ensure_future(self._drop(members))
        change.add_done_callback(_retrieved)  # its failure after the send stopped waiting is the send's, said already
        try:
            await asyncio.wait_for(asyncio.shield(change), timeout_s)
        except TimeoutError:
            raise BrokerError(pb.HA_NOT_AVAILABLE, "a replica lags and the group's in-sync set did not change in "
                                                   "time (the coordinator is slow): retry") from None

    async def _drop(self, members: frozenset[str]) -> None:
        async with self._changing:
            gone = (self.members | self._unsettled) & members  # those the coordinator may hold
            left = self.members - members
            if gone and not await self._write(left):  # those joining stay waited for meanwhile
                raise BrokerError(pb.HA_NOT_AVAILABLE, "a replica lags and the group's in-sync set cannot change now "
                                                       "(the coordinator did not take it, or this member is no longer "
                                                       "primary): retry")
            for member in members:
                self.joining.pop(member, None)
        if gone:
            log.warning("group member %s: %s left the in-sync set (behind or gone): now %s", self.member,
                        sorted(gone), sorted(left))

    async def _admit(self, member: str) -> None:
        """Enter a joining replica that applied every batch written when it began to join. It stays
        joining (every answer waits for it) until the coordinator holds it in the set: an answer
        in between that did not wait for it could be missing from a member that may be elected."""
        async with self._changing:
            if member not in self.joining:  # dropped meanwhile
                return
            if not await self._write(self.members | {member}):
                return  # still joining: the next look tries again
            self.joining.pop(member, None)
        log.warning("group member %s: %s joined the in-sync set: now %s", self.member, member, sorted(self.members))

    async def _write(self, members: frozenset[str]) -> bool:
        """Compare-and-set the set to `members` -> whether the coordinator holds it now. An outcome not
        known (no answer in time, or a retried write that had landed failing its compare) is read
        back and the set the coordinator holds adopted (only this primary writes it), so this copy and
        the coordinator's never part; if an earlier write had landed, the change is tried again from
        there. Not read back either: what it would have added is `_unsettled` — a removal must write
        it out too — until a write or a read settles it."""
        for _ in range(2):
            try:
                if await self.coordinator.set_in_sync(members, self.version):
                    self.members, self.version, self._unsettled = members, self.version + 1, frozenset()
                    return True
            except CoordinatorError:
                pass
            try:
                read = await self.coordinator.in_sync()
            except CoordinatorError:
                self._unsettled |= members - self.members
                return False
            moved = read.version != self.version
            self.members, self.version, self._unsettled = read.members, read.version, frozenset()
            if read.members == members or not moved:  # not moved: refused (this member is no longer primary)
                return read.members == members
        return False

    async def run(self, applied: Callable[[], Mapping[str, int]], head: Callable[[], int],
                  lag_s: Callable[[int], float]) -> None:
        """Load the set; then, every ADMIT_CHECK_S, drop the members behind (`behind`, once the grace
        is over) and let each following replica that is close (`lag_s(its applied batch)` within half of
        max_lag_s) join, entering it once it applied the last batch written when it began to (`head`).
        Supervised: a turn that fails is said in one line (once, until it changes or one succeeds) and
        the next one tries again."""
        said = ""
        while True:
            try:
                if self.version < 0:
                    await self.load()
                else:
                    await self._look(dict(applied()), head, lag_s)  # a copy: Follow streams come and go meanwhile
                said = ""
            except Exception as e:  # never a silent end: the set would stop following the replicas
                foreseen = isinstance(e, (BrokerError, CoordinatorError))  # etcd unreachable, no longer primary
                what = str(e) if foreseen else repr(e)
                if what != said:
                    log.log(logging.WARNING if foreseen else logging.ERROR, "group member %s: the in-sync set could "
                            "not be %s: %s", self.member, "taken over yet" if self.version < 0 else "kept up", what)
                    said = what
            await asyncio.sleep(ADMIT_CHECK_S)

    async def _look(self, applied: Mapping[str, int], head: Callable[[], int], lag_s: Callable[[int], float]) -> None:
        now = asyncio.get_running_loop().time()
        self._absent = {m: self._absent.get(m, now) for m in self.members if m not in applied and m != self.member}
        if now >= self.judged_from:
            late = behind(self.members, self.member, applied, lag_s, lambda m: now - self._absent[m], self.max_lag_s)
            if late:
                await self._drop(late)
        for member, at in applied.items():
            if member in self.members:
                continue
            mark = self.joining.get(member)
            if mark is None and lag_s(at) <= self.max_lag_s / 2:
                self.joining[member] = head()  # from now on every answer waits for it
            elif mark is not None and at >= mark:
                await self._admit(member)
