"""The primary's side of its group's in-sync set (issue 30 §2; docs/cluster.md "Automatic failover"):
the members that hold every acknowledged message, kept in the coordinator, so that only they are
elected.

The invariant: every member of the set (as the coordinator holds it) holds every message the primary
acknowledged. A sync send is answered only once every member of the set applied it (the Replicator
asks `lacking`); to answer without one (it is more than replica_max_lag_ms behind, or gone), the
primary first removes it from the set in the coordinator (`drop`: compare-and-set, committed before
the answer). A replica close behind (within half of replica_max_lag_ms) begins to join: from then on
every answer waits for it as for a member; once it applied the last batch written when it began, it
holds every acknowledged message and enters the set in the coordinator. A new primary takes itself
out of the set it inherits (`load`): before that it answers no sync send.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from rockmq.broker.coordination.coordinator import Coordinator, CoordinatorError
from rockmq.protocol import pb
from rockmq.protocol.errors import BrokerError

log = logging.getLogger(__name__)
ADMIT_CHECK_S = 0.2  # how often the primary looks for caught-up replicas to admit


class InSyncKeeper:
    def __init__(self, coordinator: Coordinator, member: str) -> None:
        self.coordinator = coordinator
        self.member = member
        self.members: frozenset[str] = frozenset()
        self.version = -1  # the set's key's version as last written here (-1: not loaded yet)
        # replicas about to enter -> the last batch written when they began to: every answer since waited
        # for them, so once they applied it they hold every acknowledged message
        self.joining: dict[str, int] = {}
        self._changing = asyncio.Lock()  # one compare-and-set at a time: each names the version before it

    def lacking(self, seq: int, applied: Mapping[str, int]) -> frozenset[str]:
        """The members of the set, and those joining it, that have not applied batch `seq` (`applied`:
        each following member's last batch applied)."""
        if self.version < 0:
            raise BrokerError(pb.HA_NOT_AVAILABLE, "this primary has not read its group's in-sync set yet: retry")
        return frozenset(m for m in (*self.members, *self.joining) if applied.get(m, -1) < seq)

    async def load(self) -> None:
        """Take over the set as the new primary: itself out of it (it holds everything it serves)."""
        async with self._changing:
            read = await self.coordinator.in_sync()
            members = read.members - {self.member}
            if not await self.coordinator.set_in_sync(members, read.version):
                raise CoordinatorError("the in-sync set changed while the new primary took it over")
            self.members, self.version = members, read.version + 1
        log.warning("group member %s: primary with in-sync set %s", self.member, sorted(members) or "{}")

    async def drop(self, members: frozenset[str]) -> None:
        """Remove `members` from the set, in the coordinator first (those only joining: here), so that a
        send is answered without them. A BrokerError (retriable) if the coordinator did not take it."""
        for member in members:
            self.joining.pop(member, None)
        async with self._changing:
            left, gone = self.members - members, self.members & members
            if not gone:
                return
            if not await self._write(left):
                raise BrokerError(pb.HA_NOT_AVAILABLE, "a replica lags and the group's in-sync set cannot change now "
                                                       "(the coordinator did not take it, or this member is no longer "
                                                       "primary): retry")
        log.warning("group member %s: %s left the in-sync set (behind or gone): now %s", self.member,
                    sorted(gone), sorted(left) or "{}")

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
        back: the set it holds is adopted if it is the one written here, so this copy and the
        coordinator's never part (else every later compare-and-set here would fail)."""
        try:
            if await self.coordinator.set_in_sync(members, self.version):
                self.members, self.version = members, self.version + 1
                return True
        except CoordinatorError:
            pass
        try:
            read = await self.coordinator.in_sync()
        except CoordinatorError:
            return False
        if read.members != members:
            return False
        self.members, self.version = members, read.version
        return True

    async def run(self, applied: Callable[[], Mapping[str, int]], head: Callable[[], int],
                  close: Callable[[int], bool]) -> None:
        """Load the set, then let each following replica that is close (`close(its applied batch)`) join,
        and enter it once it applied the last batch written when it began to (`head`)."""
        while self.version < 0:
            try:
                await self.load()
            except CoordinatorError as e:
                log.warning("group member %s: cannot take over the in-sync set yet: %s", self.member, e)
                await asyncio.sleep(ADMIT_CHECK_S)
        while True:
            await asyncio.sleep(ADMIT_CHECK_S)
            for member, at in list(applied().items()):
                if member in self.members:
                    continue
                mark = self.joining.get(member)
                if mark is None and close(at):
                    self.joining[member] = head()  # from now on every answer waits for it
                elif mark is not None and at >= mark:
                    await self._admit(member)
