"""`rockmq broker group NAME` and `rockmq broker elect NAME --unclean`: a coordinated broker group
(issue 30 §3, §5; docs/cluster.md "Operating a coordinated group") as etcd holds it.

Both read etcd alone, with the options `serve --coordinator` takes (and its ROCKMQ_COORDINATOR*
variables): who is registered (up), the primary and epoch, the in-sync set, and the lags the primary
reports there once a second (broker/coordination/status.py). So they answer with the primary dead
(its last report stays, with its age), need no broker's credentials, and change nothing on a broker:
an unclean election is one compare-and-set in etcd, after which the chosen member campaigns as any
elected one does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rockmq.cli.common import EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE, CliError, table
from rockmq.cli.servers import SERVE, add_flags
from rockmq.config import CONCERNS

if TYPE_CHECKING:
    from rockmq.broker.coordination.coordinator import InSync, Lag, Member, Primary, Status
    from rockmq.broker.coordination.etcd import EtcdCoordinator
    from rockmq.cli.common import Subparsers

ACTIONS = ("group", "elect")
# serve's flags for reaching etcd (not the lease: nothing here holds one)
COORDINATOR = tuple(f for f in SERVE if f.name in CONCERNS["coordination"] and f.name != "coordinator_lease_s")
CALL_LEASE_S = 6  # the handle's calls wait a third of its lease: 2 s each
ELECTED_WAIT_S = 30.0  # for the chosen member to campaign: its next election turn (a lease or two)


def register(broker: Subparsers) -> None:
    group = broker.add_parser("group", help="a coordinated group (--coordinator) as etcd holds it: members (up or not), "
                                            "primary, epoch, in-sync set, each member's lag behind the primary")
    group.add_argument("name", help="the group's --broker-name")
    group.add_argument("--json", action="store_true", help="print JSON for scripts")
    elect = broker.add_parser("elect", help=(
        "with --unclean: make the most caught-up live member of a group with no live in-sync member its primary, "
        "losing what it lacks (said first; refused while a primary or a live in-sync member exists)"))
    elect.add_argument("name", help="the group's --broker-name")
    elect.add_argument("--unclean", action="store_true", help=(
        "elect a member outside the in-sync set: acknowledged messages it lacks are lost"))
    elect.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    for parser in (group, elect):
        add_flags(parser, COORDINATOR)


def run(args: argparse.Namespace) -> int:
    from rockmq.broker.coordination.coordinator import CoordinatorError, CoordinatorUnavailable, GroupKeys

    try:
        return asyncio.run(_group(args) if args.action == "group" else _elect(args))
    except CoordinatorUnavailable as e:
        raise CliError(str(e), EXIT_UNREACHABLE) from None
    except CoordinatorError as e:
        raise CliError(str(e)) from None
    except (ValueError, KeyError, TypeError) as e:  # a group key that does not decode (written by hand?)
        raise CliError(f"a key of group {args.name!r} in etcd does not decode ({e!r}): see its keys under "
                       f"{GroupKeys(args.name).root}") from None


# --- reading a group ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """A group as etcd holds it now."""

    name: str
    members: dict[str, Member]  # registered: up
    primary: Primary | None
    epoch: int
    in_sync: InSync
    status: Status | None
    read_ms: int

    @property
    def known(self) -> bool:
        return bool(self.members or self.primary or self.epoch or self.in_sync.version or self.status)

    def names(self) -> list[str]:
        """Every member etcd knows of: registered, primary, in the in-sync set or in the last report."""
        reported = self.status.known | {self.status.member} if self.status is not None else set()
        return sorted(set(self.members) | self.in_sync.members | reported
                      | ({self.primary.member} if self.primary is not None else set()))

    def lag(self, member: str) -> Lag | None:
        """`member`'s lag as the last report says (the reporting primary: none)."""
        from rockmq.broker.coordination.coordinator import Lag

        if self.status is None:
            return None
        if member == self.status.member:
            return Lag(self.status.head, 0, 0)
        return self.status.lags.get(member)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for m in self.names():
            lag = self.lag(m)
            registered = self.members.get(m)
            endpoint = (registered.endpoint if registered is not None else
                        self.primary.endpoint if self.primary is not None and self.primary.member == m else None)
            role = ("primary" if self.primary is not None and self.primary.member == m else
                    "replica" if registered is not None else None)
            out.append({"member": m, "endpoint": endpoint, "up": registered is not None, "role": role,
                        "in_sync": m in self.in_sync.members, "applied": lag.applied if lag else None,
                        "behind_messages": lag.messages if lag else None, "behind_ms": lag.ms if lag else None})
        return out

    def as_json(self) -> dict[str, Any]:
        report = None if self.status is None else {
            "member": self.status.member, "epoch": self.status.epoch, "head": self.status.head,
            "age_ms": max(0, self.read_ms - self.status.at_ms)}
        return {"group": self.name, "epoch": self.epoch,
                "primary": None if self.primary is None else {"member": self.primary.member,
                                                               "endpoint": self.primary.endpoint,
                                                               "epoch": self.primary.epoch},
                "in_sync": sorted(self.in_sync.members), "report": report, "members": self.rows()}


def _handle(args: argparse.Namespace) -> EtcdCoordinator:
    """A handle on group `args.name` in the etcd the options (or ROCKMQ_COORDINATOR* variables) name."""
    from rockmq.broker.coordination.etcd import EtcdCoordinator
    from rockmq.config import coordinator_endpoints

    given = {f.name: getattr(args, f.name) or os.environ.get(f"ROCKMQ_{f.name.upper()}", "") for f in COORDINATOR}
    if not given["coordinator"]:
        raise CliError(f"broker {args.action} reads the group from etcd: give --coordinator etcd://HOST:PORT[,HOST:PORT...] "
                       "(the one its members were started with; env ROCKMQ_COORDINATOR)", EXIT_USAGE)
    return EtcdCoordinator(coordinator_endpoints(given["coordinator"]), args.name, "", CALL_LEASE_S,
                           user=given["coordinator_user"], password=given["coordinator_password"],
                           ca=given["coordinator_ca"], cert=given["coordinator_cert"], key=given["coordinator_key"])


