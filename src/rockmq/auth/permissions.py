"""Every RPC of every service -> what it needs (pure; one table).

A `Rule` says who may call a method: any authenticated user whose ACL allows the request's checks
(`Who.USER`, with `checks(request)` -> the (resource, actions) it needs, all of them), super users
only (`Who.SUPER`: promote, users, ACLs), the cluster's inner credentials (`Who.INNER`:
replication, name-server registration), or anyone, unauthenticated (`Who.ANYONE`: health
checks, `OPEN_METHODS`). The v2 part follows Apache RocketMQ's mapping (security-notes.md), with
Pull and the offsets mapped too; rockmq's own services map the same way.
Telemetry's checks are per settings command (`telemetry_checks`) and SendMessage's per message
(`publishing`: its handler reads the request's bytes once, then asks), PublishStaged's on the
topics of the staged chunks it names (read from the store by its handler); auto-creating a topic (on
QueryRoute, SendMessage, Stage) needs `create_check` too, asked where the topic is created.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError

from rockmq.auth.acl import Action, Check, Kind, group_check, topic_check
from rockmq.protocol import pb, rpc
from rockmq.protocol.ack_request import AckRequest
from rockmq.protocol.staged import staged_message

Request = Any  # a request as its handler gets it: a message, or its bytes (AckMessage)
Checks = Callable[[Request], list[Check]]

PUB, SUB, CREATE, DELETE, GET, LIST = Action.PUB, Action.SUB, Action.CREATE, Action.DELETE, Action.GET, Action.LIST
UPDATE = Action.UPDATE
MESSAGING = "apache.rocketmq.v2.MessagingService"
BATCH = "rockmq.messaging.v1.BatchMessaging"
ADMIN = "rockmq.admin.v1.Admin"
ACLS = "rockmq.admin.v1.Acls"  # grant, revoke, list: super users only
USERS = "rockmq.admin.v1.Users"  # create, update, delete, list: super users only
REPLICATION = "rockmq.replication.v1.Replication"
NAMESRV = "rockmq.namesrv.v1.NameServer"
HEALTH = "grpc.health.v1.Health"
MESSAGES = "rockmq.admin.v1.Messages"  # find and trace stored messages
ALL_TOPICS, ALL_GROUPS = "", ""  # what List checks: `*`, `Topic:*` or `Group:*` allows it


class Who(enum.Enum):
    USER = "user"  # an authenticated user whose ACL allows the checks
    SUPER = "super"  # super users only
    INNER = "inner"  # the cluster's inner credentials
    ANYONE = "anyone"  # no credentials: the answer reveals nothing (health checks)


@dataclass(frozen=True)
class Rule:
    who: Who
    checks: Checks | None = None  # Who.USER: what the request needs (None: nothing beyond being a user)


def _nothing(request: Request) -> list[Check]:
    return []


def _group_and_topic(group: str, topic: str) -> list[Check]:
    return [group_check(group, SUB), topic_check(topic, SUB)]


def publishing(topics: Iterable[str]) -> list[Check]:
    """SendMessage: each message's topic · Pub (asked by its handler, which reads the messages once)."""
    return [topic_check(t, PUB) for t in dict.fromkeys(topics)]


def _optional_group(request: rpc.HeartbeatRequest | rpc.NotifyClientTerminationRequest) -> list[Check]:
    return [group_check(request.group.name, SUB)] if request.HasField("group") and request.group.name else []


def _ack(request: AckRequest) -> list[Check]:
    """AckMessage's request as its deserializer reads it (protocol/ack_request.py)."""
    return _group_and_topic(request.group, request.topic)


def _queue_pair(request: rpc.PullMessageRequest | rpc.UpdateOffsetRequest | rpc.GetOffsetRequest) -> list[Check]:
    return _group_and_topic(request.group.name, request.message_queue.topic.name)


def _pair(request: Request) -> list[Check]:
    """A request with a `group` and a `topic` Resource."""
    return _group_and_topic(request.group.name, request.topic.name)


def _batch_pair(request: Request) -> list[Check]:
    """A BatchMessaging request with `group` and `topic` strings."""
    return _group_and_topic(request.group, request.topic)


def staged_topics(request: Any) -> list[str]:
    """The topics of a Stage request's messages, read as staging reads them (bytes that make no
    message are the handler's to refuse: it stages nothing then)."""
    try:
        return list(dict.fromkeys(staged_message(sp, c).topic.name for sp, c in zip(request.system_properties,
                                                                                   request.contents, strict=True)))
    except (DecodeError, ValueError):
        return []


