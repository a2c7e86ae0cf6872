"""Connected clients: their Telemetry settings, liveness, and the settings the broker completes.

A client announces itself on the Telemetry stream with its settings; the broker answers with
the completed settings (limits, backoff policy, subscription defaults). While the stream is open
the broker can push commands down it (`outbox`): checks of orphaned transactions go to a
producer that publishes the transaction's topic.

With authentication on, a session belongs to the user whose request made it (`Session.user`): a
client acts only for itself, so another user may not open its Telemetry stream, heartbeat as it or
end it (FORBIDDEN), and a transaction check goes only to its own user's producers. A session is
made only by a request that used a grant (docs/security.md): Telemetry settings that name a topic or a
group (auth/access.py), a Heartbeat naming its group (Sub on it), a receive; a Heartbeat without
a group keeps its client's session alive but makes none. And a user's load never evicts another's
live session: past `max_sessions_per_user`, or with `max_clients` held, the user's own longest
silent session goes; a session of another user only once silent past client_silence_s (its client
is gone), and with none to spare the new one is refused (TOO_MANY_REQUESTS). Without
authentication the client id alone says who a client is, and the longest silent session goes.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

from rockmq.auth import audit
from rockmq.auth.permissions import SESSION_GRANT
from rockmq.auth.seam import Refused, current_identity, forbidden
from rockmq.broker.context import BrokerContext
from rockmq.broker.lanes import EVERYTHING, Route, declared_lane, route
from rockmq.broker.lite.subscriptions import LiteSubscriptions
from rockmq.broker.lite.topics import MAX_LITE_TOPIC_SIZE
from rockmq.broker.subscriptions import Subscriptions, record_filter
from rockmq.protocol import pb, rpc
from rockmq.protocol.conventions import base_group, check_name
from rockmq.protocol.endpoints import endpoints_of
from rockmq.protocol.errors import OK, over_limit

CONSUMER_TYPES = (pb.PUSH_CONSUMER, pb.SIMPLE_CONSUMER, pb.PULL_CONSUMER, pb.LITE_PUSH_CONSUMER, pb.LITE_SIMPLE_CONSUMER)
NO_LANES: frozenset[str] = frozenset()
SETTINGS_AGAIN_S = 1.0  # a producer gets its settings again after this: the Node.js client may miss the first reply


class Forget(Protocol):
    """What a terminating client's deliveries stop getting: auto-renewal (pop/renew.py)."""

    def forget(self, client_id: str) -> None: ...


def requester() -> str:
    """The user of the request being handled ("" with authentication off, or the broker's own work)."""
    who = current_identity()
    return who.user if who is not None else ""


def not_yours(what: str, message: str) -> Refused:
    """The refusal (FORBIDDEN, audited) of a request about another user's session or transaction, or
    of one that would make a session using no grant."""
    audit.record("authorization-refused", str(current_identity()), what, message)
    return forbidden(message)


@dataclass
class Session:
    client_id: str
    user: str = ""  # the user whose request made it ("" with authentication off)
    client_type: int = pb.CLIENT_TYPE_UNSPECIFIED
    group: str = ""
    lane: str = ""  # the client's environment lane (header x-rockmq-lane); "" is the base lane
    topics: tuple[str, ...] = ()
    last_seen: float = field(default_factory=time.monotonic)
    # What the client says it is (Telemetry's UA, or the x-mq-language / x-mq-client-version headers)
    # and where it connects from: for `rockmq client list` and the connection metrics.
    language: str = ""
    version: str = ""
    address: str = ""
    outbox: asyncio.Queue[rpc.TelemetryCommand | None] | None = None  # the open Telemetry stream's replies, if any

    def push(self, command: rpc.TelemetryCommand) -> bool:
        """Offer a command to the client's Telemetry stream; False if closed or backed up."""
        if self.outbox is None or self.outbox.full():
            return False
        self.outbox.put_nowait(command)
        return True


MAX_IDENTITY = 64  # characters kept of a client's language and version (they come from the client)
KINDS: dict[int, str] = {pb.PRODUCER: "producer", pb.PUSH_CONSUMER: "push-consumer", pb.SIMPLE_CONSUMER: "simple-consumer",
         pb.PULL_CONSUMER: "pull-consumer"}


def peer_address(peer: str) -> str:
    """gRPC's peer ('ipv4:127.0.0.1:5000', 'ipv6:[::1]:5000') -> HOST:PORT."""
    kind, _, rest = peer.partition(":")
    return rest if kind in ("ipv4", "ipv6") else peer


