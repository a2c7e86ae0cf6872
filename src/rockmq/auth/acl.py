"""ACL 2.0's model and its evaluation (RIP-68), pure: no I/O, no clock.

A user's ACL is a list of entries {resource, actions, source IPs, Allow | Deny}. A request is
checked as (resource, actions): it needs any one of `actions` on the resource (QueryRoute asks
Pub or Sub). Super users pass. Of the entries that match (resource, one of the actions or All,
source IP), the most specific decides: a typed resource beats `*`; a literal name beats a prefix,
which beats any name of the type; a longer prefix beats a shorter; Deny wins a tie. No matching
entry means deny. Group names lose their %RETRY% / %DLQ% prefix (`group_check`), as in Apache; a retry
topic counts as its group, a dead-letter topic as a topic of its own (`topic_check`).
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from rockmq.protocol.conventions import DLQ_PREFIX, NAME_RE, RETRY_PREFIX

Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


class AclError(ValueError):
    """A resource, action, decision or source IP that does not parse (the message says which)."""


class Kind(enum.Enum):
    ANY = "*"
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"  # the broker as a whole: Get on it reads its metrics (the HTTP port's /metrics)


class Action(enum.Enum):
    PUB = "Pub"
    SUB = "Sub"
    CREATE = "Create"
    UPDATE = "Update"
    DELETE = "Delete"
    GET = "Get"
    LIST = "List"
    ALL = "All"


class Decision(enum.Enum):
    ALLOW = "Allow"
    DENY = "Deny"


_ACTIONS = {a.value.lower(): a for a in Action}
_KINDS = {k.value.lower(): k for k in (Kind.TOPIC, Kind.GROUP)}


@dataclass(frozen=True)
class Resource:
    """What an entry names: `*`, `Topic:orders` (literal), `Topic:order-*` (prefix), `Topic:*` (any topic)."""

    kind: Kind
    name: str = ""
    prefix: bool = False  # name is a prefix (an empty prefix: any name of the kind)

    @staticmethod
    def parse(text: str) -> Resource:
        text = text.strip()
        if text == "*":
            return Resource(Kind.ANY, "", True)
        if text.lower() == Kind.CLUSTER.value.lower():  # one of its kind: no name
            return Resource(Kind.CLUSTER, "", True)
        kind_text, sep, name = text.partition(":")
        kind = _KINDS.get(kind_text.strip().lower())
        name = name.strip()
        if not sep or kind is None or not name:
            raise AclError(f"resource {text!r}: expected *, Topic:NAME, Topic:PREFIX*, Group:NAME, Group:PREFIX* or "
                           "Cluster")
        prefix = name.endswith("*")
        if prefix:
            name = name[:-1]
        if "*" in name:
            raise AclError(f"resource {text!r}: * may only end a name (a prefix)")
        if name and not NAME_RE.match(name):
            raise AclError(f"resource {text!r}: a topic or group name is 1-127 of [A-Za-z0-9_%-]")
        return Resource(kind, name, prefix)

    def __str__(self) -> str:
        if self.kind is Kind.CLUSTER:
            return str(self.kind.value)
        return "*" if self.kind is Kind.ANY else f"{self.kind.value}:{self.name}{'*' if self.prefix else ''}"

    def covers(self, kind: Kind, name: str) -> bool:
        """Whether this entry's resource names the requested one (`kind`, `name`: never ANY)."""
        if self.kind is Kind.ANY:
            return True
        if self.kind is not kind:
            return False
        return name.startswith(self.name) if self.prefix else name == self.name

    @property
    def specificity(self) -> tuple[int, int]:
        """Larger is more specific: `*` < `Topic:*` < a prefix (longer more) < a literal name."""
        if self.kind is Kind.ANY:
            return (0, 0)
        if self.prefix:
            return (1, len(self.name)) if self.name else (1, -1)
        return (2, 0)


def parse_actions(text: str | Iterable[str]) -> frozenset[Action]:
    """`Pub,Sub` (or a list of names) -> the actions; case-insensitive; at least one."""
    names = text.split(",") if isinstance(text, str) else list(text)
    actions = set()
    for name in names:
        action = _ACTIONS.get(name.strip().lower())
        if action is None:
            raise AclError(f"unknown action {name.strip()!r}: expected {', '.join(a.value for a in Action)}")
        actions.add(action)
    if not actions:
        raise AclError("no action given: expected one or more of " + ", ".join(a.value for a in Action))
    return frozenset(actions)


