"""The `Coordinator` seam: what a broker group's election needs from the store that holds its
primary (issue 30; docs/cluster.md "Automatic failover"), kept to one small interface so that etcd
stays behind it (etcd.py is the one implementation).

A group is the members of one `broker_name`. The coordinator holds, per group: each member's
registration under its own lease (`coordinator_lease_s`), the primary (which member, its endpoint,
its epoch: a key under the primary's lease, so it vanishes when the primary stops renewing), the
group's last epoch (kept: the next campaign takes the one above — the fencing token issue 20's
primary epochs carry), and the in-sync set (the members that hold every acknowledged message) with
the revision a compare-and-set names.

Every call is bounded by the coordinator's call timeout; when the store cannot be reached in it the
call raises `CoordinatorUnavailable`, which is retriable: the current primary keeps serving, nothing
is elected, and a change of the in-sync set waits.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

PREFIX = "/rockmq/groups"


class _Json:
    """A record kept in the coordinator as a JSON object of its fields (those marked `local` stay out:
    what the store says of the key, not its value). A value that does not decode (written by hand?)
    raises ValueError or KeyError."""

    def encode(self) -> bytes:
        return json.dumps({f.name: getattr(self, f.name) for f in _stored(self)}).encode()

    @classmethod
    def decode(cls, value: bytes, **local: Any) -> Self:
        d = json.loads(value)
        return cls(**{f.name: _TYPES[str(f.type)](d[f.name]) for f in _stored(cls)}, **local)


_TYPES = {"str": str, "int": int}  # a stored field's annotation (a string: postponed) -> its coercion


def _stored(record: Any) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(record) if not f.metadata.get("local")]


class CoordinatorError(Exception):
    """The coordinator refused a call (bad credentials, no permission): not retried."""


class CoordinatorUnavailable(CoordinatorError):
    """The coordinator did not answer within the call timeout (unreachable, no quorum): retriable."""


@dataclass(frozen=True)
class Primary(_Json):
    """Who holds a group's primary role, where clients and replicas reach it, and its epoch; `lease`:
    the lease its key hangs on as the coordinator read it (0: not read from it), which tells the holder
    from an earlier run of the same member (a fast restart: its old key not lapsed yet). Not part of the
    value, nor of equality (the epoch already tells two holdings apart)."""

    member: str
    endpoint: str
    epoch: int
    lease: int = field(default=0, compare=False, metadata={"local": True})


@dataclass(frozen=True)
class Member(_Json):
    """A registered member: where it serves, and how much of the group's log it holds as it last
    announced: the primary epoch its history is at and the last batch it applied (-1: not announced
    since it registered). An election reads these to let the most caught-up member campaign first."""

    endpoint: str
    epoch: int = 0
    applied: int = -1


@dataclass(frozen=True)
class InSync:
    """A group's in-sync set as read, with the version of its key (0: never written; each write adds
    one, and the key is never deleted) that a compare-and-set must name to replace it."""

    members: frozenset[str]
    version: int

    @staticmethod
    def encode(members: frozenset[str]) -> bytes:
        return json.dumps(sorted(members)).encode()

    @staticmethod
    def decode(value: bytes) -> frozenset[str]:
        return frozenset(str(m) for m in json.loads(value)) if value else frozenset()


@dataclass(frozen=True)
class Lag:
    """How far one member is behind the primary, as the primary measured it (OpLog.lag): the last batch
    it applied, the messages written after it, and how long ago the first batch it lacks was written."""

    applied: int
    messages: int
    ms: int


@dataclass(frozen=True)
class Status:
    """What a primary reports of its group about once a second (status.py): itself, its epoch, its last
    batch, when (ms since the epoch), each other member's lag, and every member it knows of (registered,
    following, or known to the primary before it: a dead one stays listed). Kept under no lease: after
    the primary dies it still says how far behind each member was (`rockmq broker elect --unclean`)."""

    member: str
    epoch: int
    head: int
    at_ms: int
    lags: dict[str, Lag]
    known: frozenset[str] = frozenset()

    def encode(self) -> bytes:
        return json.dumps({"member": self.member, "epoch": self.epoch, "head": self.head, "at_ms": self.at_ms,
                           "lags": {m: [lag.applied, lag.messages, lag.ms] for m, lag in sorted(self.lags.items())},
                           "known": sorted(self.known)}).encode()

    @classmethod
    def decode(cls, value: bytes) -> Status:
        d = json.loads(value)
        return cls(str(d["member"]), int(d["epoch"]), int(d["head"]), int(d["at_ms"]),
                   {str(m): Lag(int(a), int(n), int(ms)) for m, (a, n, ms) in d["lags"].items()},
                   frozenset(str(m) for m in d.get("known", ())))


@dataclass(frozen=True)
class Unclean:
    """An operator's unclean election (`rockmq broker elect --unclean`): the member made electable
    alone, the in-sync set it replaced (none of it live), the group's epoch then (the member is
    elected at the next) and what it was known to lack (its Lag in the last primary's Status, or None)."""

    member: str
    replaced: frozenset[str]
    after_epoch: int
    lag: Lag | None

    def encode(self) -> bytes:
        lag = [self.lag.applied, self.lag.messages, self.lag.ms] if self.lag is not None else None
        return json.dumps({"member": self.member, "replaced": sorted(self.replaced), "after_epoch": self.after_epoch,
                           "lag": lag}).encode()

    @classmethod
    def decode(cls, value: bytes) -> Unclean:
        d = json.loads(value)
        lag = Lag(*(int(x) for x in d["lag"])) if d["lag"] is not None else None
        return cls(str(d["member"]), frozenset(str(m) for m in d["replaced"]), int(d["after_epoch"]), lag)


@dataclass(frozen=True)
class GroupKeys:
    """The keys of one group, written here once: `{PREFIX}/{broker_name}/` + primary (the Primary,
    under its lease), epoch (the last epoch handed out, a decimal number, no lease), in_sync (a JSON
    list of member names, no lease), members/{member} (a Member: its endpoint and announced position, under its
    lease), status (the primary's last Status, no lease) and unclean (the last Unclean election, no lease)."""

    group: str

    @property
    def root(self) -> str:
        return f"{PREFIX}/{self.group}/"

    @property
    def primary(self) -> str:
        return self.root + "primary"

    @property
    def epoch(self) -> str:
        return self.root + "epoch"

    @property
    def in_sync(self) -> str:
        return self.root + "in_sync"

    @property
    def members(self) -> str:
        return self.root + "members/"

    def member(self, name: str) -> str:
        return self.members + name

    @property
    def status(self) -> str:
        return self.root + "status"

    @property
    def unclean(self) -> str:
        return self.root + "unclean"


class Coordinator(Protocol):
    """One member's handle on its group in the coordinator. Each call raises CoordinatorUnavailable
    if the coordinator does not answer within the call timeout."""

    @property
    def lease_s(self) -> int:
        """The lease a member holds (coordinator_lease_s)."""
        ...

    async def register(self, endpoint: str) -> None:
        """Take a lease, write this member's registration under it and keep it renewed until close (or
        until etcd no longer knows it: then `lease_valid_until` is 0.0, and the member registers again)."""
        ...

    def lease_valid_until(self) -> float:
        """Up to when (time.monotonic()) this member's lease surely holds: the start of its last
        answered renewal plus the lease's length (0.0 before registering, or once it was lost). A
        primary takes writes only before it."""
        ...

    def unanswered(self) -> bool:
        """Whether the coordinator has not answered this member's lease renewals since the last one it
        answered (etcd out of reach: for all, or for this member alone; it cannot tell which)."""
        ...

    def holds(self, primary: Primary) -> bool:
        """Whether `primary` (as read from the coordinator) is this member's holding: its key hangs on
        this member's lease now, not on an earlier run's (the member's name alone does not say)."""
        ...

    async def announce(self, endpoint: str, epoch: int, applied: int) -> None:
        """Rewrite this member's registration with how much of the log it holds (an election's input)."""
        ...

    async def members(self) -> dict[str, Member]:
        """The group's registered members (those whose lease holds) by name."""
        ...

    async def campaign(self, endpoint: str, eligible: InSync | None = None, floor: int = 0) -> Primary | None:
        """Take the group's primary role if no member holds it (and, with `eligible`, only while the
        in-sync set is still the one read), with the group's next epoch — above both the coordinator's
        and `floor` (the highest epoch a member's store holds: epochs never go back, even on a
        coordinator that lost or never had the group's keys) — in one transaction; after
        register. Returns the primary after the attempt: this member with its new epoch if it won, else
        the holder; None if nobody holds it but the in-sync set changed since `eligible` was read."""
        ...

    async def primary(self) -> Primary | None:
        """The group's primary now (None: no member holds the role)."""
        ...

    async def watch_primary(self, known: Primary | None, timeout_s: float) -> Primary | None:
        """The group's primary once it is other than `known`, or as it is after `timeout_s`."""
        ...

    async def in_sync(self) -> InSync:
        """The group's in-sync set and its revision."""
        ...

    async def set_in_sync(self, members: frozenset[str], version: int) -> bool:
        """Replace the in-sync set if it is still at `version` and this member still holds the primary
        role (only the primary keeps the set); False, nothing written, if not."""
        ...

    async def publish_status(self, status: Status) -> bool:
        """Write the group's Status if this member holds the primary role (False, nothing written, if not)."""
        ...

    async def unclean(self) -> Unclean | None:
        """The group's last unclean election (None: never one)."""
        ...

    async def epoch(self) -> int:
        """The group's last epoch handed out (0: never one)."""
        ...

    async def status(self) -> Status | None:
        """The Status the group's primary (or its last one) reported last (None: never one)."""
        ...

    async def elect_unclean(self, choice: Unclean, in_sync: InSync) -> bool:
        """An operator's unclean election: replace the in-sync set with `choice.member` alone (and record
        `choice`) if nobody holds the primary role, the set is still at `in_sync.version`, the epoch is
        still `choice.after_epoch` and the member is registered; False, nothing written, if not. The
        member then campaigns as any elected one does (the next epoch)."""
        ...

    async def resign(self) -> None:
        """Give up the primary role if this member holds it (the others may elect at once)."""
        ...

    async def close(self) -> None:
        """Stop renewing the lease, revoke it and let the connection go: this member's registration
        (and its primary role, if it held it) goes at once, or, with the coordinator unreachable,
        lapses within the lease."""
        ...