def _topic(*actions: Action) -> Checks:
    return lambda request: [topic_check(request.topic.name, *actions)]


def _named(kind: Kind, *actions: Action) -> Checks:
    """An admin request naming a topic or group by `name`: any of `actions` allows it."""
    if kind is Kind.TOPIC:
        return lambda request: [topic_check(request.name, *actions)]
    return lambda request: [group_check(request.name, *actions)]


def _listing(kind: Kind) -> Checks:
    return lambda request: [Check(kind, "", frozenset({LIST}))]


def _clients(request: Request) -> list[Check]:
    """ListClients: Get on the group or topic it names; naming neither, List on every group and topic."""
    if request.group:
        return [group_check(request.group, GET)]
    if request.topic:
        return [topic_check(request.topic, GET)]
    return [*_listing(Kind.GROUP)(request), *_listing(Kind.TOPIC)(request)]


_V2: dict[str, Rule] = {
    "QueryRoute": Rule(Who.USER, _topic(PUB, SUB)),
    "Heartbeat": Rule(Who.USER, _optional_group),
    "SendMessage": Rule(Who.USER),  # its handler asks `publishing` of the messages it reads
    "QueryAssignment": Rule(Who.USER, _pair),
    "ReceiveMessage": Rule(Who.USER, lambda r: _group_and_topic(r.group.name, r.message_queue.topic.name)),
    "AckMessage": Rule(Who.USER, _ack),
    "ForwardMessageToDeadLetterQueue": Rule(Who.USER, _pair),
    "PullMessage": Rule(Who.USER, _queue_pair),
    "UpdateOffset": Rule(Who.USER, _queue_pair),
    "GetOffset": Rule(Who.USER, _queue_pair),
    "QueryOffset": Rule(Who.USER, lambda r: [topic_check(r.message_queue.topic.name, SUB)]),
    "EndTransaction": Rule(Who.USER, _topic(PUB)),
    "Telemetry": Rule(Who.USER, _nothing),  # each settings command: telemetry_checks
    "NotifyClientTermination": Rule(Who.USER, _optional_group),
    "ChangeInvisibleDuration": Rule(Who.USER, lambda r: [group_check(r.group.name, SUB)]),
    "RecallMessage": Rule(Who.USER, _topic(PUB)),
    "SyncLiteSubscription": Rule(Who.USER, _pair),
}
_BATCH: dict[str, Rule] = {
    "Receive": Rule(Who.USER, _batch_pair),
    "Ack": Rule(Who.USER, _batch_pair),
    "Pull": Rule(Who.USER, _batch_pair),
    "Fetch": Rule(Who.USER, lambda r: [topic_check(r.topic, SUB)]),
    "Stage": Rule(Who.USER, lambda r: [topic_check(t, PUB) for t in staged_topics(r)]),
    # A chunk is its stager's to publish or discard (StagingService.check_owner: its handle is
    # guessable); publishing asks Pub on the chunks' topics, which only the store knows (its handler
    # reads them: AccessControl.check_publish_staged), and a sink id is scoped to its user.
    "PublishStaged": Rule(Who.USER),
    "DiscardStaged": Rule(Who.USER),
}
_ADMIN: dict[str, Rule] = {
    "CreateTopic": Rule(Who.USER, _named(Kind.TOPIC, CREATE)),
    "ListTopics": Rule(Who.USER, _listing(Kind.TOPIC)),
    # A consumer may see the queues and offsets of a topic it reads (`rockmq message tail` checks the topic exists).
    "DescribeTopic": Rule(Who.USER, _named(Kind.TOPIC, GET, SUB)),
    "DeleteTopic": Rule(Who.USER, _named(Kind.TOPIC, DELETE)),
    # Lite topics are covered by their parent's entries (docs/lite-topics.md).
    "ListLiteTopics": Rule(Who.USER, lambda request: [topic_check(request.topic, GET, SUB)]),
    "CreateGroup": Rule(Who.USER, _named(Kind.GROUP, CREATE)),
    "ListGroups": Rule(Who.USER, _listing(Kind.GROUP)),
    "DescribeGroup": Rule(Who.USER, _named(Kind.GROUP, GET)),
    "ListMembers": Rule(Who.USER, _named(Kind.GROUP, GET)),
    "GetTimerStats": Rule(Who.USER, _listing(Kind.TOPIC)),  # pending messages of every topic
    "Promote": Rule(Who.SUPER),
    "DescribeCluster": Rule(Who.SUPER),  # every broker's and name server's address: an operator's view
    # A group's dead letters are its consumers' business: listing them reads bodies of every topic the
    # group consumed (Get on the group), sending them back or purging them changes the group (Update).
    "ListDeadLetters": Rule(Who.USER, lambda r: [group_check(r.group, GET)]),
    "ResendDeadLetters": Rule(Who.USER, lambda r: [group_check(r.group, UPDATE)]),
    "PurgeDeadLetters": Rule(Who.USER, lambda r: [group_check(r.group, UPDATE)]),
    "ResetOffset": Rule(Who.USER, lambda r: [group_check(r.group, UPDATE), topic_check(r.topic, SUB)]),
    "UpdateGroup": Rule(Who.USER, _named(Kind.GROUP, UPDATE)),
    "DeleteGroup": Rule(Who.USER, _named(Kind.GROUP, DELETE)),
    "UpdateTopic": Rule(Who.USER, _named(Kind.TOPIC, UPDATE)),
    "ListClients": Rule(Who.USER, _clients),
    "GetConfig": Rule(Who.SUPER),  # the broker's whole configuration: for its operators
}
# Reading stored messages is consuming them without a group: Sub on the topic, as RocketMQ's
# queryMessage and viewMessage ask.
_MESSAGES: dict[str, Rule] = {
    m: Rule(Who.USER, lambda r: [topic_check(r.topic, SUB)])
    for m in ("GetMessage", "FindMessages", "ListMessages", "TraceMessage")
}
_OTHERS: dict[str, Rule] = {
    **{f"{ACLS}/{m}": Rule(Who.SUPER) for m in ("GrantAcl", "RevokeAcl", "ListAcls")},
    **{f"{USERS}/{m}": Rule(Who.SUPER) for m in ("CreateUser", "UpdateUser", "DeleteUser", "ListUsers")},
    f"{REPLICATION}/Follow": Rule(Who.INNER),
    f"{REPLICATION}/Snapshot": Rule(Who.INNER),  # a copy of the store: the secret too (cluster/reseed.py)
    f"{NAMESRV}/Register": Rule(Who.INNER),
    f"{NAMESRV}/ListBrokers": Rule(Who.INNER),
    f"{NAMESRV}/Unregister": Rule(Who.INNER),  # would let anyone take a broker out of routes
    # Probes (load balancers, Kubernetes) carry no credentials, and the answer is SERVING or
    # NOT_SERVING: open, like the HTTP port's /healthz and /readyz.
    f"{HEALTH}/Check": Rule(Who.ANYONE),
    f"{HEALTH}/Watch": Rule(Who.ANYONE),
}
# "package.Service/Method" (gRPC's method path without its leading '/') -> its rule.
RULES: dict[str, Rule] = {
    **{f"{MESSAGING}/{m}": r for m, r in _V2.items()},
    **{f"{BATCH}/{m}": r for m, r in _BATCH.items()},
    **{f"{ADMIN}/{m}": r for m, r in _ADMIN.items()},
    **{f"{MESSAGES}/{m}": r for m, r in _MESSAGES.items()},
    **_OTHERS,
}
OPEN_METHODS = frozenset(m for m, r in RULES.items() if r.who is Who.ANYONE)  # the seam lets them through
SUPER_ONLY = Rule(Who.SUPER)  # a method the table does not name (users' admin calls): super users only


def rule(method: str) -> Rule:
    """The rule of "package.Service/Method"; a method the table does not know is for super users only."""
    return RULES.get(method, SUPER_ONLY)


# Why a request that would make a client session using no grant is refused (docs/security.md).
SESSION_GRANT = "a session needs a grant it can use: Sub on its group, or Pub on a topic it names"


def telemetry_checks(settings: pb.Settings) -> list[Check]:
    """A Telemetry settings command: each publishing topic · Pub; the group · Sub and each subscribed topic · Sub."""
    if settings.HasField("publishing"):
        return [topic_check(t.name, PUB) for t in settings.publishing.topics]
    if settings.HasField("subscription"):
        sub = settings.subscription
        checks = [group_check(sub.group.name, SUB)] if sub.HasField("group") else []
        return checks + [topic_check(e.topic.name, SUB) for e in sub.subscriptions]
    return []


# Methods that create a topic that does not exist yet (auto-creation) -> the topics they name.
def create_check(topic: str) -> Check:
    """What auto-creating a topic needs (with auth on)."""
    return topic_check(topic, CREATE)