async def _read(handle: EtcdCoordinator, name: str) -> Group:
    primary, members, in_sync = await handle.primary(), await handle.members(), await handle.in_sync()
    group = Group(name, members, primary, await handle.epoch(), in_sync, await handle.status(), int(time.time() * 1000))
    if not group.known:
        raise CliError(f"no coordinated group {name!r} in etcd: no member registered, none ever elected "
                       "(its members' --broker-name?)")
    return group


async def _group(args: argparse.Namespace) -> int:
    handle = _handle(args)
    try:
        group = await _read(handle, args.name)
    finally:
        await handle.close()
    if args.json:
        print(json.dumps(group.as_json(), indent=2))
        return 0
    _print(group)
    return 0


def _print(group: Group) -> None:
    head = (f"primary {group.primary.member} at epoch {group.primary.epoch}" if group.primary is not None else
            f"no primary (last epoch {group.epoch}): writes are refused until one is elected")
    print(f"group {group.name}: {head}; in-sync set {sorted(group.in_sync.members) or '{}'}")
    table([[r["member"], _shown(r["role"]), "yes" if r["up"] else "no", "yes" if r["in_sync"] else "no",
            _shown(r["applied"]), _shown(r["behind_messages"]), _shown(r["behind_ms"])] for r in group.rows()],
          ["MEMBER", "ROLE", "UP", "IN_SYNC", "APPLIED", "BEHIND_MSGS", "BEHIND_MS"])  # a member's name is its HOST:PORT
    if group.status is None:
        print("lags: no primary has reported any yet")
    else:
        age = max(0, group.read_ms - group.status.at_ms) / 1000
        stale = "" if group.primary is not None and group.primary.member == group.status.member else " (not the primary now)"
        print(f"lags as {group.status.member} (epoch {group.status.epoch}){stale} reported them {age:.1f} s ago")


def _shown(value: object) -> object:
    return "-" if value is None else value


# --- an unclean election -----------------------------------------------------------------------


def _refusal(group: Group, unclean: bool) -> str | None:
    """Why the group must not be elected for (None: it has no electable member, and --unclean was given)."""
    from rockmq.broker.coordination.membership import eligible

    if group.primary is not None:
        return (f"group {group.name} has a primary ({group.primary.member} at epoch {group.primary.epoch}): "
                "there is nothing to elect")
    if group.in_sync.version == 0:
        return f"group {group.name} was never elected: every member may be elected, and one will be"
    live = sorted(eligible(group.members, group.in_sync))
    if live:
        return (f"in-sync member {', '.join(live)} of group {group.name} is live and will be elected: an unclean "
                "election overrides only an in-sync set with no live member")
    if not unclean:
        return (f"group {group.name} has no live member of its in-sync set {sorted(group.in_sync.members)}: "
                "`--unclean` makes the most caught-up live member primary, losing what it lacks")
    return None


def loss_line(group: Group, member: str) -> str:
    """What electing `member` loses, as the last primary's report says."""
    lag = group.lag(member)
    if lag is None or group.status is None:
        return f"how far {member} is behind is not known (no primary reported it): what it lacks is lost"
    age = max(0, group.read_ms - group.status.at_ms) / 1000
    return (f"{member} lacks {lag.messages} messages ({lag.ms} ms of writes, batches after {lag.applied}) of the log of "
            f"{group.status.member} (epoch {group.status.epoch}) as it reported {age:.1f} s ago, and whatever it wrote "
            "after: those are lost")


async def _elect(args: argparse.Namespace) -> int:
    from rockmq.broker.coordination.coordinator import Unclean
    from rockmq.broker.coordination.membership import first_candidate

    handle = _handle(args)
    try:
        group = await _read(handle, args.name)
        refused = _refusal(group, args.unclean)
        if refused is not None:
            raise CliError(refused)
        member = first_candidate(group.members)
        if member is None:
            raise CliError(f"no live member of group {group.name} announced how much of the log it holds yet: "
                           "run it again in a few seconds")
        print(f"unclean election in group {group.name}: {loss_line(group, member)}")
        if not args.yes and not _confirmed(f"make {member} primary? [y/N] "):
            print("not elected", file=sys.stderr)
            return EXIT_REFUSED
        choice = Unclean(member, group.in_sync.members, group.epoch, group.lag(member))
        if not await handle.elect_unclean(choice, group.in_sync):
            raise CliError(f"group {group.name} changed meanwhile (a primary, the in-sync set, the epoch, or "
                           f"{member} gone): nothing done; run it again")
        primary = await _elected(handle, member)
    finally:
        await handle.close()
    if primary is None or primary.member != member:
        raise CliError(f"the in-sync set is now [{member}], but {member} did not take the primary role within "
                       f"{ELECTED_WAIT_S:g} s (now: {primary.member if primary else 'none'}): see its log")
    print(f"{member} is primary of group {group.name} at epoch {primary.epoch}")
    return 0


def _confirmed(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


async def _elected(handle: EtcdCoordinator, member: str) -> Primary | None:
    """The primary once one is elected (`member`, unless it died meanwhile), or None after ELECTED_WAIT_S."""
    deadline = time.monotonic() + ELECTED_WAIT_S
    primary = None
    while primary is None and (left := deadline - time.monotonic()) > 0:
        primary = await handle.watch_primary(None, min(left, CALL_LEASE_S))
    return primary