def parse_networks(texts: Iterable[str]) -> tuple[Network, ...]:
    """Source IPs or CIDRs (`10.0.0.0/8`, `127.0.0.1`, `::1`) -> networks; none means any source."""
    networks = []
    for text in texts:
        try:
            networks.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError:
            raise AclError(f"source IP {text.strip()!r}: expected an IP address or a CIDR such as 10.0.0.0/8") from None
    return tuple(networks)


def parse_decision(text: str) -> Decision:
    for d in Decision:
        if d.value.lower() == text.strip().lower():
            return d
    raise AclError(f"decision {text!r}: expected Allow or Deny")


@dataclass(frozen=True)
class Entry:
    resource: Resource
    actions: frozenset[Action]
    source_ips: tuple[Network, ...] = ()  # empty: from anywhere
    decision: Decision = Decision.ALLOW

    def matches(self, kind: Kind, name: str, wanted: frozenset[Action], source_ip: str | None) -> bool:
        return (self.resource.covers(kind, name) and (Action.ALL in self.actions or not self.actions.isdisjoint(wanted))
                and _from(self.source_ips, source_ip))


def _from(networks: tuple[Network, ...], source_ip: str | None) -> bool:
    if not networks:
        return True
    if not source_ip:
        return False
    try:
        ip = ipaddress.ip_address(source_ip)
    except ValueError:
        return False
    return any(ip in n for n in networks)


class Check(NamedTuple):
    """One thing a request needs: any of `actions` on the topic or group `name`. A tuple: it keys
    the decisions' cache, hashed and compared in C."""

    kind: Kind
    name: str
    actions: frozenset[Action] = frozenset()

    def __str__(self) -> str:
        on = self.kind.value if self.kind is Kind.CLUSTER else f"{self.kind.value}:{self.name or '*'}"
        return f"{'|'.join(sorted(a.value for a in self.actions))} on {on}"


def strip_group(name: str) -> str:
    """A group named through its retry or dead-letter topic -> the group."""
    for p in (RETRY_PREFIX, DLQ_PREFIX):
        if name.startswith(p):
            return name[len(p):]
    return name


_ACTION_SETS: dict[tuple[Action, ...], frozenset[Action]] = {}


def _actions(actions: tuple[Action, ...]) -> frozenset[Action]:
    """One frozenset per combination of actions asked (a request builds none)."""
    found = _ACTION_SETS.get(actions)
    if found is None:
        found = _ACTION_SETS[actions] = frozenset(actions)
    return found


def topic_check(topic: str, *actions: Action) -> Check:
    """`actions` on a topic. A group's retry topic is its group's, and sending to it (a consumer's
    send-back) needs Sub there, as in Apache: the group's own consumers use it. A dead-letter
    topic is a topic of its own (`Topic:%DLQ%g1`): it holds the dead letters of every topic the
    group consumed, so Sub on the group must not read them."""
    if topic.startswith(RETRY_PREFIX):
        wanted = tuple(Action.SUB if a is Action.PUB else a for a in actions)
        return Check(Kind.GROUP, topic[len(RETRY_PREFIX):], _actions(wanted))
    return Check(Kind.TOPIC, topic, _actions(actions))


def group_check(group: str, *actions: Action) -> Check:
    return Check(Kind.GROUP, strip_group(group), _actions(actions))


def cluster_check(*actions: Action) -> Check:
    """`actions` on the broker itself (`Cluster`): Get reads its metrics."""
    return Check(Kind.CLUSTER, "", _actions(actions))


def decide(entries: Sequence[Entry], check: Check, source_ip: str | None) -> Entry | None:
    """The entry that decides `check` for a (non-super) user with these entries; None: no entry
    matches (deny)."""
    best: Entry | None = None
    for e in entries:
        if not e.matches(check.kind, check.name, check.actions, source_ip):
            continue
        if best is None:
            best = e
            continue
        mine, theirs = e.resource.specificity, best.resource.specificity
        if mine > theirs or (mine == theirs and e.decision is Decision.DENY):
            best = e
    return best


def allowed(entries: Sequence[Entry], check: Check, source_ip: str | None, super_user: bool = False) -> bool:
    if super_user:
        return True
    entry = decide(entries, check, source_ip)
    return entry is not None and entry.decision is Decision.ALLOW