def identify(session: Session, address: str, language: str, version: str) -> None:
    """Record what a client says it is (each value given; bounded) and the address it came from."""
    if address:
        session.address = peer_address(address)[:MAX_IDENTITY]
    if language:
        session.language = language[:MAX_IDENTITY]
    if version:
        session.version = version[:MAX_IDENTITY]


def _language(value: int) -> str:
    """A UA's language by name; one this broker's protocol does not know (a newer client's: proto3
    enums are open) by its number; "" if not said."""
    if not value:
        return ""
    return pb.Language.Name(value) if value in pb.Language.values() else str(value)


def kind_of(session: Session) -> str:
    return KINDS.get(session.client_type, "unknown")


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class Clients:
    """The sessions, at most `max_clients` of them, at most `max_sessions_per_user` of one user: the
    user's own silent longest goes first. They are kept in the order they were last heard from, all
    and each user's, so hearing from a client and evicting one are O(1)."""

    def __init__(self, ctx: BrokerContext, subscriptions: Subscriptions, renewals: Forget, lite: LiteSubscriptions) -> None:
        self.ctx = ctx
        self.lite = lite
        self.subscriptions = subscriptions
        self.renewals = renewals
        self.sessions: OrderedDict[str, Session] = OrderedDict()  # the one heard from last, last
        self._of_user: dict[str, OrderedDict[str, Session]] = {}  # user -> its sessions, in the same order
        self._groups: dict[str, dict[str, Session]] = {}  # group -> its sessions, by client id
        self._publishers: dict[str, set[str]] = {}  # topic -> client ids of producers publishing it
        self._turn = itertools.count()
        self._laned: set[str] = set()  # groups a lane member joined: only they pay for lane routing

    def _heard(self, s: Session) -> None:
        s.last_seen = time.monotonic()
        self.sessions.move_to_end(s.client_id)
        self._of_user[s.user].move_to_end(s.client_id)

    def touch(self, client_id: str) -> Session | None:
        s = self.sessions.get(client_id)
        if s is not None:
            self._heard(s)
        return s

    def last_seen(self, client_id: str) -> float | None:
        s = self.sessions.get(client_id)
        return s.last_seen if s is not None else None

    def members(self, group: str) -> list[Session]:
        """The group's consumers heard from within client_silence_s, by client id."""
        since = time.monotonic() - self.ctx.settings.client_silence_s
        return sorted((s for s in self._groups.get(group, {}).values() if s.last_seen >= since
                       and s.client_type in CONSUMER_TYPES), key=lambda s: s.client_id)

    def end_streams(self) -> None:
        """End every session's Telemetry stream (a draining broker): it does not hold the server's
        shutdown, and its client opens the next one where it sends now."""
        for s in self.sessions.values():
            if s.outbox is not None:
                if s.outbox.full():
                    s.outbox.get_nowait()
                s.outbox.put_nowait(None)
                s.outbox = None

    def connected(self, group: str = "", topic: str = "") -> list[Session]:
        """The clients heard from within client_silence_s, by client id: of `group` (its consumers),
        or publishing or subscribing to `topic`, if given."""
        since = time.monotonic() - self.ctx.settings.client_silence_s
        return sorted((s for s in self.sessions.values() if s.last_seen >= since and (not group or s.group == group)
                       and (not topic or topic in s.topics)), key=lambda s: s.client_id)

    def register(self, client_id: str, what: str = "receive") -> Session:
        """The session of a client's own request (`what`: Telemetry, Heartbeat, receive), made for
        the requesting user if new; another user's is refused (FORBIDDEN)."""
        self.own(client_id, what)
        s = self.sessions.get(client_id)
        if s is None:
            user = requester()
            self._make_room(user)
            s = self.sessions[client_id] = Session(client_id, user)
            self._of_user.setdefault(user, OrderedDict())[client_id] = s
        self._heard(s)
        return s

    def _make_room(self, user: str) -> None:
        """Room for one more session of `user`: at its share, or with the table full, its own silent
        longest goes; else another user's silent past client_silence_s; else it is refused."""
        s = self.ctx.settings
        mine = self._of_user.get(user)
        share = s.max_sessions_per_user if user else s.max_clients  # without auth every session is one user's
        full = len(self.sessions) >= s.max_clients
        if mine and (full or len(mine) >= share):
            self.drop(next(iter(mine)))
        elif full:
            oldest = next(iter(self.sessions.values()))
            if oldest.last_seen >= time.monotonic() - s.client_silence_s:
                raise over_limit(f"a new session of user {user!r}", "max_clients", s.max_clients,
                                 "every session held is another user's and alive; retry later")
            self.drop(oldest.client_id)

    def _join(self, session: Session, group: str) -> None:
        """The session's group is `group` from now on (the index `members` reads)."""
        if session.group == group:
            return
        self._leave(session)
        session.group = group
        if group:
            self._groups.setdefault(group, {})[session.client_id] = session

    def _leave(self, session: Session) -> None:
        members = self._groups.get(session.group)
        if members is not None:
            members.pop(session.client_id, None)
            if not members:  # a group with no session has no live lane either
                del self._groups[session.group]
                self._laned.discard(session.group)

    def own(self, client_id: str, what: str) -> None:
        """Refuse (FORBIDDEN) a request about another user's session."""
        s = self.sessions.get(client_id)
        user = requester()
        if s is not None and s.user != user:
            raise not_yours(what, f"user {user!r} may not {what} for client {client_id!r}: it is another user's")

    def heartbeat(self, client_id: str, client_type: int, group: str | None, lane: str) -> Session:
        """A client's heartbeat: it is alive, of this type (if given), in this group (if given), on this lane.
        With authentication on, one naming no group used no grant: it makes no session."""
        if not group and client_id not in self.sessions and current_identity() is not None:
            raise not_yours("Heartbeat", f"user {requester()!r} may not Heartbeat for client {client_id!r} naming no "
                                         f"group: {SESSION_GRANT}")
        session = self.register(client_id, "Heartbeat")
        session.client_type = client_type or session.client_type
        if group is not None:
            self._join(session, group)
        if lane:  # a client's lane is its own for life; official clients state it in their filter instead
            session.lane = lane
            if session.group:
                self._laned.add(session.group)
        return session

    def receiving(self, client_id: str, group: str, lane: str) -> None:
        """A lane consumer's receive or pull: it is a live member of the group in its lane."""
        session = self.register(client_id)
        if session.client_type not in CONSUMER_TYPES:
            session.client_type = pb.SIMPLE_CONSUMER
        self._join(session, group)
        session.lane = lane
        self._laned.add(group)

    def route(self, group: str, client_id: str, lane: str) -> Route | None:
        """How a consumer's receive or pull in `group` (or one of its lane groups) routes lanes
        (broker/lanes.py); a lane consumer's request also keeps it a live member."""
        group = base_group(group)
        if lane:
            self.receiving(client_id, group, lane)
        return route(lane, self.live_lanes(group))

    def receiver(self, group: str, client_id: str, lane: str, expr: pb.FilterExpression,
                 renewed: bool) -> tuple[pb.FilterExpression, Route | None]:
        """A POP receive's filter and lane routing. An official client in a lane states the lane in its
        filter (broker/lanes.py), which then routes rather than filters; a receive the broker auto-renews
        makes its client known (pop/renew.py renews while it is heard from)."""
        if renewed:
            self.register(client_id)
        declared = declared_lane(expr)
        if declared:
            expr, lane = EVERYTHING, lane or declared
        return expr, self.route(group, client_id, lane)

    def live_lanes(self, group: str) -> frozenset[str]:
        """The lanes with a live member in the group (one set lookup for a group without lanes)."""
        if group not in self._laned:
            return NO_LANES
        return frozenset(s.lane for s in self.members(group) if s.lane)

    def drop(self, client_id: str) -> None:
        s = self.sessions.pop(client_id, None)
        if s is not None:
            mine = self._of_user[s.user]
            del mine[client_id]
            if not mine:
                del self._of_user[s.user]
            self._set_publishing(s, ())
            self._leave(s)
            self.lite.drop(client_id)

    def terminated(self, client_id: str) -> None:
        """The client said goodbye (NotifyClientTermination): forget it and stop renewing what it
        received. Only its own user may say it."""
        self.own(client_id, "NotifyClientTermination")
        self.drop(client_id)
        self.renewals.forget(client_id)

    def _set_publishing(self, session: Session, topics: tuple[str, ...]) -> None:
        for topic in session.topics:
            ids = self._publishers.get(topic)
            if ids is not None:
                ids.discard(session.client_id)
                if not ids:
                    del self._publishers[topic]
        session.topics = topics
        for topic in topics:
            self._publishers.setdefault(topic, set()).add(session.client_id)

    def push_to_publisher(self, topic: str, command: rpc.TelemetryCommand, user: str) -> bool:
        """Offer a command to one producer of `topic` of `user` ("": any) with an open Telemetry
        stream, taking turns among them; False if none took it."""
        ids = sorted(self._publishers.get(topic, ()))
        start = next(self._turn)
        for i in range(len(ids)):
            s = self.sessions.get(ids[(start + i) % len(ids)])
            if s is not None and (s.user == user or not user) and s.push(command):
                return True
        return False

    def unsubscribed_lite(self, client_id: str, lite_topic: str) -> None:
        """Tell a lite consumer the broker dropped its subscription to a lite topic (it expired, or is
        over the quota): NotifyUnsubscribeLiteCommand on its Telemetry stream, if open (Java drops the
        name; Node 1.0.8 and Python 5.1.2 ignore it and send the name again every 30 s)."""
        session = self.sessions.get(client_id)
        if session is not None:
            command = rpc.NotifyUnsubscribeLiteCommand(lite_topic=lite_topic)
            session.push(rpc.TelemetryCommand(status=OK, notify_unsubscribe_lite_command=command))

    def complete_settings(self, session: Session, given: pb.Settings) -> pb.Settings:
        """The client's settings with the broker's part filled in (see the protocol notes)."""
        out = pb.Settings()
        out.CopyFrom(given)
        metrics_at = self.ctx.settings.client_metrics_endpoint
        out.metric.on = bool(metrics_at)  # official clients export their own metrics there (OTLP), as the proxy says
        if metrics_at:
            out.metric.endpoints.CopyFrom(endpoints_of(metrics_at))
        else:
            out.metric.ClearField("endpoints")
        named = len(given.publishing.topics) + len(given.subscription.subscriptions)
        if named > self.ctx.settings.max_client_topics:
            raise over_limit(f"settings naming {named:,} topics", "max_client_topics", self.ctx.settings.max_client_topics,
                             "a client publishes or subscribes to at most that many topics (use more clients)")
        _check_names(given)
        session.client_type = given.client_type
        ua = given.user_agent
        identify(session, "", _language(ua.language), ua.version)
        if given.HasField("publishing"):
            self._set_publishing(session, tuple(t.name for t in given.publishing.topics))
            out.publishing.max_body_size = self.ctx.settings.max_body_size
            out.publishing.validate_message_type = True
            policy = out.backoff_policy
            policy.Clear()
            policy.max_attempts = 3
            policy.exponential_backoff.initial.FromMilliseconds(_ms(0.01))
            policy.exponential_backoff.max.FromMilliseconds(_ms(1))
            policy.exponential_backoff.multiplier = 2.0
            again = rpc.TelemetryCommand(status=OK, settings=out)
            asyncio.get_running_loop().call_later(SETTINGS_AGAIN_S, session.push, again)
        elif given.HasField("subscription"):
            sub = out.subscription
            self._join(session, given.subscription.group.name)
            for entry in given.subscription.subscriptions:  # a bad expression is refused at subscribe time
                record_filter(entry.expression)
            group = self.ctx.group_to_read(given.subscription.group.name) if given.subscription.group.name else None
            for entry in given.subscription.subscriptions:
                topic = self.ctx.meta.topics.get(entry.topic.name)
                if group is not None and topic is not None and not declared_lane(entry.expression):  # index from now
                    self.subscriptions.resolve(group, topic, entry.expression)
            session.topics = tuple(e.topic.name for e in given.subscription.subscriptions)
            lanes = [lane for e in given.subscription.subscriptions if (lane := declared_lane(e.expression))]
            if lanes and session.group:  # an official client in a lane (broker/lanes.py)
                session.lane = lanes[0]
                self._laned.add(session.group)
            group = self.ctx.group_to_read(session.group) if session.group else None
            fifo = bool(group and group.fifo)
            sub.fifo = fifo or given.client_type == pb.LITE_PUSH_CONSUMER  # a lite topic is consumed in order
            if given.client_type in (pb.LITE_PUSH_CONSUMER, pb.LITE_SIMPLE_CONSUMER):  # the client needs both
                sub.lite_subscription_quota = self.lite.quota
                sub.max_lite_topic_size = MAX_LITE_TOPIC_SIZE
            sub.receive_batch_size = self.ctx.settings.receive_batch
            if not sub.HasField("long_polling_timeout") or sub.long_polling_timeout.ToMilliseconds() <= 0:
                sub.long_polling_timeout.FromMilliseconds(_ms(20))
            policy = out.backoff_policy
            policy.Clear()
            policy.max_attempts = group.max_attempts if group else self.ctx.settings.max_attempts
            ladder = (self.ctx.settings.fifo_retry_s,) if fifo else self.ctx.settings.retry_ladder_s
            for s in ladder:
                policy.customized_backoff.next.add().FromMilliseconds(_ms(s))
        return out


def _check_names(given: pb.Settings) -> None:
    """Refuse (ILLEGAL_TOPIC, ILLEGAL_CONSUMER_GROUP) settings naming an illegal topic or group before
    any name is recorded: without authentication nothing else has looked at them."""
    for name in (*(t.name for t in given.publishing.topics), *(e.topic.name for e in given.subscription.subscriptions)):
        check_name("topic", name)
    if given.subscription.group.name:
        check_name("group", given.subscription.group.name)
